"""Every notebook runs top to bottom (once per session) and so does what its student copy changes; committed
.ipynb files match their .py sources; JupyterLab starts."""
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from conftest import ROOT, TIMINGS
from notebook_runs import executed, figure_problems, revealed_predictions, student_cells_to_rerun, unclaimed_figures

sys.path.insert(0, str(ROOT / "tools"))
import make_notebooks  # noqa: E402

NOTEBOOKS = make_notebooks.sources()


@pytest.mark.parametrize("source", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(source):
    run = executed(source)
    errors = run.errors()
    assert not errors, f"{source.name}: {errors[0].ename}: {errors[0].evalue}"
    TIMINGS.append(f"notebook {source.name} (top to bottom, + its student copy's stub-dependent cells): "
                   f"{run.seconds:.1f} s")


@pytest.mark.parametrize("source", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_figure_shows_as_an_image(source):
    """Executed as JupyterLab runs it (the kernel's own inline backend; no MPLBACKEND set by the tests), every
    cell that draws has an image output, and no Figure is shown as the text '<Figure size ... with 2 Axes>'."""
    assert "MPLBACKEND" not in os.environ, "the tests must not choose a matplotlib backend for the kernels"
    problems = figure_problems(executed(source).notebook)
    assert not problems, f"{source.name}: " + "; ".join(problems)


def test_the_figure_check_finds_a_figure_shown_as_text():
    nb = nbformat.v4.new_notebook()
    text_only = nbformat.v4.new_code_cell("draw_curves(run)")
    text_only.outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "<Figure size 1000x360 with 2 Axes>"})]
    no_output = nbformat.v4.new_code_cell("fig, ax = plt.subplots()\nax.plot([1, 2])")
    shown = nbformat.v4.new_code_cell("fig, ax = plt.subplots()")
    shown.outputs = [nbformat.v4.new_output("display_data", {"image/png": "iVBOR", "text/plain": "<Figure size 640x480 with 1 Axes>"})]
    nb.cells = [text_only, no_output, shown, nbformat.v4.new_code_cell("x = 1")]
    problems = figure_problems(nb)
    assert len(problems) == 2 and "shown as text" in problems[0] and "no image" in problems[1], problems


