"""The project's fill-mask model (course_lib/data/models/minilm-wordnet-mlm): size, loading, held-out accuracy, cards, bad copies."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from safetensors.torch import load_file

from course_lib import CheckpointError, fill_mask, load_pretrained
from course_lib.checkpoints.delta import BASE_FILE, DELTA_FILE
from course_lib.pretraining.fill_mask import masked_token_accuracy
from course_lib.checkpoints import shipped_model_dir

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import train_fill_mask as T  # noqa: E402

MODEL = shipped_model_dir("minilm-wordnet-mlm")
METRICS = json.loads((MODEL / "metrics.json").read_text())


@pytest.fixture(scope="module")
def mlm():
    return load_pretrained(MODEL, device="cpu")


def test_the_shipped_directory_is_at_most_20_mb():
    size = sum(f.stat().st_size for f in MODEL.rglob("*") if f.is_file())
    assert size <= 20 * 2**20, f"{size / 2**20:.1f} MB"
    assert (MODEL / DELTA_FILE).stat().st_size == METRICS["delta_bytes"]


def test_it_loads_as_a_bert_with_an_mlm_head_whose_encoder_starts_as_the_embedded_model(mlm, embedded):
    model, tok = mlm
    assert model.has_mlm_head and model.config.num_hidden_layers == 6
    base = embedded[0]
    train_layers = METRICS["training"]["train_layers"]
    frozen = [f"encoder.layer.{i}." for i in range(6 - train_layers)] + ["embeddings."]
    for name, p in base.state_dict().items():
        q = model.bert.state_dict()[name]
        if name.startswith(tuple(frozen)):
            assert torch.equal(p, q), f"{name} should be the embedded model's"
    changed = [n for n in base.state_dict() if n.startswith(f"encoder.layer.{5}.")]
    assert any(not torch.equal(base.state_dict()[n], model.bert.state_dict()[n]) for n in changed)


@pytest.mark.slow
def test_held_out_accuracy_is_recomputed_and_beats_the_unigram_baseline(mlm):
    """Recomputed on the first texts of heldout.txt, whose numbers the shipped pass's tool stored beside those of
    all 2,000 (the same batches, so the same masks: tools/train_fill_mask.py, HELDOUT_CHECK_TEXTS)."""
    model, tok = mlm
    check, shipped = METRICS["heldout_check"], METRICS["heldout_shipped"]
    assert check["texts"] == T.HELDOUT_CHECK_TEXTS < shipped["texts"] and check["texts"] % 64 == 0
    texts = (MODEL / "heldout.txt").read_text().splitlines()
    assert len(texts) == shipped["texts"]
    unigram = load_file(str(MODEL / T.UNIGRAM_FILE))["unigram"]
    acc = masked_token_accuracy(model, tok, texts[:check["texts"]], unigram, seed=0)
    assert acc.n_masked == check["n_masked"] < shipped["n_masked"]
    assert acc.top5 == pytest.approx(check["top5"], abs=0.005)
    assert acc.top1 == pytest.approx(check["top1"], abs=0.005)
    assert acc.baseline_top5 == pytest.approx(check["baseline_top5"], abs=1e-9)
    for a in (acc, SimpleNamespace(**shipped)):  # these texts and all of them
        assert a.top5 > a.baseline_top5 + 0.15, str(a)
        assert a.top1 > a.baseline_top1 + 0.10, str(a)


def test_cloze_probes_give_content_words(mlm):
    model, tok = mlm
    top = fill_mask(model, tok, "The capital of France is [MASK].", top_k=5)[0].tokens
    assert top[0].isalpha() and sum(t.isalpha() for t in top) >= 4, top
    top = fill_mask(model, tok, "He plays the [MASK] in an orchestra.", top_k=5)[0].tokens
    assert sum(t.isalpha() for t in top) >= 4 and {"instrument", "music", "violin", "piano"} & set(top), top


def test_model_card_and_readme_show_the_numbers_of_metrics_json():
    assert (MODEL / "MODEL_CARD.md").read_text() == T.model_card(METRICS)
    readme = (ROOT / "README.md").read_text()
    assert T.README_BEGIN + "\n" + T.metrics_table(METRICS) + T.README_END in readme


@pytest.mark.skipif(not (T.WORDNET / "data.noun").exists(), reason="WordNet 3.0 (Debian wordnet-base) not installed")
def test_the_held_out_texts_were_not_trained_on():
    glosses = T.wordnet_glosses()
    held = {t for s, t in glosses if T.is_heldout(s)}
    trained = {t for s, t in glosses if not T.is_heldout(s)}
    shipped = (MODEL / "heldout.txt").read_text().splitlines()
    assert all(t in held for t in shipped)
    assert not set(shipped) & trained


# ----------------------------------------------------------------------------- a damaged copy says what is wrong

@pytest.fixture
def copy(tmp_path):
    d = tmp_path / "mlm"
    shutil.copytree(MODEL, d)
    return d


def test_a_corrupt_delta_is_reported(copy):
    data = (copy / DELTA_FILE).read_bytes()
    (copy / DELTA_FILE).write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match=r"could not read the delta weights .*delta.safetensors: it is corrupt or truncated"):
        load_pretrained(copy, device="cpu")


def test_a_git_lfs_pointer_is_reported(copy):
    (copy / DELTA_FILE).write_text("version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 1\n")
    with pytest.raises(CheckpointError, match="is a Git LFS pointer, not the weights: run `git lfs pull`"):
        load_pretrained(copy, device="cpu")


def test_a_missing_base_record_is_reported(copy):
    (copy / BASE_FILE).unlink()
    with pytest.raises(CheckpointError, match="has delta.safetensors but no base.json"):
        load_pretrained(copy, device="cpu")


def test_other_base_weights_are_refused(copy):
    rec = json.loads((copy / BASE_FILE).read_text())
    rec["files"]["model.safetensors"]["sha256"] = "0" * 64
    (copy / BASE_FILE).write_text(json.dumps(rec))
    with pytest.raises(CheckpointError, match="the base weights differ from the ones this delta was trained on"):
        load_pretrained(copy, device="cpu")
