"""The student's functions, called from the grader through the worker (:mod:`.channel`).

:class:`Exercise` serves one check: :class:`Remote`
stands for a student's function, and each call sends the arguments the check chose and rebuilds what came back from
plain data; an exception is rebuilt from its kind, name and message; a death, a garbled channel or a timeout becomes
:class:`.core.Stopped`, which ends the check with a message in the student's words.
"""
from __future__ import annotations

import math

from . import calls, wire
from .clock import IdleClock
from .core import Stopped, Wrong, guarded
from .channel import Broken, Worker
from .limits import Limits, death_phrase

def _rebuilt(reply: dict) -> BaseException:
    """What the student's function raised, rebuilt on this side from its kind, type name and message."""
    message = str(reply.get("message", ""))[:1000]
    kind = reply.get("kind")
    if kind == "not_implemented":
        e = NotImplementedError(message)
        e.where = reply.get("where") if type(reply.get("where")) is str else None
        return e
    if kind == "system_exit":
        return SystemExit(message)
    if kind == "keyboard":
        return KeyboardInterrupt(message)
    if kind == "memory":
        return MemoryError(message)
    if kind == "syntax":
        e = SyntaxError(message)
        e.lineno = reply.get("lineno") if type(reply.get("lineno")) is int else None
        return e
    if kind == "module_not_found":
        return ModuleNotFoundError(message)
    return wire.opaque_exception(str(reply.get("type", "Exception")))(message)


