"""A user id of its own for each submission (the ``"uid"`` sandbox of :mod:`.isolation`, where bubblewrap is
missing and the grader runs as root): a fresh user id, every process of it killed, every file it left where every
user may write and every SysV object it made removed."""
from __future__ import annotations

import itertools
import os
import shutil
import signal
import stat
import threading
import time
from pathlib import Path

_counter = itertools.count()
_lock = threading.Lock()


def fresh_uid() -> int:
    """A user id no process uses and no account has: one per submission, so that two never share one."""
    with _lock:
        while True:
            uid = 0x60000000 + (os.getpid() % 4096) * 4096 + next(_counter) % 4096
            if not _processes_of(uid):
                return uid


def _processes_of(uid: int) -> list[int]:
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status") as f:
                line = next((line for line in f if line.startswith("Uid:")), "")
        except OSError:
            continue
        if line.split()[1:2] == [str(uid)]:
            pids.append(int(entry.name))
    return pids


def sweep(uid: int) -> None:
    """Kill every process of ``uid`` (what a submission left running: daemons, setsid children, forks): a child
    that becomes ``uid`` sends SIGKILL to every process it may signal, which are exactly those of ``uid``."""
    for _ in range(50):
        if not _processes_of(uid):
            return
        pid = os.fork()
        if pid == 0:  # only system calls here: the grader has threads
            try:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        time.sleep(0.02)


SHARED_TMP = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock", "/dev/mqueue")  # the folders every user may write


def remove_owned(uid: int, roots=SHARED_TMP, keep: Path | None = None) -> int:
    """Delete what ``uid`` left in the folders every user may write, once its processes are gone: files there
    outlive a submission (in /dev/shm they hold memory until the machine restarts). Only folders that others may
    write are entered, since a user id owning nothing can create nothing elsewhere; ``keep`` (the submission's own
    folder, which the grader deletes itself) is left alone. Its SysV objects go too (no IPC namespace here: a segment
    would hold its memory after it). How many entries went."""
    from .sysv import remove_owned as remove_ipc

    gone, stack = remove_ipc(uid), [Path(r) for r in roots]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            path = Path(entry.path)
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if keep is not None and (path == keep or keep.is_relative_to(path)):
                continue
            is_dir = stat.S_ISDIR(st.st_mode)
            if st.st_uid == uid:
                try:
                    shutil.rmtree(path) if is_dir else path.unlink()
                    gone += 1
                except OSError:
                    pass
            elif is_dir and st.st_mode & 0o002:
                stack.append(path)
    return gone
