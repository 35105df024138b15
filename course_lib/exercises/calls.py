"""The arguments of a call across the grader's boundary (grader → sandbox), and what the call changed in them.

The sandbox trusts the grader, so the arguments travel as a pickle; callables of the check (a scorer) travel as
handles that the sandbox calls back through the grader, random generators as their state, and a large argument
(a vocabulary, a model) once per exercise. What comes back goes through :func:`.wire.encode` (plain data only).
"""
from __future__ import annotations

import contextlib
import io
import os
import pickle
import types

def _callback(obj) -> bool:
    """Whether ``obj`` travels as a handle: a function of the check (a closure, a lambda, a function of an exercise
    module) or a bound method. Library functions (the ones pickle itself uses to rebuild a tensor) travel by name."""
    if isinstance(obj, types.MethodType):
        return not isinstance(obj.__self__, (type, types.ModuleType))
    if not isinstance(obj, types.FunctionType):
        return False
    qualname, module = getattr(obj, "__qualname__", ""), getattr(obj, "__module__", "") or ""
    return "<" in qualname or module.startswith("course_lib.exercises") or module == "__main__"


def part(value, out: int | None):
    """``value[out]`` when ``value`` is a tuple or list that long, ``value`` itself for ``out=None``; else None."""
    if out is None:
        return value
    if isinstance(value, (tuple, list)) and type(out) is int and 0 <= out < len(value):
        return value[out]
    return None


def innermost(e: BaseException) -> str | None:
    """The name of the function in which ``e`` was raised (the last frame of its traceback), None without one."""
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_name if tb is not None else None


def unwritten(e: BaseException, name: str) -> str:
    """What to say of a ``NotImplementedError`` raised while calling the student's ``name``: the function whose body
    still raises it (the innermost frame's, or ``where`` as the sandbox reports it), which may be one that ``name``
    calls -- a composing exercise is not blamed for a helper left unwritten."""
    where = getattr(e, "where", None) or innermost(e)
    if isinstance(where, str) and where.isidentifier() and where != name:
        return f"replace `raise NotImplementedError` in {where} with your code ({name} calls it)"
    return f"replace `raise NotImplementedError` in {name} with your code"


def target(args: tuple, wrt):
    """What a check differentiates by: ``args[wrt]`` for an index, or for ``(i, name)`` the parameter ``name`` of the
    module ``args[i]`` (the encoder's weights, which a loss must reach for fine-tuning); None when there is none."""
    import torch

    if type(wrt) is int:
        return args[wrt] if 0 <= wrt < len(args) else None
    if isinstance(wrt, (tuple, list)) and len(wrt) == 2 and type(wrt[0]) is int and type(wrt[1]) is str:
        module = args[wrt[0]] if 0 <= wrt[0] < len(args) else None
        if isinstance(module, torch.nn.Module):
            return dict(module.named_parameters()).get(wrt[1])
    return None


def gradient(value, x):
    """d ``value`` / d ``x`` by autograd, for a tensor ``value`` on a graph that reaches the tensor ``x`` (of a
    larger one, the gradient of its sum: a vector of features is checked for the graph it carries too); None where
    there is nothing to differentiate (not a tensor, no graph). Where the student's function ran: in the sandbox
    for a graded notebook, in the kernel for ``check()``."""
    import torch

    if not (isinstance(value, torch.Tensor) and isinstance(x, torch.Tensor) and value.requires_grad
            and x.requires_grad and value.is_floating_point()):
        return None
    (g,) = torch.autograd.grad(value.sum(), x, allow_unused=True)
    return g


def dump_args(args: tuple, kwargs: dict, callbacks: list, stored: dict | None = None) -> bytes:
    """A pickle of a call's arguments; each function of the check among them is appended to ``callbacks`` and travels
    as its index (the sandbox calls it back through the grader), a random generator as its state, and an object the
    sandbox already holds (``stored``: id -> key, see :func:`worth_storing`) as its key."""
    import torch

    stored = stored or {}

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            if id(obj) in stored:
                return ("stored", stored[id(obj)])
            if isinstance(obj, torch.Generator):
                return ("generator", obj.get_state())
            if _callback(obj):
                callbacks.append(obj)
                return ("callback", len(callbacks) - 1)
            return None

    buf = io.BytesIO()
    Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump((args, kwargs))
    return buf.getvalue()


def worth_storing(value) -> bool:
    """An argument sent once per exercise and then named by a key (a vocabulary, a model, a tokenizer), rather than
    pickled again for each call: what is neither small, nor a tensor, nor a generator, nor a function."""
    import torch

    if value is None or isinstance(value, (bool, int, float, complex, str, bytes, torch.Tensor, torch.Generator)):
        return False
    if _callback(value) or isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type)):
        return False
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        return len(value) >= 64
    return True


