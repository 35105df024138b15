"""Exercises of notebook 11.4b, sequence labelling and span extraction (SLP3 §11.4.3; the QA slides).

align_labels            align_word_labels(word_tags, word_ids, policy) -> one label per subword: "every" (the
                        chapter's: each subword gets its word's tag) or "first" (first subword, -100 elsewhere);
                        -100 on special tokens (word id None)
decode_first_subword    decode_first_subword(subword_tags, word_ids) -> one tag per word: its first subword's
entity_f1               entity_f1(y_true, y_pred) -> (precision, recall, f1): exact-span entities, micro-averaged,
                        read from BIO tags as conlleval / seqeval do (an I- after O or another type starts one)
best_span               best_span_under_limit(start_logits, end_logits, max_len) -> (i, j) maximising
                        start_logits[i] + end_logits[j] over the spans of at most max_len tokens, i <= j < i + max_len
                        (the chapter's limit L, j - i < L); any of several tied best spans is right
predicted_entities      predicted_entities(words, word_ids, subword_logits, tags) -> [(entity text, type), ...]:
                        eq. 11.15's argmax per subword, first-subword decoding and reading entities, composed

The references are course_lib's (``course_lib.finetuning``); the entity reader and scores are the ones
tests/test_labelling_eval.py proves equal to ``seqeval`` on the whole wikigold test set and edge cases, so
``entity_f1`` is graded as seqeval would grade it, on cases the student does not see.
"""
from __future__ import annotations

import itertools
import random

import torch

from ..finetuning.labelling import IGNORE_INDEX, align_labels
from ..finetuning.labelling import decode_first_subword as reference_decode
from ..finetuning.ner_eval import entity_scores, get_entities
from ..finetuning.qa import best_span
from .core import Stopped, Wrong, exercise, question

X = IGNORE_INDEX
# word ids of real sentences, as the embedded tokenizer gives them
MT_SANITAS = ["Mt.", "Sanitas", "is", "in", "Sunshine", "Canyon", "."]
MT_TAGS = ["B-LOC", "I-LOC", "O", "O", "B-LOC", "I-LOC", "O"]
MT_WIDS = [None, 0, 0, 1, 1, 2, 3, 4, 5, 6, None]
ALIGN_CASES = [
    (MT_TAGS, MT_WIDS),
    (["B-PER", "I-PER", "O", "B-ORG", "I-ORG", "I-ORG"], [None, 0, 1, 1, 1, 2, 3, 4, 4, 5, None, None, None]),  # padded
    (["O", "B-MISC"], [None, 0, 1, 1, 1, 1, None]),
    ([0, 3, 4], [None, 0, 0, 1, 2, 2, None]),  # class ids work the same
]


def _quietly(fn, *args):
    """``fn(*args)``, or None when it raises: a diagnosis that looks at the answers to later cases must not fail on
    one the student's function cannot handle (a stopped process, a time limit, still ends the check)."""
    try:
        return fn(*args)
    except Stopped:
        raise
    except Exception:  # the grader has turned what the student's code raised into Wrong
        return None


def _show(xs) -> str:
    return "[" + ", ".join("-100" if x == X else repr(x) for x in xs) + "]"


# ----------------------------------------------------------------------------- align_labels

@exercise("align_labels", needs=["align_word_labels"])
def check_align_labels(align_word_labels):
    for policy in ("every", "first"):
        for tags, wids in ALIGN_CASES:
            got = align_word_labels(list(tags), list(wids), policy)
            want = align_labels(tags, wids, policy)
            if not isinstance(got, (list, tuple)) and not torch.is_tensor(got):
                raise Wrong(f"return a list with one label per subword, not a {type(got).__name__}")
            got = got.tolist() if torch.is_tensor(got) else list(got)
            if len(got) != len(wids):
                raise Wrong(f"policy {policy!r}: {len(wids)} subwords (word ids {wids}) need {len(wids)} labels, "
                            f"you returned {len(got)}")
            if got == want:
                continue
            bad = next(i for i, (g, w) in enumerate(zip(got, want)) if g != w)
            case = f" (tags {list(tags)}, word ids {wids}: you returned {_show(got)})"
            if wids[bad] is None:
                raise Wrong(f"position {bad} is a special token or padding (word id None): its label is -100, "
                            f"so the loss ignores it; you gave {got[bad]!r}" + case)
            if policy == "first" and got == align_labels(tags, wids, "every"):
                raise Wrong("with policy 'first' only the first piece of a word keeps its tag; later pieces of the "
                            "same word get -100 (compare each word id with the previous one)" + case)
            if policy == "every" and got == align_labels(tags, wids, "first"):
                raise Wrong("with policy 'every' (the chapter's) every piece of a word gets the word's tag, "
                            "continuation pieces included -- no -100 inside a word" + case)
            raise Wrong(f"policy {policy!r}, tags {list(tags)}, word ids {wids}: expected {_show(want)}, "
                        f"got {_show(got)} (first difference at position {bad})")
    return "both alignments right, special tokens and padding -100"


