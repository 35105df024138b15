"""Incremental pair counts: the bookkeeping behind BPE and WordPiece training (lecture 004, subwords).

Both learners repeat one step: look at every pair of adjacent symbols in the corpus, pick the best
pair, and merge it into a new symbol everywhere. Recounting the whole corpus after every merge
would cost a pass over all words per merge. :class:`PairCounts` instead keeps

* ``pairs``: the count of every adjacent pair (each word weighted by its frequency),
* ``where``: for every pair, the words it occurs in,
* ``symbol_counts``: how often each symbol occurs (WordPiece's score needs it),

and a merge touches only the words that contain the pair, changing only the counts of the pairs
next to each merged occurrence: merging (b, c) in ``a b c d`` removes (a, b), (b, c), (c, d) and adds
(a, bc), (bc, d). The tests check the counts against a full recount after every merge.

:func:`best_pairs` picks the winner with a max-heap whose entries may be stale (lazy deletion): a
popped entry whose priority is out of date is pushed again with its current priority, so only the
pairs a merge changed are re-pushed, never all of them.
"""
from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Callable, Iterator

Pair = tuple[int, int]


class PairCounts:
    """A corpus of words (lists of symbol ids, each with a count) and its adjacent-pair counts.

    symbols: id → string (the initial alphabet, in the order that defines the tie-break);
    words:   the distinct words, each a list of symbol ids; freqs: how often each word occurs.
    """

    def __init__(self, symbols: list[str], words: list[list[int]], freqs: list[int]):
        if len(words) != len(freqs):
            raise ValueError(f"{len(words)} words but {len(freqs)} counts")
        self.symbols = list(symbols)
        self.ids = {s: i for i, s in enumerate(self.symbols)}
        self.words = [list(w) for w in words]
        self.freqs = list(freqs)
        self.pairs: dict[Pair, int] = defaultdict(int)
        self.where: dict[Pair, set[int]] = defaultdict(set)
        self.symbol_counts: dict[int, int] = defaultdict(int)
        self.by_symbol: dict[int, set[Pair]] = defaultdict(set)  # the pairs each symbol takes part in
        for i, (word, f) in enumerate(zip(self.words, self.freqs)):
            for s in word:
                self.symbol_counts[s] += f
            for pair in zip(word, word[1:]):
                self._add(pair, f, i)

    def _add(self, pair: Pair, n: int, word_index: int) -> None:
        self.pairs[pair] += n
        if n > 0:
            self.where[pair].add(word_index)
            self.by_symbol[pair[0]].add(pair)
            self.by_symbol[pair[1]].add(pair)

    def add_symbol(self, string: str) -> int:
        """The id of ``string``, new if it is not yet a symbol (two merges can make the same string)."""
        if string not in self.ids:
            self.ids[string] = len(self.symbols)
            self.symbols.append(string)
        return self.ids[string]

    def merge(self, pair: Pair, new_symbol: int) -> set[Pair]:
        """Replace every occurrence of ``pair`` (left to right, not overlapping) by ``new_symbol``.

        Returns the pairs whose count went up (all of them contain ``new_symbol``).
        """
        a, b = pair
        grown: set[Pair] = set()
        for i in sorted(self.where.pop(pair, ())):
            word, f = self.words[i], self.freqs[i]
            j, out = 0, []
            while j < len(word):
                if j + 1 < len(word) and word[j] == a and word[j + 1] == b:
                    # the pairs around this occurrence change: (prev, a) → (prev, new), (b, next) → (new, next)
                    self._add(pair, -f, i)
                    if out:
                        self._add((out[-1], a), -f, i)
                        self._add((out[-1], new_symbol), f, i)
                        grown.add((out[-1], new_symbol))
                    if j + 2 < len(word):
                        self._add((b, word[j + 2]), -f, i)
                        self._add((new_symbol, word[j + 2]), f, i)
                        grown.add((new_symbol, word[j + 2]))
                    self.symbol_counts[a] -= f
                    self.symbol_counts[b] -= f
                    self.symbol_counts[new_symbol] += f
                    out.append(new_symbol)
                    j += 2
                else:
                    out.append(word[j])
                    j += 1
            self.words[i] = out
        self.pairs.pop(pair, None)
        return grown

    def recount(self) -> dict[Pair, int]:
        """The pair counts from scratch (slow; for checking the incremental counts)."""
        counts: dict[Pair, int] = defaultdict(int)
        for word, f in zip(self.words, self.freqs):
            for pair in zip(word, word[1:]):
                counts[pair] += f
        return {p: c for p, c in counts.items() if c}


def best_pairs(pc: PairCounts, priority: Callable[[Pair], float], merged_string: Callable[[Pair], str],
               volatile: Callable[[Pair, int], set[Pair]] | None = None,
               min_count: int = 1) -> Iterator[tuple[Pair, int, float, int]]:
    """Merge the best pair again and again; yields (pair, new symbol id, its priority, number tied with it).

    ``priority(pair)`` is BPE's count or WordPiece's likelihood score; the best pair has the highest
    priority, and among equal priorities the pair with the smallest (first id, second id) wins.
    ``volatile(pair, new_id)`` names the pairs whose priority may have *grown* through the merge other
    than the new pairs (WordPiece: every pair containing a merged symbol, whose count went down).
    Stops when no pair occurs at least ``min_count`` times. The caller decides when to stop iterating.
    """
    def neg(x):  # heapq is a min-heap: store negated priorities (a number, or a tuple of numbers)
        return tuple(-v for v in x) if isinstance(x, tuple) else -x

    heap = [(neg(priority(p)), p) for p, c in pc.pairs.items() if c >= min_count]
    heapq.heapify(heap)
    while heap:
        stored, pair = heapq.heappop(heap)
        count = pc.pairs.get(pair, 0)
        if count < min_count:
            continue
        current = priority(pair)
        if neg(current) != stored:  # stale: push again with its current priority
            heapq.heappush(heap, (neg(current), pair))
            continue
        # the ties: further valid entries with the same priority (few; pushed back unchanged)
        tied, seen, back = 1, {pair}, []
        while heap and heap[0][0] == stored:
            other = heapq.heappop(heap)
            back.append(other)
            if other[1] not in seen and pc.pairs.get(other[1], 0) >= min_count and priority(other[1]) == current:
                seen.add(other[1])
                tied += 1
        for entry in back:
            heapq.heappush(heap, entry)
        new_id = pc.add_symbol(merged_string(pair))
        grown = pc.merge(pair, new_id)
        if volatile is not None:
            grown |= volatile(pair, new_id)
        for p in grown:
            if pc.pairs.get(p, 0) >= min_count:
                heapq.heappush(heap, (neg(priority(p)), p))
        yield pair, new_id, current, tied
