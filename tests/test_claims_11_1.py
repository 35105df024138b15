"""Every number and direction the prose of notebook 11.1 states, read from the executed notebook.

Each claim cell of notebooks/11_1_bidirectional_encoders.py carries a marker ``# claim: <name>``; the test of
the same name reads that cell's printed output and asserts what the prose around it says. A model or code change
that breaks a claim fails here, and so does a claim cell without a test or a test without its cell.
"""
import math
import re

import pytest

from conftest import ROOT
from notebook_runs import claims_in, executed_ok, floats, output, prose

NOTEBOOK = ROOT / "notebooks" / "11_1_bidirectional_encoders.py"

pytestmark = pytest.mark.slow  # the notebook runs once per session (about a minute on CPU)


@pytest.fixture(scope="module")
def run():
    return executed_ok(NOTEBOOK)


# ----------------------------------------------------------------------------- §1 attention from scratch

def test_scaling_keeps_the_spread_of_scores_near_one(run):
    text = output(run, "scaling")
    rows = re.findall(r"d_k = +(\d+): spread \(std\) of q·k +([\d.]+), of q·k/√d_k ([\d.]+); "
                      r"mean largest weight ([\d.]+) unscaled, ([\d.]+) scaled", text)
    assert [int(r[0]) for r in rows] == [4, 64, 1024]
    for d_k, raw, scaled, top_raw, top_scaled in rows:
        assert float(raw) == pytest.approx(math.sqrt(int(d_k)), rel=0.15)  # grows like √d_k
        assert 0.9 <= float(scaled) <= 1.1                                  # stays near 1
        assert float(top_scaled) < 0.6                                      # the weight stays spread
    assert float(rows[-1][3]) > 0.9   # unscaled, at d_k = 1024 nearly all the weight goes to one key


def test_softmax_rows_sum_to_one(run):
    sums = floats(r"(\d\.\d+)", output(run, "softmax-rows").split("torch.Size")[0])
    assert sums and all(s == 1.0 for s in sums)


def test_library_attention_equals_the_cells(run):
    assert output(run, "library-attention").strip() == "(True, True)"


# ----------------------------------------------------------------------------- §2 causal vs bidirectional

def test_causal_toy_hides_the_future_and_the_first_word_keeps_least(run):
    text = output(run, "causal-toy")
    assert floats(r"largest weight above the diagonal: ([\d.e-]+)", text) == [0.0]
    shares = dict(re.findall(r"(\w+) may attend to (\d+)% of the sentence", text))
    assert shares == {"so": "20", "long": "40", "and": "60", "thanks": "80", "for": "100"}


def test_causal_layer1_last_position_unchanged_every_other_changed(run):
    text = output(run, "causal-layer1")
    per_position = re.search(r"layer 1, change per position: (.*)", text).group(1)
    changes = [(t, float(v)) for t, v in re.findall(r"(\S+)=([\d.]+)", per_position)]
    assert changes[-1] == ("[SEP]", 0.0)
    assert "exactly 0: True" in text
    assert floats(r"smallest change among the other positions: ([\d.e-]+)", text)[0] > 0
    # the first position loses the most context, but its layer-1 vector is not the one that moves most
    largest = re.search(r"the largest is at '([^']+)'", text).group(1)
    assert largest != changes[0][0] == "[CLS]"
    # from layer 2 on every position has moved, the last one included
    later = re.findall(r"layer (\d+): smallest change ([\d.e-]+), last position ([\d.e-]+)", text)
    assert [int(layer) for layer, _, _ in later] == [2, 3, 4, 5, 6]
    assert all(float(smallest) > 0 and float(last) > 0 for _, smallest, last in later)


def test_cls_moves_only_where_the_bidirectional_cls_reads_the_sentence(run):
    rows = re.findall(r"block (\d): \[CLS\] attends to itself ([\d.]+), to the other tokens ([\d.]+); its change "
                      r"under the causal mask at layer L\d: ([\d.]+)", output(run, "causal-cls"))
    assert [int(b) for b, *_ in rows] == [1, 2, 3, 4, 5, 6]
    self_share = {int(b): float(s) for b, s, _, _ in rows}
    change = {int(b): float(c) for b, _, _, c in rows}
    assert all(self_share[b] >= 0.9 for b in (2, 3, 4, 5)), self_share   # "almost all its attention on itself"
    assert all(change[b] <= 0.03 for b in (1, 2, 3, 4, 5)), change         # "a change of 0.03 or less"
    assert 0.4 <= 1 - self_share[6] <= 0.6 and change[6] == 0.66, (self_share, change)  # "half", "jumps to 0.66"
    assert max(change, key=change.get) == 6


