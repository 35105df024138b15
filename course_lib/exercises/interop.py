"""The course's checks inside nbgrader or otter-grader, for courses that already grade with them.

Both call :func:`course_lib.exercises.run_exercise`, the engine of ``check()`` and of ``grade``/``grade-all``,
so the points and the messages are the same wherever a notebook is graded.

* **nbgrader** — ``python -m course_lib.exercises export nbgrader --out source/ps1 NOTEBOOK.py``
  writes the notebook with an *autograder test* cell after each ``check("<name>")`` cell (nbgrader metadata:
  ``grade: true``, ``locked: true``, ``points`` from the registry, ``grade_id: test_<name>``). The cell
  prints the line ``check()`` prints and evaluates to the points earned: nbgrader's autograder gives a test
  cell the number it evaluates to (partial credit), and 0 when it raises. Put the written notebook in
  nbgrader's ``source/`` folder and run ``nbgrader generate_assignment`` / ``nbgrader autograde`` as usual.
* **otter-grader** — ``python -m course_lib.exercises export otter --out tests/ [EXERCISE ...]`` writes one
  OK-format test file per exercise (``tests/<name>.py``, ``points`` from the registry; all or nothing per
  exercise). ``grader.check("<name>")`` in the notebook then runs the course's check; a failing one shows
  the hint.

nbgrader and otter run the whole notebook in one kernel with a time limit per cell: they give no memory
limit and no protection against a submission that exits the kernel — ``grade-all`` does
(:mod:`.sandbox`).
"""
from __future__ import annotations

from pathlib import Path

from .core import EXERCISES, fmt_points, get_exercise
from .grading import CHECK_CALL

NBGRADER_CELL = '''\
# autograder test of the exercise "{name}" ({points} point{s}), graded by course_lib
import contextlib as _contextlib
import io as _io

from course_lib.exercises import run_exercise as _run_exercise

with _contextlib.redirect_stderr(_io.StringIO()):  # nbgrader gives 0 to a test cell that writes to stderr
    _result = _run_exercise("{name}", globals())
print(_result)
_result.score  # nbgrader gives this cell the points it evaluates to'''

OTTER_TEST = '''\
OK_FORMAT = True

test = {{
    "name": "{name}",
    "points": {points},
    "suites": [
        {{
            "cases": [
                {{
                    "code": {code!r},
                    "hidden": False,
                    "locked": False,
                }},
            ],
            "scored": True,
            "setup": "",
            "teardown": "",
            "type": "doctest",
        }},
    ],
}}
'''
OTTER_CODE = ('>>> from course_lib.exercises import run_exercise\n'
              '>>> _result = run_exercise("{name}", globals())\n'
              '>>> _result.correct or str(_result)  # a wrong answer shows its hint\n'
              'True\n')


def nbgrader_test_cell(name: str):
    """The nbgrader autograder test cell of exercise ``name``."""
    import nbformat

    ex = get_exercise(name)
    cell = nbformat.v4.new_code_cell(NBGRADER_CELL.format(name=name, points=fmt_points(ex.points),
                                                          s="" if ex.points == 1 else "s"))
    cell.metadata["nbgrader"] = {"grade": True, "solution": False, "locked": True, "task": False,
                                 "points": ex.points, "grade_id": f"test_{name}", "schema_version": 3}
    cell.id = f"test-{name}".replace("_", "-")
    return cell


def with_nbgrader_tests(nb):
    """``nb`` with an autograder test cell after the first code cell that calls ``check("<name>")``, per exercise."""
    done, cells = set(), []
    for cell in nb.cells:
        cells.append(cell)
        if cell.cell_type != "code":
            continue
        for name in CHECK_CALL.findall(cell.source):
            if name in EXERCISES and name not in done:
                done.add(name)
                cells.append(nbgrader_test_cell(name))
    nb.cells = cells
    return nb


def otter_test_file(name: str) -> str:
    """The OK-format test file (``tests/<name>.py``) of exercise ``name``."""
    ex = get_exercise(name)
    return OTTER_TEST.format(name=name, points=fmt_points(ex.points), code=OTTER_CODE.format(name=name))


def export(fmt: str, out: str | Path, items: list[str] | None = None) -> list[Path]:
    """Write the otter test files of the exercises ``items`` (default: all), or the notebooks ``items`` with
    nbgrader test cells; returns the paths written."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    if fmt == "otter":
        for name in items or list(EXERCISES):
            path = out / f"{name}.py"
            path.write_text(otter_test_file(name))
            written.append(path)
    elif fmt == "nbgrader":
        import jupytext

        if not items:
            raise ValueError("name the notebooks to export, e.g. notebooks/11_2_masked_language_modeling.py")
        for item in map(Path, items):
            nb = with_nbgrader_tests(jupytext.read(item))
            nb.metadata.pop("jupytext", None)  # a plain notebook: nbgrader's copy must not be paired with a .py
            path = out / f"{item.stem}.ipynb"
            jupytext.write(nb, path, fmt="ipynb")
            written.append(path)
    else:
        raise ValueError(f"export format must be 'otter' or 'nbgrader', not {fmt!r}")
    return written
