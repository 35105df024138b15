"""What all the processes of one submission hold together, watched from the grader (Linux: /proc).

``RLIMIT_AS`` caps each process of a submission (:mod:`.worker`), not their sum: five children of 1.5 GB each pass
it, and so do thousands of small ones (a fork bomb that would use up the machine's process ids). :class:`Watch`
looks every tenth of a second at the worker and everything it started -- the processes of the submission's own user
id, or the descendants of the sandbox's first process (under bubblewrap an orphan is adopted inside the sandbox) --
and stops the submission when their tasks (processes and threads) pass ``max_tasks``, their memory passes
``max_bytes`` or the files, pipes and sockets they hold open pass ``max_files``: a socket or a pipe holds up to
about half a megabyte of the kernel's memory that no process's memory shows (500 socketpairs filled by one process
of 11 MB took 238 MB of the machine), so their number bounds it.

Memory is what each process holds of its own (``RssAnon``), what it maps of shared memory (``RssShmem``: a memfd,
a SysV segment, /dev/shm) and the size of every memfd it holds open without mapping it (each file counted once).
A page a forked child still shares with its parent counts in both: the honest worker's forked check can hold at
most twice what one process may (its ``RLIMIT_AS``), which is the default ``max_bytes``. Every number comes from
one small file per process (no page-table walk, which a submission could make slow and the watch blind).
Not counted: files in the sandbox's in-memory folders (their sizes are capped by :mod:`.isolation`) and SysV
segments no process maps (SysV IPC is closed to a submission: :mod:`.sysv`).
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (the children of each of their threads), as far as /proc shows them."""
    seen, order, stack = set(), [], [pid]
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.add(p)
        order.append(p)
        try:
            tids = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{p}/task/{tid}/children") as f:
                    stack.extend(int(c) for c in f.read().split())
            except (OSError, ValueError):
                continue
    return order


def _status(pid: int) -> tuple[int, int, int | None]:
    """(threads, bytes of own and shared memory it maps, its parent when it is a zombie, else None) of one
    process; (0, 0, None) when it is gone."""
    threads = memory = 0
    state = parent = None
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Threads:"):
                    threads = int(line.split()[1])
                elif line.startswith(("RssAnon:", "RssShmem:")):
                    memory += int(line.split()[1]) * 1024
                elif line.startswith("State:"):
                    state = line.split()[1]
                elif line.startswith("PPid:"):
                    parent = int(line.split()[1])
    except (OSError, IndexError, ValueError):
        return 0, 0, None
    return threads, memory, (parent if state == "Z" else None)


def _memfds(pid: int, seen: set) -> tuple[int, int]:
    """(bytes of the memfds ``pid`` holds open that no earlier process of the walk held (``seen``: their inodes),
    how many files it holds open)."""
    total = 0
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return 0, 0
    for fd in fds:
        path = f"/proc/{pid}/fd/{fd}"
        try:
            if not os.readlink(path).startswith("/memfd:"):
                continue
            st = os.stat(path)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            total += st.st_blocks * 512  # what it holds, not its (sparse) length
    return total, len(fds)


def usage(pids: list[int]) -> tuple[int, int, int]:
    """(tasks, bytes of memory, open files) of ``pids`` together, as the watch counts them."""
    tasks = memory = open_files = 0
    seen: set = set()
    inside = set(pids)
    for p in pids:
        threads, held, zombie_of = _status(p)
        if zombie_of is not None and zombie_of not in inside:
            continue  # killed, and its parent is outside (the system's init, after a sweep): no longer the submission's
        in_memfds, n = _memfds(p, seen)
        tasks, memory, open_files = tasks + threads, memory + held + in_memfds, open_files + n
    return tasks, memory, open_files


def over(pids: list[int], max_tasks: int, max_bytes: int, max_files: int | None = None) -> str | None:
    """"tasks", "memory" or "files" when ``pids`` together pass a limit, else None."""
    tasks, memory, open_files = usage(pids)
    if tasks > max_tasks:
        return "tasks"
    if memory > max_bytes:
        return "memory"
    if max_files is not None and open_files > max_files:
        return "files"
    return None


class Watch:
    """A thread that calls ``stop(what)`` once -- "tasks", "memory" or "files" -- when the processes ``pids()``
    names pass a limit; it ends then, or when :meth:`close` is called."""

    def __init__(self, pids: Callable[[], list[int]], max_tasks: int, max_bytes: int, stop: Callable[[str], None],
                 every: float = 0.1, max_files: int | None = None):
        self.pids, self.max_tasks, self.max_bytes, self.stop, self.every = pids, max_tasks, max_bytes, stop, every
        self.max_files = max_files
        self.tripped: str | None = None
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        if os.path.isdir("/proc/self/task"):
            self._thread.start()

    def _run(self) -> None:
        while not self._closed.wait(self.every):
            what = over(self.pids(), self.max_tasks, self.max_bytes, self.max_files)
            if what is not None:
                self.tripped = what
                self.stop(what)
                return

    def close(self) -> None:
        self._closed.set()
