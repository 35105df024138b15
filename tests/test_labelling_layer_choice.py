"""A probe's layer is chosen on held-out training documents (course_lib.finetuning.ner_layers), never on the test
sentences: whole documents on one side only, the best development F1 wins, ties go to the lower layer."""
from __future__ import annotations

import pytest

from course_lib.finetuning import ner_layers
from course_lib.finetuning.labelling import TaggedSentence, load_wikigold
from course_lib.finetuning.ner_layers import LayerChoice, choose_read_layer, development_split
from course_lib.finetuning.training import TrainConfig


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_LIB_CACHE", str(tmp_path / "cache"))


def test_the_development_documents_are_whole_and_every_fifth():
    train = load_wikigold("train")
    fit, dev = development_split(train)
    assert len(fit) + len(dev) == len(train) and fit and dev
    fit_docs, dev_docs = {s.doc for s in fit}, {s.doc for s in dev}
    assert not fit_docs & dev_docs                                      # no document on both sides
    docs = sorted(fit_docs | dev_docs)
    assert sorted(dev_docs) == docs[::5] and len(dev_docs) == 24        # 116 documents: 0, 5, ..., 115
    assert [s for s in train if s.doc in dev_docs] == dev               # order kept


def test_a_split_that_cannot_be_made_says_why():
    one_doc = [TaggedSentence(("a",), ("O",), 0)] * 10
    with pytest.raises(ValueError, match=r"1 document\(s\) cannot be split one in 5: the sentences need their `doc`"):
        development_split(one_doc)
    with pytest.raises(ValueError, match="every must be 2 or more"):
        development_split(one_doc, every=1)
    with pytest.raises(ValueError, match="no layers to choose from"):
        choose_read_layer(load_wikigold("train"), TrainConfig(), layers=())


def test_the_best_development_f1_wins_and_ties_go_to_the_lower_layer(monkeypatch):
    train = load_wikigold("train")[:200]
    fitted, scored = [], []

    class Probe:                                          # stands in for NerTagger: records what it is given
        def __init__(self, layer):
            self.layer = layer

        @classmethod
        def build(cls, encoder=None, train_layers=2, read_layer=None):
            assert train_layers == 0
            return cls(read_layer)

        def fit(self, sentences, config, name):
            fitted.append((self.layer, name, {s.doc for s in sentences}))
            return f"run {name}"

        def predict(self, sentences, decoding):
            scored.append({s.doc for s in sentences})
            return [[f"L{self.layer}"] for _ in sentences]

    class Report:
        def __init__(self, f1):
            self.micro = type("Micro", (), {"f1": f1})()

    f1_of = {"L2": 0.40, "L4": 0.50, "L6": 0.50}
    import course_lib.finetuning.ner as ner
    import course_lib.finetuning.ner_eval as ner_eval
    monkeypatch.setattr(ner, "NerTagger", Probe)
    monkeypatch.setattr(ner_eval, "entity_scores", lambda gold, pred: Report(f1_of[pred[0][0]]))
    choice = choose_read_layer(train, TrainConfig())
    assert isinstance(choice, LayerChoice) and choice.chosen == "L4" and choice.dev_f1 == f1_of
    assert choice.runs == ("run wikigold-ner-dev-L2", "run wikigold-ner-dev-L4", "run wikigold-ner-dev-L6")
    fit_docs, dev_docs = ({s.doc for s in side} for side in development_split(train))
    assert [(k, n) for k, n, _ in fitted] == [(2, "wikigold-ner-dev-L2"), (4, "wikigold-ner-dev-L4"),
                                              (6, "wikigold-ner-dev-L6")]
    assert all(docs == fit_docs for _, _, docs in fitted) and all(docs == dev_docs for docs in scored)
    assert str(choice).startswith(f"chosen on {choice.dev_documents} held-out training documents")
    assert "L2 0.40, L4 0.50, L6 0.50 -> L4" in str(choice)


@pytest.mark.slow
def test_a_real_choice_trains_one_probe_per_layer_and_finds_them_again():
    train = load_wikigold("train")[:150]
    config = TrainConfig(lr=1e-4, epochs=1, batch_size=32, lr_overrides=(("model.classifier.", 1e-2),))
    first = choose_read_layer(train, config, layers=(1, 2), name="tiny-dev")
    assert set(first.dev_f1) == {"L1", "L2"} and first.chosen in first.dev_f1
    assert all(0 <= f1 <= 1 for f1 in first.dev_f1.values())
    again = choose_read_layer(train, config, layers=(1, 2), name="tiny-dev")       # cached runs, same scores
    assert again.dev_f1 == first.dev_f1 and again.chosen == first.chosen
    assert [r.startswith("TrainRun('tiny-dev-L") for r in first.runs] == [True, True]
    assert all(r.endswith(", from the cache)") for r in again.runs), again.runs
    assert ner_layers.development_split(train)[1][0].doc == 0
