"""Every registered exercise, from its one source: the notebook.

For each exercise of ``course_lib.exercises.EXERCISES`` (functions and prediction questions, every chapter module
``course_lib/exercises/ch*.py``, found automatically):

- it belongs to exactly one notebook, ``notebooks/<chapter>_*.py``, the one that calls ``check("<name>")``;
- the notebook's solution (its ``### BEGIN SOLUTION`` blocks) is graded correct;
- the student copy (tools/make_student.py) is graded "not attempted", and holds no line of any solution;
- each known-wrong answer of ``tests/exercise_cases/<chapter>.py`` is graded wrong with its hint, run after the
  notebook's ``setup`` cells as it would be in the notebook; every exercise has at least one;
- reloading a chapter module keeps the registry whole.

An exercise whose notebook is not written yet is skipped. A cases module maps
``WRONG_ANSWERS = {exercise: [(source, hint), ...]}``; optionally ``CASES = {case: (exercise, source, hint)}``
gives the tests readable names, and ``EXACT_HINTS = True`` asks for the whole message to equal the hint.
"""
import importlib
import sys
import textwrap

import jupytext
import nbformat
import pytest

from conftest import ROOT, solution_lines
from course_lib.exercises import CHAPTER_MODULES, EXERCISES, NOT_ATTEMPTED, WRONG, grade_notebook, run_exercise
from exercise_notebooks import (NOTEBOOKS, case_modules, chapter_of, checks_called, graded_namespace,
                                notebooks_of_chapter)

sys.path.insert(0, str(ROOT / "tools"))
import make_student  # noqa: E402

NAMES = list(EXERCISES)
SOURCES = make_student.sources()  # the notebooks with solution blocks


def notebook_of(name: str):
    """The notebook of exercise ``name``; skips the test when that notebook is not written yet."""
    ex = EXERCISES[name]
    chapter = chapter_of(ex)
    assert chapter.startswith("ch"), f"exercise {name!r} is registered by {ex.module}, not by a chapter module ch*"
    own = notebooks_of_chapter(chapter)
    callers = [nb for nb in sorted(NOTEBOOKS.glob("*.py")) if name in checks_called(nb)]
    stem = chapter.removeprefix("ch")
    if not own and not callers:
        pytest.skip(f"{name}: the notebook of {ex.module} (notebooks/{stem}_*.py) is not written yet")
    assert len(own) == 1, f"{ex.module} should have one notebook notebooks/{stem}_*.py, found {[p.name for p in own]}"
    assert callers == own, (f"exercise {name!r} of {ex.module} should be checked in {own[0].name} and only there; "
                            f"check({name!r}) is called in {[p.name for p in callers]}")
    return own[0]


@pytest.fixture(scope="module")
def graded():
    """grade_notebook of each solution source, run once per notebook: {name: Result}."""
    cache = {}

    def results(notebook):
        if notebook not in cache:
            cache[notebook] = {r.name: r for r in grade_notebook(notebook)}
        return cache[notebook]
    return results


@pytest.fixture(scope="module")
def student_copy(tmp_path_factory):
    """(path, {name: Result}) of the student copy of a notebook, written and graded once per notebook
    (``grade=False``: (path, None), the copy written but not graded)."""
    out, paths, results = tmp_path_factory.mktemp("student"), {}, {}

    def copy(notebook, grade=True):
        if notebook not in paths:
            paths[notebook] = out / f"{notebook.stem}.ipynb"
            jupytext.write(make_student.student_notebook(notebook), paths[notebook], fmt="ipynb")
        if grade and notebook not in results:
            results[notebook] = {r.name: r for r in grade_notebook(paths[notebook])}
        return paths[notebook], results.get(notebook)
    return copy


# ----------------------------------------------------------------------------- each exercise

@pytest.mark.parametrize("name", NAMES)
def test_the_exercise_belongs_to_exactly_one_notebook(name):
    notebook_of(name)


@pytest.mark.slow  # grades a whole notebook: make test, not make check
@pytest.mark.parametrize("name", NAMES)
def test_the_notebooks_solution_is_graded_correct(name, graded):
    notebook = notebook_of(name)
    results = graded(notebook)
    assert name in results, f"grading {notebook.name} did not find exercise {name!r}"
    assert results[name].correct, str(results[name])


@pytest.mark.slow  # grades a whole notebook: make test, not make check
@pytest.mark.parametrize("name", NAMES)
def test_the_student_copy_is_graded_not_attempted(name, student_copy):
    notebook = notebook_of(name)
    _, results = student_copy(notebook)
    assert name in results, f"grading the student copy of {notebook.name} did not find exercise {name!r}"
    assert results[name].status == NOT_ATTEMPTED, str(results[name])


