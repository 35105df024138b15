"""Byte-pair encoding (Sennrich et al. 2016; lecture 004, "BPE tokenization"): learning merges, applying them.

**Learning** (:func:`learn_bpe`). Start from characters, with an end-of-word marker on the last
character of every word (``low`` → ``l o w</w>``), so that a piece knows whether it ends a word.
Then repeat: count every pair of adjacent symbols in the corpus (each word weighted by how often it
occurs), merge the most frequent pair into a new symbol everywhere, and add it to the vocabulary.
The counts are kept up to date incrementally (:mod:`.merges`): a merge only touches the words that
contain the pair.

**Tie-break.** When several pairs have the same count, the pair whose first symbol, then second
symbol, comes first in the vocabulary wins; the vocabulary lists the characters in code-point order,
then the characters with the end-of-word marker in code-point order, then the merged symbols in the
order they were made. This is the rule of the ``tokenizers`` library's ``BpeTrainer``, with one
difference: it numbers the end-of-word symbols in the order in which it meets them in a hash map,
which differs from run to run, so ties between pairs of such symbols can go either way there.
Without an end-of-word marker the two learners agree merge for merge (the tests check both cases).

**Encoding** (:class:`BPE`). A new word is split into characters and the learnt merges are applied
by *rank*: repeatedly merge the adjacent pair that was learnt earliest (leftmost first among equal
ranks), until no learnt pair is left. Frequent words end as one piece, rare words as several.
"""
from __future__ import annotations

import heapq
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from .merges import PairCounts, best_pairs
from .segmentation import Segmentation, words_of

END_OF_WORD = "</w>"


@dataclass
class BpeMerge:
    """One learnt merge: ``left + right → token``, the pair's count then, and how many pairs tied with it."""

    left: str
    right: str
    token: str
    count: int
    tied: int = 1


@dataclass
class BpeLearning:
    """What :func:`learn_bpe` learnt: the initial alphabet and the merges in the order they were made."""

    alphabet: list[str]
    merges: list[BpeMerge] = field(default_factory=list)
    end_of_word: str = END_OF_WORD

    def vocabulary(self, steps: int | None = None) -> list[str]:
        """The alphabet plus the tokens of the first ``steps`` merges (all by default), without repeats."""
        vocab = dict.fromkeys(self.alphabet)
        for m in self.merges[:steps]:
            vocab.setdefault(m.token)
        return list(vocab)

    def tokenizer(self, steps: int | None = None, unk_token: str | None = "[UNK]") -> "BPE":
        """An encoder that knows the first ``steps`` merges (the widget's slider); the unknown token gets id 0,
        as in ``tokenizers``, so that the ids of the other symbols do not depend on it."""
        vocab = ([unk_token] if unk_token else []) + self.vocabulary(steps)
        return BPE([(m.left, m.right) for m in self.merges[:steps]], vocab, end_of_word=self.end_of_word,
                   unk_token=unk_token)


def initial_symbols(word: str, end_of_word: str | None = END_OF_WORD) -> list[str]:
    """``"low"`` → ``['l', 'o', 'w</w>']``: characters, the marker glued to the last one."""
    symbols = list(word)
    if end_of_word and symbols:
        symbols[-1] += end_of_word
    return symbols


def pair_counts(word_counts: dict[str, int] | Iterable[str], end_of_word: str | None = END_OF_WORD) -> PairCounts:
    """The starting point of learning: words split into initial symbols, and their pair counts.

    Symbol ids follow the tie-break order: characters by code point, then marked characters by code point.
    """
    counts = Counter(word_counts) if not isinstance(word_counts, dict) else word_counts
    counts = {w: int(c) for w, c in counts.items() if w and c > 0}
    if not counts:
        raise ValueError("no words to learn from: the corpus is empty")
    chars = sorted({ch for w in counts for ch in w})
    marked = sorted({initial_symbols(w, end_of_word)[-1] for w in counts} - set(chars), key=lambda s: (ord(s[0]), s))
    ids = {s: i for i, s in enumerate(chars + marked)}
    words = [[ids[s] for s in initial_symbols(w, end_of_word)] for w in counts]
    return PairCounts(chars + marked, words, list(counts.values()))


def learn_bpe(word_counts: dict[str, int] | Iterable[str], num_merges: int, end_of_word: str | None = END_OF_WORD,
              min_count: int = 1) -> BpeLearning:
    """Learn up to ``num_merges`` merges from words and their counts (or an iterable of words, counted here).

    >>> [(m.left, m.right) for m in learn_bpe({"low": 5, "lower": 2, "newest": 6, "widest": 3}, 3).merges]
    [('e', 's'), ('es', 't</w>'), ('l', 'o')]
    """
    if num_merges < 0:
        raise ValueError(f"num_merges must be 0 or more, got {num_merges}")
    pc = pair_counts(word_counts, end_of_word)
    learning = BpeLearning(list(pc.symbols), end_of_word=end_of_word or "")
    if num_merges == 0:
        return learning

    def merged(pair):
        return pc.symbols[pair[0]] + pc.symbols[pair[1]]

    for pair, new_id, count, tied in best_pairs(pc, priority=lambda p: pc.pairs[p], merged_string=merged,
                                                min_count=min_count):
        learning.merges.append(BpeMerge(pc.symbols[pair[0]], pc.symbols[pair[1]], pc.symbols[new_id], int(count), tied))
        if len(learning.merges) == num_merges:
            break
    return learning


