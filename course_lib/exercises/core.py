"""Exercises and their results: the registry, running one check, and ``check(name)`` for notebooks.

An exercise is a name (``"attention"``), the names the student must define
(``scaled_dot_product_attention``) and a check function. The check calls the
student's functions on fixed inputs, compares with ``course_lib``'s reference,
and raises :class:`Wrong` with a hint at the first difference it finds.
"""
from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

NOT_ATTEMPTED, WRONG, CORRECT = "not attempted", "wrong", "correct"
ICONS = {CORRECT: "✅", WRONG: "❌", NOT_ATTEMPTED: "⏳"}


@dataclass(frozen=True)
class Result:
    """The outcome of one exercise: status is "not attempted", "wrong" or "correct"; message is the hint."""

    name: str
    status: str
    message: str = ""
    _shown_in_cell: int | None = field(default=None, repr=False, compare=False)

    @property
    def correct(self) -> bool:
        return self.status == CORRECT

    def __str__(self) -> str:
        """One line: ``❌ attention: wrong — row 2 of the weights sums to 0.73, expected 1``."""
        line = f"{ICONS[self.status]} {self.name}: {self.status}"
        return f"{line} — {self.message}" if self.message else line

    def _ipython_display_(self):
        # check() has already printed this line in the current cell: do not print it twice
        if self._shown_in_cell is None or self._shown_in_cell != _cell_number():
            print(self)


class Wrong(Exception):
    """Raised by a check at the first difference; the message is the hint shown to the student."""


class NotAttempted(Exception):
    """Raised when a student's function still raises NotImplementedError."""


@dataclass(frozen=True)
class Exercise:
    name: str
    needs: tuple[str, ...]             # what the student defines, e.g. ("split_heads", "merge_heads")
    run: Callable[..., str | None]     # called with the student's functions by name; raises Wrong

    def __post_init__(self):
        if not self.needs:
            raise ValueError(f"exercise {self.name!r} must name at least one function the student defines")


EXERCISES: dict[str, Exercise] = {}


def exercise(name: str, needs: tuple[str, ...] | list[str]):
    """Decorator registering a check function as exercise ``name``.

    >>> @exercise("causal_mask", needs=["causal_mask"])
    ... def check_causal_mask(causal_mask): ...
    """
    def register(run):
        if name in EXERCISES:
            raise ValueError(f"exercise {name!r} is registered twice")
        EXERCISES[name] = Exercise(name, tuple(needs), run)
        return run
    return register


def get_exercise(name: str) -> Exercise:
    if name not in EXERCISES:
        known = ", ".join(EXERCISES)
        close = difflib.get_close_matches(str(name), EXERCISES, n=1)
        guess = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"there is no exercise called {name!r}{guess}; the exercises are: {known}")
    return EXERCISES[name]


def guarded(fn: Callable, name: str) -> Callable:
    """Wrap a student's function so that what it raises becomes a result, never a crash."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except NotImplementedError:
            raise NotAttempted(f"replace `raise NotImplementedError` in {name} with your code") from None
        except Exception as e:  # noqa: BLE001 - anything the student's code raises is feedback
            detail = str(e).strip().splitlines()[0][:200] if str(e).strip() else ""
            raise Wrong(f"your function {name} raised {type(e).__name__}" + (f": {detail}" if detail else "")) from e
    return call


def run_exercise(name: str, namespace: dict) -> Result:
    """Check exercise ``name`` against the definitions found in ``namespace`` (a notebook's globals)."""
    ex = get_exercise(name)
    missing = [n for n in ex.needs if n not in namespace]
    if missing:
        return Result(name, NOT_ATTEMPTED,
                      f"`{missing[0]}` is not defined: run the cell that defines it (and keep the name `{missing[0]}`)")
    for n in ex.needs:
        if not callable(namespace[n]):
            return Result(name, WRONG, f"`{n}` should be a function, but it is a {type(namespace[n]).__name__}")
    fns = {n: guarded(namespace[n], n) for n in ex.needs}
    # the checks draw their own seeded inputs; forking keeps the notebook's random state as it was
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        try:
            summary = ex.run(**fns)
        except NotAttempted as e:
            return Result(name, NOT_ATTEMPTED, str(e))
        except Wrong as e:
            return Result(name, WRONG, str(e))
        except Exception as e:  # noqa: BLE001 - e.g. an answer of a type the comparison cannot handle
            return Result(name, WRONG, f"your answer could not be checked: {type(e).__name__}: {e}")
    return Result(name, CORRECT, summary or "")


def _cell_number() -> int | None:
    """The running notebook cell's execution count, or None outside IPython."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    return getattr(shell, "execution_count", None) if shell is not None else None


def check(name: str) -> Result:
    """Check exercise ``name`` in a notebook: finds your functions among the notebook's variables,
    prints one line (✅ correct / ❌ wrong — hint / ⏳ not attempted) and returns the :class:`Result`.
    """
    get_exercise(name)  # an unknown name is an error, not a result
    caller = inspect.currentframe().f_back
    try:
        namespace = {**caller.f_globals, **caller.f_locals}
    finally:
        del caller
    result = run_exercise(name, namespace)
    result = Result(result.name, result.status, result.message, _shown_in_cell=_cell_number())
    print(result)
    return result