# ----------------------------------------------------------------------------- decode_first_subword

DECODE_CASES = [
    (["B-LOC", "B-LOC", "I-LOC", "O", "O", "O", "B-LOC", "I-LOC", "O"], MT_WIDS),
    (["B-PER", "O", "I-PER", "I-PER", "O", "B-ORG", "B-ORG", "I-ORG"], [None, 0, 0, 1, 2, 3, 3, 4, 5, None]),
    (["O", "B-PER", "I-PER", "I-PER"], [None, 0, 1, 1, 1, None, None]),
    # first piece, last piece, first piece that is not O and the majority of the pieces all differ: the first
    # word's pieces say B-PER I-ORG I-ORG O, the second's O B-LOC
    (["B-PER", "I-ORG", "I-ORG", "O", "O", "B-LOC", "O"], [None, 0, 0, 0, 0, 1, 1, 2, None]),
]


def _pieces(subword_tags, word_ids) -> list[list]:
    """The tags of each word's subwords, in order, one list per word."""
    out: dict = {}
    for tag, w in zip(subword_tags, word_ids):
        if w is not None:
            out.setdefault(w, []).append(tag)
    return [out[w] for w in sorted(out)]


def _majorities(tags: list) -> set:
    """The most frequent tags of a word's pieces (all of them when several tie)."""
    counts = {t: tags.count(t) for t in tags}
    return {t for t, n in counts.items() if n == max(counts.values())}


# decoders a student may write instead of the chapter's, as the tags each allows per word (a set, for ties)
WRONG_DECODERS = {
    "last": (lambda ts: {ts[-1]},
             "you took the tag of each word's last subword; the chapter takes the first one ('Mt' decides for "
             "'Mt.', 'San' for 'Sanitas')"),
    "first non-O": (lambda ts: {next((t for t in ts if t != "O"), "O")},
                    "you skipped a word's pieces tagged O and took its first tag that is not O; the chapter's rule "
                    "reads the first subword only, whatever it says: when the first piece says O, the word is O"),
    "majority": (_majorities,
                 "you took a majority vote over each word's pieces; the chapter's rule reads the first subword "
                 "only, and the later pieces are ignored however many of them agree"),
}


def _wrong_decoders(pairs) -> list[str]:
    """The names of the WRONG_DECODERS that explain every (subword tags, word ids, answer) of ``pairs``."""
    def explains(name):
        rule = WRONG_DECODERS[name][0]
        for sub, wids, got in pairs:
            allowed = [rule(ts) for ts in _pieces(sub, wids)]
            if len(got) != len(allowed) or not all(any(g == x for x in a) for g, a in zip(got, allowed)):
                return False
        return True
    return [name for name in WRONG_DECODERS if explains(name)]


