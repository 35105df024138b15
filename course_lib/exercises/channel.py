"""The worker process seen from the grader: started in its sandbox, its frames read, its output capped.

:class:`Worker` reads the worker's frames in a thread (sizes capped by :mod:`.wire`) and its output (the first
16,000 characters kept, the rest read and dropped, so that a submission printing gigabytes costs no memory).
:class:`Broken` says the worker ended, garbled its channel or ran out of time.
"""
from __future__ import annotations

import math
import os
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path

from . import wire
from .clock import IdleClock
from .isolation import Sandbox, worker_python

OUTPUT_CAP = 16_000  # characters of what a submission prints that are kept (for the grader's own errors)


class Broken(Exception):
    """The worker is gone or unreadable: ``how`` as :func:`death_phrase` takes it."""

    def __init__(self, how):
        super().__init__(str(how))
        self.how = how


def _worker_env() -> dict:
    import course_lib

    keep = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "SYSTEMROOT", "COURSE_LIB_CACHE")
    env = {k: v for k, v in os.environ.items() if k in keep}
    root = str(Path(course_lib.__file__).resolve().parents[1])
    env.update(PYTHONPATH=os.pathsep.join([root, *worker_python()[1]]), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1", MPLBACKEND="Agg", PYTHONHASHSEED="0",
               PYTHONDONTWRITEBYTECODE="1", PYTHONIOENCODING="utf-8", PYTHONNOUSERSITE="1")
    return env


class Worker:
    """One worker process in its sandbox: frames in, frames out (read by a thread), its output capped."""

    def __init__(self, sandbox: Sandbox, job: dict):
        argv, kwargs = sandbox.popen_args([worker_python()[0], "-m", "course_lib.exercises.worker"], _worker_env())
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
        """The next frame, or :class:`Broken` when the worker ended, garbled its channel or ran out of time."""
        while True:
            try:
                item = self.frames.get(timeout=0.25)
            except queue.Empty:
                if clock is not None and clock.update() > idle_limit:
                    raise Broken("idle") from None
                if time.monotonic() > deadline:
                    raise Broken("hard") from None
                continue
            if item is None:
                raise Broken(None)
            if item == "garbled":
                raise Broken("garbled")
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
