"""What a fine-tuning run is and where it is kept: its config, its per-epoch records, its cache key, its files.

A run is keyed by everything that decides its result -- the :class:`TrainConfig`, the model as it was before
training (structure, every weight, which parameters train), the training and held-out data, and anything else
the caller names (e.g. the maximum length) -- hashed with sha256. A finished run is stored in
``cache_dir("finetuning")/<name>-<key>/`` as ``run.json`` (the history) and ``trained.safetensors`` (the
parameters that trained); an interrupted one as ``partial.pt`` (also the optimizer and scheduler state), from
which :func:`course_lib.finetuning.training.fit` resumes.

A run can also be shipped with the course, as a float16 delta: see :mod:`course_lib.finetuning.shipped`.
"""
from __future__ import annotations

import functools
import hashlib
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from collections.abc import Sequence

import torch
from torch import nn

from ..paths import cache_dir, written_whole

CACHE_VERSION = 1

# ----------------------------------------------------------------------------- config and records

@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings of one run. Part of the cache key, so changing any field trains anew."""

    lr: float = 3e-5                   # the pretrained weights' learning rate (L003: 1e-5 .. 5e-5)
    epochs: int = 2                    # L003: 2-4
    batch_size: int = 16
    weight_decay: float = 0.01         # AdamW; not applied to biases and LayerNorm weights
    warmup_ratio: float = 0.1          # share of the steps with a linear warm-up; then linear decay to 0
    max_grad_norm: float | None = 1.0  # gradient clipping (None: off)
    seed: int = 0                      # shuffling and dropout
    lr_overrides: tuple[tuple[str, float], ...] = ()  # (parameter-name prefix, lr), e.g. (("classifier.", 1e-3),)
    eval_batch_size: int = 64

    def __post_init__(self):
        if not self.lr > 0 or not math.isfinite(self.lr):
            raise ValueError(f"the learning rate must be a positive number, not {self.lr}")
        if not isinstance(self.epochs, int) or self.epochs < 1:
            raise ValueError(f"epochs must be a whole number of at least 1, not {self.epochs}")
        if not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ValueError(f"batch_size must be a whole number of at least 1, not {self.batch_size}")
        if not 0 <= self.warmup_ratio < 1:
            raise ValueError(f"warmup_ratio is a share of the steps, between 0 and 1, not {self.warmup_ratio}")
        object.__setattr__(self, "lr_overrides", tuple((str(p), float(v)) for p, v in self.lr_overrides))

    def lr_for(self, name: str) -> float:
        """The learning rate of the parameter called ``name``.

        An override's prefix matches at the start of the name or after a dot, so ``"classifier."`` also finds
        ``model.classifier.weight`` inside a wrapper; the longest matching prefix wins.
        """
        best = max((p for p, _ in self.lr_overrides if ("." + p) in ("." + name)), key=len, default=None)
        return dict(self.lr_overrides)[best] if best is not None else self.lr


@dataclass
class EpochRecord:
    """What one epoch did. ``eval`` holds the held-out metrics (``loss``, ``accuracy``, ...)."""

    epoch: int                  # 1-based
    train_loss: float           # mean over the epoch's steps
    train_accuracy: float | None
    eval: dict[str, float]
    seconds: float              # training time of the epoch (without evaluation)
    eval_seconds: float
    steps: int


@dataclass
class TrainRun:
    """The history of a run: config, per-epoch records, every step's loss, and where it came from."""

    name: str
    key: str
    config: TrainConfig
    trainable_parameters: int
    total_parameters: int
    device: str
    epochs: list[EpochRecord] = field(default_factory=list)
    step_losses: list[float] = field(default_factory=list)
    steps_per_epoch: int = 0
    finished: bool = False
    interrupted: bool = False
    cached: bool = False        # loaded from the cache (or shipped with the course) rather than trained in this call
    shipped: bool = False       # loaded from a run shipped with the course (course_lib/data/runs/finetuning)
    resumed_from: int = 0       # epochs that were loaded from an interrupted run
    info: dict = field(default_factory=dict)  # what the caller recorded (strategy, pooling, one-off costs, ...)

    @property
    def origin(self) -> str:
        """Where this run's history and weights came from, in words."""
        return origin_words(self.shipped, self.cached, self.interrupted)

    @property
    def seconds_per_epoch(self) -> float:
        """Mean training seconds per epoch (as measured when the run was trained)."""
        return sum(e.seconds for e in self.epochs) / max(len(self.epochs), 1)

    def final(self, metric: str = "accuracy") -> float | None:
        """A held-out metric after the last finished epoch (None before any)."""
        return self.epochs[-1].eval.get(metric) if self.epochs else None

    def curve(self, metric: str = "accuracy", split: str = "eval") -> list[float]:
        """One value per epoch: ``split`` "eval" (held out) or "train"."""
        if split == "train":
            return [getattr(e, f"train_{metric}") for e in self.epochs]
        return [e.eval.get(metric, float("nan")) for e in self.epochs]

    def to_dict(self) -> dict:
        d = asdict(self)
        d["config"] = asdict(self.config)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "TrainRun":
        d = dict(d)
        cfg = dict(d.pop("config"))
        cfg["lr_overrides"] = tuple(tuple(x) for x in cfg.get("lr_overrides", ()))
        epochs = [EpochRecord(**e) for e in d.pop("epochs")]
        return cls(config=TrainConfig(**cfg), epochs=epochs, **d)

    def __repr__(self) -> str:
        state = "finished" if self.finished else ("interrupted" if self.interrupted else "not finished")
        acc = self.final()
        acc_s = f", held-out accuracy {acc:.3f}" if acc is not None else ""
        src = ", shipped with the course" if self.shipped else ", from the cache" if self.cached else ""
        return (f"TrainRun({self.name!r}: {len(self.epochs)}/{self.config.epochs} epochs {state}{acc_s}, "
                f"{self.trainable_parameters:,} of {self.total_parameters:,} parameters trained, "
                f"{self.seconds_per_epoch:.1f} s/epoch on {self.device}{src})")


