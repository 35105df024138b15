"""WordPiece (Schuster & Nakajima 2012; Wu et al. 2016; BERT; lecture 004, "Wordpiece tokenization"; SLP3 §11.4.3's 'San', '##itas').

**Encoding** (:class:`WordPiece`), as BERT does it: normalise and split into words
(:mod:`.pretokenize`), then cut each word *greedily, longest match first*: take the longest prefix
of the word that is in the vocabulary, then the longest vocabulary entry that continues it, written
with ``##`` in front (``##itas``), and so on. If at some point no entry matches, the *whole word*
becomes ``[UNK]`` (not just the part that failed), and so does a word longer than
``max_chars_per_word`` characters (100 in BERT).

Special tokens typed in the text (``[MASK]``, ``[SEP]``, …) are kept whole, before any
normalisation, as the ``tokenizers`` library does with a checkpoint's added tokens.

**Training** (:func:`train_wordpiece`). Like BPE it merges pairs of symbols, but it picks the pair whose merge
raises the likelihood of the corpus most under a unigram model of its symbols (``score="gain"``,
:func:`likelihood_gain`: exact, from the counts of a, b, ab and the total). Hugging Face's course uses a shortcut,
the ratio ``count(ab) / (count(a) · count(b))`` (``score="ratio"``): a pair whose parts rarely occur apart wins
over a pair of frequent symbols that merely happen to meet often. The two pick very different merges
(:func:`first_merge_scores`). Symbols inside a word carry ``##``.
"""
from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from .merges import PairCounts, best_pairs
from .pretokenize import basic_tokenize
from .segmentation import Segmentation

PREFIX = "##"
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


class WordPiece:
    """Greedy longest-match-first WordPiece over a vocabulary (a list: id = position; or a dict token → id)."""

    def __init__(self, vocab: list[str] | dict[str, int], unk_token: str = "[UNK]", prefix: str = PREFIX,
                 max_chars_per_word: int = 100, lowercase: bool = True, special_tokens=SPECIAL_TOKENS):
        self.vocab = {t: i for i, t in enumerate(vocab)} if isinstance(vocab, (list, tuple)) else dict(vocab)
        if unk_token not in self.vocab:
            raise ValueError(f"the vocabulary has no {unk_token!r} entry: WordPiece needs it for the words it cannot "
                             "cut into vocabulary pieces")
        if max_chars_per_word < 1:
            raise ValueError(f"max_chars_per_word must be at least 1, got {max_chars_per_word}")
        self.unk_token, self.prefix = unk_token, prefix
        self.max_chars_per_word, self.lowercase = max_chars_per_word, lowercase
        self.special_tokens = tuple(t for t in special_tokens if t in self.vocab)
        self._special = (re.compile("|".join(re.escape(t) for t in sorted(self.special_tokens, key=len, reverse=True)))
                         if self.special_tokens else None)
        self.id_to_token = {i: t for t, i in self.vocab.items()}

    @classmethod
    def from_tokenizer_json(cls, path: str | Path) -> "WordPiece":
        """The vocabulary and settings of a ``tokenizer.json`` whose model is WordPiece (a BERT checkpoint's)."""
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        model = data["model"]
        if model.get("type") != "WordPiece":
            raise ValueError(f"{path}: expected a WordPiece model, got {model.get('type')!r}")
        norm = data.get("normalizer") or {}
        specials = [t["content"] for t in data.get("added_tokens", []) if t.get("special")]
        return cls(model["vocab"], unk_token=model["unk_token"], prefix=model["continuing_subword_prefix"],
                   max_chars_per_word=model["max_input_chars_per_word"], lowercase=norm.get("lowercase", True),
                   special_tokens=specials)

    def encode_word(self, word: str) -> list[str]:
        """One (normalised) word → its pieces, or ``[unk_token]``.

        >>> WordPiece(["[UNK]", "san", "##itas", "##it", "##as"]).encode_word("sanitas")
        ['san', '##itas']
        """
        if len(word) > self.max_chars_per_word:
            return [self.unk_token]
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:  # the longest vocabulary entry that starts at `start`
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                if piece in self.vocab:
                    break
                end -= 1
            if end == start:  # nothing matches here: the whole word is unknown
                return [self.unk_token]
            pieces.append(piece)
            start = end
        return pieces

    def words(self, text: str) -> list[str]:
        """The words WordPiece sees: special tokens kept whole, the rest normalised and split (BERT's pre-tokenizer)."""
        if not isinstance(text, str):
            raise TypeError(f"expected a string of text, got {type(text).__name__}")
        if self._special is None:
            return basic_tokenize(text, lowercase=self.lowercase)
        out, last = [], 0
        for m in self._special.finditer(text):
            out += basic_tokenize(text[last:m.start()], lowercase=self.lowercase) + [m.group()]
            last = m.end()
        return out + basic_tokenize(text[last:], lowercase=self.lowercase)

    def encode(self, text: str) -> Segmentation:
        """Pieces, ids and word ids: ``"Mt. Sanitas"`` → mt . san ##itas with word ids 0 1 2 2."""
        words = self.words(text)
        tokens, word_ids = [], []
        for w, word in enumerate(words):
            pieces = [word] if word in self.special_tokens else self.encode_word(word)
            tokens += pieces
            word_ids += [w] * len(pieces)
        return Segmentation(tokens, [self.vocab[t] for t in tokens], word_ids, words)

    def tokenize(self, text: str) -> list[str]:
        return self.encode(text).tokens


