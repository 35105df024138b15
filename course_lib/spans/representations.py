"""Span representations, SLP3 §11.5.2, eq. 11.21-11.26.

A span (i, j) of the encoder's output vectors z_1 … z_T (both ends included) is represented by its boundaries
and a summary of its contents:

* eq. 11.21, :func:`span_mean`: g_ij = 1/(j-i+1) Σ_{k=i..j} z_k, the average of the vectors in the span;
* eq. 11.22, :func:`boundary_representation`: spanRep_ij = [z_i; z_j; g_ij];
* eq. 11.23-11.25, :class:`StartEndFFN`: learned boundaries s_i = FFN_start(z_i), e_j = FFN_end(z_j), so that
  the same word is represented differently as a span's first and as its last word; spanRep = [s_i; e_j; g_ij];
* eq. 11.26, :class:`AttentionPooling`: g_ij = SelfAttention(z_{i:j}), a weighted average whose weights come
  from a learned score of each vector, softmax-normalised over the span only (Lee et al. 2017's
  "head-finding" attention): a_k = softmax_{k∈[i,j]}(w · FFN(z_k)), g_ij = Σ_k a_k z_k;
* :class:`SpanRepresentation` puts them together for a span classifier (eq. 11.27).

Spans are passed as a (N, 2) tensor of (i, j) positions into one sequence z (T, d), or as (N, 3) rows
(b, i, j) into a batch z (B, T, d). Positions count from 0 here (the chapter counts from 1).
"""
from __future__ import annotations

import torch
from torch import nn

__all__ = ["span_mean", "boundary_representation", "FFN", "StartEndFFN", "AttentionPooling", "SpanRepresentation",
           "REPRESENTATIONS"]

REPRESENTATIONS = ("boundary", "learned", "attention")


def _spans_and_states(z: torch.Tensor, spans) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """z as (B, T, d) and spans as three (N,) index tensors b, i, j, with every span checked to lie inside z."""
    spans = torch.as_tensor(spans, dtype=torch.long, device=z.device)
    if z.dim() == 2:
        z = z.unsqueeze(0)
        if spans.dim() != 2 or spans.size(-1) != 2:
            raise ValueError(f"for z of shape (T, d) give spans as (N, 2) rows (i, j), not shape {tuple(spans.shape)}")
        spans = torch.cat([torch.zeros_like(spans[:, :1]), spans], dim=1)
    elif z.dim() != 3:
        raise ValueError(f"z must be (T, d) or (B, T, d), not shape {tuple(z.shape)}")
    if spans.dim() != 2 or spans.size(-1) != 3:
        raise ValueError(f"for z of shape (B, T, d) give spans as (N, 3) rows (b, i, j), not shape {tuple(spans.shape)}")
    B, T, _ = z.shape
    b, i, j = spans.unbind(-1)
    if spans.numel():
        if (j < i).any():
            k = int((j < i).nonzero()[0])
            raise ValueError(f"span {k} ends before it starts: (i, j) = ({int(i[k])}, {int(j[k])}); a span needs i ≤ j")
        if (i < 0).any() or (j >= T).any() or (b < 0).any() or (b >= B).any():
            k = int(((i < 0) | (j >= T) | (b < 0) | (b >= B)).nonzero()[0])
            raise ValueError(f"span {k} = ({int(i[k])}, {int(j[k])}) in row {int(b[k])} is outside the {B} × {T} "
                             "positions of z")
    return z, b, i, j


def span_mean(z: torch.Tensor, spans) -> torch.Tensor:
    """Eq. 11.21: g_ij = 1/(j-i+1) Σ_{k=i..j} z_k for every span. z (T, d) or (B, T, d) -> (N, d).

    Computed from prefix sums, so all spans cost one cumulative sum: Σ_{k=i..j} z_k = C_{j+1} - C_i.
    """
    z, b, i, j = _spans_and_states(z, spans)
    csum = torch.cat([torch.zeros_like(z[:, :1]), z.cumsum(dim=1)], dim=1)  # (B, T+1, d): C_t = Σ_{k<t} z_k
    total = csum[b, j + 1] - csum[b, i]  # (N, d)
    return total / (j - i + 1).unsqueeze(-1).to(z.dtype)


def boundary_representation(z: torch.Tensor, spans) -> torch.Tensor:
    """Eq. 11.22: spanRep_ij = [z_i; z_j; g_ij]. z (T, d) or (B, T, d) -> (N, 3d)."""
    zb, b, i, j = _spans_and_states(z, spans)
    return torch.cat([zb[b, i], zb[b, j], span_mean(z, spans)], dim=-1)


class FFN(nn.Module):
    """A two-layer feed-forward network, FFN(x) = W_2 GELU(W_1 x + b_1) + b_2."""

    def __init__(self, d_in: int, d_hidden: int, d_out: int, dropout: float = 0.0):
        super().__init__()
        self.dense_in = nn.Linear(d_in, d_hidden)
        self.act = nn.GELU()
        self.dropout = nn.Dropout(dropout)
        self.dense_out = nn.Linear(d_hidden, d_out)

    def forward(self, x):  # (..., d_in) -> (..., d_out)
        return self.dense_out(self.dropout(self.act(self.dense_in(x))))


