"""The exercise mechanism: check() in a notebook, results, grading a whole notebook, the command line.

Each exercise's solution, stub and known-wrong answers are proven by tests/test_exercise_registry.py; properties of
particular checks by tests/test_exercise_checks.py. Notebooks graded here are copies of a real notebook, edited.

Grade any student's notebook with these tests (fails with the hint of each exercise not yet correct):

    STUDENT_NOTEBOOK=notebooks/student/11_1_bidirectional_encoders.ipynb .venv/bin/pytest tests/test_exercises.py -k student
"""
import os
import re
import textwrap
from pathlib import Path

import jupytext
import pytest
import torch

from conftest import ROOT, run_answer as run
from course_lib.exercises import EXERCISES, Result, check, format_results, grade_notebook, run_exercise
from course_lib.exercises.__main__ import main as exercises_cli
from exercise_notebooks import cell_source, checks_called, graded_namespace

NOTEBOOK = ROOT / "notebooks" / "11_1_bidirectional_encoders.py"  # attention, causal_mask, heads, param_count
CAUSAL_MASK_CORRECT = "True on and below the diagonal, for T = 1, 4 and 7"


def _replace_cell(text: str, start: str, new: str) -> str:
    """Replace the py:percent cell whose code starts with ``start`` by ``new`` (same cell marker)."""
    head, sep, rest = text.partition(start)
    assert sep, start
    end = rest.find("\n# %%")
    return head + new + "\n\n" + rest[end + 1:]


def _copy(tmp_path: Path, name: str, text: str | None = None) -> Path:
    """The notebook (or ``text``, an edited version of it) written to tmp_path/name."""
    path = tmp_path / name
    path.write_text(NOTEBOOK.read_text() if text is None else text)
    return path


# ----------------------------------------------------------------------------- one exercise

def test_a_stub_is_not_attempted():
    result = run("causal_mask", 'def causal_mask(T):\n    raise NotImplementedError("Exercise: replace this line with your code")')
    assert result == Result("causal_mask", "not attempted", "replace `raise NotImplementedError` in causal_mask with your code")


def test_a_missing_function_is_not_attempted_and_named():
    namespace = graded_namespace(NOTEBOOK)
    del namespace["merge_heads"]  # deleted or renamed: split_heads alone is there
    assert run_exercise("heads", namespace) == Result(
        "heads", "not attempted", "`merge_heads` is not defined: run the cell that defines it (and keep the name `merge_heads`)")


def test_a_name_that_is_not_a_function_is_wrong():
    result = run("causal_mask", "causal_mask = torch.ones(3, 3)")
    assert result == Result("causal_mask", "wrong", "`causal_mask` should be a function, but it is a Tensor")


# ----------------------------------------------------------------------------- check() in a notebook

def test_check_finds_the_function_in_the_notebook_namespace_and_prints_one_line(capsys):
    namespace = graded_namespace(NOTEBOOK)  # the notebook's imports and its solved exercises
    exec('result = check("causal_mask")', namespace)
    assert namespace["result"] == Result("causal_mask", "correct", CAUSAL_MASK_CORRECT)
    assert capsys.readouterr().out == f"✅ causal_mask: correct — {CAUSAL_MASK_CORRECT}\n"


def test_check_prints_the_hint_of_a_wrong_answer(capsys):
    namespace = {}
    exec("import torch\nfrom course_lib.exercises import check\n"
         "def causal_mask(T):\n    return torch.ones(T, T, dtype=torch.bool).triu()\n"
         "result = check('causal_mask')", namespace)
    assert namespace["result"].status == "wrong"
    assert capsys.readouterr().out == (
        "❌ causal_mask: wrong — position (0, 1) should be False: token 0 must not see token 1, which comes later\n")


def test_check_of_an_unknown_exercise_lists_the_known_ones():
    with pytest.raises(ValueError) as err:
        check("atention")
    assert str(err.value) == ("there is no exercise called 'atention' (did you mean 'attention'?); "
                              "the exercises are: " + ", ".join(EXERCISES))


def test_checking_leaves_the_notebooks_random_state_alone():
    namespace = graded_namespace(NOTEBOOK)
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    assert run_exercise("heads", namespace).correct
    torch.testing.assert_close(torch.rand(3), expected)


def test_check_shows_its_line_once_in_a_jupyter_kernel():
    from nbclient import NotebookClient

    definition = cell_source(NOTEBOOK, "def causal_mask(")  # the notebook's own solution cell
    nb = jupytext.reads(textwrap.dedent("""\
        # %%
        import torch
        from course_lib.exercises import check

        # %%
        {definition}

        # %%
        check("causal_mask")

        # %%
        r = check("causal_mask")

        # %%
        r
    """).replace("{definition}", definition), fmt="py:percent")
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    line = f"✅ causal_mask: correct — {CAUSAL_MASK_CORRECT}\n"
    assert [c.outputs for c in nb.cells[:2]] == [[], []]
    for cell in nb.cells[2:]:  # the last cell shows a Result from an earlier cell: once, too
        assert [(o.output_type, o.get("text")) for o in cell.outputs] == [("stream", line)]


# ----------------------------------------------------------------------------- grading a notebook

