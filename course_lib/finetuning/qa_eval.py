"""Scoring extractive QA (SQuAD 2.0), choosing the no-answer threshold, and a baseline without learning.

* :func:`normalize_answer`, :func:`exact_match`, :func:`token_f1`, :func:`squad_scores` -- the official
  SQuAD 2.0 scoring: lower-case, drop punctuation and a/an/the, squeeze spaces; EM and bag-of-tokens F1
  against the best-matching gold answer; a question without gold answers counts as right only when the
  prediction is empty.
* :func:`with_threshold`, :func:`best_null_threshold` -- answer "no answer" when the [CLS] score beats the
  best span by more than a threshold, and the threshold that maximises F1 on the questions given.
* :func:`overlap_answer` -- a baseline without learning: the context sentence sharing most question words, and
  in it the run of non-question words nearest to them.

The predictions these functions take come from :func:`course_lib.finetuning.qa.predict_answers` (anything with
``.text``, ``.span_score`` and ``.null_score``) or are plain answer strings.
"""
from __future__ import annotations

import re
import string
from collections import Counter

NO_ANSWER = ""
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = set(string.punctuation)


# ----------------------------------------------------------------------------- scoring

def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lower case, no punctuation, no articles (a, an, the), single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _golds(gold_answers) -> list[str]:
    if isinstance(gold_answers, str):
        gold_answers = [gold_answers]
    golds = [g for g in gold_answers if normalize_answer(g)]
    return golds or [NO_ANSWER]


def exact_match(prediction: str, gold_answers) -> float:
    """1.0 if the normalised prediction equals a normalised gold answer (no gold: the empty answer)."""
    return float(max(normalize_answer(prediction) == normalize_answer(g) for g in _golds(gold_answers)))


