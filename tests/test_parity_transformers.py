"""Parity with the reference implementation: Hugging Face transformers' BertModel (eager attention).

Same checkpoint, same padded batch (it includes a sentence pair), atol 1e-5.
"""
import pytest
import torch

import course_lib
from course_lib.pretrained import read_state_dict
from conftest import encode_parity_batch, make_hf_mlm_checkpoint

ATOL = 1e-5


def reference(model_dir, device="cpu"):
    import transformers

    return transformers.BertModel.from_pretrained(model_dir, attn_implementation="eager").to(device).eval()


def compare_with_reference(device):
    model, tok = course_lib.load_pretrained(device=device)
    ref = reference(course_lib.pretrained.embedded_model_dir(), device)
    batch = encode_parity_batch(tok, device)
    assert (batch["attention_mask"] == 0).any() and (batch["token_type_ids"] == 1).any(), "batch must be padded and hold a pair"
    with torch.no_grad():
        ours = model(**batch, output_attentions=True)
        theirs = ref(**batch, output_attentions=True, output_hidden_states=True)
    torch.testing.assert_close(ours.last_hidden_state, theirs.last_hidden_state, atol=ATOL, rtol=0)
    assert len(ours.hidden_states) == len(theirs.hidden_states) == 7
    for i, (a, b) in enumerate(zip(ours.hidden_states, theirs.hidden_states)):
        torch.testing.assert_close(a, b, atol=ATOL, rtol=0, msg=lambda m, i=i: f"hidden_states[{i}]: {m}")
    assert len(ours.weights) == len(theirs.attentions) == 6
    for i, (a, b) in enumerate(zip(ours.weights, theirs.attentions)):
        torch.testing.assert_close(a, b, atol=ATOL, rtol=0, msg=lambda m, i=i: f"attention weights of layer {i}: {m}")
    torch.testing.assert_close(ours.pooler_output, theirs.pooler_output, atol=ATOL, rtol=0)
    return model, ref, batch


def test_encoder_matches_transformers_on_padded_batch_with_pair():
    compare_with_reference("cpu")


@pytest.mark.gpu
def test_encoder_matches_transformers_on_cuda():
    model, _, batch = compare_with_reference("cuda")
    assert model.device.type == "cuda" and batch["input_ids"].device.type == "cuda"


def test_parameter_names_are_checkpoint_keys(embedded, embedded_dir):
    model, _ = embedded
    ckpt = set(read_state_dict(embedded_dir)) - {"embeddings.position_ids"}
    assert set(model.state_dict()) == ckpt


def test_fast_path_matches_transformers_sdpa(embedded, parity_batch, embedded_dir):
    import transformers

    model, _ = embedded
    ref = transformers.BertModel.from_pretrained(embedded_dir, attn_implementation="sdpa").eval()
    with torch.no_grad():
        ours, theirs = model(**parity_batch), ref(**parity_batch)
    am = parity_batch["attention_mask"].bool()
    torch.testing.assert_close(ours.last_hidden_state[am], theirs.last_hidden_state[am], atol=ATOL, rtol=0)


@pytest.mark.parametrize("safe", [True, False], ids=["safetensors", "pytorch_model.bin"])
@pytest.mark.parametrize("nsp", [False, True], ids=["BertForMaskedLM", "BertForPreTraining"])
def test_mlm_head_matches_transformers(tmp_path, embedded_dir, safe, nsp):
    ref = make_hf_mlm_checkpoint(tmp_path, embedded_dir, safe=safe, nsp=nsp, seed=1)
    model, tok = course_lib.load_pretrained(tmp_path, device="cpu")
    assert isinstance(model, course_lib.BertForPreTraining) and model.has_mlm_head
    batch = encode_parity_batch(tok)
    with torch.no_grad():
        ours = model(**batch)
        theirs = ref(**batch)
    logits = theirs.prediction_logits if nsp else theirs.logits
    torch.testing.assert_close(ours.logits, logits, atol=ATOL, rtol=0)
    if nsp:
        torch.testing.assert_close(ours.nsp_logits, theirs.seq_relationship_logits, atol=ATOL, rtol=0)
    else:
        assert ours.nsp_logits is None
    # the MLM decoder is tied to the word embeddings, as in BERT
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
