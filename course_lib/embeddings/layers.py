"""Choosing and mixing layers (SLP3 §11.3; ELMo's scalar mix from the lectures).

    combine_layers(states, "last")        # the last layer
    combine_layers(states, "last4_mean")  # the mean of the last four layers (also "last4_sum", an int, a list)
    ScalarMix(n_layers)                   # γ · Σ_j softmax(s)_j h_j, learnt (Peters et al. 2018)
"""
from __future__ import annotations


import numpy as np
import torch
from torch import nn


LAYER_CHOICES = ("last", "last4_mean", "last4_sum")


class ScalarMix(nn.Module):
    """ELMo's learned layer mix: γ Σ_j softmax(s)_j h_j over the L+1 layers (Peters et al. 2018)."""

    def __init__(self, n_layers: int):
        super().__init__()
        self.scalars = nn.Parameter(torch.zeros(n_layers))
        self.gamma = nn.Parameter(torch.ones(()))

    @property
    def weights(self) -> torch.Tensor:
        return self.scalars.softmax(-1)

    def forward(self, states: torch.Tensor) -> torch.Tensor:  # (..., L+1, d) -> (..., d)
        if states.size(-2) != self.scalars.numel():
            raise ValueError(f"the mix has {self.scalars.numel()} layer weights, the states {states.size(-2)} layers")
        return self.gamma * torch.einsum("l,...ld->...d", self.weights, states)


def combine_layers(states: torch.Tensor, layers="last4_mean") -> torch.Tensor:
    """One vector per example from (N, L+1, d) states (or (L+1, d) for one word).

    ``layers``: an int (0 = embeddings … L = last block; negative counts from the end),
    ``"last"``, ``"last4_mean"`` / ``"last4_sum"`` (mean / sum of the last four blocks; §11.3.1),
    or a :class:`ScalarMix`.
    """
    n = states.size(-2)
    if isinstance(layers, ScalarMix):
        return layers(states)
    if isinstance(layers, (int, np.integer)) and not isinstance(layers, bool):
        if not -n <= layers < n:
            raise IndexError(f"layer {layers} is out of range: this model has layers 0 (embeddings) to {n - 1}")
        return states[..., int(layers), :]
    if layers == "last":
        return states[..., -1, :]
    if layers in ("last4_mean", "last4_sum"):
        if n < 5:
            raise ValueError(f"the model has only {n - 1} layers: there are no last four")
        last4 = states[..., -4:, :]
        return last4.mean(-2) if layers == "last4_mean" else last4.sum(-2)
    raise ValueError(f"layers must be a layer number 0..{n - 1}, one of {', '.join(LAYER_CHOICES)}, or a ScalarMix; "
                     f"not {layers!r}")


def layer_name(layers) -> str:
    if isinstance(layers, ScalarMix):
        return "learned scalar mix"
    if isinstance(layers, (int, np.integer)):
        return "L0 (embeddings)" if layers == 0 else f"L{layers}"  # 0-based: L0 = embedding output
    return {"last": "last layer", "last4_mean": "mean of last 4", "last4_sum": "sum of last 4"}.get(layers, str(layers))
