"""Word-sense disambiguation by nearest sense centroid, eq. 11.8-11.9 (SLP3 §11.3.1).

    wsd = NearestSenseWSD().fit(X_train, data.train)     # v_s = mean of the sense's instances (eq. 11.8)
    wsd.predict(X_test, lemmas)                          # argmax_s cos(t, v_s) over the lemma's senses (eq. 11.9)
    wsd_by_layer(...)                                    # accuracy at every layer, with the most-frequent-sense baseline
    leave_one_out(X_train, data.train)                   # on the training sentences alone: each one's cosine to its
                                                         # own sense's centroid computed without it, and right or not
    choose_layer(train_states, data.train)               # the layer choice a test set never saw: best leave-one-out
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .layers import ScalarMix, combine_layers
from .senses import SenseData, SenseExample


def cosine_matrix(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """(n, d) × (m, d) -> (n, m) cosines; a zero vector has cosine 0 with everything."""
    A = torch.nn.functional.normalize(A.float(), dim=-1)
    B = torch.nn.functional.normalize(B.float(), dim=-1)
    return A @ B.T


def sense_centroids(vectors: torch.Tensor, labels: Sequence[str]) -> tuple[list[str], torch.Tensor]:
    """Eq. 11.8: v_s = mean of the vectors of sense s. Returns (senses in first-seen order, (S, d))."""
    if len(labels) != len(vectors):
        raise ValueError(f"{len(vectors)} vectors but {len(labels)} labels")
    senses = list(dict.fromkeys(labels))
    lab = np.asarray(labels, dtype=object)
    return senses, torch.stack([vectors[torch.from_numpy(lab == s)].mean(0) for s in senses])


@dataclass
class SenseScore:
    sense: str
    cosine: float


class NearestSenseWSD:
    """1-nearest-centroid WSD (eq. 11.8-11.9), each word choosing only among its own senses.

    ``fit(vectors, examples)`` averages the vectors of each sense; ``predict`` takes the
    sense whose centroid has the highest cosine. A lemma without training examples gets
    its most frequent sense from ``fallback`` (e.g. WordNet's first sense), if given.
    """

    def __init__(self, fallback: dict[str, str] | None = None):
        self.fallback = dict(fallback or {})
        self.centroids: dict[str, tuple[list[str], torch.Tensor]] = {}
        self.sense_counts: dict[str, Counter] = {}

    def fit(self, vectors: torch.Tensor, examples: Sequence[SenseExample]) -> "NearestSenseWSD":
        if len(vectors) != len(examples):
            raise ValueError(f"{len(vectors)} vectors but {len(examples)} examples")
        by_lemma: dict[str, list[int]] = {}
        for i, e in enumerate(examples):
            by_lemma.setdefault(e.lemma, []).append(i)
        for lemma, idx in by_lemma.items():
            labels = [examples[i].sense for i in idx]
            self.centroids[lemma] = sense_centroids(vectors[idx], labels)
            self.sense_counts[lemma] = Counter(labels)
        return self

    def most_frequent_sense(self, lemma: str) -> str:
        if lemma in self.sense_counts:
            return self.sense_counts[lemma].most_common(1)[0][0]
        if lemma in self.fallback:
            return self.fallback[lemma]
        raise KeyError(f"no training examples and no fallback sense for {lemma!r}; "
                       f"known words: {', '.join(sorted(self.centroids))}")

    def scores(self, vector: torch.Tensor, lemma: str) -> list[SenseScore]:
        """Cosine of one vector to every sense centroid of ``lemma``, best first."""
        if lemma not in self.centroids:
            raise KeyError(f"no sense centroids for {lemma!r}; known words: {', '.join(sorted(self.centroids))}")
        senses, C = self.centroids[lemma]
        cos = cosine_matrix(vector[None], C)[0]
        return sorted((SenseScore(s, float(c)) for s, c in zip(senses, cos)), key=lambda s: -s.cosine)

    def predict(self, vectors: torch.Tensor, lemmas: Sequence[str]) -> list[str]:
        if len(vectors) != len(lemmas):
            raise ValueError(f"{len(vectors)} vectors but {len(lemmas)} lemmas")
        return [self.scores(v, l)[0].sense if l in self.centroids else self.most_frequent_sense(l)
                for v, l in zip(vectors, lemmas)]

    def predict_mfs(self, lemmas: Sequence[str]) -> list[str]:
        """The most-frequent-sense baseline: each lemma's most common training sense, whatever the context."""
        return [self.most_frequent_sense(l) for l in lemmas]


def accuracy(predicted: Sequence[str], gold: Sequence[str]) -> float:
    if len(predicted) != len(gold) or not gold:
        raise ValueError(f"{len(predicted)} predictions for {len(gold)} gold labels")
    return sum(p == g for p, g in zip(predicted, gold)) / len(gold)


@dataclass
class WSDResult:
    layers: object
    accuracy: float
    mfs_accuracy: float
    correct: tuple[bool, ...] = ()      # per test example: right or not (for paired comparisons of layers)
    mfs_correct: tuple[bool, ...] = ()


def wsd_by_layer(train_states, train, test_states, test, layer_choices=None) -> list[WSDResult]:
    """1-NN test accuracy for each layer choice (default: every layer, then last4_mean), beside MFS."""
    n = train_states.size(1)
    choices = list(range(n)) + ["last4_mean"] if layer_choices is None else list(layer_choices)
    gold, lemmas = [e.sense for e in test], [e.lemma for e in test]
    out = []
    for layers in choices:
        wsd = NearestSenseWSD().fit(combine_layers(train_states, layers), train)
        pred = wsd.predict(combine_layers(test_states, layers), lemmas)
        mfs = wsd.predict_mfs(lemmas)
        out.append(WSDResult(layers, accuracy(pred, gold), accuracy(mfs, gold), tuple(p == g for p, g in zip(pred, gold)),
                             tuple(p == g for p, g in zip(mfs, gold))))
    return out


def _groups(examples: Sequence[SenseExample]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for i, e in enumerate(examples):
        groups.setdefault(e.lemma, []).append(i)
    return groups


def leave_one_out(vectors: torch.Tensor, examples: Sequence[SenseExample]) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 11.8-11.9 on the training sentences alone, each sentence left out of its own sense's centroid.

    Returns (N,) cosines of each sentence to its own sense's centroid without it (what a new sentence of that sense
    reaches; NaN for a sense seen once) and (N,) booleans: is that sense the nearest among its word's senses?
    """
    if len(vectors) != len(examples):
        raise ValueError(f"{len(vectors)} vectors but {len(examples)} examples")
    own, right = torch.full((len(examples),), float("nan"), dtype=torch.float64), torch.zeros(len(examples), dtype=torch.bool)
    for idx in _groups(examples).values():
        senses = list(dict.fromkeys(examples[i].sense for i in idx))
        V = vectors[idx].double()
        lab = torch.tensor([senses.index(examples[i].sense) for i in idx])
        sums = torch.zeros(len(senses), V.size(1), dtype=torch.float64).index_add_(0, lab, V)
        counts = torch.bincount(lab, minlength=len(senses)).double()
        cos = cosine_matrix(V, sums / counts[:, None]).double()               # (n, S) to the full centroids
        rows = torch.arange(len(idx))
        without = cosine_matrix(V, sums[lab] - V).double()[rows, rows]        # to its own centroid without it
        cos[rows, lab] = torch.where(counts[lab] > 1, without, torch.tensor(float("-inf"), dtype=torch.float64))
        own[idx] = torch.where(counts[lab] > 1, without, torch.tensor(float("nan"), dtype=torch.float64))
        right[idx] = cos.argmax(1) == lab
    return own, right


def choose_layer(train_states: torch.Tensor, train: Sequence[SenseExample], layer_choices=None) -> dict:
    """{layer choice: leave-one-out accuracy on the training sentences}, best first: a choice made without the test
    sentences, so that their accuracy (and a bootstrap over them) is not read after choosing on them."""
    choices = list(range(train_states.size(1))) if layer_choices is None else list(layer_choices)
    acc = {c: float(leave_one_out(combine_layers(train_states, c), train)[1].double().mean()) for c in choices}
    return dict(sorted(acc.items(), key=lambda kv: -kv[1]))


def fit_scalar_mix(states: torch.Tensor, examples: Sequence[SenseExample], *, steps: int = 200, lr: float = 0.1,
                   temperature: float = 0.05, seed: int = 0) -> ScalarMix:
    """Learn ELMo-style layer weights for WSD: softmax over cosines to the (mixed) sense centroids of each lemma."""
    torch.manual_seed(seed)
    mix = ScalarMix(states.size(1))
    opt = torch.optim.Adam(mix.parameters(), lr=lr)
    groups = {}
    for i, e in enumerate(examples):
        groups.setdefault(e.lemma, []).append(i)
    groups = {l: (idx, [examples[i].sense for i in idx]) for l, idx in groups.items()}
    for _ in range(steps):
        loss = 0.0
        X = mix(states)
        for idx, labels in groups.values():
            senses, C = sense_centroids(X[idx], labels)
            target = torch.tensor([senses.index(s) for s in labels])
            loss = loss + nn.functional.cross_entropy(cosine_matrix(X[idx], C) / temperature, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return mix.eval()


FLOOR_QUANTILE = 0.05  # the widget's reference: the cosine that all but 5% of the training sentences reach


def typical_floor(vectors: torch.Tensor, examples: Sequence[SenseExample], q: float = FLOOR_QUANTILE) -> float:
    """The q-quantile of the training sentences' cosine to their own sense's centroid (each left out of it): a use
    whose best cosine is below it is less like its nearest sense than 1 - q of the sentences of a sense are."""
    own = leave_one_out(vectors, examples)[0]
    return float(torch.quantile(own[~own.isnan()], q))


@dataclass
class Neighbour:
    example: SenseExample
    cosine: float


@dataclass
class WSDReadout:
    lemma: str
    senses: list[str]
    glosses: list[str]
    cosines: list[float]        # to each sense centroid, in the order of ``senses`` (best first)
    predicted: str
    neighbours: list[Neighbour]  # the nearest training sentences of this lemma
    floor: float | None = None   # typical_floor of the training sentences, if known

    @property
    def below_floor(self) -> bool:
        """Is even the best cosine lower than nearly every training sentence's to its own sense?"""
        return self.floor is not None and self.cosines[0] < self.floor

    def note(self) -> str:
        """What the height of the best bar says: "" when it is in the usual range, else that no sense may fit."""
        if not self.below_floor:
            return ""
        return (f"no sense may fit: the best cosine, {self.cosines[0]:.3f}, is below {self.floor:.3f}, which "
                f"{1 - FLOOR_QUANTILE:.0%} of the training sentences reach with their own sense's centroid; the "
                f"senses listed for '{self.lemma}' may lack this use")


def wsd_readout(wsd: NearestSenseWSD, data: SenseData, train_examples: list[SenseExample], train_vectors: torch.Tensor,
                vector: torch.Tensor, lemma: str, k: int = 3, floor: float | None = None) -> WSDReadout:
    """Cosine of ``vector`` to each sense centroid of ``lemma`` (eq. 11.9) and its k nearest training sentences."""
    scores = wsd.scores(vector, lemma)
    idx = [i for i, e in enumerate(train_examples) if e.lemma == lemma]
    cos = cosine_matrix(vector[None], train_vectors[idx])[0]
    top = cos.argsort(descending=True)[:k].tolist()
    return WSDReadout(lemma, [s.sense for s in scores], [data.senses[s.sense].gloss for s in scores],
                      [s.cosine for s in scores], scores[0].sense,
                      [Neighbour(train_examples[idx[t]], float(cos[t])) for t in top], floor)
