"""Extractive QA pieces: SQuAD normalisation, EM and token F1 on hand-computed cases, features with offsets
(answers land on the right tokens, windows overlap), the best span under a length limit (brute force),
no-answer via [CLS], the no-answer threshold chosen by F1 (brute force), the word-overlap baseline by hand."""
from __future__ import annotations

import itertools

import pytest
import torch

from course_lib.finetuning.qa import Prediction, QAExample, best_span, load_squad, make_features, predict_answers
from course_lib.finetuning.qa_eval import (best_null_threshold, exact_match, normalize_answer, overlap_answer,
                                           squad_scores, token_f1, with_threshold)


@pytest.fixture(scope="module")
def tokenizer():
    import course_lib

    return course_lib.load_pretrained()[1]


# ----------------------------------------------------------------------------- scoring, by hand

def test_normalisation_drops_case_punctuation_articles_and_extra_spaces():
    assert normalize_answer("The  Normans!") == "normans"
    assert normalize_answer("an apple, a pear") == "apple pear"
    assert normalize_answer("Theory of the Firm") == "theory of firm"
    assert normalize_answer("them") == "them"            # 'the' only as a whole word
    assert normalize_answer("10th–11th") == "10th–11th"  # the en dash is not ASCII punctuation
    assert normalize_answer("U.S.") == "us"


def test_exact_match_by_hand():
    assert exact_match("the France", ["France"]) == 1.0
    assert exact_match("France.", ["in France", "France"]) == 1.0   # best gold answer
    assert exact_match("in France", ["France"]) == 0.0
    assert exact_match("", []) == 1.0                                # unanswerable, no answer given
    assert exact_match("France", []) == 0.0
    assert exact_match("", ["France"]) == 0.0


def test_token_f1_by_hand():
    # pred 'in the 10th century' -> [in, 10th, century]; gold '10th and 11th centuries' -> [10th, and, 11th, centuries]
    # common: 10th -> P = 1/3, R = 1/4, F1 = 2PR/(P+R) = 2/7
    assert token_f1("in the 10th century", ["10th and 11th centuries"]) == pytest.approx(2 / 7)
    # repeated tokens count as often as both sides have them: [a.. ] 'paris paris' vs 'paris' -> P 1/2, R 1 -> 2/3
    assert token_f1("Paris Paris", ["Paris"]) == pytest.approx(2 / 3)
    assert token_f1("Paris", ["Rome", "Paris, France"]) == pytest.approx(2 * 1 * 0.5 / 1.5)
    assert token_f1("", []) == 1.0 and token_f1("Paris", []) == 0.0 and token_f1("", ["Paris"]) == 0.0
    assert token_f1("the", ["a"]) == 1.0  # both normalise to nothing: two empty answers agree


def test_squad_scores_split_answerable_and_unanswerable():
    exs = [QAExample("1", "t", "q", "Paris is in France.", (("France", 12),)),
           QAExample("2", "t", "q", "Paris is in France.", ()),
           QAExample("3", "t", "q", "Paris is in France.", (("Paris", 0),))]
    s = squad_scores(exs, ["France", "", "Paris is"])
    assert s["total"] == 3 and s["HasAns_total"] == 2 and s["NoAns_total"] == 1
    assert s["exact"] == pytest.approx(200 / 3)
    assert s["f1"] == pytest.approx(100 * (1 + 1 + 2 / 3) / 3)
    assert s["HasAns_exact"] == 50 and s["NoAns_exact"] == 100


# ----------------------------------------------------------------------------- best span

def brute_force(s, e, L, allowed=None):
    T = len(s)
    cands = [(float(s[i] + e[j]), -i, -j) for i, j in itertools.product(range(T), range(T))
             if i <= j and j - i < L and (allowed is None or (allowed[i] and allowed[j]))]
    score, i, j = max(cands)
    return -i, -j, score


