"""Span representations (eq. 11.21-11.26) and the SBO input (eq. 11.19), each against a hand computation."""
from __future__ import annotations

import pytest
import torch

from course_lib.spans import (AttentionPooling, SpanRepresentation, StartEndFFN, boundary_representation, sbo_input,
                              sbo_inputs, sbo_targets, span_mean)
from course_lib.spans.sbo import SpanBoundaryHead

# z_1 … z_5 of a 5-token sequence, d = 2, chosen so that every mean is easy to do by hand
Z = torch.tensor([[1.0, 0.0], [3.0, 2.0], [5.0, 4.0], [-1.0, 6.0], [0.0, 0.0]])


def test_span_mean_is_eq_11_21_by_hand():
    g = span_mean(Z, [(1, 3), (2, 2), (0, 4)])
    assert torch.equal(g, torch.tensor([[(3 + 5 - 1) / 3, (2 + 4 + 6) / 3], [5.0, 4.0], [8 / 5, 12 / 5]]))


def test_boundary_representation_is_eq_11_22():
    rep = boundary_representation(Z, [(1, 3)])
    assert torch.allclose(rep, torch.tensor([[3.0, 2.0, -1.0, 6.0, 7 / 3, 4.0]]))
    assert boundary_representation(Z, [(0, 0), (1, 4)]).shape == (2, 6)


def test_batched_spans_read_their_own_row():
    zb = torch.stack([Z, Z * 10])  # (2, 5, 2)
    rep = boundary_representation(zb, [(0, 1, 3), (1, 1, 3)])
    assert torch.allclose(rep[1], rep[0] * 10)


def test_start_end_ffns_are_eq_11_23_to_11_25_and_differ_for_start_and_end():
    torch.manual_seed(0)
    m = StartEndFFN(2, d_boundary=3, d_hidden=4)
    rep = m(Z, [(1, 3)])
    f = m.ffn_start
    s1 = f.dense_out(torch.nn.functional.gelu(f.dense_in(Z[1])))  # FFN_start(z_i), written out
    e = m.ffn_end
    e3 = e.dense_out(torch.nn.functional.gelu(e.dense_in(Z[3])))
    assert torch.allclose(rep[0], torch.cat([s1, e3, torch.tensor([7 / 3, 4.0])]), atol=1e-6)
    same = m(Z, [(2, 2)])[0]  # a one-word span: z_i = z_j, but s_i ≠ e_j
    assert not torch.allclose(same[:3], same[3:6])
    assert m.output_size == 8


def test_attention_pooling_is_eq_11_26_by_hand():
    m = AttentionPooling(2)
    with torch.no_grad():
        m.score.weight.copy_(torch.tensor([[1.0, 0.0]]))  # α_k = first coordinate of z_k
        m.score.bias.zero_()
    g = m(Z, [(1, 3)])
    a = torch.softmax(torch.tensor([3.0, 5.0, -1.0]), 0)
    assert torch.allclose(g[0], a[0] * Z[1] + a[1] * Z[2] + a[2] * Z[3], atol=1e-6)
    w = m.weights(Z, [(1, 3), (4, 4)])
    assert w.shape == (2, 3)
    assert torch.allclose(w[0], a, atol=1e-6)
    assert torch.equal(w[1], torch.tensor([1.0, 0.0, 0.0]))  # one token: all the weight, none beyond the span


def test_equal_scores_make_attention_pooling_the_mean():
    m = AttentionPooling(2)
    with torch.no_grad():
        m.score.weight.zero_()
    assert torch.allclose(m(Z, [(0, 4), (1, 2)]), span_mean(Z, [(0, 4), (1, 2)]), atol=1e-6)


@pytest.mark.parametrize("kind, size", [("boundary", 6), ("learned", 2 * 3 + 2), ("attention", 2 * 3 + 2)])
def test_span_representation_kinds(kind, size):
    torch.manual_seed(0)
    m = SpanRepresentation(2, kind, d_boundary=3)
    assert m.output_size == size
    assert m(Z, [(0, 1), (2, 4)]).shape == (2, size)


def test_bad_spans_are_explained():
    with pytest.raises(ValueError, match="ends before it starts"):
        span_mean(Z, [(3, 1)])
    with pytest.raises(ValueError, match="outside"):
        span_mean(Z, [(2, 5)])
    with pytest.raises(ValueError, match=r"\(N, 2\)"):
        span_mean(Z, [(0, 1, 2)])
    with pytest.raises(ValueError, match="unknown span representation"):
        SpanRepresentation(2, "max")


# ----------------------------------------------------------------------------- eq. 11.19's input

def test_sbo_input_for_thanks_in_so_long_and_thanks_for_all_the_fish():
    """Fig. 11.12: span 'and thanks for' = tokens 3..5 (1-based); 'thanks' (4) reads z_2, z_6 and p_2."""
    z = torch.arange(9 * 2, dtype=torch.float).view(9, 2)  # [CLS] so long and thanks for all the fish
    P = torch.tensor([[100.0, 101.0], [200.0, 201.0], [300.0, 301.0]])  # p_1, p_2, p_3
    x = sbo_input(z, 3, 5, 4, P)
    assert torch.equal(x, torch.cat([z[2], z[6], P[1]]))
    with pytest.raises(ValueError, match="a token on each side"):
        sbo_input(z, 0, 2, 1, P)


def test_sbo_inputs_batch_agrees_with_one_token_at_a_time():
    torch.manual_seed(0)
    z = torch.randn(2, 9, 4)
    P = torch.randn(10, 4)
    labels = torch.full((2, 9), -100)
    labels[0, 3:6] = torch.tensor([7, 8, 9])
    labels[1, 2] = 5
    t = sbo_targets([[(3, 5)], [(2, 2)]], labels)
    assert t.relative.tolist() == [1, 2, 3, 1] and t.from_nearer_boundary.tolist() == [1, 2, 1, 1]
    x = sbo_inputs(z, t, P)
    for k in range(len(t)):
        b, i, s, e = int(t.row[k]), int(t.position[k]), int(t.start[k]), int(t.end[k])
        assert torch.equal(x[k], sbo_input(z[b], s, e, i, P))
    assert t.labels.tolist() == [7, 8, 9, 5]


def test_sbo_head_shares_w_v_and_predicts_one_row_per_span_token():
    emb = torch.nn.Parameter(torch.randn(50, 8))
    head = SpanBoundaryHead(8, 50, max_span_len=6, output_embeddings=emb)
    assert head.decoder.weight is emb
    labels = torch.full((1, 7), -100)
    labels[0, 2:4] = torch.tensor([3, 4])
    t = sbo_targets([[(2, 3)]], labels)
    assert head(torch.randn(1, 7, 8), t).shape == (2, 50)
