"""The training runs shipped with the course (course_lib/data/runs, made by tools/ship_runs.py): each is the run
the current code asks for, a fresh cache loads it without training or writing anything, its first steps
retrained here give its losses, and the README describes what is there."""
from __future__ import annotations

import copy
import json
import math
import sys

import pytest

from conftest import ROOT
import course_lib.paths
from course_lib.paths import data_dir, finished_run, is_shipped, shipped_run
from course_lib.pretraining.training import (PretrainingRecipe, corpus_hash, pretrain_tiny_bert,
                                             python_reference_documents, run_folder)

sys.path.insert(0, str(ROOT / "tools"))
import ship_runs  # noqa: E402

RUNS = data_dir("runs")
STEPS = 25  # retrained here: the first steps of the shipped run
TOL = 2e-3  # losses are stored to 5 decimals; another CPU sums in another order


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_LIB_CACHE", str(tmp_path))
    return tmp_path


def _shipped_tiny_bert():
    runs = sorted((RUNS / "pretraining").glob("tiny-bert-*"))
    assert len(runs) == 1, f"one tiny BERT run is shipped, not {[r.name for r in runs]}"
    return runs[0], json.loads((runs[0] / "shipped.json").read_text())


def _same_training_text(made: dict):
    # the text is the course's copy of Python 3.11.7's manual (course_lib/data/python_reference), whatever Python
    # runs this: it used to be the running Python's, and these tests skipped on any other (Python 3.12 on a GPU)
    assert corpus_hash(python_reference_documents()) == made["corpus_hash"], \
        "the shipped run was trained on another text than course_lib/data/python_reference: run tools/ship_runs.py"


def test_the_shipped_tiny_bert_is_the_run_the_notebooks_recipe_asks_for(empty_cache):
    folder, made = _shipped_tiny_bert()
    _same_training_text(made)
    want = run_folder(PretrainingRecipe()).name
    assert folder.name == want, (f"the shipped run {folder.name} is not the current recipe's ({want}): the recipe or "
                                 "the code version changed; run tools/ship_runs.py")
    assert shipped_run("pretraining", want) == folder


def test_a_finished_run_is_the_shipped_one_first_then_a_complete_cache_folder(tmp_path, monkeypatch):
    cached = tmp_path / "pretraining" / "run-abc"
    cached.mkdir(parents=True)
    assert finished_run("pretraining", cached) is None          # no run.json: interrupted, trains again
    (cached / "run.json").write_text("{}")
    assert finished_run("pretraining", cached) == cached
    shipped = tmp_path / "shipped" / "run-abc"
    monkeypatch.setattr(course_lib.paths, "shipped_run", lambda kind, name: shipped if (kind, name) == (
        "pretraining", "run-abc") else None)
    assert finished_run("pretraining", cached) == shipped        # the same run wherever the notebook runs
    assert finished_run("finetuning", cached) == cached          # the kind is part of the lookup


def test_a_fresh_cache_loads_the_shipped_run_and_writes_nothing(empty_cache):
    folder, made = _shipped_tiny_bert()
    _same_training_text(made)
    run = pretrain_tiny_bert(PretrainingRecipe(), progress=False)
    assert run.cached and run.shipped and run.origin == "shipped with the course" and run.path == folder
    assert is_shipped(run.path) and not is_shipped(empty_cache)
    assert not [f for f in empty_cache.rglob("*") if f.is_file()], "loading a shipped run wrote into the cache"
    assert len(run.losses) == run.recipe.steps and run.evals[-1]["step"] == run.recipe.steps
    assert run.evals[-1]["heldout_mlm"] < run.evals[0]["heldout_mlm"] - 1  # it learnt
    m = run.model
    assert m.cls.predictions.decoder.weight is m.bert.embeddings.word_embeddings.weight


