"""A fine-tuning loop for any model that returns ``.loss`` (SLP3 §11.4; hyper-parameters from the L003 slides).

    config = TrainConfig(lr=3e-5, epochs=2, batch_size=16)
    run = fit(model, train_examples, collate, config, eval_data=test_examples, name="sst-full")
    run.epochs[-1].eval["accuracy"], run.seconds_per_epoch

What it does, and nothing more:

* trains the parameters that have ``requires_grad`` (freeze before calling :func:`fit`; see ``freezing``), with
  AdamW, linear warm-up then linear decay, gradient clipping, no weight decay on biases and LayerNorm;
  a parameter-name prefix may get its own learning rate (``lr_overrides``: a new head often wants more);
* batches: ``train_data`` is any sequence of examples, ``collate(list_of_examples)`` turns a batch into the
  keyword arguments of the model (tensors, ``labels`` included); shuffled anew every epoch from the seed;
* a tqdm progress bar per epoch; per-epoch records (train loss and accuracy, held-out loss and accuracy,
  seconds); a ``callback(event, run)`` after every step and epoch for live curves;
* runs on ``get_device()`` (CUDA when there is one, else the CPU) unless told otherwise;
* caching: a run is keyed by its config, the model (structure, initial weights, which parameters train) and
  the data; a finished run is stored in ``cache_dir("finetuning")`` (history + trained parameters), so running
  the same cell again loads it in a moment;
* interruption: Ctrl-C / the notebook's stop button (KeyboardInterrupt), or a ``stop`` event (a
  ``threading.Event`` or a function returning True), ends the run after the current step. Finished epochs are
  kept: the model gets the weights of the last finished epoch, and calling :func:`fit` again with the same
  arguments resumes from there (optimizer and scheduler state included).

The model's output must have ``.loss`` when ``labels`` are passed, and ``.logits`` for the default evaluation,
whose accuracy compares ``logits.argmax(-1)`` with ``labels`` wherever the label is not -100 -- so the same loop
serves sentence classification (logits (B, C), labels (B,)) and token classification (logits (B, T, C),
labels (B, T)). Pass ``evaluate=`` for other metrics (entity F1, exact match, ...).
"""
from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..model.device import get_device, seed_everything
from ..paths import cache_dir

IGNORE_INDEX = -100
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
        """The learning rate of the parameter called ``name`` (the longest matching override wins)."""
        best = max((p for p, _ in self.lr_overrides if name.startswith(p)), key=len, default=None)
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
    cached: bool = False        # loaded from the cache rather than trained in this call
    resumed_from: int = 0       # epochs that were loaded from an interrupted run

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
        src = ", from the cache" if self.cached else ""
        return (f"TrainRun({self.name!r}: {len(self.epochs)}/{self.config.epochs} epochs {state}{acc_s}, "
                f"{self.trainable_parameters:,} of {self.total_parameters:,} parameters trained, "
                f"{self.seconds_per_epoch:.1f} s/epoch on {self.device}{src})")


class StopTraining(Exception):
    """Raised inside the loop when the ``stop`` event is set."""


# ----------------------------------------------------------------------------- batching and evaluation

def batches(data: Sequence, batch_size: int, *, shuffle: bool = False, seed: int = 0) -> list[list]:
    """Split ``data`` into lists of ``batch_size`` examples (the last may be shorter), shuffled with ``seed``."""
    order = torch.randperm(len(data), generator=torch.Generator().manual_seed(seed)).tolist() if shuffle \
        else list(range(len(data)))
    return [[data[i] for i in order[s:s + batch_size]] for s in range(0, len(order), batch_size)]


def to_device(batch: dict, device: torch.device) -> dict:
    return {k: v.to(device) if torch.is_tensor(v) else v for k, v in batch.items()}


def correct_and_counted(logits: torch.Tensor, labels: torch.Tensor) -> tuple[int, int]:
    """How many argmax predictions equal the labels, and how many labels count (not -100)."""
    keep = labels != IGNORE_INDEX
    pred = logits.argmax(-1)
    return int((pred[keep] == labels[keep]).sum()), int(keep.sum())


