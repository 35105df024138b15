"""SysV IPC is closed to a submission (course_lib.exercises.sysv): the seccomp filter, read by an interpreter of its
own here, and live in a process; and the user-id sandbox removes what its id made."""
from __future__ import annotations

import os
import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from course_lib.exercises import isolation, sysv

ROOT = Path(__file__).resolve().parents[1]


def _run_filter(insns, nr: int, arch: int) -> int:
    """What classic BPF returns for (nr, arch): an interpreter of the four instructions the filter uses."""
    data = {0: nr, 4: arch}
    pc, acc = 0, 0
    for _ in range(len(insns)):
        code, jt, jf, k = insns[pc]
        if code == 0x20:
            acc, pc = data[k], pc + 1
        elif code in (0x15, 0x35):
            hit = acc == k if code == 0x15 else acc >= k
            pc = pc + 1 + (jt if hit else jf)
        elif code == 0x06:
            return k
        else:
            raise AssertionError(f"unexpected instruction {code:#x}")
    raise AssertionError("the filter fell off its end")


EPERM = 0x00050000 | 1
ALLOW = 0x7FFF0000


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_the_filter_denies_every_sysv_call_and_every_other_abi_and_allows_the_rest(machine):
    insns = sysv.program(machine)
    arch, numbers = sysv._ARCH[machine]
    assert len(numbers) == 12 and all(jt < 256 and jf < 256 for _, jt, jf, _ in insns)
    for nr in numbers:
        assert _run_filter(insns, nr, arch) == EPERM, nr
    sysv_free = [n for n in range(0, 460) if n not in numbers]
    assert all(_run_filter(insns, n, arch) == ALLOW for n in sysv_free)  # read, mmap, clone, getpid, ...
    other_abi = 0x40000003 if machine == "x86_64" else 0x40000028  # i386 / arm 32-bit
    assert _run_filter(insns, 39, other_abi) == EPERM and _run_filter(insns, 117, other_abi) == EPERM
    if machine == "x86_64":  # x32 numbers reach the same kernel functions
        assert _run_filter(insns, 0x40000000 | 29, arch) == EPERM and _run_filter(insns, 0x40000000 | 39, arch) == EPERM


PROBE = textwrap.dedent("""\
    import ctypes, mmap, os, platform, sys
    sys.path.insert(0, sys.argv[1])
    from course_lib.exercises import sysv
    libc = ctypes.CDLL(None, use_errno=True)
    if sys.argv[2] == "on":
        assert sysv.forbid() is None
    def errno_of(r):
        return 0 if r >= 0 else ctypes.get_errno()
    got = {"shmget": errno_of(libc.shmget(0, 4096, 0o1600)), "msgget": errno_of(libc.msgget(0, 0o1600)),
           "semget": errno_of(libc.semget(0, 1, 0o1600))}
    if platform.machine() == "x86_64":
        got["x32 shmget"] = errno_of(libc.syscall(0x40000000 | 29, 0, 4096, 0o1600))
        # i386's shmget (395) through int 0x80 from this 64-bit process: push rbx; mov eax, 395; mov ebx, 0;
        # mov ecx, 4096; mov edx, 0o1600; int 0x80; pop rbx; ret
        code = bytes.fromhex("53" "B88B010000" "BB00000000" "B900100000" "BA80030000" "CD80" "5B" "C3")
        page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        page.write(code)
        r = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(page)))()
        got["int 0x80 shmget"] = -r if r < 0 else 0
    pid = os.fork()
    if pid == 0:
        os._exit(errno_of(libc.shmget(0, 4096, 0o1600)))
    got["shmget in a child"] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    got["getpid"] = errno_of(os.getpid())
    print(got)
""")


@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.machine() not in sysv._ARCH,
                    reason="the filter is made for Linux on x86-64 and arm64")
def test_under_the_filter_sysv_calls_fail_with_eperm_in_the_process_and_its_children():
    import ast

    before = set(sysv.owned(os.getuid()))
    try:
        off = ast.literal_eval(subprocess.run([sys.executable, "-c", PROBE, str(ROOT), "off"], capture_output=True,
                                              text=True, check=True, timeout=60).stdout)
        on = ast.literal_eval(subprocess.run([sys.executable, "-c", PROBE, str(ROOT), "on"], capture_output=True,
                                             text=True, check=True, timeout=60).stdout)
    finally:
        for kind, i in set(sysv.owned(os.getuid())) - before:  # what the run without the filter made
            sysv._remove(kind, i)
    assert off["shmget"] == off["msgget"] == off["semget"] == off["shmget in a child"] == 0  # the probe can fail
    assert set(on.values()) == {1, 0} and on["getpid"] == 0
    assert all(v == 1 for k, v in on.items() if k != "getpid"), on  # EPERM, each way in


@pytest.mark.skipif(not (hasattr(os, "geteuid") and os.geteuid() == 0), reason="a user id of its own needs root")
def test_the_user_id_sandbox_removes_the_sysv_objects_its_id_made(tmp_path):
    python = Path("/usr/bin/python3")  # any Python every user may run (the grader's may sit in root's home)
    if not python.exists():
        pytest.skip("no /usr/bin/python3 for another user id to run")
    work = tmp_path / "grade" / "work"
    work.mkdir(parents=True)
    box = isolation.Sandbox("uid", work)
    code = ("import ctypes\n"
            "libc = ctypes.CDLL(None)\n"
            "assert min(libc.shmget(0, 1 << 20, 0o1600), libc.msgget(0, 0o1600), libc.semget(0, 4, 0o1600)) >= 0\n")
    argv, kwargs = box.popen_args([str(python), "-c", code], {"PATH": "/usr/bin:/bin"})
    subprocess.run(argv, **kwargs, check=True, timeout=60)
    made = sysv.owned(box.uid)
    try:
        assert sorted(kind for kind, _ in made) == ["msg", "sem", "shm"]  # they outlive the process that made them
        box.cleanup()
        assert sysv.owned(box.uid) == []
    finally:
        for kind, i in sysv.owned(box.uid):
            sysv._remove(kind, i)
