"""The teardown watchdog: a browser that stops answering is killed instead of hanging the suite.

Each test hands the watchdog its own stand-in process, never the suite's real Chromium (which the browser
tests of this package are still using)."""
import shutil
import subprocess
import time

import psutil
import pytest

from .conftest import browser_watchdog


def stand_in(tmp_path, seconds: str):
    fake = tmp_path / "chromium-stand-in"
    shutil.copy(shutil.which("sleep"), fake)
    proc = subprocess.Popen([str(fake), seconds])
    return proc, [psutil.Process(proc.pid)]


def test_a_hanging_browser_is_killed_after_the_timeout(tmp_path):
    proc, procs = stand_in(tmp_path, "600")
    start = time.monotonic()
    try:
        with browser_watchdog(0.5, procs) as fired:
            proc.wait(timeout=60)                # stands for a close() call that waits on the browser
    finally:
        proc.kill()
    assert fired.is_set() and proc.returncode == -9 and time.monotonic() - start < 60


def test_a_browser_that_closes_in_time_is_left_alone(tmp_path):
    proc, procs = stand_in(tmp_path, "0.2")
    with browser_watchdog(30, procs) as fired:
        proc.wait(timeout=10)
    assert proc.returncode == 0 and not fired.is_set()


def test_an_error_that_is_not_the_watchdogs_is_raised(tmp_path):
    proc, procs = stand_in(tmp_path, "0.1")
    with pytest.raises(RuntimeError, match="not a timeout"):
        with browser_watchdog(30, procs):
            raise RuntimeError("not a timeout")
    proc.wait(timeout=10)


def test_a_child_that_exits_while_the_watchdog_looks_is_not_an_error(monkeypatch):
    """The CI failure it fixes: a Chromium renderer exited between listing the children and reading its name."""
    import psutil

    from .conftest import _is_chromium

    class Gone:
        def name(self):
            raise psutil.NoSuchProcess(123)

    class Chrome:
        def name(self):
            return "chrome"

    assert _is_chromium(Chrome()) and not _is_chromium(Gone())
