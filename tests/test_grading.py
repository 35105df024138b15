"""Points and partial credit, the limits, the gradebook's determinism and command line, and the checks run by
nbgrader (proven with nbclient, as nbgrader's autograder runs a notebook) and by otter-grader (its doctest format).

Hostile submissions: tests/test_grading_adversarial.py.
"""
import csv
import doctest
import filecmp
import hashlib
import io
import re
import sys
from contextlib import redirect_stdout
from pathlib import Path

import jupytext
import nbformat
import pytest

from adversarial_submissions import NAMES, cases, edited
from conftest import ROOT
from course_lib.exercises import EXERCISES, NotAttempted, Result, Wrong, format_results, run_exercise
from course_lib.exercises.__main__ import main as exercises_cli
from course_lib.exercises.core import Exercise, fmt_points
from course_lib.exercises.gradebook import grade_all
from course_lib.exercises.interop import otter_test_file, with_nbgrader_tests
from course_lib.exercises.sandbox import Limits, grade_file
from exercise_notebooks import graded_namespace

sys.path.insert(0, str(ROOT / "tools"))
import make_student  # noqa: E402

NOTEBOOK_11_1 = ROOT / "notebooks" / "11_1_bidirectional_encoders.py"
LIMITS = Limits(margin=3, cell_time_limit=6, memory_mb=1024)
LIMIT_OPTIONS = ["--time-margin", "3", "--cell-time-limit", "6", "--memory-mb", "1024"]


# ----------------------------------------------------------------------------- points and partial credit

def test_points_are_declared_with_the_exercise_and_must_be_positive():
    assert EXERCISES["heads"].points == 2 and EXERCISES["causal_mask"].points == 1
    with pytest.raises(ValueError, match="points must be a positive number"):
        Exercise("x", ("f",), lambda f: None, points=0)
    with pytest.raises(ValueError, match="0 <= credit < 1"):
        Wrong("hint", credit=1)


def test_a_check_with_parts_gives_partial_credit_and_says_so(capsys):
    namespace = graded_namespace(NOTEBOOK_11_1)  # the notebook's split_heads, which is right
    exec("def merge_heads(X):\n    raise NotImplementedError", namespace)
    half = run_exercise("heads", namespace)
    assert (half.status, half.credit, half.fraction, half.points, half.score) == ("not attempted", 0.5, 0.5, 2, 1.0)
    assert str(half) == ("⏳ heads: not attempted (1 of 2 points) — split_heads is correct; now replace "
                         "`raise NotImplementedError` in merge_heads with your code")
    exec("def merge_heads(X):\n    return X.transpose(1, 2).flatten(2) * 2", namespace)
    wrong_merge = run_exercise("heads", namespace)
    assert (wrong_merge.status, wrong_merge.score) == ("wrong", 1.0)
    exec("def split_heads(X, n):\n    return X", namespace)
    assert run_exercise("heads", namespace).score == 0
    exec('result = check("heads")', graded_namespace(NOTEBOOK_11_1) | {"merge_heads": namespace["merge_heads"]})
    assert capsys.readouterr().out == f"{wrong_merge}\n"  # check() prints what the gradebook holds


def test_credit_of_a_result_is_its_fraction_of_the_points():
    assert Result("heads", "correct").score == 2 and Result("heads", "wrong").score == 0
    assert Result("heads", "wrong", "m", credit=0.25).score == 0.5
    assert NotAttempted("m", credit=0.5).credit == 0.5


def test_the_table_adds_the_points_when_they_differ_from_the_count():
    results = [Result("causal_mask", "correct"), Result("heads", "wrong", "merge", credit=0.5)]
    assert format_results(results).splitlines()[-1] == "1 of 2 exercises correct, 2 of 3 points"


# ----------------------------------------------------------------------------- limits