def test_a_broken_exercise_does_not_hide_the_others(tmp_path):
    text = NOTEBOOK.read_text()
    text = _replace_cell(text, "def causal_mask(T):", "def causal_mask(T):\n    return torch.ones(T, T).tril(\n")  # SyntaxError
    text = _replace_cell(text, "def scaled_dot_product_attention(", """\
def scaled_dot_product_attention(Q, K, V, mask=None):
    w = (Q @ K.transpose(-2, -1)).softmax(-1)
    return w @ V, w""")
    after = '    ### END SOLUTION\n\n\n# %%\ncheck("heads")'
    assert after in text
    text = text.replace(after, '    ### END SOLUTION\n\n\nraise RuntimeError("a cell that fails after its definitions")'
                               '\n\n# %%\ncheck("heads")')
    text += '\n# %%\n1 / 0  # an untagged cell: never run when grading\n'
    results = {r.name: r for r in grade_notebook(_copy(tmp_path, "broken.py", text))}
    assert results["attention"].status == "wrong" and results["attention"].message.startswith("your weights are softmax(QKᵀ)")
    assert results["causal_mask"] == Result("causal_mask", "wrong", "the cell that defines `causal_mask` raised "
                                            "SyntaxError: '(' was never closed (line 2), so `causal_mask` was never defined")
    assert results["heads"].correct and results["param_count"].correct


def test_a_broken_setup_cell_does_not_stop_grading(tmp_path):
    text = NOTEBOOK.read_text()
    setup = '# %% tags=["setup"]\n'
    assert setup in text
    broken = '# %% tags=["setup"]\nimport no_such_module\n\n'  # a setup cell that fails, before the notebook's own
    notebook = _copy(tmp_path, "setup.py", text.replace(setup, broken + setup, 1))
    assert [r.status for r in grade_notebook(notebook)] == ["correct"] * len(set(checks_called(NOTEBOOK)))


@pytest.mark.slow  # grades a whole notebook: make test, not make check
def test_grading_an_ipynb_gives_the_same_results_as_its_py_source(tmp_path):
    source = _copy(tmp_path, "nb.py")
    ipynb = tmp_path / "nb.ipynb"
    jupytext.write(jupytext.read(source), ipynb, fmt="ipynb")
    assert grade_notebook(ipynb) == grade_notebook(source)


def test_exercises_come_from_check_calls_or_definitions(tmp_path):
    notebook = tmp_path / "one.py"
    notebook.write_text('# %% tags=["setup"]\nfrom course_lib.exercises import check\n\n# %%\ncheck("causal_mask")\n')
    assert grade_notebook(notebook) == [Result("causal_mask", "not attempted", "`causal_mask` is not defined: run the "
                                               "cell that defines it (and keep the name `causal_mask`)")]


@pytest.mark.slow  # grades a whole notebook: make test, not make check
def test_the_command_line_prints_a_table_and_exits_0(capsys, tmp_path):
    n = len(set(checks_called(NOTEBOOK)))
    wrong = _copy(tmp_path, "wrong.py", _replace_cell(NOTEBOOK.read_text(), "def causal_mask(T):", """\
def causal_mask(T):
    return torch.ones(T, T, dtype=torch.bool).triu()"""))
    assert exercises_cli(["grade", str(NOTEBOOK), str(wrong)]) == 0
    solved, edited = capsys.readouterr().out.split(f"{wrong}\n")
    assert solved.startswith(f"{NOTEBOOK}\n")
    assert re.search(rf"\n{n} of {n} exercises correct, ([\d.]+) of \1 points\n$", solved), solved[-200:]
    assert re.search(r"^  ❌ causal_mask +wrong +position \(0, 1\) should be False", edited, re.MULTILINE)
    lines = edited.splitlines()
    right = sum(line.startswith('  ✅') for line in lines)
    assert len(lines) == n + 1 and lines[-1].startswith(f"{right} of {n} exercises correct, ") and lines[-1].endswith(" points")
    assert exercises_cli(["grade", str(tmp_path / "missing.ipynb")]) == 2


def test_the_table_lists_each_exercise_with_its_icon():
    table = format_results([Result("attention", "correct"), Result("heads", "not attempted", "replace it")], title="nb")
    assert table == ("nb\n  ✅ attention  correct\n  ⏳ heads      not attempted  replace it\n"
                     "1 of 2 exercises correct, 1 of 3 points")  # heads is worth 2 points


# ----------------------------------------------------------------------------- a student's notebook, on request

STUDENT_NOTEBOOK = os.environ.get("STUDENT_NOTEBOOK")
_graded: dict = {}


@pytest.mark.skipif(not STUDENT_NOTEBOOK, reason="set STUDENT_NOTEBOOK=/path/to/notebook.ipynb to grade a notebook")
@pytest.mark.parametrize("exercise", list(EXERCISES))
def test_student_notebook(exercise):
    path = Path(STUDENT_NOTEBOOK).expanduser()
    assert path.is_file(), f"STUDENT_NOTEBOOK={STUDENT_NOTEBOOK}: there is no such file"
    if path not in _graded:
        _graded[path] = {r.name: r for r in grade_notebook(path)}
    if exercise not in _graded[path]:
        pytest.skip(f"{path.name} has no exercise {exercise!r}")
    result = _graded[path][exercise]
    if not result.correct:
        pytest.fail(str(result), pytrace=False)
