"""course_lib.finetuning.transfer and the runs shipped as their history only (course_lib.finetuning.shipped):
the network from random weights, the word-count baseline, and the figure of accuracy against labelled data."""
from __future__ import annotations

import json
import shutil

import pytest
import torch

import course_lib.paths
from course_lib.finetuning.data import SENTIMENT_LABELS, SentenceExample, SentenceCollator, load_sentiment


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_LIB_CACHE", str(tmp_path / "cache"))


def _collate():
    from course_lib.finetuning.classify import pretrained_encoder

    return SentenceCollator(pretrained_encoder()[1], SENTIMENT_LABELS, max_length=32)


def test_the_scratch_classifier_is_the_pretrained_network_with_seeded_random_weights():
    from course_lib.finetuning.classify import pretrained_classifier, scratch_classifier

    a, b, c = scratch_classifier(SENTIMENT_LABELS), scratch_classifier(SENTIMENT_LABELS), scratch_classifier(
        SENTIMENT_LABELS, seed=1)
    pre = pretrained_classifier(SENTIMENT_LABELS)
    assert a.bert.config == pre.bert.config
    assert [(n, p.shape) for n, p in a.named_parameters()] == [(n, p.shape) for n, p in pre.named_parameters()]
    word = "bert.embeddings.word_embeddings.weight"
    sa, sb, sc, sp = (m.state_dict()[word] for m in (a, b, c, pre))
    assert torch.equal(sa, sb) and not torch.equal(sa, sc)  # seeded
    assert not torch.allclose(sa, sp, atol=1e-3)  # not the pretrained weights
    assert float(sa.std()) == pytest.approx(a.bert.config.initializer_range, rel=0.05)  # BERT's initialisation


def test_word_counts_learn_words_and_refuse_no_data():
    from course_lib.finetuning.data import word_count_baseline

    train = [SentenceExample(f"a {w} film", "positive") for w in ("great", "fine", "lovely")] + \
            [SentenceExample(f"a {w} film", "negative") for w in ("awful", "dull", "bad")]
    test = [SentenceExample("a great lovely film", "positive"), SentenceExample("an awful dull film", "negative")]
    assert word_count_baseline(train, test) == 1.0
    assert word_count_baseline(train, [SentenceExample("a great film", "negative")]) == 0.0
    from course_lib.finetuning.data import word_count_predictions

    assert word_count_predictions(train, test + [SentenceExample("a dull bad film", "positive")]) == [
        "positive", "negative", "negative"]   # what the classifier says, whatever the gold label
    with pytest.raises(ValueError, match="needs training and test examples"):
        word_count_baseline([], test)


def _ship_as_history(tmp_path, monkeypatch, make_run):
    """Train a run with COURSE_LIB_SHIP_DELTAS set, stage it as tools/ship_runs.py stages a history-only run, and
    serve it as shipped with the course; then switch to a new, empty cache."""
    import course_lib.finetuning.shipped as shipped_mod
    from course_lib.finetuning.runs import run_dir
    from tools import ship_runs

    monkeypatch.setenv(shipped_mod.SHIP_ENV, "1")
    run = make_run()
    monkeypatch.delenv(shipped_mod.SHIP_ENV)
    made = run_dir(run.name, run.key)
    cache = made.parents[1]
    (staged_kind, staged, provenance), = ship_runs._histories(cache, {run.name})
    assert staged_kind == "finetuning" and {f.name for f in staged.iterdir()} == {"run.json"}
    shipped = tmp_path / "shipped" / staged.name
    shutil.copytree(staged, shipped)
    (shipped / "shipped.json").write_text(json.dumps(provenance))
    monkeypatch.setattr(course_lib.paths, "shipped_run", lambda kind, name: shipped if name == shipped.name else None)
    monkeypatch.setenv("COURSE_LIB_CACHE", str(tmp_path / "new-cache"))
    return run, shipped


