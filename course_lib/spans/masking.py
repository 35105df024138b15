"""SpanBERT's span masking, SLP3 §11.5.1 (Joshi et al. 2020).

A *span* is a run of whole words, chosen before subword tokenization. Masking works in three steps:

1. **A span length** ℓ (in words) is drawn from a geometric distribution, P(ℓ) = p (1 - p)^(ℓ-1), biased
   towards short spans, with an upper bound ℓ_max: SpanBERT uses p = 0.2 and ℓ_max = 10. Lengths above
   the bound are not piled onto 10; the distribution is *renormalised* over 1..ℓ_max (a draw above 10 is
   redrawn), which gives the mean of 3.8 words that the paper reports (:func:`span_length_distribution`,
   :func:`mean_span_length`, :func:`sample_span_lengths`).
2. **A start**, uniformly among the positions where a span of that length fits (consistent with the
   length and the input): the span must not overlap or touch a span already chosen, so that the two words
   just outside each span -- the boundaries the SBO reads, eq. 11.19 -- are never masked. (This rule, and
   never splitting a word at the budget below, are the course's simplifications: SpanBERT's released code picks
   a start anywhere not yet masked, so its spans can touch, and stops at the budget even inside a word.)
3. Spans are added until 15% of the (non-special) tokens are covered; the last span is cut, word by word,
   at the budget (a word is added while that brings the count nearer to 15% of the tokens), so no span ever
   splits a word. Then every span gets **one** fate, as in BERT: 80% [MASK] for all its tokens, 10% random
   tokens from the unigram distribution, 10% unchanged -- decided once per span, not per token.

Step 3's replacement is BERT's own: :func:`course_lib.pretraining.masking.mlm_mask` run with each span as
one "word" of its whole-word mode and a selection probability of 1 (special tokens never replaced or drawn,
unigram replacements, labels of -100 outside the spans).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch

from ..pretraining.masking import MaskedBatch, _as_generator, _check_prob, mlm_mask

__all__ = ["P_GEOMETRIC", "MAX_SPAN_WORDS", "MASK_BUDGET", "span_length_distribution", "mean_span_length",
           "clipped_mean_span_length", "sample_span_lengths", "word_units", "choose_spans", "SpanMasking",
           "span_mask"]

P_GEOMETRIC = 0.2     # SpanBERT's p
MAX_SPAN_WORDS = 10   # SpanBERT's ℓ_max
MASK_BUDGET = 0.15    # share of the tokens covered by spans, as in BERT


def _check_length_args(p: float, max_len: int) -> None:
    if not 0.0 < p <= 1.0:
        raise ValueError(f"p, the geometric distribution's success probability, must be in (0, 1], not {p}")
    if isinstance(max_len, bool) or not isinstance(max_len, int) or max_len < 1:
        raise ValueError(f"the longest span must be a whole number of words ≥ 1, not {max_len!r}")


def span_length_distribution(p: float = P_GEOMETRIC, max_len: int = MAX_SPAN_WORDS) -> torch.Tensor:
    """The exact distribution of span lengths 1..max_len: P(ℓ) = p (1-p)^(ℓ-1) / Σ_{k=1}^{max_len} p (1-p)^(k-1).

    Returns a (max_len,) float64 tensor; entry ℓ-1 is P(ℓ). It sums to 1.
    """
    _check_length_args(p, max_len)
    lengths = torch.arange(1, max_len + 1, dtype=torch.float64)
    probs = p * (1 - p) ** (lengths - 1)  # (max_len,) the geometric probabilities, not yet normalised
    return probs / probs.sum()


def mean_span_length(p: float = P_GEOMETRIC, max_len: int = MAX_SPAN_WORDS) -> float:
    """E[ℓ] under :func:`span_length_distribution`: 3.797... words for SpanBERT's p = 0.2, ℓ_max = 10."""
    probs = span_length_distribution(p, max_len)
    return float((torch.arange(1, max_len + 1, dtype=torch.float64) * probs).sum())


def clipped_mean_span_length(p: float = P_GEOMETRIC, max_len: int = MAX_SPAN_WORDS) -> float:
    """E[min(ℓ, max_len)] for ℓ ~ Geometric(p): the mean if long draws were *cut* to max_len instead of
    redrawn (4.46 for p = 0.2, 10). Not what SpanBERT does; here to compare. Equals (1 - (1-p)^max_len) / p."""
    _check_length_args(p, max_len)
    return (1 - (1 - p) ** max_len) / p


