"""tools/course_bert_gpu.py's transport: what is staged compressed comes out byte for byte where the trainer and
the stand-in base module read it on the GPU machine."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import course_bert_gpu as G  # noqa: E402


def test_unxz_restores_the_text_and_the_base_weights(tmp_path):
    here, stage = tmp_path / "here", tmp_path / ".gpu"
    here.mkdir()
    (stage / "text").mkdir(parents=True)
    (stage / "minilm").mkdir()
    files = {"train.tsv": "brown\tThe jury said it did find that.\n" * 500, "heldout.tsv": "chitchat\thi there you\n",
             "stats.json": '{"sources": {}}\n'}
    for name, text in files.items():
        (here / name).write_text(text)
    G.xz(here / "train.tsv", stage / "text" / "train.tsv.xz")
    G.xz(here / "heldout.tsv", stage / "text" / "heldout.tsv.xz")
    (stage / "text" / "stats.json").write_text(files["stats.json"])
    weights = bytes(range(256)) * 1000
    (here / "model.safetensors").write_bytes(weights)
    G.xz(here / "model.safetensors", stage / "minilm" / G.MODEL_XZ)
    assert (stage / "text" / "train.tsv.xz").stat().st_size < len(files["train.tsv"]) / 10

    G.unxz(stage / "text", tmp_path / "et")
    for name, text in files.items():
        assert (tmp_path / "et" / name).read_text() == text
    assert (stage / "minilm" / "model.safetensors").read_bytes() == weights
    assert not (stage / "minilm" / "model.safetensors.part").exists()