def test_its_first_steps_retrained_here_give_its_losses(empty_cache):
    folder, made = _shipped_tiny_bert()
    _same_training_text(made)
    shipped = pretrain_tiny_bert(PretrainingRecipe(), progress=False)
    # retrained on the CPU, as the shipped run was: a GPU draws other dropout masks, so its losses differ
    again = pretrain_tiny_bert(PretrainingRecipe(), progress=False, stop_after=STEPS, device="cpu")
    assert not again.cached and again.path is None and not [f for f in empty_cache.rglob("*") if f.is_file()]
    assert [r["step"] for r in again.losses] == list(range(1, STEPS + 1))
    for a, b in zip(again.losses, shipped.losses[:STEPS]):
        assert a["mlm"] == pytest.approx(b["mlm"], abs=TOL) and a["nsp"] == pytest.approx(b["nsp"], abs=TOL), a["step"]
    assert again.evals[0]["heldout_mlm"] == pytest.approx(shipped.evals[0]["heldout_mlm"], abs=TOL)
    assert math.isclose(again.losses[-1]["lr"], shipped.losses[STEPS - 1]["lr"])


def test_cache_false_trains_even_when_a_run_is_shipped_and_stop_after_is_checked(empty_cache):
    with pytest.raises(ValueError, match="stop_after must be between 1 and the recipe's 3000 steps, not 0"):
        pretrain_tiny_bert(PretrainingRecipe(), progress=False, stop_after=0)
    short = PretrainingRecipe(steps=4, batch_size=4, warmup=1, eval_every=2)
    run = pretrain_tiny_bert(short, progress=False, cache=False)
    assert not run.cached and not run.shipped and run.origin == "just now"


# ----------------------------------------------------------------------------- 11.2 §7: domain adaptation

@pytest.fixture(scope="module")
def course_bert():
    from course_lib import load_pretrained

    return load_pretrained("course-bert", device="cpu")


def _shipped_adaptation():
    runs = sorted((RUNS / "pretraining").glob("adapt-course-bert-*"))
    assert len(runs) == 1, f"one adaptation run is shipped, not {[r.name for r in runs]}"
    return runs[0], json.loads((runs[0] / "shipped.json").read_text())


def test_the_shipped_adaptation_is_the_run_the_notebook_asks_for(course_bert, empty_cache):
    from course_lib.pretraining.adaptation import AdaptationRecipe, adaptation_run_name

    folder, made = _shipped_adaptation()
    _same_training_text(made)
    model, _ = course_bert
    want = adaptation_run_name(model, "course-bert", AdaptationRecipe())
    assert folder.name == want, (f"the shipped adaptation {folder.name} is not the current one ({want}): the recipe, "
                                 "the code version or course-bert's weights changed; run tools/ship_runs.py")
    meta = json.loads((folder / "run.json").read_text())
    assert set(meta["after"]) == {"in-domain (held-out Python manual)", ship_runs.OTHER_TEXTS}
    source = (ROOT / "notebooks" / "11_2_masked_language_modeling.py").read_text()
    assert f'other_texts={{"{ship_runs.OTHER_TEXTS}": heldout[:{ship_runs.N_OTHER}]}}' in source, \
        "the notebook scores other texts than the shipped run did"


def test_the_adaptation_loads_without_training_and_its_first_steps_are_reproduced(course_bert, empty_cache):
    from course_lib.checkpoints import shipped_heldout
    from course_lib.pretraining.adaptation import AdaptationRecipe, adapt_to_domain

    folder, made = _shipped_adaptation()
    _same_training_text(made)
    model, tok = course_bert
    other = {ship_runs.OTHER_TEXTS: shipped_heldout("course-bert")[:ship_runs.N_OTHER]}
    run = adapt_to_domain(model, tok, "course-bert", AdaptationRecipe(), other_texts=other, progress=False)
    assert run.cached and run.shipped and run.path == folder and run.origin == "shipped with the course"
    assert run.after == json.loads((folder / "run.json").read_text())["after"]  # nothing scored again
    assert not [f for f in empty_cache.rglob("*") if f.is_file()], "loading a shipped run wrote into the cache"
    # retrained on the CPU (a copy there), as the shipped run was: a GPU draws other dropout masks
    again = adapt_to_domain(copy.deepcopy(model).cpu(), tok, "course-bert", AdaptationRecipe(), progress=False,
                            stop_after=5)
    assert not again.cached and again.path is None and again.before == again.after == {}
    assert again.losses == pytest.approx(run.losses[:5], abs=TOL)
    with pytest.raises(ValueError, match="stop_after must be between 1 and the recipe's 60 steps, not 61"):
        adapt_to_domain(model, tok, "course-bert", AdaptationRecipe(), progress=False, stop_after=61)


