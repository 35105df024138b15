"""The grader's trust boundary: student code can neither forge a result nor change anything outside its sandbox.

Fast tests: what crosses the boundary (:mod:`course_lib.exercises.wire`) is plain data whatever the sandbox sends;
the grader refuses to run students' code without a sandbox unless told ``--unsafe``; a function that calls the
library's reference for its exercise is found from its code; a link or a giant sparse file is rejected unread.

The class (slow): submissions of notebook 11.2 that each try to get marks without the work (patching what the checks
use, swapping the grader's code, writing fake results on every file descriptor, liar tensors, a torch-function mode,
wrapping the library's reference, running the solution sources, reading a classmate's notebook, patching builtins)
or to do harm (writing into the grader's source, the virtual environment, the teacher's cache and home, classmates'
files and the gradebook, from the cells, from a daemon that outlives the grader, through /proc, closing every file
descriptor, children that ignore SIGTERM), graded beside an honest classmate. Each gets what its work deserves, the classmate's row is unchanged, and a fingerprint of everything outside
the sandbox (names, sizes, modes and times of the files) is identical before and after.
"""
import contextlib
import dataclasses
import hashlib
import inspect
import math
import os
import re
import shutil
import stat
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import torch

import course_lib
from adversarial_submissions import ALL_CORRECT, NAMES, edited, write, answered
from course_lib.exercises import EXERCISES, isolation, wire
from course_lib.exercises.__main__ import main as exercises_cli
from course_lib.exercises.gradebook import grade_all
from course_lib.exercises.grading import Cell, SubmissionError, read_cells
from course_lib.exercises.references import reference_used
from course_lib.exercises.limits import MAX_TASKS
from course_lib.exercises.sandbox import Limits
from course_lib.paths import cache_root

ROOT = Path(course_lib.__file__).resolve().parents[1]


# ----------------------------------------------------------------------------- what crosses the boundary

def _round_trip(value):
    header, payload = wire.encode(value)
    return wire.decode(*wire.read_frame_bytes(wire.frame(header, payload)))


class LiarTensor(torch.Tensor):
    """Says it equals anything, and that every comparison with it is true."""

    def __eq__(self, other):
        return True

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.allclose, torch.equal, torch.isclose):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})


