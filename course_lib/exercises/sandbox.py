"""Grading one submission: the trusted side of the boundary, which never runs a line of the student's code.

:func:`grade_file` reads the file (only reads it), copies it into a temporary folder and starts a fresh
interpreter there (:mod:`.worker`) **inside a sandbox** (:mod:`.isolation`: bubblewrap, or a user id of its own).
The worker runs the graded cells. Then this side runs every check itself: the check chooses the inputs, and each
call of a student's function is sent to the worker (:class:`Remote`), which calls it and sends back what it
returned as plain data (:mod:`.wire`: numbers, strings, tensors, never code or objects with behaviour). The
comparison with the reference, the status and the points are decided here, from that data only: nothing the
submission prints, writes or sends can be taken for a result, and points never exceed an exercise's maximum.

If the worker dies or stops answering (``os._exit``, a crash, a loop, memory), the step it was on gets a result
that says so, and a new worker carries on with the rest: a cell that killed it is skipped (its functions are
"never defined"), the exercises already graded are not checked again.

Limits (:class:`Limits`): each exercise may compute for its reference time (the time the notebook's own
solution takes, ``course_lib/data/exercises/reference_times.json``) plus ``margin`` seconds, or a fixed
``time_limit``; each graded cell for the notebook's reference cell time plus twice the margin; memory for
``memory_mb`` more than the worker uses after its imports. Time is computing time (``RLIMIT_CPU``), so a
busy machine does not fail a correct answer; code that waits instead (``time.sleep``, ``input()``) is stopped
once it has waited ``wall_factor`` times the limit (:class:`.clock.IdleClock`). A whole submission gets at most
``submission_s`` seconds of wall-clock time. Memory is ``RLIMIT_AS`` on Linux; what the worker prints is kept
up to 16,000 characters and the rest is read and dropped, so the grader's memory stays bounded.
"""
from __future__ import annotations

import json
import math
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import core, wire
from .clock import IdleClock
from .core import EXERCISES, NOT_ATTEMPTED, WRONG, Result, Stopped, guarded, run_check
from .grading import (Grade, SubmissionError, check_gradable, checked, code_of, defines, exercises_in,
                      notebook_chapter, read_cells, reference_used)
from .isolation import Sandbox, SandboxUnavailable, choose

MAX_RESTARTS = 8
OUTPUT_CAP = 16_000  # characters of what a submission prints that are kept (for the grader's own errors)
DEFAULT_REFERENCE = {"exercise": 1.0, "cells": 5.0}  # for an exercise or notebook not measured yet

__all__ = ["Limits", "grade_file", "SandboxUnavailable", "death_phrase", "cell_death_phrase", "IdleClock"]


def reference_times() -> dict:
    """{"exercises": {name: s}, "cells": {chapter: s}}: seconds of computing of the notebooks' own solutions."""
    from course_lib.paths import data_dir

    path = data_dir("exercises", "reference_times.json")
    return json.loads(path.read_text()) if path.is_file() else {"exercises": {}, "cells": {}}


@dataclass(frozen=True)
class Limits:
    time_limit: float | None = None       # seconds of computing per exercise; None: reference + margin
    margin: float = 5.0
    cell_time_limit: float | None = None  # seconds per graded cell; None: the notebook's reference + 2 × margin
    memory_mb: int = 2048
    wall_factor: float = 3.0              # code that waits is stopped after waiting wall_factor × the limit
    startup_s: float = 300.0              # a fresh interpreter importing torch on a busy machine
    submission_s: float = 600.0           # wall-clock seconds for a whole submission, restarts included
    fork: bool | None = None              # a child per check; None: on Linux
    isolation: str | None = None          # "bwrap", "uid" or "unsafe" (see .isolation); None: the safest available
    references: dict = field(default_factory=reference_times, repr=False)

    def exercise_seconds(self, name: str) -> float:
        if self.time_limit is not None:
            return float(self.time_limit)
        ref = self.references["exercises"].get(name, DEFAULT_REFERENCE["exercise"])
        return float(math.ceil(ref + self.margin))

    def cell_seconds(self, names) -> float:
        if self.cell_time_limit is not None:
            return float(self.cell_time_limit)
        chapters = {EXERCISES[n].module.rpartition(".")[2] for n in names} or {""}
        ref = max(self.references["cells"].get(ch, DEFAULT_REFERENCE["cells"]) for ch in chapters)
        return float(math.ceil(ref + 2 * self.margin))

    @property
    def memory_text(self) -> str:
        return f"{self.memory_mb // 1024} GB" if self.memory_mb % 1024 == 0 else f"{self.memory_mb} MB"

    @property
    def forks(self) -> bool:
        return (sys.platform.startswith("linux") and hasattr(os, "fork")) if self.fork is None else self.fork


