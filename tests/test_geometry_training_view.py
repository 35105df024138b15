"""The view of the geometry during MLM training (notebook 11.3), on small synthetic training logs."""
from __future__ import annotations

import numpy as np
import pytest

from course_lib.views.geometry_training import (ETHAYARAJH_BERT_BASE, STEP_CMAP, draw_geometry_during_training,
                                                geometry_summary)


def _curve():
    """Four evaluations of a 3-block model: the last layer peaks early (step 100) while the loss is high."""
    rows = [(0, 9.0, [0.05, 0.10, 0.20, 0.05]),
            (100, 7.0, [0.05, 0.15, 0.45, 0.60]),
            (200, 6.0, [0.05, 0.14, 0.50, 0.30]),
            (300, 5.5, [0.05, 0.13, 0.40, 0.25])]
    evals = [{"step": s, "train_minutes": 2.0 * i, "loss": loss, "top1": 0.1, "top5": 0.2, "anisotropy": a,
              "zscored": [0.0] * 4, "top3_share": [0.5] * 4} for i, (s, loss, a) in enumerate(rows)]
    return {"evaluations": evals[::-1], "chosen_step": 200}  # out of order on purpose: the view sorts by step


def test_summary_numbers_are_exact():
    s = geometry_summary(_curve())
    assert s["steps"] == [0, 100, 200, 300] and s["n_blocks"] == 3
    assert s["first_loss"] == 9.0
    assert (s["last_layer_peak_step"], s["last_layer_peak"], s["loss_at_last_layer_peak"]) == (100, 0.60, 7.0)
    assert (s["max_peak_step"], s["max_peak"], s["max_peak_layer"]) == (100, 0.60, 3)
    assert (s["final_step"], s["final_loss"], s["final_last_layer"]) == (300, 5.5, 0.25)
    assert s["final_anisotropy"] == [0.05, 0.13, 0.40, 0.25]
    assert (s["chosen_step"], s["chosen_loss"], s["chosen_anisotropy"]) == (200, 6.0, [0.05, 0.14, 0.50, 0.30])


def test_summary_without_a_chosen_step_and_a_peak_inside_the_stack():
    c = _curve()
    del c["chosen_step"]
    c["evaluations"][0]["anisotropy"] = [0.05, 0.13, 0.70, 0.25]  # step 300: L2 is the most anisotropic layer
    s = geometry_summary(c)
    assert (s["max_peak_step"], s["max_peak"], s["max_peak_layer"]) == (300, 0.70, 2)
    assert s["last_layer_peak_step"] == 100
    assert s["chosen_step"] is None and s["chosen_anisotropy"] is None


