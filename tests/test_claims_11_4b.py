"""Every number and direction the prose of notebook 11.4b states, read from the executed notebook.

Each claim cell of notebooks/11_4b_sequence_labelling.py carries a marker ``# claim: <name>``; the test of the
same name reads that cell's printed output and asserts what the prose around it says.
"""
import re
from pathlib import Path

import pytest

from conftest import ROOT
from notebook_runs import executed

NOTEBOOK = ROOT / "notebooks" / "11_4b_sequence_labelling.py"
MARKER = re.compile(r"^# claim: ([\w-]+)\s*$", re.M)

pytestmark = pytest.mark.slow  # the notebook runs once per session (two to three minutes on 2 CPU cores)


@pytest.fixture(scope="module")
def run():
    r = executed(Path(NOTEBOOK))
    errors = r.errors()
    assert not errors, f"{NOTEBOOK.name}: {errors[0].ename}: {errors[0].evalue}"
    return r


def output(run, name: str) -> str:
    cells = [c for c in run.notebook.cells if c.cell_type == "code" and f"# claim: {name}\n" in c.source + "\n"]
    assert len(cells) == 1, f"{len(cells)} cells are marked '# claim: {name}'"
    return run.outputs_text(cells)


def prose(run) -> str:
    return "\n".join(c.source for c in run.notebook.cells if c.cell_type == "markdown")


def number(pattern: str, text: str) -> float:
    m = re.search(pattern, text)
    assert m, f"{pattern!r} not found in {text!r}"
    return float(m.group(1))


def scores(text: str, name: str) -> dict:
    line = next(line for line in text.splitlines() if line.startswith(name))
    em, f1, h_em, h_f1, n_em = (float(x) for x in re.findall(r"(?:EM|F1)\s+([\d.]+)", line))
    return {"exact": em, "f1": f1, "HasAns_exact": h_em, "HasAns_f1": h_f1, "NoAns_exact": n_em}


def test_every_claim_cell_has_a_test(run):
    marked = set(MARKER.findall(NOTEBOOK.read_text()))
    tested = {n.removeprefix("test_").replace("_", "-") for n in globals() if n.startswith("test_")}
    assert marked <= tested, f"claim cells without a test: {sorted(marked - tested)}"


def test_subwords(run):
    assert "9 subwords for 7 words" in output(run, "subwords")
    assert "Nine subwords for seven words" in prose(run)


def test_every_entities(run):
    assert "3 entities in the every-subword labels, 2 in the word tags" in output(run, "every-entities")


def test_combined_decoding(run):
    text = output(run, "combined-decoding")
    first = text.split("first subword:")[1].splitlines()[0]
    mean = text.split("mean of the pieces:")[1].splitlines()[0]
    assert "'O'" in first.split(",")[1] and "'I-LOC'" in mean.split(",")[1]  # the word 'Sanitas'
    assert "the two rules disagree" in prose(run)


def test_iob1(run):
    text = output(run, "iob1")
    assert "B- tags in the release: 0; entities that start with I-: 3558" in text
    assert "a strict BIO reader finds: 0 in IOB1, 3558 after conversion (a lenient reader finds 3558 in both)" in text
    assert "Every one of the 3,558 entities starts with I-" in prose(run)


def test_all_o(run):
    text = output(run, "all-o")
    assert number(r"token accuracy ([\d.]+)%", text) > 80 and number(r"entity F1 ([\d.]+)", text) == 0


def test_baselines(run):
    text = output(run, "baselines")
    f1s = [float(x) for x in re.findall(r"entity P/R/F1 [\d.]+/[\d.]+/([\d.]+)", text)]
    accs = [float(x) for x in re.findall(r"token accuracy ([\d.]+)%", text)]
    assert len(f1s) == 2 and all(f > 0 for f in f1s)      # they find entities ...
    assert all(a > 80 for a in accs)                      # ... and token accuracy flatters them too


def test_tagger(run):
    text = output(run, "tagger") + output(run, "baselines")
    tagger_f1 = number(r"entity F1 ([\d.]+) vs the dictionary", text)
    f1s = [float(x) for x in re.findall(r"entity P/R/F1 [\d.]+/[\d.]+/([\d.]+)", text)]
    assert tagger_f1 > max(f1s) + 0.05, "the fine-tuned tagger must beat both baselines on held-out data"
    assert "beats both baselines" in prose(run)


def test_crf(run):
    text = output(run, "crf")
    greedy = number(r"(\d+) with greedy decoding", text)
    with_crf = number(r"(\d+) with the CRF", text)
    assert with_crf == 0 < greedy
    assert number(r"greedy, ([\d.]+) with the CRF", text) > number(r"entity F1: ([\d.]+) greedy", text)
    assert "none with the CRF" in prose(run) and "entity F1 rises" in prose(run)


def test_qa_head_only(run):
    text = output(run, "qa-head-only")
    base, head = scores(text, "always 'no answer'"), scores(text, "S and E alone")
    assert base["NoAns_exact"] == 100 and base["HasAns_f1"] == 0
    assert head["HasAns_f1"] < 15 and abs(head["exact"] - base["exact"]) < 10  # "find almost nothing"
    assert "find almost nothing" in prose(run)