def death_phrase(how, seconds: float, idle: float, memory: str, where: str) -> str:
    """How a check ended when its process did not answer: ``how`` is "cpu" (its time limit), "idle" (it waited
    too long), "hard" (the last-resort wall clock), "garbled" (it wrote what is not the grader's protocol on the
    grader's channel) or the process's exit code (-signal when killed)."""
    sig = -how if isinstance(how, int) and how < 0 else None
    if how == "cpu" or sig == getattr(signal, "SIGXCPU", None):
        return f"timed out after {seconds:g} s {where}: is there a loop that never ends?"
    if how == "idle":
        return f"stopped after waiting {idle:g} s {where} without computing (time.sleep, input()?)"
    if how == "hard":
        return f"timed out {where}: still running long after its limit of {seconds:g} s"
    if how == "garbled":
        return (f"the grader could not read the answer {where}: the notebook wrote to the grader's own channel, "
                "which is not allowed")
    if not isinstance(how, int):
        how = "unknown"
    if sig is None:
        return (f"the process exited {where} (exit status {how}): your code must return a value, "
                "not end the process (os._exit, os.kill)")
    if sig == getattr(signal, "SIGKILL", 9):
        return f"the process was stopped by the system {where}, most likely for using more than {memory} of memory"
    return f"the process crashed {where} ({_signal_name(sig)})"


def cell_death_phrase(how, seconds: float, idle: float, memory: str) -> str:
    """The same for a cell, to follow 'the cell that defines `f` …'."""
    sig = -how if isinstance(how, int) and how < 0 else None
    if how in ("cpu", "hard") or sig == getattr(signal, "SIGXCPU", None):
        return f"timed out after {seconds:g} s"
    if how == "idle":
        return f"was stopped after waiting {idle:g} s without computing"
    if how == "garbled":
        return "wrote to the grader's own channel, which is not allowed"
    if sig is None:
        return f"ended the process (exit status {how}: os._exit?)"
    if sig == getattr(signal, "SIGKILL", 9):
        return f"was stopped by the system, most likely for using more than {memory} of memory"
    return f"crashed the process ({_signal_name(sig)})"


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


# ----------------------------------------------------------------------------- one worker

class _Broken(Exception):
    """The worker is gone or unreadable: ``how`` as :func:`death_phrase` takes it."""

    def __init__(self, how):
        super().__init__(str(how))
        self.how = how


def _worker_env() -> dict:
    import course_lib

    keep = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "SYSTEMROOT", "COURSE_LIB_CACHE")
    env = {k: v for k, v in os.environ.items() if k in keep}
    root = str(Path(course_lib.__file__).resolve().parents[1])
    env.update(PYTHONPATH=root, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1", MPLBACKEND="Agg", PYTHONHASHSEED="0",
               PYTHONDONTWRITEBYTECODE="1", PYTHONIOENCODING="utf-8", PYTHONNOUSERSITE="1")
    return env


