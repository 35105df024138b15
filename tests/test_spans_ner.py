"""Span-based NER (§11.5.2, eq. 11.27-11.28): enumeration, labels, BIO's limit, decoding, span-level scores."""
from __future__ import annotations

import pytest
import torch

from course_lib.finetuning.ner_eval import get_entities
from course_lib.spans import (SpanLabels, SpanNERClassifier, SpanSentence, bio_sequences_containing, bio_tags,
                              count_spans, decode_flat, decode_spans, enumerate_spans, nesting_depths, outermost,
                              span_labels, span_scores, word_token_spans)

JANE = SpanSentence("Jane Villanueva of United Airlines Holding discussed".split(),
                    [(0, 1, "PER"), (3, 4, "ORG"), (3, 5, "ORG")])


@pytest.mark.parametrize("n", [0, 1, 2, 5, 13, 40])
def test_all_spans_number_t_t_plus_1_over_2(n):
    spans = enumerate_spans(n)
    assert len(spans) == n * (n + 1) // 2 == count_spans(n)
    assert len(set(spans)) == len(spans) and all(0 <= i <= j < n for i, j in spans)


@pytest.mark.parametrize("n, L", [(5, 1), (5, 3), (10, 4), (4, 10), (30, 8)])
def test_length_limit_keeps_spans_with_j_minus_i_below_l(n, L):
    spans = enumerate_spans(n, L)
    expected = [(i, j) for i in range(n) for j in range(i, n) if j - i < L]
    assert spans == expected
    assert count_spans(n, L) == len(expected)


def test_enumeration_refuses_nonsense():
    with pytest.raises(ValueError, match="length limit"):
        enumerate_spans(5, 0)
    with pytest.raises(ValueError, match="number of tokens"):
        count_spans(-1)


def test_every_span_gets_null_unless_it_is_an_entity():
    labels = SpanLabels(["LOC", "ORG", "PER"])
    spans, ids = span_labels(JANE, labels, max_len=3)
    assert len(spans) == count_spans(7, 3)
    named = {sp: labels.names[y] for sp, y in zip(spans, ids) if y}
    assert named == {(0, 1): "PER", (3, 4): "ORG", (3, 5): "ORG"}
    assert labels.names[0] == "NULL" and labels.id("ORG") == 2
    with pytest.raises(ValueError, match="unknown label 'MISC'"):
        labels.id("MISC")


def test_bio_cannot_hold_united_airlines_and_united_airlines_holding():
    with pytest.raises(ValueError, match="share word 3"):
        bio_tags(7, JANE.entities)
    keep, lost = outermost(JANE.entities)
    assert bio_tags(7, keep) == ["B-PER", "I-PER", "O", "B-ORG", "I-ORG", "I-ORG", "O"]
    assert lost == [(3, 4, "ORG")]
    found, total = bio_sequences_containing(6, [(3, 4, "ORG"), (3, 5, "ORG")], ["ORG", "PER"])
    assert (found, total) == (0, 5 ** 6)
    found_one, _ = bio_sequences_containing(6, [(3, 5, "ORG")], ["ORG", "PER"])
    assert found_one > 0  # one of them alone is easy


def test_eq_11_28_labelling_is_judged_wrong_by_a_strict_reader():
    tags = ["B-PER", "I-PER", "O", "I-ORG", "I-ORG", "I-ORG", "O"]  # the first ORG word is wrong
    assert get_entities(tags, "strict") == [("PER", 0, 1)]


def test_nesting_depths():
    ents = [(0, 6, "ORG"), (1, 4, "ORG"), (2, 3, "LOC"), (5, 6, "LOC")]
    assert nesting_depths(ents) == [1, 2, 3, 2]
    assert nesting_depths(JANE.entities) == [1, 2, 1]


def test_word_spans_map_to_first_and_last_subwords():
    word_ids = [None, 0, 1, 1, 2, 3, 3, 3, None]
    assert word_token_spans(word_ids, [(0, 0), (1, 2), (1, 3)]) == [(1, 1), (2, 4), (2, 7)]
    with pytest.raises(ValueError, match="without tokens"):
        word_token_spans(word_ids, [(0, 4)])


def test_decoding_keeps_nested_spans_and_greedy_flat_drops_the_overlaps():
    labels = SpanLabels(["LOC", "ORG", "PER"])
    spans = [(0, 1), (3, 4), (3, 5), (4, 4)]
    probs = torch.tensor([[0.1, 0.0, 0.0, 0.9],   # PER
                          [0.3, 0.0, 0.7, 0.0],   # ORG
                          [0.2, 0.0, 0.8, 0.0],   # ORG, more probable than (3, 4)
                          [0.6, 0.3, 0.1, 0.0]])  # NULL
    pred = decode_spans(probs, spans, labels)
    assert [p[:3] for p in pred] == [(0, 1, "PER"), (3, 4, "ORG"), (3, 5, "ORG")]
    assert [p[:3] for p in decode_flat(pred)] == [(0, 1, "PER"), (3, 5, "ORG")]
    # a threshold only removes entities: (4, 4), where NULL wins, stays out however low it is
    assert decode_spans(probs, spans, labels, threshold=0.3) == pred
    strict = decode_spans(probs, spans, labels, threshold=0.75)
    assert [p[:3] for p in strict] == [(0, 1, "PER"), (3, 5, "ORG")]     # ORG at 0.7 is dropped
    with pytest.raises(ValueError, match=r"\(N, K\)"):
        decode_spans(probs[:2], spans, labels)


def test_span_scores_by_hand():
    gold = [[(0, 1, "PER"), (3, 4, "ORG"), (3, 5, "ORG")], [(2, 2, "LOC")]]
    pred = [[(0, 1, "PER", 0.9), (3, 5, "ORG", 0.8), (3, 5, "LOC", 0.4)], [(2, 3, "LOC", 0.7)]]
    s = span_scores(gold, pred)
    assert (s.correct, s.predicted, s.gold) == (2, 4, 4)
    assert s.precision == 0.5 and s.recall == 0.5 and s.f1 == 0.5


def test_classifier_shapes_and_loss():
    torch.manual_seed(0)
    labels = SpanLabels(["LOC", "ORG", "PER"])
    m = SpanNERClassifier(8, labels, "attention", d_boundary=4, d_ffn=16)
    states = torch.randn(2, 6, 8)
    spans = torch.tensor([[0, 1, 2], [1, 0, 5], [1, 3, 3]])
    out = m(states, spans, torch.tensor([0, 2, 1]))
    assert out.logits.shape == (3, 4) and out.loss.dim() == 0
