"""Exercises of notebook 11.1, bidirectional transformer encoders (SLP3 §11.1).

attention    scaled_dot_product_attention(Q, K, V, mask=None) -> (output, weights), eq. 11.1-11.6
causal_mask  causal_mask(T) -> (T, T) bool, True on and below the diagonal (Fig. 11.1a)
heads        split_heads(X, n_heads): (B, T, d) -> (B, H, T, d/H) and merge_heads(X): its inverse
self_attention  single_head_self_attention(X, W_Q, W_K, W_V, causal=False, attention_mask=None) -> (output,
             weights): one head from the inputs, with the causal and the padding mask (eq. 11.1-11.6, Fig. 11.1)
param_count  bert_parameter_count(config) -> the number of parameters of BertModel(config)
bert_encoder bert_encoder(input_ids, token_type_ids, attention_mask, model) -> [L0, L1, ..., L_L]: the whole
             encoder from its weights on a padded batch -- embeddings, heads, masked attention, residuals, post-LN,
             GELU feed-forward composed; graded on two random BERTs (their own widths and head counts, LayerNorms
             random), handed only the layers it names (ModelParts: no model to call, copy or rebuild), and each
             common slip named

Prediction questions, asked before the cell that reveals the answer: ``changes_least`` (which position's layer-1
vector a causal mask moves least), ``word_order`` (a shuffled sentence's [CLS] without position embeddings),
``bert_base_size`` (BERT-base's parameters), ``limit_512`` (what stops a BERT at 512 tokens), ``rotated_parts``
(what a rotation of a head's queries and keys changes).

Every check runs the student's functions on seeded random inputs and compares
with ``course_lib``'s reference implementation.
"""
from __future__ import annotations

import copy
import functools
import math
import numbers

import torch
import torch.nn.functional as F

from ..model import attention as A
from ..model.bert import BertConfig, BertModel
from .core import NotAttempted, Wrong, exercise, question, seeded
from .hints import ATOL, RTOL, close, expect_shape, expect_tensor, first_mismatch, fmt_index, fmt_int, fmt_num, fmt_shape


def _randn(*shape, g: torch.Generator) -> torch.Tensor:
    return torch.randn(*shape, generator=g)


# ----------------------------------------------------------------------------- attention

# (leading dims, T_q, T_k, d_k, d_v, mask); T_q != T_k and d_k != d_v so that mix-ups show. mask: None, "causal"
# ((T, T), broadcast over batch and heads) or the real lengths of a key-padding mask (B, 1, T_k), broadcast over
# the queries: not a triangle, so an answer that ignores what the mask says and draws its own triangle fails
ATTENTION_CASES = [
    ((), 4, 6, 8, 5, None),
    ((), 5, 5, 8, 3, "causal"),
    ((2, 3), 5, 5, 8, 6, None),
    ((2, 3), 5, 5, 8, 6, "causal"),
    ((2,), 3, 5, 8, 6, (5, 3)),
]


def _attention_mask(spec, T_q: int, T_k: int) -> tuple[torch.Tensor | None, str]:
    """The mask of an ATTENTION_CASES entry and how the case names it."""
    if spec is None:
        return None, "no mask"
    if spec == "causal":
        return A.causal_mask(T_q), "causal mask"
    mask = (torch.arange(T_k) < torch.tensor(spec)[:, None])[:, None, :]  # (B, 1, T_k): True on the real keys
    return mask, f"key-padding mask {fmt_shape(mask.shape)} for real lengths {list(spec)}"


@exercise("attention", needs=["scaled_dot_product_attention"])
def check_attention(scaled_dot_product_attention):
    for seed, (lead, T_q, T_k, d_k, d_v, spec) in enumerate(ATTENTION_CASES):
        g = torch.Generator().manual_seed(seed)
        Q, K, V = _randn(*lead, T_q, d_k, g=g), _randn(*lead, T_k, d_k, g=g), _randn(*lead, T_k, d_v, g=g)
        mask, masked = _attention_mask(spec, T_q, T_k)
        case = f"Q {fmt_shape(Q.shape)}, K {fmt_shape(K.shape)}, V {fmt_shape(V.shape)}, {masked}"
        try:
            _check_attention_case(scaled_dot_product_attention, Q, K, V, mask)
        except Wrong as e:
            raise Wrong(f"{e} (with {case})") from None
    _check_large_scores(scaled_dot_product_attention)
    return (f"matches course_lib.model.attention.attention on {len(ATTENTION_CASES) + 1} inputs, batched, with a causal "
            "and a padding mask, and with a visible key scoring -20000")


# one query, two keys, the second masked: the visible key scores 100 · (−200) = −20,000, far below a finite fill
# such as −1e4, so only a score the softmax sends to exactly 0 (−inf, or the dtype's lowest value) hides the masked key
LARGE_SCORES = ([[100.0]], [[-200.0], [5.0]], [[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]], [[True, False]])


def _check_large_scores(sdpa):
    Q, K, V, mask = (torch.tensor(t) for t in LARGE_SCORES)
    case = " (with Q (1, 1) = [[100]], K (2, 1) = [[-200], [5]], V (2, 3), mask [[True, False]]: large scores)"
    answer = sdpa(Q.clone(), K.clone(), V.clone(), mask.clone())
    try:
        _check_attention_case(lambda *args: answer, Q, K, V, mask)
    except Wrong as e:
        weights = answer[1] if isinstance(answer, (tuple, list)) and len(answer) == 2 else None
        if not (isinstance(weights, torch.Tensor) and weights.shape == (1, 2) and abs(float(weights[0, 1])) > ATOL):
            raise Wrong(f"{e}{case}") from None
        weight = float(weights[0, 1])  # an answer that passed every case above: its fill is finite
        raise Wrong(f"the masked key gets weight {fmt_num(weight)} when the only visible key scores -20000 (q = 100, "
                    "k = -200): a finite fill such as -10000 is not below every score, so the softmax prefers the "
                    "masked key. Fill the masked scores with -inf (or the dtype's lowest value), which the softmax "
                    f"turns into exactly 0 whatever the other scores{case}") from None