@pytest.mark.parametrize("name", NAMES)
def test_the_exercise_has_a_wrong_answer(name):
    chapter = chapter_of(EXERCISES[name])
    notebook_of(name)
    module = case_modules().get(chapter)
    assert module is not None, f"tests/exercise_cases/{chapter}.py is missing: known-wrong answers of {name!r} go there"
    assert module.WRONG_ANSWERS.get(name), f"tests/exercise_cases/{chapter}.py has no wrong answer for {name!r}"
    if EXERCISES[name].kind == "function":  # the mutation guard: several plausible wrong implementations
        n = len(module.WRONG_ANSWERS[name])
        assert n >= 3, (f"{name!r} has {n} known-wrong implementations in tests/exercise_cases/{chapter}.py; give it "
                        "at least three (off by one, wrong axis, wrong normalisation, reversed order, ...)")


# ----------------------------------------------------------------------------- each notebook

@pytest.mark.slow  # grades a whole notebook: make test, not make check
@pytest.mark.parametrize("notebook", SOURCES, ids=[p.stem for p in SOURCES])
def test_grading_the_notebook_finds_its_exercises_in_order(notebook, graded):
    assert list(graded(notebook)) == list(dict.fromkeys(checks_called(notebook)))


@pytest.mark.parametrize("notebook", SOURCES, ids=[p.stem for p in SOURCES])
def test_the_student_copy_holds_no_solution(notebook, student_copy):
    path, _ = student_copy(notebook, grade=False)
    text = path.read_text()
    assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text
    code = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells)
    leaked = [line for line in solution_lines(notebook.read_text()) if line in code]
    assert not leaked, f"solution text in the student copy of {notebook.name}: {leaked}"


# ----------------------------------------------------------------------------- each known-wrong answer

def _wrong_answers():
    params = []
    for chapter, module in case_modules().items():
        case_names = {answer: case for case, answer in getattr(module, "CASES", {}).items()}
        exact = getattr(module, "EXACT_HINTS", False)
        for name, answers in module.WRONG_ANSWERS.items():
            for i, (source, hint) in enumerate(answers):
                case = case_names.get((name, source, hint), str(i))
                params.append(pytest.param(chapter, name, source, hint, exact, id=f"{chapter}:{name}:{case}"))
    return params


@pytest.mark.parametrize("chapter, name, source, hint, exact", _wrong_answers())
def test_a_wrong_answer_gets_its_hint(chapter, name, source, hint, exact):
    assert name in EXERCISES, f"tests/exercise_cases/{chapter}.py: there is no exercise {name!r}"
    assert chapter_of(EXERCISES[name]) == chapter, (f"tests/exercise_cases/{chapter}.py: {name!r} is an exercise of "
                                                    f"{EXERCISES[name].module}")
    assert isinstance(hint, str) and hint.strip(), "each wrong answer names (a part of) the hint it must get"
    namespace = graded_namespace(notebook_of(name), tags=("setup",))  # imports, model… as in the notebook
    exec(compile(textwrap.dedent(source), f"<wrong answer to {name}>", "exec"), namespace)
    result = run_exercise(name, namespace)
    assert result.status == WRONG, str(result)
    if exact:
        assert result.message == hint
    else:
        assert hint in result.message


def _right_answers():
    params = []
    for chapter, module in case_modules().items():
        for name, answers in getattr(module, "RIGHT_ANSWERS", {}).items():
            for i, (source, why) in enumerate(answers):
                params.append(pytest.param(chapter, name, source, why, id=f"{chapter}:{name}:right{i}"))
    return params


@pytest.mark.parametrize("chapter, name, source, why", _right_answers())
def test_another_right_answer_is_graded_correct(chapter, name, source, why):
    """Another correct way than the notebook's (another tie-break, another loop order) must not be called wrong."""
    assert name in EXERCISES and chapter_of(EXERCISES[name]) == chapter, f"tests/exercise_cases/{chapter}.py: {name!r}"
    namespace = graded_namespace(notebook_of(name), tags=("setup",))
    exec(compile(textwrap.dedent(source), f"<right answer to {name}>", "exec"), namespace)
    result = run_exercise(name, namespace)
    assert result.correct, f"{why}: {result}"


# ----------------------------------------------------------------------------- the registry

@pytest.mark.parametrize("module", CHAPTER_MODULES)
def test_reloading_a_chapter_module_keeps_the_registry_whole(module):
    before = {name: ex.module for name, ex in EXERCISES.items()}
    importlib.reload(importlib.import_module(f"course_lib.exercises.{module}"))
    assert {name: ex.module for name, ex in EXERCISES.items()} == before


def test_the_chapter_modules_are_the_modules_that_define_exercises():
    """A module of the grader whose name only begins like one ("channel") is not a chapter: the test above once
    reloaded it, and the grader's `except Broken` no longer caught the class its worker raised."""
    assert CHAPTER_MODULES == sorted({ex.module.rsplit(".", 1)[-1] for ex in EXERCISES.values()})