def test_an_exercise_may_compute_for_its_reference_time_plus_the_margin():
    limits = Limits(references={"exercises": {"mlm_masking": 2.2}, "cells": {"ch11_2": 0.7}}, margin=5)
    assert limits.exercise_seconds("mlm_masking") == 8 and limits.exercise_seconds("mlm_loss") == 6  # 1 s unmeasured
    assert limits.cell_seconds(["mlm_masking", "mlm_loss"]) == 11
    assert Limits(time_limit=4, cell_time_limit=9).exercise_seconds("mlm_masking") == 4
    assert Limits(memory_mb=2048).memory_text == "2 GB" and Limits(memory_mb=1500).memory_text == "1500 MB"


def test_every_shipped_reference_time_is_of_a_registered_exercise():
    refs = Limits().references
    assert refs["exercises"] and set(refs["exercises"]) <= set(EXERCISES)
    assert all(0 < t < 60 for t in [*refs["exercises"].values(), *refs["cells"].values()])


# ----------------------------------------------------------------------------- the command line and the gradebook

def test_grade_prints_why_a_file_cannot_be_graded(tmp_path, capsys):
    (tmp_path / "empty.ipynb").write_bytes(b"")
    assert exercises_cli(["grade", str(tmp_path / "empty.ipynb")]) == 0
    assert capsys.readouterr().out == (f"{tmp_path / 'empty.ipynb'}\n  this notebook could not be graded: the file is "
                                       "empty (0 bytes): open it in JupyterLab, save it (File → Save Notebook) and "
                                       "hand in the saved .ipynb again\n")


