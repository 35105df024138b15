"""Unigram language-model tokenization and subword regularization (Kudo 2018; lecture 004).

A unigram LM gives every piece x a probability p(x) and a segmentation x₁…x_k of a word the
probability p(x₁)·…·p(x_k). A word has many segmentations; which one to use?

* :meth:`Unigram.viterbi`: the most probable one, by dynamic programming over the word's lattice
  (``best[i]`` = best log-probability of the first i characters);
* :meth:`Unigram.sample`: one drawn at random with probability ∝ P(x)^α (*subword regularization*:
  a model trained on sampled segmentations sees ``▁un relat ed`` one time and ``▁unrelated`` the
  next). Drawn exactly by forward filtering (sums over all paths, in log space) and backward
  sampling (pick the last piece given the sums, then the one before, …); α → 0 makes all
  segmentations equally likely, large α approaches Viterbi;
* :meth:`Unigram.segmentations`: all of them, with their probabilities (short words only; the tests
  compare the sampler's frequencies with these).

Words are cut as SentencePiece cuts them: at spaces only, and each word starts with ``▁`` (the
space belongs to the word), so punctuation stays attached (``▁Canyon.``) until the pieces separate it.
A character with no piece becomes ``<unk>``, scored 10 below the lowest piece (as in SentencePiece),
and a run of unknown characters is one ``<unk>``.

Training (:func:`train_unigram`) lives in :mod:`.unigram_training`.
"""
from __future__ import annotations

import math
import random
from collections.abc import Iterator

from .segmentation import Segmentation

WORD_START = "▁"
UNK_PENALTY = 10.0


def logsumexp(values: list[float]) -> float:
    m = max(values)
    if m == -math.inf:
        return m
    return m + math.log(sum(math.exp(v - m) for v in values))