@exercise("decode_first_subword", needs=["decode_first_subword"])
def check_decode_first_subword(decode_first_subword):
    def subword_tags(sub, inner):  # one entry per subword, specials None
        return [None] + list(sub) + [None] * (len(inner) - len(sub) - 1)

    for sub, inner in DECODE_CASES:
        tags = subword_tags(sub, inner)
        want = reference_decode(tags, inner)
        got = decode_first_subword(list(tags), list(inner))
        got = list(got) if not isinstance(got, list) else got
        if got == want:
            continue
        n_words = len(want)
        if len(got) != n_words:
            if len(got) == len([w for w in inner if w is not None]):
                raise Wrong(f"you returned one tag per subword ({len(got)}); decoding gives one tag per word "
                            f"({n_words}): keep only the first subword of each word")
            raise Wrong(f"word ids {inner} name {n_words} words; return {n_words} tags, you returned {len(got)}")
        answers = [(tags_, inner_, _quietly(lambda t, i: list(decode_first_subword(list(t), list(i))), tags_, inner_)
                    or []) for tags_, inner_ in ((subword_tags(a, b), b) for a, b in DECODE_CASES)]
        named = _wrong_decoders(answers)  # the rule that explains the answers to every case, not this one only
        if len(named) == 1:
            raise Wrong(WRONG_DECODERS[named[0]][1])
        raise Wrong(f"subword tags {sub}, word ids {inner}: expected {want}, got {got} (each word takes the tag of "
                    "its first subword, and only that one)")
    return "each word takes its first subword's tag"


# ----------------------------------------------------------------------------- entity_f1

TYPES = ("PER", "LOC", "ORG")
EDGE = [
    ([["I-PER", "I-PER", "O"]], [["B-PER", "I-PER", "O"]], "an I- tag after O (or at the start) starts an entity"),
    ([["B-PER", "B-PER", "I-PER"]], [["B-PER", "I-PER", "I-PER"]], "B-PER B-PER I-PER is two people, the "
                                                                     "prediction one person with the wrong span"),
    ([["O", "B-ORG", "I-ORG"]], [["O", "B-ORG", "I-ORG"]], "an entity that ends the sentence must be closed"),
    ([["B-ORG", "I-ORG", "I-ORG"]], [["B-ORG", "I-LOC", "I-ORG"]], "a change of type ends an entity"),
    ([["B-LOC", "O"], ["O", "O"]], [["O", "O"], ["B-LOC", "O"]], "entities are matched within their sentence: "
     "the same span in another sentence is another entity"),
    ([["B-LOC", "O"]], [["B-LOC", "I-LOC"]], "only exact spans count"),
    ([["O", "O"]], [["O", "O"]], "no entities at all: precision, recall and F1 are 0"),
    ([["B-PER", "O"], ["B-LOC", "B-ORG", "B-PER"]], [["B-PER", "O"], ["B-LOC", "O", "O"]],
     "every entity of every sentence counts once: 2 matches of 2 predicted and 4 gold entities"),
    ([["O", "B-LOC"], ["I-LOC", "O"]], [["O", "B-LOC"], ["O", "O"]],
     "an entity never runs from one sentence into the next: the I-LOC that opens the second sentence starts one"),
]


def _hidden_cases(n: int = 40, seed: int = 11):
    rng = random.Random(seed)
    tags = ["O"] * 6 + [f"{p}-{t}" for t in TYPES for p in "BI"]
    for _ in range(n):
        lens = [rng.randint(1, 9) for _ in range(rng.randint(1, 4))]
        gold = [[rng.choice(tags) for _ in range(k)] for k in lens]
        pred = [[t if rng.random() < 0.7 else rng.choice(tags) for t in s] for s in gold]
        yield gold, pred


def _check_read_entities(read_entities, sentences) -> None:
    """read_entities on each sentence: the (type, first, last) entities conlleval reads, in any order."""
    for tags in sentences:
        want = get_entities(tags)
        got = read_entities(list(tags))
        try:
            got = [tuple(e) for e in got]
        except TypeError:
            got = None
        case = f"read_entities({tags}) returned {got}; expected {want}"
        if got is not None and sorted(got, key=str) == sorted(((a, b, t) for t, a, b in want), key=str) and want:
            raise Wrong(f"{case}: each entity is (type, first, last), the type first")
        try:
            spans = sorted((str(t), int(a), int(b)) for t, a, b in got)
        except (TypeError, ValueError):
            raise Wrong(f"read_entities({tags}) should return a list of (type, first, last) triples such as "
                        f"{want or [('PER', 0, 1)]}; got {got!r}") from None
        if spans == sorted(want) and len(got) == len(want):
            continue
        if spans == sorted((t, a, b + 1) for t, a, b in want):
            raise Wrong(f"{case}: last is the index of the entity's last word, included (not one past it, as in a "
                        "slice)")
        raise Wrong(f"{case} (an I- after O or another type starts an entity; a B-, O or another type ends the one "
                    "before; the last entity ends with the sentence)")


