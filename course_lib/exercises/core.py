"""Exercises and their results: the registry, running one check, and ``check(name)`` for notebooks.

An exercise is a name (``"attention"``), the names the student must define (``scaled_dot_product_attention``),
its points and a check function. The check calls the student's functions on fixed inputs, compares with
``course_lib``'s reference, and raises :class:`Wrong` with a hint at the first difference it finds.

Points and partial credit live here and nowhere else: ``exercise(name, needs, points=2)``;
a check with parts raises ``Wrong(hint, credit=0.5)`` (or ``NotAttempted(..., credit=0.5)``) when
half of them are right. ``check()`` in the notebook, ``grade`` and ``grade-all`` all run
:func:`run_exercise`, so a student sees in class the line the gradebook will hold.
"""
from __future__ import annotations

import contextlib
import difflib
import functools
import inspect
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from . import calls
NOT_ATTEMPTED, WRONG, CORRECT = "not attempted", "wrong", "correct"
ICONS = {CORRECT: "✅", WRONG: "❌", NOT_ATTEMPTED: "⏳"}


@dataclass(frozen=True)
class Result:
    """The outcome of one exercise: status is "not attempted", "wrong" or "correct"; message is the hint."""

    name: str
    status: str
    message: str = ""
    credit: float | None = None  # the fraction earned by a partly right answer (None: 1 if correct, else 0)
    _shown_in_cell: int | None = field(default=None, repr=False, compare=False)

    @property
    def correct(self) -> bool:
        return self.status == CORRECT

    @property
    def fraction(self) -> float:
        """The share of the exercise's points earned, 0…1."""
        return 1.0 if self.correct else float(self.credit or 0.0)

    @property
    def points(self) -> float:
        """What the exercise is worth (declared where it is registered)."""
        ex = EXERCISES.get(self.name)
        return ex.points if ex is not None else 1

    @property
    def score(self) -> float:
        return round(self.points * self.fraction, 4)

    def __str__(self) -> str:
        """One line: ``❌ attention: wrong — row 2 of the weights sums to 0.73, expected 1``."""
        line = f"{ICONS[self.status]} {self.name}: {self.status}"
        if not self.correct and self.fraction > 0:
            line += f" ({fmt_points(self.score)} of {fmt_points(self.points)} points)"
        return f"{line} — {self.message}" if self.message else line

    def _ipython_display_(self):
        # check() has already printed this line in the current cell: do not print it twice
        if self._shown_in_cell is None or self._shown_in_cell != _cell_number():
            print(self)


def fmt_points(x: float) -> str:
    """2 -> '2', 0.5 -> '0.5', 1/3 -> '0.33'."""
    return f"{round(x, 2):g}"


class _Feedback(Exception):
    def __init__(self, message: str = "", credit: float = 0.0):
        super().__init__(message)
        if not 0 <= credit < 1:
            raise ValueError(f"credit is the fraction of the points earned, 0 <= credit < 1; got {credit}")
        self.credit = credit


class Wrong(_Feedback):
    """Raised by a check at the first difference; the message is the hint shown to the student.
    ``credit``: the fraction of the points earned so far, for a check with parts (default 0)."""


class NotAttempted(_Feedback):
    """Raised when a student's function still raises NotImplementedError (``credit``: parts already right)."""


class Stopped(Wrong):
    """Raised by the grader's stand-in for a student's function when the process running it stopped (a time or
    memory limit, a crash, an exit): it ends the check with that message, unchanged by :func:`guarded`."""


@dataclass(frozen=True)
class Exercise:
    name: str
    needs: tuple[str, ...]             # what the student defines, e.g. ("split_heads", "merge_heads")
    run: Callable[..., str | None]     # called with the student's definitions by name; raises Wrong
    kind: str = "function"             # "function": needs are functions; "question": one variable, a prediction
    module: str = ""                   # the module that registered it (re-registering from there replaces it)
    points: float = 1                  # what it is worth in the gradebook
    choices: tuple = ()                # a question's choices and its answer (for the guard that no cell
    answer: object = None              # before the question reveals it)
    why: str = ""                      # a question's explanation, shown when right (the guard: not said before)
    giveaways: tuple = ()              # phrases that would give a question's answer away if said before it

    def __post_init__(self):
        if not (isinstance(self.points, (int, float)) and self.points > 0):
            raise ValueError(f"exercise {self.name!r}: points must be a positive number, not {self.points!r}")
        if not self.needs:
            raise ValueError(f"exercise {self.name!r} must name at least one function the student defines")
        if self.kind not in ("function", "question"):
            raise ValueError(f"exercise {self.name!r}: kind must be 'function' or 'question', not {self.kind!r}")