class LiarInt(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


class Mine:
    def __eq__(self, other):
        return True


def test_plain_values_cross_unchanged():
    value = (None, True, 3, -2.5, math.inf, "ünï", b"\x00\xff", 1 + 2j, Ellipsis, [1, (2, 3)], {"a": {1, 2}},
             frozenset({4}), torch.Size([2, 3]), torch.float16)
    assert _round_trip(value) == value
    for t in (torch.arange(6.0).reshape(2, 3), torch.tensor([True, False]), torch.zeros(0, 4, dtype=torch.int64),
              torch.randn(3, dtype=torch.bfloat16), torch.randn(2, dtype=torch.complex64)):
        back = _round_trip(t)
        assert type(back) is torch.Tensor and back.dtype == t.dtype and torch.equal(back, t)
    a = np.arange(5, dtype=np.int32)
    assert np.array_equal(_round_trip(a), a) and _round_trip(np.float32(2.5)) == np.float32(2.5)
    assert _round_trip(torch.ones(2, requires_grad=True) * 2).requires_grad  # "is it connected to a gradient?"


def test_liars_arrive_as_the_plain_numbers_they_hold():
    liar = torch.zeros(3).as_subclass(LiarTensor)
    back = _round_trip(liar)
    assert type(back) is torch.Tensor and not torch.equal(back, torch.ones(3))
    n = _round_trip(LiarInt(2))
    assert type(n) is int and n != 5
    mine = _round_trip([Mine()])[0]
    assert isinstance(mine, wire.Opaque) and type(mine).__name__ == "Mine" and mine != 1
    assert isinstance(_round_trip(np.array([object()], dtype=object)), wire.Opaque)


def test_what_is_too_large_or_too_deep_arrives_as_an_opaque_value():
    deep = []
    for _ in range(wire.MAX_DEPTH + 10):
        deep = [deep]
    assert "nested more than" in _round_trip(deep).text
    assert "too large to check" in _round_trip(list(range(wire.MAX_NODES + 1))).text


@pytest.mark.parametrize("tree", [
    {"pickle": "gASVBQAAAAAAAACMAW2ULg=="}, {"tensor": ["object", [1], 0, 8, False]}, {"tensor": ["float32", [4], 0, 4, False]},
    {"ndarray": ["|O8", [1], 0, 8]}, {"ndarray": ["<f8", [2], 0, 999, ]}, ["a", "b"], {"dict": [[{"list": []}, 1]]},
    {"opaque": ["x"]}, 5])
def test_a_tree_the_encoder_never_writes_is_refused(tree):
    with pytest.raises(wire.WireError):
        wire.decode({"tree": tree}, b"\x00" * 8)


def test_a_tree_that_reads_the_same_numbers_many_times_is_refused():
    # a red-team finding: 300 tensors on one 16 MB span made the grader build 5 GB out of one 16 MB message
    payload = bytes(2**20)
    one = {"tensor": ["uint8", [2**20], 0, 2**20, False]}
    assert wire.decode({"tree": {"list": [one]}}, payload)[0].shape == (2**20,)
    for tree in ({"list": [one] * 300}, {"tuple": [one, {"bytes": [0, 16]}]},
                 {"list": [{"ndarray": ["|u1", [2**19], 0, 2**19]}, {"ndarray": ["|u1", [2**20], 0, 2**20]}]}):
        with pytest.raises(wire.WireError, match="reads more numbers than the message holds"):
            wire.decode({"tree": tree}, payload)
    # what the encoder writes reads every byte once
    value = [torch.ones(1000), np.arange(10), b"xy", {"a": torch.zeros(3, dtype=torch.int64)}, np.float32(2.0)]
    back = _round_trip(value)
    assert torch.equal(back[0], value[0]) and (back[1] == value[1]).all() and back[2] == b"xy"
    assert torch.equal(back[3]["a"], value[3]["a"]) and back[4] == np.float32(2.0)


def test_a_frame_larger_than_the_caps_is_refused_unread():
    r, w = os.pipe()
    os.write(w, wire._HEAD.pack(10, wire.MAX_PAYLOAD + 1))
    os.close(w)
    with pytest.raises(wire.WireError, match="more than the grader reads"):
        wire.read_frame(r)
    os.close(r)


# ----------------------------------------------------------------------------- no sandbox, no grading

def test_without_a_sandbox_the_grader_refuses_unless_told_unsafe(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv(isolation.ENV, raising=False)
    monkeypatch.setattr(isolation, "bwrap_problem", lambda: "bubblewrap (bwrap) is not installed")
    monkeypatch.setattr(isolation, "uid_problem", lambda: "running each submission as a user id of its own needs "
                                                         "the grader to run as root")
    with pytest.raises(isolation.SandboxUnavailable, match="will not run students' code without a sandbox.*--unsafe"):
        isolation.choose(None)
    assert isolation.choose("unsafe") == "unsafe"
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "a.ipynb").write_bytes(b"")
    assert exercises_cli(["grade-all", str(folder), "--out", str(tmp_path / "grades.csv")]) == 2
    assert "not graded: the grader will not run students' code without a sandbox" in capsys.readouterr().err
    assert not (tmp_path / "grades.csv").exists()
    with pytest.raises(isolation.SandboxUnavailable):
        grade_all(folder, tmp_path / "grades.csv", progress=False)
    assert sorted(os.listdir(tmp_path)) == ["class"]
    with pytest.raises(isolation.SandboxUnavailable, match="asked for a bubblewrap sandbox"):
        isolation.choose("bwrap")


# ----------------------------------------------------------------------------- the library's own answer

def _cells(*sources) -> list:
    return [Cell(i, textwrap.dedent(s), True, True) for i, s in enumerate(sources)]


@pytest.mark.parametrize("source", [
    "import course_lib.pretraining.masking as m\ndef masked_lm_loss(logits, labels):\n    return m.masked_lm_loss(logits, labels)",
    "from course_lib.pretraining.masking import masked_lm_loss as _l\ndef masked_lm_loss(a, b):\n    return _l(a, b)",
    "import course_lib\ndef _h(a, b):\n    return course_lib.pretraining.masking.masked_lm_loss(a, b)\n"
    "def masked_lm_loss(a, b):\n    return _h(a, b)",
    "def masked_lm_loss(a, b):\n    from course_lib.pretraining import masking\n    return masking.masked_lm_loss(a, b)",
])
def test_a_function_that_calls_the_library_s_reference_gets_no_credit(source):
    message = reference_used(EXERCISES["mlm_loss"], _cells("import torch", source))
    assert message is not None and "the library's own implementation" in message, source


def test_the_library_s_helpers_and_the_solutions_are_not_taken_for_the_reference():
    legit = _cells("from course_lib.pretraining.masking import masked_lm_loss, IGNORE_INDEX\nimport torch",
                   "def masked_lm_loss(logits, labels):\n    keep = labels != IGNORE_INDEX\n"
                   "    return torch.nn.functional.cross_entropy(logits[keep], labels[keep])")
    assert reference_used(EXERCISES["mlm_loss"], legit) is None  # the setup cell's import is not the answer's
    for cell in answered().cells:
        assert cell.cell_type != "code" or all(
            reference_used(EXERCISES[n], _cells(cell.source)) is None for n in NAMES), cell.source[:80]


# ----------------------------------------------------------------------------- files rejected unread

def test_a_link_and_a_giant_sparse_file_are_rejected_without_reading_them(tmp_path):
    classmate = tmp_path / "alice.ipynb"
    classmate.write_bytes(write(answered()))
    (tmp_path / "mallory.ipynb").symlink_to(classmate)
    with pytest.raises(SubmissionError, match="is a link to another file"):
        read_cells(tmp_path / "mallory.ipynb")
    sparse = tmp_path / "huge.ipynb"
    with open(sparse, "wb") as f:
        f.truncate(3 * 10**9)  # 3 GB that take no disk: reading them would take a minute
    start = time.process_time()
    with pytest.raises(SubmissionError, match="3000 MB"):
        read_cells(sparse)
    assert time.process_time() - start < 1.0


def test_a_notebook_with_megabytes_of_code_gets_its_own_message_not_the_machine_s(tmp_path):
    # a red-team finding: 4.5 MB of comment made the worker's job larger than it reads, and the row said "a problem
    # of the grading machine"; 48 MB cost the grader 43 s of scanning before that
    from course_lib.exercises.grading import MAX_CODE
    from course_lib.exercises.sandbox import grade_file

    big = tmp_path / "big.ipynb"
    big.write_bytes(edited("language_probs", prefix="# " + "x" * (MAX_CODE + 10)))
    with pytest.raises(SubmissionError, match=r"the notebook has 1,0\d\d,\d{3} characters of code, far more than the "
                                              r"exercises need \(at most 1,000,000\): remove the data pasted"):
        read_cells(big)
    astral = tmp_path / "astral.ipynb"  # within MAX_CODE, but each character is 12 bytes of JSON (\\ud835\\udc65)
    astral.write_bytes(edited("language_probs", prefix="# " + "\U0001d465" * 400_000))
    grade = grade_file(astral, dataclasses.replace(LIMITS, isolation="unsafe"))
    assert grade.error is not None and not grade.results
    assert re.fullmatch(r"the notebook's code takes \d+ MB to send to the grader's sandbox, more than it reads "
                        r"\(8 MB\): remove the data pasted into its cells \(read it from a file instead\), save it "
                        r"and hand it in again", grade.error), grade.error


# ----------------------------------------------------------------------------- the class

MARK = "course-grading-trust-daemon"
BWRAP = isolation.bwrap_problem() is None
LIMITS = Limits(margin=3, cell_time_limit=6, memory_mb=1024)
WRONG_PROBS = "return torch.ones(len(p), dtype=torch.float64) / 3"  # language_probs, not eq. 11.7
ONLY_WRONG = {**ALL_CORRECT, "language_sampling": ("wrong", "")}


def _fingerprint(*roots: Path | str) -> str:
    """Names, sizes, modes and modification times of every file under ``roots`` (a root ending in ``/.``: only the
    folder and its own entries): any write changes it."""
    h = hashlib.sha256()
    for root in roots:
        shallow = str(root).endswith("/.")
        root = Path(os.path.normpath(root))
        if not root.exists():
            continue
        inside = root.iterdir() if shallow else root.rglob("*")
        for path in sorted([root, *inside] if root.is_dir() else [root]):
            if "__pycache__" in path.parts:  # the grader's own imports write these
                continue
            try:
                st = path.lstat()
            except OSError:
                continue
            h.update(f"{path}\0{st.st_size}\0{st.st_mode}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


@contextlib.contextmanager
def _own_home_and_cache():
    """The grading below gets a home and a cache of its own (the cache a copy of the real one, by hard links, so the
    sandbox sees the same files). Under pytest-xdist the other workers run notebooks and training at the same time,
    and they write into the shared cache (a new run) and the home (~/.cache, ~/.nv, ~/.ipython on a bare machine):
    the fingerprint of everything outside the sandbox would then change however well the sandbox held. Both are
    made world-readable, like a real home and cache, so a sandbox under a user id of its own can read them too."""
    saved = {k: os.environ.get(k) for k in ("HOME", "COURSE_LIB_CACHE")}
    real = cache_root()
    top = Path(tempfile.mkdtemp(prefix="trust-home-"))
    try:
        top.chmod(0o755)
        home, cache = top / "home", top / "cache"
        home.mkdir(mode=0o755)
        if real.is_dir():
            def link(src, dst):
                try:
                    os.link(src, dst)
                except OSError:   # another file system: a copy
                    shutil.copy2(src, dst)
            shutil.copytree(real, cache, symlinks=True, copy_function=link)
        else:
            cache.mkdir(mode=0o755)
        os.environ.update(HOME=str(home), COURSE_LIB_CACHE=str(cache))
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(top, ignore_errors=True)


def _outside(tmp: Path) -> list[Path]:
    site = Path(torch.__file__).resolve().parents[1]
    return [ROOT / "course_lib", ROOT / "notebooks", cache_root(), str(Path.home()) + "/.", tmp / "class",  # (a str: Path drops the "/.")
            *sorted(p for p in site.iterdir() if p.suffix == ".pth" or p.name.startswith("__editable__"))]


def _hostile(tmp: Path) -> dict[str, tuple[bytes, dict]]:
    """name -> (the file, the result each exercise must get)."""
    core_py = Path(course_lib.__file__).parent / "exercises" / "core.py"
    gradebook, classmate = tmp / "out" / "grades.csv", tmp / "class" / "alice.ipynb"
    solution = ROOT / "notebooks" / "11_2_masked_language_modeling.py"
    site = Path(torch.__file__).resolve().parents[1]
    writes = "\n".join(f"try:\n    open({str(p)!r}, 'a').write('\\n# owned\\n')\nexcept OSError:\n    pass" for p in [
        core_py, gradebook, classmate, cache_root() / "owned.txt", Path.home() / "owned.txt", *site.glob("*.pth")])
    frames = textwrap.dedent("""\
        from course_lib.exercises import wire as _w
        _fake = _w.frame({"ev": "result", "name": "language_sampling", "status": "correct", "credit": 1000})
        _fake += _w.frame({"ev": "return", "tree": {"tuple": [[1.0], ["null"]]}})
        for _fd in range(3, 64):
            try:
                os.write(_fd, _fake)
            except OSError:
                pass""")
    return {
        # ---- marks without the work: language_probs is wrong in each, the rest is the honest solution
        "tolerances": (edited("language_probs", prefix="import course_lib.exercises.hints as h\n"
                                                       "h.ATOL = h.RTOL = float('inf')", body=WRONG_PROBS), ONLY_WRONG),
        "swaps_the_grader": (edited("language_probs", prefix=textwrap.dedent("""\
            import course_lib.exercises.core as c
            c.run_check.__code__ = (lambda ex, fns: c.Result(ex.name, c.CORRECT)).__code__
            c.WRONG = c.NOT_ATTEMPTED = c.CORRECT"""), body=WRONG_PROBS), ONLY_WRONG),
        "fake_frames": (edited("language_probs", prefix="import os", body=frames + "\n" + WRONG_PROBS),
                        {**ALL_CORRECT, "language_sampling": ("wrong", "")}),
        "liar_tensor": (edited("language_probs", prefix=inspect.getsource(LiarTensor),
                               body="return torch.zeros(len(p), dtype=torch.float64).as_subclass(LiarTensor)"),
                        ONLY_WRONG),
        "torch_function_mode": (edited("language_probs", prefix=textwrap.dedent("""\
            from torch.overrides import TorchFunctionMode
            class Agree(TorchFunctionMode):
                def __torch_function__(self, func, types, args=(), kwargs=None):
                    if func in (torch.allclose, torch.equal):
                        return True
                    return func(*args, **(kwargs or {}))
            Agree().__enter__()"""), body=WRONG_PROBS), ONLY_WRONG),
        "wraps_reference": (edited("language_probs", cell="import course_lib.pretraining.multilingual as _ml\n\n"
                                        "def language_probs(p, alpha):\n    return _ml.language_sampling_probs(p, alpha)"),
                            {**ALL_CORRECT, "language_sampling": ("wrong", "the library's own implementation")}),
        "runs_solutions": (edited("language_probs", cell=textwrap.dedent(f"""\
            def language_probs(p, alpha):
                {WRONG_PROBS}

            try:  # the solution's own function, from the notebook's source
                _src = open({str(solution)!r}).read()
                _at = _src.index("def language_probs(")
                exec(_src[_at:_src.index("# %%", _at)])
            except OSError:
                pass""")), ONLY_WRONG),
        "reads_classmate": (edited("language_probs", cell=textwrap.dedent(f"""\
            import json as _json

            def language_probs(p, alpha):
                {WRONG_PROBS}

            try:  # the classmate's function, from the notebook they handed in
                for _c in _json.load(open({str(classmate)!r}))["cells"]:
                    if "def language_probs(" in "".join(_c["source"]):
                        exec("".join(_c["source"]))
            except OSError:
                pass""")), ONLY_WRONG),
        # ---- harm: every exercise is honestly solved; nothing outside the sandbox may change
        "writes_outside": (edited("language_probs", prefix=writes), ALL_CORRECT),
        "daemon": (edited("language_probs", prefix=textwrap.dedent(f"""\
            import os, subprocess, sys
            code = "import time, os\\ntime.sleep(6)\\n" + {writes!r}
            subprocess.Popen([sys.executable, "-c", code, {MARK!r}], start_new_session=True,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)""")),
                   ALL_CORRECT),
        "patches_builtins": (edited("language_probs", prefix=textwrap.dedent("""\
            import builtins
            builtins.isinstance = lambda *a: True
            builtins.len = lambda x: 3"""), body=WRONG_PROBS.replace("len(p)", "3")), ONLY_WRONG),
        "closes_fds": (edited("language_probs", prefix="import os\nos.closerange(3, 1024)"),
                       {**ALL_CORRECT, "language_sampling": ("wrong", "the cell that defines `language_probs`")}),
        "ignores_sigterm": (edited("language_probs", prefix=textwrap.dedent(f"""\
            import signal, subprocess, sys
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            subprocess.Popen([sys.executable, "-c", "import signal, time\\nsignal.signal(signal.SIGTERM, "
                              "signal.SIG_IGN)\\ntime.sleep(60)", {MARK!r}], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)""")), ALL_CORRECT),
        "proc_walk": (edited("language_probs", prefix="import os\n" + frames + "\n" + textwrap.dedent("""\
            for _pid in os.listdir("/proc"):
                if _pid.isdigit() and int(_pid) != os.getpid():
                    for _fd in range(0, 64):
                        try:
                            with open(f"/proc/{_pid}/fd/{_fd}", "wb", buffering=0) as _f:
                                _f.write(_fake)
                        except OSError:
                            pass""")), ALL_CORRECT),
        # ---- the machine: no submission may take more of it than its limits, whatever it starts
        "fork_bomb": (edited("language_probs", prefix=textwrap.dedent(f"""\
            import subprocess
            _started = 0
            try:
                while _started < {4 * MAX_TASKS}:
                    subprocess.Popen(["sh", "-c", "sleep 30", {MARK!r}], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    _started += 1
            except OSError:
                pass""")), {**ALL_CORRECT, "language_sampling": ("wrong", f"it started more than {MAX_TASKS} processes")}),
        "memory_in_children": (edited("language_probs", prefix=textwrap.dedent("""\
            import os, time
            _kids = []
            for _ in range(4):  # 700 MB each: within one process's limit, 2.8 GB together
                _pid = os.fork()
                if _pid == 0:
                    _held = b"x" * (700 * 2**20)
                    time.sleep(30)
                    os._exit(0)
                _kids.append(_pid)
            for _pid in _kids:
                os.waitpid(_pid, 0)""")),
                               {**ALL_CORRECT, "language_sampling": ("wrong", "its processes together used more than")}),
        "socket_buffers": (edited("language_probs", prefix=textwrap.dedent("""\
            import socket
            _pairs = []
            try:
                for _ in range(3000):  # each pair filled both ways: about 0.5 MB of the kernel's memory, in no process
                    _a, _b = socket.socketpair()
                    for _s in (_a, _b):
                        _s.setblocking(False)
                        try:
                            while True:
                                _s.send(b"x" * 65536)
                        except BlockingIOError:
                            pass
                    _pairs.append((_a, _b))
            except OSError:  # too many open files: one process may hold 1,024
                pass
            _made = len(_pairs)
            for _a, _b in _pairs:
                _a.close()
                _b.close()
            del _pairs
            if _made > 1000:
                raise RuntimeError(f"{_made} socket pairs filled")""")), ALL_CORRECT),
        "files_in_children": (edited("language_probs", prefix=textwrap.dedent("""\
            import os, socket, time
            _kids = []
            for _ in range(4):  # 900 sockets each: within one process's limit, 3,600 together
                _pid = os.fork()
                if _pid == 0:
                    _held = [socket.socketpair() for _ in range(450)]
                    time.sleep(30)
                    os._exit(0)
                _kids.append(_pid)
            for _pid in _kids:
                os.waitpid(_pid, 0)""")),
                              {**ALL_CORRECT, "language_sampling": ("wrong", "files, pipes and sockets open at once")}),
        "sysv_memory": (edited("language_probs", prefix=textwrap.dedent("""\
            import ctypes
            _libc = ctypes.CDLL(None, use_errno=True)
            _libc.shmat.restype, _libc.shmat.argtypes = ctypes.c_void_p, [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
            _made = 0
            for _ in range(4):  # 64 MB each, filled, then detached: in no process's memory, and (user id) outliving it
                _id = _libc.shmget(0, 64 * 2**20, 0o1600)
                if _id < 0:
                    continue
                _made += 1
                _at = _libc.shmat(_id, None, 0)
                if _at not in (None, 2**64 - 1):
                    ctypes.memset(_at, 1, 64 * 2**20)
                    _libc.shmdt(ctypes.c_void_p(_at))
            if _made:
                raise RuntimeError(f"made {_made} SysV segments")""")), ALL_CORRECT),
        "reads_secrets": (edited("language_probs", prefix=textwrap.dedent(f"""\
            _read = []
            for _path in {_private_system_files()!r}:  # what not every user may read (as root: /etc/shadow)
                try:
                    with open(_path, "rb") as _f:
                        _read.append(_path) if _f.read(1) else None
                except OSError:
                    pass
            if _read:
                raise RuntimeError("read " + ", ".join(_read))""")), ALL_CORRECT),
    }


HOSTILE = ["tolerances", "swaps_the_grader", "fake_frames", "liar_tensor", "torch_function_mode", "wraps_reference",
           "runs_solutions", "reads_classmate", "writes_outside", "daemon", "patches_builtins", "closes_fds",
           "ignores_sigterm", "proc_walk", "fork_bomb", "memory_in_children", "reads_secrets", "sysv_memory",
           "socket_buffers", "files_in_children"]


def _private_system_files() -> list[str]:
    """Files of the system's folders and of /proc that not every user may read, and that the grader can (as root:
    /etc/shadow, /proc/slabinfo)."""
    found = []
    for top in ("/etc", "/opt"):
        for folder, _, files in os.walk(top):
            for name in files:
                path = os.path.join(folder, name)
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode) and st.st_size and not st.st_mode & 0o004 and os.access(path, os.R_OK):
                    found.append(path)
    proc = [f"/proc/{name}" for name in ("slabinfo", "vmallocinfo", "pagetypeinfo", "timer_list")  # never kmsg: it blocks
            if os.path.isfile(f"/proc/{name}") and not os.stat(f"/proc/{name}").st_mode & 0o004
            and os.access(f"/proc/{name}", os.R_OK)]
    return sorted(found)[:50] + proc


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    if not BWRAP and isolation.uid_problem() is not None:
        pytest.skip("no sandbox on this machine (neither bubblewrap nor root): grading hostile code would be unsafe")
    tmp = tmp_path_factory.mktemp("trust")
    (tmp / "class").mkdir()
    (tmp / "out").mkdir()
    assert sorted(_hostile(tmp)) == sorted(HOSTILE)
    (tmp / "class" / "alice.ipynb").write_bytes(write(answered()))
    with _own_home_and_cache():
        hostile = _hostile(tmp)   # its paths: this grading's own home and cache
        for name, (content, _) in hostile.items():
            (tmp / "class" / f"{name}.ipynb").write_bytes(content)
        for p in (tmp / "class").iterdir():
            p.chmod(0o444)
        before = _fingerprint(*_outside(tmp))
        grades = {g.path.stem: g for g in grade_all(tmp / "class", tmp / "out" / "grades.csv", jobs=2, limits=LIMITS,
                                                     progress=False)}
        # the moment the grader returns: no process of a submission may be left (had the daemon outlived its
        # sandbox, it is either still here, asleep, or it has written already and the fingerprint below shows it;
        # looking for it first and then at the files leaves it no moment to slip between the two)
        alive = _marked_processes()
        after_grading = {p.name: p.read_bytes() for p in (tmp / "out").rglob("*") if p.is_file()}
        after = _fingerprint(*_outside(tmp))
    return dict(tmp=tmp, hostile=hostile, grades=grades, before=before, after=after, written=after_grading,
                alive=alive)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["alice", *HOSTILE])
