"""Parity with the reference implementation: Hugging Face transformers' BertModel (eager attention).

Same checkpoint, same padded batch (it includes a sentence pair), atol 1e-5 on CPU. Vectors are compared at real
tokens only: what an encoder leaves at padding positions is not part of its output (both mask them out of every
attention), and there the two implementations may round differently. On CUDA the tolerance is 1e-4: its kernels
sum in another order than the CPU's, and float32 rounding through six layers reaches about 1e-5.
"""
import pytest
import torch

import course_lib
from course_lib.checkpoints import read_state_dict
from conftest import encode_parity_batch, make_hf_mlm_checkpoint

ATOL = 1e-5
ATOL_CUDA = 1e-4


def reference(model_dir, device="cpu"):
    import transformers

    return transformers.BertModel.from_pretrained(model_dir, attn_implementation="eager", dtype=torch.float32).to(device).eval()


def compare_with_reference(device):
    model, tok = course_lib.load_pretrained(device=device)
    ref = reference(course_lib.checkpoints.embedded_model_dir(), device)
    batch = encode_parity_batch(tok, device)
    assert (batch["attention_mask"] == 0).any() and (batch["token_type_ids"] == 1).any(), "batch must be padded and hold a pair"
    with torch.no_grad():
        ours = model(**batch, output_attentions=True, output_hidden_states=True)
        theirs = ref(**batch, output_attentions=True, output_hidden_states=True)
    atol = ATOL_CUDA if str(device).startswith("cuda") else ATOL
    real = batch["attention_mask"].bool()  # (B, T): real tokens (queries of attention rows, positions of vectors)

    def at_real(x):  # (B, T, d) -> (n_real, d); (B, H, T, T) -> real query rows (B, H, n, T) flattened
        return x[real] if x.dim() == 3 else x.permute(0, 2, 1, 3)[real]

    for field in OUTPUT_FIELDS:  # the same names in both, compared field by field
        a, b = getattr(ours, field), getattr(theirs, field)
        if isinstance(b, tuple):
            assert len(a) == len(b) == {"hidden_states": 7, "attentions": 6}[field], field
            for i, (x, y) in enumerate(zip(a, b)):
                torch.testing.assert_close(at_real(x), at_real(y), atol=atol, rtol=0,
                                           msg=lambda m, f=field, i=i: f"{f}[{i}]: {m}")
        elif field == "last_hidden_state":
            torch.testing.assert_close(at_real(a), at_real(b), atol=atol, rtol=0, msg=lambda m, f=field: f"{f}: {m}")
        else:
            torch.testing.assert_close(a, b, atol=atol, rtol=0, msg=lambda m, f=field: f"{f}: {m}")
    return model, ref, batch


OUTPUT_FIELDS = ("last_hidden_state", "pooler_output", "hidden_states", "attentions")


def test_outputs_are_off_by_default_as_in_transformers(embedded, parity_batch, embedded_dir):
    model, _ = embedded
    ref = reference(embedded_dir, "cpu")
    with torch.no_grad():
        ours, theirs = model(**parity_batch), ref(**parity_batch)
    for field in ("hidden_states", "attentions"):
        assert getattr(ours, field) is None and getattr(theirs, field) is None, field


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
    ref = transformers.BertModel.from_pretrained(embedded_dir, attn_implementation="sdpa", dtype=torch.float32).eval()
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
        torch.testing.assert_close(ours.seq_relationship_logits, theirs.seq_relationship_logits, atol=ATOL, rtol=0)
    else:
        assert ours.seq_relationship_logits is None
    # the MLM decoder is tied to the word embeddings, as in BERT
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
