"""Span-based named entity recognition, SLP3 §11.5.2, eq. 11.27-11.28.

Instead of one BIO tag per word, *every span* of the sentence is classified: y_ij = softmax(FFN(spanRep_ij))
(eq. 11.27) over the entity types plus NULL ("not an entity").

* :func:`enumerate_spans`: all (i, j) with i ≤ j -- T(T+1)/2 of them -- or only those with j - i < L under a
  length limit L (:func:`count_spans` gives the number in closed form);
* :class:`SpanLabels`: NULL = 0, then the types; :func:`span_labels` gives every enumerated span its gold label;
* :class:`SpanNERClassifier`: a span representation (:mod:`.representations`) + an FFN, trained with
  cross-entropy over all enumerated spans;
* decoding: every span whose argmax is not NULL (:func:`decode_spans`, nested entities come out naturally),
  optionally above a threshold, or the greedy non-overlapping variant for flat NER (:func:`decode_flat`);
* span-level evaluation: an entity counts when its first word, last word and type are all right
  (:func:`span_scores`), with gold entities split by nesting depth (:func:`nesting_depths`);
* BIO for contrast (§11.5.2, eq. 11.28 and the paragraph after it): :func:`bio_tags` writes one tag per word and
  refuses nested entities, :func:`outermost` keeps what a BIO tagger can learn from nested data,
  :func:`bio_sequences_containing` searches all tag sequences of a sentence for one that holds a set of entities.

Word-level spans are mapped to subword tokens with the encoder's ``word_ids``: span (a, b) over words reads
from the first subword of word a to the last subword of word b.
"""
from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from ..paths import data_dir
from .representations import FFN, SpanRepresentation

__all__ = ["NULL", "SpanSentence", "load_gum_spans", "enumerate_spans", "count_spans", "SpanLabels", "span_labels",
           "nesting_depths", "outermost", "bio_tags", "bio_sequences_containing", "word_token_spans",
           "SpanNEROutput", "SpanNERClassifier", "decode_spans", "decode_flat", "Scores", "span_scores"]

NULL = "NULL"
GUM_TYPES = ("LOC", "ORG", "PER")


# ----------------------------------------------------------------------------- data

@dataclass(frozen=True)
class SpanSentence:
    """A sentence and its entities as (first_word, last_word, type), last word included; entities may nest."""

    words: tuple[str, ...]
    entities: tuple[tuple[int, int, str], ...] = ()
    doc: str = ""

    def __post_init__(self):
        object.__setattr__(self, "words", tuple(self.words))
        object.__setattr__(self, "entities", tuple(sorted((int(s), int(e), str(t)) for s, e, t in self.entities)))
        if not self.words:
            raise ValueError("a sentence needs at least one word")
        for s, e, t in self.entities:
            if not 0 <= s <= e < len(self.words):
                raise ValueError(f"entity ({s}, {e}, {t!r}) is outside the {len(self.words)} words of "
                                 f"{' '.join(self.words)[:60]!r}")

    def __len__(self) -> int:
        return len(self.words)

    def text(self, span: tuple[int, int]) -> str:
        return " ".join(self.words[span[0]:span[1] + 1])

    def show(self) -> list[tuple[str, str]]:
        """The entities as (words, type)."""
        return [(self.text((s, e)), t) for s, e, t in self.entities]