@exercise("entity_f1", needs=["entity_f1", "read_entities"])
def check_entity_f1(entity_f1, read_entities):
    cases = [(g, p, why) for g, p, why in EDGE] + [(g, p, None) for g, p in _hidden_cases()]
    for gold, pred, why in cases:
        ref = entity_scores(gold, pred).micro
        got = entity_f1([list(s) for s in gold], [list(s) for s in pred])
        try:
            p, r, f = (float(x) for x in got)
        except (TypeError, ValueError):
            raise Wrong(f"return three numbers (precision, recall, f1), not {got!r}") from None
        want = (ref.precision, ref.recall, ref.f1)
        if all(abs(a - b) < 1e-9 for a, b in zip((p, r, f), want)):
            continue
        if abs(p - want[1]) < 1e-9 and abs(r - want[0]) < 1e-9 and want[0] != want[1]:
            raise Wrong(f"gold {gold}, predicted {pred}: you returned P = {p:.3f}, R = {r:.3f}; precision and recall "
                        "are swapped: precision divides the exact matches by the *predicted* entities, recall by "
                        "the *gold* ones")
        n_gold = sum(len(get_entities(s)) for s in gold)
        n_pred = sum(len(get_entities(s)) for s in pred)
        if n_gold == 0 and n_pred == 0:  # before token accuracy, which is 1 here too
            raise Wrong(f"gold {gold}, predicted {pred}: no gold and no predicted entities, so precision and recall "
                        f"both divide by zero: P = R = F1 = 0 by convention (you returned {p:.3f}/{r:.3f}/{f:.3f})")
        if n_pred == 0 and abs(p - want[0]) > 1e-9:
            raise Wrong(f"gold {gold}, predicted {pred}: no predicted entities, so precision divides by zero: "
                        f"P = 0 by convention (you returned P = {p:.3f})")
        if n_gold == 0 and abs(r - want[1]) > 1e-9:
            raise Wrong(f"gold {gold}, predicted {pred}: no gold entities, so recall divides by zero: R = 0 by "
                        f"convention (you returned R = {r:.3f})")
        tok = sum(a == b for gs, ps in zip(gold, pred) for a, b in zip(gs, ps)) / sum(len(s) for s in gold)
        if all(abs(x - tok) < 1e-9 for x in (p, r, f)):
            raise Wrong(f"gold {gold}, predicted {pred}: you returned {tok:.3f} three times, the share of tags "
                        "that agree (token accuracy); score whole entities: read (type, first, last) spans from the "
                        "tags and count exact matches")
        _diagnose_f1((p, r, f), gold, pred, want)
        shown = f"gold {gold}, predicted {pred}"
        hint = f" ({why})" if why else ""
        raise Wrong(f"for {shown}: expected P/R/F1 = {want[0]:.3f}/{want[1]:.3f}/{want[2]:.3f}, got "
                    f"{p:.3f}/{r:.3f}/{f:.3f}{hint}")
    # the scores can be right with entities read in another form (first and last swapped, a slice's end), used
    # alike for gold and predicted tags: read_entities is graded on its own too
    _check_read_entities(read_entities, [s for g, p, _ in cases for s in (*g, *p)])
    return (f"equal to seqeval's micro P/R/F1 on {len(cases)} cases, edge cases included; read_entities gives "
            "conlleval's entities")


def _typeless_scores(gold, pred) -> tuple[float, float, float]:
    """Micro P/R/F1 when a predicted entity matches a gold one by its span alone, its type ignored."""
    g = {(n, a, b) for n, s in enumerate(gold) for _, a, b in get_entities(s)}
    q = {(n, a, b) for n, s in enumerate(pred) for _, a, b in get_entities(s)}
    hit = len(g & q)
    p, r = (hit / len(q) if q else 0.0), (hit / len(g) if g else 0.0)
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def _per_sentence_mean(gold, pred) -> tuple[float, float, float]:
    """P, R and F1 of each sentence alone (0 where a division is by zero), averaged over the sentences."""
    rows = [entity_scores([g], [p]).micro for g, p in zip(gold, pred)]
    return tuple(sum(getattr(r, k) for r in rows) / len(rows) for k in ("precision", "recall", "f1"))