def test_every_shipped_run_is_complete_small_and_in_the_readme():
    folders = [p for kind in RUNS.iterdir() if kind.is_dir() for p in kind.iterdir()]
    assert folders
    readme = (RUNS / "README.md").read_text()
    for folder in folders:
        assert (folder / "run.json").is_file() and (folder / "shipped.json").is_file(), folder
        assert sum(f.stat().st_size for f in folder.rglob("*")) < 25 * 2**20, folder  # files: <= 50 MB each; 25 MB a run
        assert f"`{folder.parent.name}/{folder.name}`" in readme
    assert readme == ship_runs.readme_text(), "run tools/ship_runs.py --readme"



# ----------------------------------------------------------------------------- 11.4a: fine-tuning runs (deltas)

SHIPPED_FT = sorted(p.name for p in (RUNS / "finetuning").iterdir() if p.is_dir()) if (RUNS / "finetuning").is_dir() else []
FINETUNING = [n for n in SHIPPED_FT if ship_runs.WHAT[ship_runs._prefix(n)][0] == "11.4a"]
STUDENTS = [n for n in SHIPPED_FT if ship_runs._prefix(n) in ship_runs.STUDENT_RUNS]


def test_the_fine_tuning_runs_of_11_4a_are_shipped_but_not_the_one_that_moves_every_weight():
    assert {ship_runs._prefix(n) for n in FINETUNING} == {"head-cls", "head-mean", "last2-cls", "full-cls",
                                                         "nli-cross", "nli-bi"}
    assert ({ship_runs._prefix(n) for n in SHIPPED_FT} - set(map(ship_runs._prefix, FINETUNING))
            == ship_runs.LABELLING_RUNS | ship_runs.STUDENT_RUNS | ship_runs.HISTORY_RUNS)
    assert {ship_runs._prefix(n) for n in STUDENTS} == ship_runs.STUDENT_RUNS


def _recipe(folder):
    """The model, data, collate and strategy of a shipped run, rebuilt from its run.json as notebook 11.4a makes
    them (the key the run is found by checks that they are the same)."""
    import torch

    from course_lib.finetuning.classify import pretrained_classifier, pretrained_encoder
    from course_lib.finetuning.data import (NLI_LABELS, SENTIMENT_LABELS, BiEncoderCollator, PairCollator,
                                            SentenceCollator, load_nli, load_sentiment)
    from course_lib.finetuning.runs import TrainRun
    from course_lib.finetuning.sbert import SiameseClassifier

    run = TrainRun.from_dict(json.loads((folder / "run.json").read_text()))
    info, (_, tokenizer) = run.info, pretrained_encoder()
    if run.name.startswith("nli-"):
        train, test = load_nli("train", n=info["train_examples"]), load_nli("test", n=info["test_examples"])
        if run.name == "nli-bi":
            torch.manual_seed(0)
            model = SiameseClassifier(pretrained_encoder()[0], NLI_LABELS, pooling=info["pooling"])
            collate = BiEncoderCollator(tokenizer, NLI_LABELS, 64)
        else:
            model, collate = (pretrained_classifier(NLI_LABELS, pooling=info["pooling"]),
                              PairCollator(tokenizer, NLI_LABELS, max_length=64))
    else:
        train, test = load_sentiment("train", n=info["train_examples"]), load_sentiment("test", n=info["test_examples"])
        model = pretrained_classifier(SENTIMENT_LABELS, pooling=info["pooling"])
        collate = SentenceCollator(tokenizer, SENTIMENT_LABELS, max_length=64)
    return run, model, train, test, collate, info["strategy"]


# ----------------------------------------------------------------------------- 11.4a §3: runs shipped as histories

