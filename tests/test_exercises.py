"""The exercise checks: solutions pass, wrong answers get their hint, broken cells hide nothing.

Grade any student's notebook with these tests (fails with the hint of each exercise not yet correct):

    STUDENT_NOTEBOOK=notebooks/student/11_1_bidirectional_encoders.ipynb .venv/bin/pytest tests/test_exercises.py -k student
"""
import os
import sys
import textwrap
from pathlib import Path

import jupytext
import pytest
import torch

from conftest import DATA, ROOT, run_answer as run
from course_lib.exercises import EXERCISES, Result, check, format_results, grade_notebook
from course_lib.exercises.__main__ import main as exercises_cli

sys.path.insert(0, str(ROOT / "tools"))
import make_student  # noqa: E402

FIXTURE = DATA / "exercise_fixture.py"
SOLVED = [FIXTURE, *make_student.sources()]  # the real notebooks are covered once they have exercises




# ----------------------------------------------------------------------------- solutions

@pytest.mark.parametrize("source", SOLVED, ids=[p.stem for p in SOLVED])
def test_every_exercise_is_correct_on_the_solution_source(source):
    results = grade_notebook(source)
    assert results, f"{source.name}: no graded exercise found"
    wrong = [str(r) for r in results if not r.correct]
    assert not wrong, "\n".join(wrong)


def test_the_fixture_has_all_four_exercises_of_notebook_11_1():
    assert [r.name for r in grade_notebook(FIXTURE)] == ["attention", "causal_mask", "heads", "param_count"]


# ----------------------------------------------------------------------------- hints

ATTENTION = "def scaled_dot_product_attention(Q, K, V, mask=None):\n"
UNBATCHED_CASE = " (with Q (4, 8), K (6, 8), V (6, 5), no mask)"
CAUSAL_CASE = " (with Q (5, 8), K (5, 8), V (5, 3), causal mask)"
SPLIT = "def split_heads(X, n):\n    B, T, d = X.shape\n"
GOOD_SPLIT = SPLIT + "    return X.view(B, T, n, d // n).transpose(1, 2)\n"
MERGE = "def merge_heads(X):\n    B, H, T, dh = X.shape\n"
GOOD_MERGE = MERGE + "    return X.transpose(1, 2).reshape(B, T, H * dh)\n"
COUNT = ("def bert_parameter_count(c):\n"
         "    d, V, L, f = c.hidden_size, c.vocab_size, c.num_hidden_layers, c.intermediate_size\n")
BASE = "off by {:+,} parameters for BERT-base: yours {}, expected 109,482,240 = " \
       "embeddings 23,837,184 + 12 layers × 7,087,872 + pooler 590,592; "

