"""The shipped QA model (course_lib/data/models/minilm-squad-qa, made by tools/train_qa_model.py): it loads from
its delta, its card is the one generated from metrics.json, and its held-out EM/F1 are recomputed (slow)."""
from __future__ import annotations

import json

import pytest
import torch

from course_lib.finetuning.qa import load_squad, squad_scores
from course_lib.finetuning.qa_reader import SHIPPED_QA_MODEL, QAReader
from course_lib.paths import data_dir

FOLDER = data_dir("models", SHIPPED_QA_MODEL)
pytestmark = pytest.mark.skipif(not (FOLDER / "metrics.json").exists(), reason="the QA model is not built yet")


@pytest.fixture(scope="module")
def reader():
    return QAReader.shipped()


def metrics():
    return json.loads((FOLDER / "metrics.json").read_text())


def test_loads_as_delta_with_frozen_lower_layers(reader):
    import course_lib

    base, _ = course_lib.load_pretrained()
    m = metrics()
    L = len(base.encoder.layer)
    for i in range(L):
        same = torch.equal(base.encoder.layer[i].attention.self.query.weight, reader.model.bert.encoder.layer[i]
                           .attention.self.query.weight)
        assert same == (i < L - m["train_layers"]), f"layer {i}"
    assert torch.equal(base.embeddings.word_embeddings.weight, reader.model.bert.embeddings.word_embeddings.weight)
    keys = json.loads((FOLDER / "base.json").read_text())["delta"]["keys"]
    trained = tuple(f"bert.encoder.layer.{i}." for i in range(L - m["train_layers"], L))
    assert keys and all(k.startswith(trained) for k in keys)  # only the fine-tuned blocks are stored


def test_card_is_generated_from_metrics():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import train_qa_model

    assert (FOLDER / "MODEL_CARD.md").read_text() == train_qa_model.card(metrics())


def test_answers_span_from_the_context(reader):
    view = reader.answer("Where is Mt. Sanitas?", "Mt. Sanitas is in Sunshine Canyon, west of Boulder.")
    assert view["text"] in "Mt. Sanitas is in Sunshine Canyon, west of Boulder."
    assert abs(float(view["p_start"].sum()) - 1) < 1e-5


@pytest.mark.slow
def test_heldout_scores_are_recomputed(reader):
    test = load_squad("test")
    got = squad_scores(test, reader.predict(test))
    want = metrics()["test"]
    for k in ("exact", "f1", "HasAns_f1", "NoAns_exact"):
        assert got[k] == pytest.approx(want[k], abs=1.0), k  # fp16 delta: tiny differences allowed
    assert got["f1"] > metrics()["always_no_answer"]["f1"]