class Worker:
    """One worker process in its sandbox: frames in, frames out (read by a thread), its output capped."""

    def __init__(self, sandbox: Sandbox, job: dict):
        argv, kwargs = sandbox.popen_args([sys.executable, "-m", "course_lib.exercises.worker"], _worker_env())
        self.sandbox = sandbox
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     **kwargs)
        self.frames: queue.Queue = queue.Queue(maxsize=64)
        self.kept: list[str] = []
        self.threads = [threading.Thread(target=self._read_frames, daemon=True),
                        threading.Thread(target=self._read_output, daemon=True)]
        for t in self.threads:
            t.start()
        self._pid = None
        self.send(job)

    def _read_frames(self) -> None:
        fd = self.proc.stdout.fileno()
        while True:
            try:
                self.frames.put(wire.read_frame(fd))
            except EOFError:
                self.frames.put(None)
                return
            except wire.WireError:
                self.frames.put("garbled")
                return

    def _read_output(self) -> None:
        """Keep the first OUTPUT_CAP characters of what the worker prints; read and drop the rest."""
        fd, size = self.proc.stderr.fileno(), 0
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            if size < OUTPUT_CAP:
                text = chunk.decode("utf-8", "replace")[:OUTPUT_CAP - size]
                self.kept.append(text)
                size += len(text)

    @property
    def pid(self) -> int:
        if self._pid is None:
            self._pid = self.sandbox.worker_pid(self.proc.pid)
        return self._pid

    def send(self, header: dict, payload: bytes = b"") -> None:
        try:
            self.proc.stdin.write(wire.frame(header, payload))
            self.proc.stdin.flush()
        except (OSError, ValueError):  # it died; reading says how
            pass

    def next(self, deadline: float, clock: IdleClock | None = None, idle_limit: float = math.inf):
        """The next frame, or :class:`_Broken` when the worker ended, garbled its channel or ran out of time."""
        while True:
            try:
                item = self.frames.get(timeout=0.25)
            except queue.Empty:
                if clock is not None and clock.update() > idle_limit:
                    raise _Broken("idle") from None
                if time.monotonic() > deadline:
                    raise _Broken("hard") from None
                continue
            if item is None:
                raise _Broken(None)
            if item == "garbled":
                raise _Broken("garbled")
            return item

    def stop(self) -> int:
        """Kill the worker and everything it started; its exit code."""
        try:
            if os.name == "posix":
                os.killpg(self.proc.pid, signal.SIGKILL)
            else:
                self.proc.kill()
        except (ProcessLookupError, PermissionError):
            pass
        code = self.sandbox.exit_code(self.proc.wait())
        self.sandbox.cleanup()
        for t in self.threads:
            t.join(timeout=5)
        with_stdin = self.proc.stdin
        try:
            with_stdin.close()
        except OSError:
            pass
        return code

    @property
    def output(self) -> str:
        return "".join(self.kept)


# ----------------------------------------------------------------------------- a student's function, called remotely

def _rebuilt(reply: dict) -> BaseException:
    """What the student's function raised, rebuilt on this side from its kind, type name and message."""
    message = str(reply.get("message", ""))[:1000]
    kind = reply.get("kind")
    if kind == "not_implemented":
        return NotImplementedError(message)
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


class _Exercise:
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
        except _Broken as e:
            self.broken = e.how if e.how is not None else self.worker.stop()
            raise

    def expect(self, ev: str) -> tuple[dict, bytes]:
        """The next frame that answers the request just sent; the worker's end of the exercise is noted."""
        header, payload = self.next()
        if header.get("ev") == "ended":
            self._ended(header)
            raise _Broken(self.ended)
        if header.get("ev") != ev:
            self.broken = "garbled"
            raise _Broken("garbled")
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

    def call(self, fn: str, args: tuple, kwargs: dict):
        if self.broken is not None or self.over:
            raise self.stopped(self.broken if self.broken is not None else self.ended, fn)
        import torch

        for value in [*args, *kwargs.values()]:
            if id(value) not in self.stored and wire.worth_storing(value):
                found: list = []
                payload = wire.dump_args((value,), {}, found, self.stored)
                if not found:  # (an object holding a function of the check is sent with each call)
                    self.stored[id(value)] = len(self.keep)
                    self.keep.append(value)
                    self.worker.send({"op": "store", "key": self.stored[id(value)]}, payload)
        callbacks: list = []
        self.worker.send({"op": "call", "fn": fn, "grad": torch.is_grad_enabled()},
                         wire.dump_args(args, kwargs, callbacks, self.stored))
        try:
            while True:
                header, payload = self.next()
                ev = header.get("ev")
                if ev == "return":
                    value, after = _pair(wire.decode(header, payload))
                    _apply_after(args, kwargs, after)
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
                    raise _Broken(self.ended)
                raise wire.WireError(f"an unexpected message {str(ev)[:40]!r}")
        except wire.WireError:
            self.broken = "garbled"
            raise self.stopped("garbled", fn) from None
        except _Broken as e:
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
        self.worker.send({"op": "callback_return"}, wire.dump_args((value,), {}, []))

    def get(self, name: str):
        self.worker.send({"op": "get", "name": name})
        try:
            return wire.decode(*self.expect("value"))
        except wire.WireError:
            self.broken = "garbled"
            raise self.stopped("garbled", None) from None
        except _Broken as e:
            raise self.stopped(e.how if e.how is not None else self.broken, None) from None

    def probe(self, names) -> dict:
        self.worker.send({"op": "probe", "names": list(names)})
        header, _ = self.expect("probe")
        info, callables = header.get("names"), header.get("callables")
        if not (isinstance(info, dict) and all(isinstance(info.get(n), dict) for n in names)):
            self.broken = "garbled"
            raise _Broken("garbled")
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
        except _Broken:
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
            wire.apply_after(original, state)
    if isinstance(kw_states, dict):
        for k, state in kw_states.items():
            if k in kwargs:
                wire.apply_after(kwargs[k], state)