def test_each_submission_gets_what_its_work_deserves(name, graded_class):
    expected = ALL_CORRECT if name == "alice" else graded_class["hostile"][name][1]
    if name in ("runs_solutions", "reads_classmate") and not BWRAP:
        pytest.skip("without bubblewrap the sandbox can read what any user can (see isolation.py)")
    grade = graded_class["grades"][name]
    assert grade.error is None, grade.error
    got = {r.name: (r.status, r.message) for r in grade.results}
    assert set(got) == set(expected)
    for n, (status, part) in expected.items():
        assert got[n][0] == status and part in got[n][1], (n, got[n])
    assert all(0 <= r.score <= r.points for r in grade.results)


@pytest.mark.slow
def test_nothing_outside_the_sandbox_changed(graded_class):
    assert graded_class["after"] == graded_class["before"]
    now = {p.name: p.read_bytes() for p in (graded_class["tmp"] / "out").rglob("*") if p.is_file()}
    assert now == graded_class["written"]  # no one rewrote the gradebook after the grader returned


@pytest.mark.slow
def test_no_process_of_a_submission_outlives_the_grader(graded_class):
    assert graded_class["alive"] == []  # when the grader returned
    assert _marked_processes() == []    # and now


def _marked_processes() -> list[str]:
    return [p for p in os.listdir("/proc") if p.isdigit() and _cmdline(p).find(MARK) >= 0]


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace")
    except OSError:
        return ""