def _check_attention_case(sdpa, Q, K, V, mask):
    ref = A.attention(Q, K, V, mask)  # before the student's call, in case it changes its inputs
    args = (Q.clone(), K.clone(), V.clone()) + ((mask.clone(),) if mask is not None else ())
    answer = sdpa(*args)
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        got = "a single tensor" if isinstance(answer, torch.Tensor) else type(answer).__name__
        raise Wrong(f"scaled_dot_product_attention should return a pair (output, weights), got {got}")
    output = expect_tensor(answer[0], "the output (the first value returned)")
    weights = expect_tensor(answer[1], "the weights (the second value returned)")
    if ref.output.shape != ref.weights.shape and (output.shape, weights.shape) == (ref.weights.shape, ref.output.shape):
        raise Wrong("return (output, weights) in this order: yours look like (weights, output)")
    lead_axes = ("batch", "head")[2 - (Q.dim() - 2):]
    expect_shape(weights, ref.weights.shape, "the weights", axes=(*lead_axes, "query", "key"))
    _diagnose_weights(weights, Q, K, V, mask, ref.weights)
    expect_shape(output, ref.output.shape, "the output", axes=(*lead_axes, "query", "value feature"))
    if not close(output, ref.output):
        idx, diff = first_mismatch(output, ref.output)
        raise Wrong(f"the weights are right, but the output differs from the weighted sum of the values (eq. 11.2) "
                    f"by {diff:.3g} at {fmt_index(idx)}")


def _diagnose_weights(weights, Q, K, V, mask, expected):
    """Raise Wrong naming the first mistake visible in the weights (..., T_q, T_k)."""
    if mask is not None and not mask.all():  # the opposite convention (True = hidden, as nn.MultiheadAttention)
        scores = Q.double() @ K.double().transpose(-2, -1) / math.sqrt(K.size(-1))
        inverted = scores.masked_fill(mask, float("-inf")).softmax(-1)  # NaN where a row hides every key
        if weights.shape == inverted.shape and torch.allclose(weights.double(), inverted, atol=ATOL, rtol=RTOL,
                                                              equal_nan=True):
            raise Wrong("your weights hide the keys where the mask is True and keep those where it is False: here "
                        "True means the query *may attend* to that key (the causal mask is True on and below the "
                        "diagonal), the opposite of the convention of PyTorch's nn.MultiheadAttention, where True "
                        "means hidden. Hide the keys where the mask is False")
    if torch.isnan(weights).any():
        raise Wrong(f"the weights contain NaN, e.g. at {fmt_index(torch.isnan(weights).nonzero()[0][-2:])}")
    if close(weights, expected):
        return
    w = weights.double()
    raw = Q.double() @ K.double().transpose(-2, -1)  # (..., T_q, T_k), unscaled
    if mask is not None:
        triangle = torch.ones(w.shape[-2:], dtype=torch.bool).tril()
        if (not torch.equal(mask.expand_as(w), triangle.expand_as(w))
                and close(w, A.masked_softmax(raw / math.sqrt(K.size(-1)), triangle))):
            raise Wrong("your weights hide every key after its query, as a causal mask would, but this mask hides "
                        "other keys: use the mask you are given, whatever its pattern (False = hidden), broadcast "
                        "over the leading dimensions")
        leak = ~mask.expand_as(w) & (w.abs() > ATOL)
        if leak.any():
            where = leak.nonzero()[0]
            raise Wrong(f"weight at {fmt_index(where[-2:] if mask.dim() <= 2 else where)} should be 0: that key "
                        "is masked")
    sums = w.sum(-1)
    off = (sums - 1).abs() > 1e-4
    if off.any():
        for axis in range(w.dim() - 1):
            if ((w.sum(axis) - 1).abs() < 1e-4).all():
                raise Wrong(f"the weights sum to 1 along axis {axis - w.dim()} instead of along each row: "
                            "each query spreads its attention over the keys, so normalise over the key axis, "
                            "the last one")
        idx = tuple(off.nonzero()[0])
        hint = f"row {int(idx[-1])} of the weights sums to {fmt_num(float(sums[idx]), near=1)}, expected 1"
        if mask is not None and close(w, (raw / math.sqrt(K.size(-1))).softmax(-1) * mask):
            hint += (": hide the masked keys in the scores, before the softmax (a score of minus infinity becomes a "
                     "weight of exactly 0); zeroing weights after the softmax leaves rows that no longer sum to 1")
        raise Wrong(hint)
    d_k, d_v = K.size(-1), V.size(-1)
    scalings = [
        (1.0, "your weights are softmax(QKᵀ), without the division by √d_k: scale the scores by 1/√d_k (eq. 11.6)"),
        (d_k, "your weights are softmax(QKᵀ/d_k): divide by √d_k, not by d_k"),
        (1 / math.sqrt(d_k), "your weights are softmax(QKᵀ·√d_k): divide the scores by √d_k, do not multiply"),
    ]
    if d_v != d_k:
        scalings.append((math.sqrt(d_v), "your weights are softmax(QKᵀ/√d_v): scale by √d_k, the size of the keys"))
    for scale, hint in scalings:
        if close(w, A.masked_softmax(raw / scale, mask)):
            raise Wrong(hint)
    idx, diff = first_mismatch(w, expected)
    raise Wrong(f"the weights differ from softmax(QKᵀ/√d_k) by {diff:.3g} at {fmt_index(idx[-2:])}")


# ----------------------------------------------------------------------------- causal mask