class Exercise:
    """The calls of one exercise's check, served by the worker; ``ended``: how the serving process ended."""

    def __init__(self, worker: Worker, name: str, seconds: float, limits: Limits, deadline: float):
        self.worker, self.name, self.seconds, self.limits = worker, name, seconds, limits
        self.deadline, self.ended, self.cpu, self.broken, self.over = deadline, None, 0.0, None, False
        self.clock = None if limits.forks else IdleClock(worker.pid)
        self.stored: dict[int, int] = {}  # id of an argument the sandbox holds -> its key
        self.keep: list = []              # those arguments, so that their ids stay theirs
        self.idle_limit = math.inf if limits.forks else limits.wall_factor * seconds

    def next(self) -> tuple[dict, bytes]:
        try:
            return self.worker.next(self.deadline, self.clock, self.idle_limit)
        except Broken as e:
            self.broken = e.how if e.how is not None else self.worker.stop()
            raise

    def expect(self, ev: str) -> tuple[dict, bytes]:
        """The next frame that answers the request just sent; the worker's end of the exercise is noted."""
        header, payload = self.next()
        if header.get("ev") == "ended":
            self._ended(header)
            raise Broken(self.ended)
        if header.get("ev") != ev:
            self.broken = "garbled"
            raise Broken("garbled")
        return header, payload

    def _ended(self, header: dict) -> None:
        self.over = True
        how = header.get("how")
        self.ended = how if (how is None or type(how) is int or how in ("cpu", "idle", "hard")) else "unknown"
        cpu = header.get("cpu")
        self.cpu = float(cpu) if type(cpu) in (int, float) and 0 <= cpu < 1e7 else 0.0

    def stopped(self, how, fn: str | None) -> Stopped:
        where = f"during `{fn}`" if fn else "while checking your answer"
        idle = self.limits.wall_factor * self.seconds
        return Stopped(death_phrase(how, self.seconds, idle, self.limits.memory_text, where))

    def call(self, fn: str, args: tuple, kwargs: dict, grad_of=None, grad_out: int | None = None, rng: bool = False):
        """Call the student's ``fn`` in the sandbox; with ``grad_of=i``, return ``(value, d value / d args[i])``,
        the gradient computed there by autograd on the graph the student's function built (None without one); with
        ``grad_of=(i, name)``, by the parameter ``name`` of the module ``args[i]`` (:func:`calls.target`); with
        ``grad_out=k`` too, the gradient of ``value[k]`` (a function returning several things). With ``rng=True``
        (and no ``grad_of``), return ``(value, names)``: the global generators the call changed there."""
        if self.broken is not None or self.over:
            raise self.stopped(self.broken if self.broken is not None else self.ended, fn)
        import torch

        for value in [*args, *kwargs.values()]:
            if id(value) not in self.stored and calls.worth_storing(value):
                found: list = []
                payload = calls.dump_args((value,), {}, found, self.stored)
                if not found:  # (an object holding a function of the check is sent with each call)
                    self.stored[id(value)] = len(self.keep)
                    self.keep.append(value)
                    self.worker.send({"op": "store", "key": self.stored[id(value)]}, payload)
        callbacks: list = []
        request = {"op": "call", "fn": fn, "grad": torch.is_grad_enabled()}
        if grad_of is not None:
            request["grad_of"] = int(grad_of) if type(grad_of) is int else [int(grad_of[0]), str(grad_of[1])]
            if grad_out is not None:
                request["grad_out"] = int(grad_out)
        elif rng:
            request["rng"] = True
        self.worker.send(request, calls.dump_args(args, kwargs, callbacks, self.stored))
        try:
            while True:
                header, payload = self.next()
                ev = header.get("ev")
                if ev == "return":
                    value, after = _pair(wire.decode(header, payload))
                    _apply_after(args, kwargs, after)
                    if isinstance(value, wire.Opaque) and "too large to check" in value.text:
                        why = value.text[value.text.index("too large to check"):].rstrip(">")
                        raise Stopped(f"your function {fn} returned a {type(value).__name__} {why}: return tensors "
                                      "where tensors are asked for, not Python lists of their numbers")
                    if grad_of is not None:
                        value, grad = _pair(value)
                        if grad is not None and not isinstance(grad, torch.Tensor):
                            raise wire.WireError("a gradient that is not a tensor")
                        return value, grad
                    if rng:
                        value, changed = _pair(value)
                        if not (isinstance(changed, list) and all(c in calls.GLOBAL_GENERATORS for c in changed)):
                            raise wire.WireError("a list of generators that is not one")
                        return value, changed
                    return value
                if ev == "raised":
                    raise _rebuilt(header)
                if ev == "patched":
                    raise Stopped(f"your code replaced `{str(header.get('where'))[:200]}`; changing course_lib or "
                                  "torch is not allowed")
                if ev == "callback":
                    self._callback(callbacks, header, payload)
                    continue
                if ev == "ended":
                    self._ended(header)
                    raise Broken(self.ended)
                raise wire.WireError(f"an unexpected message {str(ev)[:40]!r}")
        except wire.WireError:
            self.broken = "garbled"
            raise self.stopped("garbled", fn) from None
        except Broken as e:
            raise self.stopped(e.how if e.how is not None else self.broken, fn) from None

    def _callback(self, callbacks: list, header: dict, payload: bytes) -> None:
        """The student's function calls a function the check gave it (a scorer): run it here, on plain data."""
        i = header.get("id")
        if not (type(i) is int and 0 <= i < len(callbacks)):
            raise wire.WireError("a call of a function the check did not give")
        args, kwargs = _pair(wire.decode(header, payload))
        if not (isinstance(args, tuple) and isinstance(kwargs, dict) and all(isinstance(k, str) for k in kwargs)):
            raise wire.WireError("a call with damaged arguments")
        try:
            value = callbacks[i](*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - raised inside the student's function, as it would be in a notebook
            self.worker.send({"op": "callback_raised", "type": type(e).__name__, "message": str(e)[:1000]})
            return
        self.worker.send({"op": "callback_return"}, calls.dump_args((value,), {}, []))

    def get(self, name: str):
        self.worker.send({"op": "get", "name": name})
        try:
            return wire.decode(*self.expect("value"))
        except wire.WireError:
            self.broken = "garbled"
            raise self.stopped("garbled", None) from None
        except Broken as e:
            raise self.stopped(e.how if e.how is not None else self.broken, None) from None

    def probe(self, names) -> dict:
        self.worker.send({"op": "probe", "names": list(names)})
        header, _ = self.expect("probe")
        info, callables = header.get("names"), header.get("callables")
        if not (isinstance(info, dict) and all(isinstance(info.get(n), dict) for n in names)):
            self.broken = "garbled"
            raise Broken("garbled")
        return {"names": info, "callables": [c for c in callables if isinstance(c, str)][:2000]
                if isinstance(callables, list) else []}

    def finish(self) -> None:
        """Tell the serving process the check is over and wait until it has ended."""
        if self.broken is not None or self.over:
            return
        self.worker.send({"op": "end"})
        try:
            while not self.over:
                header, _ = self.next()
                if header.get("ev") == "ended":
                    self._ended(header)
        except Broken:
            pass


def _pair(value) -> tuple:
    if not (isinstance(value, tuple) and len(value) == 2):
        raise wire.WireError("a reply that is not (value, what changed)")
    return value


def _apply_after(args: tuple, kwargs: dict, after) -> None:
    """Copy back what the student's call changed in its arguments, as a call in the notebook would leave them."""
    if after is None:
        return
    try:
        states, kw_states = after
    except (TypeError, ValueError):
        return
    if isinstance(states, list) and len(states) == len(args):
        for original, state in zip(args, states):
            calls.apply_after(original, state)
    if isinstance(kw_states, dict):
        for k, state in kw_states.items():
            if k in kwargs:
                calls.apply_after(kwargs[k], state)


class Remote:
    """Stands for a student's function in the check: calling it calls the function in the sandbox."""

    def __init__(self, exercise: Exercise, name: str):
        self.exercise, self.__name__, self.__qualname__ = exercise, name, name

    def __call__(self, *args, **kwargs):
        return self.exercise.call(self.__name__, args, kwargs)

    def value_and_grad(self, args: tuple, wrt, out: int | None = None):
        """``(fn(*args), d fn(*args) / d args[wrt])``, both computed in the sandbox (see :func:`value_and_grad`)."""
        return self.exercise.call(self.__name__, args, {}, grad_of=wrt, grad_out=out)


def value_and_grad(fn, args: tuple, wrt, out: int | None = None):
    """What ``fn(*args)`` returns and its gradient with respect to the tensor ``args[wrt]`` (or, for ``wrt=(i, name)``,
    the parameter ``name`` of the module ``args[i]``; None when the answer is not a tensor on a graph reaching it). A check asks for both at once because, for a student's function
    graded in the sandbox, the graph exists only there: a flag saying "requires grad" is the sandbox's word, a
    gradient that equals the right one is not. With ``out=k``, the gradient is that of ``fn(*args)[k]`` (for a
    function that returns, say, ``(probs, loss)``)."""
    target = getattr(fn, "__wrapped__", fn)  # a check gets the student's function wrapped by core.guarded
    if isinstance(target, Remote):
        return guarded(lambda *a: target.value_and_grad(a, wrt, out), target.__name__)(*args)
    value = fn(*args)
    return value, calls.gradient(calls.part(value, out), calls.target(args, wrt))


def value_and_generators(fn, args: tuple, kwargs: dict):
    """What ``fn(*args, **kwargs)`` returns and the global random generators (torch's, numpy's, Python's; see
    :data:`calls.GLOBAL_GENERATORS`) whose state the call changed. An exercise that hands the student a generator
    asks for both: drawing from a global generator, reseeded from the one given, is right in every number the check
    can see, and wrong in what it does to the rest of the notebook. For a student's function graded in the sandbox,
    the states are compared there."""
    target = getattr(fn, "__wrapped__", fn)  # a check gets the student's function wrapped by core.guarded
    if isinstance(target, Remote):
        return guarded(lambda *a, **k: target.exercise.call(target.__name__, a, k, rng=True), target.__name__)(
            *args, **kwargs)
    with calls.watched_generators() as changed:
        value = fn(*args, **kwargs)
    return value, changed


def refuse_global_draws(changed: list, looks_right: str, draw: str = "every random number", given: str = "",
                        where: str = "") -> None:
    """Say so, as Wrong, when a call changed a global generator (``changed`` from :func:`value_and_generators`):
    ``looks_right`` names what the check could see ("The lengths look right"), ``draw`` what to take from the
    generator, ``given`` a hint after it, ``where`` the case it happened in."""
    if changed:
        raise Wrong(f"{where}your function changed {calls.GLOBAL_GENERATORS[changed[0]]}. {looks_right}, but every "
                    f"random number drawn after your function in the notebook now depends on it: draw {draw} from "
                    f"`generator`, the one you are given{given}, and leave the global generators as they were")
