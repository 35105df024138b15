"""The sandbox side of grading: one fresh interpreter per submission, started by :mod:`.sandbox` inside the
isolation it chose (never imported by notebooks, never trusted).

    python -m course_lib.exercises.worker     # frames on stdin, frames on its original stdout (see .wire)

It runs the submission's ``setup`` and ``exercise`` cells, one by one, each under a limit of computing time
(``RLIMIT_CPU``), all under a memory limit (``RLIMIT_AS``), and reports what each cell did. Then it **serves**:
the grader runs every check itself, on its side of the boundary, and asks this process only to call the student's
functions on the inputs it chose (``call``), to read a prediction variable (``get``) or to say which names the
notebook defines (``probe``). Each exercise is served by a child forked for it (on Linux; elsewhere by the worker
itself, and the grader restarts the worker after a crash), with its own limits, so that an exit, a crash, a loop or
a monkey-patch ends that exercise only; the worker relays its frames and reports how it ended.

Nothing this process sends decides a grade: it sends plain data (:func:`.wire.encode`), which the grader compares
with its reference. Whatever the student's code prints goes to stderr, which the grader reads and caps;
it reads an empty standard input (``input()`` raises EOFError), so it can neither wait on nor eat the grader's
frames.
"""
from __future__ import annotations

import contextlib
import math
import os
import select
import signal
import sys
import time

try:
    import resource
except ImportError:  # Windows: no rlimits; the grader's wall-clock limits still hold
    resource = None

from . import calls, sysv, wire
from .clock import IdleClock
from .grading import python_only
from .guard import LibraryGuard
from .limits import OPEN_FILES


def send(fd: int, payload: bytes = b"", **header) -> None:
    wire.write_frame(fd, header, payload)


def _cpu() -> float:
    if resource is None:
        return time.process_time()
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


@contextlib.contextmanager
def cpu_limit(seconds: float):
    """At most ``seconds`` more of computing, then SIGXCPU ends the process (the grader says 'timed out')."""
    if resource is None:
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    target = math.ceil(_cpu() + seconds)
    resource.setrlimit(resource.RLIMIT_CPU, (target if hard == resource.RLIM_INFINITY else min(target, hard), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


FILE_BYTES = 256 * 2**20  # the largest file a submission may write (RLIMIT_FSIZE): a notebook needs none so large


def limit_files() -> None:
    """No file written larger than FILE_BYTES: a write past it fails with 'File too large' (Python ignores
    SIGXFSZ), instead of filling the grading machine's disk or, in /tmp, its memory; and at most OPEN_FILES open
    in one process (each pipe or socket may hold kernel memory)."""
    if resource is None or not hasattr(resource, "RLIMIT_FSIZE"):
        return
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_BYTES, FILE_BYTES))
    with contextlib.suppress(ValueError, OSError):
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        n = OPEN_FILES if hard == resource.RLIM_INFINITY else min(OPEN_FILES, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))


def limit_tasks(n: int | None) -> None:
    """At most ``n`` processes and threads (RLIMIT_NPROC), where the grader found that the kernel counts only the
    submission's own (:func:`.isolation.Sandbox.max_tasks`): a fork bomb then fails at its fork, before the grader's
    watch would see it. None: not enforceable here (the grader's watch alone stops it)."""
    if n is None or resource is None or not hasattr(resource, "RLIMIT_NPROC"):
        return
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NPROC, (n, n))


def limit_memory(extra_bytes: int) -> None:
    """Address space limited to what the process uses now plus ``extra_bytes`` (Linux; elsewhere not enforced)."""
    if resource is None or not sys.platform.startswith("linux"):
        return
    with open("/proc/self/status") as f:
        vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (vm + extra_bytes, resource.getrlimit(resource.RLIMIT_AS)[1]))


def _no_check(name, *args, **kwargs):
    """Stands in for ``check`` while grading: the grader runs every check itself afterwards."""