def origin_words(shipped: bool, cached: bool, interrupted: bool = False) -> str:
    """Where a run's history and weights came from, in the words the notebooks print."""
    if shipped:
        return "shipped with the course"
    return "loaded from the cache" if cached else ("stopped" if interrupted else "trained just now")


# ----------------------------------------------------------------------------- cache keys

SOURCE = "_course_lib_source"  # a tensor's attribute that says where it came from (frozen.frozen_states sets it)


def fingerprint(obj: Any) -> str:
    """A stable sha256 of data: examples (dataclasses, dicts, strings, numbers), lists of them, tensors."""
    h = hashlib.sha256()
    _feed(h, obj)
    return h.hexdigest()


def _feed(h, obj) -> None:
    if torch.is_tensor(obj) and isinstance(getattr(obj, SOURCE, None), str):
        h.update(f"sourced{tuple(obj.shape)}{obj.dtype} {getattr(obj, SOURCE)}".encode())
    elif torch.is_tensor(obj):
        t = obj.detach().cpu().contiguous()
        h.update(f"tensor{tuple(t.shape)}{t.dtype}".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    elif isinstance(obj, dict):
        h.update(b"{")
        for k in sorted(obj, key=str):
            _feed(h, str(k))
            _feed(h, obj[k])
        h.update(b"}")
    elif isinstance(obj, (list, tuple)):
        h.update(b"[")
        for x in obj:
            _feed(h, x)
        h.update(b"]")
    elif hasattr(obj, "__dataclass_fields__"):
        _feed(h, type(obj).__name__)
        _feed(h, {k: getattr(obj, k) for k in obj.__dataclass_fields__})
    else:
        h.update(json.dumps(obj, sort_keys=True, default=repr).encode())
        h.update(b";")


def _layer_norm_as_torch_2_13(m: nn.LayerNorm) -> str:
    """What torch 2.13 (the pinned one) writes inside ``LayerNorm(...)``; torch 2.11 leaves out ``bias=...``."""
    return (f"{m.normalized_shape}, eps={m.eps}, elementwise_affine={m.elementwise_affine}, "
            f"bias={m.bias is not None}")


def structure(model: nn.Module) -> str:
    """``repr(model)``, with every plain ``nn.LayerNorm`` written as torch 2.13 writes it: what a run's key holds
    of the model's structure (its modules and their settings: dropout rates, eps, pooling, labels). On torch 2.11
    (the GPU image's) repr(model) alone gave every shipped run another key, and they were all trained again."""
    norms = [m for m in model.modules()
             if isinstance(m, nn.LayerNorm) and type(m).extra_repr is nn.LayerNorm.extra_repr]
    for m in norms:   # an instance attribute shadows the class's method for this one repr
        m.extra_repr = functools.partial(_layer_norm_as_torch_2_13, m)
    try:
        return repr(model)
    finally:
        for m in norms:
            del m.extra_repr


def model_fingerprint(model: nn.Module) -> str:
    """Structure (:func:`structure`), every parameter and buffer, and which parameters are trainable."""
    h = hashlib.sha256(structure(model).encode())
    for name, t in model.state_dict(keep_vars=True).items():
        h.update(name.encode())
        _feed(h, t.detach())
        h.update(b"T" if getattr(t, "requires_grad", False) else b"F")
    return h.hexdigest()


def initial_fingerprint(model: nn.Module) -> str:
    """The fingerprint of the model a run started from.

    A model that :func:`fit` trained (or stopped) remembers where it started, so that calling ``fit`` on it
    again with the same arguments finds its run -- finished (loaded) or interrupted (resumed) -- rather than
    starting a new run from the trained weights.
    """
    fp = model_fingerprint(model)
    return getattr(model, "_finetuning_started_from", {}).get(fp, fp)


def _remember_start(model: nn.Module, start_fp: str) -> None:
    seen = getattr(model, "_finetuning_started_from", {})
    seen[model_fingerprint(model)] = start_fp
    object.__setattr__(model, "_finetuning_started_from", seen)


def _remember_run(model: nn.Module, key: str) -> None:
    object.__setattr__(model, "_finetuning_runs", getattr(model, "_finetuning_runs", {}) | {model_fingerprint(model): key})


def trained_by(model: nn.Module) -> str | None:
    """The key of the run that gave ``model`` its weights (trained, cached or shipped), or None (distill.py)."""
    return getattr(model, "_finetuning_runs", {}).get(model_fingerprint(model))


def run_key(model: nn.Module, train_data: Sequence, config: TrainConfig, eval_data: Sequence | None = None,
            extra: Any = None) -> str:
    """The cache key of a run: config + model (as it was before training) + data (+ ``extra``, e.g. max length)."""
    parts = {"version": CACHE_VERSION, "config": asdict(config), "model": initial_fingerprint(model),
             "train": fingerprint(list(train_data)), "eval": fingerprint(list(eval_data)) if eval_data is not None else None,
             "extra": fingerprint(extra)}
    return fingerprint(parts)


def trainable_named_parameters(model: nn.Module) -> list[tuple[str, nn.Parameter]]:
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad]


