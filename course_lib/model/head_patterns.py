"""Which attention heads do what (SLP3 §11.1; the patterns of Clark et al. 2019, "What does BERT look at?").

Given every layer's softmax weights for one input, (L, H, T, T), each head gets the mean weight its queries put on

* the previous token (the diagonal just below the main one),
* the next token (the diagonal just above it),
* ``[CLS]`` and ``[SEP]`` (the keys holding those tokens, summed when there are several),

and :func:`strongest_heads` names, for each pattern, the head that follows it most.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

PATTERNS = ("previous token", "next token", "[CLS]", "[SEP]")


@dataclass(frozen=True)
class HeadPattern:
    pattern: str    # one of PATTERNS
    layer: int      # 0-based index of the block, as in attentions[layer]: 0 = block 1 (its output is layer L1)
    head: int
    share: float    # mean attention weight that head's queries put on the pattern's key(s)

    def __str__(self) -> str:
        return f"{self.pattern:>14s}: block {self.layer + 1}, head {self.head} puts {self.share:.0%} of its attention there"


def pattern_shares(weights: torch.Tensor, tokens: list[str]) -> dict[str, torch.Tensor]:
    """Pattern -> (L, H) mean weight on it, from weights (L, H, T, T) of one input with T ``tokens``."""
    if weights.dim() != 4 or weights.size(-1) != weights.size(-2):
        raise ValueError(f"weights must have shape (L, H, T, T); got {tuple(weights.shape)}")
    T = weights.size(-1)
    if len(tokens) != T:
        raise ValueError(f"{len(tokens)} tokens for attention maps over {T} positions")
    if T < 2:
        raise ValueError("a pattern over neighbouring tokens needs at least two tokens")
    w = weights.double()
    shares = {
        "previous token": torch.diagonal(w, -1, dim1=-2, dim2=-1).mean(-1),  # query i -> key i-1, i = 1..T-1
        "next token": torch.diagonal(w, 1, dim1=-2, dim2=-1).mean(-1),       # query i -> key i+1, i = 0..T-2
    }
    for special in ("[CLS]", "[SEP]"):
        keys = [i for i, t in enumerate(tokens) if t == special]
        if keys:
            shares[special] = w[..., keys].sum(-1).mean(-1)
    return shares


def strongest_heads(weights: torch.Tensor, tokens: list[str]) -> list[HeadPattern]:
    """For each pattern present in the input, the (layer, head) that puts the most weight on it."""
    found = []
    for pattern, share in pattern_shares(weights, tokens).items():
        best = int(share.argmax())
        layer, head = divmod(best, share.size(1))
        found.append(HeadPattern(pattern, layer, head, float(share.flatten()[best])))
    return found