class Unigram:
    """Pieces with their scores (log-probabilities). ``pieces``: piece → score, in id order."""

    def __init__(self, pieces: dict[str, float], unk_token: str = "<unk>", unk_penalty: float = UNK_PENALTY,
                 ids: dict[str, int] | None = None):
        if not pieces:
            raise ValueError("a unigram model needs at least one piece")
        self.scores = {p: float(s) for p, s in pieces.items() if p and p != unk_token}
        self.unk_token = unk_token
        self.unk_score = min(self.scores.values()) - unk_penalty
        self.max_len = max(len(p) for p in self.scores)
        self.ids = dict(ids) if ids is not None else {unk_token: 0, **{p: i + 1 for i, p in enumerate(self.scores)}}
        if unk_token not in self.ids:
            raise ValueError(f"the unknown token {unk_token!r} has no id")
        self._cache: dict[str, list[str]] = {}

    def __len__(self) -> int:
        return len(self.scores)

    # ----------------------------------------------------------------- the lattice of one word
    def edges(self, word: str) -> list[list[tuple[int, str, float]]]:
        """edges[i]: every (start j, piece, score) whose piece is word[j:i]; starts ascending.

        A character no piece starts with gets an <unk> edge of length one, so every word has a path.
        """
        n = len(word)
        ends: list[list[tuple[int, str, float]]] = [[] for _ in range(n + 1)]
        for j in range(n):
            single = False
            for i in range(j + 1, min(n, j + self.max_len) + 1):
                s = self.scores.get(word[j:i])
                if s is not None:
                    ends[i].append((j, word[j:i], s))
                    single = single or i == j + 1
            if not single:
                ends[j + 1].append((j, self.unk_token, self.unk_score))
        for e in ends:
            e.sort(key=lambda t: t[0])
        return ends

    def viterbi(self, word: str) -> list[str]:
        """The most probable segmentation; among equal scores the one whose last piece is longest."""
        if not word:
            return []
        if word in self._cache:
            return list(self._cache[word])
        ends = self.edges(word)
        best, back = [0.0] + [-math.inf] * len(word), [0] * (len(word) + 1)
        for i in range(1, len(word) + 1):
            for j, _, s in ends[i]:
                if best[j] + s > best[i]:
                    best[i], back[i] = best[j] + s, j
        pieces = self._pieces(word, back)
        if len(word) <= 64:
            self._cache[word] = pieces
        return list(pieces)

    def _pieces(self, word: str, back: list[int]) -> list[str]:
        cuts, i = [], len(word)
        while i > 0:
            cuts.append((back[i], i))
            i = back[i]
        pieces, unknown = [], ""
        for j, i in reversed(cuts):
            if word[j:i] in self.scores:
                if unknown:
                    pieces.append(unknown)
                    unknown = ""
                pieces.append(word[j:i])
            else:
                unknown += word[j:i]  # a run of unknown characters is one <unk>, shown as its text
        return pieces + [unknown] if unknown else pieces

    def forward(self, word: str, alpha: float = 1.0) -> list[float]:
        """Forward filtering: F[i] = log Σ over segmentations x of word[:i] of P(x)^α."""
        ends = self.edges(word)
        F = [0.0] + [-math.inf] * len(word)
        for i in range(1, len(word) + 1):
            F[i] = logsumexp([F[j] + alpha * s for j, _, s in ends[i]])
        return F

    def sample(self, word: str, alpha: float = 0.1, rng: random.Random | int | None = None) -> list[str]:
        """Draw a segmentation with probability ∝ P(x)^α: forward filtering, then backward sampling."""
        if alpha < 0:
            raise ValueError(f"alpha must be 0 or more, got {alpha}")
        rng = rng if isinstance(rng, random.Random) else random.Random(rng)
        if not word:
            return []
        ends, F = self.edges(word), self.forward(word, alpha)
        back, i = [0] * (len(word) + 1), len(word)
        while i > 0:  # the last piece ending at i, chosen with probability F[j]·p(piece)^α / F[i]
            weights = [math.exp(F[j] + alpha * s - F[i]) for j, _, s in ends[i]]
            j = rng.choices([e[0] for e in ends[i]], weights=weights)[0]
            back[i], i = j, j
        return self._pieces(word, back)

    def segmentations(self, word: str, alpha: float = 1.0, max_chars: int = 20) -> dict[tuple[str, ...], float]:
        """Every segmentation of a short word and its probability P(x)^α / Σ P(x')^α (exact enumeration)."""
        if len(word) > max_chars:
            raise ValueError(f"{word!r} has {len(word)} characters: enumerating every segmentation is only done "
                             f"for words of at most {max_chars}")
        ends = self.edges(word)

        def paths(i: int) -> Iterator[tuple[list[int], float]]:
            if i == 0:
                yield [0], 0.0
                return
            for j, _, s in ends[i]:
                for cuts, total in paths(j):
                    yield cuts + [i], total + s

        scored = [(tuple(self._pieces(word, _back(cuts))), alpha * total) for cuts, total in paths(len(word))]
        z = logsumexp([t for _, t in scored])
        probs: dict[tuple[str, ...], float] = {}
        for pieces, t in scored:
            probs[pieces] = probs.get(pieces, 0.0) + math.exp(t - z)
        return probs

    # ----------------------------------------------------------------- text
    @staticmethod
    def words(text: str) -> list[str]:
        """SentencePiece's words: split at spaces, ``▁`` in front of each: 'Mt. Sanitas' → ['▁Mt.', '▁Sanitas']."""
        if not isinstance(text, str):
            raise TypeError(f"expected a string of text, got {type(text).__name__}")
        return [WORD_START + w for w in text.split(" ") if w]

    def encode(self, text: str, alpha: float | None = None, rng: random.Random | int | None = None) -> Segmentation:
        """Viterbi pieces of every word, or (with ``alpha``) sampled ones."""
        words = self.words(text)
        rng = rng if isinstance(rng, random.Random) else random.Random(rng)
        tokens, word_ids = [], []
        for w, word in enumerate(words):
            pieces = self.viterbi(word) if alpha is None else self.sample(word, alpha, rng)
            tokens += pieces
            word_ids += [w] * len(pieces)
        return Segmentation(tokens, [self.ids.get(t, self.ids[self.unk_token]) for t in tokens], word_ids, words)

    def tokenize(self, text: str) -> list[str]:
        return self.encode(text).tokens


def _back(cuts: list[int]) -> list[int]:
    """Cut positions [0, 3, 7] → back pointers (back[7] = 3, back[3] = 0)."""
    back = [0] * (cuts[-1] + 1)
    for j, i in zip(cuts, cuts[1:]):
        back[i] = j
    return back
