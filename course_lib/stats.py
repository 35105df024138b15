"""How sure is a gap? A paired bootstrap for two systems scored on the same items.

When two taggers, two layers or two ways of scoring are measured on the same sentences (words, pairs), the items
decide both numbers: a hard sentence is hard for both. Resampling the *items* with replacement and scoring both
systems on each draw keeps that pairing, so what both get right (or wrong) together cancels out of the
difference; the spread of the resampled differences says how much of a gap another sample like this one would
keep (Efron & Tibshirani, 1993; Berg-Kirkpatrick et al., 2012, on significance in NLP).

    gap = paired_bootstrap(lambda idx: f1(a[idx]) - f1(b[idx]), n=len(a))   # any score of a sample of items
    gap = mean_gap(acc_a, acc_b)   # a mean of per-item scores: the same, at once
    gap.low, gap.high          # a 95% interval for the difference
    str(gap)                   # "+0.034, 95% interval [+0.006, +0.062]"

``groups`` resamples whole groups (all the pairs of one word, all the sentences of one document) when the items
within a group are not independent of each other.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Gap:
    """The difference on the items as they are, and its bootstrap distribution's 2.5th and 97.5th percentiles."""

    difference: float
    low: float
    high: float
    a_better: float    # the share of resamples in which the difference is above 0
    n: int             # items (or groups) resampled
    resamples: int

    @property
    def clear(self) -> bool:
        """The 95% interval leaves out 0: the gap's sign would likely hold on another sample."""
        return self.low > 0 or self.high < 0

    def __str__(self) -> str:
        return f"{self.difference:+.3f}, 95% interval [{self.low:+.3f}, {self.high:+.3f}]"


def bootstrap_indices(n: int, resamples: int = 2000, seed: int = 0, groups: Sequence | None = None):
    """The items of each resample: ``resamples`` arrays of item indices, drawn with replacement.

    Without ``groups``, each holds n indices: the rows of one (resamples, n) array. With ``groups`` (one label per item), as many groups as there
    are are drawn with replacement and each array holds every item of the groups drawn.
    """
    if n < 2:
        raise ValueError(f"a bootstrap needs at least 2 items, not {n}")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, not {resamples}")
    rng = np.random.default_rng(seed)
    if groups is None:
        return rng.integers(0, n, size=(resamples, n))
    groups = list(groups)
    if len(groups) != n:
        raise ValueError(f"{len(groups)} group labels for {n} items")
    labels = sorted(set(groups), key=groups.index)
    if len(labels) < 2:
        raise ValueError("a bootstrap over groups needs at least 2 groups")
    members = {g: [] for g in labels}
    for i, g in enumerate(groups):
        members[g].append(i)
    members = [np.array(members[g]) for g in labels]
    return [np.concatenate([members[k] for k in draw]) for draw in rng.integers(0, len(labels), size=(resamples, len(labels)))]


def paired_bootstrap(difference: Callable[[np.ndarray], float], n: int, *, resamples: int = 2000, seed: int = 0,
                     groups: Sequence | None = None, batched: bool = False) -> Gap:
    """``difference(idx)``: system a's score minus system b's on the items ``idx`` (an index array, with repeats).

    It is called once on all the items, then once per resample; both systems must be scored on the same ``idx``.
    ``batched=True`` (without groups) calls it once with all the resamples as the rows of a (resamples, n) array
    instead, and it returns one difference per row: the same numbers, computed at once.
    """
    draws = bootstrap_indices(n, resamples, seed, groups)
    if batched:
        if groups is not None:
            raise ValueError("batched resamples need items, not groups (a group draw's size varies)")
        diffs = np.asarray(difference(draws), dtype=float).reshape(-1)
        whole = np.asarray(difference(np.arange(n)[None]), dtype=float).reshape(-1)[0]
        return paired_bootstrap_from(diffs, float(whole), n)
    diffs = np.array([float(difference(idx)) for idx in draws])
    return paired_bootstrap_from(diffs, float(difference(np.arange(n))), len(set(groups)) if groups is not None else n)


def mean_gap(a, b=None, *, resamples: int = 2000, seed: int = 0, groups: Sequence | None = None) -> Gap:
    """The mean over the items of ``a - b`` (of ``a`` alone when ``b`` is None: per-item changes, say), with its
    paired bootstrap interval: two systems' per-item scores (1/0 for right/wrong, a recall, a cosine)."""
    a = np.asarray(a, dtype=float)
    if b is not None and np.shape(b) != a.shape:
        raise ValueError(f"a and b must score the same items: shapes {a.shape} and {np.shape(b)}")
    d = a - (0.0 if b is None else np.asarray(b, dtype=float))
    if d.ndim != 1:
        raise ValueError(f"one score per item is needed, not an array of shape {d.shape}")
    return paired_bootstrap(lambda idx: d[idx].mean(-1), len(d), resamples=resamples, seed=seed, groups=groups,
                            batched=groups is None)