def _token_scores(gold, pred, typed: bool) -> tuple[float, float, float]:
    """Token-level micro P/R/F1 over the tokens that are not O: a token is a hit when its tags agree (``typed``:
    their types agree, the B-/I- prefix dropped)."""
    def key(t):
        return t[2:] if typed and t != "O" else t
    pairs = [(key(a), key(b)) for gs, ps in zip(gold, pred) for a, b in zip(gs, ps)]
    hit = sum(a == b != "O" for a, b in pairs)
    n_pred, n_gold = sum(b != "O" for _, b in pairs), sum(a != "O" for a, _ in pairs)
    p, r = (hit / n_pred if n_pred else 0.0), (hit / n_gold if n_gold else 0.0)
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def _diagnose_f1(got, gold, pred, want):
    """Raise Wrong naming the averaging or matching an answer used, when it is a known one and not the right one."""
    def same(a, b):
        return all(abs(x - y) < 1e-9 for x, y in zip(a, b))
    if same(got[:2], want[:2]) and not same(got[2:], want[2:]):
        mean = " (you took their average, the arithmetic mean)" if abs(got[2] - (got[0] + got[1]) / 2) < 1e-9 else ""
        raise Wrong(f"your precision and recall are right ({want[0]:.3f}, {want[1]:.3f}), your F1 is not: "
                    f"{want[2]:.3f}, not {got[2]:.3f}. F1 is the *harmonic* mean of P and R{mean}, which stays "
                    "close to the smaller of the two (and is 0 when both are 0)")
    for typed, how in ((False, "with the B-/I- prefix"), (True, "comparing types, the B-/I- prefix dropped")):
        if same(got, _token_scores(gold, pred, typed)) and not same(got, want):
            raise Wrong(f"that is token-level F1 ({how}): you counted tokens whose tags agree. Entity F1 counts "
                        "whole entities: read the (type, first, last) spans from the tags, and a predicted entity "
                        "is a match only when its type and both ends equal a gold entity's")
    macro = entity_scores(gold, pred).macro
    if same(got, (macro.precision, macro.recall, macro.f1)) and not same(got, want):
        raise Wrong("that is the macro average, the mean of the per-type scores: this exercise's entity F1 (conlleval's) is micro — "
                    "pool every entity's match, whatever its type, then divide once (a rare type must not weigh as "
                    "much as a frequent one)")
    if len(gold) > 1 and same(got, _per_sentence_mean(gold, pred)) and not same(got, want):
        raise Wrong("you scored each sentence and averaged the scores: pool every entity of every sentence, count "
                    "the exact matches once, then divide (a sentence with one entity must not weigh as much as one "
                    "with ten)")
    joined = entity_scores([[t for s in gold for t in s]], [[t for s in pred for t in s]]).micro
    if len(gold) > 1 and same(got, (joined.precision, joined.recall, joined.f1)) and not same(got, want):
        raise Wrong("you read the sentences as one sequence, so an entity can run from the end of one sentence into "
                    "the next: read the entities sentence by sentence")
    if same(got, _typeless_scores(gold, pred)) and not same(got, want):
        raise Wrong("your matches ignore the entity's type: a predicted span counts only when its type is the gold "
                    "one too — an entity is (type, first, last), all three must agree")


# ----------------------------------------------------------------------------- best_span

def _best_allowed(s, e, L, i, j) -> bool:
    """Is (i, j) an allowed span (i <= j < i + L, inside the T tokens) with the best score?"""
    if not (0 <= i <= j < len(s) and j - i < L):
        return False
    best = best_span(s, e, L)[2]
    return float(s[i] + e[j]) >= best - 1e-5 * max(1.0, abs(best))