def _uid_python(monkeypatch) -> None:
    """Where the grader's Python sits in a folder only root may enter (pyenv under /root), the worker runs on the
    system Python of the same version, as the grader's error message tells a teacher to do; else skip."""
    if isolation.uid_problem() is None:
        return
    system = Path(f"/usr/bin/python{sys.version_info[0]}.{sys.version_info[1]}")
    if system.exists():
        monkeypatch.setenv(isolation.PYTHON_ENV, str(system))
    problem = isolation.uid_problem()
    if problem is not None:
        pytest.skip(problem)


@pytest.mark.slow
@pytest.mark.skipif(not (hasattr(os, "geteuid") and os.geteuid() == 0), reason="a user id of its own needs root")
def test_the_user_id_sandbox_grades_as_bubblewrap_does(tmp_path, monkeypatch):
    _uid_python(monkeypatch)
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "alice.ipynb").write_bytes(write(answered()))
    with _own_home_and_cache():
        hostile = _hostile(tmp_path)
        for name in ("writes_outside", "fork_bomb", "sysv_memory"):
            (folder / f"{name}.ipynb").write_bytes(hostile[name][0])
        # no RLIMIT_NPROC under a user id of its own: a killed worker's zombies, until init reaps them, counted
        # against the next worker of the same id and failed its forks (1 run in 3 here); the watch alone stops it
        (folder / "nproc.ipynb").write_bytes(edited("language_probs", prefix=textwrap.dedent(f"""\
            import resource
            if 0 <= resource.getrlimit(resource.RLIMIT_NPROC)[0] <= {2 * MAX_TASKS}:
                raise RuntimeError("RLIMIT_NPROC is " + str(resource.getrlimit(resource.RLIMIT_NPROC)))""")))
        before = _fingerprint(*_outside(tmp_path))
        grades = {g.path.stem: g for g in grade_all(folder, tmp_path / "out" / "grades.csv", progress=False,
                                                      limits=dataclasses.replace(LIMITS, isolation="uid"))}
        after = _fingerprint(*_outside(tmp_path))
    for name in ("alice", "writes_outside", "nproc", "sysv_memory"):
        assert [(r.status, r.message) for r in grades[name].results if r.status != "correct"] == [], name
    got = {r.name: (r.status, r.message) for r in grades["fork_bomb"].results}
    for n, (status, part) in hostile["fork_bomb"][1].items():
        assert got[n][0] == status and part in got[n][1], (n, got[n])
    assert after == before and _marked_processes() == []


