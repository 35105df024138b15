"""Word tags <-> subword labels (§11.4.3, eq. 11.16): encoding pre-split words, both training alignments,
first-subword decoding and the combined-distribution alternative, IOB1 -> BIO."""
from __future__ import annotations

import pytest
import torch

from course_lib.finetuning.labelling import (IGNORE_INDEX, LabelSet, align_labels, bio_violations, decode_combined,
                                             decode_first_subword, encode_words, first_subword_positions,
                                             iob1_to_bio, load_wikigold, subword_entities_every)
from course_lib.finetuning.ner_eval import get_entities

WORDS = ["Mt.", "Sanitas", "is", "in", "Sunshine", "Canyon", "."]
TAGS = ["B-LOC", "I-LOC", "O", "O", "B-LOC", "I-LOC", "O"]  # eq. 11.16
X = IGNORE_INDEX


@pytest.fixture(scope="module")
def tokenizer():
    import course_lib

    return course_lib.load_pretrained()[1]


def test_mt_sanitas_subwords_and_word_ids(tokenizer):
    enc = encode_words(tokenizer, WORDS)
    assert enc.tokens[0] == ["[CLS]", "mt", ".", "san", "##itas", "is", "in", "sunshine", "canyon", ".", "[SEP]"]
    assert enc.word_ids[0] == [None, 0, 0, 1, 1, 2, 3, 4, 5, 6, None]
    assert enc.input_ids.tolist()[0] == tokenizer.convert_tokens_to_ids(enc.tokens[0])
    # the same text tokenized as a string splits 'Mt.' into two words
    assert tokenizer(" ".join(WORDS)).word_ids[0][1:3] == [0, 1]


def test_the_chapters_alignment_copies_b_onto_continuation_pieces(tokenizer):
    wids = encode_words(tokenizer, WORDS).word_ids[0]
    assert align_labels(TAGS, wids, "every") == [X, "B-LOC", "B-LOC", "I-LOC", "I-LOC", "O", "O", "B-LOC", "I-LOC",
                                                  "O", X]
    # read as BIO, the copied B- starts a second entity: 3 subword entities for 2 gold ones
    assert subword_entities_every(TAGS, wids) == 3 and len(get_entities(TAGS)) == 2


def test_first_subword_alignment_ignores_later_pieces(tokenizer):
    wids = encode_words(tokenizer, WORDS).word_ids[0]
    assert align_labels(TAGS, wids, "first") == [X, "B-LOC", X, "I-LOC", X, "O", "O", "B-LOC", "I-LOC", "O", X]


def test_alignments_on_a_padded_batch_and_with_ids(tokenizer):
    labels = LabelSet()
    sents = [["Jane", "Villanueva", "flew"], WORDS]
    enc = encode_words(tokenizer, sents)
    assert enc.input_ids.shape[0] == 2 and enc.word_ids[0][-1] is None  # padded
    ids = labels.encode(["B-PER", "I-PER", "O"])
    for policy in ("every", "first"):
        out = align_labels(ids, enc.word_ids[0], policy)
        assert len(out) == enc.input_ids.shape[1]
        assert all(o == X for o, w in zip(out, enc.word_ids[0]) if w is None)
        # every word's first subword carries its tag under both policies
        assert [out[i] for i in first_subword_positions(enc.word_ids[0])] == ids


def test_first_subword_decoding_round_trips_and_ignores_later_pieces(tokenizer):
    wids = encode_words(tokenizer, WORDS).word_ids[0]
    for policy in ("every", "first"):
        assert decode_first_subword(align_labels(TAGS, wids, policy), wids) == TAGS
    # whatever the continuation pieces say is ignored: '.' of 'Mt.' and '##itas'
    noisy = align_labels(TAGS, wids, "every")
    noisy[2], noisy[4] = "O", "B-PER"
    assert decode_first_subword(noisy, wids) == TAGS
    assert decode_first_subword(torch.tensor([0, 1, 5, 2, 7, 0, 0, 1, 2, 0, 0]), wids) == [1, 2, 0, 0, 1, 2, 0]


def test_combined_decoding_can_overrule_the_first_piece():
    wids = [None, 0, 0, 0, 1, None]
    logits = torch.full((6, 3), -5.0)
    logits[1] = torch.tensor([0.0, 0.2, -5])   # first piece: class 1 by a hair
    logits[2] = torch.tensor([4.0, -5, -5])    # later pieces: clearly class 0
    logits[3] = torch.tensor([4.0, -5, -5])
    logits[4] = torch.tensor([-5, -5, 3.0])
    assert decode_first_subword(logits.argmax(-1), wids) == [1, 2]
    assert decode_combined(logits, wids, "mean") == [0, 2]
    assert decode_combined(logits, wids, "product") == [0, 2]
    # one piece per word: all three agree
    one = [None, 0, 1, None]
    assert decode_combined(logits[[0, 1, 4, 5]], one) == decode_first_subword(logits[[0, 1, 4, 5]].argmax(-1), one)


def test_iob1_to_bio_examples():
    assert iob1_to_bio(["I-ORG", "I-ORG", "O", "I-PER"]) == ["B-ORG", "I-ORG", "O", "B-PER"]
    assert iob1_to_bio(["I-PER", "B-PER", "I-PER"]) == ["B-PER", "B-PER", "I-PER"]  # two adjacent people
    assert iob1_to_bio(["I-PER", "I-LOC"]) == ["B-PER", "B-LOC"]                     # a change of type
    assert bio_violations(["O", "I-PER", "B-LOC", "I-PER"]) == [1, 3]


def test_every_wikigold_training_sentence_aligns_and_decodes_back(tokenizer):
    sents = load_wikigold("train")
    enc = encode_words(tokenizer, [list(s.words) for s in sents[:200]])
    for s, wids in zip(sents[:200], enc.word_ids):
        for policy in ("every", "first"):
            assert decode_first_subword(align_labels(list(s.tags), wids, policy), wids) == list(s.tags)


def test_bad_input_messages(tokenizer):
    with pytest.raises(ValueError, match="unknown alignment policy 'last'"):
        align_labels(TAGS, [None, 0, None], "last")
    with pytest.raises(ValueError, match="word id 7 is out of range: there are 7 word tags"):
        align_labels(TAGS, [None, 7, None])
    with pytest.raises(ValueError, match="no words given"):
        encode_words(tokenizer, [])
    with pytest.raises(ValueError, match="every word must be a non-empty string"):
        encode_words(tokenizer, ["Mt.", " "])
    with pytest.raises(ValueError, match="unknown tag 'B-FOO'"):
        LabelSet().encode(["O", "B-FOO"])
    with pytest.raises(ValueError, match="sentence 0 has 12 subwords, more than the limit of 5"):
        encode_words(tokenizer, WORDS + ["again"], max_length=5)
    cut = encode_words(tokenizer, WORDS, max_length=5, truncation=True)
    assert cut.tokens[0] == ["[CLS]", "mt", ".", "san", "[SEP]"] and cut.word_ids[0][-1] is None
