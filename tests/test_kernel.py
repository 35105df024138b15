"""course_lib in a notebook's kernel: freed memory goes back to the system after every cell (course_lib.kernel)."""
import sys

import pytest

from course_lib import kernel


class FakeEvents:
    def __init__(self):
        self.registered = []

    def register(self, event, fn):
        self.registered.append((event, fn))


class FakeShell:
    def __init__(self):
        self.events = FakeEvents()


@pytest.mark.skipif(kernel._malloc_trim() is None, reason="no glibc malloc_trim here")
def test_a_shell_trims_after_each_cell_once_however_often_course_lib_is_imported():
    shell = FakeShell()
    assert kernel.trim_after_each_cell(shell) and kernel.trim_after_each_cell(shell)
    assert [event for event, _ in shell.events.registered] == ["post_run_cell"]
    _, callback = shell.events.registered[0]
    callback(None)  # what IPython calls after a cell: it must take the cell's result and not fail


def test_without_ipython_or_glibc_nothing_is_registered(monkeypatch):
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    assert kernel.trim_after_each_cell() is False  # no shell: a script, the grader's worker, pytest
    monkeypatch.setattr(kernel, "_malloc_trim", lambda: None)
    shell = FakeShell()
    assert kernel.trim_after_each_cell(shell) is False and shell.events.registered == []
    assert kernel.release_freed_memory() is False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc is Linux's")
def test_freed_memory_goes_back_to_the_system():
    """Many small blocks freed in the middle of the heap stay with the process until malloc_trim returns them."""
    if kernel._malloc_trim() is None:
        pytest.skip("no glibc malloc_trim here")

    def rss_kb() -> int:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))

    kept = []
    blocks = [bytearray(4000) for _ in range(60_000)]  # ~240 MB of small blocks, on the heap
    kept.append(bytearray(4000))                         # a block still in use above them, on the heap too
    before = rss_kb()
    del blocks
    freed_not_returned = rss_kb()
    assert kernel.release_freed_memory()
    after = rss_kb()
    assert freed_not_returned - after > 100_000, (before, freed_not_returned, after)  # > 100 MB given back