HISTORIES = [n for n in SHIPPED_FT if ship_runs._prefix(n) in ship_runs.HISTORY_RUNS]
from course_lib.finetuning.data import SENTIMENT_LABELS, SentenceCollator, load_sentiment  # noqa: E402


def test_the_history_only_runs_are_shipped_without_weights():
    from course_lib.finetuning.shipped import HISTORY_ONLY

    assert {ship_runs._prefix(n) for n in HISTORIES} == ship_runs.HISTORY_RUNS
    for name in HISTORIES:
        folder = RUNS / "finetuning" / name
        assert {f.name for f in folder.iterdir()} == {"run.json", "shipped.json"}, name
        made = json.loads((folder / "shipped.json").read_text())
        assert made[HISTORY_ONLY] is True and len(made["initial"]) == 64


def _history_recipe(name):
    """What notebook 11.4a passes to scratch_run / pretrained_run for a history-only run, rebuilt from its
    run.json (the key it is found by checks that they are the same)."""
    from course_lib.finetuning.classify import pretrained_encoder, pretrained_classifier, scratch_classifier
    from course_lib.finetuning.runs import TrainRun
    from course_lib.finetuning.transfer import pretrained_run, scratch_run

    shipped = TrainRun.from_dict(json.loads((RUNS / "finetuning" / name / "run.json").read_text()))
    info = shipped.info
    train, test = load_sentiment("train", n=info["train_examples"]), load_sentiment("test", n=info["test_examples"])
    if shipped.name.startswith("scratch-dev-"):  # a setting tried, scored on development sentences (11.4a §3)
        from course_lib.finetuning.transfer import development_sentences

        test = development_sentences(train)
    collate = SentenceCollator(pretrained_encoder()[1], SENTIMENT_LABELS, max_length=64)
    scratch = shipped.name.startswith("scratch-")
    return (shipped, scratch_run if scratch else pretrained_run,
            scratch_classifier if scratch else pretrained_classifier, train, test, collate)


@pytest.mark.slow
@pytest.mark.parametrize("name", HISTORIES)
def test_a_history_only_run_is_the_one_the_notebook_asks_for_and_loads_without_writing(name, empty_cache):
    if name.startswith("nli-dev-"):  # notebook 11.4a §4: an NLI recipe tried, scored on the development pairs
        import dataclasses

        from course_lib.finetuning.classify import pretrained_encoder
        from course_lib.finetuning.data import load_nli
        from course_lib.finetuning.nli_recipes import RECIPES, dev_run_name, dev_runs, development_pairs
        from course_lib.finetuning.runs import TrainRun

        shipped = TrainRun.from_dict(json.loads((RUNS / "finetuning" / name / "run.json").read_text()))
        (recipe, kind), = [(r, k) for r in RECIPES for k in ("cross-encoder", "bi-encoder")
                           if dev_run_name(r, k) == shipped.name]
        nli_train = load_nli("train", n=600)
        runs = dev_runs(recipe, nli_train, development_pairs(nli_train),
                        lambda lr, epochs: dataclasses.replace(shipped.config, lr=lr, epochs=epochs),
                        pretrained_encoder()[1], progress=False)
        run = runs[kind]
        assert run.shipped and run.epochs == shipped.epochs, f"{name}: run tools/ship_runs.py --only new_histories"
        assert not [f for f in empty_cache.rglob("*") if f.is_file()], "loading a shipped history wrote into the cache"
        return
    shipped, make_run, _, train, test, collate = _history_recipe(name)
    if shipped.name.startswith("forgetting-"):  # course-bert fine-tuned, its MLM head scored after every epoch
        import course_lib
        from course_lib.checkpoints import shipped_heldout
        from course_lib.finetuning.transfer import forgetting_run
        from course_lib.pretraining.masking import unigram_distribution

        mlm, tokenizer = course_lib.load_pretrained("course-bert", device="cpu")
        heldout = shipped_heldout("course-bert")
        collate = SentenceCollator(tokenizer, SENTIMENT_LABELS, max_length=64)
        run = forgetting_run(mlm, tokenizer, train, test, collate, shipped.config, mlm_texts=heldout[:300],
                             unigram=unigram_distribution(heldout[300:1300], tokenizer=tokenizer), name=shipped.name,
                             progress=False)
        assert run.info["mlm_before"] == shipped.info["mlm_before"]
    else:
        run = make_run(train, test, collate, shipped.config, name=shipped.name, progress=False)
    assert run.shipped and run.origin == "shipped with the course", \
        f"{name} is not the run this recipe asks for: the recipe, data or code changed; run tools/ship_runs.py"
    assert run.epochs == shipped.epochs
    assert not [f for f in empty_cache.rglob("*") if f.is_file()], "loading a shipped history wrote into the cache"