WRONG_ANSWERS = {
    "attention without the 1/sqrt(d_k) scaling": ("attention", ATTENTION + """\
    s = Q @ K.transpose(-2, -1)
    w = s.masked_fill(~mask, float("-inf")).softmax(-1) if mask is not None else s.softmax(-1)
    return w @ V, w""", "your weights are softmax(QKᵀ), without the division by √d_k: scale the scores by 1/√d_k "
                        "(eq. 11.6)" + UNBATCHED_CASE),
    "attention dividing by d_k": ("attention", ATTENTION + """\
    w = (Q @ K.transpose(-2, -1) / K.size(-1)).softmax(-1)
    return w @ V, w""", "your weights are softmax(QKᵀ/d_k): divide by √d_k, not by d_k" + UNBATCHED_CASE),
    "softmax over the queries": ("attention", ATTENTION + """\
    w = (Q @ K.transpose(-2, -1) / math.sqrt(K.size(-1))).softmax(-2)
    return w @ V, w""", "the weights sum to 1 along axis -2 instead of along each row: take the softmax over the keys, "
                        "the last axis (dim=-1)" + UNBATCHED_CASE),
    "the mask is ignored": ("attention", ATTENTION + """\
    w = (Q @ K.transpose(-2, -1) / math.sqrt(K.size(-1))).softmax(-1)
    return w @ V, w""", "weight at (0, 1) should be 0: that key is masked" + CAUSAL_CASE),
    "the mask is applied after the softmax": ("attention", ATTENTION + """\
    w = (Q @ K.transpose(-2, -1) / math.sqrt(K.size(-1))).softmax(-1)
    w = w * mask if mask is not None else w
    return w @ V, w""", "row 0 of the weights sums to 0.65, expected 1: apply the mask to the scores before the softmax "
                        "(masked scores -> -inf), not to the weights after it" + CAUSAL_CASE),
    "sigmoid instead of softmax": ("attention", ATTENTION + """\
    w = (Q @ K.transpose(-2, -1) / math.sqrt(K.size(-1))).sigmoid()
    return w @ V, w""", "row 0 of the weights sums to 3.01, expected 1" + UNBATCHED_CASE),
    "attention output from the keys": ("attention", ATTENTION + """\
    w = (Q @ K.transpose(-2, -1) / math.sqrt(K.size(-1))).softmax(-1)
    return w @ K, w""", "expected shape (4, 5), got (4, 8) for the output" + UNBATCHED_CASE),
    "attention returns (weights, output)": ("attention", ATTENTION + """\
    w = (Q @ K.transpose(-2, -1) / math.sqrt(K.size(-1))).softmax(-1)
    return w, w @ V""", "return (output, weights) in this order: yours look like (weights, output)" + UNBATCHED_CASE),
    "attention only for unbatched inputs": ("attention", ATTENTION + """\
    w = (Q @ K.mT.reshape(K.size(-1), -1) / math.sqrt(K.size(-1))).softmax(-1)
    return w @ V, w""", None),  # whatever it raises: checked below to be "wrong", not a crash
    "attention raising TypeError": ("attention", ATTENTION + "    return Q + 'a'",
                                    "your function scaled_dot_product_attention raised TypeError: unsupported operand "
                                    "type(s) for +: 'Tensor' and 'str'" + UNBATCHED_CASE),
    "transposed causal mask": ("causal_mask", "def causal_mask(T):\n    return torch.ones(T, T, dtype=torch.bool).triu()",
                               "position (0, 1) should be False: token 0 must not see token 1, which comes later"),
    "float causal mask": ("causal_mask", "def causal_mask(T):\n    return torch.ones(T, T).tril()",
                          "causal_mask(4) has dtype torch.float32; a mask must be torch.bool (True = may attend): "
                          "use dtype=torch.bool or .bool()"),
    "causal mask of the wrong shape": ("causal_mask", "def causal_mask(T):\n    return torch.ones(T, dtype=torch.bool)",
                                       "expected shape (4, 4), got (4,) for causal_mask(4)"),
    "causal mask hiding the diagonal": ("causal_mask",
                                        "def causal_mask(T):\n    return torch.ones(T, T, dtype=torch.bool).tril(-1)",
                                        "position (0, 0) should be True: every token may see itself"),
    "split without the transpose": ("heads", SPLIT + "    return X.view(B, T, n, d // n)\n" + GOOD_MERGE,
                                    "expected shape (2, 4, 5, 3), got (2, 5, 4, 3) for split_heads(X, 4) with X of shape "
                                    "(2, 5, 12): are the head and token axes swapped?"),
    "split by a single reshape": ("heads", SPLIT + "    return X.reshape(B, n, T, d // n)\n" + GOOD_MERGE,
                                  "split_heads(X, 4) with X of shape (2, 5, 12): you reshaped (B, T, d) straight to "
                                  "(B, H, T, d_h), which mixes tokens into heads; view X as (B, T, H, d_h) first, then swap "
                                  "the token and head axes with transpose(1, 2)"),
    "split interleaving the dims": ("heads", SPLIT + "    return X.view(B, T, d // n, n).permute(0, 3, 1, 2)\n" + GOOD_MERGE,
                                    "split_heads(X, 4) with X of shape (2, 5, 12): [0, 0, 0] should be X[0, 0, 0:3] "
                                    "(dims 0…2 of token 0); yours holds dims 0, 4, 8 of token 0: head h must hold dims "
                                    "h·d_h … (h+1)·d_h−1 of every token"),
    "merge by a single reshape": ("heads", GOOD_SPLIT + MERGE + "    return X.reshape(B, T, H * dh)\n",
                                  "merge_heads(X) with X of shape (2, 4, 5, 3): you reshaped (B, H, T, d_h) straight to "
                                  "(B, T, H·d_h), which mixes tokens and heads; transpose(1, 2) to (B, T, H, d_h) first, "
                                  "then reshape"),
    "merge with token and feature axes swapped": ("heads", GOOD_SPLIT + MERGE + "    return X.permute(0, 1, 3, 2).reshape(B, H * dh, T)\n",
                                                  "expected shape (2, 5, 12), got (2, 12, 5) for merge_heads(X) with X of "
                                                  "shape (2, 4, 5, 3): are the token and feature axes swapped?"),
    "no LayerNorm on the embeddings": ("param_count", COUNT + """\
    layer = 4 * (d * d + d) + 2 * d + (d * f + f) + (f * d + d) + 2 * d
    return (V + c.max_position_embeddings + c.type_vocab_size) * d + L * layer + d * d + d""",
        BASE.format(-1536, "109,480,704") + "1,536 is the size of one LayerNorm (2·d) or the segment embeddings: "
                                            "did you leave it out?"),
    "no pooler": ("param_count", COUNT + """\
    layer = 4 * (d * d + d) + 2 * d + (d * f + f) + (f * d + d) + 2 * d
    return (V + c.max_position_embeddings + c.type_vocab_size) * d + 2 * d + L * layer""",
        BASE.format(-590592, "108,891,648") + "590,592 is the size of the pooler (d·d + d): did you leave it out?"),
    "two segment types hard-coded": ("param_count", COUNT + """\
    layer = 4 * (d * d + d) + 2 * d + (d * f + f) + (f * d + d) + 2 * d
    return (V + c.max_position_embeddings + 2) * d + 2 * d + L * layer + d * d + d""",
        "off by +24 parameters for a BERT with V=57, d=24, L=3, d_ff=50, 20 positions, 1 segment type: yours 17,454, "
        "expected 17,430 = embeddings 1,920 + 3 layers × 4,970 + pooler 600; 24 is the size of one bias vector (d) or the "
        "segment embeddings: did you count it twice?"),
    "a float count": ("param_count", COUNT + """\
    layer = 4 * (d * d + d) + 2 * d + (d * f + f) + (f * d + d) + 2 * d
    return ((V + c.max_position_embeddings + c.type_vocab_size) * d + 2 * d + L * layer + d * d + d) / 1""",
        "bert_parameter_count should return an int, got float 109482240.0 for BERT-base; use // rather than /, or int(...)"),
}


