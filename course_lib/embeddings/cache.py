"""Contextual states cached on disk, so that a notebook that compares several models pays each forward once.

    key = model_fingerprint(model)                       # sha256 of the encoder's weights (16 hex digits)
    cached_states(model, "senses", texts, lambda: target_states(model, tok, examples))

A file lives in ``cache_dir("states")`` (:func:`course_lib.paths.cache_dir`, never the checkout), named by
what it holds, the model's weights and the data: another model, changed weights or other texts give another
file. States are stored as float16 (or, asked for, float32) and *always* returned rounded through what is stored,
computed or read, so a run from a cold cache and one from a warm cache give the same numbers.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable

import torch

from ..paths import cache_dir, written_whole


def model_fingerprint(model) -> str:
    """16 hex digits of the sha256 of the encoder's parameters and buffers (names, shapes, values)."""
    enc = getattr(model, "bert", model)
    h = hashlib.sha256()
    for name, t in sorted(enc.state_dict().items()):
        t = t.detach().cpu().contiguous()
        h.update(f"{name}:{tuple(t.shape)}:{t.dtype}".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()[:16]


def data_key(data) -> str:
    """16 hex digits naming ``data`` (anything JSON can write, e.g. texts and spans)."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def cached_states(model, kind: str, data, compute: Callable[[], torch.Tensor], *, fingerprint: str | None = None,
                  keep: torch.dtype = torch.float16) -> torch.Tensor:
    """``compute()`` once per (model weights, ``kind``, ``data``), stored as ``keep``: float16 (the states of a
    notebook's comparisons: half the disk) or float32 (what a notebook feeds to a classifier or a ranking, kept
    exactly as computed); always returned as float32 rounded through ``keep``. A broken or unreadable cache file is
    computed again; a read-only cache still works."""
    if not re.fullmatch(r"[\w.-]+", kind):
        raise ValueError(f"kind names a file: letters, digits, '-', '_' and '.' only, not {kind!r}")
    if keep not in (torch.float16, torch.float32):
        raise ValueError(f"keep is torch.float16 or torch.float32, not {keep}")
    suffix = "" if keep == torch.float16 else "-f32"
    key = f"{kind}{suffix}-{fingerprint or model_fingerprint(model)}-{data_key(data)}"
    path = cache_dir("states") / f"{key}.pt"
    if path.exists():
        try:
            return torch.load(path, weights_only=True).float()
        except Exception:  # noqa: BLE001 - a broken file is recomputed
            pass
    kept = compute().detach().cpu().to(keep)
    try:
        with written_whole(path) as tmp:
            torch.save(kept, tmp)
    except OSError:
        pass
    return kept.float()
