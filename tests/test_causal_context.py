"""What the causal mask takes away (course_lib.model.context), one attention head from its inputs
(attention.self_attention), where a BERT's parameters are (model.size), which heads do what (model.head_patterns),
the growth exponent of the attention cost (model.cost.growth_exponents), and their drawing (views.causal)."""
import math

import pytest
import torch
from matplotlib.figure import Figure

from course_lib.model import attention as A
from course_lib.model.bert import BertConfig, parameter_count
from course_lib.model.context import causal_reach, compare_causal, first_token_spread, sublayer_changes
from course_lib.model.cost import growth_exponents
from course_lib.model.head_patterns import PATTERNS, pattern_shares, strongest_heads
from course_lib.model.size import COMPONENTS, parameter_breakdown
from course_lib.views.causal import draw_causal_change, layer_labels


# ----------------------------------------------------------------------------- causal reach and comparison

def test_causal_reach_is_the_share_of_keys_in_each_row_of_the_causal_mask():
    for T in (1, 5, 12):
        torch.testing.assert_close(causal_reach(T), A.causal_mask(T).double().mean(-1))
    assert causal_reach(4).tolist() == [0.25, 0.5, 0.75, 1.0]


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "5"])
def test_causal_reach_refuses_what_is_not_a_number_of_tokens(bad):
    with pytest.raises(ValueError, match="positive number of tokens"):
        causal_reach(bad)


@pytest.fixture(scope="module")
def comparison(embedded):
    model, tokenizer = embedded
    return compare_causal(model, tokenizer("So long and thanks for all the fish"))


def test_the_last_position_is_bit_for_bit_unchanged_in_the_first_layer(comparison):
    c = comparison
    assert c.change.shape == (c.num_layers + 1, len(c.tokens))
    assert c.change[0].abs().max() == 0            # the embeddings do not see the mask
    assert c.layer_change(0)[-1] == 0              # the last query keeps every key, and the keys are unchanged
    assert (c.layer_change(0)[:-1] > 0).all()      # every other query lost keys
    assert (c.layer_change(1) > 0).all()           # from layer L2 (block 2) on the last position reads changed keys
    torch.testing.assert_close(c.cosine[0], torch.ones(len(c.tokens), dtype=torch.float64))


def test_layer_change_indexes_blocks_from_zero_and_says_when_out_of_range(comparison):
    torch.testing.assert_close(comparison.layer_change(0), comparison.change[1])
    torch.testing.assert_close(comparison.layer_change(-1), comparison.change[-1])
    with pytest.raises(IndexError, match=r"this model has 6 blocks \(1-6\), indexed 0-5: index 0 is block 1"):
        comparison.layer_change(6)


def test_sublayer_changes_of_block_1_written_out_by_hand(embedded, comparison):
    """[CLS] in block 1: what the mask changes in the attention sublayer, the feed-forward's size, the output."""
    model, tokenizer = embedded
    enc = tokenizer("So long and thanks for all the fish")
    rows = sublayer_changes(model, enc, position=0)
    assert [r.block for r in rows] == [1, 2, 3, 4, 5, 6]
    torch.testing.assert_close(torch.tensor([r.output_change for r in rows], dtype=torch.float64), comparison.change[1:, 0])
    block = model.encoder.layer[0]
    att, T = block.attention.self, len(enc.tokens[0])
    with torch.no_grad():
        out = model(**enc, output_hidden_states=True, output_attentions=True)
        x = out.hidden_states[0]
        q, k, v = (A.split_heads(proj(x), 12) for proj in (att.query, att.key, att.value))
        found = {}
        for name, mask in (("bidirectional", None), ("causal", A.causal_mask(T))):
            a = block.attention.output.dense(A.merge_heads(A.attention(q, k, v, mask=mask).output))
            h = block.attention.output.LayerNorm(x + a)
            found[name] = (a[0, 0], h[0, 0], block.output.dense(block.intermediate(h))[0, 0])
    (a_b, h_b, f_b), (a_c, _, f_c) = found["bidirectional"], found["causal"]
    first = rows[0]
    assert first.attention_change == pytest.approx(float((a_b - a_c).norm() / x[0, 0].norm()), rel=1e-4)
    assert first.ffn_size == pytest.approx(float(f_b.norm() / h_b.norm()), rel=1e-4)
    assert first.ffn_change == pytest.approx(float((f_b - f_c).norm() / f_b.norm()), rel=1e-3)
    assert first.reads_others == pytest.approx(1 - float(out.attentions[0][0, :, 0, 0].mean()), rel=1e-5)


