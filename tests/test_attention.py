"""Invariants of scaled dot-product attention and its masks (eq. 11.1-11.6)."""
import math

import pytest
import torch

from course_lib.model.attention import (attention, attention_scores, bidirectional_mask, causal_mask, combine_masks,
                                  merge_heads, padding_mask, split_heads)


def qkv(B=2, H=3, T=7, d=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(B, H, T, d, generator=g) for _ in range(3)]


def test_scores_are_scaled_dot_products():
    q, k, _ = qkv()
    expected = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(q.size(-1))
    torch.testing.assert_close(attention_scores(q, k), expected)


def test_hand_computed_two_token_example():
    # q1 = k1 = (1, 0), q2 = k2 = (0, 1), d_k = 2: score(i, j) = [i == j] / sqrt(2)
    q = k = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    v = torch.tensor([[10.0], [20.0]])
    out = attention(q, k, v)
    a = math.exp(1 / math.sqrt(2))
    w_self, w_other = a / (a + 1), 1 / (a + 1)
    torch.testing.assert_close(out.weights, torch.tensor([[w_self, w_other], [w_other, w_self]]))
    torch.testing.assert_close(out.output, torch.tensor([[10 * w_self + 20 * w_other], [10 * w_other + 20 * w_self]]))


@pytest.mark.parametrize("mask", [None, "causal", "padding", "both"])
def test_weight_rows_sum_to_one(mask):
    q, k, v = qkv()
    m = _mask(mask, T=7)
    w = attention(q, k, v, m).weights
    torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]), atol=1e-6, rtol=0)


def test_causal_mask_hides_future_tokens():
    q, k, v = qkv(T=9)
    w = attention(q, k, v, causal_mask(9)).weights
    above = torch.triu(torch.ones(9, 9, dtype=torch.bool), diagonal=1)
    assert (w[..., above] == 0).all(), "weights above the diagonal must be exactly 0"
    assert (w[..., ~above] > 0).all()
    assert torch.equal(bidirectional_mask(4), torch.ones(4, 4, dtype=torch.bool))


def test_causal_output_does_not_depend_on_future_tokens():
    q, k, v = qkv(T=6)
    base = attention(q, k, v, causal_mask(6)).output
    k2, v2 = k.clone(), v.clone()
    k2[..., 4:, :] += 5.0
    v2[..., 4:, :] -= 3.0
    changed = attention(q, k2, v2, causal_mask(6)).output
    torch.testing.assert_close(base[..., :4, :], changed[..., :4, :])
    assert not torch.allclose(base[..., 4:, :], changed[..., 4:, :])


def test_padded_keys_get_zero_weight():
    q, k, v = qkv(B=2, T=5)
    am = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    w = attention(q, k, v, padding_mask(am)).weights
    assert (w[1, :, :, 3:] == 0).all()
    assert (w[0] > 0).all()


@pytest.mark.parametrize("mask", [None, "causal", "padding", "both"])
def test_fast_and_explicit_paths_agree(mask):
    q, k, v = qkv(B=2, H=4, T=11, d=16, seed=3)
    m = _mask(mask, T=11)
    slow = attention(q, k, v, m, need_weights=True)
    fast = attention(q, k, v, m, need_weights=False)
    assert fast.weights is None and fast.scores is None
    torch.testing.assert_close(fast.output, slow.output, atol=1e-5, rtol=1e-5)


def test_row_with_no_allowed_key_is_uniform_not_nan():
    q, k, v = qkv(B=1, H=1, T=3)
    mask = torch.tensor([[False, False, False], [True, True, False], [True, True, True]])
    for need in (True, False):
        out = attention(q, k, v, mask, need_weights=need)
        assert torch.isfinite(out.output).all()
    w = attention(q, k, v, mask).weights
    torch.testing.assert_close(w[0, 0, 0], torch.full((3,), 1 / 3))


def test_split_and_merge_heads_round_trip():
    x = torch.randn(2, 5, 12)
    h = split_heads(x, 4)
    assert h.shape == (2, 4, 5, 3)
    # head 1 holds dimensions 3..5 of every token
    torch.testing.assert_close(h[:, 1], x[..., 3:6])
    torch.testing.assert_close(merge_heads(h), x)