@torch.no_grad()
def predict(model: nn.Module, data: Sequence, collate: Callable, batch_size: int = 64,
            device: torch.device | None = None) -> tuple[torch.Tensor, torch.Tensor, float]:
    """Argmax predictions and labels (flattened, positions with label -100 left out) and the mean loss.

    Works for logits (B, C) with labels (B,) and for logits (B, T, C) with labels (B, T).
    """
    if len(data) == 0:
        raise ValueError("no examples to evaluate on")
    device = device or _model_device(model)
    was_training = model.training
    model.eval()
    preds, golds, loss_sum, n = [], [], 0.0, 0
    try:
        for chunk in batches(data, batch_size):
            batch = to_device(collate(chunk), device)
            out = model(**batch)
            labels = batch["labels"]
            keep = labels != IGNORE_INDEX
            preds.append(out.logits.argmax(-1)[keep].cpu())
            golds.append(labels[keep].cpu())
            if out.loss is not None:
                loss_sum += float(out.loss.detach()) * len(chunk)
                n += len(chunk)
    finally:
        model.train(was_training)
    return torch.cat(preds), torch.cat(golds), loss_sum / max(n, 1)


def evaluate(model: nn.Module, data: Sequence, collate: Callable, batch_size: int = 64,
             device: torch.device | None = None) -> dict[str, float]:
    """Held-out ``loss`` (mean over examples) and ``accuracy`` (over labels that are not -100)."""
    pred, gold, loss = predict(model, data, collate, batch_size, device)
    return {"loss": loss, "accuracy": float((pred == gold).float().mean()) if len(gold) else float("nan")}


# ----------------------------------------------------------------------------- cache keys

def fingerprint(obj: Any) -> str:
    """A stable sha256 of data: examples (dataclasses, dicts, strings, numbers), lists of them, tensors."""
    h = hashlib.sha256()
    _feed(h, obj)
    return h.hexdigest()


def _feed(h, obj) -> None:
    if torch.is_tensor(obj):
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


def model_fingerprint(model: nn.Module) -> str:
    """Structure (``repr``), every parameter and buffer, and which parameters are trainable."""
    h = hashlib.sha256(repr(model).encode())
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


def run_key(model: nn.Module, train_data: Sequence, config: TrainConfig, eval_data: Sequence | None = None,
            extra: Any = None) -> str:
    """The cache key of a run: config + model (as it was before training) + data (+ ``extra``, e.g. max length)."""
    parts = {"version": CACHE_VERSION, "config": asdict(config), "model": initial_fingerprint(model),
             "train": fingerprint(list(train_data)), "eval": fingerprint(list(eval_data)) if eval_data is not None else None,
             "extra": fingerprint(extra)}
    return fingerprint(parts)


# ----------------------------------------------------------------------------- the loop

def trainable_named_parameters(model: nn.Module) -> list[tuple[str, nn.Parameter]]:
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad]


def make_optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.AdamW:
    """AdamW over the trainable parameters: groups by learning rate, and decay vs no decay."""
    groups: dict[tuple[float, bool], list] = {}
    for name, p in trainable_named_parameters(model):
        no_decay = name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name or p.dim() == 1
        groups.setdefault((config.lr_for(name), no_decay), []).append(p)
    if not groups:
        raise ValueError("no parameter of the model is trainable: unfreeze at least the head before training")
    return torch.optim.AdamW(
        [{"params": ps, "lr": lr, "weight_decay": 0.0 if nd else config.weight_decay} for (lr, nd), ps in groups.items()])


def linear_schedule(optimizer, warmup_steps: int, total_steps: int) -> torch.optim.lr_scheduler.LambdaLR:
    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / max(warmup_steps, 1)
        return max(0.0, (total_steps - step) / max(total_steps - warmup_steps, 1))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def _model_device(model: nn.Module) -> torch.device:
    p = next(model.parameters(), None)
    return p.device if p is not None else torch.device("cpu")


