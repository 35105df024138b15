"""What to fine-tune (SLP3 §11.4.1; L003): the head only, the last k layers and the head, or everything.

§11.4.1: the classification loss "can be used to not only learn the weights of the classifier, but also to
update the weights for the pretrained language model itself", and "reasonable classification performance
is typically achieved with only minimal changes ... often limited to updates over the final few layers".
The strategies, from cheapest to most expensive:

    "head"     the encoder is frozen; only the new head (W_C) learns -- a logistic regression on fixed vectors
    "last-k"   the last k transformer blocks and the head learn; embeddings and the blocks below are frozen
    "full"     every parameter learns, the embeddings included

A frozen parameter has ``requires_grad=False``: no gradient is computed for it and the optimizer never sees it.
The pooler tanh(W z_CLS) is trained only by a head that reads it (``pooling="pooler"``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from torch import nn

from .frozen import freeze_below, num_layers


@dataclass(frozen=True)
class Strategy:
    """A freezing strategy: ``top`` is the number of trained blocks, None for "full" (all, embeddings included)."""

    name: str
    top: int | None

    def first_trained_layer(self, n_layers: int) -> int:
        """Index of the lowest block that trains (0 for "full"; n_layers for "head": none trains)."""
        return 0 if self.top is None else n_layers - self.top


def parse_strategy(strategy: str | int, n_layers: int) -> Strategy:
    """"head" | "last-k" (or the int k) | "full" -> :class:`Strategy`, checked against the number of layers."""
    if isinstance(strategy, bool):
        raise TypeError("strategy must be 'head', 'last-k' or 'full', not a bool")
    if isinstance(strategy, int):
        k = strategy
    elif strategy == "full":
        return Strategy("full", None)
    elif strategy == "head":
        k = 0
    elif isinstance(strategy, str) and re.fullmatch(r"last-\d+", strategy):
        k = int(strategy.split("-")[1])
    else:
        raise ValueError(f"unknown strategy {strategy!r}: use 'head', 'last-k' (k = 1..{n_layers}) or 'full'")
    if not 0 <= k <= n_layers:
        raise ValueError(f"cannot train the last {k} layers: this encoder has {n_layers} (use k = 0..{n_layers})")
    return Strategy("head" if k == 0 else f"last-{k}", k)


def freeze(model: nn.Module, strategy: str | int) -> Strategy:
    """Set ``requires_grad`` on every parameter of ``model`` (anything with ``.bert``) for ``strategy``.

    Everything outside ``model.bert`` is the head and always trains. Returns the parsed strategy.
    """
    if not hasattr(model, "bert"):
        raise TypeError(f"freeze expects a model with an encoder in .bert (a fine-tuning model), not {type(model).__name__}")
    s = parse_strategy(strategy, num_layers(model.bert))
    for p in model.parameters():
        p.requires_grad_(True)
    if s.top is None:
        uses_pooler = getattr(model, "pooling", None) == "pooler"
        if model.bert.pooler is not None and not uses_pooler:
            model.bert.pooler.requires_grad_(False)
    else:
        freeze_below(model.bert, s.top)
        if getattr(model, "pooling", None) == "pooler" and model.bert.pooler is not None:
            model.bert.pooler.requires_grad_(True)  # the pooler is part of such a head
    return s


def count_parameters(model: nn.Module) -> dict[str, int | float]:
    """Trainable and total parameters (shared tensors counted once) and the trainable share."""
    params = list(model.parameters())  # nn.Module yields each shared tensor once
    trainable = sum(p.numel() for p in params if p.requires_grad)
    total = sum(p.numel() for p in params)
    return {"trainable": trainable, "total": total, "share": trainable / total if total else 0.0}
