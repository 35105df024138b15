"""course_lib.pretraining.whole_word: one piece of a word masked alone, or with its whole word."""
import random

import pytest
import torch

import course_lib
from course_lib.model.bert import BertConfig
from course_lib.model.heads import BertForPreTraining
from course_lib.pretraining.fill_mask import NoMLMHeadError
from course_lib.pretraining.whole_word import CONDITIONS, mask_one_word, piece_vs_whole_word

TEXTS = ["Unsurprisingly, the mountaineers acclimatised before the ascent.", "The cat sat.",
         "Sanitas is a mountain near Boulder.", "Photosynthesis needs light."]


@pytest.fixture(scope="module")
def tokenizer():
    return course_lib.load_pretrained()[1]  # the embedded MiniLM's WordPiece tokenizer (30,522)


@pytest.fixture(scope="module")
def tiny(tokenizer):
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=128)
    return BertForPreTraining(config, nsp=False).eval()


def test_one_piece_or_its_whole_word_is_masked_in_rows_that_have_a_long_word(tokenizer):
    enc = tokenizer(TEXTS)
    before = enc.input_ids.clone()
    mask = tokenizer.mask_token_id
    rows, positions, piece, whole = mask_one_word(enc.input_ids, enc.word_ids, mask, random.Random(0))
    assert torch.equal(enc.input_ids, before), "input_ids must not be modified"
    long_rows = [b for b, w in enumerate(enc.word_ids) if any(w.count(i) >= 2 for i in set(w) - {None})]
    assert rows == long_rows and 1 not in rows  # "The cat sat." has no word of two pieces
    for k, (b, t) in enumerate(zip(rows, positions)):
        word = [i for i, w in enumerate(enc.word_ids[b]) if w == enc.word_ids[b][t]]
        assert len(word) >= 2 and t in word
        assert (piece[k] != enc.input_ids[b]).nonzero().flatten().tolist() == [t] and piece[k, t] == mask
        assert (whole[k] != enc.input_ids[b]).nonzero().flatten().tolist() == word
        assert (whole[k, word] == mask).all()
    again = mask_one_word(enc.input_ids, enc.word_ids, mask, random.Random(0))
    assert again[:2] == (rows, positions), "seeded"


def test_the_scores_are_the_models_own_softmax_at_the_piece(tokenizer, tiny):
    """Batched, padded and cut by length inside piece_vs_whole_word; by hand here, one text at a time: the same
    P(original) at 1e-6."""
    scores = piece_vs_whole_word(tiny, tokenizer, TEXTS, seed=3, batch_size=4)
    assert list(scores) == list(CONDITIONS) and scores["piece alone"].n == scores["whole word"].n == 3
    enc = tokenizer(TEXTS)
    rows, positions, piece, whole = mask_one_word(enc.input_ids, enc.word_ids, tokenizer.mask_token_id,
                                                  random.Random(3))
    for condition, ids in zip(CONDITIONS, (piece, whole)):
        p_sum, hits = 0.0, 0
        for k, (b, t) in enumerate(zip(rows, positions)):
            n = int(enc.attention_mask[b].sum())
            with torch.no_grad():
                logits = tiny(ids[k:k + 1, :n]).logits[0, t]
            original = int(enc.input_ids[b, t])
            p_sum += float(logits.softmax(-1)[original])
            hits += int(logits.argmax()) == original
        assert scores[condition].p_original == pytest.approx(p_sum / len(rows), abs=1e-6)
        assert scores[condition].top1 == hits / len(rows)
    assert piece_vs_whole_word(tiny, tokenizer, TEXTS, seed=3, batch_size=2) == scores, "batches change nothing"


def test_bad_input_gets_a_clear_error(tokenizer, tiny):
    with pytest.raises(ValueError, match="^no texts to mask$"):
        piece_vs_whole_word(tiny, tokenizer, [])
    with pytest.raises(ValueError, match="none of the texts has a word of two or more pieces"):
        piece_vs_whole_word(tiny, tokenizer, ["The cat sat.", "A dog ran."])
    encoder = course_lib.load_pretrained()[0]  # MiniLM: no MLM head
    with pytest.raises(NoMLMHeadError, match="has no MLM head to ask"):
        piece_vs_whole_word(encoder, tokenizer, TEXTS)