@pytest.mark.slow
@pytest.mark.skipif(not BWRAP, reason="bubblewrap is not installed here")
def test_under_bubblewrap_the_worker_sees_no_notebook_and_no_classmate(tmp_path):
    probe = edited("language_probs", prefix=textwrap.dedent(f"""\
        import os
        assert not os.path.exists({str(ROOT / 'notebooks')!r})
        assert not os.path.exists({str(tmp_path / 'class')!r})
        assert os.listdir("/proc").count("1") == 1 and len([p for p in os.listdir("/proc") if p.isdigit()]) < 10
        try:
            open({str(Path(course_lib.__file__))!r}, "a")
        except OSError as e:
            assert e.errno == 30, e  # read-only file system"""))
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "probe.ipynb").write_bytes(probe)
    grade, = grade_all(folder, tmp_path / "grades.csv", limits=dataclasses.replace(LIMITS, isolation="bwrap"),
                       progress=False)
    assert [r.status for r in grade.results] == ["correct"] * len(NAMES), [str(r) for r in grade.results]


def test_a_sandbox_cannot_be_asked_for_by_a_name_that_does_not_exist():
    with pytest.raises(ValueError, match="isolation is one of bwrap, uid, unsafe"):
        isolation.choose("docker")
    assert sys.platform  # (the check above runs on every platform)