@exercise("causal_mask", needs=["causal_mask"])
def check_causal_mask(causal_mask):
    for T in (4, 1, 7):
        call = f"causal_mask({T})"
        m = expect_tensor(causal_mask(T), call)
        expect_shape(m, (T, T), call, axes=("query", "key"))
        if m.dtype != torch.bool:
            raise Wrong(f"{call} has dtype {m.dtype}; a mask holds yes/no answers (True = may attend), not "
                        "numbers: make it a boolean tensor")
        wrong = (m != A.causal_mask(T)).nonzero()
        if len(wrong):
            i, j = (int(v) for v in wrong[0])
            if j > i:
                raise Wrong(f"position ({i}, {j}) should be False: token {i} must not see token {j}, which comes later")
            if i == j:
                raise Wrong(f"position ({i}, {i}) should be True: every token may see itself")
            raise Wrong(f"position ({i}, {j}) should be True: token {i} may see token {j}, which comes before it")
    return "True on and below the diagonal, for T = 1, 4 and 7"


# ----------------------------------------------------------------------------- one head from X

# (B, T, d, d_k, d_v, causal, real lengths or None); d, d_k and d_v all differ so that mix-ups show
SELF_ATTENTION_CASES = [
    (1, 4, 6, 4, 3, False, None),
    (2, 5, 6, 4, 3, True, None),
    (2, 5, 6, 4, 3, False, (5, 3)),
    (3, 6, 6, 4, 3, True, (6, 2, 4)),
]


@exercise("self_attention", needs=["single_head_self_attention"])
def check_self_attention(single_head_self_attention):
    for seed, (B, T, d, d_k, d_v, causal, lengths) in enumerate(SELF_ATTENTION_CASES):
        g = torch.Generator().manual_seed(100 + seed)
        X, W_Q, W_K, W_V = _randn(B, T, d, g=g), _randn(d, d_k, g=g), _randn(d, d_k, g=g), _randn(d, d_v, g=g)
        pad = None if lengths is None else (torch.arange(T) < torch.tensor(lengths)[:, None]).long()  # (B, T)
        case = (f"X {fmt_shape(X.shape)}, W_Q and W_K {fmt_shape(W_Q.shape)}, W_V {fmt_shape(W_V.shape)}, "
                f"causal={causal}, " + ("no padding" if pad is None else f"real lengths {list(lengths)}"))
        answer, ref = _self_attention_call(single_head_self_attention, X, (W_Q, W_K, W_V), causal, pad)
        try:
            _check_self_attention_case(answer, X, (W_Q, W_K, W_V), causal, pad, ref)
        except Wrong as e:
            raise Wrong(f"{e} (with {case})") from None
    for causal, pad in ((True, None), (False, torch.tensor([[1, 0]]))):
        _check_self_attention_large(single_head_self_attention, causal, pad)
    return (f"matches course_lib.model.attention.self_attention on {len(SELF_ATTENTION_CASES)} batches, "
            "with and without the causal and the padding mask, and with large scores")


def _self_attention_call(single_head_self_attention, X, weights, causal: bool, pad):
    """(the student's answer on copies of the inputs, the library's reference) for one case."""
    ref = A.self_attention(X, *weights, causal=causal, attention_mask=pad)
    answer = single_head_self_attention(X.clone(), *(W.clone() for W in weights), causal=causal,
                                        attention_mask=None if pad is None else pad.clone())
    return answer, ref


# two tokens of one dimension, x = 200 and -300, W_Q = 1, W_K = -1: query 0 scores its own key -40,000 and the
# hidden key +60,000, so a finite fill such as -1e4 lets the hidden key win, and exp() without the max overflows
LARGE_X = ([[[200.0], [-300.0]]], [[1.0]], [[-1.0]], [[1.0]])


def _check_self_attention_large(single_head_self_attention, causal: bool, pad):
    X, W_Q, W_K, W_V = (torch.tensor(t) for t in LARGE_X)
    case = ("X [[200], [-300]], W_Q [[1]], W_K [[-1]], W_V [[1]], "
            + ("causal=True" if causal else "the second token padding") + ": large scores")
    answer, ref = _self_attention_call(single_head_self_attention, X, (W_Q, W_K, W_V), causal, pad)
    try:
        _check_self_attention_case(answer, X, (W_Q, W_K, W_V), causal, pad, ref)
    except Wrong as e:
        w = answer[1] if isinstance(answer, (tuple, list)) and len(answer) == 2 else None
        if isinstance(w, torch.Tensor) and w.shape == (1, 2, 2):
            if torch.isnan(w[0, 0]).any():
                raise Wrong(f"the weights of query 0 are NaN when its scores are -40000 and +60000: exp() of 60,000 "
                            "overflows. A softmax is unchanged when the same number is taken off every score of a "
                            f"row: take out the largest before exponentiating ({case})") from None
            if abs(float(w[0, 0, 1])) > ATOL:
                raise Wrong(f"the hidden key gets weight {fmt_num(float(w[0, 0, 1]))} when the only visible key "
                            "scores -40000: a finite fill such as -10000 is not below every score. Fill the hidden "
                            f"scores with -inf (or the dtype's lowest value) ({case})") from None
        raise Wrong(f"{e} (with {case})") from None


