"""Word similarity (SLP3 §11.3.2): against human judgments (WordSim-353 and SimLex-999 from gensim's test data,
Spearman ρ of model cosines, raw or z-scored), and of the same word in two contexts (same sense or not); the Lee
corpus as running text.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import torch

from ..paths import gensim_test_data
from ..stats import spearman  # Spearman's rho, ties ranked as scipy ranks them
from .geometry import ZScorer

SIMILARITY_FILES = {"wordsim353": "wordsim353.tsv", "simlex999": "simlex999.txt"}


def similarity_pairs(name: str) -> list[tuple[str, str, float]]:
    """(word1, word2, human score) of ``"wordsim353"`` or ``"simlex999"``, as shipped with gensim."""
    if name not in SIMILARITY_FILES:
        raise ValueError(f"unknown similarity set {name!r}; choose {', '.join(SIMILARITY_FILES)}")
    pairs = []
    for line in gensim_test_data(SIMILARITY_FILES[name]).read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        a, b, s = line.split("\t")[:3]
        pairs.append((a.lower(), b.lower(), float(s)))
    return pairs


def lee_corpus(max_docs: int | None = None) -> list[str]:
    """Sentences of the Lee background news corpus (gensim test data), for fitting z-scoring and anisotropy."""
    text = gensim_test_data("lee_background.cor").read_text(encoding="utf-8", errors="replace")
    docs = [d.strip() for d in text.splitlines() if d.strip()][:max_docs]
    return [s for d in docs for s in re.split(r"(?<=[.!?])\s+(?=[A-Z\"'])", d) if len(s.split()) >= 4]


def similarity_correlation(word_vectors: dict[str, torch.Tensor], pairs, zscorer: ZScorer | None = None) -> float:
    """Spearman ρ between cosine(word1, word2) and the human scores (raw, or after ``zscorer``)."""
    cos, human = [], []
    for a, b, s in pairs:
        u, v = word_vectors[a], word_vectors[b]
        if zscorer is not None:
            u, v = zscorer(u[None])[0], zscorer(v[None])[0]
        cos.append(float(torch.nn.functional.cosine_similarity(u.float(), v.float(), dim=0)))
        human.append(s)
    return spearman(cos, human)



def similarity_by_layer(word_states: torch.Tensor, words, pairs, zscorers=None) -> list[float]:
    """Spearman ρ at every layer of (n, L+1, d) ``word_states`` (row i = ``words[i]``), raw, or z-scored with
    ``zscorers[layer]`` (e.g. :attr:`LayerGeometry.zscorers`, fitted on corpus tokens). Pairs with a word not
    in ``words`` are an error, not skipped."""
    cosines, human = word_pair_cosines(word_states, words, pairs, zscorers)
    return [spearman(cos, human) for cos in cosines]


def word_pair_cosines(word_states: torch.Tensor, words, pairs, zscorers=None) -> tuple[list[np.ndarray], np.ndarray]:
    """The cosine of every pair at every layer (raw or z-scored, as in :func:`similarity_by_layer`), and the human
    scores."""
    index = {w: i for i, w in enumerate(words)}
    missing = sorted({w for a, b, _ in pairs for w in (a, b) if w not in index})
    if missing:
        raise KeyError(f"no vectors for {len(missing)} word(s) of the pairs: {', '.join(missing[:5])}")
    a = torch.tensor([index[p[0]] for p in pairs])
    b = torch.tensor([index[p[1]] for p in pairs])
    out = []
    for layer in range(word_states.size(1)):
        X = word_states[:, layer]
        if zscorers is not None:
            X = zscorers[layer](X)
        out.append(torch.nn.functional.cosine_similarity(X[a].double(), X[b].double(), dim=-1).numpy())
    return out, np.array([p[2] for p in pairs], dtype=float)


def zscoring_gain_by_layer(word_states: torch.Tensor, words, pairs, zscorers, *, resamples: int = 2000,
                           seed: int = 0) -> list:
    """What z-scoring changes Spearman's rho by at every layer, with a paired bootstrap over the pairs
    (:func:`course_lib.stats.paired_bootstrap`: raw and z-scored rho on the same resampled pairs): one
    :class:`~course_lib.stats.Gap` per layer, z-scored minus raw."""
    from ..stats import bootstrap_indices, paired_bootstrap_from, pearson, ranks_of_draws

    raw, human = word_pair_cosines(word_states, words, pairs)
    z, _ = word_pair_cosines(word_states, words, pairs, zscorers)
    n = len(human)
    # paired_bootstrap(batched=True)'s resamples, shared by every layer: the human scores are ranked once per draw
    draws, whole = bootstrap_indices(n, resamples, seed), np.arange(n)[None]
    h, h_whole = ranks_of_draws(human, draws), ranks_of_draws(human, whole)

    def gain(i, hi, r, q):  # Spearman's rho of the z-scored cosines minus that of the raw ones, on pairs i
        return pearson(ranks_of_draws(q, i), hi) - pearson(ranks_of_draws(r, i), hi)

    return [paired_bootstrap_from(gain(draws, h, r, q), float(gain(whole, h_whole, r, q)[0]), n)
            for r, q in zip(raw, z)]


# ----------------------------------------------------------------------------- the same word in two contexts

@dataclass
class InContext:
    """One layer's similarity of two instances of the same word: mean cosine of the pairs in the same sense and in
    different senses, and the AUC: the chance that a same-sense pair of a word has the higher cosine than a
    different-sense pair *of the same word* (ties half), over every such comparison of every word. ``auc_pooled``
    lets a pair of one word meet a pair of another, so it also rewards words whose instances are all alike.
    ``word_auc`` and ``word_weight``: each word's own AUC and its number of comparisons (``auc`` is their
    weighted mean, so a word with more senses and sentences weighs more), for a bootstrap over the words
    (:func:`auc_change`)."""

    same: float
    different: float
    auc: float
    auc_pooled: float
    word_auc: np.ndarray = field(repr=False, compare=False, default=None)
    word_weight: np.ndarray = field(repr=False, compare=False, default=None)


def auc_change(before: InContext, after: InContext, *, resamples: int = 2000, seed: int = 0):
    """How much ``after`` (z-scored, say) moves the AUC of ``before`` on the same pairs, with a 95% interval from
    a paired bootstrap over the *words* (the pairs of one word are not independent of each other): a
    :class:`course_lib.stats.Gap`."""
    from ..stats import paired_bootstrap

    w, a, b = before.word_weight, after.word_auc, before.word_auc
    if w is None or after.word_weight is None or not np.array_equal(w, after.word_weight):
        raise ValueError("the two results must come from the same pairs (in_context_similarity of one set of examples)")
    return paired_bootstrap(lambda idx: (w[idx] * (a[idx] - b[idx])).sum(-1) / w[idx].sum(-1), len(w),
                            resamples=resamples, seed=seed, batched=True)


def same_word_pairs(examples) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(i, j, same sense) for every pair i < j of ``examples`` (:class:`.senses.SenseExample`) of the same lemma."""
    lemmas = [e.lemma for e in examples]
    if len(lemmas) < 2:
        raise ValueError(f"need at least 2 examples to make a pair, got {len(lemmas)}")
    ids = {x: k for k, x in enumerate(dict.fromkeys(lemmas))}
    senses = {x: k for k, x in enumerate(dict.fromkeys(e.sense for e in examples))}
    lem = torch.tensor([ids[x] for x in lemmas])
    sen = torch.tensor([senses[e.sense] for e in examples])
    i, j = torch.triu_indices(len(lemmas), len(lemmas), 1)
    keep = lem[i] == lem[j]
    i, j = i[keep], j[keep]
    return i, j, sen[i] == sen[j]


