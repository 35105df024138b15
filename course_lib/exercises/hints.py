"""Turning a difference between the student's answer and the reference into a hint.

Every helper raises :class:`~course_lib.exercises.core.Wrong` with a sentence that
names what differs ("expected shape (2, 4, 5, 3), got (2, 5, 4, 3): are the head
and token axes swapped?"), or returns quietly when all is well.
"""
from __future__ import annotations

import torch

from .core import Wrong

ATOL = RTOL = 1e-5  # tolerance of every tensor comparison


def fmt_shape(shape) -> str:
    """(2, 4, 5, 3), also for a one-axis shape: (5,)."""
    return str(tuple(int(s) for s in shape))


def fmt_int(n: int) -> str:
    """109482240 -> '109,482,240'."""
    return f"{n:,}"


def fmt_num(x: float, near: float | None = None) -> str:
    """Two decimals, more when two would round ``x`` to ``near`` (0.999 is not '1.00')."""
    s = f"{x:.2f}"
    if near is not None and x != near and float(s) == near:
        s = f"{x:.6g}"
    return s


def fmt_index(idx) -> str:
    return "(" + ", ".join(str(int(i)) for i in idx) + ")"


def expect_tensor(x, what: str) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise Wrong(f"{what} should be a torch tensor, got {type(x).__name__}")
    return x.detach()


def expect_shape(x: torch.Tensor, expected, what: str, axes: tuple[str, ...] | None = None) -> None:
    """Shape check; when two axes are exchanged and ``axes`` names them, the hint says which."""
    got, expected = tuple(x.shape), tuple(expected)
    if got == expected:
        return
    hint = f"expected shape {fmt_shape(expected)}, got {fmt_shape(got)} for {what}"
    diff = [i for i in range(len(got)) if got[i] != expected[i]] if len(got) == len(expected) else []
    if axes and len(diff) == 2:
        i, j = diff
        if got[i] == expected[j] and got[j] == expected[i]:
            hint += f": are the {axes[i]} and {axes[j]} axes swapped?"
    raise Wrong(hint)


def close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """allclose at the exercises' tolerance, whatever the float precision of the answer."""
    return a.shape == b.shape and torch.allclose(a.double(), b.double(), atol=ATOL, rtol=RTOL)


def first_mismatch(a: torch.Tensor, b: torch.Tensor) -> tuple[tuple[int, ...], float]:
    """Index of the first element (in reading order) where a and b differ, and the difference there."""
    bad = ~torch.isclose(a.double(), b.double(), atol=ATOL, rtol=RTOL)
    idx = tuple(int(i) for i in bad.nonzero()[0])
    return idx, float((a.double() - b.double())[idx].abs())


def same_gradient(grad: torch.Tensor, want: torch.Tensor, what: str) -> None:
    """A loss whose value is right must also carry the right gradient back to ``what`` (one that was rebuilt from
    .item(), detached or partly computed under no_grad gives the right number and trains wrongly or not at all)."""
    if tuple(grad.shape) != tuple(want.shape) or not torch.allclose(grad.float(), want, atol=1e-6, rtol=1e-4):
        off = (grad.float() - want).abs().max().item() if tuple(grad.shape) == tuple(want.shape) else float("nan")
        raise Wrong(f"your loss has the right value, but its gradient with respect to {what} is not that of the "
                    f"loss (off by up to {off:.2g}): the value must come from {what} by tensor operations all the way, "
                    "so that backward() trains with it")