@pytest.mark.parametrize("source", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_figure_whose_prose_states_a_direction_has_a_claim_cell(source):
    """The prose under a figure that says a curve rises or a bar is higher is checked: a claim cell of the same
    section computes those numbers, and the claims tests (each claim cell has one) assert the direction."""
    import jupytext

    problems = unclaimed_figures(jupytext.read(source))
    assert not problems, f"{source.name}: " + "; ".join(problems)


def test_the_claim_guard_finds_a_figure_whose_direction_nobody_checks():
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    nb = nbformat.v4.new_notebook()
    nb.cells = [md("## A"), code("fig, ax = plt.subplots()"), md("The loss falls."),
                md("## B"), code("# claim: curve\nprint(1)"), code("draw_curves(run)"), md("It rises."),
                md("## C"), code("draw_bars(x)"), md("Three bars."), code("# claim: later\nx")]
    problems = unclaimed_figures(nb)
    assert len(problems) == 1 and problems[0].startswith("cell 1 (fig, ax = plt.subplots()): its prose says falls"), problems


@pytest.mark.parametrize("source", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_no_cell_before_a_prediction_gives_its_answer_away(source):
    """In a prediction question's section, no output and no prose before the question names its answer without
    naming every other choice (the reveal comes after check())."""
    problems = revealed_predictions(executed(source).notebook)
    assert not problems, f"{source.name}: " + "; ".join(problems)


def test_the_prediction_guard_finds_an_answer_given_away():
    import course_lib.exercises.ch11_1b  # noqa: F401  (registers fertility_prediction: answer German)

    nb = nbformat.v4.new_notebook()
    heading = nbformat.v4.new_markdown_cell("## 9. Fertility")
    printed = nbformat.v4.new_code_cell("table")
    printed.outputs = [nbformat.v4.new_output("stream", name="stdout", text="German needs the most pieces per word\n")]
    listed = nbformat.v4.new_markdown_cell("Which needs most: news (held out), Python code, numbers & dates or German?")
    ask = nbformat.v4.new_code_cell("most_pieces = 'German'")
    nb.cells = [heading, printed, listed, ask, nbformat.v4.new_code_cell('check("fertility_prediction")')]
    problems = revealed_predictions(nb)
    assert len(problems) == 1 and "output of cell 1" in problems[0], problems
    nb.cells[1].outputs = []
    nb.cells.insert(2, nbformat.v4.new_markdown_cell("As we will see, **German** is the hardest."))
    problems = revealed_predictions(nb)
    assert len(problems) == 1 and "prose of cell 2" in problems[0], problems
    nb.cells[2].source = "## 10. Another section"  # before the section: not the question's context
    assert revealed_predictions(nb) == []


def test_the_prediction_guard_finds_the_explanation_or_a_giveaway_said_earlier_in_any_section():
    import course_lib.exercises.ch11_2  # noqa: F401  (registers share_in_loss: answer 15%, a bare number)
    from course_lib.exercises import EXERCISES

    ex = EXERCISES["share_in_loss"]
    nb = nbformat.v4.new_notebook()
    early = nbformat.v4.new_markdown_cell("## 3. Corrupting the input\nBERT selects 15% of the input tokens for the "
                                          "loss, whatever their fate.")
    ask = nbformat.v4.new_code_cell('share_in_loss = "15%"')
    nb.cells = [early, nbformat.v4.new_markdown_cell("## 4. The loss"), ask,
                nbformat.v4.new_code_cell('check("share_in_loss")')]
    problems = revealed_predictions(nb)  # a number: the first rule skips it, the giveaway does not
    assert len(problems) == 1 and "prose of cell 0" in problems[0] and ex.giveaways[0] in problems[0], problems
    early.source = "## 3. Corrupting the input"
    assert revealed_predictions(nb) == []
    why = ex.why.split()
    shown = nbformat.v4.new_code_cell("explain()")  # an output quoting seven words of the explanation in a row
    shown.outputs = [nbformat.v4.new_output("stream", name="stdout", text="note: " + " ".join(why[3:10]) + "\n")]
    nb.cells.insert(1, shown)
    problems = revealed_predictions(nb)
    assert len(problems) == 1 and "output of cell 1" in problems[0] and "its explanation" in problems[0], problems
    shown.outputs[0]["text"] = "note: " + " ".join(why[3:9]) + "\n"  # six words: a phrase, not the explanation
    assert revealed_predictions(nb) == []


@pytest.mark.parametrize("source", [p for p in NOTEBOOKS if "### BEGIN SOLUTION" in p.read_text()],
                         ids=lambda p: p.stem)
def test_student_copy_runs_and_reports_not_attempted(source):
    """The student's exercise cells and every cell that depends on them run without error after the
    solution, in the same kernel, and each check() says "not attempted" (see tests/notebook_runs.py)."""
    run = executed(source)
    errors = run.errors(run.student_cells)
    assert not errors, f"student copy of {source.name}: {errors[0].ename}: {errors[0].evalue}"
    checks = [c for c in run.student_cells if 'check("' in c.source]
    assert checks, f"{source.name} has exercises but no check() cell"
    for c in checks:
        text = run.outputs_text([c])
        assert "not attempted" in text and "✅" not in text, f"{c.source!r} printed {text!r}"


# what a test run itself may leave: generated notebooks, Python's and pytest's caches, browser screenshots
EXPECTED_WRITES = re.compile(r"^(notebooks/[^/]+\.ipynb|notebooks/student/.*|.*__pycache__/.*|\.pytest_cache/.*|"
                             r"artifacts/screenshots/.*|\.venv/.*|"
                             r"\.ruff_cache/.*)$")  # ruff's cache: `make check` run beside the suite


def test_running_the_notebooks_writes_nothing_into_the_checkout():
    """Caches and run artefacts go to the user cache directory, never into the repository."""
    from conftest import CHECKOUT_AT_START, checkout_status

    if not CHECKOUT_AT_START:
        pytest.skip("not a git checkout")
    for source in NOTEBOOKS:
        executed(source)  # already run by the test above: this only makes sure
    new = sorted(line for line in checkout_status() - CHECKOUT_AT_START if not EXPECTED_WRITES.match(line[3:]))
    assert not new, f"running the notebooks wrote into the checkout: {new}"


def test_the_student_proof_reruns_what_depends_on_a_stub():
    import jupytext

    nb = jupytext.reads('''# %%
import math

# %% tags=["exercise"]
def f(x):
    raise NotImplementedError("Exercise: replace this line with your code")

# %%
check("f")

# %%
y = f(2)

# %%
z = math.pi

# %%
print(y + 1)

# %% tags=["exercise"]
guess = ...  # your prediction: replace ... with one of the choices

# %%
print(guess)

# %%
import math.fake as helpers
w = guess

# %%
helpers.run()

# %%
print(w)

# %% tags=["exercise"]
import os

def g():
    raise NotImplementedError("Exercise: replace this line with your code")

# %%
os.getcwd()
''', fmt="py:percent")
    # a cell reading the stub's names is rerun, and so is what reads the names it assigns (w); a name only an import
    # binds (helpers) is the same module whatever the student wrote, unless the stubbed cell itself imports it (os)
    assert student_cells_to_rerun(nb) == [1, 2, 3, 5, 6, 7, 8, 10, 11, 12]


def test_the_widget_slice_takes_the_cells_a_widget_reads_and_no_other():
    import jupytext

    from notebook_runs import widget_slice

    nb = jupytext.reads('''# %%
import math
from helpers import load

# %%
data = load("train")
pooling = "mean"

# %%
slow = [load(x) for x in range(10**9)]
pooling = "cls"

# %%
from helpers import load
data = load("test")

# %%
scale = math.pi

# %%
from course_lib.widgets import Panel

Panel(data, lambda pooling: pooling, [pooling for pooling in "ab"], f=lambda v=scale: v)
''', fmt="py:percent")
    # the widget reads data (the nearest cell that assigns it: cell 3, whose import of load needs no earlier cell)
    # and scale (cell 4, which reads math: cell 0); pooling is only the lambda's parameter and the comprehension's
    # variable, so neither cell that assigns a global pooling (1, 2) is run
    assert widget_slice(nb) == [0, 3, 4, 5]


def test_a_cell_reads_the_names_its_lambdas_defs_and_comprehensions_take_from_outside():
    from notebook_runs import _names

    # parameters and loop variables are the function's or the comprehension's own; defaults, annotations,
    # decorators, the first iterable and every free name in a body are read from the notebook's namespace
    assert _names("def f(x: Tensor, y=default) -> Out:\n    return x + y + z\n")[0] == {"Tensor", "default", "Out", "z"}
    assert _names("g = lambda a, b=c: a + b + d\nh = [i * k for i in rows if i > m]\n")[0] == {"c", "d", "k", "rows", "m"}
    assert _names("@deco\ndef f(*args, **kw):\n    return args, kw, q\n")[0] == {"deco", "q"}
    assert _names("total += step\n")[0] == {"total", "step"}  # so the cell that first set total is still run


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ has no py:percent sources"


def test_committed_ipynb_files_are_in_sync_with_their_py_sources():
    stale = [p.name for p in NOTEBOOKS if make_notebooks.out_of_sync(p)]
    assert not stale, f"regenerate with `make notebooks`: {stale}"
    try:
        tracked = subprocess.run(["git", "ls-files", "notebooks"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    except OSError:  # no git on this machine
        tracked = []
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
    status = make_notebooks.generate(src, force=True)
    assert status.startswith("written (the edited .ipynb is kept as demo.ipynb.bak-"), status
    assert "x = 2" in ipynb.read_text()
    kept = [p for p in tmp_path.iterdir() if p.name.startswith("demo.ipynb.bak-")]
    assert len(kept) == 1 and "a student's edit" in kept[0].read_text() and kept[0].name in status


def test_an_edited_ipynb_is_kept_even_when_its_source_is_newer(tmp_path):
    # a red-team finding: edit the .ipynb, then `touch` the .py (as a `git pull` does): the edit was overwritten
    src = tmp_path / "demo.py"
    src.write_text("# %%\nx = 1\n")
    make_notebooks.generate(src)
    ipynb = src.with_suffix(".ipynb")
    nb = nbformat.read(ipynb, as_version=4)
    nb.cells[0].source = "x = 42  # my own work"
    nbformat.write(nb, ipynb)
    os.utime(ipynb, (time.time() - 60, time.time() - 60))
    src.write_text("# %%\nx = 2\n")  # the newer file
    status = make_notebooks.generate(src)
    kept = [p for p in tmp_path.iterdir() if p.name.startswith("demo.ipynb.bak-")]
    assert len(kept) == 1 and "my own work" in kept[0].read_text() and status.endswith(f"kept as {kept[0].name})")
    assert "x = 2" in ipynb.read_text() and not make_notebooks.edited_by_hand(nbformat.read(ipynb, as_version=4))


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
    assert make_notebooks.generate(src) == "written"  # outputs are not an edit: no backup
    nb = nbformat.read(ipynb, as_version=4)
    assert nb.cells[0].outputs[0].text == "kept\n" and nb.cells[1].source == "y = 3"
    assert not [p for p in tmp_path.iterdir() if ".bak-" in p.name]


def test_lab_command_starts_jupyterlab_headless():
    venv = Path(sys.executable).parent.parent
    env = {**os.environ, "LAB_CHECK": "1", "PORT": "8968"}
    res = subprocess.run(["bash", str(ROOT / "tools" / "lab.sh"), str(venv)], env=env, capture_output=True, text=True,
                         timeout=180)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "JupyterLab answered at http://127.0.0.1:" in res.stdout