def test_figure_has_two_labelled_panels_one_line_per_evaluation_and_the_reference():
    fig = draw_geometry_during_training(_curve(), reference=ETHAYARAJH_BERT_BASE)
    layers, training = fig.axes[:2]
    assert layers.get_title() == "anisotropy per layer, at each evaluation"
    assert training.get_title() == "held-out loss and anisotropy during training"
    for ax in (layers, training):
        assert ax.get_xlabel() and ax.get_ylabel()
    assert layers.get_xlabel().startswith("layer of the course model")
    assert training.get_xlabel() == "training step"
    assert [t.get_text() for t in layers.get_xticklabels()] == ["L0\n(embeddings)", "L1", "L2", "L3"]

    lines = layers.get_lines()
    assert len(lines) == 4 + 1                                   # one per evaluation, + the reference
    labels = [ln.get_label() for ln in lines]
    assert labels[:4] == ["step 0", "step 100", "step 200 (shipped)", "step 300"]
    assert labels[4] == "bert-base (Ethayarajh 2019; schematic)"
    ref = lines[4]
    assert ref.get_linestyle() == "--" and ref.get_color() == "black"
    assert list(ref.get_xdata()) == pytest.approx(list(np.arange(13) * 3 / 12))   # same relative depth
    assert list(ref.get_ydata()) == ETHAYARAJH_BERT_BASE["anisotropy"]
    # coloured early -> late with the sequential map; the shipped step is drawn thicker
    assert lines[0].get_color() == STEP_CMAP(0.0) and lines[3].get_color() == STEP_CMAP(1.0)
    assert lines[2].get_linewidth() > max(lines[i].get_linewidth() for i in (0, 1, 3))
    assert list(lines[1].get_ydata()) == [0.05, 0.15, 0.45, 0.60]
    legend = [t.get_text() for t in layers.get_legend().get_texts()]
    assert legend == ["step 200 (shipped)", "bert-base (Ethayarajh 2019; schematic)"]

    # the colorbar says what the colours mean; the second panel has a second y axis for the anisotropy
    ylabels = [ax.get_ylabel() for ax in fig.axes]
    assert "training step" in ylabels
    twin = next(ax for ax in fig.axes[2:] if ax.get_ylabel() == "anisotropy (mean cosine)")
    assert training.get_ylabel() == "held-out MLM loss (nats)"
    assert list(training.get_lines()[0].get_ydata()) == [9.0, 7.0, 6.0, 5.5]
    last, most = twin.get_lines()
    assert list(last.get_ydata()) == [0.05, 0.60, 0.30, 0.25] and list(most.get_ydata()) == [0.20, 0.60, 0.50, 0.40]
    assert "L3" in last.get_label()
    assert any(t.get_text() == "shipped step 200" for t in training.get_legend().get_texts())


def test_without_a_reference_there_is_one_line_per_evaluation():
    c = _curve()
    c["chosen_step"] = None
    fig = draw_geometry_during_training(c)
    assert len(fig.axes[0].get_lines()) == 4
    assert fig.axes[0].get_legend() is None           # no shipped step, no reference: nothing to name


def test_the_reference_constant_is_labelled_approximate_and_documented():
    assert ETHAYARAJH_BERT_BASE["label"] == "bert-base (Ethayarajh 2019; schematic)"
    a = ETHAYARAJH_BERT_BASE["anisotropy"]
    assert len(a) == 13 and a[0] == pytest.approx(0.1) and 0.6 <= max(a[-3:]) <= 0.7


@pytest.mark.parametrize("curve, message", [
    ({"evaluations": []}, "no evaluations"),
    ({}, "no evaluations"),
    ({"evaluations": [{"step": 0, "loss": 1.0, "anisotropy": [0.1, 0.2, 0.3]},
                      {"step": 10, "loss": 1.0, "anisotropy": [0.1, 0.2]}]},
     "step 10 has 2 layers, the one at step 0 has 3"),
    ({"evaluations": [{"step": 0, "loss": 1.0}]}, "has no 'anisotropy'"),
    ({"evaluations": [{"step": 0, "anisotropy": [0.1, 0.2]}]}, "needs a 'step' and a 'loss'"),
    ({"evaluations": [{"step": 0, "loss": 1.0, "anisotropy": [0.1]}]}, "needs L0 and at least one block"),
    ({"evaluations": [{"step": 0, "loss": 1.0, "anisotropy": [0.1, 0.2]},
                      {"step": 0, "loss": 2.0, "anisotropy": [0.1, 0.2]}]}, "repeat a step"),
    ({"evaluations": [{"step": 0, "loss": 1.0, "anisotropy": [0.1, 0.2]}], "chosen_step": 5},
     "chosen_step 5 is not one of the evaluated steps"),
])
def test_bad_curves_raise_a_clear_value_error(curve, message):
    with pytest.raises(ValueError, match=message):
        geometry_summary(curve)
    with pytest.raises(ValueError, match=message):
        draw_geometry_during_training(curve)


def test_bad_reference_raises_a_clear_value_error():
    with pytest.raises(ValueError, match="the reference has no 'anisotropy'"):
        draw_geometry_during_training(_curve(), reference={"label": "x"})