class Remote:
    """Stands for a student's function in the check: calling it calls the function in the sandbox."""

    def __init__(self, exercise: _Exercise, name: str):
        self.exercise, self.__name__, self.__qualname__ = exercise, name, name

    def __call__(self, *args, **kwargs):
        return self.exercise.call(self.__name__, args, kwargs)


# ----------------------------------------------------------------------------- one submission

class _Run:
    """What the grader knows about a submission across workers."""

    def __init__(self, cells, names, limits: Limits, filename: str):
        self.cells, self.limits, self.order = cells, limits, list(names)
        self.skip: dict[str, str] = {}         # cell index -> why it is not run again
        self.failed: dict[str, str] = {}       # cell index -> the message template of its exercises
        self.results: dict[str, Result] = {}
        self.cpu: dict[str, float] = {}
        self.job = dict(cells=[[c.index, c.source] for c in cells if c.graded], code=code_of(cells), filename=filename,
                        cell_cpu=limits.cell_seconds(names), memory_bytes=limits.memory_mb * 2**20,
                        memory_text=limits.memory_text, exercise_cpu={n: limits.exercise_seconds(n) for n in EXERCISES},
                        fork=limits.forks, wall_factor=limits.wall_factor)
        self.output = ""
        self.deadline = time.monotonic() + limits.submission_s

    def job_now(self) -> dict:
        return {**self.job, "skip": dict(self.skip)}


def _run_cells(run: _Run, worker: Worker) -> str:
    """The cells, in the worker: 'serving', 'crashed' (a cell was charged with it; go on) or 'failed' (no start)."""
    limits, job = run.limits, run.job
    ready, cell, clock, idle_limit = False, None, None, math.inf
    deadline = min(time.monotonic() + limits.startup_s, run.deadline)
    try:
        while True:
            header, _ = worker.next(deadline, clock, idle_limit)
            ev = header.get("ev")
            now = time.monotonic()
            if ev in ("ready", "cell_done"):
                ready, cell, clock = True, None, None
                deadline = min(now + 120, run.deadline)
            if ev == "cell" and type(header.get("i")) is int:
                cell, clock = str(header["i"]), IdleClock(worker.pid)
                idle_limit = limits.wall_factor * job["cell_cpu"]
                deadline = min(now + 20 * job["cell_cpu"] + 120, run.deadline)
            elif ev == "cell_failed" and type(header.get("i")) is int and isinstance(header.get("template"), str):
                run.failed[str(header["i"])] = header["template"][:2000]
            elif ev == "cells_cpu" and type(header.get("cpu")) in (int, float):
                run.cpu["cells"] = float(header["cpu"])
            elif ev == "found":
                names = header.get("names")
                if isinstance(names, list):
                    run.order = [n for n in dict.fromkeys(x for x in names if isinstance(x, str)) if n in EXERCISES]
                return "serving"
    except _Broken as e:
        how = e.how if e.how is not None else worker.stop()
        if cell is not None:
            phrase = cell_death_phrase(how, job["cell_cpu"], idle_limit, limits.memory_text)
            run.skip[cell] = phrase
            run.failed[cell] = f"the cell that defines `{{n}}` {phrase}, so `{{n}}` was never defined"
            return "crashed"
        return "crashed" if ready else "failed"


def _not_defined(n: str, callables: list[str]) -> str:
    import difflib

    message = f"`{n}` is not defined: run the cell that defines it (and keep the name `{n}`)"
    close = difflib.get_close_matches(n, callables, n=1, cutoff=0.75)
    return message + (f"; your notebook defines `{close[0]}`: did you rename it?" if close else "")


