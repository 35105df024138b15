"""Undoing a sampled class prior in a span classifier's probabilities (SLP3 §11.5.2, before a calibrated threshold).

The span model of notebook 11.5 trains on every entity span but only a share s of the NULL spans
(``experiments.NULL_SHARE``): most spans are NULL, and a sample teaches the same at a fraction of the cost. The
classifier then learns a world where NULL is s times as frequent as it is, so every entity probability comes out
too high. Bayes' rule undoes it: multiply p(NULL) by 1/s and renormalise -- the same as adding log(1/s) to the
NULL logit before the softmax. :func:`correct_null_prior` does exactly that, and nothing else.
"""
from __future__ import annotations

import torch

__all__ = ["correct_null_prior"]


def correct_null_prior(probs: torch.Tensor, null_share: float, null: int = 0) -> torch.Tensor:
    """probs: (N, K) class probabilities of a model trained on a share ``null_share`` (0 < s ≤ 1) of the spans of
    class ``null``. Returns (N, K) probabilities for the data as it is: p(null) × 1/s, every row renormalised to 1.

    >>> correct_null_prior(torch.tensor([[0.4, 0.6]]), 0.5)
    tensor([[0.5714, 0.4286]])
    """
    if not torch.is_tensor(probs) or probs.dim() != 2:
        raise ValueError("probs must be an (N, K) tensor of class probabilities, one row per span")
    if isinstance(null_share, bool) or not 0 < float(null_share) <= 1:
        raise ValueError(f"null_share is the share of the NULL spans kept in training, in (0, 1], not {null_share!r}")
    if not 0 <= null < probs.shape[1]:
        raise ValueError(f"the NULL class {null} is not among the {probs.shape[1]} classes")
    weights = torch.ones(probs.shape[1], dtype=probs.dtype, device=probs.device)
    weights[null] = 1.0 / float(null_share)
    scaled = probs * weights
    return scaled / scaled.sum(-1, keepdim=True)