def _exclusive_everywhere(best_span_under_limit, cases) -> bool:
    """Does the answer return (i, j + 1), a best span with a slice's exclusive end, on every case?"""
    for s, e, L, _ in cases:
        got = _quietly(lambda: tuple(int(x) for x in best_span_under_limit(s.clone(), e.clone(), L)))
        if got is None or len(got) != 2 or not _best_allowed(s, e, L, got[0], got[1] - 1):
            return False
    return True


@exercise("best_span", needs=["best_span_under_limit"])
def check_best_span(best_span_under_limit):
    g = torch.Generator().manual_seed(5)
    cases = [  # the first three have tied best spans: any of them is right (a hint names only the case's point)
        (torch.tensor([0.0, 0, 0, 5, 0]), torch.tensor([0.0, 4, 0, 0, 0]), 10, None),  # the best end before the start
        (torch.tensor([1.0, 1, 0]), torch.tensor([0.0, 1, 1]), 2, None),
        (torch.tensor([5.0, 0, 0, 0]), torch.tensor([0.0, 0, 0, 5]), 3, None),  # (0, 3) has one token too many
        (torch.tensor([5.0, 0, 0, 0]), torch.tensor([0.0, 0, 0, 5]), 4, "a span of exactly max_len tokens is allowed"),
        (torch.tensor([1.0, 3, 0]), torch.tensor([0.0, 2, 1]), 1, "max_len 1: one-token spans only")]
    for _ in range(25):
        T = int(torch.randint(2, 12, (1,), generator=g))
        cases.append((torch.randn(T, generator=g), torch.randn(T, generator=g), int(torch.randint(1, 6, (1,), generator=g)), None))
    for s, e, L, why in cases:
        i, j, best = best_span(s, e, L)
        got = best_span_under_limit(s.clone(), e.clone(), L)
        try:
            gi, gj = (int(x) for x in got)
        except (TypeError, ValueError):
            raise Wrong(f"return the pair (i, j) of token positions, not {got!r}") from None
        T = len(s)
        if not _best_allowed(s, e, L, gi, gj) and _best_allowed(s, e, L, gi, gj - 1) and \
                _exclusive_everywhere(best_span_under_limit, cases):
            raise Wrong(f"you returned ({gi}, {gj}) where ({gi}, {gj - 1}) is the best span: j is the last token of "
                        f"the span, included (the span i..j holds j - i + 1 tokens), not one past it as the end of "
                        f"a Python slice")
        if not (0 <= gi < T and 0 <= gj < T):
            raise Wrong(f"you returned ({gi}, {gj}) for {T} tokens: i and j are positions 0 … {T - 1}")
        separately = (int(s.argmax()), int(e.argmax())) == (gi, gj)
        also = (" (the best start and the best end taken separately need not form an allowed span: score every "
                "pair (i, j) of an allowed span)") if separately else ""
        if gi > gj:
            raise Wrong(f"you returned i = {gi} > j = {gj}: an answer cannot end before it starts{also}")
        if gj - gi >= L:  # one token too many is the off-by-one j <= i + max_len, not the separate argmaxes
            raise Wrong(f"your span ({gi}, {gj}) has {gj - gi + 1} tokens, more than the limit max_len = {L}: a span "
                        f"holds at most max_len tokens, so j - i < max_len{also if gj - gi > L else ''}")
        score = float(s[gi] + e[gj])
        if score >= best - 1e-5 * max(1.0, abs(best)):  # an allowed span with the best score: right, ties included
            continue
        hint = f" ({why})" if why else ""
        raise Wrong(f"start {[round(x, 2) for x in s.tolist()]}, end {[round(x, 2) for x in e.tolist()]}, "
                    f"max_len {L}: the best allowed span scores {best:.2f}, e.g. ({i}, {j}); yours, ({gi}, {gj}), "
                    f"scores {score:.2f}{hint}")
    return f"a best allowed span on {len(cases)} cases (ties included)"


# ----------------------------------------------------------------------------- predicted_entities (composing)

TAGS9 = ("O", "B-LOC", "I-LOC", "B-MISC", "I-MISC", "B-ORG", "I-ORG", "B-PER", "I-PER")


