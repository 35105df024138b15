"""System V IPC -- shared memory segments, message queues, semaphore sets -- is closed to a submission.

A SysV segment outlives every process that maps it: a submission that made segments, filled them and detached them
held gigabytes that no process showed (the grader's watch counts what processes hold, :mod:`.watch`), and under a
user id of its own, which has no IPC namespace, left them on the machine after it was done (3 GB from one notebook
of twelve lines). Nothing a notebook needs uses SysV IPC: multiprocessing and torch share memory through POSIX
shared memory, files in /dev/shm, whose size the sandbox caps (:mod:`.isolation`). So:

* :func:`forbid` -- the worker, before the first cell, installs a seccomp filter under which every SysV IPC call of
  it and of every process it starts fails with EPERM ("Operation not permitted"); so does every system call made
  through another ABI than the machine's own (x86-64's 32-bit ``int 0x80`` and x32 numbers reach the same kernel
  functions by other numbers). Linux on x86-64 and arm64; elsewhere nothing is installed and it says so.
* :func:`remove_owned` -- the user-id sandbox's cleanup removes every SysV object its user id made or owns, in
  case a kernel refused the filter.
"""
from __future__ import annotations

import ctypes
import errno
import os
import platform
import sys

_ARCH = {  # machine -> (AUDIT_ARCH_* of its own ABI, the SysV IPC system calls' numbers there)
    # shmget shmat shmctl semget semop semctl shmdt msgget msgsnd msgrcv msgctl semtimedop
    "x86_64": (0xC000003E, (29, 30, 31, 64, 65, 66, 67, 68, 69, 70, 71, 220)),
    # msgget msgctl msgrcv msgsnd semget semctl semtimedop semop shmget shmctl shmat shmdt (asm-generic)
    "aarch64": (0xC00000B7, tuple(range(186, 198))),
}
_X32 = 0x40000000  # x86-64: numbers of the x32 ABI carry this bit

# classic BPF, as seccomp reads it (linux/filter.h, linux/seccomp.h)
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_ALLOW, _DENY = 0x7FFF0000, 0x00050000 | errno.EPERM  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EPERM
_NR, _ARCH_AT = 0, 4  # offsets in struct seccomp_data
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2


class _Insn(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint32)]


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Insn))]


def program(machine: str) -> list[tuple[int, int, int, int]]:
    """The filter for ``machine`` (``platform.machine()``): (code, jump if true, jump if false, k) per instruction.
    Another ABI than the machine's own is denied whole; then the x32 numbers; then each SysV IPC call."""
    arch, numbers = _ARCH[machine]
    tests = [(_JGE_K, _X32)] if machine == "x86_64" else []
    tests += [(_JEQ_K, n) for n in numbers]
    deny = 3 + len(tests) + 1  # [ld arch, jeq arch, ld nr, tests..., ret allow, ret deny]
    insns = [(_LD_W_ABS, 0, 0, _ARCH_AT), (_JEQ_K, 0, deny - 2, arch), (_LD_W_ABS, 0, 0, _NR)]
    for i, (code, k) in enumerate(tests):
        insns.append((code, deny - (3 + i) - 1, 0, k))
    return insns + [(_RET_K, 0, 0, _ALLOW), (_RET_K, 0, 0, _DENY)]


def forbid() -> str | None:
    """Close SysV IPC to this process and every process it starts from now on (irreversibly); None when done,
    else why not, in a few words."""
    machine = platform.machine()
    if not sys.platform.startswith("linux") or machine not in _ARCH:
        return f"no seccomp filter for {sys.platform} on {machine or 'this machine'}"
    insns = program(machine)
    table = (_Insn * len(insns))(*(_Insn(*i) for i in insns))
    prog = _Prog(len(insns), table)
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    if prctl(PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0 or prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER,
                                                                ctypes.addressof(prog), 0, 0) != 0:
        return f"the kernel refused the seccomp filter ({os.strerror(ctypes.get_errno())})"
    return None


_COLUMN = {"shm": "shmid", "msg": "msqid", "sem": "semid"}


def owned(uid: int) -> list[tuple[str, int]]:
    """(kind, id) of every SysV object in this IPC namespace that ``uid`` made or owns (from /proc/sysvipc)."""
    found = []
    for kind, column in _COLUMN.items():
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                header = f.readline().split()
                at, uids = header.index(column), (header.index("uid"), header.index("cuid"))
                for line in f:
                    fields = line.split()
                    if len(fields) == len(header) and str(uid) in (fields[uids[0]], fields[uids[1]]):
                        found.append((kind, int(fields[at])))
        except (OSError, ValueError):
            continue
    return found


def _remove(kind: str, ident: int) -> bool:
    libc = ctypes.CDLL(None, use_errno=True)  # IPC_RMID is 0 for each kind
    done = {"shm": libc.shmctl, "msg": libc.msgctl}[kind](ident, 0, None) if kind != "sem" else libc.semctl(ident, 0, 0)
    return done == 0


def remove_owned(uid: int) -> int:
    """Remove every SysV object ``uid`` made or owns (as root: :func:`owned`); how many went."""
    return sum(_remove(kind, i) for kind, i in owned(uid)) if sys.platform.startswith("linux") else 0
