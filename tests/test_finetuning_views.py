"""The 11.4a views (curves, confusion matrix, tables) and the fine-tuning panel, without a browser."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import torch

from course_lib.finetuning.data import SENTIMENT_LABELS, SentenceCollator, SentenceExample
from course_lib.finetuning.runs import EpochRecord, TrainConfig, TrainRun
from course_lib.model.bert import BertConfig, BertModel
from course_lib.model.classification import BertForSequenceClassification
from course_lib.views.common import figure_png
from course_lib.views.finetuning import (comparison_rows, confusion_figure, confusion_matrix, cost_rows,
                                         curves_figure, readable_seconds, smooth, style, table_html)

TINY = BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                  max_position_embeddings=64)


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_LIB_CACHE", str(tmp_path / "cache"))


def fake_run(name, accs, lr=3e-5, strategy="full", seconds=2.0, cached=False):
    epochs = [EpochRecord(i + 1, 0.7 - 0.1 * i, a - 0.05, {"accuracy": a, "loss": 0.5}, seconds, 0.1, 10)
              for i, a in enumerate(accs)]
    return TrainRun(name, "k" * 64, TrainConfig(lr=lr, epochs=len(accs)), 1000, 5000, "cpu", epochs,
                    [0.7 - 0.01 * i for i in range(10 * len(accs))], 10, True, False, cached,
                    info={"strategy": strategy, "pooling": "cls", "frozen_pass_seconds": None})


def test_confusion_matrix_counts_true_rows_and_predicted_columns():
    cm = confusion_matrix([0, 1, 1, 2, 0], [0, 1, 2, 2, 1], 3)
    assert cm.tolist() == [[1, 0, 0], [1, 1, 0], [0, 1, 1]]
    assert cm.sum() == 5
    with pytest.raises(ValueError, match="3 predictions but 2 labels"):
        confusion_matrix([0, 1, 1], [0, 1], 2)


def test_confusion_figure_labels_axes_and_cells():
    fig = confusion_figure(np.array([[8, 2], [1, 9]]), ["negative", "positive"])
    ax = fig.axes[0]
    assert ax.get_xlabel() == "predicted label" and ax.get_ylabel() == "true label"
    texts = {t.get_text() for t in ax.texts}
    assert "8\n80%" in texts and "9\n90%" in texts


def test_curves_overlay_every_run_and_the_baseline():
    runs = [fake_run("full", [0.7, 0.8]), fake_run("head", [0.6, 0.65], lr=1e-3, strategy="head")]
    fig = curves_figure(runs, baseline=0.5)
    loss_ax, acc_ax = fig.axes
    assert len(loss_ax.lines) == 2
    held_out = [line for line in acc_ax.lines if line.get_label().startswith(("full", "head"))]
    assert [list(line.get_ydata()) for line in held_out] == [[0.7, 0.8], [0.6, 0.65]]
    assert any(list(line.get_ydata()) == [0.5, 0.5] for line in acc_ax.lines)  # the baseline
    assert loss_ax.get_ylabel() and acc_ax.get_xlabel() == "epoch"
    assert style(0)["color"] != style(1)["color"] and style(0)["marker"] != style(1)["marker"]


def test_comparison_table_has_one_row_per_run_and_bolds_the_best():
    runs = [fake_run("full", [0.7, 0.8]), fake_run("head", [0.6, 0.65], strategy="head", cached=True)]
    rows = comparison_rows(runs)
    assert [r["held-out accuracy"] for r in rows] == [0.8, 0.65]
    assert rows[1]["source"] == "cache" and rows[0]["trainable"] == 1000
    html = table_html(rows)
    assert html.count("<tr>") == 3 and "<b>80.0%</b>" in html and "65.0%" in html
    assert table_html([]) == "<i>no runs yet</i>"


def test_smoothing_and_readable_times():
    assert smooth([1, 3, 5, 7], 2).tolist() == [1, 2, 4, 6]
    assert readable_seconds(5) == "5.00 s" and readable_seconds(90) == "1.5 min"
    assert readable_seconds(7200) == "2.0 h" and readable_seconds(3 * 86400) == "3.0 days"


def test_cost_rows_are_readable():
    from course_lib.finetuning.cost import AllPairsCost

    rows = cost_rows(AllPairsCost(1000, 2.0, 0.01, 100, 1.0, "cpu"))
    assert rows[0] == {"sentences": "1,000", "model": "cross-encoder", "encoder passes": "499,500",
                       "time": "1.4 h", "how": "extrapolated from the measured rate"}
    assert rows[1]["how"] == "measured" and rows[1]["encoder passes"] == "1,000"


# ----------------------------------------------------------------------------- the panel

def tiny_factory(pooling):
    torch.manual_seed(0)
    return BertForSequenceClassification(BertModel(TINY), labels=SENTIMENT_LABELS, pooling=pooling)


@pytest.fixture()
def panel(embedded):
    from course_lib.widgets.finetuning import FineTuningPanel

    _, tok = embedded
    data = [SentenceExample(t, lab) for t, lab in [("great fun", "positive"), ("awful", "negative"),
                                                   ("a joy", "positive"), ("boring and long", "negative")]] * 4
    return FineTuningPanel(tiny_factory, data, data[:4], SentenceCollator(tok, SENTIMENT_LABELS), baseline=0.5,
                           batch_size=4, redraw_seconds=0.0)


@pytest.mark.slow  # trains in a thread for ~10 s: make test, not make check
def test_panel_trains_in_a_thread_and_overlays_finished_runs(panel):
    tables_when_done = []  # a browser sees every value in order: the final status must come after the table
    panel.status.observe(lambda ch: "held-out accuracy" in ch["new"] and tables_when_done.append(panel.table.value),
                         "value")
    panel.strategy.value, panel.epochs.value = "head", 2
    panel.start_button.click()
    assert panel.stop_button.disabled is False or not panel.running
    panel.wait(120)
    assert not panel.running and len(panel.runs) == 1 and panel.runs[0].finished
    assert "held-out accuracy" in panel.status.value and panel.start_button.disabled is False
    assert tables_when_done and "no runs yet" not in tables_when_done[0] and "head" in tables_when_done[0]
    panel.strategy.value = "full"
    panel.start()
    panel.wait(120)
    assert [r.info["strategy"] for r in panel.runs] == ["head", "full"]
    assert panel.table.value.count("<tr>") == 3 and panel.chart.value[:4] == b"\x89PNG"
    panel.strategy.value = "head"
    panel.start()
    panel.wait(60)
    assert panel.runs[-1].cached and "from the cache" in panel.status.value
    panel.clear_button.click()
    assert panel.runs == [] and "no runs yet" in panel.table.value
    empty = figure_png(curves_figure([], baseline=panel.baseline))
    assert panel.chart.value == empty  # the chart is the empty one again (drawn once, reused)


def test_panel_stop_keeps_finished_epochs(panel, monkeypatch):
    from course_lib.widgets import finetuning as module

    real = module.train_classifier
    gate = threading.Event()

    def slow(*args, callback=None, **kwargs):
        def cb(event, run):
            callback(event, run)
            if event == "epoch" and len(run.epochs) == 1:
                gate.set()
                time.sleep(0.5)
        return real(*args, callback=cb, **kwargs)

    monkeypatch.setattr(module, "train_classifier", slow)
    panel.strategy.value, panel.epochs.value = "full", 4
    panel.start()
    assert gate.wait(120)
    panel.stop_button.click()
    panel.wait(120)
    run = panel.runs[-1]
    assert run.interrupted and 1 <= len(run.epochs) < 4 and "stopped" in panel.status.value


def test_a_run_stopped_before_its_first_epoch_adds_no_row(panel, monkeypatch):
    from course_lib.widgets import finetuning as module

    real = module.train_classifier

    def stop_at_once(*args, stop=None, **kwargs):
        stop.set()  # as if Stop were clicked during the first step
        return real(*args, stop=stop, **kwargs)

    monkeypatch.setattr(module, "train_classifier", stop_at_once)
    panel.strategy.value, panel.epochs.value = "head", 1
    panel.start()
    panel.wait(120)
    assert panel.runs == [] and "no runs yet" in panel.table.value, panel.table.value
    assert "before its first epoch ended: not added" in panel.status.value, panel.status.value


def test_a_slow_redraw_does_not_happen_after_every_step(panel, monkeypatch):
    """A chart that takes 1.6 s to draw, steps of 0.1 s, a 1 s interval: the old rule (1 s since the last redraw
    *began*) redrew after every step, so the run in the panel went several times slower than without it."""
    from course_lib.widgets import finetuning as module

    clock = [0.0]
    drawn = []

    def slow_png(_figure):
        drawn.append(clock[0])
        clock[0] += 1.6
        return b"png"

    monkeypatch.setattr(module, "curves_figure", lambda *a, **k: None)
    monkeypatch.setattr(module, "figure_png", slow_png)
    panel._clock = lambda: clock[0]
    panel._last_draw, panel._draw_seconds, panel.redraw_seconds = 0.0, 0.0, 1.0

    class Run:
        name, step_losses, epochs, steps_per_epoch = "r", [0.5], [], 1000
        config = type("C", (), {"epochs": 1})()

    for _ in range(200):
        clock[0] += 0.1  # one training step
        panel._on_event("step", Run)
    # 200 steps of 0.1 s = 20 s of training; at least 1.6 s of training between redraws: at most 13 of them
    assert 5 <= len(drawn) <= 13, len(drawn)
    training_between = [b - a - 1.6 for a, b in zip(drawn, drawn[1:])]
    assert min(training_between) >= 1.6 - 1e-9, training_between


def test_panel_shows_errors_inside_the_widget(panel):
    def broken(pooling):
        raise RuntimeError("no model today")

    panel.make_model = broken
    panel.start()
    panel.wait(30)
    assert "no model today" in panel.status.value and "⚠" in panel.status.value
    assert panel.start_button.disabled is False


def test_the_students_figure_puts_runs_of_other_epoch_lengths_on_one_step_axis_and_the_loss_on_a_log_scale():
    from course_lib.finetuning.runs import EpochRecord, TrainConfig, TrainRun
    from course_lib.views.finetuning import students_figure

    def run(name, steps_per_epoch, accs, losses):
        r = TrainRun(name=name, key="k", config=TrainConfig(), trainable_parameters=1, total_parameters=1,
                     device="cpu", steps_per_epoch=steps_per_epoch)
        r.epochs = [EpochRecord(epoch=i + 1, train_loss=0.5, train_accuracy=None, eval={"accuracy": a, "loss": l},
                                seconds=1.0, eval_seconds=0.1, steps=steps_per_epoch)
                    for i, (a, l) in enumerate(zip(accs, losses))]
        return r

    gold = run("g", 32, [0.5, 0.6, 0.7], [0.7, 1.5, 3.0])
    soft = run("s", 188, [0.7, 0.74], [0.6, 0.55])
    teacher = run("t", 32, [0.8], [0.49])
    fig = students_figure({"gold": gold, "scores": soft}, teacher=teacher, baseline=0.5)
    ax_acc, ax_loss = fig.axes
    lines = {ln.get_label(): ln for ln in ax_acc.get_lines() if not ln.get_label().startswith("_")}
    assert list(lines["gold"].get_xdata()) == [32, 64, 96] and list(lines["scores"].get_xdata()) == [188, 376]
    assert ax_loss.get_yscale() == "log"
    assert [ln.get_ydata()[-1] for ln in ax_loss.get_lines()][:2] == [3.0, 0.55]
    assert {t.get_text() for t in ax_acc.texts} == {"teacher", "majority class"}
    assert "steps" in ax_acc.get_xlabel() and "cross-entropy" in ax_loss.get_ylabel()


def test_head_only_disables_the_learning_rate_and_says_the_heads(panel):
    """An expert reader: for "head only" the slider's rate trained nothing (the head always trains at HEAD_LR), yet
    every start added a "different" run, labelled with the slider's rate in the legend and the table."""
    from course_lib.widgets.finetuning import FROZEN_LR, HEAD_LR

    assert panel.strategy.value == "full" and panel.lr.disabled is False
    panel.strategy.value = "head"
    assert panel.lr.disabled is True and f"the head trains at lr {HEAD_LR:g}" in panel.status.value
    configs = set()
    for lr in (1e-5, 1e-3):   # whatever the (disabled) slider says, the same run: the same config, the same key
        panel.lr.value = lr
        configs.add(panel.config())
    (cfg,) = configs
    assert cfg.lr == FROZEN_LR and cfg.lr_for("classifier.weight") == HEAD_LR
    panel.strategy.value = "last-2"
    assert panel.lr.disabled is False and panel.config().lr == 1e-3 and panel.status.value == ""


