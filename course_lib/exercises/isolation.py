"""Where a submission's code runs: a sandbox that can write nothing but its own folder (the grader's side of it).

Three ways, chosen by :func:`choose` (``Limits.isolation``; ``None``: the safest this machine offers):

* ``"bwrap"`` — bubblewrap (Debian/Ubuntu package ``bubblewrap``), the sandbox Flatpak uses. The worker sees a
  read-only view of the system (started by root, without what only root may read: :mod:`.system_files`), the
  Python installation and the ``course_lib`` package (not the repository around it: no notebooks, no solutions),
  its own folder (writable) and a private ``/tmp``; nothing else of the disk — not the other submissions, not the
  gradebook, not the teacher's home. It gets new user, PID, network, IPC and UTS namespaces (no network; it cannot
  see or signal any process outside), all capabilities dropped, a new session (no terminal injection), and dies
  with the grader: when the grader stops it, every process it started dies too.
* ``"uid"`` — where bubblewrap is missing or cannot make namespaces, and the grader runs as root: the worker runs
  as a user id of its own (one per submission, owning nothing), in its own folder. It cannot write anything of the
  grader, the class or another submission (their files are not its own), nor signal or trace their processes; every
  process of that user id is killed when the submission is done. It can still **read** what every user may read
  (world-readable files) and use the network: install bubblewrap to close that.
* ``"unsafe"`` — the grader's own user, with only time and memory limits: what ``--unsafe`` asks for, for a
  teacher grading their own notebooks. Without bubblewrap and not as root, the grader refuses to grade unless asked
  for this (:class:`SandboxUnavailable`).
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from .system_files import private_to_root
from .own_uid import SHARED_TMP, _processes_of, fresh_uid, remove_owned, sweep  # noqa: F401 (the "uid" sandbox's pieces)

MODES = ("bwrap", "uid", "unsafe")
INSTALL = ("install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap), or "
           "grade as root (each submission then runs as a user id of its own), or pass --unsafe to grade with only "
           "time and memory limits (only for notebooks you trust)")


class SandboxUnavailable(RuntimeError):
    """This machine offers no sandbox of the kind asked for; the message says what to do."""


@functools.lru_cache(maxsize=1)
def bwrap_problem() -> str | None:
    """None when bubblewrap can make a sandbox here; else why not, in a few words."""
    exe = shutil.which("bwrap")
    if exe is None:
        return "bubblewrap (bwrap) is not installed"
    try:
        done = subprocess.run([exe, *_bwrap_args(Path("/"), None), "--", "true"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"bubblewrap could not start ({e})"
    if done.returncode != 0:
        return "bubblewrap cannot make a sandbox here: " + done.stderr.decode("utf-8", "replace").strip()[:200]
    return None


ENV = "COURSE_GRADER_ISOLATION"  # the isolation when none is asked for (the test suite sets "unsafe" where none works)


def choose(requested: str | None) -> str:
    """The isolation to use: ``requested``, else $COURSE_GRADER_ISOLATION, else the safest available;
    :class:`SandboxUnavailable` if none fits."""
    requested = requested or os.environ.get(ENV) or None
    if requested is not None and requested not in MODES:
        raise ValueError(f"isolation is one of {', '.join(MODES)} (or None for the safest available), not {requested!r}")
    if requested == "unsafe":
        return "unsafe"
    problem = bwrap_problem() if sys.platform.startswith("linux") else "bubblewrap needs Linux"
    if requested in (None, "bwrap") and problem is None:
        return "bwrap"
    if requested == "bwrap":
        raise SandboxUnavailable(f"the grader was asked for a bubblewrap sandbox, but {problem}")
    other = uid_problem()
    if other is None:
        return "uid"
    if requested == "uid":
        raise SandboxUnavailable(f"the grader was asked to run each submission as a user id of its own, but {other}")
    raise SandboxUnavailable(f"the grader will not run students' code without a sandbox, and {problem}; {other}. "
                             f"To grade: {INSTALL}")


PYTHON_ENV = "COURSE_GRADER_PYTHON"  # the Python that runs the worker, when not the grader's own


def worker_python() -> tuple[str, list[str]]:
    """The interpreter that runs the worker, and the folders to put on its import path: the grader's own Python
    (nothing to add), or $COURSE_GRADER_PYTHON with the grader's site-packages on its path. The second is for the
    user-id sandbox where the grader's Python lives in a folder only root may enter (pyenv under /root): a
    system Python of the same version, e.g. /usr/bin/python3.11, runs the same packages."""
    exe = os.environ.get(PYTHON_ENV)
    if not exe:
        return sys.executable, []
    import site

    return exe, [p for p in dict.fromkeys(site.getsitepackages()) if Path(p).is_dir()]


def uid_problem() -> str | None:
    """None when the worker can run as a user id of its own here (root, and a Python that any user can run)."""
    exe, extra = worker_python()
    return _uid_problem(exe, tuple(extra))


@functools.lru_cache(maxsize=4)
def _uid_problem(exe: str, extra: tuple[str, ...]) -> str | None:
    if not (hasattr(os, "geteuid") and os.geteuid() == 0):
        return "running each submission as a user id of its own needs the grader to run as root"
    uid = fresh_uid()
    want = f"{sys.version_info[0]}.{sys.version_info[1]}"
    probe = (f"import sys; v = '%d.%d' % sys.version_info[:2]; v == {want!r} or sys.exit("
             f"'this Python is ' + v + ', the grader runs {want}'); import course_lib, torch")
    try:
        done = subprocess.run([exe, "-c", probe], user=uid, group=uid, extra_groups=[],
                              cwd="/", env=_worker_env_for_probe(extra), capture_output=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as e:
        problem = f"a process of another user id could not start {exe} ({e})"
    else:
        last = (done.stderr.decode("utf-8", "replace").strip().splitlines() or [""])[-1][:200]
        problem = None if done.returncode == 0 else f"another user id cannot run the grader's packages with {exe}: {last}"
    finally:
        sweep(uid)
    private = private_folder(Path(_worker_env_for_probe()["PYTHONPATH"].split(os.pathsep)[0]))
    if problem is not None and "No module named 'course_lib'" in problem and private is not None:
        problem += (f" ({private} is private: other user ids cannot enter it, so they cannot read the project "
                    "below it; move the project, or let others enter that folder with chmod o+x)")
    elif problem is not None and exe == sys.executable:
        problem += (f" (a folder on its way may be private to root: set {PYTHON_ENV} to a Python of version {want} "
                    "that every user may run, e.g. /usr/bin/python" + want + ")")
    return problem


def private_folder(path: Path) -> Path | None:
    """The first folder on the way to ``path`` (``path`` included) that other users cannot enter, or None."""
    for p in [*reversed(path.parents), path]:
        try:
            if not p.stat().st_mode & 0o001:
                return p
        except OSError:
            return p
    return None


def _worker_env_for_probe(extra: tuple[str, ...] = ()) -> dict:
    import course_lib

    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": os.pathsep.join([str(Path(course_lib.__file__).resolve().parents[1]), *extra])}


# ----------------------------------------------------------------------------- bubblewrap

SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")


def _installed(p: Path, prefixes: set[Path]) -> bool:
    """A folder of installed code: inside the installation or the virtual environment, or a site-packages."""
    return p.name in ("site-packages", "dist-packages") or any(p.is_relative_to(x) for x in prefixes)


def _python_paths(root: Path) -> list[Path]:
    """What the worker's Python needs to read: the installation, the virtual environment, the folders of installed
    packages on the import path (the repository itself only as its ``course_lib`` package). Never the folder the
    grader was started from, nor any other folder on its import path (``python -m`` puts the working directory
    there, PYTHONPATH its entries): that may be the class's folder, or the teacher's home."""
    prefixes = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    paths = set(prefixes)
    paths |= {Path(p) for p in sys.path if p and Path(p).is_dir() and _installed(Path(p).resolve(), prefixes)}
    exe, extra = worker_python()
    paths |= {Path(p) for p in extra}
    paths.add(Path(exe).resolve().parent)
    keep = []
    for p in sorted({p.resolve() for p in paths}):
        if p == root or root.is_relative_to(p) or p == Path("/") or any(p.is_relative_to(s) for s in SYSTEM):
            continue  # the repository (or a folder holding it) would show the notebooks and their solutions
        if not any(p.is_relative_to(k) for k in keep):
            keep.append(p)
    return keep + [root / "course_lib"]


# Under bubblewrap every place a submission may write lives in memory and has a size: its folder, /tmp and
# /dev/shm (what multiprocessing and torch's DataLoader use); /dev itself is read-only. Files past a size fail
# with "No space left on device", so neither many small files nor one large one can fill the grading machine's
# disk or memory (each file is also capped by RLIMIT_FSIZE, worker.FILE_BYTES).
TMP_BYTES = 512 * 2**20   # /tmp
WORK_BYTES = 256 * 2**20  # the submission's own folder (it starts with the notebook's copy, read-only)
SHM_BYTES = 64 * 2**20    # /dev/shm


@functools.cache
def _bwrap_sizes_tmpfs() -> bool:
    """Whether this bubblewrap can size a tmpfs (``--size``, bubblewrap 0.5 and later)."""
    try:
        return "--size" in subprocess.run([shutil.which("bwrap") or "bwrap", "--help"], capture_output=True,
                                          text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return False


def _tmpfs(path: str, size: int) -> list[str]:
    """A tmpfs at ``path``, ``size`` bytes where bubblewrap can size one (else as large as the kernel allows)."""
    return [*(["--size", str(size)] if _bwrap_sizes_tmpfs() else []), "--tmpfs", path]


def _bwrap_args(work: Path, cache: Path | None, files: dict[str, int] | None = None) -> list[str]:
    """bubblewrap's options for a worker in ``work``. ``files``: {path in ``work``: an open descriptor of it}, copied
    into the in-memory folder (without them, or with an old bubblewrap, ``work`` itself is bound)."""
    args = ["--die-with-parent", "--new-session", "--unshare-all", "--uid", "65534", "--gid", "65534",
            "--cap-drop", "ALL", "--proc", "/proc", "--dev", "/dev", *_tmpfs("/dev/shm", SHM_BYTES),
            "--remount-ro", "/dev", *_tmpfs("/tmp", TMP_BYTES)]
    for p in SYSTEM:
        args += ["--ro-bind-try", p, p]
    for p, is_dir in (private_to_root() if os.geteuid() == 0 else ()):
        args += [*_tmpfs(p, 4096), "--remount-ro", p] if is_dir else ["--ro-bind", "/dev/null", p]
    if work != Path("/"):
        import course_lib

        root = Path(course_lib.__file__).resolve().parents[1]
        for p in _python_paths(root):
            args += ["--ro-bind", str(p), str(p)]
        if cache is not None and cache.is_dir():
            args += ["--ro-bind", str(cache), str(cache)]
        if _bwrap_sizes_tmpfs() and files is not None:  # a folder of its own size, holding copies of the grader's
            args += _tmpfs(str(work), WORK_BYTES)            # files (the submission may change or delete its own)
            for dest, fd in sorted(files.items()):
                args += ["--file", str(fd), dest]
        else:  # an old bubblewrap: the folder on disk (each file still capped by RLIMIT_FSIZE)
            args += ["--bind", str(work), str(work)]
        args += ["--chdir", str(work)]
    return args


# ----------------------------------------------------------------------------- starting the worker

class Sandbox:
    """How one submission's worker is started and stopped, in ``work`` (its folder, the only one it may write)."""

    def __init__(self, mode: str, work: Path):
        self.mode, self.work, self.uid = mode, work, None
        if mode == "uid":
            self.uid = fresh_uid()
            work.parent.chmod(0o711)  # its parent: passable, not listable
            os.chown(work, self.uid, self.uid)
            work.chmod(0o700)

    def popen_args(self, argv: list[str], env: dict) -> tuple[list[str], dict]:
        """The command line and Popen keywords that start ``argv`` in this sandbox with ``env``."""
        env = {**env, "HOME": str(self.work), "TMPDIR": str(self.work) if self.mode != "bwrap" else "/tmp",
               "MPLCONFIGDIR": str(self.work / ".matplotlib"), "XDG_CACHE_HOME": str(self.work / ".cache")}
        kwargs = dict(cwd=str(self.work), env=env, start_new_session=(os.name == "posix"))
        if self.mode == "uid":
            kwargs.update(user=self.uid, group=self.uid, extra_groups=[], umask=0o077)
        if self.mode != "bwrap":
            return argv, kwargs
        from course_lib.paths import CACHE_ENV, cache_root

        cache = cache_root()
        env[CACHE_ENV] = str(cache)
        setenv = [x for k, v in sorted(env.items()) for x in ("--setenv", k, v)]
        files = self._open_files()
        kwargs["pass_fds"] = tuple(files.values())
        return [shutil.which("bwrap"), *_bwrap_args(self.work, cache, files), "--clearenv", *setenv, "--", *argv], kwargs

    def _open_files(self) -> dict[str, int]:
        """Descriptors of the files the grader put in ``work`` (its copy of the notebook), for bubblewrap to copy into
        the in-memory folder: each new worker starts from the grader's copy again. Closed by :meth:`cleanup`."""
        self._close_files()
        self._fds = {str(f): os.open(f, os.O_RDONLY) for f in sorted(self.work.iterdir()) if f.is_file()}
        return self._fds

    def _close_files(self) -> None:
        for fd in getattr(self, "_fds", {}).values():
            os.close(fd)
        self._fds = {}

    def worker_pid(self, pid: int) -> int:
        """The worker's process id, seen from the grader (under bubblewrap, the first process that is not bwrap)."""
        if self.mode != "bwrap":
            return pid
        for _ in range(4):
            try:
                with open(f"/proc/{pid}/comm") as f:
                    if f.read().strip() != "bwrap":
                        return pid
                with open(f"/proc/{pid}/task/{pid}/children") as f:
                    children = f.read().split()
            except OSError:
                return pid
            if not children:
                return pid
            pid = int(children[0])
        return pid

    def max_tasks(self, n: int) -> int | None:
        """``n`` where RLIMIT_NPROC counts only this worker's tasks (a user namespace made by another user than root,
        Linux >= 5.14), else None: root's are never limited, older kernels count all, and a user id of its own still
        counts a killed worker's unreaped zombies against the next one."""
        new_kernel = tuple(int(x) for x in re.findall(r"\d+", os.uname().release)[:2]) >= (5, 14)
        return n if self.mode == "bwrap" and os.geteuid() != 0 and new_kernel else None

    def pids(self, launched: int) -> list[int]:
        """Every process of the submission now: those of its user id, or ``launched`` and all below it (under
        bubblewrap an orphan is adopted inside the sandbox)."""
        from .watch import descendants

        return _processes_of(self.uid) if self.uid is not None else descendants(launched)

    def exit_code(self, code: int) -> int:
        """The worker's exit code from its launcher's: bubblewrap exits with 128 + n when the worker was killed by
        signal n, which Popen reports as -n for a process it started itself."""
        return -(code - 128) if self.mode == "bwrap" and 128 < code < 128 + 65 else code

    def cleanup(self) -> None:
        """After the worker is stopped: every process the submission started is gone, and (user id) every file it
        left where every user may write."""
        self._close_files()
        if self.mode == "uid" and self.uid is not None:
            sweep(self.uid)
            remove_owned(self.uid, keep=self.work)