def paired_bootstrap_from(diffs: np.ndarray, difference: float, n: int) -> Gap:
    """The :class:`Gap` of resampled differences ``diffs`` around the difference on all ``n`` items."""
    if not np.isfinite(diffs).all():
        raise ValueError("the difference is not finite on some resamples (a score of an empty or constant draw?)")
    low, high = np.percentile(diffs, [2.5, 97.5])
    return Gap(difference, float(low), float(high), float((diffs > 0).mean()), n, len(diffs))


def spearman(x, y):
    """Spearman's rank correlation (ties share their mean rank), as scipy.stats.spearmanr: a float for two
    vectors, or one per row for two (R, n) arrays (the rows of a batched bootstrap)."""
    return pearson(average_ranks(x), average_ranks(y))


def pearson(x, y):
    """Pearson's correlation of two vectors (a float), or of two (R, n) arrays row by row."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    rx, ry = x - x.mean(-1, keepdims=True), y - y.mean(-1, keepdims=True)
    denom = np.sqrt((rx * rx).sum(-1) * (ry * ry).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where(denom > 0, (rx * ry).sum(-1) / np.where(denom > 0, denom, 1), np.nan)
    return float(rho) if rho.ndim == 0 else rho


def average_ranks(a: np.ndarray) -> np.ndarray:
    """Ranks 1 … n along the last axis, tied values sharing the mean of their ranks (scipy's rankdata, method
    'average'), for all the rows of a 2-D array at once."""
    a = np.asarray(a, dtype=float)
    n = a.shape[-1]
    order = np.argsort(a, axis=-1, kind="stable")
    ordered = np.take_along_axis(a, order, -1)
    starts = np.ones(a.shape, dtype=bool)
    starts[..., 1:] = ordered[..., 1:] != ordered[..., :-1]          # a tie group begins here
    ends = np.ones(a.shape, dtype=bool)
    ends[..., :-1] = starts[..., 1:]                                   # ... and ends here
    pos = np.broadcast_to(np.arange(n), a.shape)
    first = np.maximum.accumulate(np.where(starts, pos, 0), axis=-1)
    last = np.flip(np.minimum.accumulate(np.flip(np.where(ends, pos, n), -1), axis=-1), -1)
    ranks = np.empty(a.shape)
    np.put_along_axis(ranks, order, (first + last) / 2 + 1, -1)
    return ranks


def ranks_of_draws(x, draws) -> np.ndarray:
    """``average_ranks(x[draws])`` for a (R, n) array of bootstrap draws, without sorting each row: the values of
    ``x`` are sorted once, and a row's ranks follow from how many times it drew each value (the items before a
    value, plus the middle of its own copies: ties share their mean rank). The same numbers, exactly."""
    x, draws = np.asarray(x, dtype=float), np.asarray(draws)
    if draws.ndim != 2 or np.isnan(x).any():  # NaN never ties with itself: leave it to the sort
        return average_ranks(x[draws])
    values, group = np.unique(x, return_inverse=True)  # group: the rank of each item's value among the values
    g = group.reshape(-1)[draws]                         # (R, n)
    rows, k = len(g), len(values)
    counts = np.bincount((g + k * np.arange(rows)[:, None]).ravel(), minlength=rows * k).reshape(rows, k)
    rank = np.cumsum(counts, axis=1) - counts + (counts + 1) / 2
    return np.take_along_axis(rank, g, axis=1)


def auc(labels, scores) -> float:
    """The area under the ROC curve: the chance that a positive item scores above a negative one, ties counting
    half (sklearn's ``roc_auc_score`` for two classes), from the rank sum of the positives (Mann-Whitney U)."""
    labels, scores = np.asarray(labels, dtype=bool).reshape(-1), np.asarray(scores, dtype=float).reshape(-1)
    if labels.shape != scores.shape:
        raise ValueError(f"one label per score: {labels.size} labels, {scores.size} scores")
    pos = int(labels.sum())
    neg = labels.size - pos
    if pos == 0 or neg == 0:
        raise ValueError("the AUC needs both positive and negative items")
    return float((average_ranks(scores)[labels].sum() - pos * (pos + 1) / 2) / (pos * neg))