def sample_span_lengths(n: int, p: float = P_GEOMETRIC, max_len: int = MAX_SPAN_WORDS,
                        generator: torch.Generator | int | None = None) -> torch.Tensor:
    """``n`` span lengths drawn from :func:`span_length_distribution`, as a (n,) long tensor of values 1..max_len.

    Drawn by inverting the cumulative distribution of one uniform number per span (``torch.rand``), which is
    the same as drawing from Geometric(p) and redrawing every length above ``max_len``.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n, the number of lengths to draw, must be a whole number ≥ 0, not {n!r}")
    cdf = span_length_distribution(p, max_len).cumsum(0)  # (max_len,)
    cdf[-1] = 1.0  # no rounding gap above the last length
    u = torch.rand(n, generator=_as_generator(generator), dtype=torch.float64)
    return torch.searchsorted(cdf, u, right=True).clamp(max=max_len - 1) + 1  # (n,) in 1..max_len


def word_units(word_ids: Sequence[int | None], eligible: Sequence[bool] | None = None) -> list[tuple[int, int]]:
    """The words of one sequence as (first_token, last_token) positions: runs of tokens with the same word id.

    Tokens whose word id is None ([CLS], [SEP], padding) belong to no word; with ``eligible`` (one bool per
    token), a word with any ineligible token is left out as well.
    """
    units, start, prev = [], None, None
    for t, w in enumerate(list(word_ids) + [None]):
        if w != prev or w is None:
            if start is not None:
                units.append((start, t - 1))
            start = t if w is not None else None
        prev = w
    if eligible is not None:
        units = [(a, b) for a, b in units if all(eligible[a:b + 1])]
    return units


def choose_spans(n_tokens_per_word: Sequence[int], *, budget: float = MASK_BUDGET, p: float = P_GEOMETRIC,
                 max_len: int = MAX_SPAN_WORDS, generator: torch.Generator | int | None = None,
                 n_tokens: int | None = None, blocked: Sequence[bool] | None = None) -> list[tuple[int, int]]:
    """Steps 1-3 of the module docstring on one sequence: which words to mask, as (first_word, last_word) spans.

    n_tokens_per_word: how many subword tokens each eligible word has (its length decides the budget);
    n_tokens: the count the budget is a share of (default: the sum of ``n_tokens_per_word``);
    blocked: words that may not be masked (e.g. [UNK]); a span never crosses them but may end next to them.
    Returns the spans sorted by position; no two overlap or touch.
    """
    _check_prob("budget", budget)
    g = _as_generator(generator)
    sizes = [int(k) for k in n_tokens_per_word]
    n_words = len(sizes)
    target = budget * (sum(s for s, b in zip(sizes, blocked or [False] * n_words) if not b)
                       if n_tokens is None else n_tokens)
    free = [True] * n_words      # not masked
    allowed = [not b for b in blocked] if blocked is not None else [True] * n_words
    if len(allowed) != n_words:
        raise ValueError(f"blocked has {len(allowed)} entries for {n_words} words")
    spans: list[tuple[int, int]] = []
    covered = 0
    while True:
        length = int(sample_span_lengths(1, p, max_len, g)[0])
        # starts where `length` words fit without overlapping or touching a chosen span
        starts = _valid_starts(free, length, allowed)
        while not starts and length > 1:  # no room for that length: the longest span that still fits
            length -= 1
            starts = _valid_starts(free, length, allowed)
        if not starts:
            break
        s = starts[int(torch.randint(len(starts), (1,), generator=g))]
        end = s - 1
        for w in range(s, s + length):  # add words while that brings the covered count nearer the target
            if covered + sizes[w] / 2 >= target:
                break
            covered += sizes[w]
            end = w
        if end < s:
            break
        for w in range(s, end + 1):
            free[w] = False
        spans.append((s, end))
        if end < s + length - 1:  # the span was cut at the budget: done
            break
    return sorted(spans)


def _valid_starts(free: list[bool], length: int, allowed: list[bool] | None = None) -> list[int]:
    """Word positions s such that words s..s+length-1 and their neighbours s-1, s+length are all unmasked,
    and the span's own words are ``allowed``."""
    n = len(free)
    allowed = allowed or [True] * n
    ok = []
    for s in range(0, n - length + 1):
        lo, hi = max(s - 1, 0), min(s + length, n - 1)
        if all(free[lo:hi + 1]) and all(allowed[s:s + length]):
            ok.append(s)
    return ok