EXERCISES: dict[str, Exercise] = {}


def _register(ex: Exercise) -> None:
    """Add ``ex``; reloading the module that defined it replaces it, a second module using the name is an error."""
    old = EXERCISES.get(ex.name)
    if old is not None and old.module != ex.module:
        raise ValueError(f"exercise {ex.name!r} is registered twice (in {old.module} and in {ex.module})")
    EXERCISES[ex.name] = ex


def exercise(name: str, needs: tuple[str, ...] | list[str], points: float = 1):
    """Decorator registering a check function as exercise ``name``, worth ``points``.

    >>> @exercise("causal_mask", needs=["causal_mask"])
    ... def check_causal_mask(causal_mask): ...
    """
    def register(run):
        _register(Exercise(name, tuple(needs), run, module=run.__module__, points=points))
        return run
    return register


def _fold(text: str) -> str:
    """A choice as typed, without case, spaces, brackets or thousands separators: "cls" is "[CLS]", "499500" "499,500"."""
    return re.sub(r"(?<=\d),(?=\d{3}(?!\d))|[\[\]\s]", "", text.lower())


def question(name: str, variable: str, choices, answer, why: str, hint: str, module: str | None = None,
             points: float = 1, giveaways=()) -> Exercise:
    """Register a graded prediction question, asked before the cell that reveals the answer.

    The student assigns ``variable`` one of ``choices`` (the student copy has ``variable = ...``);
    ``check(name)`` says not attempted while it is ``...`` or None, names the choices when the value is
    not one of them, gives ``hint`` (the idea to think about, not the answer) when wrong, and ``why``
    when right. ``giveaways``: phrases that must not appear before the question (the notebook guard looks for
    them, and for ``why``'s own wording, in every cell above it), e.g. the sentence an earlier draft gave it away with.
    """
    choices = tuple(choices)
    if answer not in choices:
        raise ValueError(f"question {name!r}: the answer {answer!r} is not one of the choices {choices}")
    if not why or not hint:
        raise ValueError(f"question {name!r} needs both a `why` (shown when right) and a `hint` (shown when wrong)")
    if len({_fold(str(c)) for c in choices}) != len(choices):
        raise ValueError(f"question {name!r}: two choices differ only in case or spaces: {choices}")

    def run(**given):
        value = given[variable]
        if value is Ellipsis or value is None:
            raise NotAttempted(f"set `{variable}` to your prediction, one of {_choices(choices)}, before the reveal")
        if isinstance(value, str):
            value = value.strip()
            folded = {_fold(str(c)): c for c in choices}
            value = folded.get(_fold(value), value)
        if value not in choices:
            raise Wrong(f"`{variable}` is {value!r}; choose one of {_choices(choices)}")
        if value != answer:
            raise Wrong(f"not {value!r}. {hint}")
        return why

    if module is None:
        frame = inspect.currentframe().f_back
        module = frame.f_globals.get("__name__", "") if frame is not None else ""
    ex = Exercise(name, (variable,), run, kind="question", module=module, points=points, choices=choices, answer=answer,
                  why=why, giveaways=tuple(giveaways))
    _register(ex)
    return ex


def _choices(choices) -> str:
    return ", ".join(repr(c) for c in choices)


def get_exercise(name: str) -> Exercise:
    if name not in EXERCISES:
        known = ", ".join(EXERCISES)
        close = difflib.get_close_matches(str(name), EXERCISES, n=1)
        guess = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"there is no exercise called {name!r}{guess}; the exercises are: {known}")
    return EXERCISES[name]


# What the grader (sandbox.py) plugs in: the memory limit of the sandbox, for the wording.
SANDBOX: dict = {"memory": None}
_GLOBAL_RNG = threading.RLock()


