"""The grading worker: one fresh interpreter per submission, started by :mod:`.sandbox` (never imported by notebooks).

    python -m course_lib.exercises.worker < job.json

It runs the submission's ``setup`` and ``exercise`` cells, one by one, each under a limit of computing time
(``RLIMIT_CPU``), all under a memory limit (``RLIMIT_AS``); then checks each exercise in a child process
forked for it (on Linux; elsewhere in the worker itself, and the supervisor restarts the worker after a
crash), so that an exit, a crash, a loop or a monkey-patch ends that exercise only. It reports to the
supervisor as JSON lines on its original stdout; whatever the student's code prints goes to stderr, which
the supervisor reads and caps.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import select
import signal
import sys
import time
import types

try:
    import resource
except ImportError:  # Windows: no rlimits; the supervisor's wall-clock limits still hold
    resource = None

WATCHED = ("torch", "torch.nn", "torch.nn.functional", "torch.linalg", "numpy", "math", "builtins", "json", "os")


def send(fd: int, **event) -> None:
    data = (json.dumps(event, ensure_ascii=False) + "\n").encode()
    while data:
        data = data[os.write(fd, data):]


def _cpu() -> float:
    if resource is None:
        return time.process_time()
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


@contextlib.contextmanager
def cpu_limit(seconds: float):
    """At most ``seconds`` more of computing, then SIGXCPU ends the process (the supervisor says 'timed out')."""
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


def limit_memory(extra_bytes: int) -> None:
    """Address space limited to what the process uses now plus ``extra_bytes`` (Linux; elsewhere not enforced)."""
    if resource is None or not sys.platform.startswith("linux"):
        return
    with open("/proc/self/status") as f:
        vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (vm + extra_bytes, resource.getrlimit(resource.RLIMIT_AS)[1]))


class LibraryGuard:
    """The functions, classes and modules of course_lib, torch and a few more, as they were before any
    student code ran: a monkey-patch is spotted (``changed``) and undone (``restore``)."""

    def __init__(self):
        import torch

        owners = [(name, m) for name, m in sys.modules.items() if m is not None and
                  (name in WATCHED or name == "course_lib" or name.startswith("course_lib."))]
        owners.append(("torch.Tensor", torch.Tensor))
        self.saved = [(name, owner, {k: v for k, v in vars(owner).items() if self._code(k, v)}) for name, owner in owners]
        from .core import EXERCISES  # the registry too: a check swapped for one that always passes is a patch

        self.saved.append(("course_lib.exercises.EXERCISES", EXERCISES, dict(EXERCISES)))

    @staticmethod
    def _code(key: str, value) -> bool:
        return not key.startswith("__") and key != "_" and (callable(value) or isinstance(value, types.ModuleType))

    def changed(self) -> list[tuple[str, object, str, object]]:
        """(where, owner, attribute, original) of each patch; a library's own wrapper of the original (torch's
        dynamo wraps torch.manual_seed when it is first imported) is accepted and becomes the original."""
        missing, found = object(), []
        for name, owner, saved in self.saved:
            now_items = owner if isinstance(owner, dict) else vars(owner)
            for k, v in list(saved.items()):
                now = now_items.get(k, missing)
                if now is v:
                    continue
                if _library_wrapper(now, v):
                    saved[k] = now
                else:
                    found.append((f"{name}[{k!r}]" if isinstance(owner, dict) else f"{name}.{k}", owner, k, v))
        return found

    def restore(self) -> list[str]:
        """Undo every patch; what was patched, e.g. ``["course_lib.exercises.hints.close"]``."""
        found = self.changed()
        for _, owner, k, v in found:
            with contextlib.suppress(Exception):
                if isinstance(owner, dict):
                    owner[k] = v
                else:
                    setattr(owner, k, v)
        return [where for where, *_ in found]


def _library_wrapper(new, old) -> bool:
    code = getattr(new, "__code__", None)
    from_library = code is not None and not code.co_filename.startswith("<")
    return from_library and getattr(new, "__wrapped__", None) is old


def _python_only(source: str) -> str:
    """Comment out IPython magics and shell lines (%matplotlib, !pip), which plain exec cannot run."""
    return "\n".join("# " + line if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


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


def run_cells(job: dict, namespace: dict, guard: LibraryGuard, fd: int) -> list[tuple[str, str]]:
    """Run the graded cells; returns (cell source, message template with ``{n}``) of each cell that failed."""
    failed = []
    for index, source in job["cells"]:
        if str(index) in job["skip"]:
            failed.append((source, f"the cell that defines `{{n}}` {job['skip'][str(index)]}, so `{{n}}` was never defined"))
            continue
        send(fd, ev="cell", i=index)
        before = dict(namespace)
        namespace["check"] = _no_check
        try:
            with cpu_limit(job["cell_cpu"]):
                exec(compile(_python_only(source), f"<{job['filename']}, cell {index}>", "exec"), namespace)
        except BaseException as e:  # noqa: BLE001 - one broken cell must not hide the other exercises
            failed.append((source, f"the cell that defines `{{n}}` {cell_phrase(e)}, so `{{n}}` was never defined"))
        patched = guard.restore()
        if patched:  # what this cell defined is not graded: it could only pass with the library changed
            for k in [k for k, v in namespace.items() if k not in before or before[k] is not v]:
                del namespace[k]
            failed.append((source, f"the cell that defines `{{n}}` replaced `{patched[0]}`; changing course_lib or "
                                   "torch is not allowed, so `{n}` is not graded"))
        send(fd, ev="cell_done", i=index)
    namespace["check"] = _no_check
    return failed


def pre_check(name: str, namespace: dict, failed) -> str | None:
    """A result message decided without running the check: the cell that defines its function failed, or the
    function is course_lib's own."""
    from .core import EXERCISES
    from .grading import _defines

    ex = EXERCISES[name]
    for n in ex.needs:
        if n not in namespace:
            for source, template in failed:
                if _defines(source, n):
                    return template.format(n=n)
        elif ex.kind == "function" and str(getattr(namespace[n], "__module__", "")).startswith("course_lib"):
            fn = namespace[n]
            return (f"`{n}` is course_lib's own `{fn.__module__}.{getattr(fn, '__qualname__', n)}`, not your code: "
                    "write the function yourself")
    return None


