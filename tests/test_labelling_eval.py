"""Entity-level P/R/F1 (course_lib.finetuning.ner_eval) proven equal to seqeval, the reference:
on the whole wikigold test set against many corrupted predictions, and on hand-made edge cases
(I- without B-, adjacent entities of one type, an entity at the sentence end, type changes)."""
from __future__ import annotations

import random

import pytest

from course_lib.finetuning.labelling import LabelSet, load_wikigold
from course_lib.finetuning.ner_eval import entity_scores, get_entities, token_accuracy

from seqeval import metrics as seqeval_metrics  # the reference (test-only dependency, pinned)
from seqeval.metrics.sequence_labeling import get_entities as seqeval_entities
from seqeval.scheme import IOB2

MODES = {"lenient": {}, "strict": {"mode": "strict", "scheme": IOB2}}


def seqeval_report(y_true, y_pred, mode):
    return seqeval_metrics.classification_report(y_true, y_pred, output_dict=True, zero_division=0, **MODES[mode])


def assert_same_as_seqeval(y_true, y_pred, mode="lenient"):
    ours = entity_scores(y_true, y_pred, mode=mode)
    ref = seqeval_report(y_true, y_pred, mode)
    types = [k for k in ref if not k.endswith(" avg")]
    assert sorted(types) == sorted(ours.per_type), (types, list(ours.per_type))
    for t in types:
        s = ours.per_type[t]
        assert (s.precision, s.recall, s.f1, s.support) == pytest.approx(
            (ref[t]["precision"], ref[t]["recall"], ref[t]["f1-score"], ref[t]["support"]), abs=1e-12), t
    for ours_avg, name in ((ours.micro, "micro avg"), (ours.macro, "macro avg")):
        if name in ref:
            r = ref[name]
            assert (ours_avg.precision, ours_avg.recall, ours_avg.f1) == pytest.approx(
                (r["precision"], r["recall"], r["f1-score"]), abs=1e-12), name
    kw = MODES[mode]
    assert ours.micro.f1 == pytest.approx(seqeval_metrics.f1_score(y_true, y_pred, zero_division=0, **kw), abs=1e-12)
    assert ours.micro.precision == pytest.approx(
        seqeval_metrics.precision_score(y_true, y_pred, zero_division=0, **kw), abs=1e-12)
    assert ours.micro.recall == pytest.approx(seqeval_metrics.recall_score(y_true, y_pred, zero_division=0, **kw),
                                              abs=1e-12)
    return ours


def corrupt(sentences, rate, seed, tags=LabelSet().tags):
    """Predictions with a share of tags replaced at random: many broken, partial and shifted entities."""
    rng = random.Random(seed)
    return [[t if rng.random() > rate else rng.choice(tags) for t in s] for s in sentences]


@pytest.fixture(scope="module")
def gold():
    return [list(s.tags) for s in load_wikigold("test")]


@pytest.mark.parametrize("mode", ["lenient", "strict"])
@pytest.mark.parametrize("rate,seed", [(0.0, 0), (0.02, 1), (0.1, 2), (0.3, 3), (1.0, 4)])
def test_equal_to_seqeval_on_the_whole_wikigold_test_set(gold, mode, rate, seed):
    pred = corrupt(gold, rate, seed)
    ours = assert_same_as_seqeval(gold, pred, mode)
    if rate == 0:
        assert ours.micro.f1 == 1.0 and ours.micro.support == 543


@pytest.mark.parametrize("mode", ["lenient", "strict"])
def test_equal_to_seqeval_with_iob1_style_predictions(gold, mode):
    # a tagger trained on IOB1 starts entities with I-: lenient reading keeps them, strict drops them
    as_iob1 = [[("I-" + t[2:]) if t.startswith("B-") else t for t in s] for s in gold]
    ours = assert_same_as_seqeval(gold, as_iob1, mode)
    assert ours.micro.f1 == (1.0 if mode == "lenient" else 0.0)