def _check_self_attention_case(answer, X, Ws, causal, pad, ref):
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        got = "a single tensor" if isinstance(answer, torch.Tensor) else type(answer).__name__
        raise Wrong(f"single_head_self_attention should return a pair (output, weights), got {got}")
    output = expect_tensor(answer[0], "the output (the first value returned)")
    weights = expect_tensor(answer[1], "the weights (the second value returned)")
    expect_shape(weights, ref.weights.shape, "the weights", axes=("batch", "query", "key"))
    B, T, _ = X.shape
    mask = torch.ones(B, T, T, dtype=torch.bool)
    if causal:
        mask &= A.causal_mask(T)
    if pad is not None:
        mask &= pad.bool()[:, None, :]
    _diagnose_masks(weights, mask, causal, pad)
    Q, K, V = (X @ W for W in Ws)
    if not close(weights, ref.weights):
        if close(weights, A.masked_softmax(K @ Q.transpose(-2, -1) / math.sqrt(K.size(-1)), mask)):
            raise Wrong("your scores compare the keys with the queries the wrong way round: row i of the score "
                        "matrix holds query i (from W_Q) compared with every key (from W_K)")
        if close(weights, A.masked_softmax(Q @ K.transpose(-2, -1) / math.sqrt(X.size(-1)), mask)):
            raise Wrong(f"you scaled by √d = √{X.size(-1)}, the size of the inputs: scale by √d_k = √{K.size(-1)}, "
                        "the size of the queries and keys")
    _diagnose_weights(weights, Q, K, V, mask, ref.weights)
    if output.shape == X.shape and X.shape != ref.output.shape and close(output, weights @ X):
        raise Wrong(f"your output is a weighted sum of the inputs X ({X.size(-1)} features per token): weight the "
                    f"values instead, the rows of X W^V ({ref.output.size(-1)} features)")
    expect_shape(output, ref.output.shape, "the output", axes=("batch", "query", "value feature"))
    if not close(output, ref.output):
        idx, diff = first_mismatch(output, ref.output)
        raise Wrong(f"the weights are right, but the output differs from the weighted sum of the values "
                    f"(the rows of X W^V, eq. 11.2) by {diff:.3g} at {fmt_index(idx)}")


def _diagnose_masks(weights, mask, causal, pad):
    """Name the first weight that a mask should have hidden, and why that key is hidden."""
    w = weights.double()
    bad = torch.isnan(w) | (~mask & (w.abs() > ATOL))
    if not bad.any():
        return
    b, i, j = (int(v) for v in bad.nonzero()[0])
    padded_query = pad is not None and not pad[b, i]
    if padded_query:
        raise Wrong(f"row {i} of text {b} (a [PAD] query) should still attend to the real keys: padding hides "
                    "keys, not queries, so that no row is left without a key (its output is ignored later)")
    if torch.isnan(w[b, i, j]):
        raise Wrong(f"the weights of text {b} contain NaN at ({i}, {j})")
    if causal and j > i:
        raise Wrong(f"in text {b}, query {i} attends to key {j}, which comes after it: with causal=True each "
                    "token may see only itself and the tokens before it")
    raise Wrong(f"in text {b}, query {i} attends to key {j}, a [PAD] position (its attention_mask is 0): "
                "padding keys must get weight 0" + (", and so must future keys: the two masks must both hold"
                                                     if causal else ""))


# ----------------------------------------------------------------------------- heads

HEAD_CASES = [(2, 5, 4, 3), (3, 7, 2, 4)]  # (B, T, H, d_h), every size different so swapped axes show


@exercise("heads", needs=["split_heads", "merge_heads"], points=2)
def check_heads(split_heads, merge_heads):
    """Two parts, a point each: split_heads; then merge_heads and the round trip (half the credit once split is right)."""
    g = torch.Generator().manual_seed(0)
    for B, T, H, dh in HEAD_CASES:
        _check_split(split_heads, _randn(B, T, H * dh, g=g), H)
    try:
        for B, T, H, dh in HEAD_CASES:
            _check_merge(merge_heads, _randn(B, H, T, dh, g=g))
        X = _randn(2, 6, 12, g=g)
        back = expect_tensor(merge_heads(split_heads(X, 3)), "merge_heads(split_heads(X, 3))")
        if not close(back, X):
            raise Wrong("merge_heads(split_heads(X, 3)) should give X back for X of shape (2, 6, 12)")
    except NotAttempted as e:
        raise NotAttempted(f"split_heads is correct; now {e}", credit=0.5) from None
    except Wrong as e:
        raise Wrong(str(e), credit=0.5) from None
    return "split and merge match course_lib.model.attention, and merge_heads(split_heads(X)) == X"


def _dims(ds: list[int]) -> str:
    """[3, 4, 5] -> 'dims 3…5'; [1, 5, 9] -> 'dims 1, 5, 9'."""
    if ds == list(range(ds[0], ds[0] + len(ds))):
        return f"dims {ds[0]}…{ds[-1]}"
    return "dims " + ", ".join(map(str, ds))


def _origin(vec: torch.Tensor, source: torch.Tensor) -> list[tuple[int, ...]] | None:
    """Where each value of vec sits in source (random values are unique), or None if some are not there."""
    hits = [(source == v).nonzero() for v in vec]
    return [tuple(int(i) for i in h[0]) for h in hits] if all(len(h) == 1 for h in hits) else None


def _check_split(split_heads, X, H):
    B, T, d = X.shape
    dh = d // H
    call = f"split_heads(X, {H}) with X of shape {fmt_shape(X.shape)}"
    got = expect_tensor(split_heads(X.clone(), H), call)
    expect_shape(got, (B, H, T, dh), call, axes=("batch", "head", "token", "feature"))
    if close(got, A.split_heads(X, H)):
        return
    if close(got, X.reshape(B, H, T, dh)):
        raise Wrong(f"{call}: you reshaped (B, T, d) straight to (B, H, T, d_h), which mixes tokens into heads; "
                    "first cut each token's d features into H pieces of d_h, keeping the tokens apart, and only "
                    "then move the head axis in front of the token axis")
    b, h, t, _ = first_mismatch(got, A.split_heads(X, H))[0]
    lo, hi = h * dh, (h + 1) * dh
    yours = ""
    where = _origin(got[b, h, t], X[b])
    if where and len({tok for tok, _ in where}) == 1:
        yours = f"; yours holds {_dims([dim for _, dim in where])} of token {where[0][0]}"
    raise Wrong(f"{call}: [{b}, {h}, {t}] should be X[{b}, {t}, {lo}:{hi}] ({_dims(list(range(lo, hi)))} of token {t})"
                f"{yours}: head h must hold dims h·d_h … (h+1)·d_h−1 of every token")


