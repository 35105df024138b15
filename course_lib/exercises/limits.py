"""The limits a submission is graded under, and how a process that broke one is described to the student."""
from __future__ import annotations

import json
import math
import os
import signal
import sys
from dataclasses import dataclass, field

from .core import EXERCISES

# processes and threads of one submission at once: an honest worker and its check have about 10 (torch's pools are
# one thread each there, OMP_NUM_THREADS=1), but a pool may still grow with the machine's cores
MAX_TASKS = max(128, 4 * (os.cpu_count() or 1))
# files, pipes and sockets open at once: in one process (RLIMIT_NOFILE, set by the worker), and in all the processes
# of one submission together (the grader's watch): an honest worker holds about 20, and its forked check a copy of
# them; each socket or pipe may hold about half a megabyte of kernel memory that no process's memory shows
OPEN_FILES = 1024
MAX_FILES = 2 * OPEN_FILES  # a worker at its limit and its check
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
    def total_bytes(self) -> int:
        """The memory all the processes of one submission may hold together: twice what one may (:mod:`.watch`)."""
        return 2 * self.memory_mb * 2**20

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
    if how in ("memory", "tasks", "files"):
        return f"stopped {where}: {_together(how, memory)}"
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
    if how in ("memory", "tasks", "files"):
        return f"was stopped: {_together(how, memory)}"
    if how == "garbled":
        return "wrote to the grader's own channel, which is not allowed"
    if sig is None:
        return f"ended the process (exit status {how}: os._exit?)"
    if sig == getattr(signal, "SIGKILL", 9):
        return f"was stopped by the system, most likely for using more than {memory} of memory"
    return f"crashed the process ({_signal_name(sig)})"


def _together(how: str, memory: str) -> str:
    if how == "memory":
        return f"its processes together used more than twice the memory one process may use ({memory})"
    if how == "files":
        return f"its processes held more than {MAX_FILES} files, pipes and sockets open at once"
    return f"it started more than {MAX_TASKS} processes and threads at once"


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"