class StartEndFFN(nn.Module):
    """Eq. 11.23-11.25: s_i = FFN_start(z_i), e_j = FFN_end(z_j); spanRep_ij = [s_i; e_j; g_ij] with g from eq. 11.21.

    Two different networks, so a word's vector as the *start* of a span differs from its vector as the *end*.
    """

    def __init__(self, d: int, d_boundary: int | None = None, d_hidden: int | None = None, dropout: float = 0.0):
        super().__init__()
        d_boundary = d if d_boundary is None else d_boundary
        d_hidden = d if d_hidden is None else d_hidden
        self.ffn_start = FFN(d, d_hidden, d_boundary, dropout)
        self.ffn_end = FFN(d, d_hidden, d_boundary, dropout)
        self.output_size = 2 * d_boundary + d

    def forward(self, z: torch.Tensor, spans) -> torch.Tensor:  # -> (N, 2 d_boundary + d)
        zb, b, i, j = _spans_and_states(z, spans)
        return torch.cat([self.ffn_start(zb[b, i]), self.ffn_end(zb[b, j]), span_mean(z, spans)], dim=-1)


class AttentionPooling(nn.Module):
    """Eq. 11.26: g_ij = Σ_{k=i..j} a_k z_k with a = softmax over the span of the scores α_k = w · FFN(z_k).

    With ``d_hidden=None`` the score is linear, α_k = w · z_k + c. ``forward`` returns the pooled vectors (N, d);
    ``weights`` returns the attention weights as a (N, W) tensor (W = longest span; 0 beyond each span's end).
    """

    def __init__(self, d: int, d_hidden: int | None = None, dropout: float = 0.0):
        super().__init__()
        self.score = nn.Linear(d, 1) if d_hidden is None else FFN(d, d_hidden, 1, dropout)

    def _window(self, z: torch.Tensor, spans):
        zb, b, i, j = _spans_and_states(z, spans)
        width = int((j - i).max()) + 1 if i.numel() else 1
        offsets = torch.arange(width, device=zb.device)  # (W,)
        pos = (i.unsqueeze(1) + offsets).clamp(max=zb.size(1) - 1)  # (N, W) the positions i, i+1, ..., clipped
        inside = offsets.unsqueeze(0) <= (j - i).unsqueeze(1)  # (N, W) True for k ≤ j
        vectors = zb[b.unsqueeze(1), pos]  # (N, W, d)
        return vectors, inside

    def weights(self, z: torch.Tensor, spans) -> torch.Tensor:
        vectors, inside = self._window(z, spans)
        scores = self.score(vectors).squeeze(-1)  # (N, W): α_k
        scores = scores.masked_fill(~inside, float("-inf"))  # positions after j take no weight
        return scores.softmax(dim=-1)

    def forward(self, z: torch.Tensor, spans) -> torch.Tensor:
        vectors, inside = self._window(z, spans)
        scores = self.score(vectors).squeeze(-1).masked_fill(~inside, float("-inf"))  # (N, W)
        a = scores.softmax(dim=-1)  # (N, W)
        return (a.unsqueeze(-1) * vectors).sum(dim=1)  # (N, d)


class SpanRepresentation(nn.Module):
    """The span representation a classifier reads (eq. 11.22, 11.25 or 11.25 with the pooling of 11.26).

    kind="boundary":  [z_i; z_j; mean]          (eq. 11.22; no parameters)
    kind="learned":   [s_i; e_j; mean]          (eq. 11.23-11.25)
    kind="attention": [s_i; e_j; attention]     (eq. 11.23-11.26)
    ``output_size`` is the length of the vectors it returns.
    """

    def __init__(self, d: int, kind: str = "learned", d_boundary: int | None = None, dropout: float = 0.0):
        super().__init__()
        if kind not in REPRESENTATIONS:
            raise ValueError(f"unknown span representation {kind!r}: choose one of {', '.join(REPRESENTATIONS)}")
        self.kind = kind
        self.boundaries = StartEndFFN(d, d_boundary, dropout=dropout) if kind != "boundary" else None
        self.pooling = AttentionPooling(d) if kind == "attention" else None
        self.output_size = 3 * d if self.boundaries is None else self.boundaries.output_size

    def extra_repr(self) -> str:
        return f"kind={self.kind!r}, output_size={self.output_size}"

    def forward(self, z: torch.Tensor, spans) -> torch.Tensor:
        if self.boundaries is None:
            return boundary_representation(z, spans)
        zb, b, i, j = _spans_and_states(z, spans)
        # the FFNs run once per token, then every span picks its start's and its end's vector
        s, e = self.boundaries.ffn_start(zb)[b, i], self.boundaries.ffn_end(zb)[b, j]  # (N, d_boundary) each
        g = self.pooling(z, spans) if self.pooling is not None else span_mean(z, spans)
        return torch.cat([s, e, g], dim=-1)
