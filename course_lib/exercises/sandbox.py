"""Grading one submission in its own process, with time and memory limits: the supervisor.

:func:`grade_file` reads the file (only reads it), copies it into a temporary folder and starts a fresh
interpreter there (:mod:`.worker`) that runs the graded cells and then each exercise's check. The worker
reports each step; if it dies or stops answering (``os._exit``, a crash, a loop, memory), the step it was on
gets a result that says so, and a new worker carries on with the rest: the cell that killed it is skipped
(its functions are "never defined"), the exercises already graded are not checked again.

Limits (:class:`Limits`): each exercise may compute for its reference time (the time the notebook's own
solution takes, ``course_lib/data/exercises/reference_times.json``) plus ``margin`` seconds, or a fixed
``time_limit``; each graded cell for the notebook's reference cell time plus twice the margin; memory for
``memory_mb`` more than the worker uses after its imports. Time is computing time (``RLIMIT_CPU``), so a
busy machine does not fail a correct answer; code that waits instead (``time.sleep``, ``input()``) is stopped
once it has waited ``wall_factor`` times the limit (:class:`IdleClock`). Memory is ``RLIMIT_AS`` on Linux.
Elsewhere: macOS does not enforce ``RLIMIT_AS`` (no memory limit; the time limits hold) and has no
``/proc`` (waiting is wall-clock time); Windows has neither rlimits nor fork, so only wall-clock limits
hold and each crash costs a restart of the worker.
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

from .core import EXERCISES, WRONG, Result
from .grading import Grade, SubmissionError, check_gradable, checked, code_of, notebook_chapter, read_cells

MAX_RESTARTS = 8
OUTPUT_CAP = 16_000  # characters of what a submission prints that are kept (for the grader's own errors)
DEFAULT_REFERENCE = {"exercise": 1.0, "cells": 5.0}  # for an exercise or notebook not measured yet


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
    fork: bool | None = None              # a child per check; None: on Linux
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
    """How a check ended when its process did not report: ``how`` is "cpu" (its time limit), "idle" (it waited
    too long), "hard" (the last-resort wall clock) or the process's exit code (-signal when killed)."""
    sig = -how if isinstance(how, int) and how < 0 else None
    if how == "cpu" or sig == getattr(signal, "SIGXCPU", None):
        return f"timed out after {seconds:g} s {where}: is there a loop that never ends?"
    if how == "idle":
        return f"stopped after waiting {idle:g} s {where} without computing (time.sleep, input()?)"
    if how == "hard":
        return f"timed out {where}: still running long after its limit of {seconds:g} s"
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
    if sig is None:
        return f"ended the process (exit status {how}: os._exit?)"
    if sig == getattr(signal, "SIGKILL", 9):
        return f"was stopped by the system, most likely for using more than {memory} of memory"
    return f"crashed the process ({_signal_name(sig)})"


class IdleClock:
    """Seconds a process has spent waiting: neither computing nor ready to compute (Linux: its state and CPU time
    in /proc; elsewhere every second counts). A busy machine slows a computation but adds no waiting."""

    def __init__(self, pid: int):
        self.path, self.idle, self.t = f"/proc/{pid}/stat", 0.0, time.monotonic()
        self.last = self._read()
        self.exact = self.last is not None

    def _read(self):
        try:
            with open(self.path) as f:
                fields = f.read().rpartition(")")[2].split()
            return fields[0], int(fields[11]) + int(fields[12])  # state, utime + stime in ticks
        except (OSError, IndexError, ValueError):
            return None

    def update(self) -> float:
        now, current = time.monotonic(), self._read()
        waited = now - self.t
        if self.exact:
            busy = current is None or self.last is None or current[1] != self.last[1] or current[0] == "R"
            waited = 0.0 if busy else waited
        self.idle += waited
        self.t, self.last = now, current
        return self.idle


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


class _Run:
    """What the supervisor knows about a submission across workers."""

    def __init__(self, cells, names, limits: Limits, filename: str):
        self.limits, self.order = limits, list(names)
        self.skip: dict[str, str] = {}
        self.results: dict[str, Result] = {}
        self.cpu: dict[str, float] = {}
        cell_s = limits.cell_seconds(names)
        self.job = dict(cells=[[c.index, c.source] for c in cells if c.graded], code=code_of(cells), filename=filename,
                        cell_cpu=cell_s, memory_bytes=limits.memory_mb * 2**20, memory_text=limits.memory_text,
                        exercise_cpu={n: limits.exercise_seconds(n) for n in EXERCISES}, fork=limits.forks,
                        wall_factor=limits.wall_factor)
        self.output = ""

    def job_text(self) -> str:
        return json.dumps({**self.job, "skip": self.skip, "done": sorted(self.results)})