@pytest.mark.slow
@pytest.mark.parametrize("prefix", ["scratch-cls", "full-cls-100"])  # from random weights, and from MiniLM's
def test_the_first_steps_of_a_history_only_run_are_reproduced(prefix, empty_cache):
    from course_lib.finetuning.classify import train_classifier

    name = next(n for n in HISTORIES if ship_runs._prefix(n) == prefix)
    shipped, _, make_model, train, test, collate = _history_recipe(name)
    losses = []

    def record(event, r):
        if event == "step":
            losses[:] = r.step_losses

    model = make_model(collate.labels, pooling=shipped.info["pooling"])
    again = train_classifier(model, train, test[:1], collate, "full", shipped.config, name=shipped.name,
                             progress=False, cache=False, stop=lambda: len(losses) >= 5, callback=record,
                             device="cpu")
    assert again.interrupted
    assert losses == pytest.approx(shipped.step_losses[:5], abs=TOL)


@pytest.mark.slow
@pytest.mark.parametrize("name", FINETUNING)
def test_a_shipped_fine_tuning_run_loads_and_scores_its_recorded_accuracy(name, empty_cache):
    from course_lib.finetuning.classify import train_classifier
    from course_lib.finetuning.training import evaluate

    folder = RUNS / "finetuning" / name
    shipped, model, train, test, collate, strategy = _recipe(folder)
    run = train_classifier(model, train, test, collate, strategy, shipped.config, name=shipped.name, progress=False)
    assert run.shipped and run.origin == "shipped with the course", \
        f"{name} is not the run this recipe asks for: the recipe, data or code changed; run tools/ship_runs.py"
    assert not [f for f in empty_cache.rglob("*") if f.is_file()], "loading a shipped run wrote into the cache"
    assert run.epochs == shipped.epochs
    scores = evaluate(model, test, collate)  # the whole model on raw text, not the training's stored states
    assert scores["accuracy"] == pytest.approx(run.final(), abs=1.01 / len(test)), "at most one example flips"
    assert scores["loss"] == pytest.approx(run.final("loss"), abs=2e-3)


@pytest.mark.slow
@pytest.mark.parametrize("prefix", ["last2-cls", "nli-bi"])  # a sentence classifier and the siamese pair model
def test_the_first_steps_of_a_shipped_fine_tuning_run_are_reproduced(prefix, empty_cache):
    from course_lib.finetuning.classify import train_classifier

    name = next(n for n in FINETUNING if ship_runs._prefix(n) == prefix)
    shipped, model, train, test, collate, strategy = _recipe(RUNS / "finetuning" / name)
    losses = []

    def record(event, r):
        if event == "step":
            losses[:] = r.step_losses

    # the held-out set is not reached in 5 steps: one example of it is enough
    again = train_classifier(model, train, test[:1], collate, strategy, shipped.config, name=shipped.name,
                             progress=False, cache=False, stop=lambda: len(losses) >= 5, callback=record,
                             device="cpu")  # where the shipped run was trained: a GPU draws other dropout masks
    assert not again.shipped and again.interrupted
    assert losses == pytest.approx(shipped.step_losses[:5], abs=TOL)


