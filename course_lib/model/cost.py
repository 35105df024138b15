"""What attention costs as the input grows (SLP3 §11.1: the N×N score matrix and the 512-token limit).

Self-attention compares every token with every other one: QKᵀ has N² entries per
head, so time and memory grow quadratically with the length N.

The exact quantities (:attr:`CostPoint.matrix_bytes`, :attr:`CostPoint.matmul_flops`) are computed, not
measured: they are the same on every machine. The peak memory is measured by counting allocations, the time by
the clock: the fastest of ``repeats`` calls on one thread, which is still noisy on a shared machine.
"""
from __future__ import annotations

import contextlib
import os
import sys
import time
from dataclasses import dataclass

import torch

from .attention import attention
from .device import get_device


@dataclass
class CostPoint:
    n: int              # sequence length N
    seconds: float      # wall time of one attention call (all heads): the fastest of `repeats`, measured (noisy)
    peak_bytes: int     # peak memory allocated during the call, measured
    matrix_bytes: int   # size of one (H, N, N) float32 matrix, for reference (exact)
    matmul_flops: int   # floating-point operations of QKᵀ and of weights·V: 2 · 2·H·N²·d_h (exact)


@contextlib.contextmanager
def _quiet_native_stderr():
    """The profiler's C++ side prints start/stop lines straight to file descriptor 2; hide them."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _peak_cpu_bytes(fn) -> int:
    """Peak of the running sum of allocations and frees recorded by the PyTorch profiler."""
    from torch.profiler import ProfilerActivity, profile

    with _quiet_native_stderr(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = sorted((e for e in prof.events() if e.cpu_parent is None), key=lambda e: e.time_range.start)
    current = peak = 0
    for e in events:
        current += e.cpu_memory_usage
        peak = max(peak, current)
    return peak


def timed(fn, device) -> float:
    """Seconds ``fn()`` takes on ``device`` (a CUDA device is synchronised before and after)."""
    if device.type == "cuda":
        torch.cuda.synchronize()
    t = time.perf_counter()
    fn()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t


@torch.no_grad()
def attention_cost(lengths=(32, 64, 128, 256, 512), heads: int = 12, d_head: int = 64, repeats: int = 20,
                   device=None, seed: int = 0, threads: int | None = 1) -> list[CostPoint]:
    """Time and peak memory of explicit attention (weights included) for each length N, beside the exact sizes.

    The time is the fastest of ``repeats`` calls (the least disturbed by whatever else runs), on ``threads`` CPU
    threads (1: one core's work, not how many happen to be free; None: PyTorch's setting). Still noisy on a
    shared machine: base claims on ``matrix_bytes`` and ``matmul_flops``.
    """
    dev = get_device(device)
    g = torch.Generator(device="cpu").manual_seed(seed)
    points = []
    saved_threads = torch.get_num_threads()
    try:
        if threads is not None and dev.type == "cpu":
            torch.set_num_threads(threads)
        for n in lengths:
            q, k, v = (torch.randn(1, heads, n, d_head, generator=g).to(dev) for _ in range(3))
            call = lambda: attention(q, k, v)  # noqa: E731
            call()  # warm-up
            times = [timed(call, dev) for _ in range(max(1, repeats))]
            if dev.type == "cuda":
                torch.cuda.reset_peak_memory_stats()
                base = torch.cuda.memory_allocated()
                call()
                peak = torch.cuda.max_memory_allocated() - base
            else:
                peak = _peak_cpu_bytes(call)
            points.append(CostPoint(n, min(times), int(peak), heads * n * n * 4, 2 * 2 * heads * n * n * d_head))
    finally:
        torch.set_num_threads(saved_threads)
    return points


def growth_exponents(lengths, values) -> list[float]:
    """The local exponent p of ``value ∝ N^p`` between successive lengths: log(v₂/v₁) / log(N₂/N₁).

    2 means quadratic growth: doubling N multiplies the value by 4.
    """
    import math

    lengths, values = list(lengths), list(values)
    if len(lengths) != len(values) or len(lengths) < 2:
        raise ValueError("give at least two lengths and one value per length")
    if any(n <= 0 for n in lengths) or any(v <= 0 for v in values):
        raise ValueError("lengths and values must be positive to fit a power law")
    return [math.log(v2 / v1) / math.log(n2 / n1)
            for (n1, v1), (n2, v2) in zip(zip(lengths, values), zip(lengths[1:], values[1:]))]