@pytest.mark.parametrize("seed", range(20))
def test_best_span_equals_brute_force(seed):
    g = torch.Generator().manual_seed(seed)
    T = 3 + seed % 9
    s, e = torch.randn(T, generator=g), torch.randn(T, generator=g)
    allowed = torch.rand(T, generator=g) > 0.3
    allowed[T // 2] = True
    for L in (1, 2, 3, 30):
        i, j, score = best_span(s, e, L)
        bi, bj, bscore = brute_force(s.tolist(), e.tolist(), L)
        assert (i, j) == (bi, bj) and score == pytest.approx(bscore)
        i, j, _ = best_span(s, e, L, allowed=allowed)
        assert (i, j) == brute_force(s.tolist(), e.tolist(), L, allowed.tolist())[:2]


def test_best_span_respects_order_and_length():
    s = torch.tensor([0.0, 0, 0, 5, 0])
    e = torch.tensor([0.0, 4, 0, 0, 0])  # the best end lies before the best start
    i, j, _ = best_span(s, e, 10)
    assert i <= j
    s, e = torch.tensor([5.0, 0, 0, 0]), torch.tensor([0.0, 0, 0, 5])
    # the chapter's limit (§11.5.2): a span holds at most L tokens, j - i < L
    assert best_span(s, e, 4)[:2] == (0, 3) and best_span(s, e, 3)[:2] != (0, 3)
    assert best_span(s, e, 1)[:2] in {(0, 0), (3, 3)}  # L = 1: one-token spans only
    T = 40
    s, e = torch.zeros(T), torch.zeros(T)
    s[0], e[T - 1] = 5.0, 5.0
    i, j, _ = best_span(s, e, 30)
    assert j - i + 1 <= 30  # the reader's max_answer_len = 30: at most 30 tokens, never 31
    import course_lib.finetuning.qa as qa  # the module's summary once said i ≤ j ≤ i + L: one token too many

    assert "i ≤ j < i + L" in qa.__doc__ and "j ≤ i + L" not in qa.__doc__


def test_best_span_bad_input():
    with pytest.raises(ValueError, match="max_answer_len must be ≥ 1"):
        best_span(torch.zeros(3), torch.zeros(3), 0)  # no span holds 0 tokens
    with pytest.raises(ValueError, match="two non-empty vectors of one length"):
        best_span(torch.zeros(3), torch.zeros(4))
    with pytest.raises(ValueError, match="no span is allowed"):
        best_span(torch.zeros(3), torch.zeros(3), allowed=torch.zeros(3, dtype=torch.bool))


# ----------------------------------------------------------------------------- features

def test_features_put_the_answer_on_its_tokens(tokenizer):
    exs = load_squad("test")
    feats = make_features(tokenizer, exs, max_length=256, stride=96)
    n_ok = 0
    for f in range(len(feats)):
        ex = exs[int(feats.example_index[f])]
        s, e = int(feats.start_positions[f]), int(feats.end_positions[f])
        offs = feats.offsets[f]
        assert offs[0] is None and feats.token_type_ids[f, 0] == 0
        if s == 0:
            assert e == 0
            continue
        a, b = offs[s][0], offs[e][1]
        text, start = ex.answers[0]
        # the tokens cover the answer, and no token could be dropped (an answer may end inside a word)
        assert a <= start and b >= start + len(text)
        assert offs[s][1] > start and offs[e][0] < start + len(text)
        n_ok += normalize_answer(ex.context[a:b]) == normalize_answer(text)
    answerable = sum(not e.is_impossible for e in exs)
    assert n_ok >= 0.95 * answerable  # nearly every answer is exactly a token span
    found = {int(feats.example_index[f]) for f in range(len(feats)) if feats.start_positions[f] > 0}
    assert found == {n for n, ex in enumerate(exs) if not ex.is_impossible}  # every answer is in some window


def test_long_contexts_become_overlapping_windows(tokenizer):
    ctx = " ".join(f"word{i}" for i in range(300))
    ex = QAExample("x", "t", "Which word?", ctx, (("word250", ctx.index("word250")),))
    feats = make_features(tokenizer, [ex], max_length=128, stride=32)
    assert len(feats) > 1 and (feats.example_index == 0).all()
    assert feats.attention_mask.sum(1).max() <= 128
    spans = [[o for o in offs if o is not None] for offs in feats.offsets]
    for a, b in zip(spans, spans[1:]):
        assert b[0][0] < a[-1][1]  # the next window starts before this one ends
    assert sum(int(s) > 0 for s in feats.start_positions) >= 1


def test_predict_answers_uses_cls_for_no_answer(tokenizer):
    ex = QAExample("x", "t", "Where is Paris?", "Paris is in France.", (("France", 12),))
    feats = make_features(tokenizer, [ex])
    T = feats.input_ids.shape[1]
    s, e = torch.zeros(1, T), torch.zeros(1, T)
    f, l = int(feats.start_positions[0]), int(feats.end_positions[0])
    s[0, f], e[0, l] = 3.0, 3.0
    assert predict_answers([ex], feats, s, e)[0].text == "France"
    s[0, 0], e[0, 0] = 4.0, 4.0  # [CLS] beats the span: no answer
    assert predict_answers([ex], feats, s, e)[0].text == ""
    assert predict_answers([ex], feats, s, e, null_threshold=5.0)[0].text == "France"


# ----------------------------------------------------------------------------- the no-answer threshold

def _pred(text, span, null):
    return Prediction(text, 0, 1, 1, span, null)


def test_with_threshold_answers_when_the_gap_is_small():
    preds = [_pred("a", 2.0, 1.0), _pred("b", 1.0, 3.0)]  # gaps null - span: -1 and +2
    assert with_threshold(preds, 0.0) == ["a", ""]
    assert with_threshold(preds, 2.0) == ["a", "b"]   # a gap equal to the threshold still answers
    assert with_threshold(preds, -1.5) == ["", ""]


@pytest.mark.parametrize("seed", range(5))
def test_best_null_threshold_equals_a_fine_sweep(seed):
    g = torch.Generator().manual_seed(seed)
    exs, preds = [], []
    for n in range(12):
        answerable = bool(torch.rand(1, generator=g) < 0.5)
        right = bool(torch.rand(1, generator=g) < 0.6)
        exs.append(QAExample(str(n), "t", "q?", "red blue", (("red", 0),) if answerable else ()))
        preds.append(_pred("red" if right else "blue", 0.0, float(torch.randn(1, generator=g) * 3)))
    t, f1 = best_null_threshold(exs, preds)
    assert f1 == pytest.approx(squad_scores(exs, with_threshold(preds, t))["f1"])
    sweep = [x / 100 for x in range(-1200, 1201)]
    assert f1 == pytest.approx(max(squad_scores(exs, with_threshold(preds, x))["f1"] for x in sweep))


def test_best_null_threshold_by_hand():
    exs = [QAExample("1", "t", "q?", "red", (("red", 0),)), QAExample("2", "t", "q?", "red")]
    # the answerable question has the smaller gap: answer it, not the other (F1 100)
    t, f1 = best_null_threshold(exs, [_pred("red", 0.0, -1.0), _pred("red", 0.0, 2.0)])
    assert f1 == 100 and -1.0 <= t < 2.0
    # the other way round no threshold separates them: answering both (t = 3) or neither (t = -2, one below
    # the smallest gap) both give F1 50; ties go to the threshold nearest 0
    t, f1 = best_null_threshold(exs, [_pred("red", 0.0, 3.0), _pred("red", 0.0, -1.0)])
    assert f1 == 50 and t == -2.0
    with pytest.raises(ValueError, match="keep its best span"):
        best_null_threshold(exs, [_pred("", 0.0, 2.0), _pred("red", 0.0, -1.0)])


# ----------------------------------------------------------------------------- the word-overlap baseline

def test_overlap_baseline_by_hand():
    ctx = "Boulder is a city. Mt. Sanitas is in Sunshine Canyon, west of Boulder."
    # the sentence with "Sanitas"; the run of non-question words nearest to it (stop words cut runs)
    assert overlap_answer("Where is Mt. Sanitas?", ctx) == "Sunshine Canyon"
    assert overlap_answer("What is Boulder?", ctx) == "city"
    ctx = "The capital is Melbourne. It hosts the University of Melbourne, founded in 1853."
    # runs in the second sentence: "hosts", "University of Melbourne" (joined by "of"; the comma ends it), "1853";
    # "founded" is 1 word after the name, 2 before the year: the baseline knows no answer types
    assert overlap_answer("When was it founded?", ctx) == "University of Melbourne"
    assert overlap_answer("When was it founded in?", ctx) == "University of Melbourne"  # "in" is a stop word
    assert overlap_answer("Is it?", "It is.") == ""  # no candidate at all


def test_overlap_baseline_answers_from_the_context():
    test = [e for e in load_squad("test") if not e.is_impossible]
    answers = [overlap_answer(e.question, e.context) for e in test]
    assert all(a and a in e.context for a, e in zip(answers, test))
    assert 5 < squad_scores(test, answers)["f1"] < 50  # far from a reader, far from nothing
