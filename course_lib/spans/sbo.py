"""The span boundary objective (SBO), SLP3 §11.5.1, eq. 11.17-11.20 (SpanBERT, Joshi et al. 2020).

For a masked span x_s … x_e, every token x_i inside it is predicted a second time, from the span's *outside*
only: the encoder outputs of the two boundary tokens z_{s-1} (just before) and z_{e+1} (just after), and a
relative position embedding p_{i-s+1} (1 for the span's first token, 2 for the second, ...):

    s_i = FFN([z_{s-1}; z_{e+1}; p_{i-s+1}])           (eq. 11.19, a 2-layer network)
    y_i = softmax(W_V s_i)                              (eq. 11.20, W_V: the output embeddings, shared with MLM)
    L_SBO(x_i) = -log y_i[x_i]                          (eq. 11.18)
    L = L_MLM + L_SBO                                   (eq. 11.17)

:func:`sbo_input` builds [z_{s-1}; z_{e+1}; p_{i-s+1}] for one token (the exercise), :func:`sbo_targets` and
:func:`sbo_inputs` for all masked tokens of a batch; :class:`SpanBoundaryHead` is eq. 11.19-11.20 and
:class:`SpanBertForPreTraining` adds it to a BERT with an MLM head. Position embeddings are a
(max_span_len, d) table whose row k-1 is p_k.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..model.heads import BertForPreTraining
from ..pretraining.masking import IGNORE_INDEX
from .masking import MAX_SPAN_WORDS

__all__ = ["sbo_input", "SBOTargets", "sbo_targets", "sbo_inputs", "SpanBoundaryHead", "SpanBertOutput",
           "SpanBertForPreTraining"]


def sbo_input(z: torch.Tensor, s: int, e: int, i: int, positions: torch.Tensor) -> torch.Tensor:
    """Eq. 11.19's input for token i of the span s..e: [z_{s-1}; z_{e+1}; p_{i-s+1}] as a (2d + d_p,) vector.

    z: (T, d) encoder outputs of one sequence; positions: (max_len, d_p), row k-1 holds p_k.
    """
    T = z.size(0)
    if not (1 <= s <= i <= e <= T - 2):
        raise ValueError(f"token {i} of span ({s}, {e}) needs 1 ≤ s ≤ i ≤ e ≤ T-2 = {T - 2}: the span must have a "
                         "token on each side (the boundaries z_(s-1) and z_(e+1))")
    k = i - s + 1  # the relative position, 1 for the span's first token
    if k > positions.size(0):
        raise ValueError(f"relative position {k} has no embedding: the table holds p_1 … p_{positions.size(0)}")
    return torch.cat([z[s - 1], z[e + 1], positions[k - 1]])


@dataclass
class SBOTargets:
    """Every token to predict with the SBO, as (N,) index tensors into a (B, T) batch.

    row, position: where the token is; start, end: its span's first and last token; labels: the original id.
    """

    row: torch.Tensor
    position: torch.Tensor
    start: torch.Tensor
    end: torch.Tensor
    labels: torch.Tensor

    @property
    def relative(self) -> torch.Tensor:
        """i - s + 1: 1 for a span's first token."""
        return self.position - self.start + 1

    @property
    def from_nearer_boundary(self) -> torch.Tensor:
        """1 for a span's first or last token, 2 for the next ones in, ...: min(i-s, e-i) + 1."""
        return torch.minimum(self.position - self.start, self.end - self.position) + 1

    def __len__(self) -> int:
        return int(self.row.numel())


def sbo_targets(spans: list[list[tuple[int, int]]], labels: torch.Tensor) -> SBOTargets:
    """The SBO's targets of a span-masked batch: one per token of every span.

    spans: per row, the (first_token, last_token) of each masked span (``SpanMasking.spans``);
    labels: (B, T) the original ids at masked positions (``SpanMasking.labels``).
    """
    rows, pos, st, en = [], [], [], []
    for b, row in enumerate(spans):
        for s, e in row:
            for i in range(s, e + 1):
                rows.append(b), pos.append(i), st.append(s), en.append(e)
    t = lambda x: torch.tensor(x, dtype=torch.long, device=labels.device)  # noqa: E731
    row, position = t(rows), t(pos)
    out = labels[row, position] if rows else t([])
    if (out == IGNORE_INDEX).any():
        raise ValueError("a span token has label -100: spans and labels do not come from the same masking")
    return SBOTargets(row, position, t(st), t(en), out)


def sbo_inputs(z: torch.Tensor, targets: SBOTargets, positions: torch.Tensor) -> torch.Tensor:
    """Eq. 11.19's inputs for all targets at once: (N, 2d + d_p) rows [z_{s-1}; z_{e+1}; p_{i-s+1}].

    z: (B, T, d) encoder outputs; positions: (max_len, d_p), row k-1 holds p_k.
    """
    left = z[targets.row, targets.start - 1]  # (N, d) z_{s-1}
    right = z[targets.row, targets.end + 1]  # (N, d) z_{e+1}
    rel = targets.relative
    if len(targets) and int(rel.max()) > positions.size(0):
        raise ValueError(f"a span token at relative position {int(rel.max())}: the table holds only "
                         f"p_1 … p_{positions.size(0)}; make max_span_len larger")
    return torch.cat([left, right, positions[rel - 1]], dim=-1)


