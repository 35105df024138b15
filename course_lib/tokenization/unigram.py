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
With ``normalize_whitespace=True`` (the model :func:`train_unigram` learns, from text split at any white
space) a tab, a newline, a non-breaking space and the other characters that SentencePiece's default
``nmt_nfkc`` rule turns into a space (:data:`SPACE_LIKE`) are spaces first; without it the text is taken as
it is, as SentencePiece's ``identity`` rule does.
A character with no piece becomes ``<unk>``, scored 10 below the lowest piece (as in SentencePiece),
and a run of unknown characters is one ``<unk>``.

Training (:func:`train_unigram`) lives in :mod:`.unigram_training`.
"""
from __future__ import annotations

import math
import random
import struct
from collections.abc import Iterator

from .segmentation import Segmentation

WORD_START = "▁"
UNK_PENALTY = 10.0
_FLOAT32 = struct.Struct("f")
NEAR_TIE = 1e-3   # paths closer than this (nats) may swap under float32 rounding: decided with the running total


# the characters SentencePiece's nmt_nfkc normalisation turns into a space (tests/test_tokenization_unigram.py)
SPACE_LIKE = frozenset("\t\n\x0c\r\u00a0\u061c\u1680\u2028\u2029\u202f\u205f\u3000\ufeff"
                       + "".join(map(chr, range(0x2000, 0x200D))) + "\u200e\u200f")
_TO_SPACE = {ord(c): " " for c in SPACE_LIKE}


def normalize_whitespace(text: str) -> str:
    """Every character of :data:`SPACE_LIKE` (tab, newline, no-break and zero-width spaces, …) as a space."""
    return text.translate(_TO_SPACE)


def f32(x: float) -> float:
    """``x`` rounded to float32. SentencePiece keeps its scores and sums the best path in float32; summed in
    float64, two segmentations whose float32 totals differ can tie, and the tie goes the other way ('0 00'
    against SentencePiece's '00 0')."""
    return _FLOAT32.unpack(_FLOAT32.pack(x))[0]


def logsumexp(values: list[float]) -> float:
    m = max(values)
    if m == -math.inf:
        return m
    return m + math.log(sum(math.exp(v - m) for v in values))


class Unigram:
    """Pieces with their scores (log-probabilities). ``pieces``: piece → score, in id order."""

    def __init__(self, pieces: dict[str, float], unk_token: str = "<unk>", unk_penalty: float = UNK_PENALTY,
                 ids: dict[str, int] | None = None, normalize_whitespace: bool = False):
        if not pieces:
            raise ValueError("a unigram model needs at least one piece")
        self.scores = {p: float(s) for p, s in pieces.items() if p and p != unk_token}
        self.unk_token, self.normalize_whitespace = unk_token, normalize_whitespace
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
        """The most probable segmentation; among equal scores the one whose last piece is longest. Scores are
        summed in float32, as SentencePiece sums them, so that near-ties go the same way."""
        if not word:
            return []
        return list(self._cached(word)[0])

    def _cached(self, word: str) -> tuple[list[str], bool]:
        """(pieces, fragile) of ``word`` on its own; fragile: two paths came within NEAR_TIE of each other."""
        hit = self._cache.get(word)
        if hit is None:
            hit = self._viterbi(word, 0.0)
            if len(word) <= 64:
                self._cache[word] = hit
        return hit

    def _viterbi(self, word: str, start: float) -> tuple[list[str], bool]:
        """Viterbi from a running total ``start`` (SentencePiece's lattice spans the whole text, and float32
        rounding depends on the total so far): (pieces, whether a near-tie occurred)."""
        ends = self.edges(word)
        best, back, fragile = [f32(start)] + [-math.inf] * len(word), [0] * (len(word) + 1), False
        for i in range(1, len(word) + 1):
            runner_up = -math.inf
            for j, _, s in ends[i]:
                total = f32(best[j] + f32(s))
                if total > best[i]:
                    best[i], back[i], runner_up = total, j, best[i]
                elif total > runner_up:
                    runner_up = total
            fragile = fragile or best[i] - runner_up <= NEAR_TIE
        return self._pieces(word, back), fragile

    def _continue(self, total: float, pieces: list[str]) -> float:
        """The running float32 total after ``pieces`` (a run of unknown characters: one edge per character)."""
        for p in pieces:
            for s in ([self.scores[p]] if p in self.scores else [self.unk_score] * len(p)):
                total = f32(total + f32(s))
        return total

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
    def words(self, text: str) -> list[str]:
        """SentencePiece's words: split at spaces, ``▁`` in front of each: 'Mt. Sanitas' → ['▁Mt.', '▁Sanitas']
        (with ``normalize_whitespace``, 'Mt.\tSanitas' too)."""
        if not isinstance(text, str):
            raise TypeError(f"expected a string of text, got {type(text).__name__}")
        if self.normalize_whitespace:
            text = normalize_whitespace(text)
        return [WORD_START + w for w in text.split(" ") if w]

    def encode(self, text: str, alpha: float | None = None, rng: random.Random | int | None = None) -> Segmentation:
        """Viterbi pieces of every word, or (with ``alpha``) sampled ones."""
        words = self.words(text)
        rng = rng if isinstance(rng, random.Random) else random.Random(rng)
        tokens, word_ids = [], []
        total = 0.0
        for w, word in enumerate(words):
            if alpha is None:
                pieces, fragile = self._cached(word)
                if fragile and total != 0.0:   # a near-tie: decide it from the text's running total
                    pieces = self._viterbi(word, total)[0]
                total = self._continue(total, pieces)
            else:
                pieces = self.sample(word, alpha, rng)
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