# ----------------------------------------------------------------------------- the fallback's pieces, and output

@pytest.mark.skipif(not (hasattr(os, "geteuid") and os.geteuid() == 0), reason="a user id of its own needs root")
def test_a_submission_s_user_id_owns_only_its_folder_and_its_processes_are_swept(tmp_path):
    import subprocess

    work = tmp_path / "grade" / "work"
    work.mkdir(parents=True)
    box = isolation.Sandbox("uid", work)
    assert work.stat().st_uid == box.uid and (work.stat().st_mode & 0o777) == 0o700
    assert (work.parent.stat().st_mode & 0o777) == 0o711 and box.uid != isolation.fresh_uid()
    argv, kwargs = box.popen_args(["/bin/sleep", "60"], {"PATH": "/usr/bin:/bin"})
    assert kwargs["user"] == box.uid and kwargs["extra_groups"] == [] and kwargs["env"]["HOME"] == str(work)
    daemon = subprocess.Popen(argv, **kwargs)  # what a submission left running, in its own session
    assert isolation._processes_of(box.uid) == [daemon.pid]
    box.cleanup()
    assert daemon.wait(timeout=10) == -9 and isolation._processes_of(box.uid) == []


@pytest.mark.skipif(not (hasattr(os, "geteuid") and os.geteuid() == 0), reason="a user id of its own needs root")
def test_what_a_user_id_left_where_every_user_may_write_is_removed_and_its_own_folder_kept(tmp_path):
    """Files in /tmp, /var/tmp, /dev/shm and /run/lock outlive the processes that wrote them (in /dev/shm they hold memory
    until the machine restarts): the sandbox's cleanup deletes what the submission's user id owns there."""
    import subprocess

    work = tmp_path / "grade" / "work"
    work.mkdir(parents=True)
    box = isolation.Sandbox("uid", work)
    mark = f"course-leftover-{box.uid}"
    left = [Path("/tmp") / mark, Path("/var/tmp") / mark, Path("/dev/shm") / mark]
    if Path("/run/lock").is_dir() and Path("/run/lock").stat().st_mode & 0o002:  # a red-team finding: kept there
        left.append(Path("/run/lock") / mark)
    code = ("import os, sys\n"
            "for p in sys.argv[1:]:\n"
            "    os.makedirs(p + '.d/inner', exist_ok=True)\n"
            "    open(p, 'w').write('x')\n"
            "    open(p + '.d/inner/f', 'w').write('x')\n"
            "open('mine.txt', 'w').write('kept')\n")
    python = Path("/usr/bin/python3")  # any Python every user may run (the grader's may sit in root's home)
    if not python.exists():
        pytest.skip("no /usr/bin/python3 for another user id to run")
    argv, kwargs = box.popen_args([str(python), "-c", code, *map(str, left)], {"PATH": "/usr/bin:/bin"})
    subprocess.run(argv, **kwargs, check=True, timeout=60)
    made = [p for p in left if p.parent.is_dir() and os.access(p.parent, os.W_OK)]
    assert made and all(p.exists() and p.with_name(p.name + ".d").is_dir() for p in made)
    try:
        box.cleanup()
        assert [p for p in made if p.exists() or p.with_name(p.name + ".d").exists()] == []
        assert (work / "mine.txt").read_text() == "kept"  # the grader deletes the folder itself, at the end
    finally:
        import shutil

        for p in left:
            shutil.rmtree(p.with_name(p.name + ".d"), ignore_errors=True)
            p.unlink(missing_ok=True)