def _trainable_state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.detach().cpu().clone() for n, p in trainable_named_parameters(model)}


def _load_trainable(model: nn.Module, state: dict[str, torch.Tensor], *, add: bool = False,
                    source: str = "the cached run") -> None:
    """Set the named parameters to ``state`` (or, with ``add``, add it to them in float32)."""
    params = dict(model.named_parameters())
    missing = [n for n in state if n not in params]
    if missing:
        raise KeyError(f"{source} has parameters this model lacks: {missing[:3]}")
    with torch.no_grad():
        for n, t in state.items():
            p = params[n]
            p.copy_((p.float() + t.to(p.device, torch.float32)) if add else t.to(p.device, p.dtype))


def run_folder_name(name: str, key: str) -> str:
    """``<name>-<first 16 hex of the key>``, the name of the run's folder in the cache (and where it is shipped)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:60] or "run"
    return f"{safe}-{key[:16]}"


def run_dir(name: str, key: str) -> Path:
    """The run's folder in the cache (created)."""
    return cache_dir("finetuning", run_folder_name(name, key))


# ----------------------------------------------------------------------------- cache files

def _save_finished(model: nn.Module, folder: Path, run: TrainRun) -> None:
    from safetensors.torch import save_file
    with written_whole(folder / "trained.safetensors") as tmp:
        save_file({n: t.contiguous() for n, t in _trainable_state(model).items()}, str(tmp))
    with written_whole(folder / "run.json") as tmp:  # written last: marks the run complete
        tmp.write_text(json.dumps(run.to_dict(), indent=1))
    (folder / "partial.pt").unlink(missing_ok=True)


def _load_finished(model: nn.Module, folder: Path, fresh: TrainRun) -> TrainRun:
    from safetensors.torch import load_file

    run = TrainRun.from_dict(json.loads((folder / "run.json").read_text()))
    _load_trainable(model, load_file(str(folder / "trained.safetensors")))
    model.eval()
    run.cached, run.device = True, fresh.device
    return run


def _save_partial(model, optimizer, scheduler, path: Path, run: TrainRun) -> None:
    with written_whole(path) as tmp:
        torch.save({"trainable": _trainable_state(model), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(), "run": run.to_dict()}, tmp)


def _load_partial(model, optimizer, scheduler, path: Path, run: TrainRun) -> int:
    state = torch.load(path, map_location="cpu", weights_only=False)
    _load_trainable(model, state["trainable"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    saved = TrainRun.from_dict(state["run"])
    run.epochs, run.step_losses, run.resumed_from = saved.epochs, saved.step_losses, len(saved.epochs)
    return len(saved.epochs)
