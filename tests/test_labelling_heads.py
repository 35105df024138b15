"""The token-classification head (eq. 11.14) and the QA head (S, E) against transformers' BertForTokenClassification
and BertForQuestionAnswering with the same weights: logits and losses, atol 1e-5; -100 ignored; the
encoder is shared, not copied."""
from __future__ import annotations

import pytest
import torch

from course_lib.finetuning.labelling import IGNORE_INDEX, align_labels, encode_words
from course_lib.model.bert import BertConfig, BertModel
from course_lib.model.qa import BertForQuestionAnswering
from course_lib.model.tagging import BertForTokenClassification

ATOL = 1e-5
TINY = BertConfig(vocab_size=30522, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)


@pytest.fixture(scope="module")
def tokenizer():
    import course_lib

    return course_lib.load_pretrained()[1]


def hf(cls_name, config: BertConfig, state_dict, **kw):
    import transformers

    cfg = transformers.BertConfig(**config.to_dict(), **kw)
    ref = getattr(transformers, cls_name)(cfg).eval()
    missing, unexpected = ref.load_state_dict(state_dict, strict=False)
    assert not [k for k in missing if "position_ids" not in k], missing
    assert not unexpected, unexpected
    return ref


def test_token_classification_matches_transformers(tokenizer):
    torch.manual_seed(0)
    model = BertForTokenClassification.from_config(TINY, num_labels=9).eval()
    ref = hf("BertForTokenClassification", TINY, model.state_dict(), num_labels=9, attn_implementation="eager")
    enc = encode_words(tokenizer, [["Mt.", "Sanitas", "is", "in", "Sunshine", "Canyon", "."], ["Jane", "flew"]])
    tags = [[1, 2, 0, 0, 1, 2, 0], [3, 0]]
    labels = torch.tensor([align_labels(t, w, "first") for t, w in zip(tags, enc.word_ids)])
    assert (labels == IGNORE_INDEX).any()
    with torch.no_grad():
        ours = model(**enc, labels=labels)
        theirs = ref(**{k: enc[k] for k in enc.keys()}, labels=labels)
    torch.testing.assert_close(ours.logits, theirs.logits, atol=ATOL, rtol=0)
    torch.testing.assert_close(ours.loss, theirs.loss, atol=ATOL, rtol=0)
    # eq. 11.14 by hand: softmax(W_K z_i), and the loss averages only over labels != -100
    z = model.bert(**enc).last_hidden_state
    y = torch.softmax(z @ model.classifier.weight.T + model.classifier.bias, -1)
    torch.testing.assert_close(torch.softmax(ours.logits, -1), y, atol=ATOL, rtol=0)
    keep = labels != IGNORE_INDEX
    by_hand = -torch.log(y[keep].gather(1, labels[keep][:, None])).mean()
    torch.testing.assert_close(ours.loss, by_hand, atol=ATOL, rtol=0)


def test_qa_head_matches_transformers_and_uses_S_and_E(tokenizer):
    torch.manual_seed(1)
    model = BertForQuestionAnswering.from_config(TINY).eval()
    ref = hf("BertForQuestionAnswering", TINY, model.state_dict(), attn_implementation="eager")
    enc = tokenizer(["Where is Mt. Sanitas?", "Who?"], ["It is in Sunshine Canyon.", "Jane Villanueva of United."])
    starts, ends = torch.tensor([9, 0]), torch.tensor([11, 0])
    with torch.no_grad():
        ours = model(**enc, start_positions=starts, end_positions=ends)
        theirs = ref(**{k: enc[k] for k in enc.keys()}, start_positions=starts, end_positions=ends)
    torch.testing.assert_close(ours.start_logits, theirs.start_logits, atol=ATOL, rtol=0)
    torch.testing.assert_close(ours.end_logits, theirs.end_logits, atol=ATOL, rtol=0)
    torch.testing.assert_close(ours.loss, theirs.loss, atol=ATOL, rtol=0)
    # P(start = i) = softmax_i(S · T_i): the start logits are S · T_i (+ a bias that cancels in the softmax)
    T_ = ours.last_hidden_state
    torch.testing.assert_close(torch.softmax(ours.start_logits, -1), torch.softmax(T_ @ model.S, -1), atol=ATOL, rtol=0)
    torch.testing.assert_close(torch.softmax(ours.end_logits, -1), torch.softmax(T_ @ model.E, -1), atol=ATOL, rtol=0)
    assert not hasattr(ours, "logits")  # as in transformers: start_logits and end_logits


def test_heads_share_the_encoder():
    enc = BertModel(TINY)
    tagger, qa = BertForTokenClassification(enc, 9), BertForQuestionAnswering(enc)
    assert tagger.bert is enc and qa.bert is enc
    assert tagger.bert.embeddings.word_embeddings.weight.data_ptr() == enc.embeddings.word_embeddings.weight.data_ptr()


def test_bad_input_messages():
    enc = BertModel(TINY)
    with pytest.raises(TypeError, match="the encoder must be a BertModel"):
        BertForTokenClassification(torch.nn.Linear(2, 2), 9)
    with pytest.raises(ValueError, match="at least 2 labels"):
        BertForTokenClassification(enc, 1)
    qa = BertForQuestionAnswering(enc)
    with pytest.raises(ValueError, match="answer positions must lie in 0..2"):
        qa(torch.tensor([[101, 2000, 102]]), start_positions=torch.tensor([5]), end_positions=torch.tensor([1]))
    with pytest.raises(ValueError, match="give both start_positions and end_positions"):
        qa(torch.tensor([[101, 2000, 102]]), start_positions=torch.tensor([1]))
    tagger = BertForTokenClassification(enc, 9)
    with pytest.raises(ValueError, match=r"labels have shape \(1, 2\), the tokens \(1, 3\)"):
        tagger(torch.tensor([[101, 2000, 102]]), labels=torch.tensor([[0, 0]]))