def cell_phrase(e: BaseException) -> str:
    """What a cell did, to follow 'the cell that defines `f` …'."""
    from .core import describe_raised

    if isinstance(e, ModuleNotFoundError) and e.name:
        return (f"imports `{e.name}`, which is not installed where notebooks are graded "
                "(use only what the setup cell imports)")
    if isinstance(e, SystemExit):
        return "called sys.exit() or exit()"
    return describe_raised(e, "").strip()


def run_cells(job: dict, namespace: dict, guard: LibraryGuard, fd: int) -> None:
    """Run the graded cells; reports each cell that failed with the message its exercises get (``{n}``: the name)."""
    for index, source in job["cells"]:
        if str(index) in job["skip"]:
            continue  # it stopped an earlier worker; the grader already knows why
        send(fd, ev="cell", i=index, pid=os.getpid())
        before = dict(namespace)
        namespace["check"] = _no_check
        failed = None
        try:
            with cpu_limit(job["cell_cpu"]):
                exec(compile(python_only(source), f"<{job['filename']}, cell {index}>", "exec"), namespace)
        except BaseException as e:  # noqa: BLE001 - one broken cell must not hide the other exercises
            failed = f"the cell that defines `{{n}}` {cell_phrase(e)}, so `{{n}}` was never defined"
        patched = guard.restore()
        if patched:  # what this cell defined is not graded: it could only pass with the library changed
            for k in [k for k, v in namespace.items() if k not in before or before[k] is not v]:
                del namespace[k]
            failed = (f"the cell that defines `{{n}}` replaced `{patched[0]}`; changing course_lib or torch is not "
                      "allowed, so `{n}` is not graded")
        if failed is not None:
            send(fd, ev="cell_failed", i=index, template=failed[:2000])
        send(fd, ev="cell_done", i=index)
    namespace["check"] = _no_check


# ----------------------------------------------------------------------------- serving the grader's calls

def _raised(e: BaseException) -> dict:
    """What a student's function raised, as the grader rebuilds it (kind, type name, message)."""
    from .core import out_of_memory

    kind = ("not_implemented" if isinstance(e, NotImplementedError) else "system_exit" if isinstance(e, SystemExit)
            else "keyboard" if isinstance(e, KeyboardInterrupt) else "memory" if out_of_memory(e)
            else "module_not_found" if isinstance(e, ModuleNotFoundError) else "syntax" if isinstance(e, SyntaxError)
            else "other")
    try:
        text = str(e.msg if kind == "syntax" else e)
    except BaseException:  # noqa: BLE001 - a __str__ that raises is the student's
        text = ""
    where = calls.innermost(e) if kind == "not_implemented" else None   # a stub: whose body still raises
    where = where[:100] if where else where
    return dict(ev="raised", kind=kind, type=type(e).__name__[:60], message=text[:1000],
                lineno=getattr(e, "lineno", None) if kind == "syntax" else None, where=where)


def _describe(namespace: dict, names) -> dict:
    info = {}
    for n in names:
        if n not in namespace:
            info[n] = {"defined": False}
            continue
        v = namespace[n]
        info[n] = {"defined": True, "callable": callable(v), "type": type(v).__name__[:60],
                   "module": str(getattr(v, "__module__", "") or "")[:200],
                   "qualname": str(getattr(v, "__qualname__", n) or n)[:200]}
    callables = [k for k, v in namespace.items() if isinstance(k, str) and callable(v) and not k.startswith("_")
                 and not isinstance(v, type)][:2000]
    return {"ev": "probe", "names": info, "callables": callables}


def _snapshot(value):
    """A copy of a tensor argument before the call, to send it back only if the call changed it."""
    import torch

    return value.detach().clone() if isinstance(value, torch.Tensor) else None


def _same(value, before) -> bool:
    import torch

    try:
        return isinstance(value, torch.Tensor) and value.shape == before.shape and bool(torch.equal(value, before))
    except Exception:  # noqa: BLE001 - a tensor subclass that will not compare: send it back
        return False


