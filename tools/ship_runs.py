"""Train the runs that a fresh clone would otherwise train the first time a notebook runs, and ship them in
course_lib/data/runs/<kind>/<name>: the folder the cache would hold for the same run, named by the same key
(recipe, data, code version), so that the library loads it instead of training (course_lib.paths.shipped_run).

    python tools/ship_runs.py            # train each run in an empty temporary cache, copy it, write the README
    python tools/ship_runs.py --only finetuning   # only these runs (tiny_bert, adaptation, finetuning, labelling)
    python tools/ship_runs.py --only new_histories   # 11.4a's history-only runs not shipped yet (nothing retrained)
    python tools/ship_runs.py --readme   # only write course_lib/data/runs/README.md from what is shipped

Each run is trained from nothing here (never copied from an older cache) by the library function the notebook
calls, with the notebook's recipe. tests/test_shipped_runs.py checks that each shipped run is the one the
current code asks for, and retrains its first steps to compare their losses with the shipped ones.

What is shipped (every other heavy step is cached on first use, see the README):
  pretraining/tiny-bert-<key>           notebook 11.2 §6: BERT's two objectives from random weights (0.9 MB)
  pretraining/adapt-course-bert-<key>   notebook 11.2 §7: MLM domain adaptation of course-bert (15 MB)
  finetuning/<run>-<key>                notebook 11.4a: the runs whose float16 delta is at most 24 MB (head only,
                                        last 2 layers, full fine-tuning at 5e-5 -- its word embeddings by the
                                        rows that moved --, the NLI cross- and bi-encoder), from executing the
                                        notebook itself in the empty cache; §6's three distilled students (2
                                        blocks, 7 MB each); and as their history alone, the runs of which the
                                        notebook draws only numbers (among them the full fine-tuning at 1e-2,
                                        every row moved: 45 MB as a delta)
  finetuning/<run>-<key>                notebooks 11.4b and 11.5: the taggers, the QA head and the span model,
                                        heads (and, for 11.4b's full tagger, all six blocks) on frozen states
                                        (keyed by the ids and weights the states come from, not by their floats,
                                        so every machine finds them)
  spans/spanbert-<key>                  notebook 11.5: the SBO head of the short SpanBERT run (2.4 MB)
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "course_lib" / "data" / "runs"


def _tiny_bert(cache: Path) -> list[tuple[str, Path, dict]]:
    from course_lib.pretraining.training import (PretrainingRecipe, corpus_hash, pretrain_tiny_bert,
                                                 python_reference_documents)

    run = pretrain_tiny_bert(PretrainingRecipe(), progress=True)
    assert run.path is not None and Path(run.path).is_relative_to(cache), run.path
    # the training text is Python 3.11.7's reference manual, copied into course_lib/data/python_reference (every
    # Python patch version ships another one): the same on every machine, and the test checks the recorded hash
    return [("pretraining", Path(run.path), {"corpus_hash": corpus_hash(python_reference_documents()),
                                             "python": platform.python_version()})]


OTHER_TEXTS = "general English (course-bert's held-out text)"  # what notebook 11.2 also scores, and how many
N_OTHER = 200


def _adaptation(cache: Path) -> list[tuple[str, Path, dict]]:
    from course_lib import load_pretrained
    from course_lib.checkpoints import shipped_heldout
    from course_lib.pretraining.adaptation import AdaptationRecipe, adapt_to_domain
    from course_lib.pretraining.training import corpus_hash, python_reference_documents

    model, tok = load_pretrained("course-bert", device="cpu")
    run = adapt_to_domain(model, tok, "course-bert", AdaptationRecipe(),
                          other_texts={OTHER_TEXTS: shipped_heldout("course-bert")[:N_OTHER]})
    assert run.path is not None and Path(run.path).is_relative_to(cache), run.path
    return [("pretraining", Path(run.path), {"corpus_hash": corpus_hash(python_reference_documents()),
                                             "python": platform.python_version()})]


FINETUNING_NOTEBOOKS = ["11_4a_sentence_classification"]
DELTA_LIMIT = 24 * 2**20   # bytes: a full fine-tuning at 5e-5 is 23 MB (embeddings by moved rows); at 1e-2, 45 MB


def _finetuning(cache: Path) -> list[tuple[str, Path, dict]]:
    """Execute each notebook in the empty cache with COURSE_LIB_SHIP_DELTAS set, so that every fine-tuning run it
    finishes also writes its float16 delta and fingerprints (course_lib.finetuning.shipped.save_delta); ship those
    that are small enough. The recipes are therefore exactly the notebook's."""

    _execute(FINETUNING_NOTEBOOKS)
    made = _deltas(cache, lambda name: _prefix(name) not in LABELLING_RUNS | HISTORY_RUNS)
    return made + _histories(cache, HISTORY_RUNS)