def _check(run: _Run, worker: Worker, name: str) -> tuple[Result, bool]:
    """Check exercise ``name`` on this side, calling the worker for the student's functions; (result, whether the
    worker can go on)."""
    ex, limits = EXERCISES[name], run.limits
    seconds = limits.exercise_seconds(name)
    worker.send({"op": "exercise", "name": name})
    remote = _Exercise(worker, name, seconds, limits, min(time.monotonic() + 20 * seconds + 180, run.deadline))
    try:
        try:
            found = remote.probe(ex.needs)
        except _Broken:
            raise remote.stopped(remote.broken if remote.broken is not None else remote.ended, None) from None
        result = _pre_check(run, ex, found)
        if result is None:
            if ex.kind == "question":
                fns = {n: remote.get(n) for n in ex.needs}
            else:
                fns = {n: guarded(Remote(remote, n), n) for n in ex.needs}
            result = run_check(ex, fns)
    except Stopped as e:
        result = Result(name, WRONG, str(e))
    remote.finish()
    run.cpu[name] = remote.cpu
    if result.status == WRONG and remote.broken is not None and remote.broken != "garbled" and not result.message:
        result = Result(name, WRONG, str(remote.stopped(remote.broken, None)))
    return result, remote.broken is None


def _pre_check(run: _Run, ex, found: dict) -> Result | None:
    """A result decided without calling anything: a function not defined (its cell failed, or it is missing), not a
    function, course_lib's own, or written by calling the library's reference for it."""
    info = found["names"]
    for n in ex.needs:
        if not info[n].get("defined"):
            for cell in run.cells:
                if str(cell.index) in run.failed and defines(cell.source, n):
                    return Result(ex.name, WRONG, run.failed[str(cell.index)].format(n=n))
            return Result(ex.name, NOT_ATTEMPTED, _not_defined(n, found["callables"]))
        if ex.kind != "function":
            continue
        if not info[n].get("callable"):
            return Result(ex.name, WRONG, f"`{n}` should be a function, but it is a {str(info[n].get('type'))[:60]}")
        module = str(info[n].get("module", ""))
        if module == "course_lib" or module.startswith("course_lib."):
            return Result(ex.name, WRONG, f"`{n}` is course_lib's own `{module}.{str(info[n].get('qualname', n))}`, "
                                          "not your code: write the function yourself")
    used = reference_used(ex, run.cells)
    if used is not None:
        return Result(ex.name, WRONG, used)
    return None


def grade_file(path: str | Path, limits: Limits | None = None) -> Grade:
    """Grade the notebook at ``path`` in a sandboxed process; the file itself is only read.
    :class:`SandboxUnavailable` when this machine offers no sandbox of the kind ``limits.isolation`` asks for."""
    path, limits = Path(path), limits or Limits()
    mode = choose(limits.isolation)
    try:
        cells = read_cells(path)
        names = check_gradable(cells)
    except SubmissionError as e:
        return Grade(path, error=str(e))
    except OSError as e:
        return Grade(path, error=f"the file could not be read ({e.strerror or e})")
    core.SANDBOX["memory"] = limits.memory_text
    run = _Run(cells, names, limits, path.name)
    with tempfile.TemporaryDirectory(prefix="course-grade-") as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        shutil.copyfile(path, work / path.name)  # its own copy: what the code writes or deletes stays here
        sandbox = Sandbox(mode, work)
        tries, done = 0, False
        while not done and tries <= MAX_RESTARTS and time.monotonic() < run.deadline:
            tries += 1
            worker = Worker(sandbox, run.job_now())
            try:
                outcome = _run_cells(run, worker)
                if outcome == "failed":
                    run.output = worker.output
                    tail = run.output.strip().splitlines()[-3:]
                    return Grade(path, error="the grader could not start a Python process to grade this notebook "
                                             "(a problem of the grading machine, not of the notebook): "
                                             + " / ".join(tail))
                if outcome == "serving":
                    done = True
                    for name in [n for n in run.order if n not in run.results]:
                        run.results[name], healthy = _check(run, worker, name)
                        if not healthy:
                            done = False
                            break
                    if done:
                        worker.send({"op": "bye"})
            finally:
                worker.stop()
                run.output = worker.output
    run.order = run.order or exercises_in(code_of(cells))
    why = (f"the notebook stopped the grader {MAX_RESTARTS + 1} times" if tries > MAX_RESTARTS
           else f"the notebook used up the {limits.submission_s:g} s a submission may take")
    results = [run.results.get(n) or Result(n, WRONG, f"not graded: {why}") for n in run.order]
    return checked(Grade(path, results=results, cpu=dict(run.cpu), chapter=notebook_chapter(cells)))