def watcher(fd: int):
    """Reports which student function runs, so that a crash or a timeout can say where it happened."""
    @contextlib.contextmanager
    def watch(fn_name):
        send(fd, ev="in", fn=fn_name)
        try:
            yield
        finally:
            send(fd, ev="out", fn=fn_name)
    return watch


def check_here(name: str, namespace: dict, guard: LibraryGuard, fd: int, seconds: float) -> dict:
    """Run exercise ``name`` in this process; the result as a JSON-able dict."""
    from . import core

    core.SANDBOX["watch"] = watcher(fd)
    start = _cpu()
    with cpu_limit(seconds):
        result = core.run_exercise(name, namespace)
    patched = guard.restore()
    if patched:
        result = core.Result(name, core.WRONG, f"your code replaced `{patched[0]}`; changing course_lib or torch "
                                               "is not allowed")
    return dict(ev="result", name=name, status=result.status, message=result.message[:2000], credit=result.credit,
                cpu=round(_cpu() - start, 3))


def check_forked(name: str, namespace: dict, guard: LibraryGuard, job: dict) -> dict:
    """Run exercise ``name`` in a forked child with its own limits; whatever the child does, a result."""
    seconds = job["exercise_cpu"][name]
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(r)
        try:
            if resource is not None:
                resource.setrlimit(resource.RLIMIT_CPU, (math.ceil(seconds), math.ceil(seconds) + 1))
            limit_memory(job["memory_bytes"])
            send(w, **check_here(name, namespace, guard, w, seconds))
        except BaseException as e:  # noqa: BLE001
            send(w, ev="result", name=name, status="wrong", message=f"the check stopped: {type(e).__name__}", credit=None)
        finally:
            os._exit(0)
    os.close(w)
    from .sandbox import IdleClock, death_phrase

    idle_limit, hard = job["wall_factor"] * seconds, time.monotonic() + 20 * seconds + 120
    clock, buffer, inside, result, how = IdleClock(pid), b"", None, None, None
    while result is None:
        if clock.update() > idle_limit or time.monotonic() > hard:
            how = "idle" if clock.idle > idle_limit else "hard"
            os.kill(pid, signal.SIGKILL)
            break
        if not select.select([r], [], [], 0.25)[0]:
            continue
        data = os.read(r, 65536)
        if not data:
            break
        buffer += data
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            with contextlib.suppress(ValueError, AttributeError, RecursionError):  # JSON not ours, "[[[[…" too deep
                event = json.loads(line)
                if event.get("ev") == "in":
                    inside = event.get("fn")
                elif event.get("ev") == "out":
                    inside = None
                elif event.get("ev") == "result":
                    result = event
    os.close(r)
    _, status, usage = os.wait4(pid, 0)
    if result is not None:
        return result
    cpu = usage.ru_utime + usage.ru_stime
    if how is None:
        how = "cpu" if cpu >= math.ceil(seconds) - 0.05 else os.waitstatus_to_exitcode(status)
    where = f"during `{inside}`" if inside else "while checking your answer"
    return dict(ev="result", name=name, status="wrong", credit=None, cpu=round(cpu, 3),
                message=death_phrase(how, seconds, idle_limit, job["memory_text"], where))


def main() -> int:
    job = json.loads(sys.stdin.read())
    fd = os.dup(1)  # the supervisor reads our reports here; fd 1 becomes the student's output (to stderr)
    os.dup2(2, 1)
    import torch

    torch.set_num_threads(1)
    from . import core
    from .grading import exercises_in

    core.SANDBOX["memory"] = job["memory_text"]
    guard = LibraryGuard()
    send(fd, ev="ready")
    limit_memory(job["memory_bytes"])
    namespace: dict = {"__name__": "__main__"}
    start = _cpu()
    failed = run_cells(job, namespace, guard, fd)
    send(fd, ev="cells_cpu", cpu=round(_cpu() - start, 3))
    found = exercises_in(job["code"], namespace)
    send(fd, ev="found", names=found)
    saved = dict(namespace)
    for name in found:
        if name in job["done"]:
            continue
        message = pre_check(name, namespace, failed)
        if message is not None:
            send(fd, ev="result", name=name, status="wrong", message=message, credit=None, cpu=0)
            continue
        send(fd, ev="check", name=name)
        if job["fork"]:
            send(fd, **check_forked(name, namespace, guard, job))
        else:
            send(fd, **check_here(name, namespace, guard, fd, job["exercise_cpu"][name]))
            namespace.clear()  # what one check's functions did to the notebook's globals, the next does not see
            namespace.update(saved)
    send(fd, ev="done")
    return 0


if __name__ == "__main__":
    code = 1
    try:
        code = main()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)  # threads a submission left running must not keep the worker alive
