"""Train the runs that a fresh clone would otherwise train the first time a notebook runs, and ship them in
course_lib/data/runs/<kind>/<name>: the folder the cache would hold for the same run, named by the same key
(recipe, data, code version), so that the library loads it instead of training (course_lib.paths.shipped_run).

    python tools/ship_runs.py            # train each run in an empty temporary cache, copy it, write the README
    python tools/ship_runs.py --readme   # only write course_lib/data/runs/README.md from what is shipped

Each run is trained from nothing here (never copied from an older cache) by the library function the notebook
calls, with the notebook's recipe. tests/test_shipped_runs.py checks that each shipped run is the one the
current code asks for, and retrains its first steps to compare their losses with the shipped ones.

What is shipped (every other heavy step is cached on first use, see the README):
  pretraining/tiny-bert-<key>           notebook 11.2 §6: BERT's two objectives from random weights (0.9 MB)
  pretraining/adapt-course-bert-<key>   notebook 11.2 §7: MLM domain adaptation of course-bert (15 MB)
"""
from __future__ import annotations

import argparse
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


def _tiny_bert(cache: Path) -> tuple[str, Path, dict]:
    from course_lib.pretraining.training import (PretrainingRecipe, corpus_hash, pretrain_tiny_bert,
                                                 python_reference_documents)

    run = pretrain_tiny_bert(PretrainingRecipe(), progress=True)
    assert run.path is not None and Path(run.path).is_relative_to(cache), run.path
    # the training text is the standard library's pydoc_data.topics, which changes with Python's patch version:
    # another Python gets another key (and trains its own run); the test compares keys only where the text is this
    return "pretraining", Path(run.path), {"corpus_hash": corpus_hash(python_reference_documents()),
                                           "python": platform.python_version()}


OTHER_TEXTS = "general English (course-bert's held-out text)"  # what notebook 11.2 also scores, and how many
N_OTHER = 200


def _adaptation(cache: Path) -> tuple[str, Path, dict]:
    from course_lib import load_pretrained
    from course_lib.checkpoints import shipped_heldout
    from course_lib.pretraining.adaptation import AdaptationRecipe, adapt_to_domain
    from course_lib.pretraining.training import corpus_hash, python_reference_documents

    model, tok = load_pretrained("course-bert", device="cpu")
    run = adapt_to_domain(model, tok, "course-bert", AdaptationRecipe(),
                          other_texts={OTHER_TEXTS: shipped_heldout("course-bert")[:N_OTHER]})
    assert run.path is not None and Path(run.path).is_relative_to(cache), run.path
    return "pretraining", Path(run.path), {"corpus_hash": corpus_hash(python_reference_documents()),
                                           "python": platform.python_version()}


WHAT = {  # the run's name up to its key -> (notebook, what it is, how the notebook asks for it)
    "tiny-bert": ("11.2 §6", "tiny BERT (2 layers, d = 64, WordPiece 1,000) pretrained with L_MLM + L_NSP from "
                  "random weights on the Python reference manual", "pretrain_tiny_bert(PretrainingRecipe())"),
    "adapt-course-bert": ("11.2 §7", "course-bert's top 2 layers and MLM transform trained further by MLM on the "
                          "Python reference manual (domain adaptation)",
                          "adapt_to_domain(course-bert, tokenizer, \"course-bert\", AdaptationRecipe(), ...)"),
}
MAKERS = [_tiny_bert, _adaptation]


def _prefix(name: str) -> str:
    return name.rsplit("-", 1)[0]


def _size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def readme_text() -> str:
    """course_lib/data/runs/README.md as the shipped runs make it."""
    rows = []
    for kind_dir in sorted(p for p in RUNS.iterdir() if p.is_dir()):
        for run in sorted(p for p in kind_dir.iterdir() if p.is_dir()):
            meta = json.loads((run / "run.json").read_text())
            notebook, what, call = WHAT[_prefix(run.name)]
            made = json.loads((run / "shipped.json").read_text())
            rows.append(f"| `{kind_dir.name}/{run.name}` | {notebook} | {what} | `{call}` | "
                        f"{_size(run) / 2**20:.1f} MB | {meta.get('seconds', 0):.0f} s, torch {meta.get('torch', '?')}, "
                        f"Python {made['python']}, {meta.get('threads', 1)} thread(s) |")
    text = f"""# Runs shipped with the course

Training runs that a notebook would otherwise train the first time it runs on a new machine. Each folder is
exactly what the library's cache holds for the same run (`course_lib.paths.cache_dir()`), named by the same key
(the recipe, a hash of the training text and the code version), so the library loads it instead of training;
a changed recipe or changed code asks for another key, and that run is trained (and cached) as before.

| run | notebook | what | the call that loads it | size | training (the run that made it) |
|---|---|---|---|---|---|
{chr(10).join(rows)}

- **Source**: trained by `tools/ship_runs.py` from a fixed seed, in an empty temporary cache, with the library
  function the notebook calls; nothing is copied from an older cache.
- **Data**: the prose of the Python reference manual as the standard library ships it (`pydoc_data.topics`,
  PSF licence), as described in notebook 11.2 and `course_lib/pretraining/corpus.py`. It changes with Python's
  patch version: on another 3.11.x the key differs and the notebook trains its own run (a couple of CPU-minutes).
  `shipped.json` records the text's hash and the Python that made the run.
- **Checked** by `tests/test_shipped_runs.py`: each shipped run is the one the current code asks for, a fresh
  cache loads it without training, and the first steps retrained here give the shipped losses.
- **To train it live instead**, pass `cache=False` (e.g. `pretrain_tiny_bert(recipe, cache=False)`).
- **Rebuild**: `python tools/ship_runs.py` (after a change to a recipe, the training text, the code version,
  or, for the adaptation, course-bert's weights).
"""
    return text


def write_readme() -> Path:
    path = RUNS / "README.md"
    path.write_text(readme_text())
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--readme", action="store_true", help="only write the README from what is shipped")
    args = ap.parse_args(argv)
    if not args.readme:
        import course_lib.pretraining.adaptation as adaptation
        import course_lib.pretraining.training as training

        # train from nothing: neither this machine's cache (an empty one instead) nor what is shipped now
        training.shipped_run = adaptation.shipped_run = lambda kind, name: None
        with tempfile.TemporaryDirectory() as tmp:
            os.environ["COURSE_LIB_CACHE"] = tmp
            for make in MAKERS:
                start = time.perf_counter()
                kind, folder, provenance = make(Path(tmp))
                target = RUNS / kind
                for old in target.glob(_prefix(folder.name) + "-*") if target.exists() else []:
                    shutil.rmtree(old)  # one run of each: the one the code asks for now
                target.mkdir(parents=True, exist_ok=True)
                shutil.copytree(folder, target / folder.name)
                (target / folder.name / "shipped.json").write_text(json.dumps(provenance, indent=1) + "\n")
                for f in (target / folder.name).iterdir():
                    f.chmod(0o644)
                print(f"{kind}/{folder.name}: {time.perf_counter() - start:.0f} s on {platform.machine()}, "
                      f"{os.cpu_count()} CPUs")
    print(write_readme())
    return 0


if __name__ == "__main__":
    sys.exit(main())