def test_causal_first_token_loses_all_context(run):
    text = output(run, "causal-first-token")
    bidir = floats(r"bidirectional ([\d.]+),", text)[0]
    causal = floats(r"causal ([\d.e+-]+)", text)[0]
    assert bidir > 0.1     # the three [CLS] vectors differ
    assert causal < 1e-5   # under the mask they are one vector


def test_causal_drift_grows_layer_after_layer(run):
    text = output(run, "causal-drift")
    labels = re.findall(r"^ *(L0 \(embeddings\)|L\d+): mean cosine", text, re.M)
    assert labels == ["L0 (embeddings)"] + [f"L{i}" for i in range(1, 7)]
    cos = floats(r"= ([\d.]+)", text)
    assert cos[0] == 1.0
    assert all(b <= a for a, b in zip(cos[1:], cos[2:])), cos  # never back up, from L1 on
    assert cos[-1] < cos[1] - 0.05


def test_padding_gets_no_attention(run):
    text = output(run, "padding")
    assert floats(r"largest weight on a padded key, any layer and head: ([\d.e-]+)", text) == [0.0]
    assert "'[PAD]'" in text


def test_self_attention_toy_hides_padding_and_the_future(run):
    assert floats(r"largest weight on a hidden key:\s*([\d.e-]+)", output(run, "self-attention-toy")) == [0.0]


# ----------------------------------------------------------------------------- §3-4 heads and the block

def test_head_shapes_are_as_stated(run):
    shapes = re.findall(r"torch\.Size\(\[([\d, ]+)\]\)", output(run, "head-shapes"))
    x, q, merged = ([int(v) for v in s.split(",")] for s in shapes)
    assert x[-1] == merged[-1] == 384 and q[1] == 12 and q[-1] == 32  # d = 384, H = 12, d_h = 32
    assert "(d = 384, H = 12, so d_h = 32)" in prose(run)


def test_the_block_written_out_reproduces_layer_0(run):
    assert output(run, "block").strip() == "True"


# ----------------------------------------------------------------------------- §5 parameters

def _counts(run) -> dict[str, float]:
    return {name.strip(): float(n) for name, n in
            re.findall(r"^(.+?) +([\d.]+)M parameters", output(run, "parameter-counts"), re.M)}


def test_parameter_counts_match_the_chapter_and_the_slides(run):
    counts = _counts(run)
    base, large, xlmr = counts["BERT-base"], counts["BERT-large"], counts["XLM-R large"]
    assert 100 <= base < 115 and round(base, -1) == 110   # chapter "about 100M", slides "110M"
    assert f"BERT-base has {base:.1f}M parameters" in prose(run)
    # one number, explained: the encoder (11.1) + the pretraining heads = 11.2's count
    from course_lib.model.bert import BertConfig, parameter_count
    from course_lib.model.heads import pretraining_parameter_breakdown

    parts = pretraining_parameter_breakdown(BertConfig())
    heads = sum(n for k, n in parts.items() if k.startswith(("MLM head", "NSP head")))
    assert sum(parts.values()) - heads == parameter_count(BertConfig()) and round(base, 1) == 109.5
    assert round(heads / 1e6, 1) == 0.6 and round(sum(parts.values()) / 1e6, 1) == 110.1
    assert "0.6M more: 110.1M, the count notebook 11.2 makes" in prose(run)
    assert large == pytest.approx(340, rel=0.02)          # slides: 340M
    assert xlmr == pytest.approx(550, rel=0.03)           # chapter: about 550M
    # XLM-R large is bigger than BERT-large with the same layers because of its vocabulary
    assert xlmr - large == pytest.approx((250002 - 30522) * 1024 / 1e6, rel=0.01)
    assert "256M numbers at d = 1024" in prose(run) and round(250002 * 1024 / 1e6) == 256
    assert "0.59M numbers" in prose(run) and round(768 * 768 / 1e6, 2) == 0.59