def _new_histories(cache: Path) -> list[tuple[str, Path, dict]]:
    """The history-only runs of notebook 11.4a that are not shipped yet, from executing it with everything that is
    shipped in place (so that only those train)."""
    _execute(FINETUNING_NOTEBOOKS)
    new = {_prefix(f.name) for f in (cache / "finetuning").iterdir()} & HISTORY_RUNS
    return _histories(cache, new)


def _histories(cache: Path, names: set[str]) -> list[tuple[str, Path, dict]]:
    """The runs ``names`` of the cache as their history alone: run.json, and the fingerprint of the weights they
    started from (course_lib.finetuning.shipped, "history only")."""
    from course_lib.finetuning.shipped import HISTORY_ONLY

    made = []
    for folder in sorted((cache / "finetuning").iterdir()):
        if _prefix(folder.name) not in names:
            continue
        staged = cache / "ship" / folder.name
        staged.mkdir(parents=True)
        shutil.copy2(folder / "run.json", staged / "run.json")
        delta_made = json.loads((folder / "shipped.json").read_text())
        made.append(("finetuning", staged, {HISTORY_ONLY: True, "initial": delta_made["initial"],
                                            "torch": delta_made["torch"], "python": platform.python_version(),
                                            "threads": torch_threads()}))
    assert {_prefix(f.name) for _, f, _ in made} == names, [f.name for _, f, _ in made]
    return made


