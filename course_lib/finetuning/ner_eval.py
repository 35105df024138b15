"""Entity-level evaluation of BIO tagging (SLP3 §11.4.3; the lectures' "entity-level F1").

A prediction counts only when it finds an entity *exactly*: same type, same first and last word.
Precision = correct / predicted entities, recall = correct / gold entities, F1 their harmonic mean,
per type and micro-averaged over all entities (every entity weighs the same). Token accuracy, the share
of words whose tag is right, is here for contrast: most words are O, so it flatters a tagger.

Entities are read from tags the way ``conlleval`` and ``seqeval`` (default mode) read them:
an entity starts at B-X, *or at I-X that follows O or another type* (a lenient reading of a broken
sequence), and ends before O, B-, or a change of type. ``mode="strict"`` keeps only well-formed
entities, B-X followed by I-X ... (seqeval's ``mode='strict', scheme=IOB2``).
``tests/test_labelling_eval.py`` proves both equal to ``seqeval`` on the whole wikigold test set and
on hand-made edge cases. ``f1_difference`` puts a paired bootstrap interval on the gap between two taggers.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

MODES = ("lenient", "strict")


def _split(tag: str) -> tuple[str, str]:
    """'B-PER' -> ('B', 'PER'); 'O' -> ('O', '')."""
    if tag == "O":
        return "O", ""
    if len(tag) > 2 and tag[1] == "-" and tag[0] in "BI":
        return tag[0], tag[2:]
    raise ValueError(f"{tag!r} is not a BIO tag (expected O, B-TYPE or I-TYPE)")


def get_entities(tags, mode: str = "lenient") -> list[tuple[str, int, int]]:
    """The entities of one tag sequence as (type, first, last) word positions, in order.

    >>> get_entities(["B-LOC", "I-LOC", "O", "O", "B-LOC", "I-LOC", "O"])  # eq. 11.16
    [('LOC', 0, 1), ('LOC', 4, 5)]
    >>> get_entities(["O", "I-PER", "I-PER"])  # I- without B-: an entity for conlleval/seqeval's default
    [('PER', 1, 2)]
    >>> get_entities(["O", "I-PER", "I-PER"], mode="strict")
    []
    """
    if mode not in MODES:
        raise ValueError(f"mode must be 'lenient' or 'strict', not {mode!r}")
    entities, start, etype = [], None, None
    for i, tag in enumerate(list(tags) + ["O"]):  # a final O closes an entity at the end
        prefix, typ = _split(tag)
        continues = prefix == "I" and start is not None and typ == etype
        if start is not None and not continues:  # the open entity ends before i
            entities.append((etype, start, i - 1))
            start = etype = None
        if prefix == "B" or (prefix == "I" and start is None and mode == "lenient"):
            start, etype = i, typ
    return entities


@dataclass(frozen=True)
class Scores:
    """Precision, recall, F1 and the counts they come from."""

    precision: float
    recall: float
    f1: float
    support: int      # gold entities
    predicted: int    # predicted entities
    correct: int      # exact matches

    @classmethod
    def from_counts(cls, correct: int, predicted: int, gold: int) -> "Scores":
        p = correct / predicted if predicted else 0.0
        r = correct / gold if gold else 0.0
        f = 2 * p * r / (p + r) if p + r else 0.0
        return cls(p, r, f, gold, predicted, correct)


@dataclass(frozen=True)
class EntityReport:
    """Entity-level scores: ``per_type[type]``, ``micro`` (pooled counts) and ``macro`` (mean over types)."""

    per_type: dict[str, Scores]
    micro: Scores
    macro: Scores

    def table(self) -> str:
        """A plain-text table, one row per type, then micro and macro averages."""
        rows = [f"{'':>12} {'precision':>9} {'recall':>7} {'F1':>6} {'gold':>6} {'pred':>6} {'exact':>6}"]
        for name, s in list(self.per_type.items()) + [("micro avg", self.micro), ("macro avg", self.macro)]:
            rows.append(f"{name:>12} {s.precision:9.3f} {s.recall:7.3f} {s.f1:6.3f} {s.support:6d} "
                        f"{s.predicted:6d} {s.correct:6d}")
        return "\n".join(rows)

    def __repr__(self) -> str:
        return self.table()


def _as_batch(y) -> list[list[str]]:
    y = list(y)
    if y and isinstance(y[0], str):
        return [y]
    return [list(s) for s in y]


def entity_scores(y_true, y_pred, mode: str = "lenient") -> EntityReport:
    """Exact-span entity precision / recall / F1 per type and averaged.

    y_true, y_pred: lists of tag sequences (one per sentence; a single sequence is accepted too), equal
    lengths sentence by sentence. Entities never cross a sentence boundary.
    """
    gold_b, pred_b = _as_batch(y_true), _as_batch(y_pred)
    if len(gold_b) != len(pred_b):
        raise ValueError(f"{len(gold_b)} gold sentences but {len(pred_b)} predicted sentences")
    gold, pred = set(), set()
    for n, (g, p) in enumerate(zip(gold_b, pred_b)):
        if len(g) != len(p):
            raise ValueError(f"sentence {n} has {len(g)} gold tags but {len(p)} predicted tags")
        gold |= {(n, *e) for e in get_entities(g, mode)}
        pred |= {(n, *e) for e in get_entities(p, mode)}
    hit = gold & pred
    n_gold, n_pred, n_hit = (Counter(e[1] for e in s) for s in (gold, pred, hit))
    types = sorted(set(n_gold) | set(n_pred))
    per_type = {t: Scores.from_counts(n_hit[t], n_pred[t], n_gold[t]) for t in types}
    micro = Scores.from_counts(len(hit), len(pred), len(gold))
    k = len(types)
    macro = Scores(*(sum(getattr(s, f) for s in per_type.values()) / k if k else 0.0
                     for f in ("precision", "recall", "f1")), len(gold), len(pred), len(hit))
    return EntityReport(per_type, micro, macro)


def token_accuracy(y_true, y_pred) -> float:
    """Share of words whose predicted tag equals the gold tag (the flattering measure)."""
    gold_b, pred_b = _as_batch(y_true), _as_batch(y_pred)
    if len(gold_b) != len(pred_b) or any(len(g) != len(p) for g, p in zip(gold_b, pred_b)):
        raise ValueError("gold and predicted tags differ in number")
    pairs = [(g, p) for gs, ps in zip(gold_b, pred_b) for g, p in zip(gs, ps)]
    if not pairs:
        raise ValueError("no tags to score")
    return sum(g == p for g, p in pairs) / len(pairs)


def _sentence_counts(gold_b, pred_b, mode: str):
    """Per sentence: (exact matches, predicted entities, gold entities)."""
    counts = []
    for g, p in zip(gold_b, pred_b):
        ge, pe = set(get_entities(g, mode)), set(get_entities(p, mode))
        counts.append((len(ge & pe), len(pe), len(ge)))
    return counts


def f1_difference(y_true, pred_a, pred_b, mode: str = "lenient", resamples: int = 2000, seed: int = 0):
    """Micro entity F1 of a minus that of b on the same sentences, with a paired bootstrap over sentences
    (:func:`course_lib.stats.paired_bootstrap`): each resample draws as many sentences as there are, with
    replacement, and scores *both* taggers on the same draw. Returns a :class:`course_lib.stats.Gap`.
    """
    import numpy as np

    from ..stats import paired_bootstrap

    gold_b, a_b, b_b = _as_batch(y_true), _as_batch(pred_a), _as_batch(pred_b)
    if not len(gold_b) == len(a_b) == len(b_b):
        raise ValueError(f"{len(gold_b)} gold sentences but {len(a_b)} and {len(b_b)} predicted sentences")
    for n, (g, a, b) in enumerate(zip(gold_b, a_b, b_b)):
        if not len(g) == len(a) == len(b):
            raise ValueError(f"sentence {n} has {len(g)} gold tags but {len(a)} and {len(b)} predicted tags")
    ca = np.array(_sentence_counts(gold_b, a_b, mode), dtype=float).reshape(-1, 3)  # (S, 3)
    cb = np.array(_sentence_counts(gold_b, b_b, mode), dtype=float).reshape(-1, 3)

    def f1(counts) -> float:
        hit, pred, gold = counts.sum(0)
        return 2 * hit / (pred + gold) if pred + gold else 0.0   # = 2PR / (P + R)

    return paired_bootstrap(lambda idx: f1(ca[idx]) - f1(cb[idx]), len(gold_b), resamples=resamples, seed=seed)