def _should_stop(stop) -> bool:
    if stop is None:
        return False
    if isinstance(stop, threading.Event):
        return stop.is_set()
    return bool(stop())


def _trainable_state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.detach().cpu().clone() for n, p in trainable_named_parameters(model)}


def _load_trainable(model: nn.Module, state: dict[str, torch.Tensor]) -> None:
    params = dict(model.named_parameters())
    missing = [n for n in state if n not in params]
    if missing:
        raise KeyError(f"the cached run has parameters this model lacks: {missing[:3]}")
    with torch.no_grad():
        for n, t in state.items():
            params[n].copy_(t.to(params[n].device, params[n].dtype))


def run_dir(name: str, key: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:60] or "run"
    return cache_dir("finetuning", f"{safe}-{key[:16]}")


def fit(model: nn.Module, train_data: Sequence, collate: Callable[[list], dict], config: TrainConfig | None = None, *,
        eval_data: Sequence | None = None, evaluate_fn: Callable[[nn.Module], dict] | None = None,
        name: str = "run", device: str | torch.device | None = None, cache: bool = True, progress: bool = True,
        callback: Callable[[str, TrainRun], None] | None = None, stop=None, cache_extra: Any = None) -> TrainRun:
    """Train ``model`` on ``train_data`` and return its :class:`TrainRun` (see the module docstring).

    model:      returns an object with ``.loss`` (and ``.logits``) when called as ``model(**collate(batch))``
    train_data: a sequence of examples; ``collate(examples) -> dict`` of model inputs with ``labels``
    eval_data:  held-out examples, evaluated after every epoch with the same collate (or ``evaluate_fn(model)``)
    cache:      load a finished run with the same key, or store this one (``cache_dir("finetuning")``)
    callback:   ``callback(event, run)`` with event "step", "epoch" or "end" (for live curves)
    stop:       a ``threading.Event`` or a function; when it is set/true the run stops after the current step
    cache_extra: anything else that changes the result and is not in the model, data or config (e.g. max length)
    """
    config = config or TrainConfig()
    if len(train_data) == 0:
        raise ValueError("no training examples: train_data is empty")
    device = get_device(device)
    model.to(device)
    params = trainable_named_parameters(model)
    if not params:
        raise ValueError("no parameter of the model is trainable: unfreeze at least the head before training")
    start_fp = initial_fingerprint(model) if cache else ""
    key = run_key(model, train_data, config, eval_data, cache_extra) if cache else "nocache"
    folder = run_dir(name, key) if cache else None
    steps_per_epoch = math.ceil(len(train_data) / config.batch_size)
    run = TrainRun(name=name, key=key, config=config, trainable_parameters=sum(p.numel() for _, p in params),
                   total_parameters=sum(p.numel() for p in model.parameters()), device=str(device),
                   steps_per_epoch=steps_per_epoch)

    if folder is not None and (folder / "run.json").exists():
        run = _load_finished(model, folder, run)
        _remember_start(model, start_fp)
        return run

    def run_eval() -> dict[str, float]:
        if evaluate_fn is not None:
            return evaluate_fn(model)
        if eval_data is not None:
            return evaluate(model, eval_data, collate, config.eval_batch_size, device)
        return {}

    optimizer = make_optimizer(model, config)
    total = steps_per_epoch * config.epochs
    scheduler = linear_schedule(optimizer, int(config.warmup_ratio * total), total)
    start_epoch = 0
    if folder is not None and (folder / "partial.pt").exists():
        start_epoch = _load_partial(model, optimizer, scheduler, folder / "partial.pt", run)
    last_good = _trainable_state(model)  # what to go back to if this epoch is interrupted

    model.train()
    try:
        for epoch in range(start_epoch, config.epochs):
            seed_everything(config.seed * 1000 + epoch)  # per epoch, so that a resumed run repeats an unbroken one
            chunks = batches(train_data, config.batch_size, shuffle=True, seed=config.seed * 1000 + epoch)
            bar = _progress(chunks, f"{name} epoch {epoch + 1}/{config.epochs}", progress)
            loss_sum, correct, counted, t0 = 0.0, 0, 0, time.perf_counter()
            for step, chunk in enumerate(bar):
                if _should_stop(stop):
                    raise StopTraining
                batch = to_device(collate(chunk), device)
                out = model(**batch)
                if out.loss is None:
                    raise ValueError("the model returned no loss: does collate put 'labels' in the batch?")
                optimizer.zero_grad(set_to_none=True)
                out.loss.backward()
                if config.max_grad_norm is not None:
                    torch.nn.utils.clip_grad_norm_([p for _, p in params], config.max_grad_norm)
                optimizer.step()
                scheduler.step()
                loss = float(out.loss.detach())
                run.step_losses.append(loss)
                loss_sum += loss
                if getattr(out, "logits", None) is not None:
                    c, n = correct_and_counted(out.logits.detach(), batch["labels"])
                    correct, counted = correct + c, counted + n
                if progress and hasattr(bar, "set_postfix"):
                    bar.set_postfix(loss=f"{loss:.3f}")
                if callback is not None:
                    callback("step", run)
            seconds = time.perf_counter() - t0
            t1 = time.perf_counter()
            scores = run_eval()
            run.epochs.append(EpochRecord(epoch=epoch + 1, train_loss=loss_sum / max(step + 1, 1),
                                          train_accuracy=correct / counted if counted else None, eval=scores,
                                          seconds=seconds, eval_seconds=time.perf_counter() - t1, steps=step + 1))
            last_good = _trainable_state(model)
            if folder is not None and epoch + 1 < config.epochs:
                _save_partial(model, optimizer, scheduler, folder / "partial.pt", run)
            if callback is not None:
                callback("epoch", run)
    except (KeyboardInterrupt, StopTraining):
        run.interrupted = True
        run.step_losses = run.step_losses[:len(run.epochs) * steps_per_epoch] if run.epochs else []
        _load_trainable(model, last_good)
        model.eval()
        if cache:
            _remember_start(model, start_fp)
        if callback is not None:
            callback("end", run)
        return run
    run.finished = True
    model.eval()
    if folder is not None:
        _save_finished(model, folder, run)
        _remember_start(model, start_fp)
    if callback is not None:
        callback("end", run)
    return run


