"""Every number and direction the prose of notebook 00 states, read from the executed notebook.

Claim cells carry a marker ``# claim: <name>``; the test of the same name reads the cell's output.
"""
import re

import pytest

from conftest import ROOT
from notebook_runs import claims_in, executed_ok, output, prose

NOTEBOOK = ROOT / "notebooks" / "00_start_here.py"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def run():
    return executed_ok(NOTEBOOK)


def test_the_model_has_6_layers_d_384_and_12_heads(run):
    text = output(run, "config")
    assert "hidden_size=384" in text and "num_hidden_layers=6" in text and "num_attention_heads=12" in text
    assert "6 layers, model dimension d = 384 and 12 attention heads" in " ".join(prose(run).split())


def test_sanitas_splits_into_two_pieces_of_one_word(run):
    pairs = re.findall(r"\('([^']+)', (None|\d+)\)", output(run, "sanitas"))
    assert ("san", "2") in pairs and ("##itas", "2") in pairs
    assert pairs[0] == ("[CLS]", "None") and pairs[-1] == ("[SEP]", "None")


def test_the_output_is_batch_tokens_d(run):
    assert output(run, "output-shape").strip() == "torch.Size([1, 11, 384])"


def test_the_two_money_banks_are_closer_than_the_river_bank(run):
    text = output(run, "bank")
    cos = {k: float(v) for k, v in re.findall(r"(river vs money|river vs loan|money vs loan): ([\d.-]+)", text)}
    assert len(cos) == 3
    assert cos["money vs loan"] > cos["river vs money"] and cos["money vs loan"] > cos["river vs loan"]


def test_attention_rows_sum_to_one(run):
    sums = [float(x) for x in re.findall(r"\d\.\d+", output(run, "rows-sum-to-one"))]
    assert sums and all(abs(s - 1) < 1e-3 for s in sums)


def test_block_and_head_numbers_are_unambiguous(run):
    """The prose said "`out.attention(2, 3)` is block 3's head 3", a 1-based block beside a 0-based head."""
    text = " ".join(prose(run).split())
    assert "block 3's head 3" not in text
    assert ("`out.attention(2, 3)` is block index 2, which is block 3 (its output is layer L3), and head 3, the fourth "
            "of its 12 heads") in text and "Heads are numbered 0 … 11" in text
    source = NOTEBOOK.read_text()
    assert 'ax.set_title(f"block {layer + 1} (index {layer}), head {head} of 0-11: softmax weights")' in source


def test_every_claim_cell_has_a_test():
    marked = set(claims_in(NOTEBOOK))
    assert marked == {"config", "sanitas", "output-shape", "bank", "rows-sum-to-one"}


def _where_next() -> dict[str, str]:
    """The "Where next" table of notebook 00: {notebook: what it covers}."""
    import jupytext

    cell = next(c.source for c in jupytext.read(NOTEBOOK).cells if c.cell_type == "markdown" and "Where next" in c.source)
    return dict(re.findall(r"^\| `([\w]+)` \| (.+) \|$", cell, flags=re.M))


def test_where_next_names_every_notebook_in_order():
    """The table listed only 11_1, 11_2 and 11_3; it names every notebook of notebooks/ but this one."""
    notebooks = sorted(p.stem for p in NOTEBOOK.parent.glob("*.py") if p != NOTEBOOK)
    table = _where_next()
    assert list(table) == notebooks, (f"missing: {sorted(set(notebooks) - set(table))}; "
                                      f"extra: {sorted(set(table) - set(notebooks))}")
    assert all(len(what.split()) >= 8 for what in table.values()), table


def test_start_here_gives_no_prediction_away():
    """Notebook 00 is read before every other: it said "the 512-token position table", the answer of 11.1's
    limit_512. No question's giveaway phrase (nor 7 words in a row of its explanation) may appear in it."""
    import jupytext

    from course_lib.exercises import EXERCISES  # every chapter module registers its questions on import
    from notebook_runs import _said_before

    nb = jupytext.read(NOTEBOOK)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    questions = [ex for ex in EXERCISES.values() if ex.kind == "question"]
    assert "limit_512" in {ex.name for ex in questions} and len(questions) >= 10
    said = {ex.name: _said_before(text, ex) for ex in questions}
    assert not any(said.values()), {k: v for k, v in said.items() if v}
    assert _said_before("the 512-token position table", EXERCISES["limit_512"])  # the old wording is caught
