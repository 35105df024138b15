"""The hints of notebook 11.3's exercises explain the idea and never hand out the code.

Two scans with the same detector: every string literal of course_lib/exercises/ch11_3.py (f-strings with their
fields replaced, docstrings left out), and every message the known-wrong answers of tests/exercise_cases/ch11_3.py
actually get. Naming a function (``torch.where``, ``F.normalize``) or an index (``hidden_states[-4:]``) is fine;
a comprehension, a call of a torch function with its arguments, nested or chained calls or modular arithmetic
is code to copy.
"""
from __future__ import annotations

import ast
import math
import re
import textwrap

import pytest
import torch
import torch.nn.functional as F

from conftest import ROOT
from course_lib.exercises import WRONG, run_exercise
from exercise_cases import ch11_3 as cases

MODULE = ROOT / "course_lib" / "exercises" / "ch11_3.py"

CODE = {
    "a comprehension": re.compile(r"[\[{(][^\]})]*\bfor [A-Za-z_]\w*(?:, [A-Za-z_]\w*)* in [\w(\[]"),
    "a call of a torch function": re.compile(r"\b(?:torch|F|nn)\.[\w.]*\w\("),
    "nested calls": re.compile(r"\b\w+\(\s*\w[\w.]*\("),
    "chained calls": re.compile(r"\)\.\w+\("),
    "modular arithmetic": re.compile(r"\)\s*%\s*\w"),
}

# the hints the review of notebook 11.3 found handing out code: the detector must flag each of them
HANDED_OUT = [
    "yours is about 1/N = 0.125, as if some pairs were a row with itself (cosine 1): draw j != i, e.g. "
    "j = (i + torch.randint(1, N, …)) % N",
    "word_ids holds None for [CLS] and [SEP], so it cannot become a tensor; find the positions in Python, "
    "[t for t, w in enumerate(word_ids) if w == word]",
    "as course_lib.embeddings.sense_centroids returns (senses, tensor): make a dict of it, dict(zip(senses, centroids))",
    "normalise the rows first (F.normalize(X, dim=-1)) to get cosines",
    "return the mean of the cosines, a single number (.mean().item())",
]


def code_in(text: str) -> list[str]:
    """What in ``text`` reads as code, by kind: [] for a hint that only explains."""
    return [f"{kind}: {m.group(0)!r}" for kind, rx in CODE.items() for m in rx.finditer(text)]


def literals(path) -> list[tuple[int, str]]:
    """(line, text) of every string literal of the module but its docstrings; an f-string's fields become '{…}'."""
    tree = ast.parse(path.read_text())
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skip.add(id(first.value))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            skip.update(id(v) for v in node.values)
            out.append((node.lineno, "".join(v.value if isinstance(v, ast.Constant) else "{…}" for v in node.values)))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            out.append((node.lineno, node.value))
    return out


@pytest.mark.parametrize("hint", HANDED_OUT)
def test_the_detector_flags_the_hints_that_handed_out_code(hint):
    assert code_in(hint), hint


def test_the_detector_lets_an_explanation_through():
    for hint in ["draw the second row of each pair among the N − 1 rows other than the first",
                 "set the dimensions where σ <= eps to 0 instead of dividing, e.g. with torch.where",
                 "average the last four, hidden_states[-4:] (layers 3…6)", "z = (x − μ) / σ",
                 "normalise each row to length 1 first (F.normalize), so that the dot product is the cosine"]:
        assert not code_in(hint), (hint, code_in(hint))


def test_no_string_of_the_11_3_checks_hands_out_code():
    found = [(line, text[:120], code_in(text)) for line, text in literals(MODULE) if code_in(text)]
    assert not found, "hints that give the code (explain the idea instead):\n" + "\n".join(map(str, found))


@pytest.mark.parametrize("case", list(cases.CASES))
def test_the_hint_a_wrong_answer_gets_explains_without_code(case):
    name, source, _ = cases.CASES[case]
    namespace = {"torch": torch, "F": F, "math": math}
    exec(compile(textwrap.dedent(source), f"<wrong answer to {name}>", "exec"), namespace)
    result = run_exercise(name, namespace)
    assert result.status == WRONG, str(result)
    # the student's own error text (an exception's message) is quoted, not ours: only the check's words count
    message = re.sub(r"raised \w+: .*?\(", "(", result.message, count=1)
    assert not code_in(message), (result.message, code_in(message))


@pytest.mark.parametrize("case, right, wrong", [
    # one overall μ and σ: they did z-score, just not dimension by dimension
    ("z-scored with one overall mean and std",
     ["you z-scored with one μ and one σ for the whole matrix", "each dimension i its own μ_i and σ_i"],
     ["the z-scored values equal the raw ones", "you fitted μ and σ on the scored tokens"]),
    # the fitted tokens standardised with their own statistics, reported as the scored tokens' z-scored anisotropy
    ("the fitted tokens z-scored with their own statistics",
     ["your z-scored values are those of the fitted tokens, z-scored with their own μ and σ",
      "standardise the scored tokens"],
     ["you fitted μ and σ on the scored tokens"]),
])
def test_anisotropy_by_layer_names_what_the_answer_did(case, right, wrong):
    """An expert review found both misdiagnosed: the first was told its z-scored values equal the raw ones, the
    second that it had fitted μ and σ on the scored tokens."""
    name, source, _ = cases.CASES[case]
    namespace = {"torch": torch, "F": F, "math": math}
    exec(compile(textwrap.dedent(source), f"<wrong answer to {name}>", "exec"), namespace)
    result = run_exercise(name, namespace)
    assert result.status == WRONG, str(result)
    for part in right:
        assert part in result.message, (part, result.message)
    for part in wrong:
        assert part not in result.message, (part, result.message)