def test_compare_causal_matches_a_by_hand_comparison(embedded):
    model, tokenizer = embedded
    enc = tokenizer("The bank raised its interest rates.")
    c = compare_causal(model, enc)
    with torch.no_grad():
        b = model(**enc, output_hidden_states=True).hidden_states[3][0]
        m = model(**enc, output_hidden_states=True, causal=True).hidden_states[3][0]
    torch.testing.assert_close(c.change[3], ((m - b).norm(dim=-1) / b.norm(dim=-1)).double(), rtol=1e-5, atol=1e-6)


def test_compare_causal_takes_one_sentence(embedded):
    model, tokenizer = embedded
    with pytest.raises(ValueError, match="one sentence at a time"):
        compare_causal(model, tokenizer(["one sentence", "and another"]))


def test_under_the_mask_the_first_token_does_not_depend_on_the_sentence(embedded):
    model, tokenizer = embedded
    texts = ["A short one.", "Something entirely different, and a good deal longer than the first."]
    assert first_token_spread(model, tokenizer, texts, causal=True) < 1e-5
    assert first_token_spread(model, tokenizer, texts, causal=False) > 0.1
    with pytest.raises(ValueError, match="at least two sentences"):
        first_token_spread(model, tokenizer, ["alone"], causal=True)


def test_the_causal_change_drawing_has_labelled_axes_and_one_row_per_hidden_state(comparison):
    fig = draw_causal_change(comparison)
    assert isinstance(fig, Figure)
    top, bottom = fig.axes[:2]
    # the top panel plots a share (0 to 1), not a count of keys
    assert " ".join(top.get_ylabel().split()) == "share of keys it may attend to" and top.get_ylim()[1] <= 1.05
    assert bottom.get_xlabel() == "position (token)"
    assert [t.get_text() for t in bottom.get_yticklabels()] == layer_labels(6)
    assert [t.get_text() for t in bottom.get_xticklabels()] == comparison.tokens
    assert len(bottom.texts) == comparison.change.numel()     # every cell labelled
    assert layer_labels(2) == ["L0 (embeddings)", "L1", "L2"]


# ----------------------------------------------------------------------------- one head from the inputs

def _inputs(B=3, T=5, d=6, d_k=4, d_v=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(B, T, d, generator=g), torch.randn(d, d_k, generator=g), torch.randn(d, d_k, generator=g),
            torch.randn(d, d_v, generator=g))


def test_self_attention_equals_the_equations_written_out():
    X, Wq, Wk, Wv = _inputs()
    out = A.self_attention(X, Wq, Wk, Wv)
    Q, K, V = X @ Wq, X @ Wk, X @ Wv
    w = torch.softmax(Q @ K.transpose(1, 2) / math.sqrt(4), dim=-1)
    torch.testing.assert_close(out.weights, w)
    torch.testing.assert_close(out.output, w @ V)
    assert out.output.shape == (3, 5, 3)


def test_self_attention_hides_padded_keys_and_the_future_but_not_padded_queries():
    X, Wq, Wk, Wv = _inputs()
    pad = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]])
    out = A.self_attention(X, Wq, Wk, Wv, causal=True, attention_mask=pad)
    allowed = A.causal_mask(5) & pad.bool()[:, None, :]
    assert out.weights[~allowed].abs().max() == 0
    torch.testing.assert_close(out.weights.sum(-1), torch.ones(3, 5))   # every row, padded queries included
    # a padded query of the second text attends to that text's real keys 0..2
    assert (out.weights[1, 4, :3] > 0).all()
    # the real tokens' outputs do not depend on what the padding holds
    X2 = X.clone()
    X2[1, 3:] = 100.0
    torch.testing.assert_close(A.self_attention(X2, Wq, Wk, Wv, causal=True, attention_mask=pad).output[1, :3],
                               out.output[1, :3])


