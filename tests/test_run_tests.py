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


def test_the_lanes_run_side_by_side_only_once_a_complete_run_has_warmed_the_cache(tmp_path, monkeypatch):
    """Cold: the rest first, then the browser lane (which reuses what the rest cached), and a passing complete run
    marks the cache warm for this code; warm: side by side. A run of some tests only never marks it."""
    monkeypatch.setenv("COURSE_LIB_CACHE", str(tmp_path))
    calls, side = [], []
    monkeypatch.setattr(run_tests.subprocess, "call", lambda cmd, cwd=None: calls.append(cmd) or 0)
    monkeypatch.setattr(run_tests, "side_by_side", lambda rest, browser: side.append((rest, browser)) or (0, 0))
    key = run_tests.code_key()
    assert key == run_tests.code_key() and not run_tests.cache_is_warm(key)

    assert run_tests.main(["--", "-k", "cloze"]) == 0  # some tests only: cold stays cold
    assert [run_tests.BROWSER in c for c in calls] == [False, True] and not side
    assert not run_tests.cache_is_warm(key)

    calls.clear()
    assert run_tests.main([]) == 0
    assert [run_tests.BROWSER in c for c in calls] == [False, True] and not side
    assert run_tests.cache_is_warm(key) and not run_tests.cache_is_warm("another code")

    calls.clear()
    assert run_tests.main([]) == 0
    assert not calls and len(side) == 1


def test_a_failing_run_does_not_mark_the_cache_warm(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_LIB_CACHE", str(tmp_path))
    monkeypatch.setattr(run_tests.subprocess, "call", lambda cmd, cwd=None: 0 if run_tests.BROWSER in cmd else 1)
    assert run_tests.main([]) == 1
    assert not run_tests.cache_is_warm(run_tests.code_key())