def _f1(pred: str, gold: str) -> float:
    p, g = normalize_answer(pred).split(), normalize_answer(gold).split()
    if not p or not g:
        return float(p == g)
    same = sum((Counter(p) & Counter(g)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, gold_answers) -> float:
    """Bag-of-tokens F1 between the normalised prediction and the best gold answer."""
    return max(_f1(prediction, g) for g in _golds(gold_answers))


def squad_scores(examples, predictions) -> dict[str, float]:
    """EM and F1 in percent over all questions, and separately over answerable (HasAns) and unanswerable
    (NoAns) ones, with the counts."""
    if len(examples) != len(predictions):
        raise ValueError(f"{len(examples)} questions but {len(predictions)} predictions")
    if not examples:
        raise ValueError("no questions to score")
    rows = []
    for ex, p in zip(examples, predictions):
        text = p if isinstance(p, str) else p.text
        golds = [a for a, _ in ex.answers]
        rows.append((bool(ex.answers), exact_match(text, golds), token_f1(text, golds)))
    out = {}
    for name, keep in (("", lambda r: True), ("HasAns_", lambda r: r[0]), ("NoAns_", lambda r: not r[0])):
        part = [r for r in rows if keep(r)]
        out[name + "total"] = len(part)
        if part:
            out[name + "exact"] = 100 * sum(r[1] for r in part) / len(part)
            out[name + "f1"] = 100 * sum(r[2] for r in part) / len(part)
    return out


# ----------------------------------------------------------------------------- the no-answer threshold

def with_threshold(predictions, null_threshold: float) -> list[str]:
    """The answer texts at another no-answer threshold, from predictions made with ``null_threshold=inf``
    (which keep every best span): "" where null_score > span_score + null_threshold."""
    return [NO_ANSWER if p.null_score > p.span_score + null_threshold else p.text for p in predictions]


def best_null_threshold(examples, predictions) -> tuple[float, float]:
    """The no-answer threshold that maximises SQuAD F1 on these examples, and that F1 (in percent).

    ``predictions`` must keep every best span (``predict_answers(..., null_threshold=float("inf"))``). The
    candidates are the gaps null_score - span_score of the questions (at a gap t the question with that gap
    is answered) and one below all of them (no question answered); ties go to the threshold nearest 0. Choose
    it on training questions, never on the ones you report.
    """
    if len(examples) != len(predictions) or not examples:
        raise ValueError(f"{len(examples)} questions but {len(predictions)} predictions")
    if any(not p.text for p in predictions):
        raise ValueError("every prediction must keep its best span: predict with null_threshold=float('inf')")
    gaps = [p.null_score - p.span_score for p in predictions]
    candidates = sorted(set(gaps)) + [min(gaps) - 1.0]
    best = None
    for t in candidates:
        f1 = squad_scores(examples, with_threshold(predictions, t))["f1"]
        key = (round(f1, 9), -abs(t))
        if best is None or key > best[0]:
            best = (key, t, f1)
    return best[1], best[2]


# ----------------------------------------------------------------------------- a baseline without learning

STOP_WORDS = frozenset("""a an the of in on at to for from by with as and or but is are was were be been being has have
had do does did it its this that these those which who whom whose what when where why how than then there their
they he she his her him we you i not no into about over after before during between under also can could would
should may might will shall many much more most other some such any each all one s""".split())
_WORD = re.compile(r"\w+(?:[-'’]\w+)*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"“(])")
_JOINERS = frozenset({"of", "and", "de", "the"})  # kept inside a name: "University of Melbourne"


def _words(text: str, offset: int = 0) -> list[tuple[str, int, int]]:
    return [(m.group().lower(), offset + m.start(), offset + m.end()) for m in _WORD.finditer(text)]


def _candidate_runs(context: str, words, q: set[str]) -> list[list[int]]:
    runs, run = [], []
    for k, (w, a, b) in enumerate(words):
        gap = context[words[k - 1][2]:a] if k else ""
        if run and any(ch in ",;:()[]\"“”" for ch in gap):
            runs.append(run)
            run = []
        joiner = (w in _JOINERS and run and context[words[run[-1]][1]].isupper() and k + 1 < len(words)
                  and context[words[k + 1][1]].isupper())
        if w in q or (w in STOP_WORDS and not joiner):
            if run:
                runs.append(run)
            run = []
        else:
            run.append(k)
    if run:
        runs.append(run)
    return runs


def overlap_answer(question: str, context: str) -> str:
    """A non-learned baseline that always answers (after the sliding-window baselines of MCTest and SQuAD 2016).

    1. The question's content words: its words, lower-cased, without stop words.
    2. The sentence of the context that contains the most of them (the first one on a tie; the next one if it
       has no candidate).
    3. In that sentence, the candidate answers are the runs of words that are neither question words nor stop
       words (a stop word *of / and / de / the* may join two capitalised words: "University of Melbourne"),
       not crossing punctuation; each scores sum over the question words in the sentence of
       1 / (1 + its distance in words to the candidate); the best one is the answer (the first on a tie).
    """
    q = {w for w, _, _ in _words(question)} - STOP_WORDS
    bounds, start = [], 0
    for m in _SENTENCE_END.finditer(context):
        bounds.append((start, m.start()))
        start = m.end()
    bounds.append((start, len(context)))
    sentences = [_words(context[a:b], a) for a, b in bounds]
    order = sorted(range(len(sentences)), key=lambda k: (-len(q & {w for w, _, _ in sentences[k]}), k))
    for k in order:  # the best sentence that has a candidate at all
        words, runs = sentences[k], _candidate_runs(context, sentences[k], q)
        if runs:
            break
    else:
        return NO_ANSWER
    hits = [k for k, (w, _, _) in enumerate(words) if w in q]

    def score(r: list[int]) -> float:
        near = {}
        for k in hits:
            d = r[0] - k if k < r[0] else k - r[-1]
            near[words[k][0]] = max(near.get(words[k][0], 0.0), 1 / (1 + d))
        total = 0.0   # left to right in plain floats, not sum(): Python 3.12's sum() compensates its rounding
        for v in near.values():   # (Neumaier) and on one question of the SQuAD sample breaks a near-tie the
            total += v            # other way, which moved the QA card's fold scores on the GPU image
        return total

    r = max(runs, key=lambda r: (score(r), -r[0]))
    return context[words[r[0]][1]:words[r[-1]][2]]
