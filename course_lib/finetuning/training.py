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
labels (B, T)). Pass ``evaluate_fn=`` for other metrics (entity F1, exact match, ...).
"""
from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from ..model.device import get_device, seed_everything
from .runs import (EpochRecord, TrainConfig, TrainRun, _load_finished, _load_partial, _load_trainable,  # noqa: F401
                   _remember_start, _save_finished, _save_partial, _trainable_state, fingerprint,
                   initial_fingerprint, model_fingerprint, run_dir, run_key, trainable_named_parameters)
from .shipped import SHIP_ENV, find_finished, load_shipped, save_delta

IGNORE_INDEX = -100


class StopTraining(Exception):
    """Raised inside the loop when the ``stop`` event is set."""


# ----------------------------------------------------------------------------- batching and evaluation

def batches(data: Sequence, batch_size: int, *, shuffle: bool = False, seed: int = 0,
            length: Callable[[Any], int] | None = None, pool: int = 8) -> list[list]:
    """Split ``data`` into lists of ``batch_size`` examples (one may be shorter), shuffled with ``seed``.

    With ``length`` (a function of an example), examples of similar length share a batch, so that little of
    each batch is padding: the shuffled examples are cut into pools of ``pool`` batches, each pool is sorted by
    length and cut into batches, and the batches are shuffled again. Without shuffling, sorting by length
    alone decides the order (for evaluation: the order of the results does not matter).
    """
    gen = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(data), generator=gen).tolist() if shuffle else list(range(len(data)))
    if length is not None:
        size = batch_size * pool if shuffle else len(order)
        order = [i for s in range(0, len(order), size) for i in sorted(order[s:s + size], key=lambda i: length(data[i]))]
    cut = [order[s:s + batch_size] for s in range(0, len(order), batch_size)]
    if length is not None and shuffle:
        cut = [cut[j] for j in torch.randperm(len(cut), generator=gen).tolist()]
    return [[data[i] for i in idx] for idx in cut]


def to_device(batch: dict, device: torch.device) -> dict:
    return {k: v.to(device) if torch.is_tensor(v) else v for k, v in batch.items()}


def correct_and_counted(logits: torch.Tensor, labels: torch.Tensor) -> tuple[int, int]:
    """How many argmax predictions equal the labels, and how many labels count (not -100).

    Labels that are scores of the same shape as ``logits`` (a teacher's, in distillation) count by their argmax:
    the share of the predictions that agree with the teacher's top class."""
    if labels.is_floating_point() and labels.shape == logits.shape:
        labels = labels.argmax(-1)
    keep = labels != IGNORE_INDEX
    pred = logits.argmax(-1)
    return int((pred[keep] == labels[keep]).sum()), int(keep.sum())


@torch.no_grad()
def predict(model: nn.Module, data: Sequence, collate: Callable, batch_size: int = 64,
            device: torch.device | None = None, length: Callable | None = None
            ) -> tuple[torch.Tensor, torch.Tensor, float]:
    """Argmax predictions and labels (flattened, positions with label -100 left out) and the mean loss.

    Works for logits (B, C) with labels (B,) and for logits (B, T, C) with labels (B, T). With ``length`` the
    batches are formed by length (faster) and the results come back in the order of ``data`` all the same
    (for sentence-level labels; token-level results are in batch order).
    """
    if len(data) == 0:
        raise ValueError("no examples to evaluate on")
    device = device or _model_device(model)
    was_training = model.training
    model.eval()
    preds, golds, loss_sum, n = [], [], 0.0, 0
    try:
        order = list(range(len(data)))
        if length is not None:
            order = sorted(order, key=lambda i: length(data[i]))
        for s in range(0, len(order), batch_size):
            chunk = [data[i] for i in order[s:s + batch_size]]
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
    pred, gold = torch.cat(preds), torch.cat(golds)
    if length is not None and len(pred) == len(data):  # one label per example: back to the order of data
        back = torch.empty(len(order), dtype=torch.long)
        back[torch.tensor(order)] = torch.arange(len(order))
        pred, gold = pred[back], gold[back]
    return pred, gold, loss_sum / max(n, 1)


def evaluate(model: nn.Module, data: Sequence, collate: Callable, batch_size: int = 64,
             device: torch.device | None = None, length: Callable | None = None) -> dict[str, float]:
    """Held-out ``loss`` (mean over examples) and ``accuracy`` (over labels that are not -100)."""
    pred, gold, loss = predict(model, data, collate, batch_size, device, length)
    return {"loss": loss, "accuracy": float((pred == gold).float().mean()) if len(gold) else float("nan")}


# ----------------------------------------------------------------------------- the loop

def make_optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.AdamW:
    """AdamW over the trainable parameters: groups by learning rate, and decay vs no decay."""
    groups: dict[tuple[float, bool], list] = {}
    for name, p in trainable_named_parameters(model):
        no_decay = name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name or p.dim() == 1
        groups.setdefault((config.lr_for(name), no_decay), []).append(p)
    if not groups:
        raise ValueError("no parameter of the model is trainable: unfreeze at least the head before training")
    param_groups = [{"params": ps, "lr": lr, "weight_decay": 0.0 if nd else config.weight_decay}
                    for (lr, nd), ps in groups.items()]
    first = next(iter(groups.values()))[0]
    # the fused kernel does the whole update in one pass over memory (about twice as fast on a CPU)
    fused = first.dtype in (torch.float32, torch.float16, torch.bfloat16) and first.device.type in ("cpu", "cuda")
    return torch.optim.AdamW(param_groups, fused=fused)


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


def fit(model: nn.Module, train_data: Sequence, collate: Callable[[list], dict], config: TrainConfig | None = None, *,
        eval_data: Sequence | None = None, evaluate_fn: Callable[[nn.Module], dict] | None = None,
        name: str = "run", device: str | torch.device | None = None, cache: bool = True, progress: bool = True,
        callback: Callable[[str, TrainRun], None] | None = None, stop=None, cache_extra: Any = None,
        length: Callable[[Any], int] | None = None, key: str | None = None, info: dict | None = None,
        realise: Callable[[], Sequence] | None = None) -> TrainRun:
    """Train ``model`` on ``train_data`` and return its :class:`TrainRun` (see the module docstring).

    model:      returns an object with ``.loss`` (and ``.logits``) when called as ``model(**collate(batch))``
    train_data: a sequence of examples; ``collate(examples) -> dict`` of model inputs with ``labels``
    eval_data:  held-out examples, evaluated after every epoch with the same collate (or ``evaluate_fn(model)``)
    cache:      load a finished run with the same key, or store this one (``cache_dir("finetuning")``)
    callback:   ``callback(event, run)`` with event "step", "epoch" or "end" (for live curves)
    stop:       a ``threading.Event`` or a function; when it is set/true the run stops after the current step
    cache_extra: anything else that changes the result and is not in the model, data or config (e.g. max length)
    length:     ``length(example)``, to batch examples of similar length together (less padding, faster)
    info:       stored with the run (``run.info``), e.g. the strategy or the time of a one-off feature pass
    key:        the cache key to use instead of the one computed from model, data and config (for callers that
                train a wrapper -- e.g. the top layers on cached states -- but key the run by the whole model)
    realise:    when ``train_data`` holds stand-ins that key the run as the real examples would (frozen states
                as placeholders: ``frozen.frozen_states(placeholders=True)``), ``realise()`` gives the real
                ones, called only if the run has to be trained (not when it is found finished or shipped)
    """
    config = config or TrainConfig()
    if len(train_data) == 0:
        raise ValueError("no training examples: train_data is empty")
    device = get_device(device)
    model.to(device)
    params = trainable_named_parameters(model)
    if not params:
        raise ValueError("no parameter of the model is trainable: unfreeze at least the head before training")
    start_fp = initial_fingerprint(model) if cache and key is None else ""
    if key is None:
        key = run_key(model, train_data, config, eval_data, [cache_extra, length is not None]) if cache else "nocache"
    finished = find_finished(name, key) if cache else None
    steps_per_epoch = math.ceil(len(train_data) / config.batch_size)
    run = TrainRun(name=name, key=key, config=config, trainable_parameters=sum(p.numel() for _, p in params),
                   total_parameters=sum(p.numel() for p in model.parameters()), device=str(device),
                   steps_per_epoch=steps_per_epoch, info=dict(info or {}))

    if finished is not None:
        load = load_shipped if (finished / "delta.safetensors").exists() else _load_finished
        run = load(model, finished, run)
        _remember_start(model, start_fp)
        return run
    if realise is not None:
        train_data = realise()
    folder = run_dir(name, key) if cache else None

    def run_eval() -> dict[str, float]:
        if evaluate_fn is not None:
            return evaluate_fn(model)
        if eval_data is not None:
            return evaluate(model, eval_data, collate, config.eval_batch_size, device, length=length)
        return {}

    optimizer = make_optimizer(model, config)
    total = steps_per_epoch * config.epochs
    scheduler = linear_schedule(optimizer, int(config.warmup_ratio * total), total)
    start_epoch = 0
    if folder is not None and (folder / "partial.pt").exists():
        start_epoch = _load_partial(model, optimizer, scheduler, folder / "partial.pt", run)
    last_good = _trainable_state(model)  # what to go back to if this epoch is interrupted
    initial = last_good if start_epoch == 0 else None  # the weights it started from (tools/ship_runs.py)

    model.train()
    try:
        for epoch in range(start_epoch, config.epochs):
            seed_everything(config.seed * 1000 + epoch)  # per epoch, so that a resumed run repeats an unbroken one
            chunks = batches(train_data, config.batch_size, shuffle=True, seed=config.seed * 1000 + epoch, length=length)
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
        if start_fp:
            _remember_start(model, start_fp)
        if callback is not None:
            callback("end", run)
        return run
    run.finished = True
    model.eval()
    if folder is not None:
        _save_finished(model, folder, run)
        if initial is not None and os.environ.get(SHIP_ENV):
            save_delta(folder, initial, _trainable_state(model))
        if start_fp:
            _remember_start(model, start_fp)
    if callback is not None:
        callback("end", run)
    return run


def _progress(chunks, desc: str, enabled: bool):
    if not enabled:
        return chunks
    from tqdm.auto import tqdm

    return tqdm(chunks, desc=desc, leave=False)