@dataclass
class SpanMasking:
    """What :func:`span_mask` did to a batch.

    batch:  the :class:`~course_lib.pretraining.masking.MaskedBatch` (corrupted ``input_ids``, ``labels`` with
            -100 outside the spans, and the per-token fates ``masked`` / ``randomized`` / ``kept``)
    spans:  for every row, the masked spans as (first_token, last_token) positions, inclusive, sorted
    words:  for every row, the same spans as (first_word, last_word) indices into that row's words
    fates:  for every row, the fate of each span: "masked", "randomized" or "kept"
    """

    batch: MaskedBatch
    spans: list[list[tuple[int, int]]]
    words: list[list[tuple[int, int]]]
    fates: list[list[str]]

    @property
    def input_ids(self) -> torch.Tensor:
        return self.batch.input_ids

    @property
    def labels(self) -> torch.Tensor:
        return self.batch.labels

    def span_lengths(self) -> list[int]:
        """The length in words of every span of the batch, row by row."""
        return [b - a + 1 for row in self.words for a, b in row]


def span_mask(
    input_ids: torch.Tensor,
    word_ids: Sequence[Sequence[int | None]],
    *,
    special_ids: Iterable[int],
    mask_token_id: int,
    unigram: torch.Tensor,
    budget: float = MASK_BUDGET,
    p: float = P_GEOMETRIC,
    max_len: int = MAX_SPAN_WORDS,
    mask_prob: float = 0.8,
    random_prob: float = 0.1,
    attention_mask: torch.Tensor | None = None,
    generator: torch.Generator | int | None = None,
) -> SpanMasking:
    """SpanBERT masking of a batch (§11.5.1): whole-word spans of geometric length, 15% of the tokens, and one
    80/10/10 fate per span.

    input_ids: (B, T) token ids; word_ids: B lists of T word indices (None for special tokens and padding),
    as ``Encoding.word_ids`` gives them; unigram: (|V|,) probabilities for the random replacements.
    Returns a :class:`SpanMasking`.
    """
    if not torch.is_tensor(input_ids) or input_ids.dim() != 2:
        raise ValueError("input_ids must be a (B, T) tensor of token ids, e.g. tokenizer(texts).input_ids")
    B, T = input_ids.shape
    if len(word_ids) != B or any(len(w) != T for w in word_ids):
        raise ValueError(f"word_ids must be {B} lists of {T} entries (one per token, None for special tokens), "
                         "as the tokenizer's Encoding.word_ids gives them")
    g = _as_generator(generator)
    special = torch.tensor(sorted({int(i) for i in special_ids} | {int(mask_token_id)}))
    eligible = ~torch.isin(input_ids.cpu(), special)  # (B, T)
    if attention_mask is not None:
        eligible &= attention_mask.cpu().bool()

    unit_ids: list[list[int | None]] = []  # each span becomes one "word" for mlm_mask's whole-word mode
    spans, words = [], []
    for b in range(B):
        units = word_units(word_ids[b])  # every word; those with a special token ([UNK]) are blocked
        ok = eligible[b].tolist()
        chosen = choose_spans([e - s + 1 for s, e in units], budget=budget, p=p, max_len=max_len, generator=g,
                              n_tokens=int(eligible[b].sum()), blocked=[not all(ok[s:e + 1]) for s, e in units])
        row: list[int | None] = [None] * T
        token_spans = []
        for k, (a, z) in enumerate(chosen):
            first, last = units[a][0], units[z][1]
            token_spans.append((first, last))
            for t in range(first, last + 1):
                row[t] = k
        unit_ids.append(row)
        spans.append(token_spans)
        words.append(chosen)
    batch = mlm_mask(input_ids, special_ids=special.tolist(), mask_token_id=mask_token_id, unigram=unigram,
                     select_prob=1.0, mask_prob=mask_prob, random_prob=random_prob, generator=g,
                     attention_mask=attention_mask, whole_word=True, word_ids=unit_ids)
    batch.eligible = eligible.to(input_ids.device)  # every token that could have been in a span, not just the spans
    fates = [[("masked" if batch.masked[b, s] else "randomized" if batch.randomized[b, s] else "kept")
              for s, _ in row] for b, row in enumerate(spans)]
    return SpanMasking(batch, spans, words, fates)