@pytest.mark.skipif(not BWRAP or not isolation._bwrap_sizes_tmpfs(), reason="needs bubblewrap 0.5 or later")
def test_under_bubblewrap_every_place_a_submission_may_write_is_small_and_in_memory(tmp_path):
    """Many files (each under the 256 MB a file may have) filled the disk through the submission's folder, and
    the 12 GB of memory behind /dev and /dev/shm: now the folder, /tmp and /dev/shm are sized tmpfs, /dev is
    read-only, and a copy of the grader's copy of the notebook is there, the submission's to change or delete, while
    the folder on disk is not written."""
    import subprocess

    work = tmp_path / "work"
    work.mkdir()
    (work / "nb.ipynb").write_text("the notebook")
    probe = textwrap.dedent(f"""\
        import errno, os

        def size(p):
            s = os.statvfs(p)
            return s.f_blocks * s.f_frsize

        def fails(errno_, f, *a):
            try:
                f(*a)
            except OSError as e:
                assert e.errno == errno_, (f, a, e)
            else:
                raise AssertionError(f"{{a}} did not fail")

        assert (size("."), size("/tmp"), size("/dev/shm")) == ({isolation.WORK_BYTES}, {isolation.TMP_BYTES},
                                                               {isolation.SHM_BYTES})
        assert open("nb.ipynb").read() == "the notebook"
        open("nb.ipynb", "a").write(" changed")
        assert open("nb.ipynb").read() == "the notebook changed"
        os.remove("nb.ipynb")
        fails(errno.EROFS, open, "/dev/owned", "w")
        open("/dev/null", "w").write("still a sink")

        def fill(folder, n, mb=1):
            chunk = b"x" * (mb * 2**20)
            for i in range(n):
                with open(os.path.join(folder, f"f{{i}}"), "wb") as f:
                    f.write(chunk)

        fails(errno.ENOSPC, fill, ".", {isolation.WORK_BYTES // 2**20 + 1})
        fails(errno.ENOSPC, fill, "/dev/shm", {isolation.SHM_BYTES // 2**20 + 1})
        print("probed")""")
    fd = os.open(work / "nb.ipynb", os.O_RDONLY)
    try:
        argv = [isolation.shutil.which("bwrap"), *isolation._bwrap_args(work, None, {str(work / "nb.ipynb"): fd}),
                "--", sys.executable, "-c", probe]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, pass_fds=(fd,))
    finally:
        os.close(fd)
    assert done.returncode == 0 and done.stdout.strip() == "probed", done.stderr[-2000:]
    assert sorted(p.name for p in work.iterdir()) == ["nb.ipynb"]
    assert (work / "nb.ipynb").read_text() == "the notebook"


def test_what_a_worker_prints_is_capped_whatever_its_size(monkeypatch):
    from course_lib.exercises import channel

    r, w = os.pipe()
    fake = channel.Worker.__new__(channel.Worker)
    fake.kept = []
    fake.proc = type("P", (), {"stderr": os.fdopen(r, "rb")})()
    import threading

    reader = threading.Thread(target=fake._read_output)
    reader.start()
    chunk = b"x" * 2**20
    for _ in range(64):  # 64 MB without a newline
        os.write(w, chunk)
    os.close(w)
    reader.join(timeout=60)
    assert not reader.is_alive() and len(fake.output) == channel.OUTPUT_CAP


