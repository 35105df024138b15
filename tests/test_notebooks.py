"""Every notebook runs top to bottom; committed .ipynb files match their .py sources; JupyterLab starts."""
import os
import subprocess
import sys
import time
from pathlib import Path

import jupytext
import nbformat
import pytest
from nbclient import NotebookClient

from conftest import ROOT, TIMINGS

sys.path.insert(0, str(ROOT / "tools"))
import make_notebooks  # noqa: E402

NOTEBOOKS = make_notebooks.sources()


@pytest.mark.parametrize("source", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(source, tmp_path):
    nb = jupytext.read(source)
    start = time.perf_counter()
    client = NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(source.parent)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, f"{source.name}: {errors[0].ename}: {errors[0].evalue}"
    TIMINGS.append(f"notebook {source.name} (nbclient, top to bottom): {time.perf_counter() - start:.1f} s")


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ has no py:percent sources"


def test_committed_ipynb_files_are_in_sync_with_their_py_sources():
    stale = [p.name for p in NOTEBOOKS if make_notebooks.out_of_sync(p)]
    assert not stale, f"regenerate with `make notebooks`: {stale}"
    tracked = subprocess.run(["git", "ls-files", "notebooks"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    if tracked:  # in a git checkout, every generated notebook must be committed next to its source
        missing = [p.with_suffix(".ipynb").name for p in NOTEBOOKS if f"notebooks/{p.with_suffix('.ipynb').name}" not in tracked]
        assert not missing, f"generated notebooks not committed: {missing}"


def test_generation_never_overwrites_an_ipynb_edited_after_its_source(tmp_path):
    src = tmp_path / "demo.py"
    src.write_text("# %%\nx = 1\n")
    assert make_notebooks.generate(src) == "written"
    ipynb = src.with_suffix(".ipynb")
    nb = nbformat.read(ipynb, as_version=4)
    nb.cells[0].source = "x = 42  # a student's edit"
    nbformat.write(nb, ipynb)
    src.write_text("# %%\nx = 2\n")
    os.utime(src, (time.time() - 60, time.time() - 60))  # the .ipynb is the newer file
    assert make_notebooks.generate(src).startswith("SKIPPED")
    assert "a student's edit" in ipynb.read_text()
    assert make_notebooks.generate(src, force=True) == "written"
    assert "x = 2" in ipynb.read_text()


def test_generation_keeps_outputs_of_unchanged_cells(tmp_path):
    src = tmp_path / "demo.py"
    src.write_text("# %%\nx = 1\n\n# %%\ny = 2\n")
    make_notebooks.generate(src)
    ipynb = src.with_suffix(".ipynb")
    nb = nbformat.read(ipynb, as_version=4)
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", text="kept\n")]
    nbformat.write(nb, ipynb)
    os.utime(ipynb, (time.time() - 60, time.time() - 60))
    src.write_text("# %%\nx = 1\n\n# %%\ny = 3\n")
    assert make_notebooks.generate(src) == "written"
    nb = nbformat.read(ipynb, as_version=4)
    assert nb.cells[0].outputs[0].text == "kept\n" and nb.cells[1].source == "y = 3"


def test_lab_command_starts_jupyterlab_headless():
    venv = Path(sys.executable).parent.parent
    env = {**os.environ, "LAB_CHECK": "1", "PORT": "8968"}
    res = subprocess.run(["bash", str(ROOT / "tools" / "lab.sh"), str(venv)], env=env, capture_output=True, text=True,
                         timeout=180)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "JupyterLab answered at http://127.0.0.1:" in res.stdout


def test_student_version_runs_top_to_bottom_and_reports_not_attempted(tmp_path):
    """The copy a student gets must run end to end: each check() says 'not attempted', nothing crashes."""
    sys.path.insert(0, str(ROOT / "tools"))
    import make_student

    sources = [p for p in NOTEBOOKS if "### BEGIN SOLUTION" in p.read_text()]
    assert sources, "no notebook has exercises"
    for source in sources:
        assert make_student.main(["--out", str(tmp_path), str(source)]) == 0
        student = tmp_path / source.with_suffix(".ipynb").name
        nb = nbformat.read(student, as_version=4)
        start = time.perf_counter()
        NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
        TIMINGS.append(f"student copy of {source.name} (nbclient, top to bottom): {time.perf_counter() - start:.1f} s")
        outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
        assert not [o for o in outputs if o.output_type == "error"], f"{student.name} raised an error"
        text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
        n_checks = sum('check("' in c.source for c in nb.cells if c.cell_type == "code")
        assert text.count("not attempted") == n_checks > 0