def test_a_head_only_run_is_labelled_with_the_rate_its_head_trained_at():
    from course_lib.views.finetuning import run_label

    cfg = TrainConfig(lr=5e-5, epochs=1, lr_overrides=(("classifier.", 5e-3),))
    head, full = fake_run("head-cls", [0.6], strategy="head"), fake_run("full-cls", [0.8])
    head.config = full.config = cfg
    assert run_label(head) == "head-cls (head lr 0.005)" and run_label(full) == "full-cls (lr 5e-05)"
    rows = comparison_rows([head, full])
    assert (rows[0]["lr"], rows[0]["head lr"]) == (None, 5e-3) and (rows[1]["lr"], rows[1]["head lr"]) == (5e-5, 5e-3)
    html = table_html(rows)
    assert ">head lr<" in html and html.count(">0.005<") == 2 and html.count(">5e-05<") == 1
    _, acc_ax = curves_figure([head, full]).axes
    assert {t.get_text() for t in acc_ax.get_legend().get_texts()} == {"head-cls (head lr 0.005)", "full-cls (lr 5e-05)"}


@pytest.mark.slow  # loads the embedded model and two shipped runs: a few seconds
def test_the_panel_finds_the_notebooks_runs_by_their_key_without_training(monkeypatch):
    """An expert reader: the panel named its runs "<pooling>-<strategy>-lr<lr>" and a run's folder is <name>-<key>, so
    with 11.4a's settings it trained again (12 s head only, minutes full) what the notebook had shipped."""
    from course_lib.finetuning import classify, training
    from course_lib.finetuning.classify import pretrained_classifier, pretrained_encoder
    from course_lib.finetuning.data import load_sentiment, majority_baseline
    from course_lib.widgets.finetuning import HEAD_LR, FineTuningPanel

    def no_training(*args, **kwargs):
        raise AssertionError("the panel trained a run that ships with the course")

    monkeypatch.setattr(training, "batches", no_training)          # every training epoch starts here
    monkeypatch.setattr(classify, "state_examples", no_training)   # the frozen pass, run only to train
    _, tok = pretrained_encoder()
    train, test = load_sentiment("train", n=500), load_sentiment("test", n=400)   # 11.4a's data and settings
    panel = FineTuningPanel(lambda p: pretrained_classifier(SENTIMENT_LABELS, pooling=p), train, test,
                            SentenceCollator(tok, SENTIMENT_LABELS, max_length=64),
                            baseline=majority_baseline(train, test), head_lr=HEAD_LR)
    panel.pooling.value, panel.epochs.value, panel.lr.value = "cls", 3, 5e-5
    for strategy, name in (("head", "head-cls"), ("full", "full-cls")):
        panel.strategy.value = strategy
        panel.start()
        panel.wait(120)
        assert "shipped with the course" in panel.status.value, panel.status.value
        run = panel.runs[-1]
        assert run.shipped and run.name == name and run.origin == "shipped with the course"
    panel.strategy.value, panel.lr.value = "head", 1e-3   # the slider is not the head's: the same run again
    panel.start()
    panel.wait(120)
    assert [r.name for r in panel.runs] == ["full-cls", "head-cls"], [r.name for r in panel.runs]
    head_row = comparison_rows(panel.runs)[-1]
    assert (head_row["lr"], head_row["head lr"], head_row["source"]) == (None, HEAD_LR, "shipped")