def _entities(words, word_ids, logits, tags):
    ids = reference_decode(logits.argmax(-1), word_ids)
    word_tags = [tags[i] for i in ids]
    return [(" ".join(words[a:b + 1]), t) for t, a, b in get_entities(word_tags)]


def _logits_for(subword_tags, tags, g):
    out = torch.randn(len(subword_tags), len(tags), generator=g)
    for i, t in enumerate(subword_tags):
        out[i, tags.index(t)] += 6.0
    return out


def _entities_decoded_by(name, words, word_ids, sub_tags) -> list[list[tuple[str, str]]]:
    """The entities a wrong decoder of WRONG_DECODERS reads (one list for each way it may break a tie)."""
    real = [w for w in word_ids if w is not None]
    options = [sorted(WRONG_DECODERS[name][0](ts)) for ts in _pieces(sub_tags, real)]
    out = []
    for word_tags in itertools.islice(itertools.product(*options), 64):
        out.append([(" ".join(words[a:b + 1]), t) for t, a, b in get_entities(list(word_tags))])
    return out


@exercise("predicted_entities", needs=["predicted_entities"])
def check_predicted_entities(predicted_entities):
    g = torch.Generator().manual_seed(7)
    cases = [
        # the chapter's sentence: later pieces disagree with the first ones, and must be ignored
        (MT_SANITAS, MT_WIDS, ["O", "B-LOC", "O", "I-LOC", "B-PER", "O", "O", "B-LOC", "I-LOC", "O", "O"]),
        (["Jane", "Villanueva", "of", "United", "Airlines", "Holding"], [None, 0, 1, 1, 1, 2, 3, 4, 5, 5, None],
         ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "O", "B-ORG", "I-ORG", "I-ORG", "O", "O"]),
        (["Visit", "Boulder"], [None, 0, 1, None], ["O", "O", "I-LOC", "O"]),  # I- without B-
        (["It", "rained"], [None, 0, 1, None], ["O", "O", "O", "O"]),
        # a word whose first piece says O and its second B-LOC: the word is O (not its first tag that is not O)
        (["Visit", "Sanitas", "today"], [None, 0, 1, 1, 2, None], ["O", "O", "O", "B-LOC", "O", "O"]),
        # a word whose pieces say B-PER I-ORG I-ORG: the word is B-PER (not the pieces' majority)
        (["Ask", "Villanueva", "now"], [None, 0, 1, 1, 1, 2, None], ["O", "O", "B-PER", "I-ORG", "I-ORG", "O", "O"]),
        # pieces B-LOC B-LOC O: the last piece and the majority disagree, so each wrong decoder is told apart
        (["In", "Sanitas"], [None, 0, 1, 1, 1, None], ["O", "O", "B-LOC", "B-LOC", "O", "O"]),
    ]

    def answer(words, wids, logits):
        got = predicted_entities(list(words), list(wids), logits.clone(), TAGS9)
        return [tuple(x) for x in got] if isinstance(got, (list, tuple)) else got

    inputs = []
    for words, wids, sub in cases:
        logits = _logits_for(sub, TAGS9, g)
        real = [i for i, w in enumerate(wids) if w is not None]
        inputs.append((words, wids, [TAGS9[int(logits[i].argmax())] for i in real], logits))

    def explained_by(name, answers):  # a wrong decoder that gives the answers to every case, not to one only
        return all(isinstance(got, list) and got in _entities_decoded_by(name, words, wids, sub_tags)
                   for (words, wids, sub_tags, _), got in zip(inputs, answers))

    for words, wids, sub_tags, logits in inputs:
        want = _entities(words, wids, logits, TAGS9)
        got = answer(words, wids, logits)
        if got == want:
            continue
        if not isinstance(got, list):
            raise Wrong(f"return a list of (entity text, type) pairs, not {type(got).__name__}")
        real = [i for i, w in enumerate(wids) if w is not None]
        sub_entities = get_entities(sub_tags)
        sub_level = [(" ".join(words[wids[real[a]]:wids[real[b]] + 1]), t) for t, a, b in sub_entities]
        sub_as_words = [(" ".join(words[a:b + 1]), t) for t, a, b in sub_entities]
        answers = [_quietly(answer, w, i, x) for w, i, _, x in inputs]
        decoded = [name for name in WRONG_DECODERS if explained_by(name, answers)]
        if len(decoded) == 1:
            raise Wrong(f"words {words}: expected {want}, got {got}: " + WRONG_DECODERS[decoded[0]][1])
        if got in (sub_level, sub_as_words):
            raise Wrong(f"words {words}: expected {want}, got {got}: you read entities from the subword tags; "
                        "decode to one tag per word first (each word takes its first subword's tag), then read "
                        "entities from the word tags")
        raise Wrong(f"words {words}: expected {want}, got {got} (argmax per subword, then first-subword decoding, "
                    f"then BIO entities; the entity text is its words joined by spaces)")
    return "argmax, first-subword decoding and entity reading compose correctly"