def _check_merge(merge_heads, X):
    B, H, T, dh = X.shape
    call = f"merge_heads(X) with X of shape {fmt_shape(X.shape)}"
    got = expect_tensor(merge_heads(X.clone()), call)
    expect_shape(got, (B, T, H * dh), call, axes=("batch", "token", "feature"))
    if close(got, A.merge_heads(X)):
        return
    if close(got, X.reshape(B, T, H * dh)):
        raise Wrong(f"{call}: you reshaped (B, H, T, d_h) straight to (B, T, H·d_h), which mixes tokens and heads; "
                    "first bring the token axis back in front of the head axis, and only then join each token's "
                    "H pieces into one vector")
    b, t, k = first_mismatch(got, A.merge_heads(X))[0]
    h = k // dh
    raise Wrong(f"{call}: [{b}, {t}, {h * dh}:{(h + 1) * dh}] should be head {h}'s vector for token {t}, "
                f"X[{b}, {h}, {t}]: the merged vector puts the heads side by side, head 0 first")


# ----------------------------------------------------------------------------- parameter count

PARAM_CONFIGS = [
    BertConfig(),  # BERT-base: 109,482,240
    BertConfig(vocab_size=100, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=40,
               max_position_embeddings=32),
    BertConfig(vocab_size=57, hidden_size=24, num_hidden_layers=3, num_attention_heads=4, intermediate_size=50,
               max_position_embeddings=20, type_vocab_size=1),
]


def _describe(cfg: BertConfig) -> str:
    if cfg == BertConfig():
        return "BERT-base"
    return (f"a BERT with V={cfg.vocab_size}, d={cfg.hidden_size}, L={cfg.num_hidden_layers}, "
            f"d_ff={cfg.intermediate_size}, {cfg.max_position_embeddings} positions, "
            f"{cfg.type_vocab_size} segment type{'s' if cfg.type_vocab_size != 1 else ''}")


def _n(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def _parts(model: BertModel) -> dict[str, int]:
    """Named pieces of a BERT, to recognise the piece a wrong count left out (or counted twice)."""
    cfg, e, layer = model.config, model.embeddings, model.encoder.layer[0]
    L, d = cfg.num_hidden_layers, cfg.hidden_size
    parts = {
        "one LayerNorm (2·d)": _n(e.LayerNorm),
        "one bias vector (d)": d,
        "the segment embeddings": _n(e.token_type_embeddings),
        "the position embeddings": _n(e.position_embeddings),
        "the word embeddings": _n(e.word_embeddings),
        "the pooler (d·d + d)": _n(model.pooler),
        "one d×d weight matrix": d * d,
        "one feed-forward bias (d_ff)": cfg.intermediate_size,
    }
    per_layer = {
        "the two LayerNorms": _n(layer.attention.output.LayerNorm) + _n(layer.output.LayerNorm),
        "one LayerNorm": _n(layer.output.LayerNorm),
        "the biases of Q, K, V and W^O": sum(p.numel() for name, p in layer.attention.named_parameters()
                                             if name.endswith(("query.bias", "key.bias", "value.bias", "dense.bias"))),
        "the query, key, value and output projections": _n(layer.attention.self) + _n(layer.attention.output.dense),
        "the feed-forward layers": _n(layer.intermediate) + _n(layer.output.dense),
    }
    parts.update({f"{name} of all {L} layers": L * size for name, size in per_layer.items()})
    parts["every LayerNorm (the embeddings' and two per layer, 2·d each)"] = (
        _n(e.LayerNorm) + L * per_layer["the two LayerNorms"])
    parts[f"one of the {L} layers"] = _n(layer)
    return parts


PARAM_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "intermediate_size", "max_position_embeddings",
                "type_vocab_size")


class _ConfigFields:
    """What the exercise gives: the six fields it names (and the head count), nothing else of a BertConfig."""

    def __init__(self, cfg):
        for name in (*PARAM_FIELDS, "num_attention_heads"):
            setattr(self, name, getattr(cfg, name))

    def __getattr__(self, name):  # reached only for what __init__ did not set
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"the exercise's config has no {name}: count from {', '.join(PARAM_FIELDS)} alone")

    def __repr__(self):
        return "config(" + ", ".join(f"{k}={v}" for k, v in vars(self).items()) + ")"


@exercise("param_count", needs=["bert_parameter_count"])
def check_param_count(bert_parameter_count):
    counts = []
    for cfg in PARAM_CONFIGS:
        with torch.device("meta"):  # no memory allocated, even for BERT-base
            model = BertModel(cfg)
        expected, what = model.num_parameters(), _describe(cfg)
        got = bert_parameter_count(_ConfigFields(cfg))  # the named fields only: a library counter cannot run on it
        if isinstance(got, bool) or not isinstance(got, numbers.Integral):
            hint = ("; a count is a whole number: keep to integer arithmetic (true division always gives a float)"
                    if isinstance(got, float) else "")
            raise Wrong(f"bert_parameter_count should return an int, got {type(got).__name__} {got!r} for {what}{hint}")
        if got == expected:
            counts.append(expected)
            continue
        diff = int(got) - expected
        emb, layer, pooler = _n(model.embeddings), _n(model.encoder.layer[0]), _n(model.pooler)
        hint = (f"off by {diff:+,} parameters for {what}: yours {fmt_int(got)}, expected {fmt_int(expected)} = "
                f"embeddings {fmt_int(emb)} + {cfg.num_hidden_layers} layers × {fmt_int(layer)} + pooler {fmt_int(pooler)}")
        same = [name for name, size in _parts(model).items() if size == abs(diff)][:3]
        if same:
            hint += (f"; {fmt_int(abs(diff))} is the size of {' or '.join(same)}: "
                     + ("did you leave it out?" if diff < 0 else "did you count it twice?"))
        raise Wrong(hint)
    return f"right for BERT-base ({fmt_int(counts[0])}) and {len(counts) - 1} smaller configurations"