def load_args(payload: bytes, make_callback, store: dict | None = None):
    """Inside the sandbox: the arguments :func:`dump_args` sent; ``make_callback(i)`` stands for callback ``i``,
    ``store`` holds the objects sent before."""
    import torch

    class Unpickler(pickle.Unpickler):
        def persistent_load(self, pid):
            kind, value = pid
            if kind == "stored":
                return store[value]
            if kind == "callback":
                return make_callback(value)
            if kind == "generator":
                g = torch.Generator()
                g.set_state(value)
                return g
            raise pickle.UnpicklingError(f"unknown persistent id {kind!r}")

    return Unpickler(io.BytesIO(payload)).load()


def state_after(value):
    """What a call may have changed in an argument, as plain data: a tensor's values, a list's or dict's items, a
    module's trainable flags and mode, a generator's state; None for what the grader does not copy back."""
    import torch

    if isinstance(value, torch.Tensor):
        return {"tensor": value}
    if isinstance(value, torch.Generator):
        return {"generator": value.get_state()}
    if isinstance(value, torch.nn.Module):
        return {"module": [[name, bool(p.requires_grad)] for name, p in value.named_parameters()],
                "training": bool(value.training)}
    if type(value) in (list, dict) and len(value) < 64:  # a larger one is stored and never copied back
        return {type(value).__name__: value}
    return None


def apply_after(original, state) -> None:
    """On the grader's side: make ``original`` what the student's call left it (see :func:`state_after`); a state
    that does not fit (another shape, another kind) is ignored."""
    import torch

    if not isinstance(state, dict) or len(state) not in (1, 2):
        return
    if isinstance(original, torch.Tensor) and isinstance(state.get("tensor"), torch.Tensor):
        new = state["tensor"]
        if new.shape == original.shape and new.dtype == original.dtype and not torch.equal(new, original):
            with torch.no_grad():
                original.copy_(new)
    elif isinstance(original, torch.Generator) and isinstance(state.get("generator"), torch.Tensor):
        try:
            original.set_state(state["generator"].to(torch.uint8))
        except (RuntimeError, TypeError, ValueError):
            pass
    elif isinstance(original, torch.nn.Module) and isinstance(state.get("module"), list):
        params = dict(original.named_parameters())
        for pair in state["module"]:
            if isinstance(pair, list) and len(pair) == 2 and pair[0] in params and type(pair[1]) is bool:
                params[pair[0]].requires_grad_(pair[1])
        if type(state.get("training")) is bool:
            original.train(state["training"])
    elif type(original) is list and type(state.get("list")) is list:
        original[:] = state["list"]
    elif type(original) is dict and type(state.get("dict")) is dict:
        original.clear()
        original.update(state["dict"])


GLOBAL_GENERATORS = {"torch": "torch's global random generator (torch.manual_seed, or a draw without generator=)",
                     "numpy": "numpy's global random generator (np.random.seed, or an np.random draw)",
                     "random": "Python's random module (random.seed, or a random.* draw)"}


@contextlib.contextmanager
def watched_generators():
    """Watch the global random generators a student's function might draw from or reseed (torch's CPU one, numpy's,
    Python's) while the block runs: it starts them from a fresh seed -- a state no earlier call can have left,
    since a function that reseeds from the generator it is given leaves the same state at every call with the same
    seed -- and yields a list, filled on leaving with the names (keys of :data:`GLOBAL_GENERATORS`) of those whose
    state the block changed. On leaving, every generator is put back as it was before the block."""
    import random

    import numpy
    import torch

    saved = (torch.get_rng_state(), numpy.random.get_state(), random.getstate())
    seed = int.from_bytes(os.urandom(8), "little") >> 2
    torch.default_generator.manual_seed(seed)  # the CPU generator only: no CUDA state is created
    numpy.random.seed(seed % 2**32)
    random.seed(seed)
    states = lambda: {"torch": torch.get_rng_state().numpy().tobytes(),  # noqa: E731
                      "numpy": pickle.dumps(numpy.random.get_state()), "random": pickle.dumps(random.getstate())}
    before, changed = states(), []
    try:
        yield changed
        after = states()
        changed.extend(name for name in GLOBAL_GENERATORS if before[name] != after[name])
    finally:
        torch.set_rng_state(saved[0])
        numpy.random.set_state(saved[1])
        random.setstate(saved[2])
