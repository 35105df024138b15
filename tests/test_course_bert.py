"""course-bert (course_lib/data/models/course-bert): files, loading, held-out numbers and geometry recomputed,
cloze probes, the held-out split, and the model card / README generated from metrics.json."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from course_lib import fill_mask, load_pretrained
from course_lib.checkpoints import embedded_model_dir, read_state_dict
from course_lib.checkpoints.delta import BASE_FILE, DELTA_FILE
from course_lib.paths import data_dir
from course_lib.pretraining import masked_token_accuracy

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import train_course_bert as T  # noqa: E402

pytestmark = pytest.mark.slow  # recomputes the model card on held-out text (~45 s): make test, not make check

MODEL = data_dir("models", "course-bert")
METRICS = json.loads((MODEL / "metrics.json").read_text())
CURVE = json.loads((MODEL / "losses.json").read_text())
HELDOUT = (MODEL / T.HELDOUT_FILE).read_text().splitlines()
TOL = 0.005  # top-1/top-5 and cosines recomputed here vs metrics.json: other CPUs sum in other orders


@pytest.fixture(scope="module")
def course_bert():
    return load_pretrained(MODEL, device="cpu")


@pytest.fixture(scope="module")
def unigram():
    return load_file(str(MODEL / T.UNIGRAM_FILE))["unigram"]


def test_every_file_is_at_most_50_mb_and_the_directory_at_most_25_mb():
    files = [f for f in MODEL.rglob("*") if f.is_file()]
    assert {DELTA_FILE, BASE_FILE, "config.json", "vocab.txt", "metrics.json", "losses.json", "MODEL_CARD.md",
            T.HELDOUT_FILE, T.UNIGRAM_FILE, "GCIDE_LICENSE.txt"} <= {f.name for f in files}
    assert max(f.stat().st_size for f in files) <= 50 * 2**20
    assert sum(f.stat().st_size for f in files) <= 25 * 2**20
    assert (MODEL / DELTA_FILE).stat().st_size == METRICS["delta_bytes"]


def test_it_loads_by_name_from_the_registry():
    from course_lib.checkpoints import resolve_model_dir, shipped_models

    assert "course-bert" in shipped_models()
    assert resolve_model_dir("course-bert").resolve() == MODEL.resolve()


def test_it_is_a_bert_with_an_mlm_head_whose_embeddings_are_the_base_and_whose_layers_were_trained(course_bert):
    model, tok = course_bert
    assert model.has_mlm_head and model.config.num_hidden_layers == 6 and tok.vocab_size == 30522
    assert model.num_parameters() == METRICS["parameters"]
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight  # tied
    base = {k: v for k, v in read_state_dict(embedded_model_dir()).items() if k != "embeddings.position_ids"}
    mine = model.bert.state_dict()
    for name, p in base.items():
        if name.startswith("embeddings."):
            assert torch.equal(p, mine[name]), f"{name} should be the embedded model's (frozen)"
    for i in range(6):
        key = f"encoder.layer.{i}.output.dense.weight"
        assert not torch.equal(base[key], mine[key]), f"layer {i} was not trained"


def test_the_tools_held_out_metric_uses_the_librarys_masks(course_bert, unigram):
    model, tok = course_bert
    texts = HELDOUT[:120]
    mine = T.heldout_mlm(model, tok, texts, unigram, seed=0)
    lib = masked_token_accuracy(model, tok, texts, unigram, seed=0)
    assert mine["n_masked"] == lib.n_masked
    for k in ("top1", "top5", "baseline_top1", "baseline_top5"):
        assert mine[k] == pytest.approx(getattr(lib, k), abs=1e-12), k


def test_held_out_loss_top1_top5_are_recomputed_and_beat_the_unigram_baseline(course_bert, unigram):
    model, tok = course_bert
    m = METRICS["heldout_eval"]
    got = T.heldout_mlm(model, tok, HELDOUT[T.EVAL_TEXTS], unigram, seed=0)
    assert got["n_masked"] == m["n_masked"]
    for k in ("baseline_top1", "baseline_top5", "unigram_loss"):
        assert got[k] == pytest.approx(m[k], abs=1e-9), k
    assert got["top1"] == pytest.approx(m["top1"], abs=TOL)
    assert got["top5"] == pytest.approx(m["top5"], abs=TOL)
    assert got["loss"] == pytest.approx(m["loss"], abs=0.01)
    # the MLM has learnt: 10 points above the context-free baseline at top-1 and top-5, and its loss is at least
    # half a nat below the baseline's (the stricter target, a full nat, is not met: see MODEL_CARD.md)
    assert got["top1"] > got["baseline_top1"] + 0.10 and got["top5"] > got["baseline_top5"] + 0.10, got
    assert got["loss"] <= got["unigram_loss"] - 0.5, got


def test_geometry_per_layer_is_recomputed_on_held_out_tokens_with_z_scoring_fitted_on_other_tokens(course_bert):
    model, tok = course_bert
    score, fit = HELDOUT[T.EVAL_TEXTS], HELDOUT[T.FIT_TEXTS]
    assert not set(map(T.normalise, score)) & set(map(T.normalise, fit)), "z-scoring must be fitted on other tokens"
    geom = T.layer_geometry(model, tok, score, fit)
    want = METRICS["geometry"]
    assert (geom["n_tokens_scored"], geom["n_tokens_fitted"]) == (want["n_tokens_scored"], want["n_tokens_fitted"])
    for key in ("anisotropy", "zscored", "top3_share"):
        assert geom[key] == pytest.approx(want[key], abs=TOL), key
    met = T.meets_target(geom, METRICS["heldout_eval"]["loss"], METRICS["unigram_entropy"])
    assert met == METRICS["target"]["met"]
    a, z, share = geom["anisotropy"], geom["zscored"], geom["top3_share"]
    # the claims of §11.3 the notebooks draw from this model (see MODEL_CARD.md):
    assert max(abs(v) for v in z) < 0.05, z                       # z-scoring removes the common direction
    assert all(abs(zv) < 0.25 * av for zv, av in zip(z[1:], a[1:])), (z, a)
    assert a[1] < a[3] < a[5] and min(a[-2:]) > 2 * a[0], a      # anisotropy rises with depth
    assert max(share) > 0.5, share                                # a few rogue dimensions dominate some layers


def test_the_chosen_checkpoint_is_the_best_one_meeting_the_target_along_the_curve():
    evals = CURVE["evaluations"]
    steps = [r["step"] for r in evals]
    assert steps == sorted(steps) and steps[0] == 0 and METRICS["chosen_step"] in steps
    assert len(CURVE["train_loss"]) == METRICS["training"]["steps_run"] == steps[-1]
    assert all(len(r["anisotropy"]) == len(r["zscored"]) == len(r["top3_share"]) == 7 for r in evals)
    ok = [r for r in evals if r["meets_target"]]
    chosen = next(r for r in evals if r["step"] == METRICS["chosen_step"])
    if ok:
        assert chosen["loss"] == min(r["loss"] for r in ok)
    assert evals[-1]["loss"] < evals[0]["loss"] - 3  # the curve: MLM loss falls from the fresh head's ~ln|V|


def test_chapter_cloze_probes_give_plausible_words(course_bert):
    model, tok = course_bert
    assert METRICS["probes"], "metrics.json lists the probes"
    for text, want in METRICS["probes"].items():
        got = fill_mask(model, tok, text, top_k=5)[0]
        assert got.tokens[:3] == want["tokens"][:3], text
    top = fill_mask(model, tok, "Please turn [MASK] homework in.", top_k=5)[0].tokens
    assert {"your", "his", "her", "my", "the", "their"} & set(top[:3]), top
    top = fill_mask(model, tok, "He plays the [MASK] in an orchestra.", top_k=5)[0].tokens
    assert sum(t.isalpha() for t in top) >= 4, top


def test_held_out_texts_follow_the_split_rule_so_they_were_never_trained_on():
    assert len(HELDOUT) == METRICS["data"]["heldout_shipped"] == T.HELDOUT_SHIPPED
    assert all(T.is_heldout(t) for t in HELDOUT)
    train, held = T.split(HELDOUT + ["A definition that the split rule puts on the training side, surely."])
    assert held == [t for t in HELDOUT] or sorted(held) == sorted(HELDOUT)
    assert len(set(map(T.normalise, HELDOUT))) == len(HELDOUT)
    assert all(len(t.split()) >= T.MIN_WORDS for t in HELDOUT)


@pytest.mark.skipif(not any((r / T.GCIDE_DICT).exists() for r in (Path("/"), Path("/tmp/course-bert-build/dict-gcide"))),
                    reason="GCIDE (Debian dict-gcide) is not unpacked here: run tools/train_course_bert.py once")
def test_no_held_out_text_is_in_the_training_text():
    root = Path("/") if (Path("/") / T.GCIDE_DICT).exists() else Path("/tmp/course-bert-build/dict-gcide")
    train, held = T.split(T.gcide_paragraphs(root))
    assert len(train) == METRICS["data"]["train_paragraphs"]
    train_keys = set(map(T.normalise, train))
    assert not any(T.normalise(t) in train_keys for t in HELDOUT)
    assert set(HELDOUT) <= set(held)


def test_model_card_and_readme_are_what_cards_only_generates():
    assert (MODEL / "MODEL_CARD.md").read_text() == T.model_card(METRICS, CURVE, T.read_alternatives(MODEL))
    readme = (ROOT / "README.md").read_text()
    assert T.README_BEGIN + "\n" + T.metrics_table(METRICS) + T.README_END in readme


def test_the_card_states_data_licence_and_the_chapters_reference():
    card = (MODEL / "MODEL_CARD.md").read_text()
    assert "GPL-2.0-or-later" in card and "GCIDE" in card and "Ethayarajh" in card and "0.6-0.7" in card
    assert METRICS["training"]["command"].startswith("python tools/train_course_bert.py")
    assert "GNU GENERAL PUBLIC LICENSE" in (MODEL / "GPL-2.txt").read_text()