def test_split_heads_rejects_indivisible_dimension():
    with pytest.raises(ValueError, match="model dimension 10 is not divisible by 4 heads"):
        split_heads(torch.randn(1, 2, 10), 4)


def test_padding_mask_shape_and_message():
    assert padding_mask(torch.tensor([[1, 0]])).shape == (1, 1, 1, 2)
    with pytest.raises(ValueError, match=r"attention_mask must have shape \(B, T\)"):
        padding_mask(torch.ones(2))


def _mask(kind, T):
    am = torch.tensor([[1] * T, [1] * (T - 2) + [0, 0]])
    return {
        None: None,
        "causal": causal_mask(T),
        "padding": padding_mask(am),
        "both": combine_masks(padding_mask(am), causal_mask(T)),
    }[kind]


def test_model_attention_invariants(embedded, parity_batch):
    model, _ = embedded
    with torch.no_grad():
        out = model(**parity_batch, output_attentions=True)
        causal = model(**parity_batch, output_attentions=True, causal=True)
    am = parity_batch["attention_mask"].bool()
    T = am.size(1)
    above = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    assert len(out.attentions) == model.config.num_hidden_layers
    for w, wc in zip(out.attentions, causal.attentions):
        assert w.shape == (3, model.config.num_attention_heads, T, T)
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]), atol=1e-5, rtol=0)
        assert (w[~am[:, None, None, :].expand_as(w)] == 0).all(), "padded keys must get weight 0"
        assert (wc[..., above] == 0).all()


def test_model_fast_path_matches_explicit_path(embedded, parity_batch):
    model, _ = embedded
    with torch.no_grad():
        slow = model(**parity_batch, output_attentions=True)
        fast = model(**parity_batch)
    assert fast.attentions is None
    am = parity_batch["attention_mask"].bool()
    torch.testing.assert_close(fast.last_hidden_state[am], slow.last_hidden_state[am], atol=1e-5, rtol=1e-5)


def test_model_scores_are_the_pre_softmax_matrices_of_its_weights(embedded, parity_batch):
    """softmax(scores + padding mask) must give back each layer's weights, and scores are unmasked."""
    model, _ = embedded
    with torch.no_grad():
        out = model(**parity_batch, output_attentions=True)
    pad = ~parity_batch["attention_mask"].bool()[:, None, None, :]
    assert len(out.scores) == len(out.attentions) == 6
    for s, w in zip(out.scores, out.attentions):
        assert s.shape == w.shape
        assert torch.isfinite(s).all(), "raw scores are reported before masking"
        torch.testing.assert_close(s.masked_fill(pad, float("-inf")).softmax(-1), w, atol=1e-6, rtol=0)
    assert not torch.allclose(out.scores[0], out.scores[1])
    assert len(out.scores[2:4]) == 2


def test_states_by_length_equal_the_padded_batch_at_every_real_token(embedded):
    """last_hidden_by_length runs a batch in groups of similar length: the same states at real tokens (padding
    never reaches them; float sums in other orders: atol 1e-5), zeros at padding, and a left-padded batch refused."""
    model, tok = embedded
    texts = ["A dog barked.", "The capital of France is Paris, and it is a large city on the Seine.", "Hi",
             "He brushed his teeth before going to bed, as he did every night.", "Rain again."]
    enc = tok(texts)
    ref = model(enc.input_ids, enc.attention_mask, enc.token_type_ids).last_hidden_state
    for rows in (1, 2, 8):
        got = model.last_hidden_by_length(enc.input_ids, enc.attention_mask, enc.token_type_ids, rows=rows)
        real = enc.attention_mask.bool()
        assert got.shape == ref.shape
        assert torch.allclose(got[real], ref[real], atol=1e-5), rows
        assert not got[~real].any()
    with pytest.raises(ValueError, match="right-padded"):
        model.last_hidden_by_length(enc.input_ids.flip(1), enc.attention_mask.flip(1))