def load_gum_spans(split: str = "train") -> list[SpanSentence]:
    """The project's nested-NER data (``course_lib/data/gum_spans``, from GUM; see its DATA_CARD.md)."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', not {split!r}")
    path = data_dir("gum_spans", f"{split}.jsonl")
    with open(path, encoding="utf-8") as f:
        return [SpanSentence(r["words"], [tuple(x) for x in r["entities"]], r["doc"]) for r in map(json.loads, f)]


# ----------------------------------------------------------------------------- enumeration (§11.5.2)

def _check_limit(n: int, max_len: int | None) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"the number of tokens must be a whole number ≥ 0, not {n!r}")
    if max_len is not None and (isinstance(max_len, bool) or not isinstance(max_len, int) or max_len < 1):
        raise ValueError(f"the length limit L must be a whole number ≥ 1 (or None for no limit), not {max_len!r}")


def enumerate_spans(n: int, max_len: int | None = None) -> list[tuple[int, int]]:
    """All spans (i, j), 0 ≤ i ≤ j < n, of a sequence of n tokens -- n(n+1)/2 of them -- or, with a length
    limit L, those with j - i < L (at most L tokens). Ordered by start, then end.
    """
    _check_limit(n, max_len)
    L = n if max_len is None else max_len
    return [(i, j) for i in range(n) for j in range(i, min(i + L, n))]


def count_spans(n: int, max_len: int | None = None) -> int:
    """len(enumerate_spans(n, max_len)) in closed form: Σ_{l=1}^{min(L, n)} (n - l + 1); n(n+1)/2 without a limit."""
    _check_limit(n, max_len)
    m = n if max_len is None else min(max_len, n)
    return m * (n + 1) - m * (m + 1) // 2


class SpanLabels:
    """The span classes: NULL (id 0, "not an entity") and the entity types.

    >>> SpanLabels(["LOC", "ORG", "PER"]).names
    ('NULL', 'LOC', 'ORG', 'PER')
    """

    def __init__(self, types: Sequence[str] = GUM_TYPES):
        types = tuple(types)
        if NULL in types or len(set(types)) != len(types) or not types:
            raise ValueError(f"give the entity types once each, without {NULL!r}: got {types}")
        self.types = types
        self.names = (NULL,) + types
        self.ids = {n: i for i, n in enumerate(self.names)}

    def __len__(self) -> int:
        return len(self.names)

    def __repr__(self) -> str:
        return f"SpanLabels({list(self.names)})"

    def id(self, name: str) -> int:
        if name not in self.ids:
            raise ValueError(f"unknown label {name!r}: the labels are {', '.join(self.names)}")
        return self.ids[name]


def span_labels(sentence: SpanSentence, labels: SpanLabels, max_len: int | None = None
                ) -> tuple[list[tuple[int, int]], list[int]]:
    """The enumerated word spans of a sentence and the gold class id of each (NULL unless a gold entity).

    Gold entities longer than the limit are not among the spans (they cannot be found: count them with
    ``unreachable`` = entities with e - s ≥ L).
    """
    spans = enumerate_spans(len(sentence), max_len)
    gold = {(s, e): labels.id(t) for s, e, t in sentence.entities}
    return spans, [gold.get(sp, 0) for sp in spans]


# ------------------------------------------------------------------ nesting and BIO (§11.5.2, after eq. 11.28)

def nesting_depths(entities: Sequence[tuple[int, int, str]]) -> list[int]:
    """1 for an entity inside no other; 2 inside one; … (contained = within its words, not the same words)."""
    spans = [(s, e) for s, e, _ in entities]
    return [1 + sum(1 for (s2, e2) in spans if s2 <= s and e <= e2 and (s2, e2) != (s, e)) for s, e in spans]


def outermost(entities: Sequence[tuple[int, int, str]]) -> tuple[list[tuple[int, int, str]], list[tuple[int, int, str]]]:
    """Split nested entities into what one BIO tag per word can hold -- the outermost ones -- and the rest."""
    depths = nesting_depths(entities)
    keep = [x for x, d in zip(entities, depths) if d == 1]
    lost = [x for x, d in zip(entities, depths) if d > 1]
    return keep, lost


def bio_tags(n_words: int, entities: Sequence[tuple[int, int, str]]) -> list[str]:
    """One BIO tag per word (eq. 11.16): B-X on an entity's first word, I-X on the others, O elsewhere.

    Entities that share a word cannot be written: each word has room for one tag. That is refused with the
    words in question rather than silently dropping one (use :func:`outermost` first to flatten).
    """
    tags = ["O"] * n_words
    owner: dict[int, tuple[int, int, str]] = {}
    for s, e, t in sorted(entities):
        if not 0 <= s <= e < n_words:
            raise ValueError(f"entity ({s}, {e}, {t!r}) is outside the {n_words} words")
        for w in range(s, e + 1):
            if w in owner:
                o = owner[w]
                raise ValueError(f"entities ({o[0]}, {o[1]}, {o[2]}) and ({s}, {e}, {t}) share word {w}: BIO gives each "
                                 "word one tag, so it cannot express both (SLP3 §11.5.2, after eq. 11.28)")
            owner[w] = (s, e, t)
            tags[w] = ("B-" if w == s else "I-") + t
    return tags


def bio_sequences_containing(n_words: int, entities: Sequence[tuple[int, int, str]], types: Sequence[str],
                             mode: str = "lenient") -> tuple[int, int]:
    """Brute force over every BIO tag sequence of ``n_words`` words with the given types: how many decode
    (``ner_eval.get_entities``) to a set that contains all ``entities``? Returns (how many, how many in all).

    For two nested entities the answer is 0: a proof by enumeration of the point §11.5.2 makes after eq. 11.28.
    """
    from ..finetuning.ner_eval import get_entities

    tags = ["O"] + [f"{p}-{t}" for t in types for p in "BI"]
    total = len(tags) ** n_words
    if total > 2_000_000:
        raise ValueError(f"{total:,} tag sequences are too many to enumerate: use fewer words or types")
    wanted = {(t, s, e) for s, e, t in entities}
    found = sum(1 for seq in itertools.product(tags, repeat=n_words) if wanted <= set(get_entities(seq, mode)))
    return found, total


# ----------------------------------------------------------------------------- words -> subword tokens

def word_token_spans(word_ids: Sequence[int | None], spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Word spans (a, b) -> token spans: from the first subword of word a to the last subword of word b."""
    first, last = {}, {}
    for t, w in enumerate(word_ids):
        if w is None:
            continue
        first.setdefault(w, t)
        last[w] = t
    out = []
    for a, b in spans:
        if a not in first or b not in last:
            raise ValueError(f"word span ({a}, {b}) has a word without tokens (the sentence has {len(first)} words)")
        out.append((first[a], last[b]))
    return out


