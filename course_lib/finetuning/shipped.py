"""Fine-tuning runs shipped with the course, so that a fresh clone loads them instead of training.

A shipped run lives in ``course_lib/data/runs/finetuning/<name>-<key>/`` (made by tools/ship_runs.py), named
as the cache names the same run (:func:`course_lib.finetuning.runs.run_folder_name`): ``run.json`` (the history,
as the cache keeps it) and ``delta.safetensors``, what training added to each trained parameter, in float16 --
half the size of the weights, and exact to about a thousandth of the change rather than of the weight.
``shipped.json`` holds the fingerprints of the trainable parameters before training and after the delta is
added, so the delta is added only onto the weights it was made from, and must give exactly the recorded ones.

A run that moves every weight of a model trained from random weights (:mod:`course_lib.finetuning.transfer`) would
need 45 MB as a delta, for a notebook that only draws its curve: it ships its **history only** (``run.json``, and
``shipped.json`` with ``"history_only": true`` and the fingerprint of the weights it started from). Such a run is
loaded as a history by :func:`load_history`, never as weights: :func:`find_finished` passes it over, so training
the same run with a model trains it (or finds it in the cache).

A matrix most of whose rows training left alone (the word embeddings of a full fine-tuning: only the rows of the
tokens in the training text get a gradient; weight decay alone moves the others by under :data:`UNMOVED`) is
stored by its moved rows only: ``<name>`` holds those rows and ``<name>@rows`` their indices; the other rows
count as unchanged, and ``max_abs_error`` in shipped.json includes what that leaves out.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

from .. import paths
from ..paths import cache_root, finished_run
from .runs import TrainRun, _load_trainable, fingerprint, run_folder_name, trainable_named_parameters

SHIP_ENV = "COURSE_LIB_SHIP_DELTAS"  # set by tools/ship_runs.py: a finished run also writes what would be shipped

SHIPPED_KIND = "finetuning"


def trainable_fingerprint(model: nn.Module) -> str:
    """sha256 of the names and values of the trainable parameters (as float32, on the CPU)."""
    return fingerprint({n: p.detach().float().cpu() for n, p in trainable_named_parameters(model)})


def find_finished(name: str, key: str) -> Path | None:
    """The folder of the finished run ``name``/``key`` whose weights can be loaded
    (:func:`course_lib.paths.finished_run`; a shipped history without weights is passed over), else None."""
    folder = cache_root() / SHIPPED_KIND / run_folder_name(name, key)
    found = finished_run(SHIPPED_KIND, folder)
    if found is not None and history_only(found):
        return folder if (folder / "run.json").is_file() else None
    return found


def name_filed_under(key: str) -> str | None:
    """The name of a run filed under ``key``, whatever its caller called it, else None: a run's folder is
    ``<name>-<key[:16]>``, and the same run may be asked for under another name (11.4a's panel names its runs by
    their settings, the notebook's cells by what they show). Shipped runs with weights first, then finished runs in
    the cache, then interrupted ones (to resume them); the key alone decides, the name only says where it lies."""
    suffix = "-" + key[:16]
    shipped_root, cache = paths.data_dir("runs", SHIPPED_KIND), cache_root() / SHIPPED_KIND
    found = [f for f in (sorted(shipped_root.glob("*" + suffix)) if shipped_root.is_dir() else [])
             if (f / "run.json").is_file() and not history_only(f)]
    for marker in ("run.json", "partial.pt"):
        found += [f for f in (sorted(cache.glob("*" + suffix)) if cache.is_dir() else []) if (f / marker).is_file()]
    return found[0].name[:-len(suffix)] if found else None


HISTORY_ONLY = "history_only"  # the shipped.json flag of a run shipped without its weights


def history_only(folder: Path) -> bool:
    """Is ``folder`` a run shipped as its history alone (no weights)?"""
    made = folder / "shipped.json"
    return made.is_file() and bool(json.loads(made.read_text()).get(HISTORY_ONLY))


def find_history(name: str, key: str) -> Path | None:
    """The folder of the run ``name``/``key`` shipped as its history only, else None."""
    folder = paths.shipped_run(SHIPPED_KIND, run_folder_name(name, key))  # looked up at call time (ship_runs)
    return folder if folder is not None and history_only(folder) else None


def load_history(folder: Path, start_fingerprint: str) -> TrainRun:
    """The history of a run shipped without weights, if it started from the weights ``start_fingerprint`` names."""
    made = json.loads((folder / "shipped.json").read_text())
    if made.get("initial") != start_fingerprint:
        raise RuntimeError(f"the shipped run {folder.name} was made from other starting weights than this model's "
                           f"(same key, other trainable parameters): pass cache=False to train it here")
    run = TrainRun.from_dict(json.loads((folder / "run.json").read_text()))
    run.cached, run.shipped = True, True
    return run


def load_shipped(model: nn.Module, folder: Path, fresh: TrainRun) -> TrainRun:
    """Load a shipped run into ``model``: add its delta to the trainable parameters if they are those it was
    made from; leave them if they are already the trained ones (the model this run trained); refuse otherwise."""
    from safetensors.torch import load_file

    made = json.loads((folder / "shipped.json").read_text())
    now = trainable_fingerprint(model)
    if now == made["initial"]:
        delta = _dense(load_file(str(folder / "delta.safetensors")), dict(model.named_parameters()))
        _load_trainable(model, delta, add=True, source="the shipped run")
        if trainable_fingerprint(model) != made["trained"]:
            raise RuntimeError(f"the shipped run {folder.name} did not give the weights it was shipped with: "
                               f"its files may be damaged (reinstall course_lib, or pass cache=False to train it)")
    elif now != made["trained"]:
        raise RuntimeError(f"the shipped run {folder.name} was made for other starting weights than this model's "
                           f"(same key, other trainable parameters): pass cache=False to train it here")
    run = TrainRun.from_dict(json.loads((folder / "run.json").read_text()))
    model.eval()
    run.cached, run.shipped, run.device = True, True, fresh.device
    return run


UNMOVED = 1e-5      # a row of a matrix whose largest change is under this counts as unchanged (see the module doc)
SPARSE_SHARE = 0.5  # ... when fewer than this share of the rows moved: then only the moved rows are stored
ROWS = "@rows"      # the suffix of a stored matrix's row indices


def _dense(stored: dict[str, torch.Tensor], params: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The delta of every parameter, the matrices stored by their moved rows filled out with zero rows."""
    out = {}
    for n, d in stored.items():
        if n.endswith(ROWS):
            continue
        rows = stored.get(n + ROWS)
        if rows is not None:
            if n not in params or rows.numel() != d.size(0) or (rows.numel() and int(rows.max()) >= params[n].size(0)):
                raise RuntimeError(f"the shipped delta of {n} does not fit this model: its files may be damaged")
            d = torch.zeros(params[n].shape, dtype=d.dtype).index_copy_(0, rows.long(), d)
        out[n] = d
    return out


def save_delta(folder: Path, initial: dict[str, torch.Tensor], trained: dict[str, torch.Tensor]) -> None:
    """What a shipped run holds besides run.json: the float16 delta, and the fingerprints that say which weights
    it goes onto and which it gives (those of initial + delta, so that loading can check them exactly)."""
    from safetensors.torch import save_file

    delta = {n: (trained[n].float() - initial[n].float()).half().contiguous() for n in trained}
    stored = {}
    for n, d in delta.items():
        moved = d.float().abs().amax(1) > UNMOVED if d.dim() == 2 else None
        if moved is not None and int(moved.sum()) < SPARSE_SHARE * d.size(0):
            rows = moved.nonzero().flatten()
            stored[n], stored[n + ROWS] = d[rows].contiguous(), rows.to(torch.int32)
        else:
            stored[n] = d
    delta = _dense(stored, initial)  # as loading will fill it out
    rebuilt = {n: initial[n].float() + delta[n].float() for n in trained}
    error = max(float((rebuilt[n] - trained[n].float()).abs().max()) for n in trained)
    scale = max(float(trained[n].float().abs().max()) for n in trained)
    save_file(stored, str(folder / "delta.safetensors"))
    (folder / "shipped.json").write_text(json.dumps({
        "initial": fingerprint({n: initial[n].float() for n in trained}), "trained": fingerprint(rebuilt),
        "max_abs_error": error, "max_abs_weight": scale, "torch": torch.__version__}, indent=1) + "\n")