@dataclass
class WordPieceMerge:
    """One learnt merge, its score (the likelihood gain, or the ratio count(ab) / (count(a)·count(b))) and the
    number of occurrences it merged."""

    left: str
    right: str
    token: str
    score: float
    count: int


def wordpiece_symbols(word: str, prefix: str = PREFIX) -> list[str]:
    """``"hugs"`` → ``['h', '##u', '##g', '##s']``: characters, all but the first marked as word-internal."""
    return [ch if i == 0 else prefix + ch for i, ch in enumerate(word)]


class _SymbolTotals(PairCounts):
    """PairCounts that also keeps the number of symbols in the corpus (the likelihood gain needs it)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.total = sum(self.symbol_counts.values())

    def merge(self, pair, new_symbol):
        before = self.symbol_counts[new_symbol]
        grown = super().merge(pair, new_symbol)
        self.total -= self.symbol_counts[new_symbol] - before  # each merged occurrence: two symbols become one
        return grown

    def occurrences(self, pair) -> int:
        """How many occurrences a merge of ``pair`` replaces: a pair of one symbol twice counts left to right
        without overlap (``##s ##s ##s`` holds one), any other pair all its occurrences."""
        if pair[0] != pair[1]:
            return self.pairs[pair]
        n = 0
        for i in self.where.get(pair, ()):
            word, j = self.words[i], 0
            while j < len(word) - 1:
                if word[j] == word[j + 1] == pair[0]:
                    n += self.freqs[i]
                    j += 2
                else:
                    j += 1
        return n


def train_wordpiece(word_counts: dict[str, int], num_merges: int, prefix: str = PREFIX,
                    score: str = "gain") -> list[WordPieceMerge]:
    """Learn ``num_merges`` WordPiece merges, greedily, by one of two scores:

    * ``score="gain"`` (the default, WordPiece's own criterion): the pair whose merge raises the corpus
      log-likelihood most under a unigram model of its symbols (:func:`likelihood_gain`, exact; the gain may
      turn negative late in training, the best pair is still taken);
    * ``score="ratio"``: the shortcut Hugging Face's course uses, count(ab) / (count(a) count(b)).

    Ties: the larger pair count, then vocabulary order. Only the pairs a merge changes are rescored (a lazy
    max-heap, :func:`~.merges.best_pairs`): a pair that contains a merged symbol, or the new one; every other
    pair's gain can only fall as the corpus shrinks, so its stale entry is an upper bound and is rescored when
    it reaches the top.

    >>> [m.token for m in train_wordpiece({"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}, 2)]
    ['##ug', '##un']
    >>> [m.token for m in train_wordpiece({"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}, 2, score="ratio")]
    ['##gs', 'pu']
    """
    if score not in ("ratio", "gain"):
        raise ValueError(f"score must be 'ratio' or 'gain', not {score!r}")
    if num_merges < 0:
        raise ValueError(f"num_merges must be 0 or more, got {num_merges}")
    counts = {w: int(c) for w, c in Counter(word_counts).items() if w and c > 0}
    if not counts:
        raise ValueError("no words to learn from: the corpus is empty")
    split = [wordpiece_symbols(w, prefix) for w in counts]
    alphabet = sorted({s for w in split for s in w}, key=lambda s: (s.startswith(prefix), s))
    ids = {s: i for i, s in enumerate(alphabet)}
    pc = _SymbolTotals(alphabet, [[ids[s] for s in w] for w in split], list(counts.values()))

    def merged(pair):
        a, b = pc.symbols[pair[0]], pc.symbols[pair[1]]
        return a + b[len(prefix):]

    def ratio(pair):  # ties broken by the pair count: the heap compares (score, count) tuples
        return (pc.pairs[pair] / (pc.symbol_counts[pair[0]] * pc.symbol_counts[pair[1]]), pc.pairs[pair])

    def gain(pair):
        n, (a, b) = pc.occurrences(pair), pair
        existing = pc.symbol_counts.get(pc.ids.get(merged(pair), -1), 0)  # two merges may make one string
        return (likelihood_gain(n, pc.symbol_counts[a], pc.symbol_counts[b], pc.total, a == b, existing), n)

    def volatile(pair, new_id):  # the parts occur less often now (and the new symbol more): rescore their pairs
        return pc.by_symbol[pair[0]] | pc.by_symbol[pair[1]] | (pc.by_symbol[new_id] if score == "gain" else set())

    merges: list[WordPieceMerge] = []
    if num_merges == 0:
        return merges
    priority = gain if score == "gain" else ratio
    for pair, new_id, (s, c), _ in best_pairs(pc, priority=priority, merged_string=merged, volatile=volatile):
        merges.append(WordPieceMerge(pc.symbols[pair[0]], pc.symbols[pair[1]], pc.symbols[new_id], s, c))
        if len(merges) == num_merges:
            break
    return merges


def likelihood_gain(n_ab: int, n_a: int, n_b: int, total: int, same: bool = False, existing: int = 0) -> float:
    """The change in the corpus log-likelihood, under a unigram model of its symbols with p(x) = count(x) / total,
    when the ``n_ab`` occurrences of the pair (a, b) each become one symbol ab (``same``: a and b are one
    symbol, as in *##s ##s*; ``existing``: how often ab already occurs, when an earlier merge made the same
    string). The log-likelihood is sum_x count(x) log count(x) - total log total, so only the counts of a, b,
    ab and the total change. The score of ``train_wordpiece(..., score="gain")``.
    """
    def f(x):
        return x * math.log(x) if x > 0 else 0.0

    if n_ab <= 0:
        return 0.0
    if same:
        before, after = f(n_a) + f(existing), f(n_a - 2 * n_ab) + f(existing + n_ab)
    else:
        before, after = f(n_a) + f(n_b) + f(existing), f(n_a - n_ab) + f(n_b - n_ab) + f(existing + n_ab)
    return (after - f(total - n_ab)) - (before - f(total))


@dataclass(frozen=True)
class PairScore:
    """One candidate for the first merge: the pair, its count, the shortcut ratio and the exact likelihood gain."""

    left: str
    right: str
    token: str
    count: int
    ratio: float
    gain: float


def first_merge_scores(word_counts: dict[str, int], prefix: str = PREFIX) -> list[PairScore]:
    """Every adjacent pair of the words' initial WordPiece symbols, scored both ways (a pair of one symbol
    twice counts its occurrences left to right without overlap, as a merge would replace them)."""
    counts = {w: int(c) for w, c in Counter(word_counts).items() if w and c > 0}
    if not counts:
        raise ValueError("no words to score: the corpus is empty")
    symbols: Counter = Counter()
    pairs: Counter = Counter()
    for w, c in counts.items():
        seq = wordpiece_symbols(w, prefix)
        for x in seq:
            symbols[x] += c
        i = 0
        seen_same: Counter = Counter()
        for a, b in zip(seq, seq[1:]):
            if a != b:
                pairs[(a, b)] += c
        while i < len(seq) - 1:  # same-symbol pairs: left to right, no overlap
            if seq[i] == seq[i + 1]:
                seen_same[(seq[i], seq[i])] += 1
                i += 2
            else:
                i += 1
        for pair, n in seen_same.items():
            pairs[pair] += n * c
    total = sum(symbols.values())
    return [PairScore(a, b, a + b[len(prefix):] if b.startswith(prefix) else a + b, n,
                      n / (symbols[a] * symbols[b]), likelihood_gain(n, symbols[a], symbols[b], total, a == b))
            for (a, b), n in pairs.items()]


def wordpiece_vocabulary(word_counts: dict[str, int], merges: list[WordPieceMerge], unk_token: str = "[UNK]",
                         prefix: str = PREFIX) -> list[str]:
    """The vocabulary that trained merges give: the unknown token, the initial symbols, the merged tokens."""
    symbols = sorted({s for w in word_counts for s in wordpiece_symbols(w, prefix)},
                     key=lambda s: (s.startswith(prefix), s))
    return list(dict.fromkeys([unk_token, *symbols, *(m.token for m in merges)]))