@pytest.mark.parametrize("case", WRONG_ANSWERS)
def test_a_wrong_answer_gets_its_hint(case):
    name, source, hint = WRONG_ANSWERS[case]
    result = run(name, source)
    assert result.status == "wrong", result
    if hint is not None:
        assert result.message == hint


def test_a_stub_is_not_attempted():
    result = run("causal_mask", 'def causal_mask(T):\n    raise NotImplementedError("Exercise: replace this line with your code")')
    assert result == Result("causal_mask", "not attempted", "replace `raise NotImplementedError` in causal_mask with your code")


def test_heads_with_only_split_done_says_which_function_is_left():
    result = run("heads", GOOD_SPLIT + "def merge_heads(X):\n    raise NotImplementedError")
    assert result.status == "not attempted"
    assert result.message == "split_heads is correct; now replace `raise NotImplementedError` in merge_heads with your code"


def test_a_missing_function_is_not_attempted_and_named():
    result = run("heads", GOOD_SPLIT)  # merge_heads deleted or renamed
    assert result == Result("heads", "not attempted",
                            "`merge_heads` is not defined: run the cell that defines it (and keep the name `merge_heads`)")


def test_a_name_that_is_not_a_function_is_wrong():
    result = run("causal_mask", "causal_mask = torch.ones(3, 3)")
    assert result == Result("causal_mask", "wrong", "`causal_mask` should be a function, but it is a Tensor")


# ----------------------------------------------------------------------------- check() in a notebook

def test_check_finds_the_function_in_the_notebook_namespace_and_prints_one_line(capsys):
    namespace = {}
    exec(textwrap.dedent("""\
        import torch
        from course_lib.exercises import check

        def causal_mask(T):
            return torch.ones(T, T, dtype=torch.bool).tril()

        result = check("causal_mask")
    """), namespace)
    assert namespace["result"] == Result("causal_mask", "correct", "True on and below the diagonal, for T = 1, 4 and 7")
    assert capsys.readouterr().out == "✅ causal_mask: correct — True on and below the diagonal, for T = 1, 4 and 7\n"


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
    assert ", ".join(EXERCISES).startswith("attention, causal_mask, heads, param_count")


def test_checking_leaves_the_notebooks_random_state_alone():
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    run("heads", GOOD_SPLIT + GOOD_MERGE)
    torch.testing.assert_close(torch.rand(3), expected)