# ----------------------------------------------------------------------------- the whole encoder

# (config, lengths): two random models of different widths and head counts, so that memorised sizes (384, 12 heads)
# fail; three texts of very different lengths, so that a missing padding mask changes the shorter ones. Neither has as
# many heads as texts, so that a key mask of shape (B, 1, T) cannot broadcast onto the heads by accident
ENCODER_CASES = [
    (BertConfig(vocab_size=50, hidden_size=24, num_hidden_layers=2, num_attention_heads=4, intermediate_size=40,
                max_position_embeddings=16), (9, 6, 2)),
    (BertConfig(vocab_size=60, hidden_size=32, num_hidden_layers=3, num_attention_heads=8, intermediate_size=48,
                max_position_embeddings=16), (7, 7, 3)),
]
_COMPOSITE = "a module of the model ({}) was called as a whole"


def _refuse(what, *args, **kwargs):
    raise RuntimeError(_COMPOSITE.format(what) + ": compute it from its weights (its Embedding, Linear and "
                       "LayerNorm layers), which is the point of the exercise")


@torch.no_grad()
def encoder_case(config: BertConfig, lengths, seed: int):
    """A random model in eval mode, and a padded batch. Its weights are drawn larger than an initialisation's
    (1/√fan-in), so that activations are of order 1 and each slip (a tanh GELU, a wrong scale) shows; its
    LayerNorms are random too, so that each misplaced one shows."""
    g = torch.Generator().manual_seed(seed)
    with seeded(seed):
        model = BertModel(config).eval()
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            module.weight.copy_(_randn(*module.weight.shape, g=g) / math.sqrt(module.in_features))
            module.bias.copy_(0.1 * _randn(*module.bias.shape, g=g))
        elif isinstance(module, torch.nn.LayerNorm):
            module.weight.copy_(1 + 0.5 * _randn(*module.weight.shape, g=g))
            module.bias.copy_(0.5 * _randn(*module.bias.shape, g=g))
    T = max(lengths)
    input_ids = torch.randint(1, config.vocab_size, (len(lengths), T), generator=g)
    attention_mask = (torch.arange(T) < torch.tensor(lengths)[:, None]).long()
    token_type_ids = ((torch.arange(T) >= torch.tensor(lengths)[:, None] // 2) & attention_mask.bool()).long()
    input_ids = input_ids * attention_mask  # padding is id 0
    return model, input_ids, token_type_ids, attention_mask


def _embed(model, ids, types, positions=True, norm=True, segments=True):
    e = model.embeddings
    x = e.word_embeddings(ids)
    if positions:
        x = x + e.position_embeddings(torch.arange(ids.size(1)))
    if segments:
        x = x + e.token_type_embeddings(types)
    return e.LayerNorm(x) if norm else x


def _block(block, x, attention_mask, use_mask=True, pre_ln=False, approximate="none", scale="d_h", heads=None,
           relu=False, residual1=True, residual2=True, swap_norms=False, ffn_on_x=False):
    """One post-LN block written out, with the slips the hints name."""
    att, out = block.attention.self, block.attention.output
    H = heads or att.num_heads
    if x.size(-1) % H:
        return None
    norm1 = (block.output.LayerNorm if swap_norms else out.LayerNorm) if not pre_ln else (lambda t: t)
    norm2 = out.LayerNorm if swap_norms else block.output.LayerNorm
    inner = (lambda t: t) if not pre_ln else out.LayerNorm
    q, k, v = (A.split_heads(proj(inner(x)), H) for proj in (att.query, att.key, att.value))
    d_h = q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_h if scale == "d_h" else x.size(-1) if scale == "d" else 1)
    if use_mask:
        scores = scores.masked_fill(~attention_mask.bool()[:, None, None, :], float("-inf"))
    heads = scores.softmax(-1) @ v
    a = out.dense(A.merge_heads(heads))
    h = norm1(x + a if residual1 else a)
    act = F.relu if relu else functools.partial(F.gelu, approximate=approximate)
    if pre_ln:
        return h + block.output.dense(act(block.intermediate.dense(block.output.LayerNorm(h))))
    ffn = block.output.dense(act(block.intermediate.dense(x if ffn_on_x else h)))
    return norm2(h + ffn if residual2 else ffn)


EMBEDDING_SLIPS = {
    "your L0 has no LayerNorm: the input vector is LayerNorm(E_tok[w] + E_pos[i] + E_seg[s])": dict(norm=False),
    "your L0 has no position embeddings: each position 0, 1, …, T−1 adds a learned vector of its own":
        dict(positions=False),
    "your L0 has no segment embeddings: each token's segment (token_type_ids) adds a learned vector of its own":
        dict(segments=False),
}
BLOCK_SLIPS = {
    "padding keys must get weight 0 in every head: mask the scores where attention_mask is 0 (the longest text is "
    "right, the shorter ones are not)": dict(use_mask=False),
    "that is a pre-LayerNorm block (x + Sublayer(LayerNorm(x))): BERT's is post-LayerNorm, LayerNorm(x + "
    "Sublayer(x)), after each residual sum": dict(pre_ln=True),
    "your GELU is the tanh approximation: BERT's is the exact one, x·Φ(x) with Φ the normal distribution's CDF":
        dict(approximate="tanh"),
    "BERT's feed-forward activation is the GELU, not ReLU (torch.nn.functional.gelu)": dict(relu=True),
    "scale the scores of each head by √d_h (its query size), not by √d, the model's width": dict(scale="d"),
    "scale the scores by 1/√d_h (eq. 11.6)": dict(scale="none"),
    "you split the vectors into 12 heads, MiniLM's number: split into block.attention.self.num_heads": dict(heads=12),
    "you attend with one head of the model's width: split the vectors into block.attention.self.num_heads heads":
        dict(heads=1),
    "the attention sub-layer has no residual connection: its LayerNorm normalises x + W^O·attention, the block's "
    "input added back (Fig. 11.3)": dict(residual1=False),
    "the feed-forward sub-layer has no residual connection: its LayerNorm normalises h + FFN(h), the attention "
    "sub-layer's output added back": dict(residual2=False),
    "your two LayerNorms are swapped: attention.output.LayerNorm follows the attention sub-layer, "
    "output.LayerNorm the feed-forward one": dict(swap_norms=True),
    "your feed-forward network reads the block's input x: it reads h, the attention sub-layer's output after its "
    "residual and LayerNorm": dict(ffn_on_x=True),
}


ENCODER_FIELDS = ("hidden_size", "num_attention_heads", "num_hidden_layers")


class ModelParts:
    """What the exercise hands the student's ``bert_encoder``: the layers it names and nothing else. No forward, no
    ``state_dict``, no BertConfig: nothing a BertModel can be rebuilt from or run by. Calling a part as a whole (the
    model, a block) is refused; asking for a part the exercise does not name says what there is."""

    def __init__(this, where: str, /, **parts):  # not `self`: attention.self is one of the parts
        this.__dict__.update(parts, _where=where)

    def __call__(self, *args, **kwargs):
        _refuse(self._where)

    def __getattr__(self, name):  # reached only for what __init__ did not set
        if name.startswith("_"):
            raise AttributeError(name)
        there = ", ".join(k for k in vars(self) if not k.startswith("_"))
        raise AttributeError(f"{self._where} has no {name}: the exercise gives only the parts it names ({there} here)")

    def __repr__(self):
        return f"ModelParts({self._where}: " + ", ".join(k for k in vars(self) if not k.startswith("_")) + ")"


def model_parts(model: BertModel) -> ModelParts:
    """The Embedding, Linear and LayerNorm layers of ``model`` (copies) and each block's head count, as
    ``bert_encoder`` reads them (``model.embeddings.word_embeddings``, ``model.encoder.layer[i].attention.self.query``,
    …), with a ``config`` of the width, the head count and the number of blocks."""
    cp, e = copy.deepcopy, model.embeddings
    embeddings = ModelParts("model.embeddings", word_embeddings=cp(e.word_embeddings),
                            position_embeddings=cp(e.position_embeddings),
                            token_type_embeddings=cp(e.token_type_embeddings), LayerNorm=cp(e.LayerNorm))
    blocks = []
    for i, b in enumerate(model.encoder.layer):
        at, name = b.attention.self, f"model.encoder.layer[{i}]"
        blocks.append(ModelParts(name, attention=ModelParts(
            f"{name}.attention",
            self=ModelParts(f"{name}.attention.self", query=cp(at.query), key=cp(at.key), value=cp(at.value),
                            num_heads=int(at.num_heads)),
            output=ModelParts(f"{name}.attention.output", dense=cp(b.attention.output.dense),
                              LayerNorm=cp(b.attention.output.LayerNorm))),
            intermediate=ModelParts(f"{name}.intermediate", dense=cp(b.intermediate.dense)),
            output=ModelParts(f"{name}.output", dense=cp(b.output.dense), LayerNorm=cp(b.output.LayerNorm))))
    config = ModelParts("model.config", **{f: int(getattr(model.config, f)) for f in ENCODER_FIELDS})
    return ModelParts("the model", embeddings=embeddings, encoder=ModelParts("model.encoder", layer=blocks),
                      config=config)


@exercise("bert_encoder", needs=["bert_encoder"], points=2)
def check_bert_encoder(bert_encoder):
    for seed, (config, lengths) in enumerate(ENCODER_CASES):
        model, ids, types, mask = encoder_case(config, lengths, 300 + seed)
        expected = list(model(ids, mask, types, output_hidden_states=True).hidden_states)
        case = (f"a random BERT with d = {config.hidden_size}, {config.num_attention_heads} heads, "
                f"{config.num_hidden_layers} blocks, and a batch of texts of lengths {list(lengths)}")
        try:  # the layers only: no model to call, copy or rebuild
            got = bert_encoder(ids.clone(), types.clone(), mask.clone(), model_parts(model))
        except Wrong as e:
            if "must match the size of tensor" in str(e):  # a mask that does not broadcast onto (B, H, T, T)
                raise Wrong(f"{e}. The scores of all heads have the shape (B, H, T, T): a mask of the keys must have "
                            f"the shape (B, 1, 1, T), one row for every head and every query") from None
            raise
        try:
            _check_encoder_case(got, expected, model, ids, types, mask)
        except Wrong as e:
            raise Wrong(f"{e} (with {case})") from None
    return (f"your encoder reproduces every layer of {len(ENCODER_CASES)} random BERTs on padded batches: run it "
            "on the embedded model below")


def _check_encoder_case(got, expected, model, ids, types, mask):
    L = len(expected) - 1
    if isinstance(got, torch.Tensor):
        raise Wrong(f"return the list of all {L + 1} hidden states [L0, L1, …, L{L}], not a single tensor")
    if not isinstance(got, (list, tuple)):
        raise Wrong(f"return a list of {L + 1} tensors [L0, L1, …, L{L}], not a {type(got).__name__}")
    if len(got) != L + 1:
        hint = ": did you leave out L0, the embedding output?" if len(got) == L else ""
        raise Wrong(f"return {L + 1} hidden states (L0 and one per block of the {L}), got {len(got)}{hint}")
    real = mask.bool()
    for layer, (h, ref) in enumerate(zip(got, expected)):
        h = expect_tensor(h, f"layer L{layer}")
        expect_shape(h, ref.shape, f"layer L{layer}", axes=("batch", "token", "feature"))
        if not torch.isfinite(h[real]).all():
            raise Wrong(f"layer L{layer} has NaN or inf at real tokens. A query whose keys are all masked (a padding "
                        "query, if you mask queries too) gets softmax of all -inf = NaN, and the next block's "
                        "attention carries it to the real tokens (0 · NaN is NaN): mask only the keys, so that "
                        "every query keeps its real keys; padding positions may hold anything finite")
        if close(h[real], ref[real]):
            continue
        if layer == 0:
            for hint, slip in EMBEDDING_SLIPS.items():
                if close(h[real], _embed(model, ids, types, **slip)[real]):
                    raise Wrong(hint)
        else:
            block = model.encoder.layer[layer - 1]
            for hint, slip in BLOCK_SLIPS.items():
                slipped = _block(block, expected[layer - 1], mask, **slip)
                if slipped is not None and close(h[real], slipped[real]):
                    raise Wrong(f"block {layer}: {hint}")
            longest = mask.sum(1) == mask.size(1)
            if close(h[longest], ref[longest]):
                raise Wrong(f"block {layer} is right on the text without padding and wrong on the shorter ones: "
                            "the padding keys must be hidden from every query of every head")
        idx, diff = first_mismatch(torch.where(real[..., None], h, ref), ref)
        right = "" if layer == 0 else " (L0 is right)" if layer == 1 else f" (L0–L{layer - 1} are right)"
        raise Wrong(f"layer L{layer} differs from the model's by {diff:.3g} at text {idx[0]}, token {idx[1]}, "
                    f"feature {idx[2]}{right}")


# ----------------------------------------------------------------------------- predictions

question(
    "changes_least", variable="changes_least", choices=["first", "middle", "last", "none"], answer="last",
    why="under the causal mask query i may attend to keys 0..i only, so the last position keeps every key; and in "
        "block 1 the keys and values it reads come from the embeddings, which the mask does not touch. Its layer-1 "
        "vector is exactly the bidirectional one. From block 2 on, the keys it reads were computed under the mask, "
        "and it moves too",
    hint="How far a position's vector moves in block 1 depends on two things: which of its keys the mask hides, "
         "and whether the keys and values it still reads are the ones it read without the mask. Draw the mask for a "
         "short sentence, and ask what block 1's keys and values are computed from",
    giveaways=["last position keeps every key", "last position is unchanged", "last token is unchanged",
               "last position keeps all"])

question(
    "word_order", variable="word_order",
    choices=["identical, up to rounding", "different, but close", "very different"],
    answer="identical, up to rounding",
    why="attention weighs each key by its content, not by where it stands, and the feed-forward network treats "
        "every position alone: reorder the input and every output is reordered the same way. [CLS] reads the "
        "same bag of words in both sentences, so it comes out the same. Only the position embeddings tell the "
        "two orders apart",
    hint="follow one layer. If you swap two input vectors, what happens to the attention weights and outputs of "
         "the other tokens, and of the two you swapped? Nothing else in the block knows the index of a token",
    giveaways=["says where a token is", "treats each position on its own", "reads a bag of words"])

question(
    "rotated_parts", variable="rotated_parts",
    choices=["both change", "the parts change, the weights do not", "neither changes"],
    answer="the parts change, the weights do not",
    why="a dot product depends only on the lengths of the two vectors and the angle between them, and a rotation "
        "keeps both, so every score and weight stays the same; the products, one per axis, depend on where the axes "
        "point: turn q onto one axis and that axis carries the whole score. The model fixes the sum, not its split "
        "over the head's dimensions",
    hint="write q·k without coordinates: |q| |k| cos θ. What does turning both vectors by the same rotation do to "
         "their lengths and to the angle between them? Then ask whether one product q[d]·k[d] can be written "
         "without coordinates",
    giveaways=["nothing in training fixes the axes", "a rotation keeps both", "about one choice of axes",
               "are those 32 axes the model's"])  # asked so, the question hints that they are not

question(
    "bert_base_size", variable="bert_base_size", choices=["10M", "110M", "340M", "1B"], answer="110M",
    why="the chapter says about 100M and the slides 110M; the count below shows where they are "
        "(340M is BERT-large: 24 layers of d = 1024)",
    hint="which parts of a block hold about d × d weights each, and how many such matrices are there (count the "
         "feed-forward's, with d_ff = 4d)? Which part holds |V| × d? Estimate both for BERT-base's d, layers and "
         "vocabulary, to one significant figure.",
    giveaways=["110M for BERT-base", "110 million", "BERT-base has 110M", "BERT-base (110M"])

question(
    "limit_512", variable="limit_512", choices=["the position table", "the quadratic cost", "the vocabulary"],
    answer="the position table",
    why="each position i adds row i of a learned table with max_position_embeddings = 512 rows: there is no row "
        "for a 513th token, however much memory you have. The quadratic cost is why the designers fixed a length "
        "at all; the table is what makes 512 a hard limit",
    hint="Tell a hard limit from a price: follow one token through the model, from how its input vector is made "
         "to what each layer does with it, and ask at each step what the model needs for a 513th token, and whether "
         "more memory or time could supply it or only training could",
    giveaways=["the learned position table", "512-token position table", "position table and, separately, the "
               "quadratic cost", "limited by the position table", "the position table limits",
               "it refuses the input", "refuses a 513th"])  # a refusal is an error: the cost is only slow