class BPE:
    """Apply merges by rank. ``vocab`` gives the ids (a list: id = position; a dict: token → id).

    unk_token: what a character outside the vocabulary becomes (None: an error names the character).
    special_tokens: strings kept whole wherever they appear in a text, as ``tokenizers`` keeps its special
    tokens (default: the unknown token, so that a typed "[UNK]" stays one token).
    """

    def __init__(self, merges: list[tuple[str, str]], vocab: list[str] | dict[str, int],
                 end_of_word: str | None = END_OF_WORD, unk_token: str | None = "[UNK]",
                 special_tokens: Iterable[str] | None = None):
        self.vocab = {t: i for i, t in enumerate(vocab)} if isinstance(vocab, list) else dict(vocab)
        self.end_of_word = end_of_word or ""
        self.unk_token = unk_token
        self.special_tokens = list(dict.fromkeys(t for t in (special_tokens if special_tokens is not None
                                                              else [unk_token]) if t))
        for t in ([unk_token] if unk_token is not None else []) + self.special_tokens:
            if t not in self.vocab:
                self.vocab[t] = len(self.vocab)
        self._special_split = (re.compile("(" + "|".join(map(re.escape, sorted(self.special_tokens, key=len,
                                                                               reverse=True))) + ")")
                               if self.special_tokens else None)
        self.ranks: dict[tuple[str, str], tuple[int, str]] = {}
        for rank, (a, b) in enumerate(merges):
            new = a + b
            if a not in self.vocab or b not in self.vocab or new not in self.vocab:
                raise ValueError(f"merge {rank} ({a!r}, {b!r}) uses a symbol that is not in the vocabulary")
            self.ranks[(a, b)] = (rank, new)
        self._cache: dict[str, list[str]] = {}

    @classmethod
    def from_tokenizers(cls, tokenizer) -> "BPE":
        """The vocabulary and merges of a ``tokenizers.Tokenizer`` whose model is BPE (e.g. from BpeTrainer)."""
        import json

        model = json.loads(tokenizer.to_str())["model"]
        if model.get("type") != "BPE":
            raise ValueError(f"expected a BPE model, got {model.get('type')!r}")
        merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in model["merges"]]
        specials = [t["content"] for t in json.loads(tokenizer.to_str()).get("added_tokens", []) if t.get("special")]
        return cls(merges, model["vocab"], end_of_word=model.get("end_of_word_suffix"), unk_token=model.get("unk_token"),
                   special_tokens=specials or None)

    def encode_word(self, word: str) -> list[str]:
        """One word → its pieces: characters, then the earliest-learnt adjacent pair merged, again and again."""
        if word in self._cache:
            return self._cache[word]
        if word in self.special_tokens:
            return [word]
        symbols = initial_symbols(word, self.end_of_word)
        for k, s in enumerate(symbols):
            if s not in self.vocab:
                if self.unk_token is None:
                    raise ValueError(f"the character {s[0]!r} of {word!r} is not in the vocabulary and there is "
                                     "no unknown token")
                symbols[k] = self.unk_token
        pieces = self._merge_all(symbols)
        if len(word) <= 64:  # long words are rare: caching them would only fill memory
            self._cache[word] = pieces
        return pieces

    def _merge_all(self, symbols: list[str]) -> list[str]:
        """Merges by (rank, position) with a heap over a linked list: O(n log n) even for a 10,000-character word."""
        n = len(symbols)
        nxt, prv, alive = list(range(1, n + 1)), list(range(-1, n - 1)), [True] * n
        heap = [(self.ranks[p][0], i, self.ranks[p][1]) for i, p in enumerate(zip(symbols, symbols[1:]))
                if p in self.ranks]
        heapq.heapify(heap)
        while heap:
            rank, i, new = heapq.heappop(heap)
            j = nxt[i]
            if not alive[i] or j >= n or self.ranks.get((symbols[i], symbols[j]), (None, None))[1] != new:
                continue  # an entry made stale by an earlier merge
            symbols[i], alive[j] = new, False
            nxt[i] = nxt[j]
            if nxt[j] < n:
                prv[nxt[j]] = i
            if prv[i] >= 0 and (symbols[prv[i]], new) in self.ranks:
                r, s = self.ranks[(symbols[prv[i]], new)]
                heapq.heappush(heap, (r, prv[i], s))
            if nxt[i] < n and (new, symbols[nxt[i]]) in self.ranks:
                r, s = self.ranks[(new, symbols[nxt[i]])]
                heapq.heappush(heap, (r, i, s))
        return [s for s, a in zip(symbols, alive) if a]

    def encode_words(self, words: list[str]) -> Segmentation:
        """Pieces, ids and word ids of already pre-tokenized words."""
        tokens, word_ids = [], []
        for w, word in enumerate(words):
            pieces = self.encode_word(word)
            tokens += pieces
            word_ids += [w] * len(pieces)
        return Segmentation(tokens, [self.vocab[t] for t in tokens], word_ids, list(words))

    def encode(self, text: str) -> Segmentation:
        """Split ``text`` at whitespace and punctuation (case kept; special tokens kept whole), then encode every
        word."""
        if self._special_split is None or not isinstance(text, str):  # words_of names a wrong type
            return self.encode_words(words_of(text))
        words: list[str] = []
        for part in self._special_split.split(text):
            words += [part] if part in self.special_tokens else words_of(part)
        return self.encode_words(words)

    def tokenize(self, text: str) -> list[str]:
        return self.encode(text).tokens