def test_self_attention_says_which_shape_is_wrong():
    X, Wq, Wk, Wv = _inputs()
    with pytest.raises(ValueError, match=r"x must have shape \(B, T, d\)"):
        A.self_attention(X[0], Wq, Wk, Wv)
    with pytest.raises(ValueError, match=r"w_q must have shape \(d, ·\) = \(6, ·\)"):
        A.self_attention(X, Wq.T, Wk, Wv)
    with pytest.raises(ValueError, match="the same size d_k"):
        A.self_attention(X, Wq, Wv, Wv)
    with pytest.raises(ValueError, match=r"attention_mask must have shape \(B, T\) = \(3, 5\)"):
        A.self_attention(X, Wq, Wk, Wv, attention_mask=torch.ones(5))


# ----------------------------------------------------------------------------- parameters per component

@pytest.mark.parametrize("config", [
    BertConfig(),
    BertConfig(vocab_size=250002, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
               intermediate_size=4096, max_position_embeddings=514, type_vocab_size=1),
    BertConfig(vocab_size=100, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=40),
])
def test_the_breakdown_adds_up_to_the_models_count(config):
    parts = parameter_breakdown(config)
    assert list(parts) == list(COMPONENTS)
    assert sum(parts.values()) == parameter_count(config)


def test_the_breakdown_of_bert_base_by_hand():
    d, V, L, f = 768, 30522, 12, 3072
    parts = parameter_breakdown(BertConfig())
    assert parts["word embeddings"] == V * d
    assert parts["position embeddings"] == 512 * d
    assert parts["segment embeddings"] == 2 * d
    assert parts["attention (Q, K, V, W^O)"] == L * 4 * (d * d + d)
    assert parts["feed-forward (W_1, W_2)"] == L * (d * f + f + f * d + d)
    assert parts["layer norms of the blocks"] == L * 2 * 2 * d
    assert parts["pooler"] == d * d + d
    assert "pooler" not in parameter_breakdown(BertConfig(), add_pooling_layer=False)


# ----------------------------------------------------------------------------- head patterns

def _one_hot_maps(T=6):
    """Block index 0: head 0 previous token, head 1 next token; index 1: head 0 on [CLS], head 1 on [SEP]."""
    w = torch.zeros(2, 2, T, T)
    i = torch.arange(T)
    w[0, 0, i, (i - 1).clamp(min=0)] = 1
    w[0, 1, i, (i + 1).clamp(max=T - 1)] = 1
    w[1, 0, :, 0] = 1
    w[1, 1, :, T - 1] = 1
    return w, ["[CLS]", "a", "b", "c", "d", "[SEP]"]


def test_strongest_heads_finds_each_pattern_where_it_was_put():
    w, tokens = _one_hot_maps()
    found = {h.pattern: (h.layer, h.head, h.share) for h in strongest_heads(w, tokens)}
    assert set(found) == set(PATTERNS)
    assert found["previous token"] == (0, 0, 1.0)
    assert found["next token"] == (0, 1, 1.0)
    assert found["[CLS]"] == (1, 0, 1.0)
    assert found["[SEP]"] == (1, 1, 1.0)
    assert "block 1, head 0 puts 100% of its attention there" in str(strongest_heads(w, tokens)[0])


def test_pattern_shares_sums_several_sep_keys_and_skips_absent_tokens():
    w = torch.full((1, 1, 4, 4), 0.25)
    shares = pattern_shares(w, ["[CLS]", "a", "[SEP]", "[SEP]"])
    assert float(shares["[SEP]"]) == pytest.approx(0.5)
    assert "[CLS]" not in pattern_shares(w, ["x", "a", "b", "c"])


def test_pattern_shares_checks_its_inputs():
    with pytest.raises(ValueError, match=r"\(L, H, T, T\)"):
        pattern_shares(torch.zeros(2, 3, 3), ["a", "b", "c"])
    with pytest.raises(ValueError, match="2 tokens for attention maps over 3 positions"):
        pattern_shares(torch.zeros(1, 1, 3, 3), ["a", "b"])


# ----------------------------------------------------------------------------- cost exponents

def test_growth_exponents_of_power_laws():
    ns = [32, 64, 128, 256]
    assert growth_exponents(ns, [n ** 2 for n in ns]) == pytest.approx([2, 2, 2])
    assert growth_exponents(ns, [3 * n for n in ns]) == pytest.approx([1, 1, 1])
    assert growth_exponents([10, 20], [5, 5]) == pytest.approx([0])
    with pytest.raises(ValueError, match="at least two"):
        growth_exponents([1], [1])
    with pytest.raises(ValueError, match="positive"):
        growth_exponents([1, 2], [0, 1])