# ----------------------------------------------------------------------------- the classifier (eq. 11.27)

@dataclass
class SpanNEROutput:
    """logits: (N, K) scores of every span (K = types + NULL); loss: mean cross-entropy when labels are given."""

    logits: torch.Tensor
    loss: torch.Tensor | None = None


class SpanNERClassifier(nn.Module):
    """Eq. 11.27: y_ij = softmax(FFN(spanRep_ij)) over NULL and the entity types.

    Reads encoder outputs ``states`` (B, T, d) -- from a frozen encoder, computed once -- and ``spans`` (N, 3)
    rows (b, i, j) of token positions. ``representation`` picks the span representation (see
    :class:`~course_lib.spans.representations.SpanRepresentation`).
    """

    def __init__(self, hidden_size: int, labels: SpanLabels, representation: str = "learned",
                 d_boundary: int = 128, d_ffn: int = 256, dropout: float = 0.1):
        super().__init__()
        self.labels = labels
        self.span_rep = SpanRepresentation(hidden_size, representation, d_boundary=d_boundary, dropout=dropout)
        self.dropout = nn.Dropout(dropout)
        self.classifier = FFN(self.span_rep.output_size, d_ffn, len(labels), dropout)

    def forward(self, states: torch.Tensor, spans: torch.Tensor, labels: torch.Tensor | None = None) -> SpanNEROutput:
        rep = self.span_rep(self.dropout(states), spans)  # (N, output_size)
        logits = self.classifier(rep)  # (N, K)
        loss = nn.functional.cross_entropy(logits, labels) if labels is not None else None
        return SpanNEROutput(logits, loss)


# ----------------------------------------------------------------------------- decoding

def decode_spans(probs: torch.Tensor, spans: Sequence[tuple[int, int]], labels: SpanLabels,
                 threshold: float | None = None) -> list[tuple[int, int, str, float]]:
    """Every span whose most probable class is not NULL, as (i, j, type, probability); nested spans stay.

    probs: (N, K) softmax outputs for the N ``spans`` of one sentence. With ``threshold`` (the chapter's calibrated
    threshold, "designed to improve precision"), a span the argmax makes an entity stays one only if its class has
    at least that probability: a threshold only ever removes entities.
    """
    if probs.dim() != 2 or probs.size(0) != len(spans) or probs.size(1) != len(labels):
        raise ValueError(f"probs must be (N, K) = ({len(spans)}, {len(labels)}), not {tuple(probs.shape)}")
    best_p, best = probs[:, 1:].max(dim=-1)  # the best entity type of each span
    keep = probs.argmax(-1) != 0
    if threshold is not None:
        keep &= best_p >= threshold
    return [(spans[k][0], spans[k][1], labels.names[int(best[k]) + 1], float(best_p[k]))
            for k in keep.nonzero().flatten().tolist()]


def decode_flat(predicted: Sequence[tuple[int, int, str, float]]) -> list[tuple[int, int, str, float]]:
    """The greedy variant for flat NER: take predicted spans from the most probable down, skipping any that
    overlaps one already taken. Returns them sorted by position."""
    taken: list[tuple[int, int, str, float]] = []
    for s, e, t, p in sorted(predicted, key=lambda x: (-x[3], x[0], x[1])):
        if all(e < s2 or e2 < s for s2, e2, _, _ in taken):
            taken.append((s, e, t, p))
    return sorted(taken)


# ----------------------------------------------------------------------------- span-level evaluation

@dataclass(frozen=True)
class Scores:
    """Span-level precision, recall and F1, and the counts behind them."""

    precision: float
    recall: float
    f1: float
    correct: int
    predicted: int
    gold: int

    @classmethod
    def from_counts(cls, correct: int, predicted: int, gold: int) -> "Scores":
        p = correct / predicted if predicted else 0.0
        r = correct / gold if gold else 0.0
        return cls(p, r, 2 * p * r / (p + r) if p + r else 0.0, correct, predicted, gold)

    def __str__(self) -> str:
        return (f"P {self.precision:.1%}  R {self.recall:.1%}  F1 {self.f1:.1%}  "
                f"({self.correct} correct of {self.predicted} predicted, {self.gold} gold)")


def span_scores(gold: Sequence[Sequence[tuple]], predicted: Sequence[Sequence[tuple]]) -> Scores:
    """Micro-averaged span-level P/R/F1 over sentences. Each entity is (i, j, type, ...): it is right when
    i, j and type all match a gold entity of the same sentence (extra fields such as a probability are
    ignored). Each gold entity can be matched once."""
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sentences but {len(predicted)} predicted")
    correct = n_pred = n_gold = 0
    for g, p in zip(gold, predicted):
        gs = {tuple(x[:3]) for x in g}
        ps = {tuple(x[:3]) for x in p}
        correct += len(gs & ps)
        n_pred += len(ps)
        n_gold += len(gs)
    return Scores.from_counts(correct, n_pred, n_gold)
