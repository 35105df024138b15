"""Training a unigram LM tokenizer (Kudo 2018; lecture 004, "Training the unigram model").

1. **Seed vocabulary**: far too many pieces: every character, and the most frequent substrings of
   the words (up to ``max_piece_len`` characters, ranked by frequency × length as SentencePiece does).
2. **EM**: the E-step computes, for every word, the expected number of times each piece is used,
   averaging over *all* segmentations weighted by their probability (forward-backward on the
   word's lattice); the M-step sets p(x) ∝ expected count. Pieces expected less than half a time
   are dropped.
3. **Pruning**: for every piece, the *loss*: how much the corpus log-likelihood would drop if the
   piece were removed and each of its uses were spelt with the best segmentation of the piece
   from the remaining pieces: loss(x) = count(x) · (log p(x) − log p(best spelling of x without x)).
   Keep the ``shrink`` share of pieces with the highest loss (single characters always stay, so
   that every word can still be segmented); back to 2 until the vocabulary has ``vocab_size`` pieces.

All words are handled at once: :class:`Lattices` stores every edge of every word's lattice (a
piece spanning characters j…i of a word) in flat arrays, so forward, backward and Viterbi are a
few numpy operations per character position instead of a Python loop per word.
:meth:`.Unigram.forward` is the same forward pass for one word, written out plainly (the tests
check that both agree).

Simplifications against SentencePiece, said here so that nobody mistakes them for the real thing:
the M-step is plain maximum likelihood (SentencePiece uses a Bayesian variant with a digamma
function), a piece's count in the loss is its expected count (SentencePiece uses its count in the
Viterbi segmentations), and seed pieces are counted by brute force instead of with a suffix array.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .unigram import WORD_START, Unigram


class Lattices:
    """The lattices of many words as flat arrays. Edge k spans word ``word[k]`` from character
    ``start[k]`` to ``end[k]`` (positions are global: word w occupies offset[w] … offset[w] + len(w))."""

    def __init__(self, words: list[str], pieces: list[str], max_len: int, skip_whole_word: bool = False):
        index = {p: k for k, p in enumerate(pieces)}
        self.offset = np.cumsum([0] + [len(w) + 1 for w in words])[:-1]  # one slot per position 0…len(w)
        edges = []  # (word, local start, local end, piece)
        for w, text in enumerate(words):
            n = len(text)
            for j in range(n):
                for i in range(j + 1, min(n, j + max_len) + 1):
                    k = index.get(text[j:i])
                    if k is not None:
                        edges.append((w, j, i, k))
        E = np.array(edges, dtype=np.int64).reshape(-1, 4)
        if skip_whole_word:
            lengths = np.array([len(w) for w in words], dtype=np.int64)
            E = E[~((E[:, 1] == 0) & (E[:, 2] == lengths[E[:, 0]]))]
        self.word, self.local_start, self.local_end, self.piece = E.T
        self.start, self.end = self.offset[self.word] + self.local_start, self.offset[self.word] + self.local_end
        self.first = self.offset                                   # position 0 of each word
        self.last = self.offset + np.array([len(w) for w in words], dtype=np.int64)  # position len(w)
        self.n_positions = int(self.last[-1]) + 1 if words else 0
        self.longest = max((len(w) for w in words), default=0)
        # the edges ending (starting) at each character position, in all words at once
        self.ending = [np.flatnonzero(self.local_end == i) for i in range(self.longest + 1)]
        self.starting = [np.flatnonzero(self.local_start == j) for j in range(self.longest + 1)]

    def forward(self, logp: np.ndarray, op=np.logaddexp) -> np.ndarray:
        """F[pos]: log Σ (``op=np.logaddexp``) or max (``op=np.maximum``) over paths from the word start to pos."""
        F = np.full(self.n_positions, -np.inf)
        F[self.first] = 0.0
        for i in range(1, self.longest + 1):  # every edge ending at character i, in all words at once
            k = self.ending[i]
            op.at(F, self.end[k], F[self.start[k]] + logp[self.piece[k]])
        return F

    def backward(self, logp: np.ndarray) -> np.ndarray:
        """B[pos]: log Σ over paths from pos to the word end."""
        B = np.full(self.n_positions, -np.inf)
        B[self.last] = 0.0
        for j in range(self.longest - 1, -1, -1):
            k = self.starting[j]
            np.logaddexp.at(B, self.start[k], B[self.end[k]] + logp[self.piece[k]])
        return B

    def expected_counts(self, logp: np.ndarray, freqs: np.ndarray) -> tuple[np.ndarray, float]:
        """E-step: expected uses of every piece (each word weighted by its count), and the corpus log-likelihood."""
        F, B = self.forward(logp), self.backward(logp)
        z = F[self.last]                                                     # log P(word), (W,)
        posterior = np.exp(F[self.start] + logp[self.piece] + B[self.end] - z[self.word]) * freqs[self.word]
        return np.bincount(self.piece, weights=posterior, minlength=len(logp)), float(freqs @ z)


@dataclass
class UnigramTraining:
    """The trained model and what happened on the way, one row per E-step: (the vocabulary size it starts from,
    the log-likelihood per word under the probabilities it starts from, i.e. before the step's update)."""

    model: Unigram
    history: list[tuple[int, float]] = field(default_factory=list)


def seed_pieces(words: dict[str, int], seed_size: int, max_piece_len: int) -> dict[str, float]:
    """Every character plus the ``seed_size`` most frequent longer substrings (by frequency × length), with counts."""
    freq: Counter = Counter()
    chars: Counter = Counter()
    for word, f in words.items():
        for ch in word:
            chars[ch] += f
        inner = WORD_START in word[1:]  # rare: then pieces must not cross it
        for j in range(len(word)):
            for i in range(j + 2, min(len(word), j + max_piece_len) + 1):
                if not inner or WORD_START not in word[j + 1:i]:
                    freq[word[j:i]] += f
    ranked = sorted(((f * len(p), p) for p, f in freq.items() if f >= 2), key=lambda t: (-t[0], t[1]))[:seed_size]
    return {**{p: float(freq[p]) for _, p in ranked}, **{c: float(n) for c, n in chars.items()}}


def prune_losses(pieces: list[str], logp: np.ndarray, counts: np.ndarray, max_len: int) -> np.ndarray:
    """loss(x) = count(x) · (log p(x) − best log-probability of spelling x without x); 0 for characters."""
    alternatives = Lattices(pieces, pieces, max_len, skip_whole_word=True)
    best = alternatives.forward(logp, op=np.maximum)[alternatives.last]   # (V,), -inf if x has no other spelling
    loss = counts * (logp - best)
    loss[[len(p) == 1 for p in pieces]] = np.inf
    return loss


def train_unigram(word_counts: dict[str, int], vocab_size: int, seed_size: int | None = None, max_piece_len: int = 12,
                  shrink: float = 0.75, em_steps: int = 2) -> UnigramTraining:
    """Train a unigram LM tokenizer on words (``▁`` is put in front of each, as SentencePiece does). The model
    encodes a tab, a newline or a no-break space as a space (``normalize_whitespace``), as SentencePiece's default
    normalisation does: its words are those of text split at white space."""
    if not 0 < shrink < 1:
        raise ValueError(f"shrink must be between 0 and 1 (the share of pieces kept per round), got {shrink}")
    words: Counter = Counter()
    for w, c in dict(word_counts).items():
        if w and c > 0:
            words[w if w.startswith(WORD_START) else WORD_START + w] += int(c)
    if not words:
        raise ValueError("no words to learn from: the corpus is empty")
    n_chars = len({ch for w in words for ch in w})
    if vocab_size < n_chars:
        raise ValueError(f"vocab_size {vocab_size} is smaller than the {n_chars} characters of the corpus, "
                         "which must all stay in the vocabulary")
    seed = seed_pieces(words, seed_size or 8 * vocab_size, max_piece_len)
    pieces = list(seed)
    lattices = Lattices(list(words), pieces, max_piece_len)
    freqs = np.array(list(words.values()), dtype=np.float64)
    counts = np.array([seed[p] for p in pieces])
    alive = np.ones(len(pieces), dtype=bool)
    is_char = np.array([len(p) == 1 for p in pieces])
    history: list[tuple[int, float]] = []
    n_words = float(freqs.sum())
    while True:
        for _ in range(em_steps):
            logp = np.where(alive, np.log(np.maximum(counts, 1e-300)) - np.log(counts[alive].sum()), -np.inf)
            counts, loglik = lattices.expected_counts(logp, freqs)
            history.append((int(alive.sum()), loglik / n_words))
            alive &= (counts >= 0.5) | is_char                  # M-step: pieces used less than half a time go
        logp = np.where(alive, np.log(np.maximum(counts, 1e-300)) - np.log(counts[alive].sum()), -np.inf)
        if alive.sum() <= vocab_size:
            break
        keep = max(vocab_size, int(alive.sum() * shrink))
        live = np.flatnonzero(alive)
        loss = prune_losses([pieces[k] for k in live], logp[live], counts[live], max_piece_len)
        order = np.lexsort((np.array([pieces[k] for k in live]), -loss))  # highest loss first, ties by the piece
        alive[:] = False
        alive[live[order[:keep]]] = True
    ordered = sorted((k for k in np.flatnonzero(alive)), key=lambda k: (-logp[k], pieces[k]))
    return UnigramTraining(Unigram({pieces[k]: float(logp[k]) for k in ordered}, normalize_whitespace=True),
                           history)
