"""`make test` runs the suite in two lanes (tools/run_tests.py): together they must run every test once."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import run_tests  # noqa: E402


def collected(cmd: list[str]) -> list[str]:
    out = subprocess.run(cmd + ["--collect-only", "-q", "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    return [line for line in out.stdout.splitlines() if "::" in line]


@pytest.mark.slow
def test_the_two_lanes_together_collect_every_test_exactly_once():
    browser, rest = (collected(cmd) for cmd in run_tests.lanes([]))
    everything = collected([sys.executable, "-m", "pytest"])
    assert browser and all(t.startswith("tests/browser/") for t in browser)
    assert not any(t.startswith("tests/browser/") for t in rest)
    assert sorted(browser + rest) == sorted(everything)


def test_options_after_the_separator_reach_both_lanes():
    browser, rest = run_tests.lanes(["-x", "-k", "cloze"])
    assert browser[-3:] == rest[-3:] == ["-x", "-k", "cloze"]
    assert run_tests.BROWSER in browser and f"--ignore={run_tests.BROWSER}" in rest