def _worker_env() -> dict:
    import course_lib

    env = dict(os.environ)
    root = str(Path(course_lib.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false",
               HF_HUB_OFFLINE="1", MPLBACKEND="Agg", PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1",
               PYTHONIOENCODING="utf-8")
    return env


def _pump(stream, sink) -> None:
    for line in iter(stream.readline, b""):
        sink(line)
    sink(None)


def _start(run: _Run, cwd: str):
    proc = subprocess.Popen([sys.executable, "-m", "course_lib.exercises.worker"], cwd=cwd, env=_worker_env(),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=(os.name == "posix"))
    events: queue.Queue = queue.Queue()
    kept: list[str] = []

    def keep(line):
        if line is not None and sum(map(len, kept)) < OUTPUT_CAP:
            kept.append(line.decode("utf-8", "replace")[:OUTPUT_CAP])
    threads = [threading.Thread(target=_pump, args=(proc.stdout, events.put), daemon=True),
               threading.Thread(target=_pump, args=(proc.stderr, keep), daemon=True)]
    for t in threads:
        t.start()
    try:
        proc.stdin.write(run.job_text().encode())
        proc.stdin.close()
    except OSError:  # it died at once; the event loop finds out
        pass
    return proc, events, kept, threads


def _stop(proc) -> int:
    """Kill the worker and everything it started; its exit code."""
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError):
        pass
    return proc.wait()


def _attempt(run: _Run, cwd: str) -> str:
    """One worker: 'done', 'crashed' (a step was charged with it; go on) or 'failed' (it could not start)."""
    limits, job = run.limits, run.job
    proc, events, kept, threads = _start(run, cwd)
    phase, inside, ready, how, outcome = None, None, False, None, "crashed"
    deadline, clock, idle_limit, polled = time.monotonic() + limits.startup_s, None, math.inf, 0.0
    while True:
        try:
            line = events.get(timeout=0.25)
        except queue.Empty:
            line = ""
        now = time.monotonic()
        if now - polled >= 0.25:  # the clocks, at most four times a second
            polled = now
            if clock is not None and clock.update() > idle_limit:
                how = "idle"
                break
            if now > deadline:
                how = "hard" if ready else "startup"
                break
        if line is None:
            break
        try:
            event = json.loads(line)
            kind = event["ev"]
        except (ValueError, TypeError, KeyError, RecursionError):  # RecursionError: "[[[[…" thousands deep
            continue  # not ours (a student writing to our pipe): ignored
        if kind in ("ready", "cell_done", "result"):
            ready, phase, clock, deadline = True, None, None, now + 120
        if kind == "cell":
            phase, clock = ("cell", str(event["i"])), IdleClock(proc.pid)
            idle_limit, deadline = limits.wall_factor * job["cell_cpu"], now + 20 * job["cell_cpu"] + 120
        elif kind == "check":
            seconds = job["exercise_cpu"][event["name"]]
            phase, inside, deadline = ("check", event["name"]), None, now + 20 * seconds + 180
            clock, idle_limit = (None, math.inf) if job["fork"] else (IdleClock(proc.pid), limits.wall_factor * seconds)
        elif kind == "in":
            inside = event.get("fn")
        elif kind == "out":
            inside = None
        elif kind == "found":
            run.order = [n for n in event["names"] if n in EXERCISES]
        elif kind == "cells_cpu":
            run.cpu["cells"] = event["cpu"]
        elif kind == "result" and event.get("name") in EXERCISES:
            run.results[event["name"]] = Result(event["name"], event["status"], event.get("message", ""),
                                                credit=event.get("credit"))
            run.cpu[event["name"]] = event.get("cpu", 0)
        elif kind == "done":
            outcome = "done"
            break
    code = _stop(proc)
    for t in threads:
        t.join(timeout=5)
    run.output = "".join(kept)
    if outcome == "done":
        return outcome
    how = how or code
    if phase is not None and phase[0] == "cell":
        run.skip[phase[1]] = cell_death_phrase(how, job["cell_cpu"], idle_limit, limits.memory_text)
    elif phase is not None:
        where = f"during `{inside}`" if inside else "while checking your answer"
        message = death_phrase(how, job["exercise_cpu"][phase[1]], idle_limit, limits.memory_text, where)
        run.results[phase[1]] = Result(phase[1], WRONG, message)
    elif not ready:
        return "failed"
    return outcome


def grade_file(path: str | Path, limits: Limits | None = None) -> Grade:
    """Grade the notebook at ``path`` in a separate process; the file itself is only read."""
    path, limits = Path(path), limits or Limits()
    try:
        cells = read_cells(path)
        names = check_gradable(cells)
    except SubmissionError as e:
        return Grade(path, error=str(e))
    except OSError as e:
        return Grade(path, error=f"the file could not be read ({e.strerror or e})")
    run = _Run(cells, names, limits, path.name)
    with tempfile.TemporaryDirectory(prefix="course-grade-") as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        shutil.copyfile(path, work / path.name)  # its own copy: what the code writes or deletes stays here
        outcome, tries = "crashed", 0
        while outcome != "done" and tries <= MAX_RESTARTS:
            outcome, tries = _attempt(run, str(work)), tries + 1
            if outcome == "failed":
                tail = run.output.strip().splitlines()[-3:]
                return Grade(path, error="the grader could not start a Python process to grade this notebook "
                                         "(a problem of the grading machine, not of the notebook): " + " / ".join(tail))
    results = [run.results.get(n) or Result(n, WRONG, "not graded: the notebook stopped the grader "
                                                      f"{MAX_RESTARTS + 1} times") for n in run.order]
    return checked(Grade(path, results=results, cpu=dict(run.cpu), chapter=notebook_chapter(cells)))
