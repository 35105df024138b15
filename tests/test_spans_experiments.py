"""The pieces of notebook 11.5's runs, on small inputs: the cut encoder, the BIO version of nested data, span
examples and batches, the span scorer, and the comparison's bookkeeping."""
from __future__ import annotations

import pytest
import torch

import course_lib
from course_lib.finetuning.ner_eval import get_entities
from course_lib.spans import SpanLabels, SpanSentence, count_spans
from course_lib.spans.experiments import (SpanNERModel, build_bio_tagger, collate_spans, compare, inner_hits, span_examples,
                                          span_scorer, tagged, truncated_encoder)

JANE = SpanSentence("Jane Villanueva of United Airlines Holding discussed".split(),
                    [(0, 1, "PER"), (3, 4, "ORG"), (3, 5, "ORG")])
HK = SpanSentence("She won in Hong Kong Island .".split(), [(0, 0, "PER"), (3, 4, "LOC"), (3, 5, "LOC")])


@pytest.fixture(scope="module")
def embedded():
    return course_lib.load_pretrained()


def test_truncated_encoder_shares_the_first_blocks_and_stops_there(embedded):
    model, tok = embedded
    cut = truncated_encoder(model, 2)
    assert len(cut.encoder.layer) == 2 and len(model.encoder.layer) == 6
    assert cut.encoder.layer[1] is model.encoder.layer[1]
    assert cut.embeddings is model.embeddings
    enc = tok("Mt. Sanitas is in Sunshine Canyon.").to(model.device)  # load_pretrained() puts it on cuda when there
    with torch.no_grad():
        full = model(enc.input_ids, enc.attention_mask, output_hidden_states=True).hidden_states[2]
        short = cut(enc.input_ids, enc.attention_mask, output_hidden_states=False).last_hidden_state
    assert torch.allclose(full, short, atol=1e-5)
    with pytest.raises(ValueError, match="between 1 and 6"):
        truncated_encoder(model, 7)


def test_bio_version_keeps_the_outermost_entities():
    bio, lost = tagged([JANE, HK])
    assert lost == 2
    assert list(bio[0].tags) == ["B-PER", "I-PER", "O", "B-ORG", "I-ORG", "I-ORG", "O"]
    assert get_entities(bio[1].tags) == [("PER", 0, 0), ("LOC", 3, 5)]


def test_span_examples_label_every_span_and_collate_samples_nulls(embedded):
    model, tok = embedded
    sm = SpanNERModel(truncated_encoder(model, 1), SpanLabels(["LOC", "ORG", "PER"]))
    ex = span_examples(sm, tok, [JANE, HK], max_len=3)
    assert [len(e.labels) for e in ex] == [count_spans(7, 3), count_spans(7, 3)]
    named = {sp: sm.labels.names[y] for sp, y in zip(ex[0].word_spans, ex[0].labels) if y}
    assert named == {(0, 1): "PER", (3, 4): "ORG", (3, 5): "ORG"}
    assert ex[0].hidden.shape[1] == 384
    full = collate_spans(ex)
    assert full["spans"].shape == (2 * count_spans(7, 3), 3) and full["labels"].shape == (2 * count_spans(7, 3),)
    torch.manual_seed(0)
    some = collate_spans(ex, null_share=0.0)
    assert (some["labels"] > 0).all() and len(some["labels"]) == 6  # only the entities are left


def test_span_scorer_scores_every_span_up_to_the_limit(embedded):
    model, tok = embedded
    torch.manual_seed(0)
    sm = SpanNERModel(truncated_encoder(model, 1), SpanLabels(["LOC", "ORG", "PER"]))
    spans, probs, names = span_scorer(sm, tok, max_len=4)(list(JANE.words))
    assert len(spans) == count_spans(7, 4) and probs.shape == (len(spans), 4) and names[0] == "NULL"
    assert torch.allclose(probs.sum(-1), torch.ones(len(spans)), atol=1e-5)


def test_bio_tagger_is_11_4bs_ner_tagger_with_the_head_alone(embedded):
    model, tok = embedded
    tagger = build_bio_tagger(truncated_encoder(model, 1), tok)
    assert tagger.train_layers == 0 and tagger.labels.tags == ("O", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-PER", "I-PER")


def test_compare_counts_nested_and_flat_by_hand():
    gold = [JANE, HK]
    span_pred = [[(0, 1, "PER", 0.9), (3, 4, "ORG", 0.8), (3, 5, "ORG", 0.7)], [(3, 4, "LOC", 0.9)]]
    bio_pred = [[(0, 1, "PER"), (3, 5, "ORG")], [(3, 4, "LOC")]]
    c = compare(gold, span_pred, bio_pred, max_len=8)
    assert (c.nested["span"].correct, c.nested["span"].predicted, c.nested["span"].gold) == (4, 4, 6)
    assert (c.nested["bio"].correct, c.nested["bio"].predicted) == (3, 3)
    # flat: gold = outermost (4); the span model decoded greedily keeps (3, 4) over (3, 5) by probability
    assert c.flat["span"].gold == 4 and c.flat["span"].correct == 1
    assert c.inner_recall == {"span": 1.0, "bio": 0.5} and c.n_inner == 2 and c.n_gold == 6
    assert "cannot represent" in c.table()
    # inner entities found, and found with the entity around them: the span model has United Airlines with
    # United Airlines Holding; the tagger's hit (Hong Kong) comes in place of the outer entity, never with it
    assert c.inner_found == {"span": 2, "bio": 1} and c.inner_with_outer == {"span": 1, "bio": 0}
    assert "2 of 2, 1 with their enclosing one" in c.table()
    assert inner_hits(gold, bio_pred) == [(1, (3, 4, "LOC"), [(3, 5, "LOC")], False)]