def test_a_history_only_run_loads_its_history_writes_nothing_and_never_stands_in_for_weights(tmp_path, monkeypatch):
    from course_lib.finetuning.classify import scratch_classifier, train_classifier
    from course_lib.finetuning.runs import TrainConfig
    from course_lib.finetuning.shipped import find_finished, history_only
    from course_lib.finetuning.transfer import scratch_run

    collate = _collate()
    train, test = load_sentiment("train", n=16), load_sentiment("test", n=8)
    config = TrainConfig(lr=1e-4, epochs=1, batch_size=8)
    run, shipped = _ship_as_history(tmp_path, monkeypatch, lambda: scratch_run(
        train, test, collate, config, name="scratch-toy", progress=False))
    assert history_only(shipped) and not run.shipped

    again = scratch_run(train, test, collate, config, name="scratch-toy", progress=False)
    assert again.shipped and again.cached and again.origin == "shipped with the course"
    assert again.epochs == run.epochs and again.step_losses == run.step_losses
    assert not (tmp_path / "new-cache").exists(), "loading a shipped history writes nothing"

    # the same run asked for with a model: the history has no weights to give, so it is trained
    assert find_finished("scratch-toy", run.key) is None
    model = scratch_classifier(SENTIMENT_LABELS)
    trained = train_classifier(model, train, test, collate, "full", config, name="scratch-toy", progress=False)
    assert not trained.shipped and trained.step_losses == pytest.approx(run.step_losses, abs=1e-5)
    assert find_finished("scratch-toy", run.key) is not None  # now in the cache, with its weights

    # cache=False trains even though a history is shipped
    fresh = scratch_run(train, test, collate, config, name="scratch-toy", progress=False, cache=False)
    assert not fresh.shipped and fresh.step_losses == pytest.approx(run.step_losses, abs=1e-5)


def test_a_history_only_run_refuses_other_starting_weights(tmp_path, monkeypatch):
    from course_lib.finetuning.runs import TrainConfig
    from course_lib.finetuning.shipped import load_history
    from course_lib.finetuning.transfer import pretrained_run

    collate = _collate()
    train, test = load_sentiment("train", n=8), load_sentiment("test", n=8)
    config = TrainConfig(lr=5e-5, epochs=1, batch_size=8)
    run, shipped = _ship_as_history(tmp_path, monkeypatch, lambda: pretrained_run(
        train, test, collate, config, name="pretrained-toy", progress=False))
    again = pretrained_run(train, test, collate, config, name="pretrained-toy", progress=False)
    assert again.shipped and again.final() == run.final()
    with pytest.raises(RuntimeError, match="made from other starting weights than this model's"):
        load_history(shipped, "0" * 64)


def test_the_labelled_data_figure_draws_each_learner_at_its_sizes():
    from matplotlib.figure import Figure

    from course_lib.views.finetuning import labelled_data_figure

    curves = {"words": {100: 0.55, 500: 0.64, 3000: 0.74}, "scratch": {500: 0.66, 3000: 0.74},
              "pretrained": {100: 0.62, 250: 0.78, 500: 0.80}}
    fig = labelled_data_figure(curves, baseline=0.5, title="t")
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    lines = {line.get_label(): line for line in ax.get_lines()}
    for label, points in curves.items():
        assert list(lines[label].get_xdata()) == sorted(points)
        assert list(lines[label].get_ydata()) == [points[n] for n in sorted(points)]
    assert ax.get_xscale() == "log" and [t.get_text() for t in ax.get_xticklabels()] == ["100", "250", "500", "3,000"]
    assert "labelled" in ax.get_xlabel() and "accuracy" in ax.get_ylabel()
    assert len({line.get_color() for line in lines.values() if line.get_label() in curves}) == 3


def test_the_development_sentences_are_other_training_sentences_class_balanced_and_seeded():
    from course_lib.finetuning.transfer import development_sentences

    train = load_sentiment("train", n=500)
    dev = development_sentences(train)
    assert len(dev) == 400 and not {e.text for e in dev} & {e.text for e in train}
    assert not {e.text for e in dev} & {e.text for e in load_sentiment("test")}
    assert {label: sum(e.label == label for e in dev) for label in SENTIMENT_LABELS} == {"negative": 200, "positive": 200}
    assert development_sentences(train) == dev
    with pytest.raises(ValueError, match=r"only 2500 training-file sentences are not among the 500 given; 3000 "
                                         r"development sentences were asked for"):
        development_sentences(train, n=3000)