def test_entities_equal_seqevals_on_every_sentence(gold):
    for s in gold + corrupt(gold, 0.3, 7):
        assert get_entities(s) == seqeval_entities(s)


EDGE_CASES = {
    "I- without B- at the start": (["I-PER", "I-PER", "O"], ["B-PER", "I-PER", "O"]),
    "I- without B- after O": (["O", "B-LOC", "O"], ["O", "I-LOC", "O"]),
    "adjacent entities of one type": (["B-PER", "B-PER", "I-PER"], ["B-PER", "I-PER", "I-PER"]),
    "adjacent, predicted the same": (["B-PER", "B-PER", "I-PER"], ["B-PER", "B-PER", "I-PER"]),
    "entity at the sentence end": (["O", "O", "B-ORG", "I-ORG"], ["O", "O", "B-ORG", "I-ORG"]),
    "end cut short": (["O", "O", "B-ORG", "I-ORG"], ["O", "O", "B-ORG", "O"]),
    "one-word entity at the end": (["O", "B-MISC"], ["O", "B-MISC"]),
    "type changes inside": (["B-ORG", "I-ORG", "I-ORG"], ["B-ORG", "I-LOC", "I-ORG"]),
    "I- of another type after B-": (["B-PER", "I-PER"], ["B-PER", "I-LOC"]),
    "all O predicted": (["B-PER", "O", "B-LOC"], ["O", "O", "O"]),
    "nothing gold, something predicted": (["O", "O"], ["B-LOC", "O"]),
    "too long": (["B-LOC", "O"], ["B-LOC", "I-LOC"]),
}


@pytest.mark.parametrize("mode", ["lenient", "strict"])
@pytest.mark.parametrize("case", list(EDGE_CASES))
def test_equal_to_seqeval_on_edge_cases(case, mode):
    g, p = EDGE_CASES[case]
    assert_same_as_seqeval([g], [p], mode)
    # entities never cross sentences: the same case twice, as two sentences
    assert_same_as_seqeval([g, g], [p, p], mode)


def test_hand_counted_edge_cases():
    # adjacent same-type entities: B-PER B-PER I-PER is two people; B-PER I-PER I-PER is one, wrong span
    assert get_entities(["B-PER", "B-PER", "I-PER"]) == [("PER", 0, 0), ("PER", 1, 2)]
    r = entity_scores([["B-PER", "B-PER", "I-PER"]], [["B-PER", "I-PER", "I-PER"]])
    assert (r.micro.correct, r.micro.predicted, r.micro.support, r.micro.f1) == (0, 1, 2, 0.0)
    # I- without B-: an entity when read leniently, none when strict
    assert get_entities(["O", "I-LOC", "I-LOC"]) == [("LOC", 1, 2)]
    assert get_entities(["O", "I-LOC", "I-LOC"], mode="strict") == []
    # an entity that ends the sentence is closed
    assert get_entities(["O", "B-ORG", "I-ORG"]) == [("ORG", 1, 2)]
    # a change of type inside splits the entity
    assert get_entities(["B-ORG", "I-LOC", "I-ORG"]) == [("ORG", 0, 0), ("LOC", 1, 1), ("ORG", 2, 2)]
    assert get_entities(["B-ORG", "I-LOC", "I-ORG"], mode="strict") == [("ORG", 0, 0)]


def test_token_accuracy_flatters_a_tagger_that_finds_no_entity(gold):
    all_o = [["O"] * len(s) for s in gold]
    assert token_accuracy(gold, all_o) > 0.8
    assert entity_scores(gold, all_o).micro.f1 == 0.0


def test_bad_input_messages():
    with pytest.raises(ValueError, match="sentence 1 has 2 gold tags but 1 predicted tags"):
        entity_scores([["O"], ["O", "O"]], [["O"], ["O"]])
    with pytest.raises(ValueError, match="'PER' is not a BIO tag"):
        get_entities(["PER"])
    with pytest.raises(ValueError, match="mode must be 'lenient' or 'strict'"):
        get_entities(["O"], mode="conll")