@contextlib.contextmanager
def seeded(seed: int):
    """torch's global random state seeded with ``seed`` for the block, and restored after it. The grader checks
    several submissions at once, in threads: one check at a time uses the global state."""
    with _GLOBAL_RNG, torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield
_MEMORY_ERRORS = ("can't allocate memory", "not enough memory", "bad_alloc", "out of memory")


def out_of_memory(e: BaseException) -> bool:
    return isinstance(e, MemoryError) or (isinstance(e, RuntimeError) and any(s in str(e) for s in _MEMORY_ERRORS))


def describe_raised(e: BaseException, who: str) -> str:
    """What ``who`` ("your function f") did, in the student's words: ``your function f raised ValueError: …``."""
    if out_of_memory(e):
        return f"{who} used more than {SANDBOX['memory']} of memory" if SANDBOX["memory"] else f"{who} ran out of memory"
    if isinstance(e, SystemExit):
        return f"{who} called sys.exit() or exit(), which would stop the grader: return a value instead"
    if isinstance(e, KeyboardInterrupt):
        return f"{who} was interrupted (KeyboardInterrupt)"
    if isinstance(e, SyntaxError):
        return f"{who} raised SyntaxError: {e.msg} (line {e.lineno})"
    text = str(e).strip()
    return f"{who} raised {type(e).__name__}" + (f": {text.splitlines()[0][:200]}" if text else "")


def guarded(fn: Callable, name: str) -> Callable:
    """Wrap a student's function so that whatever it raises becomes a result, never a crash."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Stopped:
            raise
        except NotImplementedError as e:
            raise NotAttempted(calls.unwritten(e, name)) from None
        except BaseException as e:  # noqa: BLE001 - anything the student's code raises is feedback, exits too
            raise Wrong(describe_raised(e, f"your function {name}")) from e
    return call


def _not_defined(n: str, namespace: dict) -> str:
    message = f"`{n}` is not defined: run the cell that defines it (and keep the name `{n}`)"
    names = [k for k, v in namespace.items() if callable(v) and not k.startswith("_") and not isinstance(v, type)]
    close = difflib.get_close_matches(n, names, n=1, cutoff=0.75)
    return message + (f"; your notebook defines `{close[0]}`: did you rename it?" if close else "")


def run_exercise(name: str, namespace: dict) -> Result:
    """Check exercise ``name`` against the definitions found in ``namespace`` (a notebook's globals)."""
    ex = get_exercise(name)
    missing = [n for n in ex.needs if n not in namespace]
    if missing:
        return Result(name, NOT_ATTEMPTED, _not_defined(missing[0], namespace))
    if ex.kind == "question":
        fns = {n: namespace[n] for n in ex.needs}
    else:
        for n in ex.needs:
            if not callable(namespace[n]):
                return Result(name, WRONG, f"`{n}` should be a function, but it is a {type(namespace[n]).__name__}")
        from .references import reference_called  # (it imports .grading, which imports this module)
        used = reference_called(ex, {n: namespace[n] for n in ex.needs})
        if used is not None:  # what the grader says of it too (read there from the cells' code)
            return Result(name, WRONG, used)
        fns = {n: guarded(namespace[n], n) for n in ex.needs}
    # the checks draw their own seeded inputs; forking keeps the notebook's random state as it was
    with torch.random.fork_rng(devices=[]):
        return run_check(ex, fns)


def run_check(ex: Exercise, fns: dict) -> Result:
    """Run ``ex``'s check on ``fns`` (the student's functions, wrapped by :func:`guarded`, or a question's value)."""
    name = ex.name
    with torch.no_grad():
        try:
            summary = ex.run(**fns)
        except NotAttempted as e:
            return Result(name, NOT_ATTEMPTED, str(e), credit=e.credit or None)
        except Wrong as e:
            return Result(name, WRONG, str(e), credit=e.credit or None)
        except BaseException as e:  # noqa: BLE001 - e.g. an answer of a type the comparison cannot handle
            if out_of_memory(e):
                return Result(name, WRONG, describe_raised(e, "checking your answer"))
            return Result(name, WRONG, f"your answer could not be checked: {type(e).__name__}: {str(e)[:300]}")
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
    result = Result(result.name, result.status, result.message, result.credit, _shown_in_cell=_cell_number())
    print(result)
    return result
