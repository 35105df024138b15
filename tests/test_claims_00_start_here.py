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


def test_every_claim_cell_has_a_test():
    marked = set(claims_in(NOTEBOOK))
    assert marked == {"config", "sanitas", "output-shape", "bank", "rows-sum-to-one"}
