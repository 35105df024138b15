"""The teardown watchdog: a browser that stops answering is killed instead of hanging the suite."""
import shutil
import subprocess
import time

from .conftest import browser_watchdog


def test_a_hanging_browser_is_killed_after_the_timeout(tmp_path):
    fake = tmp_path / "chromium-stuck"           # a child process that looks like the browser and never ends
    shutil.copy(shutil.which("sleep"), fake)
    proc = subprocess.Popen([str(fake), "600"])
    start = time.monotonic()
    try:
        with browser_watchdog(0.5):
            proc.wait(timeout=60)                # stands for a close() call that waits on the browser
    finally:
        proc.kill()
    assert proc.returncode == -9 and time.monotonic() - start < 60


def test_a_browser_that_closes_in_time_is_left_alone(tmp_path):
    fake = tmp_path / "chromium-quick"
    shutil.copy(shutil.which("sleep"), fake)
    proc = subprocess.Popen([str(fake), "0.2"])
    with browser_watchdog(30):
        proc.wait(timeout=10)
    assert proc.returncode == 0
