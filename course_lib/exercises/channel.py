"""The worker process seen from the grader: started in its sandbox, its frames read, its output capped.

:class:`Worker` reads the worker's frames in a thread (sizes capped by :mod:`.wire`, at most FRAMES_AHEAD of them
held unread: a worker sending frames no one asked for waits, and costs no memory) and its output (the first
16,000 characters kept, the rest read and dropped, so that a submission printing gigabytes costs no memory). Writing
to the worker has a deadline too (SEND_TIMEOUT): a worker that stops reading its input is stopped, never waited
for. :class:`Broken` says the worker ended, garbled its channel or ran out of time.
"""
from __future__ import annotations

import math
import os
import queue
import select
import signal
import subprocess
import threading
import time
from pathlib import Path

from . import wire
from .clock import IdleClock
from .isolation import Sandbox, worker_python
from .limits import MAX_FILES, MAX_TASKS
from .watch import Watch

OUTPUT_CAP = 16_000  # characters of what a submission prints that are kept (for the grader's own errors)
FRAMES_AHEAD = 2     # frames read but not yet taken: the grader asks, then reads one answer (and an "ended")
SEND_TIMEOUT = 120.0  # seconds a request may take to be read by an honest worker (a model: tens of MB, on a busy machine)


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

    def __init__(self, sandbox: Sandbox, job: dict, max_bytes: int = 4 * 2**30):
        """``max_bytes``: the memory all the processes of the submission may hold together (:mod:`.watch`)."""
        argv, kwargs = sandbox.popen_args([worker_python()[0], "-m", "course_lib.exercises.worker"], _worker_env())
        self.sandbox = sandbox
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     **kwargs)
        self.frames: queue.Queue = queue.Queue(maxsize=FRAMES_AHEAD)
        self.closed = threading.Event()  # stop() was called: the reader drops what it reads and ends
        self.stalled = False  # a request could not be written within SEND_TIMEOUT: the worker stopped reading
        self.kept: list[str] = []
        self.threads = [threading.Thread(target=self._read_frames, daemon=True),
                        threading.Thread(target=self._read_output, daemon=True)]
        for t in self.threads:
            t.start()
        self._pid = None
        self.watch = Watch(lambda: sandbox.pids(self.proc.pid), MAX_TASKS, max_bytes, lambda _: self._kill(),
                           max_files=MAX_FILES)
        self.send(job)

    def _put(self, item) -> bool:
        """Hand ``item`` to the grader, waiting while FRAMES_AHEAD are unread; False once the worker is stopped."""
        while not self.closed.is_set():
            try:
                self.frames.put(item, timeout=0.25)
                return True
            except queue.Full:
                continue
        return False

    def _read_frames(self) -> None:
        fd = self.proc.stdout.fileno()
        while True:
            try:
                item = wire.read_frame(fd)
            except EOFError:
                item = None
            except wire.WireError:
                item = "garbled"
            if not self._put(item) or item is None or item == "garbled":
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

    def suspended(self) -> bool:
        """Whether the worker has been stopped by a signal (SIGSTOP from one of its children): it will never answer."""
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as f:
                return f.read().rsplit(b")", 1)[1].split()[0] in (b"T", b"t")
        except (OSError, IndexError, ValueError):
            return False

    def send(self, header: dict, payload: bytes = b"", timeout: float | None = None) -> None:
        """Write one request. A worker that has not read it within ``timeout`` (SEND_TIMEOUT) seconds has stopped
        reading: it is stopped, and the next read says 'idle'. A worker that died: the next read says how."""
        if self.stalled:
            return
        data, fd = memoryview(wire.frame(header, payload)), None
        deadline = time.monotonic() + (SEND_TIMEOUT if timeout is None else timeout)
        try:
            fd = self.proc.stdin.fileno()
            os.set_blocking(fd, False)
            while data:
                left = deadline - time.monotonic()
                if left <= 0:
                    self.stalled = True
                    self._kill()
                    return
                if not select.select([], [fd], [], min(left, 0.25))[1]:
                    continue
                try:
                    data = data[os.write(fd, data[:1 << 16]):]
                except BlockingIOError:
                    continue
        except (OSError, ValueError):  # it died; reading says how
            pass

    def next(self, deadline: float, clock: IdleClock | None = None, idle_limit: float = math.inf):
        """The next frame, or :class:`Broken` when the worker ended, garbled its channel or ran out of time."""
        while True:
            if self.stalled:
                raise Broken("idle")
            if self.watch.tripped:
                raise Broken(self.watch.tripped)
            try:
                item = self.frames.get(timeout=0.25)
            except queue.Empty:
                if clock is not None and clock.update() > idle_limit:
                    raise Broken("idle") from None
                if self.suspended():
                    raise Broken("idle") from None
                if time.monotonic() > deadline:
                    raise Broken("hard") from None
                continue
            if item is None:
                raise Broken(self.watch.tripped)  # None: it ended (how: stop() says)
            if item == "garbled":
                raise Broken("garbled")
            return item

    def _kill(self) -> None:
        try:
            if os.name == "posix":
                os.killpg(self.proc.pid, signal.SIGKILL)
            else:
                self.proc.kill()
        except (ProcessLookupError, PermissionError):
            pass

    def stop(self) -> int:
        """Kill the worker and everything it started; its exit code. The frames not taken are dropped."""
        self.watch.close()
        self._kill()
        code = self.sandbox.exit_code(self.proc.wait())
        self.sandbox.cleanup()
        self.closed.set()  # the reader stops handing frames on (within 0.25 s) and ends
        for t in self.threads:
            t.join(timeout=5)
        while True:  # and what it had handed on goes
            try:
                self.frames.get_nowait()
            except queue.Empty:
                break
        with_stdin = self.proc.stdin
        try:
            with_stdin.close()
        except OSError:
            pass
        return code

    @property
    def output(self) -> str:
        return "".join(self.kept)