def _resampled(sentences, idx):
    return [sentences[i] for i in idx]


@pytest.mark.parametrize("mode", ["lenient", "strict"])
def test_f1_difference_is_a_paired_bootstrap_of_entity_f1_over_sentences(gold, mode):
    """Each resample's difference is entity_scores' micro F1 (itself equal to seqeval's) on the sentences drawn,
    both taggers on the same draw; the interval is the 2.5th and 97.5th percentile of those differences."""
    import numpy as np

    from course_lib.finetuning.ner_eval import f1_difference
    from course_lib.stats import bootstrap_indices

    a, b = corrupt(gold, 0.05, 11), corrupt(gold, 0.08, 12)
    got = f1_difference(gold, a, b, mode=mode, resamples=60, seed=3)
    whole = entity_scores(gold, a, mode).micro.f1 - entity_scores(gold, b, mode).micro.f1
    assert got.difference == pytest.approx(whole, abs=1e-12)
    diffs = []
    for idx in bootstrap_indices(len(gold), 60, seed=3):
        g, pa, pb = (_resampled(x, idx) for x in (gold, a, b))
        assert len(g) == len(gold)
        diffs.append(entity_scores(g, pa, mode).micro.f1 - entity_scores(g, pb, mode).micro.f1)
    low, high = np.percentile(diffs, [2.5, 97.5])
    assert (got.low, got.high) == pytest.approx((low, high), abs=1e-12)
    assert got.a_better == pytest.approx(np.mean(np.array(diffs) > 0), abs=1e-12)
    assert got.low < got.difference < got.high and (got.n, got.resamples) == (len(gold), 60)


def test_f1_difference_of_a_tagger_with_itself_is_zero_and_of_gold_against_noise_is_clear(gold):
    from course_lib.finetuning.ner_eval import f1_difference

    noisy = corrupt(gold, 0.1, 5)
    same = f1_difference(gold, noisy, noisy, resamples=200)
    assert (same.difference, same.low, same.high, same.a_better, same.clear) == (0, 0, 0, 0, False)
    clear = f1_difference(gold, gold, noisy, resamples=200)
    assert clear.low > 0.2 and clear.a_better == 1 and clear.clear
    assert clear.difference == pytest.approx(1 - entity_scores(gold, noisy).micro.f1, abs=1e-12)
    # a small gap between two taggers as noisy as each other: the interval straddles zero
    near = f1_difference(gold, corrupt(gold, 0.05, 6), corrupt(gold, 0.05, 7), resamples=500)
    assert near.low < 0 < near.high and 0 < near.a_better < 1 and not near.clear
    # the same seed gives the same interval; another seed a different one
    assert f1_difference(gold, gold, noisy, resamples=50, seed=1) == f1_difference(gold, gold, noisy, resamples=50, seed=1)
    assert f1_difference(gold, gold, noisy, resamples=50, seed=1) != f1_difference(gold, gold, noisy, resamples=50, seed=2)


def test_f1_difference_bad_input_messages(gold):
    from course_lib.finetuning.ner_eval import f1_difference

    with pytest.raises(ValueError) as e:
        f1_difference(gold, gold[:-1], gold)
    assert str(e.value) == f"{len(gold)} gold sentences but {len(gold) - 1} and {len(gold)} predicted sentences"
    with pytest.raises(ValueError) as e:
        f1_difference([["O"]], [["O"]], [["O"]])
    assert str(e.value) == "a bootstrap needs at least 2 items, not 1"
    with pytest.raises(ValueError) as e:
        f1_difference([["O"], ["O", "O"]], [["O"], ["O"]], [["O"], ["O", "O"]])
    assert str(e.value) == "sentence 1 has 2 gold tags but 1 and 2 predicted tags"
    with pytest.raises(ValueError) as e:
        f1_difference(gold, gold, gold, resamples=0)
    assert str(e.value) == "resamples must be at least 1, not 0"
