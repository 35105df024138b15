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

import dataclasses
import json
import math
import re
import shutil
import tempfile
import time
from pathlib import Path

from . import core, wire
from .clock import IdleClock
from .core import EXERCISES, NOT_ATTEMPTED, WRONG, Result, Stopped, guarded, run_check
from .grading import Grade, SubmissionError, check_gradable, checked, code_of, defines, exercises_in, notebook_chapter, read_cells
from .isolation import Sandbox, SandboxUnavailable, choose
from .limits import MAX_TASKS, Limits, cell_death_phrase, death_phrase
from .references import is_library, reference_used
from .channel import Broken, Worker
from .remote import Exercise, Remote
from .untrusted import clean_grade

MAX_RESTARTS = 8

__all__ = ["Limits", "grade_file", "SandboxUnavailable", "death_phrase", "cell_death_phrase", "IdleClock"]


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
    except Broken as e:
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
    remote = Exercise(worker, name, seconds, limits, min(time.monotonic() + 20 * seconds + 180, run.deadline))
    try:
        try:
            found = remote.probe(ex.needs)
        except Broken:
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


def _named(template: str, n: str) -> str:
    """The message of a failed cell for the function ``n``: the template (:func:`.worker.run_cells`, or
    :func:`_run_cells`) holds the name's place as ``{n}`` first and last, around the cell's error, which is the
    student's text: braces there are text, never a format field (``str.format`` once ran ``{n:>200000000}``)."""
    head, found, rest = template.partition("{n}")
    if not found:
        return template
    middle, found, tail = rest.rpartition("{n}")
    return head + n + (middle + n + tail if found else rest)


def _pre_check(run: _Run, ex, found: dict) -> Result | None:
    """A result decided without calling anything: a function not defined (its cell failed, or it is missing), not a
    function, course_lib's own, or written by calling the library's reference for it."""
    info = found["names"]
    for n in ex.needs:
        if not info[n].get("defined"):
            for cell in run.cells:
                if str(cell.index) in run.failed and defines(cell.source, n):
                    return Result(ex.name, WRONG, _named(run.failed[str(cell.index)], n))
            return Result(ex.name, NOT_ATTEMPTED, _not_defined(n, found["callables"]))
        if ex.kind != "function":
            continue
        if not info[n].get("callable"):
            return Result(ex.name, WRONG, f"`{n}` should be a function, but it is a {str(info[n].get('type'))[:60]}")
        module = str(info[n].get("module", ""))
        if module == "course_lib" or module.startswith("course_lib."):
            return Result(ex.name, WRONG, is_library(n, module, str(info[n].get("qualname", n))))
    used = reference_used(ex, run.cells)
    if used is not None:
        return Result(ex.name, WRONG, used)
    return None


def grade_file(path: str | Path, limits: Limits | None = None) -> Grade:
    """Grade the notebook at ``path`` in a sandboxed process; the file itself is only read.
    :class:`SandboxUnavailable` when this machine offers no sandbox of the kind ``limits.isolation`` asks for.
    Every message and error is plain text of at most 2,000 characters (:func:`.untrusted.clean_grade`): what came
    from the submission (an exception's message, a qualname, a cell's error) can be printed and written as it is."""
    return clean_grade(_grade_file(path, limits))


def _grade_file(path: str | Path, limits: Limits | None = None) -> Grade:
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
    sent = len(json.dumps(run.job_now(), ensure_ascii=True, allow_nan=True))  # what wire.frame writes
    if sent > wire.MAX_HEADER:  # the worker could not read its job: the notebook's doing, not the machine's
        return Grade(path, error=f"the notebook's code takes {sent / 2**20:.0f} MB to send to the grader's sandbox, "
                                 f"more than it reads ({wire.MAX_HEADER // 2**20} MB): remove the data pasted into "
                                 "its cells (read it from a file instead), save it and hand it in again")
    with tempfile.TemporaryDirectory(prefix="course-grade-") as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        shutil.copyfile(path, work / path.name)  # its own copy: what the code writes or deletes stays here
        sandbox = Sandbox(mode, work)
        tries, done = 0, False
        while not done and tries <= MAX_RESTARTS and time.monotonic() < run.deadline:
            tries += 1
            # the kernel's ceiling on tasks sits above the watch's, so that a burst of forks stops there and the
            # watch, seeing more than MAX_TASKS, stops the submission with its message
            worker = Worker(sandbox, {**run.job_now(), "max_tasks": sandbox.max_tasks(2 * MAX_TASKS)}, limits.total_bytes)
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
    results = [_untagged_hint(run.results.get(n), cells) or Result(n, WRONG, f"not graded: {why}")
               for n in run.order]
    return checked(Grade(path, results=results, cpu=dict(run.cpu), chapter=notebook_chapter(cells)))


_NAME_ERROR = re.compile(r"raised NameError: name '(\w+)' is not defined")


def _untagged_hint(result: Result | None, cells) -> Result | None:
    """A NameError for a name that only an untagged cell defines (a helper written in a new cell): say so."""
    m = _NAME_ERROR.search(result.message) if result is not None and result.status == WRONG else None
    if m is None or any(c.graded and defines(c.source, m.group(1)) for c in cells):
        return result
    if not any(c.code and not c.graded and defines(c.source, m.group(1)) for c in cells):
        return result
    return dataclasses.replace(result, message=result.message + f" (`{m.group(1)}` is defined in a cell that is not "
                               "tagged `setup` or `exercise`, and only those are graded: define it in the exercise's "
                               "cell)")
