"""load_pretrained: the embedded model, local directories, the hub cache, and every bad input's message."""
import json
import os
import shutil
from pathlib import Path

import pytest
import torch

import course_lib
from course_lib import CheckpointError, fill_mask, get_device, seed_everything
from course_lib.pretraining.fill_mask import NoMLMHeadError


def copy_model(src: Path, dst: Path, skip=()):
    dst.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        if f.is_file() and f.name not in skip:
            shutil.copy(f, dst / f.name)
    return dst


def test_default_is_the_embedded_minilm(embedded):
    model, tok = embedded
    c = model.config
    assert (c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.vocab_size) == (6, 384, 12, 30522)
    assert model.name_or_path == "all-MiniLM-L6-v2"
    assert not model.training, "a loaded model is in eval mode"
    assert tok.vocab_size == 30522 and tok.model_max_length == 512


def test_local_directory_loads_the_same_weights(tmp_path, embedded, embedded_dir):
    model, _ = course_lib.load_pretrained(copy_model(embedded_dir, tmp_path / "m"), device="cpu")
    for (k, a), (_, b) in zip(model.state_dict().items(), embedded[0].state_dict().items()):
        assert torch.equal(a, b), k


def _fake_hub_cache(cache: Path, repo_id: str, files_from: Path) -> Path:
    """Lay out a Hugging Face cache entry (models--org--name/{refs,snapshots}) by hand, as a download would."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    return copy_model(files_from, repo / "snapshots" / commit)


def test_hub_id_is_resolved_through_huggingface_hub_cache(tmp_path, tiny_mlm_dir):
    src, _ = tiny_mlm_dir
    snap = _fake_hub_cache(tmp_path, "course-lib/tiny-bert", src)
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    model, tok = course_lib.load_pretrained("course-lib/tiny-bert", device="cpu", cache_dir=tmp_path)
    assert model.has_mlm_head and model.config.hidden_size == 32
    assert course_lib.checkpoints.resolve_model_dir("course-lib/tiny-bert", cache_dir=tmp_path) == snap


def test_unknown_hub_id_offline_says_what_failed(tmp_path):
    with pytest.raises(OSError, match=r"could not load 'nobody/no-such-bert': it is not a local directory, and fetching "
                                      r"it from the Hugging Face Hub failed .*Without a network, pass the path of a "
                                      r"local model directory"):
        course_lib.load_pretrained("nobody/no-such-bert", cache_dir=tmp_path)


@pytest.mark.parametrize("path", ["./no/such/model", "/definitely/not/here", "~/nope/model/"])
def test_unknown_model_path(path):
    with pytest.raises(FileNotFoundError, match=f"no model directory at '{path}': check the path"):
        course_lib.load_pretrained(path)


def test_directory_without_weights(tmp_path, embedded_dir):
    d = copy_model(embedded_dir, tmp_path / "m", skip={"model.safetensors"})
    with pytest.raises(CheckpointError) as err:
        course_lib.load_pretrained(d)
    assert str(err.value) == f"no weights in '{d}': expected model.safetensors or pytorch_model.bin"


def test_directory_without_config(tmp_path, embedded_dir):
    d = copy_model(embedded_dir, tmp_path / "m", skip={"config.json"})
    with pytest.raises(CheckpointError, match="has no config.json: is it a Hugging Face model directory"):
        course_lib.load_pretrained(d)


@pytest.mark.parametrize("weights", ["model.safetensors", "pytorch_model.bin"])
def test_corrupt_weights_file(tmp_path, tiny_mlm_dir, weights):
    src, ref = tiny_mlm_dir
    d = copy_model(src, tmp_path / "m", skip={"model.safetensors"})
    if weights == "pytorch_model.bin":
        torch.save(ref.state_dict(), d / weights)
    else:
        shutil.copy(src / weights, d / weights)
    data = (d / weights).read_bytes()
    (d / weights).write_bytes(data[: len(data) // 2])  # a download cut in half
    with pytest.raises(CheckpointError, match=rf"could not read the weights file .*{weights}: it is corrupt or truncated"):
        course_lib.load_pretrained(d)


def test_config_that_is_not_bert(tmp_path, embedded_dir):
    d = copy_model(embedded_dir, tmp_path / "m")
    cfg = json.loads((d / "config.json").read_text())
    cfg.update(model_type="gpt2", architectures=["GPT2LMHeadModel"])
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(CheckpointError, match=r"holds a 'gpt2' model \(GPT2LMHeadModel\), not BERT: course_lib loads "
                                              r"BERT-architecture checkpoints only"):
        course_lib.load_pretrained(d)


def test_weights_that_do_not_match_the_config(tmp_path, embedded_dir):
    d = copy_model(embedded_dir, tmp_path / "m")
    cfg = json.loads((d / "config.json").read_text())
    cfg["num_hidden_layers"] = 4
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(CheckpointError, match=r"do not match its config.json: .*Unexpected key\(s\).*encoder.layer.4"):
        course_lib.load_pretrained(d)


BLOCKS = ("this model has 6 blocks (1-6), indexed 0-5: index 0 is block 1, whose output is layer L1 (L0 is the "
          "embedding output, before any block)")


@pytest.mark.parametrize("call, message", [
    (lambda o: o.attention(6), "layer 6 is out of range: " + BLOCKS),
    (lambda o: o.attention(-7), "layer -7 is out of range: " + BLOCKS),
    (lambda o: o.attention(0, head=12), "head 12 is out of range: this model has 12 heads (0-11)"),
])
def test_layer_or_head_out_of_range(embedded, call, message):
    model, tok = embedded
    with torch.no_grad():
        out = model(**tok("The bank is closed."), output_attentions=True)
    with pytest.raises(IndexError) as err:
        call(out)
    assert str(err.value) == message
    assert out.attention(-1, head=-1).shape == out.attentions[5][:, 11].shape


def test_attention_not_recorded_message(embedded):
    model, tok = embedded
    with torch.no_grad():
        out = model(**tok("hello"))
    with pytest.raises(ValueError, match="attention was not recorded: call the model with output_attentions=True"):
        out.attention(0)


def test_model_refuses_more_positions_than_it_has(embedded):
    model, _ = embedded
    with pytest.raises(ValueError, match="the input has 600 tokens, but this model has position embeddings for at most 512"):
        model(torch.ones(1, 600, dtype=torch.long))


def test_fill_mask_without_mlm_head_explains(embedded):
    model, tok = embedded
    with pytest.raises(NoMLMHeadError, match=r"all-MiniLM-L6-v2 has no MLM head \(its checkpoint has no "
                                             r"cls.predictions.\* weights\), so it cannot predict masked tokens"):
        fill_mask(model, tok, "The capital of France is [MASK].")


def test_fill_mask_uses_a_checkpoint_mlm_head(tiny_mlm_dir):
    src, ref = tiny_mlm_dir
    model, tok = course_lib.load_pretrained(src, device="cpu")
    preds = fill_mask(model, tok, "The capital of [MASK] is [MASK].", top_k=3)
    assert [len(p.tokens) for p in preds] == [3, 3]
    enc = tok("The capital of [MASK] is [MASK].")
    with torch.no_grad():
        want = ref(**dict(enc)).logits[0, preds[0].position].softmax(-1).topk(3)
    assert preds[0].tokens == tok.convert_ids_to_tokens(want.indices)
    assert preds[0].probs == pytest.approx(want.values.tolist(), abs=1e-5)
    with pytest.raises(ValueError, match=r"there is no \[MASK\] in 'no mask here'"):
        fill_mask(model, tok, "no mask here")


def test_device_helper():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    if not torch.cuda.is_available() and getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        expected = "mps"
    assert get_device().type == expected
    assert get_device("cpu") == torch.device("cpu")
    with pytest.raises(ValueError, match="unknown device 'banana'"):
        get_device("banana")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="this machine has no CUDA GPU; use device='cpu'"):
            get_device("cuda")


def test_seeding_makes_runs_repeatable():
    g1 = seed_everything(7)
    a = torch.randn(3), torch.rand(2, generator=g1)
    g2 = seed_everything(7)
    b = torch.randn(3), torch.rand(2, generator=g2)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def test_a_loaded_mlm_model_keeps_its_ties_and_leaves_the_random_generator_alone(tiny_mlm_dir):
    src, ref = tiny_mlm_dir
    torch.manual_seed(3)
    model, _ = course_lib.load_pretrained(src, device="cpu")
    after_load = torch.rand(4)
    torch.manual_seed(3)
    assert torch.equal(after_load, torch.rand(4)), "loading drew from torch's random generator"
    head = model.cls.predictions
    assert head.decoder.weight is model.bert.embeddings.word_embeddings.weight
    assert head.decoder.bias is head.bias
    assert not any(p.is_meta for p in model.parameters())
    fresh = course_lib.model.BertForPreTraining(model.config, nsp=model.cls.seq_relationship is not None,
                                                add_pooling_layer=model.bert.pooler is not None)
    assert len(list(model.parameters())) == len(list(fresh.parameters())), "a tie was lost: more distinct parameters"
    # one step of training moves the tied tensors together (one parameter each, as in the reference)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ids = torch.tensor([[2, 5, 7, 3]])
    model.train()
    model(ids).logits.sum().backward()
    opt.step()
    assert torch.equal(head.decoder.weight, model.bert.embeddings.word_embeddings.weight)
    assert torch.equal(head.decoder.bias, head.bias)