class SpanBoundaryHead(nn.Module):
    """Eq. 11.19-11.20: s_i = FFN([z_{s-1}; z_{e+1}; p_{i-s+1}]), y_i = softmax(W_V s_i).

    The FFN has two layers, each GELU then LayerNorm (as in SpanBERT). ``max_span_len`` is the number of
    relative positions (spans are counted in words, which may be several subword tokens each, so the default
    leaves room: 3 × 10). W_V is ``decoder``; pass ``output_embeddings`` (|V|, d) to share it with the
    MLM head (SpanBERT does), otherwise it is a new matrix.
    """

    def __init__(self, hidden_size: int, vocab_size: int, max_span_len: int = 3 * MAX_SPAN_WORDS,
                 output_embeddings: nn.Parameter | None = None, layer_norm_eps: float = 1e-12):
        super().__init__()
        d = hidden_size
        self.position_embeddings = nn.Embedding(max_span_len, d)  # row k-1: p_k
        self.ffn = nn.Sequential(nn.Linear(3 * d, d), nn.GELU(), nn.LayerNorm(d, eps=layer_norm_eps),
                                 nn.Linear(d, d), nn.GELU(), nn.LayerNorm(d, eps=layer_norm_eps))
        self.decoder = nn.Linear(d, vocab_size)  # W_V and a bias
        nn.init.normal_(self.position_embeddings.weight, std=0.02)
        if output_embeddings is not None:
            if tuple(output_embeddings.shape) != (vocab_size, d):
                raise ValueError(f"output embeddings of shape {tuple(output_embeddings.shape)}, expected ({vocab_size}, {d})")
            self.decoder.weight = output_embeddings
        nn.init.zeros_(self.decoder.bias)

    def forward(self, z: torch.Tensor, targets: SBOTargets) -> torch.Tensor:
        """z (B, T, d) -> logits (N, |V|), one row per target token."""
        x = sbo_inputs(z, targets, self.position_embeddings.weight)  # (N, 3d)
        return self.decoder(self.ffn(x))  # (N, |V|)


@dataclass
class SpanBertOutput:
    """loss = mlm_loss + sbo_loss (eq. 11.17). Both heads predict the same N span tokens (``targets`` order):
    logits (N, |V|) from the MLM head at each token's own output z_i, sbo_logits (N, |V|) from its boundaries."""

    loss: torch.Tensor | None
    mlm_loss: torch.Tensor | None
    sbo_loss: torch.Tensor | None
    logits: torch.Tensor
    sbo_logits: torch.Tensor
    targets: SBOTargets
    last_hidden_state: torch.Tensor


class SpanBertForPreTraining(nn.Module):
    """A BERT with an MLM head (a :class:`BertForPreTraining`, e.g. ``load_pretrained("course-bert")``) plus a
    :class:`SpanBoundaryHead` whose W_V is the MLM head's output matrix. Trained with L = L_MLM + L_SBO.

    In SpanBERT every masked token is in a span, so L_MLM and L_SBO predict the same tokens; the MLM head is run
    at those positions only (the vocabulary projection of every other position would be thrown away).
    """

    def __init__(self, mlm_model: BertForPreTraining, max_span_len: int = 3 * MAX_SPAN_WORDS):
        super().__init__()
        if not getattr(mlm_model, "has_mlm_head", False):
            raise TypeError("SpanBERT needs a model with an MLM head (a BertForPreTraining, e.g. "
                            "load_pretrained('course-bert')); the embedded all-MiniLM-L6-v2 has none")
        self.mlm = mlm_model
        cfg = mlm_model.config
        self.sbo = SpanBoundaryHead(cfg.hidden_size, cfg.vocab_size, max_span_len,
                                    output_embeddings=mlm_model.cls.predictions.decoder.weight,
                                    layer_norm_eps=cfg.layer_norm_eps)
        with torch.no_grad():  # start from the MLM head's output bias: it already knows how frequent each token is
            self.sbo.decoder.bias.copy_(mlm_model.cls.predictions.bias)

    def start_from_unigram(self, unigram: torch.Tensor) -> None:
        """Make the new SBO head start as the unigram distribution: its output bias = log P(w), and the FFN's
        last LayerNorm gain = 0, so that s_i = 0 and y_i = softmax(log P) = P at the start. Every nat L_SBO
        then gains below the unigram loss comes from the boundaries and the position."""
        with torch.no_grad():
            self.sbo.decoder.bias.copy_(torch.log(unigram.float().clamp_min(1e-9)))
            self.sbo.ffn[-1].weight.zero_()

    @property
    def device(self) -> torch.device:
        return self.mlm.device

    def forward(self, input_ids, attention_mask=None, labels=None, spans=None, targets: SBOTargets | None = None,
                token_type_ids=None) -> SpanBertOutput:
        """input_ids (B, T) after span masking; labels (B, T) (-100 outside spans); spans: per row the masked
        (first_token, last_token) pairs -- or the prepared ``targets`` instead of labels and spans."""
        if targets is None:
            if spans is None or labels is None:
                raise ValueError("give labels and spans (from span_mask), or targets, to compute the SBO")
            targets = sbo_targets(spans, labels)
        z = self.mlm.bert(input_ids, attention_mask, token_type_ids, output_hidden_states=False).last_hidden_state
        logits = self.mlm.cls.predictions(z[targets.row, targets.position])  # (N, |V|) from z_i
        sbo_logits = self.sbo(z, targets)  # (N, |V|) from z_(s-1), z_(e+1), p_(i-s+1)
        mlm_loss = sbo_loss = loss = None
        if len(targets):
            mlm_loss = nn.functional.cross_entropy(logits, targets.labels)  # L_MLM over the masked tokens
            sbo_loss = nn.functional.cross_entropy(sbo_logits, targets.labels)
            loss = mlm_loss + sbo_loss  # eq. 11.17
        return SpanBertOutput(loss, mlm_loss, sbo_loss, logits, sbo_logits, targets, z)