@pytest.mark.slow
@pytest.mark.parametrize("name", STUDENTS)
def test_a_shipped_student_loads_under_the_shipped_teacher_and_scores_its_recorded_accuracy(name, empty_cache):
    """The students are keyed by the run that trained their teacher: the teacher loaded from its shipped delta
    (weights that differ from the freshly trained ones in their last bits) finds the students made with it."""
    from course_lib.finetuning.classify import pretrained_encoder, train_classifier
    from course_lib.finetuning.data import SENTIMENT_LABELS, SentenceCollator, load_sentiment
    from course_lib.finetuning.distill import Student, compact_classifier, train_student
    from course_lib.finetuning.runs import TrainRun
    from course_lib.finetuning.training import evaluate

    (teacher_folder,) = [RUNS / "finetuning" / n for n in FINETUNING if ship_runs._prefix(n) == "full-cls"]
    shipped_teacher, teacher, train, test, collate, strategy = _recipe(teacher_folder)
    assert train_classifier(teacher, train, test, collate, strategy, shipped_teacher.config, name="full-cls",
                            progress=False).shipped
    shipped = TrainRun.from_dict(json.loads((RUNS / "finetuning" / name / "run.json").read_text()))
    _, tokenizer = pretrained_encoder()
    seen = {e.text for e in train}
    data = train if shipped.info["teacher"] is None else (
        [e.text for e in train] + [e.text for e in load_sentiment("train") if e.text not in seen])
    kwargs = {"temperature": shipped.info["temperature"]} | ({} if shipped.info["teacher"] is None else {
        "teacher": teacher, "hard": shipped.info["teacher"] == "top class"})
    student = compact_classifier(SENTIMENT_LABELS, shipped.info["layers"])
    run = train_student(student, data, test, tokenizer, SENTIMENT_LABELS, config=shipped.config, name=shipped.name,
                        progress=False, **kwargs)
    assert run.shipped, f"{name} is not the run this recipe asks for: run tools/ship_runs.py --only finetuning"
    assert not [f for f in empty_cache.rglob("*") if f.is_file()], "loading a shipped run wrote into the cache"
    scores = evaluate(Student(student), test, SentenceCollator(tokenizer, SENTIMENT_LABELS, 64))
    assert scores["accuracy"] == pytest.approx(run.final(), abs=1.01 / len(test)), "at most one example flips"


# ----------------------------------------------------------------------------- 11.5: SpanBERT (and 11.4b / 11.5's heads)

def _gum_train():
    from course_lib.spans import load_gum_spans

    return load_gum_spans("train")


@pytest.mark.slow
def test_the_shipped_spanbert_run_is_the_one_the_notebook_asks_for_and_loads_without_writing(empty_cache):
    from course_lib.spans.experiments import train_spanbert

    (folder,) = (RUNS / "spans").glob("spanbert-*")
    model, _, _, run = train_spanbert(_gum_train(), steps=96, pool=32, progress=False)  # notebook 11.5's call
    assert run.shipped and run.origin == "shipped with the course", \
        "the shipped SpanBERT run is not the one notebook 11.5 asks for: run tools/ship_runs.py --only labelling"
    assert not [f for f in empty_cache.rglob("*") if f.is_file()], "loading a shipped run wrote into the cache"
    assert run.losses == json.loads((folder / "run.json").read_text())["losses"] and len(run.losses) == 96
    from safetensors.torch import load_file
    shipped = load_file(str(folder / "trainable.safetensors"))
    state = model.state_dict()
    assert shipped and all(torch_equal(state[n], t) for n, t in shipped.items())
    # its first 5 steps, trained here from the same start, give its losses (the pool's batches are drawn in order,
    # so the first 5 of a pool of 5 are the first 5 of the run's 32: only they are computed)
    _, _, _, again = train_spanbert(_gum_train(), steps=5, pool=5, progress=False, cache=False)
    assert not again.shipped and not again.cached
    for mine, theirs in zip(again.losses, run.losses[:5]):
        assert mine["sbo"] == pytest.approx(theirs["sbo"], abs=TOL) and mine["mlm"] == pytest.approx(theirs["mlm"], abs=TOL)


def torch_equal(a, b) -> bool:
    import torch

    return torch.equal(a, b)