def _execute(notebooks: list[str]) -> None:
    import jupytext
    from nbclient import NotebookClient

    from course_lib.finetuning.shipped import SHIP_ENV

    os.environ[SHIP_ENV] = "1"
    try:
        for name in notebooks:
            nb = jupytext.read(ROOT / "notebooks" / f"{name}.py")
            NotebookClient(nb, timeout=3600, kernel_name="python3",
                           resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
    finally:
        del os.environ[SHIP_ENV]


def _deltas(cache: Path, wanted) -> list[tuple[str, Path, dict]]:
    """The fine-tuning runs of the cache that wrote a delta of at most DELTA_LIMIT and whose name is wanted."""
    made = []
    for folder in sorted((cache / "finetuning").iterdir()):
        delta = folder / "delta.safetensors"
        if not delta.exists() or delta.stat().st_size > DELTA_LIMIT or not wanted(folder.name):
            continue
        staged = cache / "ship" / folder.name
        staged.mkdir(parents=True)
        for f in ("run.json", "delta.safetensors"):
            shutil.copy2(folder / f, staged / f)
        provenance = json.loads((folder / "shipped.json").read_text())
        provenance.update(python=platform.python_version(), threads=torch_threads())
        made.append(("finetuning", staged, provenance))
    return made


LABELLING_NOTEBOOKS = ["11_4b_sequence_labelling", "11_5_span_based"]
LABELLING_RUNS = {"wikigold-ner-first", "wikigold-ner-every", "wikigold-ner-full", "wikigold-ner-probe-L2",
                  "wikigold-ner-probe-L4", "wikigold-ner-dev-L2", "wikigold-ner-dev-L4", "wikigold-ner-dev-L6",
                  "squad-sample-head-only", "span-ner-learned",
                  "gum-bio-outermost"}  # fine-tuning runs of these notebooks, by name


def _labelling(cache: Path) -> list[tuple[str, Path, dict]]:
    """Notebooks 11.4b and 11.5, executed in the empty cache: their fine-tuning runs (heads on frozen states) as
    deltas, and 11.5's SpanBERT run as it is (its SBO head, float32)."""
    _execute(LABELLING_NOTEBOOKS)
    made = _deltas(cache, lambda name: _prefix(name) in LABELLING_RUNS)
    assert {_prefix(f.name) for _, f, _ in made} == LABELLING_RUNS, [f.name for _, f, _ in made]
    (run,) = (cache / "spans").glob("spanbert-*")
    import torch

    made.append(("spans", run, {"torch": torch.__version__, "python": platform.python_version(),
                                "threads": torch_threads()}))
    return made


def torch_threads() -> int:
    import torch

    return torch.get_num_threads()


WHAT = {  # the run's name up to its key -> (notebook, what it is, how the notebook asks for it)
    "tiny-bert": ("11.2 §6", "tiny BERT (2 layers, d = 64, WordPiece 1,000) pretrained with L_MLM + L_NSP from "
                  "random weights on the Python reference manual", "pretrain_tiny_bert(PretrainingRecipe())"),
    "adapt-course-bert": ("11.2 §7", "course-bert's top 2 layers and MLM transform trained further by MLM on the "
                          "Python reference manual (domain adaptation)",
                          "adapt_to_domain(course-bert, tokenizer, \"course-bert\", AdaptationRecipe(), ...)"),
}
_SENTIMENT = "sentiment (500 rt-polarity sentences, 3 epochs)"
_NLI = "NLI (600 SNLI pairs, 6 epochs)"
for _run, _what, _call in [
        ("head-cls", f"the head on the frozen encoder's [CLS], {_SENTIMENT}", "\"head\", name=\"head-cls\""),
        ("head-mean", f"the head on the frozen encoder's mean vector, {_SENTIMENT}", "\"head\", name=\"head-mean\""),
        ("last2-cls", f"the last 2 blocks and the head, [CLS], {_SENTIMENT}", "\"last-2\", name=\"last2-cls\""),
        ("full-cls", f"every parameter, [CLS], lr 5e-5 (the word embeddings by the rows that moved), {_SENTIMENT}",
         "\"full\", name=\"full-cls\""),
        ("nli-cross", f"cross-encoder: the last 3 blocks and the head, mean pooling, {_NLI}", "name=\"nli-cross\""),
        ("nli-bi", f"SentenceBERT bi-encoder: the last 3 blocks and W, mean pooling, {_NLI}", "name=\"nli-bi\"")]:
    WHAT[_run] = ("11.4a", _what, f"train_classifier(..., {_call})")
_STUDENT = "a student of MiniLM's bottom 2 blocks (word embeddings frozen) and a new head"
for _run, _what, _call in [
        ("student-gold", f"{_STUDENT}, on the 500 gold-labelled sentences, 18 epochs", "name=\"student-gold\""),
        ("student-top-class", f"{_STUDENT}, on 3,000 sentences labelled with the teacher's (full-cls) top class, "
         "3 epochs", "teacher=teacher, hard=True, name=\"student-top-class\""),
        ("student-scores", f"{_STUDENT}, on the teacher's (full-cls) scores for 3,000 sentences, L_KD at T = 2, "
         "3 epochs", "teacher=teacher, temperature=T_KD, name=\"student-scores\"")]:
    WHAT[_run] = ("11.4a §6", _what, f"train_student(..., {_call})")
STUDENT_RUNS = {"student-gold", "student-top-class", "student-scores"}
for _run, _what, _call in [
        ("scratch-cls", "the same network from seeded random weights, every parameter, [CLS], lr 1e-4, 500 "
         "rt-polarity sentences, 10 epochs", "scratch_run(..., name=\"scratch-cls\")"),
        ("scratch-cls-3000", "the same network from seeded random weights, every parameter, [CLS], lr 1e-4, all "
         "3,000 rt-polarity training sentences, 6 epochs", "scratch_run(..., name=\"scratch-cls-3000\")"),
        ("full-cls-100", "every parameter, [CLS], lr 5e-5, 100 rt-polarity sentences, 3 epochs",
         "pretrained_run(..., name=\"full-cls-100\")"),
        ("full-cls-250", "every parameter, [CLS], lr 5e-5, 250 rt-polarity sentences, 3 epochs",
         "pretrained_run(..., name=\"full-cls-250\")")]:
    WHAT[_run] = ("11.4a §3", _what + " (history only)", _call)
WHAT["full-cls-lr1e-2"] = ("11.4a §3", "every parameter, [CLS], lr 1e-2, 500 rt-polarity sentences, 1 epoch (history only)",
                           "pretrained_run(..., name=\"full-cls-lr1e-2\")")
for _run, _what, _call in [
        ("forgetting-5e-5", "course-bert fine-tuned whole on 500 rt-polarity sentences, lr 5e-5, 3 epochs, its "
         "untouched MLM head scored on 300 held-out sentences after every epoch", "forgetting_run(..., "
         "name=\"forgetting-5e-5\")"),
        ("forgetting-1e-4", "the same at lr 1e-4, 10 epochs", "forgetting_run(..., name=\"forgetting-1e-4\")")]:
    WHAT[_run] = ("11.4a §3", _what + " (history only)", _call)
HISTORY_RUNS = {"scratch-cls", "scratch-cls-3000", "full-cls-100", "full-cls-250",  # shipped without weights
                "forgetting-5e-5", "forgetting-1e-4", "full-cls-lr1e-2"}


def _nli_development_runs() -> None:
    """notebook 11.4a §4: each NLI recipe tried, both models, scored on the development pairs (history only)."""
    from course_lib.finetuning.nli_recipes import KINDS, RECIPES, dev_run_name

    for recipe in RECIPES:
        for kind in KINDS:
            name = dev_run_name(recipe, kind)
            WHAT[name] = ("11.4a §4", f"NLI {kind}, recipe {recipe}, on the 600 training pairs, scored on 300 "
                          "development pairs from the rest of SNLI's training file (history only)",
                          "choose_nli_recipe(nli_train, nli_dev, config, tokenizer)")
            HISTORY_RUNS.add(name)


_nli_development_runs()


def _scratch_development_runs() -> None:
    """notebook 11.4a §3: each setting tried for the network from random weights, scored on the development
    sentences (history only)."""
    from course_lib.finetuning.transfer import SCRATCH_RECIPES, scratch_dev_name

    for lr, epochs in SCRATCH_RECIPES:
        name = scratch_dev_name(lr, epochs)
        WHAT[name] = ("11.4a §3", f"the same network from seeded random weights, every parameter, [CLS], lr {lr:g}, "
                      f"{epochs} epochs, on the 500 rt-polarity sentences, scored on 400 development sentences from "
                      "the rest of the training file (history only)",
                      "choose_scratch_recipe(train, scratch_dev, collate, config)")
        HISTORY_RUNS.add(name)


_scratch_development_runs()
_NER = "wikigold NER: W_K alone on the frozen encoder"
_SPANS = "GUM entities (1,200 sentences, MiniLM's first 4 layers frozen, 6 epochs)"
for _run, _what, _call in [
        ("wikigold-ner-first", f"BIO tagger, first-subword labels, {_NER}", "tagger.fit(..., name=\"wikigold-ner-first\")"),
        ("wikigold-ner-every", f"BIO tagger, every-subword labels, {_NER}",
         "tagger_every.fit(..., name=\"wikigold-ner-every\")"),
        ("wikigold-ner-probe-L2", "BIO tagger, first-subword labels, wikigold NER: W_K alone on layer L2 of the "
         "frozen encoder (cut after block 2)", "layer_probe.fit(..., name=\"wikigold-ner-probe-L2\")"),
        ("wikigold-ner-probe-L4", "BIO tagger, first-subword labels, wikigold NER: W_K alone on layer L4 of the "
         "frozen encoder (cut after block 4)", "layer_probe.fit(..., name=\"wikigold-ner-probe-L4\")"),
        *[(f"wikigold-ner-dev-L{k}", f"BIO tagger, first-subword labels, wikigold NER: W_K alone on layer L{k} of "
           "the frozen encoder, trained on 4 of every 5 training documents (the layer is chosen on the fifth)",
           f"choose_read_layer(train_sents, config) (its probe on L{k})") for k in (2, 4, 6)],
        ("wikigold-ner-full", "BIO tagger, first-subword labels, wikigold NER: W_K and all six encoder blocks "
         "(embeddings frozen), lr 5e-5, 4 epochs", "full_tagger.fit(..., name=\"wikigold-ner-full\")"),
        ("squad-sample-head-only", "extractive QA, the start/end head on the frozen encoder, SQuAD 2.0 sample",
         "head_only.fit(..., name=\"squad-sample-head-only\")")]:
    WHAT[_run] = ("11.4b", _what, _call)
WHAT["span-ner-learned"] = ("11.5", f"span classifier (eq. 11.27) on {_SPANS}", "train_span_ner(span_model, ...)")
WHAT["gum-bio-outermost"] = ("11.5", f"BIO tagger on the outermost entities of {_SPANS}",
                             "bio_tagger.fit(..., name=\"gum-bio-outermost\")")
WHAT["spanbert"] = ("11.5", "SpanBERT's SBO head on frozen course-bert, 96 steps on GUM sentences",
                    "train_spanbert(train_sentences, steps=96, pool=32)")
MAKERS = [_tiny_bert, _adaptation, _finetuning, _labelling, _new_histories]  # new_histories: only with --only


def _prefix(name: str) -> str:
    return name.rsplit("-", 1)[0]


def _size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def _training(kind: str, meta: dict, made: dict) -> str:
    if kind == "finetuning":  # the epochs' time plus the one-off pass of the frozen layers
        seconds = sum(e["seconds"] for e in meta["epochs"]) + meta.get("info", {}).get("frozen_pass_seconds", 0)
        return f"{seconds:.0f} s, torch {made.get('torch', '?')}, Python {made['python']}, {made.get('threads', 1)} thread(s)"
    return (f"{meta.get('seconds', 0):.0f} s, torch {meta.get('torch', made.get('torch', '?'))}, Python "
            f"{made['python']}, {meta.get('threads', made.get('threads', 1))} thread(s)")


def readme_text() -> str:
    """course_lib/data/runs/README.md as the shipped runs make it."""
    rows = []
    for kind_dir in sorted(p for p in RUNS.iterdir() if p.is_dir()):
        for run in sorted(p for p in kind_dir.iterdir() if p.is_dir()):
            meta = json.loads((run / "run.json").read_text())
            notebook, what, call = WHAT[_prefix(run.name)]
            made = json.loads((run / "shipped.json").read_text())
            rows.append(f"| `{kind_dir.name}/{run.name}` | {notebook} | {what} | `{call}` | "
                        f"{_size(run) / 2**20:.1f} MB | {_training(kind_dir.name, meta, made)} |")
    text = f"""# Runs shipped with the course

Training runs that a notebook would otherwise train the first time it runs on a new machine. Each folder is
named as the library's cache names the same run (`course_lib.paths.cache_dir()`), by the same key (the recipe,
the data, the starting weights and the code version), so the library loads it instead of training; a changed
recipe or changed code asks for another key, and that run is trained (and cached) as before.

| run | notebook | what | the call that loads it | size | training (the run that made it) |
|---|---|---|---|---|---|
{chr(10).join(rows)}

- **Source**: trained by `tools/ship_runs.py` from a fixed seed, in an empty temporary cache, with the library
  function the notebook calls (for the fine-tuning and SpanBERT runs, by executing notebooks 11.4a, 11.4b and 11.5
  themselves); nothing is copied from an older cache.
- **Pretraining runs** hold what the cache holds. Their data is the prose of the Python reference manual as
  Python 3.11.7's standard library ships it (`pydoc_data.topics`, PSF licence), copied into
  `course_lib/data/python_reference` (every patch version ships another manual: the copy keeps the text, and the
  run's key, the same whichever Python runs the notebook), as described in notebook 11.2 and
  `course_lib/pretraining/corpus.py`. `shipped.json` records the text's hash and the Python that made the run.
- **Fine-tuning runs** hold `run.json` (the history, as the cache holds it) and `delta.safetensors`: what
  training added to each trained parameter, in float16, about half the size of the weights themselves. The data
  are the course's own sets (`course_lib/data/sentiment`, `nli`, `wikigold`, `squad`, `gum_spans`, see their data
  cards); the starting weights are all-MiniLM-L6-v2's and a head initialised from seed 0. A run that trains on
  the states of frozen layers (11.4b, 11.5) is keyed by the weights and token ids those states come from, not by
  their floats (which another CPU may round otherwise), so every machine finds it. `shipped.json` holds the
  fingerprints of the trained parameters before training and after the delta is added: a run is loaded only
  onto the weights it was made from, and must give exactly the recorded weights (else it says so). A matrix
  whose rows mostly did not move (the word embeddings of the full fine-tuning: only the training text's tokens
  get a gradient, weight decay alone moves the others by under 1e-5) is stored by its moved rows. The full
  fine-tuning at lr 1e-2 moves every row (45 MB as a delta): it ships as its history.
- **History-only runs** (11.4a §3, "(history only)" above) hold `run.json` alone: full fine-tunings of which the
  notebook draws only numbers of the history -- the network from random weights and the pretrained one on 100 or
  250 sentences (held-out accuracy against the number of labelled sentences), course-bert fine-tuned at two
  learning rates (held-out accuracy and its MLM head's masked-word top-1 after every epoch: forgetting), and the
  pretrained one at lr 1e-2 (its held-out accuracy and training losses: a learning rate too high). Their
  weights would take 23-45 MB each, so `course_lib.finetuning.transfer` returns the run, never a model;
  `shipped.json` holds the fingerprint of the weights each started from, and `cache=False` trains one here
  (`python tools/ship_runs.py --only new_histories` ships those that are new, retraining nothing else).
- **The SpanBERT run** (`spans/`) holds `run.json` (the losses of each step) and `trainable.safetensors`: the SBO
  head it trained, float32, as the cache holds it; its key is the recipe, the GUM sentences and course-bert's
  weights.
- **Checked** by `tests/test_shipped_runs.py`: each shipped run is the one the current code asks for, a fresh
  cache loads it without training, the first steps retrained here give the shipped losses, and a shipped
  fine-tuning run scores its recorded held-out accuracy (a history-only run: its first steps retrained give its
  losses).
- **To train it live instead**, pass `cache=False` (e.g. `pretrain_tiny_bert(recipe, cache=False)`,
  `train_classifier(..., cache=False)`).
- **Rebuild**: `python tools/ship_runs.py` (after a change to a recipe, the data, the code version, or, for
  the adaptation, course-bert's weights).
"""
    return text


def write_readme() -> Path:
    path = RUNS / "README.md"
    path.write_text(readme_text())
    return path


@contextlib.contextmanager
def _hidden(*folders: Path):
    """Move ``folders`` aside while the block runs (so that no process finds what is shipped there); the new runs
    are written into fresh folders; the old ones are removed at the end, or put back if the block fails."""
    moved = []
    for folder in folders:
        if folder.exists():
            folder.rename(folder.with_name(folder.name + ".old"))
            moved.append(folder)
    try:
        yield
    except BaseException:
        for folder in moved:
            shutil.rmtree(folder, ignore_errors=True)
            folder.with_name(folder.name + ".old").rename(folder)
        raise
    for folder in moved:
        shutil.rmtree(folder.with_name(folder.name + ".old"), ignore_errors=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--readme", action="store_true", help="only write the README from what is shipped")
    ap.add_argument("--only", choices=[m.__name__.lstrip("_") for m in MAKERS], action="append",
                    help="make only these runs (repeatable); the others stay as they are")
    args = ap.parse_args(argv)
    makers = [m for m in MAKERS if m.__name__.lstrip("_") in args.only] if args.only else MAKERS[:-1]
    if not args.readme:
        import course_lib.paths as paths

        # train from nothing: neither this machine's cache (an empty one instead) nor what is shipped now
        # (the notebooks' kernels are other processes: they see no shipped fine-tuning run while it is moved away)
        paths.shipped_run = lambda kind, name: None   # what paths.finished_run asks first
        shipped_ft = list((RUNS / "finetuning").glob("*-*"))
        hide = [f for f in shipped_ft if _prefix(f.name) not in LABELLING_RUNS] if _finetuning in makers else []
        if _labelling in makers:
            hide += [f for f in shipped_ft if _prefix(f.name) in LABELLING_RUNS]
            hide += list((RUNS / "spans").glob("spanbert-*"))
        with tempfile.TemporaryDirectory() as tmp, _hidden(*hide):
            os.environ["COURSE_LIB_CACHE"] = tmp
            for make in makers:
                start = time.perf_counter()
                made = make(Path(tmp))
                for kind, folder, provenance in made:
                    target = RUNS / kind
                    for old in target.glob(_prefix(folder.name) + "-*") if target.exists() else []:
                        shutil.rmtree(old)  # one run of each: the one the code asks for now
                    target.mkdir(parents=True, exist_ok=True)
                    shutil.copytree(folder, target / folder.name)
                    (target / folder.name / "shipped.json").write_text(json.dumps(provenance, indent=1) + "\n")
                    for f in (target / folder.name).iterdir():
                        f.chmod(0o644)
                    print(f"{kind}/{folder.name}: {_size(target / folder.name) / 2**20:.1f} MB")
                print(f"{make.__name__}: {time.perf_counter() - start:.0f} s on {platform.machine()}, "
                      f"{os.cpu_count()} CPUs")
    print(write_readme())
    return 0


if __name__ == "__main__":
    sys.exit(main())
