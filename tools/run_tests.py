"""The whole test suite as `make test` runs it: the browser tests beside the rest, in two pytest processes.

The browser tests (tests/browser) spend most of their time waiting: for JupyterLab, for a kernel, for Chromium
to paint. Run after the rest they add their whole wall time to the suite's; run beside it they mostly fill the
gaps, and they pass on a loaded machine (they wait on DOM state, never on fixed sleeps). Each lane is a plain
pytest run with its own output: the rest prints as usual, the browser lane writes to a log that is printed when
it ends. The exit status is the first non-zero one of the two (0 when both pass).

    python tools/run_tests.py                  # both lanes
    python tools/run_tests.py --serial         # one pytest process, as before (e.g. to compare times)
    python tools/run_tests.py -- -x -k cloze   # options after -- go to both pytest processes
"""
from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BROWSER = "tests/browser"
NO_TESTS = 5  # pytest's exit status when nothing was collected


def lanes(extra: list[str]) -> tuple[list[str], list[str]]:
    """(the browser lane's pytest command, the other lane's)."""
    pytest = [sys.executable, "-m", "pytest"]
    return pytest + [BROWSER, *extra], pytest + [f"--ignore={BROWSER}", *extra]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--serial", action="store_true", help="one pytest process for everything")
    ap.add_argument("pytest_args", nargs="*", help="after --: passed to pytest")
    args = ap.parse_args(argv)
    if args.serial:
        return subprocess.call([sys.executable, "-m", "pytest", *args.pytest_args], cwd=ROOT)
    browser_cmd, rest_cmd = lanes(args.pytest_args)
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+", encoding="utf-8") as log:
        print("browser tests run beside the others; their output follows at the end:", shlex.join(browser_cmd[2:]),
              flush=True)
        env = {**os.environ, "PYTEST_ADDOPTS": os.environ.get("PYTEST_ADDOPTS", "") + " -p no:cacheprovider"}
        browser = subprocess.Popen(browser_cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            rest_rc = subprocess.call(rest_cmd, cwd=ROOT)
            browser_rc = browser.wait()
        except KeyboardInterrupt:
            browser.terminate()
            browser.wait()
            raise
        log.seek(0)
        print(f"\n{'=' * 30} the browser lane ({BROWSER}) {'=' * 30}", flush=True)
        sys.stdout.write(log.read())
    print(f"\nboth lanes: {time.perf_counter() - start:.0f} s; exit status {rest_rc} (tests), "
          f"{browser_rc} ({BROWSER})", flush=True)
    if browser_rc == NO_TESTS and args.pytest_args:  # e.g. a -k that selects no browser test
        browser_rc = 0
    return rest_rc or browser_rc


if __name__ == "__main__":
    sys.exit(main())
