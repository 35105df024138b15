"""What all the processes of one submission hold together, watched from the grader (Linux: /proc).

``RLIMIT_AS`` caps each process of a submission (:mod:`.worker`), not their sum: five children of 1.5 GB each pass
it, and so do thousands of small ones (a fork bomb that would use up the machine's process ids). :class:`Watch`
looks every tenth of a second at the worker and everything it started -- the processes of the submission's own user
id, or the descendants of the sandbox's first process (under bubblewrap an orphan is adopted inside the sandbox) --
and stops the submission when their tasks (processes and threads) pass ``max_tasks`` or their memory passes
``max_bytes``: resident memory first (cheap), then, to confirm, the proportional set size (PSS: a page shared by a
parent and its forked child counts once, split between them, as the honest worker's forked checks share theirs).
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable

PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (the children of each of their threads), as far as /proc shows them."""
    seen, stack = [], [pid]
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.append(p)
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
    return seen


def _tasks_and_rss(pids: list[int]) -> tuple[int, int]:
    tasks = rss = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/statm") as f:
                rss += int(f.read().split()[1]) * PAGE
            tasks += len(os.listdir(f"/proc/{p}/task"))
        except (OSError, IndexError, ValueError):
            continue
    return tasks, rss


def _pss(pids: list[int]) -> int:
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                total += next(int(line.split()[1]) * 1024 for line in f if line.startswith("Pss:"))
        except (OSError, StopIteration, IndexError, ValueError):
            continue
    return total


def usage(pids: list[int]) -> tuple[int, int]:
    """(tasks, bytes of memory) of ``pids`` together: the memory as PSS when /proc gives it, else resident."""
    tasks, rss = _tasks_and_rss(pids)
    pss = _pss(pids)
    return tasks, (pss or rss)


def over(pids: list[int], max_tasks: int, max_bytes: int) -> str | None:
    """"tasks" or "memory" when ``pids`` together pass a limit, else None."""
    tasks, rss = _tasks_and_rss(pids)
    if tasks > max_tasks:
        return "tasks"
    if rss > max_bytes and _pss(pids) > max_bytes:
        return "memory"
    return None


class Watch:
    """A thread that calls ``stop(what)`` once -- "tasks" or "memory" -- when the processes ``pids()`` names pass a
    limit; it ends then, or when :meth:`close` is called."""

    def __init__(self, pids: Callable[[], list[int]], max_tasks: int, max_bytes: int, stop: Callable[[str], None],
                 every: float = 0.1):
        self.pids, self.max_tasks, self.max_bytes, self.stop, self.every = pids, max_tasks, max_bytes, stop, every
        self.tripped: str | None = None
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        if os.path.isdir("/proc/self/task"):
            self._thread.start()

    def _run(self) -> None:
        while not self._closed.wait(self.every):
            what = over(self.pids(), self.max_tasks, self.max_bytes)
            if what is not None:
                self.tripped = what
                self.stop(what)
                return

    def close(self) -> None:
        self._closed.set()