def serve(rfd: int, wfd: int, namespace: dict, guard: LibraryGuard) -> None:
    """Answer the grader's requests for one exercise until it says "end" (or its input ends)."""
    import torch

    def callback(i):
        def call_grader(*args, **kwargs):
            header, payload = wire.encode((args, kwargs))
            send(wfd, payload, ev="callback", id=i, **header)
            while True:
                reply, data = wire.read_frame(rfd)
                if reply.get("op") == "callback_return":
                    return calls.load_args(data, callback, store)[0][0]
                if reply.get("op") == "callback_raised":
                    raise type(str(reply.get("type", "Error")), (Exception,), {})(reply.get("message", ""))
        return call_grader

    store: dict = {}
    while True:
        try:
            request, payload = wire.read_frame(rfd)
        except (EOFError, wire.WireError):
            return
        op = request.get("op")
        if op == "end":
            return
        if op == "store":  # an argument of the coming calls, sent once
            store[request.get("key")] = calls.load_args(payload, callback, store)[0][0]
        elif op == "probe":
            send(wfd, **_describe(namespace, request.get("names", [])))
        elif op == "get":
            value = namespace.get(request.get("name"))
            try:
                header, data = wire.encode(value)
            except BaseException:  # noqa: BLE001 - a value whose methods raise
                header, data = wire.encode(wire.opaque_type(type(value).__name__)("it could not be read"))
            send(wfd, data, ev="value", **header)
        elif op == "call":
            fn = namespace.get(request.get("fn"))
            try:
                args, kwargs = calls.load_args(payload, callback, store)
                before = [_snapshot(a) for a in args]
                with torch.set_grad_enabled(request.get("grad") is True):  # as the check calls it
                    if request.get("rng") is True:  # the check asks which global generators the call changed
                        with calls.watched_generators() as changed:
                            value = fn(*args, **kwargs)
                        value = (value, changed)
                    else:
                        value = fn(*args, **kwargs)
                    wrt = request.get("grad_of")
                    if wrt is not None:  # the check asks for d value / d args[wrt] too: the backward pass runs here
                        out = request.get("grad_out")
                        of = calls.part(value, out if type(out) is int else None)
                        value = (value, calls.gradient(of, calls.target(args, wrt)))
            except BaseException as e:  # noqa: BLE001 - anything it raises is the student's answer
                reply = _raised(e)
                patched = guard.restore()
                if patched:
                    reply = dict(ev="patched", where=patched[0])
                send(wfd, **reply)
                continue
            patched = guard.restore()
            if patched:
                send(wfd, ev="patched", where=patched[0])
                continue
            try:
                after = ([None if b is not None and _same(a, b) else calls.state_after(a) for a, b in zip(args, before)],
                         {k: calls.state_after(v) for k, v in kwargs.items()})
                header, data = wire.encode((value, after))
                if "opaque" in header["tree"]:  # the pair was too large: the answer is, but the reply stays a pair
                    why = str(header["tree"]["opaque"][1])
                    header, data = wire.encode((wire.opaque_type(type(value).__name__)(why), after))
            except BaseException:  # noqa: BLE001 - an answer whose methods raise while it is read
                header, data = wire.encode((wire.opaque_type(type(value).__name__)("it could not be read"), None))
            send(wfd, data, ev="return", **header)