# ----------------------------------------------------------------------------- predictions

question(
    "every_subword_entities", variable="subword_entities", choices=["1", "2", "3", "4"], answer="3",
    why="'Mt.' splits into 'mt' and '.', and the chapter's alignment copies B-LOC onto both: a BIO reader sees "
        "B-LOC B-LOC, two entities where the sentence has one. 'Sanitas' → 'san' '##itas' gets I-LOC twice, "
        "which only continues. So 3 subword entities for 2 real ones -- why decoding goes back to words first",
    hint="write out the subwords of 'Mt. Sanitas is in Sunshine Canyon.' with their word's tag copied onto each "
         "piece. What does a B- tag right after another B- tag mean in BIO?")

question(
    "all_o_accuracy", variable="all_o_token_accuracy",
    choices=["below 50%", "50-80%", "above 80%"], answer="above 80%",
    why="most words of running text are outside every entity: tagging everything O gets all of them right, so "
        "token accuracy is high although not one entity is found (entity F1 = 0)",
    hint="token accuracy counts words. What share of the words in a Wikipedia sentence belong to no named "
         "entity at all?",
    giveaways=["token accuracy flatters", "token accuracy is high", "token accuracy rewards the O"])

question(
    "probe_layer", variable="probe_layer", choices=["L2", "L4", "L6"], answer="L4",
    why="the last layer of this encoder was trained to serve its sentence vector (mean-pooled for similarity), "
        "and it gives up word-level detail for that; lower layers keep more of what each token is, but have "
        "read less of its context. A middle layer balances the two for NER -- ELMo's finding that tasks prefer "
        "different layers",
    hint="what was the last layer of all-MiniLM-L6-v2 trained to be good at, and does NER need the same thing? What "
         "does a token's vector hold in the lowest layers, and what does it lack there?",
    giveaways=["not the best for every task", "the middle layer wins"])

question(
    "full_vs_probe", variable="full_vs_probe",
    choices=["less than 10 points higher", "10 to 20 points higher", "more than 20 points higher"],
    answer="more than 20 points higher",
    why="the probe can only draw straight lines through vectors the encoder made for another purpose (sentence "
        "similarity). When the six blocks learn too, every token's vector is reshaped for the task -- where a name "
        "starts and what kind it is -- and entity F1 nearly doubles, precision and recall alike",
    hint="the probe is one linear map on vectors that were never trained to carry entity types or boundaries. How "
         "much can change when ten million parameters of the encoder may move toward the task, instead of "
         "three thousand in the head?")

question(
    "threshold_hindsight", variable="threshold_hindsight",
    choices=["5 or more F1 points above", "1 to 5 F1 points above", "less than 1 F1 point above"],
    answer="1 to 5 F1 points above",
    why="the threshold only decides which questions get an answer; it cannot make the answers better. When the "
        "gap between [CLS] and the best span hardly differs between answerable and unanswerable questions, every "
        "threshold trades one kind of error for the other, and the best one (very strict: answer only when the "
        "span wins by a wide margin) gains a point or two over never answering",
    hint="a threshold sorts questions by one number, how much the best span beats [CLS]. How well must that "
         "number separate answerable from unanswerable questions for some cut to be worth much more than "
         "saying 'no answer' to all of them?",
    giveaways=["whether the passage holds an answer is the hard part", "perhaps the threshold was just badly "
               "chosen"])