def _progress(chunks, desc: str, enabled: bool):
    if not enabled:
        return chunks
    from tqdm.auto import tqdm

    return tqdm(chunks, desc=desc, leave=False)


# ----------------------------------------------------------------------------- cache files

def _save_finished(model: nn.Module, folder: Path, run: TrainRun) -> None:
    from safetensors.torch import save_file

    save_file({n: t.contiguous() for n, t in _trainable_state(model).items()}, str(folder / "trained.safetensors"))
    (folder / "run.json").write_text(json.dumps(run.to_dict(), indent=1))  # written last: marks the run complete
    (folder / "partial.pt").unlink(missing_ok=True)


def _load_finished(model: nn.Module, folder: Path, fresh: TrainRun) -> TrainRun:
    from safetensors.torch import load_file

    run = TrainRun.from_dict(json.loads((folder / "run.json").read_text()))
    _load_trainable(model, load_file(str(folder / "trained.safetensors")))
    model.eval()
    run.cached, run.device = True, fresh.device
    return run


def _save_partial(model, optimizer, scheduler, path: Path, run: TrainRun) -> None:
    tmp = path.with_suffix(".tmp")
    torch.save({"trainable": _trainable_state(model), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "run": run.to_dict()}, tmp)
    tmp.replace(path)


def _load_partial(model, optimizer, scheduler, path: Path, run: TrainRun) -> int:
    state = torch.load(path, map_location="cpu", weights_only=False)
    _load_trainable(model, state["trainable"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    saved = TrainRun.from_dict(state["run"])
    run.epochs, run.step_losses, run.resumed_from = saved.epochs, saved.step_losses, len(saved.epochs)
    return len(saved.epochs)