def serve_forked(name: str, seconds: float, namespace: dict, guard: LibraryGuard, job: dict, rfd: int, wfd: int):
    """Serve exercise ``name`` from a child forked for it, with its own limits; relays its frames and reports how it
    ended: ``{"ev": "ended", "how": None}`` after "end", else how it died ("cpu", "idle", "hard", an exit code)."""
    c_in_r, c_in_w = os.pipe()
    c_out_r, c_out_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 0
        try:
            os.close(c_in_w)
            os.close(c_out_r)
            os.close(rfd)  # the grader's channel is the worker's: the child talks only to the worker, which relays
            os.close(wfd)
            if resource is not None:
                resource.setrlimit(resource.RLIMIT_CPU, (math.ceil(seconds), math.ceil(seconds) + 1))
            limit_memory(job["memory_bytes"])
            serve(c_in_r, c_out_w, namespace, guard)
        except BaseException:  # noqa: BLE001
            code = 70
        finally:
            os._exit(code)
    os.close(c_in_r)
    os.close(c_out_w)
    idle_limit, hard = job["wall_factor"] * seconds, time.monotonic() + 20 * seconds + 120
    clock, how, ended = IdleClock(pid), None, False
    while True:
        if clock.update() > idle_limit or time.monotonic() > hard:
            how = "idle" if clock.idle > idle_limit else "hard"
            os.kill(pid, signal.SIGKILL)
            break
        ready = select.select([rfd, c_out_r], [], [], 0.25)[0]
        if rfd in ready:
            try:
                request, payload = wire.read_frame(rfd)
            except (EOFError, wire.WireError):
                os.kill(pid, signal.SIGKILL)
                break
            ended = ended or request.get("op") == "end"
            with contextlib.suppress(OSError):
                wire.write_frame(c_in_w, request, payload)
        if c_out_r in ready:
            try:
                reply, payload = wire.read_frame(c_out_r)
            except (EOFError, wire.WireError):
                break
            wire.write_frame(wfd, reply, payload)
    os.close(c_in_w)
    os.close(c_out_r)
    _, status, usage = os.wait4(pid, 0)
    cpu = usage.ru_utime + usage.ru_stime
    code = os.waitstatus_to_exitcode(status)
    if how is None and not (ended and code == 0):
        how = "cpu" if cpu >= math.ceil(seconds) - 0.05 else code
    send(wfd, ev="ended", how=how, cpu=round(cpu, 3))


def _not_dumpable() -> None:
    """Linux: this process (and the children it forks) becomes undumpable, so that no other process of the same
    user id, such as an exercise's child, can open its descriptors through /proc/<pid>/fd or trace it."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4


def main() -> int:
    _not_dumpable()
    rfd = os.dup(0)  # the grader's frames come here; fd 0 becomes an empty input for the student's code
    wfd = os.dup(1)  # our frames go here; fd 1 becomes the student's output (to stderr)
    empty = os.open(os.devnull, os.O_RDONLY)
    os.dup2(empty, 0)  # input() in a cell ends at once with EOFError instead of waiting on (or eating) our frames
    os.close(empty)
    os.dup2(2, 1)
    job, _ = wire.read_frame(rfd)
    import torch

    torch.set_num_threads(1)
    from . import core
    from .grading import exercises_in

    core.SANDBOX["memory"] = job["memory_text"]
    guard = LibraryGuard()
    send(wfd, ev="ready", pid=os.getpid())
    limit_memory(job["memory_bytes"])
    limit_files()
    limit_tasks(job.get("max_tasks"))
    sysv.forbid()  # SysV IPC closed (best effort: the user-id sandbox also sweeps what its id left)
    namespace: dict = {"__name__": "__main__"}
    start = _cpu()
    run_cells(job, namespace, guard, wfd)
    send(wfd, ev="cells_cpu", cpu=round(_cpu() - start, 3))
    send(wfd, ev="found", names=exercises_in(job["code"], namespace))
    saved = dict(namespace)
    while True:
        try:
            request, _ = wire.read_frame(rfd)
        except (EOFError, wire.WireError):
            return 0
        if request.get("op") == "bye":
            return 0
        if request.get("op") != "exercise":
            continue  # an "end" for a child that had already ended
        name, seconds = str(request.get("name")), float(job["exercise_cpu"].get(request.get("name"), 1.0))
        if job["fork"]:
            serve_forked(name, seconds, namespace, guard, job, rfd, wfd)
            continue
        start = _cpu()
        with cpu_limit(seconds):
            serve(rfd, wfd, namespace, guard)
        namespace.clear()  # what one check's calls did to the notebook's globals, the next does not see
        namespace.update(saved)
        send(wfd, ev="ended", how=None, cpu=round(_cpu() - start, 3))


if __name__ == "__main__":
    code = 1
    try:
        code = main()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)  # threads a submission left running must not keep the worker alive