def _tree(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_grade_all_gives_byte_identical_files_for_the_same_submissions(tmp_path):
    chosen = [c for c in cases() if c.name in ("stub", "os_exit", "infinite_loop", "empty", "patches_hints", "wrong_shape")]
    folder = tmp_path / "class"
    for case in chosen:  # one in a subfolder, as when each student hands in a folder
        target = folder / ("alice" if case.name == "stub" else "") / case.filename
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(case.content)
    before = _tree(folder)
    grade_all(folder, tmp_path / "a" / "grades.csv", jobs=2, limits=LIMITS, progress=False)
    grade_all(folder, tmp_path / "b" / "grades.csv", jobs=1, limits=LIMITS, progress=False)
    assert exercises_cli(["grade-all", str(folder), "--out", str(tmp_path / "c" / "grades.csv"), *LIMIT_OPTIONS]) == 0
    assert _tree(tmp_path / "a") == _tree(tmp_path / "b") == _tree(tmp_path / "c")
    assert _tree(folder) == before
    rows = (tmp_path / "a" / "grades.csv").read_text().splitlines()
    assert [r.split(",")[0] for r in rows] == ["submission", "alice/stub", "empty", "infinite_loop", "os_exit",
                                             "patches_hints", "wrong_shape"]
    stub = next(csv.reader(io.StringIO(rows[1])))
    assert stub[:len(NAMES) + 3] == ["alice/stub", *["0"] * (len(NAMES) + 1), fmt_points(sum(EXERCISES[n].points for n in NAMES))]
    assert stub[-1].startswith("share_in_loss: not attempted — ")  # the notebook's order: it is asked first now
    assert "mlm_masking: not attempted — replace `raise NotImplementedError` in mask_tokens with your code | " in stub[-1]
    assert (tmp_path / "a" / "grades_feedback" / "alice__stub.md").is_file()
    assert filecmp.cmp(tmp_path / "a" / "grades.csv", tmp_path / "c" / "grades.csv", shallow=False)


PYTHON = """labels = 3
selected = (labels
            != -100)
share = (labels
         % 2)
total = labels + \\
    2
doc = '''
%s of the tokens
!important
'''
pair = [labels  # a comment ( with a bracket ] and a quote '
        != 3]
"""
MAGICS = """%matplotlib inline
!pip install x
s = "a ( string"  # a bracket ( in a string or a comment is none
%time x = 1
for i in range(2):
    %time y = i
z = (1,
     2)
%load_ext autoreload
"""


def test_only_a_line_that_begins_a_statement_is_a_magic():
    """A line that begins with % or ! is an IPython magic or a shell line only where a statement begins: inside
    brackets, after a backslash or in a string it is Python (PEP 8 breaks a line before a binary operator, so
    `selected = (labels` / `!= -100)` passes check() in Jupyter, and the grader once said SyntaxError)."""
    from course_lib.exercises.grading import python_only

    assert python_only(PYTHON) == PYTHON.rstrip("\n")
    namespace: dict = {}
    exec(python_only(PYTHON), namespace)
    assert (namespace["selected"], namespace["share"], namespace["total"], namespace["pair"]) == (True, 1, 5, [False])
    assert namespace["doc"] == "\n%s of the tokens\n!important\n"
    assert python_only(MAGICS).splitlines() == [
        "pass  # %matplotlib inline", "pass  # !pip install x", MAGICS.splitlines()[2], "pass  # %time x = 1",
        "for i in range(2):", "    pass  # %time y = i", "z = (1,", "     2)", "pass  # %load_ext autoreload"]
    exec(python_only(MAGICS), {})  # a magic alone in a block leaves the block valid
    assert python_only("%%time\nx = (1\n     % 2)\n!ls") == "pass  # %%time\nx = (1\n     % 2)\npass  # !ls"
    assert python_only("!echo a \\\n    b\nx = 1") == "pass  # !echo a \\\n#     b\nx = 1"  # a continued magic
    assert python_only("x = 1\r\n%time f()\ry = '\x0c'") == "x = 1\npass  # %time f()\ny = '\x0c'"
    # the lines IPython runs as magics are those the grader leaves out, no more, no fewer
    transformer = pytest.importorskip("IPython.core.inputtransformer2")
    for source in (PYTHON, MAGICS):
        ipython, ours = transformer.TransformerManager().transform_cell(source).splitlines(), python_only(source).splitlines()
        assert len(ipython) == len(ours)
        for theirs, mine in zip(ipython, ours):
            indent = theirs[:len(theirs) - len(theirs.lstrip())]
            assert mine == theirs or (theirs.lstrip().startswith("get_ipython().") and mine.startswith(indent + "pass  # ")), (mine, theirs)


# ----------------------------------------------------------------------------- nbgrader and otter

def _sheet(content: bytes):
    """The graded cells, the check() cells and the markdown of a submission: what the autograder runs, without
    the notebook's long demonstrations (a tiny BERT trained live) that nbgrader would run too."""
    nb = nbformat.reads(content.decode(), as_version=4)
    nb.cells = [c for c in nb.cells if c.cell_type == "markdown" or
                {"setup", "exercise"} & set(c.metadata.get("tags", [])) or re.search(r"\bcheck\(", c.source)]
    return nb


def _nbgrader_points(cell) -> float:
    """nbgrader's rule for an autograder test cell (nbgrader.utils.determine_grade): an error or anything on
    stderr gives 0, a number it evaluates to is the points, anything else all of them."""
    for out in cell.outputs:
        if out.output_type == "error" or (out.output_type == "stream" and out.name == "stderr"):
            return 0.0
        if out.output_type == "execute_result":
            return float(out.data["text/plain"])
    return float(cell.metadata.nbgrader.points)


@pytest.fixture(scope="module")
def student_submission(tmp_path_factory):
    """A student copy of notebook 11.2: two answers right, one wrong (no normalisation), one not attempted."""
    wrong = "def language_probs(p, alpha):\n    return torch.as_tensor(p, dtype=torch.float64) ** alpha"
    nb = nbformat.reads(edited("language_probs", cell=wrong).decode(), as_version=4)
    stub = make_student.student_notebook(ROOT / "notebooks" / "11_2_masked_language_modeling.py")
    i = next(i for i, c in enumerate(nb.cells) if "def masked_lm_loss(" in c.source)
    nb.cells[i].source = stub.cells[i].source
    path = tmp_path_factory.mktemp("nbgrader") / "submission.ipynb"
    path.write_text(nbformat.writes(nb))
    return path, {r.name: r for r in grade_file(path, LIMITS).results}


def test_nbgrader_autograder_cells_give_the_same_points_and_lines(student_submission, tmp_path):
    from nbclient import NotebookClient

    path, ours = student_submission
    assert {n: ours[n].status for n in ("mlm_masking", "mlm_loss", "nsp_input", "language_sampling")} == {
        "mlm_masking": "correct", "mlm_loss": "not attempted", "nsp_input": "correct", "language_sampling": "wrong"}
    nb = with_nbgrader_tests(_sheet(path.read_bytes()))
    tests = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert [c.metadata.nbgrader.grade_id for c in tests] == [f"test_{n}" for n in NAMES] == [f"test_{n}" for n in ours]
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    for cell, (name, result) in zip(tests, ours.items()):
        assert _nbgrader_points(cell) == result.score, name
        printed = "".join(o.text for o in cell.outputs if o.output_type == "stream")
        assert printed == f"{result}\n"


def test_otter_test_files_pass_the_right_answers_and_show_the_hint_of_the_wrong_ones(student_submission):
    path, ours = student_submission
    namespace = {"__name__": "__main__"}
    with redirect_stdout(io.StringIO()):
        for cell in _sheet(path.read_bytes()).cells:
            if {"setup", "exercise"} & set(cell.metadata.get("tags", [])):
                exec(cell.source, namespace)
    for name, result in ours.items():
        scope: dict = {}
        exec(otter_test_file(name), scope)
        assert scope["OK_FORMAT"] is True and scope["test"]["points"] == EXERCISES[name].points
        code = scope["test"]["suites"][0]["cases"][0]["code"]
        test = doctest.DocTestParser().get_doctest(code, dict(namespace), name, None, 0)  # as otter runs it
        report = io.StringIO()
        outcome = doctest.DocTestRunner(verbose=False).run(test, out=report.write)
        assert outcome.failed == (0 if result.correct else 1), name
        if not result.correct:
            assert repr(str(result)) in report.getvalue()


def test_export_writes_the_files(tmp_path, capsys):
    assert exercises_cli(["export", "otter", "--out", str(tmp_path / "tests"), "mlm_loss", "heads"]) == 0
    assert sorted(p.name for p in (tmp_path / "tests").iterdir()) == ["heads.py", "mlm_loss.py"]
    assert '"points": 2,' in (tmp_path / "tests" / "heads.py").read_text()
    source = ROOT / "notebooks" / "11_2_masked_language_modeling.py"
    assert exercises_cli(["export", "nbgrader", "--out", str(tmp_path / "source"), str(source)]) == 0
    nb = nbformat.read(tmp_path / "source" / "11_2_masked_language_modeling.ipynb", as_version=4)
    ids = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells if "nbgrader" in c.metadata]
    assert ids == [f"test_{n}" for n in NAMES] and len(nb.cells) == len(jupytext.read(source).cells) + len(NAMES)


def test_a_notebook_of_blank_lines_is_read_at_once_and_its_definitions_still_found():
    """The grader reads a notebook's code for its exercises in its own process, before any sandbox: a pattern that
    rescans a run of blank lines from each of them (``^\\s*`` over newlines) let a 450 KB cell of blank lines hold
    the whole class's grading for minutes. Run in a subprocess: a return of that pattern hangs there, not here."""
    import subprocess

    probe = """
from course_lib.exercises.grading import defines, exercises_in
blank = "\\n" * 300_000
assert exercises_in(blank) == []
assert exercises_in(blank + "def build_nsp_input(a, b):\\n    pass\\n") == ["nsp_input"]
assert defines(blank + "  masked_lm_loss = None", "masked_lm_loss") and not defines(blank, "masked_lm_loss")
assert defines("\\n\\n\\tdef masked_lm_loss (x):", "masked_lm_loss")          # indented by a tab, as before
print("ok")
"""
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr[-2000:]
