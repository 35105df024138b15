"""Scaled dot-product attention, masks and multi-head reshapes (SLP3 §11.1, eq. 11.1-11.6).

Conventions used throughout ``course_lib``:

* A *mask* is a boolean tensor that is ``True`` where a query **may** attend to a
  key. It broadcasts against the score matrix ``(B, H, T_q, T_k)``.
* ``scores`` are the raw scaled dot products ``QKᵀ/√d_k`` before any mask;
  ``weights`` are the row-wise softmax after masking (each row sums to 1).

Two code paths compute the same output. The *explicit* path spells out every
step and returns the scores and weights; the *fast* path calls
``torch.nn.functional.scaled_dot_product_attention`` (fused kernels) and returns
only the output. ``attention(..., need_weights=False)`` takes the fast path.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass
class AttentionOutput:
    """What one attention call produces.

    output:  (..., T_q, d_v) the weighted sums of the values (eq. 11.6)
    scores:  (..., T_q, T_k) QKᵀ/√d_k before masking, or None on the fast path
    weights: (..., T_q, T_k) softmax of the masked scores, or None on the fast path
    """

    output: torch.Tensor
    scores: torch.Tensor | None = None
    weights: torch.Tensor | None = None


# ----------------------------------------------------------------------------- masks

def bidirectional_mask(T: int, device=None) -> torch.Tensor:
    """(T, T) all True: every token sees every token (the BERT encoder, Fig. 11.1b)."""
    return torch.ones(T, T, dtype=torch.bool, device=device)


def causal_mask(T: int, device=None) -> torch.Tensor:
    """(T, T) lower-triangular: token i sees tokens 0..i only (a GPT-style decoder, Fig. 11.1a)."""
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


def padding_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """(B, T) tokenizer mask (1 = real token, 0 = [PAD]) -> (B, 1, 1, T) key mask.

    Padded *keys* get no attention; every query row keeps its real keys.
    """
    if attention_mask.dim() != 2:
        raise ValueError(f"attention_mask must have shape (B, T); got {tuple(attention_mask.shape)}")
    return attention_mask.bool()[:, None, None, :]


def combine_masks(*masks: torch.Tensor | None) -> torch.Tensor | None:
    """AND together any number of broadcastable boolean masks (None entries are ignored)."""
    out = None
    for m in masks:
        if m is not None:
            out = m if out is None else out & m
    return out


# ----------------------------------------------------------------------------- heads

def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(B, T, d) -> (B, H, T, d/H): give each head its own slice of the model dimension."""
    B, T, d = x.shape
    if d % n_heads:
        raise ValueError(f"model dimension {d} is not divisible by {n_heads} heads")
    return x.view(B, T, n_heads, d // n_heads).transpose(1, 2)  # (B, H, T, d_h)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(B, H, T, d_h) -> (B, T, H·d_h): concatenate the heads again (before W^O)."""
    B, H, T, dh = x.shape
    return x.transpose(1, 2).reshape(B, T, H * dh)


# ----------------------------------------------------------------------------- attention

def attention_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Eq. 11.4, all pairs at once and scaled as in eq. 11.6: the N×N matrix QKᵀ/√d_k (Fig. 11.2).

    (q/√d_k)·kᵀ equals (q·kᵀ)/√d_k; scaling q first divides a (T, d_k) matrix
    instead of the larger (T, T) one.
    """
    return (q / math.sqrt(q.size(-1))) @ k.transpose(-2, -1)


def additive_mask(mask: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Boolean mask (True = may attend) -> float mask to *add* to the scores: 0 or a huge negative number.

    The most negative finite number is used instead of -inf, so that a row with
    no allowed key gets uniform weights instead of NaN; every disallowed
    position still gets exactly zero weight after the softmax.
    """
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(~mask, torch.finfo(dtype).min)


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Eq. 11.3: row-wise softmax, disallowed positions getting exactly zero weight.

    ``mask`` is boolean (True = may attend) or an :func:`additive_mask`.
    """
    if mask is not None:
        scores = scores + (additive_mask(mask, scores.dtype) if mask.dtype == torch.bool else mask)
    return scores.softmax(dim=-1)


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    need_weights: bool = True,
    dropout_p: float = 0.0,
) -> AttentionOutput:
    """Scaled dot-product attention, eq. 11.1-11.6: softmax(QKᵀ/√d_k) V.

    q: (..., T_q, d_k)   k: (..., T_k, d_k)   v: (..., T_k, d_v)
    mask: boolean, True = may attend, broadcastable to (..., T_q, T_k); an
        :func:`additive_mask` made from it once is also accepted (faster when
        many layers share one mask).

    With ``need_weights=True`` (the explicit path) the result also carries the
    raw ``scores`` and the softmax ``weights``; with ``need_weights=False`` the
    fused PyTorch kernel computes the same ``output`` faster.
    """
    if mask is not None and mask.dtype == torch.bool:
        mask = additive_mask(mask, q.dtype)
    if not need_weights:
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
        return AttentionOutput(out)
    scores = attention_scores(q, k)  # (..., T_q, T_k)
    weights = masked_softmax(scores, mask)
    dropped = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    return AttentionOutput(dropped @ v, scores, weights)


# ----------------------------------------------------------------------------- one head from the inputs

def self_attention(
    x: torch.Tensor,
    w_q: torch.Tensor,
    w_k: torch.Tensor,
    w_v: torch.Tensor,
    causal: bool = False,
    attention_mask: torch.Tensor | None = None,
) -> AttentionOutput:
    """One head of self-attention computed from its inputs, eq. 11.1-11.6 with the masks of Fig. 11.1.

    x: (B, T, d) input embeddings; w_q, w_k: (d, d_k); w_v: (d, d_v), so that Q = X W^Q (eq. 11.5).
    causal: hide the future (key j > query i).
    attention_mask: (B, T) as the tokenizer returns it (1 = real token, 0 = [PAD]); padded *keys* get no weight,
        padded queries still attend to the real keys (their outputs are ignored downstream).
    Returns output (B, T, d_v), scores and weights (B, T, T).
    """
    if x.dim() != 3:
        raise ValueError(f"x must have shape (B, T, d); got {tuple(x.shape)}")
    B, T, d = x.shape
    for name, w in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v)):
        if w.dim() != 2 or w.size(0) != d:
            raise ValueError(f"{name} must have shape (d, ·) = ({d}, ·) to multiply x of shape {tuple(x.shape)}; "
                             f"got {tuple(w.shape)}")
    if w_q.size(1) != w_k.size(1):
        raise ValueError(f"queries and keys must have the same size d_k: w_q gives {w_q.size(1)}, w_k {w_k.size(1)}")
    q, k, v = x @ w_q, x @ w_k, x @ w_v                     # (B, T, d_k), (B, T, d_k), (B, T, d_v)
    key_mask = None
    if attention_mask is not None:
        if tuple(attention_mask.shape) != (B, T):
            raise ValueError(f"attention_mask must have shape (B, T) = ({B}, {T}); got {tuple(attention_mask.shape)}")
        key_mask = attention_mask.bool()[:, None, :]        # (B, 1, T): a mask over the keys
    mask = combine_masks(key_mask, causal_mask(T, device=x.device) if causal else None)
    return attention(q, k, v, mask)
