"""The whole test suite as `make test` runs it, in two pytest processes: the browser tests and the rest.

The browser tests (tests/browser) spend most of their time waiting: for JupyterLab, for a kernel, for Chromium
to paint. Run after the rest they add their whole wall time to the suite's; run beside it they mostly fill the
gaps, and they pass on a loaded machine (they wait on DOM state, never on fixed sleeps). But they run the
notebooks' widget cells, which need what the notebooks train: from an empty course cache (a first run, or
after the notebooks or the library changed) both lanes would train the same models at once. So the lanes run
side by side only when a complete run of the rest has already filled the cache for this code (a stamp in the
cache records it); otherwise the browser lane runs after the rest, and reuses what the rest cached.

Each lane is a plain pytest run with its own output: the rest prints as usual, the browser lane writes to a
log that is printed when it ends. The exit status is the first non-zero one of the two (0 when both pass).

    python tools/run_tests.py                  # both lanes
    python tools/run_tests.py --serial         # one pytest process, as before (e.g. to compare times)
    python tools/run_tests.py -- -x -k cloze   # options after -- go to both pytest processes
"""
from __future__ import annotations

import argparse
import hashlib
import json
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


def code_key() -> str:
    """What the cached runs depend on: the notebooks' and the library's sources, and the data files' sizes."""
    h = hashlib.sha256()
    for f in sorted([*ROOT.glob("notebooks/*.py"), *ROOT.glob("course_lib/**/*.py")]):
        h.update(f.relative_to(ROOT).as_posix().encode() + b"\0" + f.read_bytes())
    for f in sorted((ROOT / "course_lib" / "data").rglob("*")):
        if f.is_file():
            h.update(f"{f.relative_to(ROOT).as_posix()} {f.stat().st_size}\n".encode())
    return h.hexdigest()


def stamp_file() -> Path:
    sys.path.insert(0, str(ROOT))
    from course_lib.paths import cache_root

    return cache_root() / "suite-warm.json"


def cache_is_warm(key: str) -> bool:
    try:
        return json.loads(stamp_file().read_text()).get("key") == key
    except (OSError, ValueError):
        return False


def mark_warm(key: str) -> None:
    f = stamp_file()
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(json.dumps({"key": key, "written": time.strftime("%Y-%m-%d %H:%M:%S")}) + "\n")


def side_by_side(rest_cmd: list[str], browser_cmd: list[str]) -> tuple[int, int]:
    """Run both lanes at once; the browser lane's output is kept and printed when both have ended."""
    env = {**os.environ, "PYTEST_ADDOPTS": os.environ.get("PYTEST_ADDOPTS", "") + " -p no:cacheprovider"}
    with tempfile.TemporaryFile("w+", encoding="utf-8") as log:
        print("browser tests run beside the others (the course cache is warm for this code); their output follows "
              "at the end:", shlex.join(browser_cmd[2:]), flush=True)
        browser = subprocess.Popen(browser_cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            rest_rc = subprocess.call(rest_cmd, cwd=ROOT)
            browser_rc = browser.wait()
        finally:
            if browser.poll() is None:  # interrupted
                browser.terminate()
                browser.wait()
        log.seek(0)
        print(f"\n{'=' * 30} the browser lane ({BROWSER}) {'=' * 30}", flush=True)
        sys.stdout.write(log.read())
    return rest_rc, browser_rc


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--serial", action="store_true", help="one pytest process for everything")
    ap.add_argument("pytest_args", nargs="*", help="after --: passed to pytest")
    args = ap.parse_args(argv)
    if args.serial:
        return subprocess.call([sys.executable, "-m", "pytest", *args.pytest_args], cwd=ROOT)
    browser_cmd, rest_cmd = lanes(args.pytest_args)
    key = code_key()
    start = time.perf_counter()
    if cache_is_warm(key):
        rest_rc, browser_rc = side_by_side(rest_cmd, browser_cmd)
        how = "both lanes, side by side"
    else:
        print("the course cache is not warm for this code (a first run, or the notebooks or the library changed): "
              "the browser tests run after the others, to reuse what they cache", flush=True)
        rest_rc = subprocess.call(rest_cmd, cwd=ROOT)
        if rest_rc == 0 and not args.pytest_args:
            mark_warm(key)  # every notebook ran: what the browser tests need is cached
        print(f"\n{'=' * 30} the browser lane ({BROWSER}) {'=' * 30}", flush=True)
        browser_rc = subprocess.call(browser_cmd, cwd=ROOT)
        how = "the two lanes, one after the other"
    print(f"\n{how}: {time.perf_counter() - start:.0f} s; exit status {rest_rc} (tests), {browser_rc} ({BROWSER})",
          flush=True)
    if browser_rc == NO_TESTS and args.pytest_args:  # e.g. a -k that selects no browser test
        browser_rc = 0
    return rest_rc or browser_rc


if __name__ == "__main__":
    sys.exit(main())
