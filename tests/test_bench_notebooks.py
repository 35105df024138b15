"""benchmarks/notebook_timings.py (make bench ARGS="--only notebooks"): a notebook's wall time and its kernel's peak
memory are measured, not guessed: a notebook that holds 300 MB must show a peak of at least that much."""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import notebook_timings  # noqa: E402

pytestmark = pytest.mark.slow  # starts a kernel


def test_peak_memory_and_time_of_a_notebook_are_measured(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell("import time\nblock = bytearray(300_000_000)\nblock[::4096] = b'x' * len(block[::4096])\ntime.sleep(0.3)"),
                nbformat.v4.new_code_cell("del block\ntime.sleep(0.5)"),
                nbformat.v4.new_code_cell("1/0")]
    path = tmp_path / "probe.ipynb"
    nbformat.write(nb, path)
    res = notebook_timings.run_notebook(path, timeout=120)
    assert 0.5 <= res["seconds"] < 60
    assert 0.3 <= res["maxrss_gb"] < 1.5, res      # the 300 MB block, freed before the end, is in the peak
    assert res["tree_peak_gb"] >= 0.3, res          # and the sampler saw it too
    assert res["errors"] == ["cell 2: ZeroDivisionError: division by zero"]
    assert res["largest_growth"][0]["cell"] == 0 and res["largest_growth"][0]["gb"] >= 0.25, res  # the culprit


def test_notebook_filter():
    all_ = notebook_timings.notebook_paths()
    assert len(all_) >= 8 and all(p.suffix == ".ipynb" for p in all_)
    assert [p.stem for p in notebook_timings.notebook_paths(["00"])] == ["00_start_here"]