def in_context_similarity(states: torch.Tensor, examples, zscorers=None) -> list[InContext]:
    """Per layer of (N, L+1, d) ``states`` (row k = ``examples[k]``'s target word): how much more similar two
    instances of a word are in the same sense than in different senses (SLP3 §11.3.2), raw or z-scored."""
    from ..stats import auc

    if states.dim() != 3 or len(states) != len(examples):
        raise ValueError(f"need (N, L+1, d) states, one row per example ({len(examples)}), got {tuple(states.shape)}")
    i, j, same = same_word_pairs(examples)
    if same.all() or not same.any():
        raise ValueError("the pairs must include both same-sense and different-sense pairs")
    ids = {x: k for k, x in enumerate(dict.fromkeys(e.lemma for e in examples))}
    lemma = np.array([ids[e.lemma] for e in examples])[i.numpy()]  # the word of each pair
    same = same.numpy()
    pairs = [np.flatnonzero(lemma == w) for w in np.unique(lemma)]    # each word's pairs
    words = [p for p in pairs if 0 < same[p].sum() < len(p)]
    if not words:
        raise ValueError("no word has both a same-sense and a different-sense pair: there is nothing to compare")
    weight = np.array([float(same[p].sum() * (~same[p]).sum()) for p in words])
    out = []
    for layer in range(states.size(1)):
        X = states[:, layer]
        if zscorers is not None:
            X = zscorers[layer](X)
        X = torch.nn.functional.normalize(X.double(), dim=-1)
        cos = (X @ X.T)[i, j].numpy()  # N x N (2,214² doubles: 39 MB), not a (pairs, d) copy of each side (0.26 GB each)
        within = np.array([auc(same[p], cos[p]) for p in words])
        out.append(InContext(float(cos[same].mean()), float(cos[~same].mean()),
                             float((within * weight).sum() / weight.sum()), auc(same, cos), within, weight))
    return out
