"""Sampling languages for multilingual pretraining (SLP3 §11.2.3, eq. 11.7)."""
from __future__ import annotations

from collections.abc import Mapping

import torch

__all__ = ["language_sampling_probs"]


def language_sampling_probs(counts_or_probs, alpha: float = 0.3):
    """Eq. 11.7: q_i = p_i^α / Σ_j p_j^α with p_i = n_i / Σ_k n_k (Lample and Conneau, 2019).

    (The chapter's denominator reads Σ_j p_i^α; it is meant to be Σ_j p_j^α.)

    counts_or_probs: sentence counts n_i or probabilities p_i per language, as a list, a
                     tensor, or a dict {language: n_i} (then a dict is returned)
    alpha:           α = 1 keeps p; α < 1 upweights the smaller languages (α = 0.3 in
                     XLM-R, Conneau et al. 2020); α -> 0 tends to the uniform distribution.
    """
    if not alpha > 0:
        raise ValueError(
            f"alpha must be > 0, not {alpha}: eq. 11.7 raises p_i to the power α; α = 1 keeps p, "
            "α < 1 flattens it and α -> 0 tends to uniform"
        )
    names = list(counts_or_probs) if isinstance(counts_or_probs, Mapping) else None
    values = [counts_or_probs[k] for k in names] if names is not None else counts_or_probs
    n = torch.as_tensor(values, dtype=torch.float64).flatten()
    if n.numel() == 0 or (n < 0).any() or not torch.isfinite(n).all() or n.sum() == 0:
        raise ValueError("counts_or_probs must be non-negative, finite and not all 0 (one entry per language)")
    p = n / n.sum()
    q = p.pow(alpha)  # 0^α = 0: a language with no data stays at 0
    q = q / q.sum()
    return dict(zip(names, q.tolist())) if names is not None else q