def test_check_shows_its_line_once_in_a_jupyter_kernel():
    from nbclient import NotebookClient

    nb = jupytext.reads(textwrap.dedent("""\
        # %%
        import torch
        from course_lib.exercises import check
        def causal_mask(T):
            return torch.ones(T, T, dtype=torch.bool).tril()

        # %%
        check("causal_mask")

        # %%
        r = check("causal_mask")

        # %%
        r
    """), fmt="py:percent")
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    line = "✅ causal_mask: correct — True on and below the diagonal, for T = 1, 4 and 7\n"
    for cell in nb.cells[1:]:  # the last cell shows a Result from an earlier cell: once, too
        assert [(o.output_type, o.get("text")) for o in cell.outputs] == [("stream", line)]


# ----------------------------------------------------------------------------- grading a notebook

def _replace_cell(text: str, start: str, new: str) -> str:
    """Replace the py:percent cell whose code starts with ``start`` by ``new`` (same cell marker)."""
    head, sep, rest = text.partition(start)
    assert sep, start
    end = rest.find("\n# %%")
    return head + new + "\n\n" + rest[end + 1:]


def test_a_broken_exercise_does_not_hide_the_others(tmp_path):
    text = FIXTURE.read_text()
    text = _replace_cell(text, "def causal_mask(T):", "def causal_mask(T):\n    return torch.ones(T, T).tril(\n")  # SyntaxError
    text = _replace_cell(text, "def scaled_dot_product_attention(", ATTENTION + """\
    w = (Q @ K.transpose(-2, -1)).softmax(-1)
    return w @ V, w""")
    text = text.replace('    ### END SOLUTION\n\n\n# %%\ncheck("heads")',
                        '    ### END SOLUTION\n\n\nraise RuntimeError("a cell that fails after its definitions")\n\n# %%\ncheck("heads")')
    text += '\n# %%\n1 / 0  # an untagged cell: never run when grading\n'
    notebook = tmp_path / "broken.py"
    notebook.write_text(text)
    results = {r.name: r for r in grade_notebook(notebook)}
    assert results["attention"].status == "wrong" and results["attention"].message.startswith("your weights are softmax(QKᵀ)")
    assert results["causal_mask"] == Result("causal_mask", "wrong", "the cell that defines `causal_mask` raised "
                                            "SyntaxError: '(' was never closed (line 2), so `causal_mask` was never defined")
    assert results["heads"].correct and results["param_count"].correct


def test_a_broken_setup_cell_does_not_stop_grading(tmp_path):
    notebook = tmp_path / "setup.py"
    notebook.write_text(FIXTURE.read_text().replace("import torch\n", "import torch\nimport no_such_module\n", 1))
    assert [r.status for r in grade_notebook(notebook)] == ["correct"] * 4


def test_grading_an_ipynb_gives_the_same_results_as_its_py_source(tmp_path):
    ipynb = tmp_path / "fixture.ipynb"
    jupytext.write(jupytext.read(FIXTURE), ipynb, fmt="ipynb")
    assert grade_notebook(ipynb) == grade_notebook(FIXTURE)


def test_exercises_come_from_check_calls_or_definitions(tmp_path):
    notebook = tmp_path / "one.py"
    notebook.write_text('# %% tags=["setup"]\nfrom course_lib.exercises import check\n\n# %%\ncheck("causal_mask")\n')
    assert grade_notebook(notebook) == [Result("causal_mask", "not attempted", "`causal_mask` is not defined: run the "
                                               "cell that defines it (and keep the name `causal_mask`)")]


def test_the_command_line_prints_a_table_and_exits_0(capsys, tmp_path):
    notebook = tmp_path / "wrong.py"
    notebook.write_text(FIXTURE.read_text().replace(".tril()", ".triu()"))
    assert exercises_cli(["grade", str(FIXTURE), str(notebook)]) == 0
    out = capsys.readouterr().out
    assert "4 of 4 exercises correct" in out and "3 of 4 exercises correct" in out
    assert "  ❌ causal_mask  wrong          position (0, 1) should be False" in out
    assert exercises_cli(["grade", str(tmp_path / "missing.ipynb")]) == 2


def test_the_table_lists_each_exercise_with_its_icon():
    table = format_results([Result("attention", "correct"), Result("heads", "not attempted", "replace it")], title="nb")
    assert table == "nb\n  ✅ attention  correct\n  ⏳ heads      not attempted  replace it\n1 of 2 exercises correct"


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