def test_parameter_breakdown_half_feed_forward_quarter_attention_fifth_word_table(run):
    text = output(run, "parameter-breakdown")
    share = {name.strip(): float(p) / 100 for name, p in re.findall(r"^(.+?) +[\d.]+M +([\d.]+)%", text, re.M)}
    assert share["feed-forward (W_1, W_2)"] == pytest.approx(1 / 2, abs=0.05)
    assert share["attention (Q, K, V, W^O)"] == pytest.approx(1 / 4, abs=0.03)
    assert share["word embeddings"] == pytest.approx(1 / 5, abs=0.025)
    small = [v for k, v in share.items() if not k.startswith(("feed-forward", "attention", "word"))]
    assert len(small) == 5 and sum(small) < 0.02
    assert floats(r"total +([\d.]+)M", text)[0] == pytest.approx(_counts(run)["BERT-base"], abs=0.06)


def test_the_embedded_models_count_equals_its_stored_weights(run):
    stored, built, from_config = (int(n) for n in re.findall(r"\d+", output(run, "stored-count")))
    assert stored == built == from_config


# ----------------------------------------------------------------------------- §6 the 512-token limit

def test_the_overview_asks_what_limits_bert_and_does_not_answer_limit_512():
    """The overview said "why inputs stop at 512 tokens: the learned position table (and, separately, the quadratic
    cost)" before the prediction limit_512 asked it; the question's giveaways make the guard catch that wording."""
    import jupytext

    from course_lib.exercises import EXERCISES
    from notebook_runs import revealed_predictions

    nb = jupytext.read(NOTEBOOK)
    overview = " ".join(nb.cells[0].source.split())
    assert "what limits BERT to 512 tokens" in overview and "position table" not in overview
    assert not [p for p in revealed_predictions(nb) if p.startswith("limit_512")]
    assert EXERCISES["limit_512"].giveaways
    nb.cells[0].source += ("\n# 6. why inputs stop at 512 tokens: the learned position table (and, separately, the "
                           "quadratic cost);")
    problems = [p for p in revealed_predictions(nb) if p.startswith("limit_512")]
    assert problems and "prose of cell 0" in problems[0], problems


def test_the_position_table_has_512_rows(run):
    text = output(run, "position-table")
    assert "max_position_embeddings: 512" in text
    assert "position table: (512, 384)" in text


def test_513_tokens_give_a_clear_error_naming_the_position_embeddings(run):
    text = output(run, "position-error")
    assert ("ValueError: the input has 513 tokens, but this model has position embeddings for at most 512"
            in text)


def test_the_tokenizer_refuses_over_long_text(run):
    text = output(run, "tokenizer-error")
    assert text.startswith("ValueError: too long") and "at most 512" in text and "truncation=True" in text


def test_attention_memory_grows_towards_quadratic(run):
    text = output(run, "quadratic-memory")
    exps = floats(r"([\d.]+)", text.split("\n")[0])
    assert len(exps) == 4
    assert all(b > a for a, b in zip(exps, exps[1:])), exps   # climbs towards 2
    assert 1.8 <= exps[-1] <= 2.1
    ratio = floats(r"the peak is ([\d.]+) ×", text)[0]
    assert 1.5 <= ratio <= 3.0                                # two N × N matrices: scores and weights
    extra = floats(r"\(513/512\)² = ([\d.]+)", text)[0]
    assert extra == pytest.approx((513 / 512) ** 2, abs=1e-4)
    assert f"one token more costs {extra - 1:.1%} more" in prose(run)


# ----------------------------------------------------------------------------- §7 heads

def test_head_patterns_previous_token_and_cls_heads(run):
    found = {p.strip(): (int(layer), int(head), int(share)) for p, layer, head, share in re.findall(
        r"^ *(.+?): block (\d+), head (\d+) puts (\d+)% of its attention there", output(run, "head-patterns"), re.M)}
    assert set(found) == {"previous token", "next token", "[CLS]", "[SEP]"}
    assert found["previous token"][2] >= 90   # "attends almost only to the previous token"
    assert found["[CLS]"][2] >= 50            # "parks most of its attention on [CLS]"
    assert found["[SEP]"][2] < found["[CLS]"][2]  # "no head leans on [SEP] as much"


# ----------------------------------------------------------------------------- every claim has its test

def test_every_claim_cell_has_a_test_and_every_test_its_cell():
    marked = set(claims_in(NOTEBOOK))
    tested = {
        "scaling", "softmax-rows", "library-attention", "causal-toy", "causal-layer1", "causal-cls", "causal-first-token",
        "causal-drift", "padding", "self-attention-toy", "head-shapes", "block", "parameter-counts",
        "parameter-breakdown", "stored-count", "position-table", "position-error", "tokenizer-error",
        "quadratic-memory", "head-patterns",
    }
    assert marked == tested, f"claim cells without a test: {marked - tested}; tests without a cell: {tested - marked}"