def test_the_first_private_folder_on_the_way_to_the_project_is_named():
    """The user-id refusal names the folder that keeps other user ids out of the project (e.g. a mktemp folder)."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="private-folder-"))  # mode 0700, as mktemp -d makes it
    try:
        inner = base / "a" / "b" / "c"
        inner.mkdir(parents=True)
        assert isolation.private_folder(inner) == base
        for p in (base, base / "a", base / "a" / "b", inner):
            p.chmod(0o755)
        if isolation.private_folder(base.parent) is not None:
            pytest.skip(f"{isolation.private_folder(base.parent)} is already private on this machine")
        assert isolation.private_folder(inner) is None
        (base / "a" / "b").chmod(0o700)
        assert isolation.private_folder(inner) == base / "a" / "b"
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_the_sandbox_mounts_no_folder_of_the_import_path_that_is_not_installed_code(tmp_path, monkeypatch):
    """`python -m` puts the working directory on sys.path, PYTHONPATH its entries: the class's folder or the
    teacher's home must not become readable in the sandbox (a red-team read copied a classmate's answer so)."""
    classroom, elsewhere = tmp_path / "classroom", tmp_path / "teacher" / "lib"
    for d in (classroom, elsewhere):
        d.mkdir(parents=True)
    monkeypatch.chdir(classroom)
    monkeypatch.setattr(sys, "path", [str(classroom), "", str(elsewhere), *sys.path])
    root = Path(course_lib.__file__).resolve().parents[1]
    mounted = isolation._python_paths(root)
    assert not any(classroom.is_relative_to(p) or elsewhere.is_relative_to(p) for p in mounted), mounted
    site = Path(torch.__file__).resolve().parents[1]
    assert any(site.is_relative_to(p) for p in mounted) and root / "course_lib" in mounted
    assert Path(sys.prefix).resolve() in mounted


def _bare_worker(code: str):
    """A channel.Worker around ``python -c code`` (no sandbox): its frame reader running, nothing sent yet."""
    import subprocess
    import threading

    from course_lib.exercises import channel

    w = channel.Worker.__new__(channel.Worker)
    w.proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    w.sandbox = type("NoSandbox", (), {"exit_code": staticmethod(lambda c: c), "cleanup": staticmethod(lambda: None)})()
    w.frames = channel.queue.Queue(maxsize=channel.FRAMES_AHEAD)
    w.closed, w.stalled, w.kept = threading.Event(), False, []
    w.watch = channel.Watch(lambda: [w.proc.pid], channel.MAX_TASKS, 2**40, lambda _: w._kill())
    w.threads = [threading.Thread(target=w._read_frames, daemon=True)]
    w.threads[0].start()
    return w


def test_a_worker_that_stops_reading_its_input_is_stopped_not_waited_for():
    """A request the worker never reads (a red-team submission stopped the worker with SIGSTOP, then the grader
    blocked for ever writing 835 KB to it): the write gives up after its timeout and the worker counts as idle."""
    from course_lib.exercises import channel

    w = _bare_worker("import os, time\nkeep = os.dup(0)\nos.dup2(os.open(os.devnull, os.O_RDONLY), 0)\ntime.sleep(120)")
    start = time.monotonic()
    w.send({"op": "store", "key": 0}, b"x" * 4_000_000, timeout=1.0)  # far more than a pipe holds
    assert w.stalled and time.monotonic() - start < 30
    with pytest.raises(channel.Broken) as e:
        w.next(time.monotonic() + 60)
    assert e.value.how == "idle"
    assert w.stop() != 0 and w.proc.poll() is not None


def test_frames_no_one_asked_for_wait_in_the_worker_and_are_dropped_when_it_stops():
    """65 frames of 1 MB sent unasked: the grader holds at most FRAMES_AHEAD of them, and after stop() its reader
    ends and nothing is left (the red-team run kept 2.9 GB and two reader threads for ever)."""
    from course_lib.exercises import channel, wire

    w = _bare_worker("import os\nfrom course_lib.exercises import wire\n"
                     "for i in range(65):\n    wire.write_frame(1, {'ev': 'junk', 'i': i}, b'y' * 2**20)\n"
                     "import time\ntime.sleep(120)")
    deadline = time.monotonic() + 60
    while w.frames.qsize() < channel.FRAMES_AHEAD and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # had the reader not waited, it would read on
    assert w.frames.qsize() == channel.FRAMES_AHEAD
    w.stop()
    assert not w.threads[0].is_alive() and w.frames.qsize() == 0
    assert wire.MAX_PAYLOAD >= 2**20


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="the watch reads /proc (Linux)")
def test_the_watch_sees_a_grandchild_and_trips_on_either_limit():
    import subprocess

    from course_lib.exercises import watch

    # the grandchild says when its start-up is over: until then it opens and closes files of its own, and a count
    # of open files read during it can be gone by the next reading (a fresh clone failed on exactly that)
    child = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time\n"
                              "p = subprocess.Popen([sys.executable, '-c', "
                              "'import time; print(\"ready\", flush=True); time.sleep(30)'])\n"
                              "print(p.pid, flush=True)\ntime.sleep(30)"], stdout=subprocess.PIPE, text=True)
    try:
        lines = sorted(child.stdout.readline().strip() for _ in range(2))   # the pid and "ready", in either order
        assert lines[1] == "ready", lines
        grandchild = int(lines[0])
        pids = watch.descendants(child.pid)
        assert pids[0] == child.pid and grandchild in pids
        tasks, memory, open_files = watch.usage(pids)
        assert tasks >= 2 and memory > 2**20 and open_files >= 6  # each: stdin, stdout, stderr
        assert watch.descendants(grandchild) == [grandchild]
        assert watch.over(pids, max_tasks=1, max_bytes=2**40) == "tasks"
        assert watch.over(pids, max_tasks=10_000, max_bytes=2**20) == "memory"
        assert watch.over(pids, max_tasks=10_000, max_bytes=2**40, max_files=open_files - 1) == "files"
        assert watch.over(pids, max_tasks=10_000, max_bytes=2**40, max_files=open_files + 100) is None
        stopped = []
        w = watch.Watch(lambda: pids, 1, 2**40, stopped.append, every=0.01)
        deadline = time.monotonic() + 30
        while not stopped and time.monotonic() < deadline:
            time.sleep(0.01)
        assert stopped == ["tasks"] and w.tripped == "tasks"
    finally:
        for p in watch.descendants(child.pid)[::-1]:
            try:
                os.kill(p, 9)
            except OSError:
                pass
        child.wait()


@pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="memfd_create is Linux's")
def test_the_watch_counts_memory_held_in_a_memfd_that_no_process_maps():
    # a red-team finding: 6 memfds of 256 MB, written and never mapped, were in no process's RSS or PSS
    import subprocess

    from course_lib.exercises import watch

    code = ("import os, sys, time\nfds = []\nfor _ in range(2):\n    fd = os.memfd_create('x')\n"
            "    for _ in range(32):\n        os.write(fd, b'x' * 2**20)\n    fds.append(fd)\n"
            "fds.append(os.dup(fds[0]))  # the same file twice: counted once\n"
            "print('ready', flush=True)\ntime.sleep(30)")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    idle = subprocess.Popen([sys.executable, "-c", "print('ready', flush=True)\nimport time; time.sleep(30)"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready" and idle.stdout.readline().strip() == "ready"
        with_files, without = watch.usage([holder.pid])[1], watch.usage([idle.pid])[1]  # (tasks, bytes, files)
        assert 64 * 2**20 <= with_files - without < 80 * 2**20
        assert watch.over([holder.pid], 10_000, 60 * 2**20) == "memory"
    finally:
        for p in (holder, idle):
            p.kill()
            p.wait()


def test_a_zombie_counts_only_while_its_parent_is_the_submission_s():
    # after a sweep, killed processes wait as zombies for the system's init: under a user id of its own they
    # were counted against the next worker (a fork bomb's, under load), and stopped its honest checks
    import subprocess

    from course_lib.exercises import watch

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and "Z" not in Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1][:3]:
        time.sleep(0.01)  # exited, not yet waited for: a zombie whose parent is this test
    try:
        assert watch.usage([child.pid])[0] == 0                 # its parent is not among the watched
        assert watch.usage([os.getpid(), child.pid])[0] >= 2    # its parent is: it still holds a process id
    finally:
        child.wait()
