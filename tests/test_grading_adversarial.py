"""A class of hostile and broken submissions, graded as a batch: each gets its expected result, per exercise or
per file, in the student's words; every other exercise and submission is still graded; nothing handed in changes.

The submissions (tests/adversarial_submissions.py) are built from the student copy of notebook 11.2 with its
answers filled in; each does one thing (os._exit, sys.exit, a loop, sleeping, memory, a segfault,
KeyboardInterrupt, a BaseException, deleting globals, monkey-patching course_lib / torch / the registry, printing
megabytes, a cell that exits or loops, a syntax error, a missing package, a renamed or missing function, the
library's own function, a wrong type or shape, NaN, inf, writing files) or is not a gradable file (empty, cut off,
damaged JSON, binary, JSON that is not a notebook, another course's notebook, cells without tags).

The batch's time is shown in the 'wall times' summary, not asserted (benchmarks/grading.py times it).
"""
import csv
import dataclasses
import hashlib
import io
import time
from contextlib import redirect_stdout
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from adversarial_submissions import NAMES, POINTS, cases
from conftest import TIMINGS
from course_lib.exercises.core import fmt_points
from course_lib.exercises.gradebook import grade_all
from course_lib.exercises.sandbox import Limits

pytestmark = pytest.mark.slow  # a class of 36 submissions graded in subprocesses (~1 min): make test, not make check

# smaller than the defaults, so that the batch stays quick; the messages name these numbers
LIMITS = Limits(margin=3, cell_time_limit=6, memory_mb=1024, wall_factor=3)  # light checks: 4 s
NUMBERS = dict(time_limit=f"{LIMITS.exercise_seconds('nsp_input'):g}", cell_limit="6", memory="1 GB",
               idle_limit=f"{LIMITS.wall_factor * LIMITS.exercise_seconds('language_sampling'):g}")
CASES = cases()
BY_NAME = {c.name: c for c in CASES}
INLINE = ["os_exit", "infinite_loop", "memory", "cell_exits", "deletes_globals", "patches_torch_in_call"]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write(folder: Path, chosen) -> dict[str, str]:
    folder.mkdir(parents=True)
    for case in chosen:
        (folder / case.filename).write_bytes(case.content)
        (folder / case.filename).chmod(0o444)  # as handed in: read-only for everyone
    return {p.name: _sha256(p) for p in sorted(folder.iterdir())}


def _grade(tmp: Path, chosen, limits: Limits):
    folder = tmp / "submissions"
    sums = _write(folder, chosen)
    start = time.perf_counter()
    grades = grade_all(folder, tmp / "grades.csv", jobs=2, limits=limits, progress=False)
    seconds = time.perf_counter() - start
    return SimpleNamespace(folder=folder, sums=sums, seconds=seconds, grades={g.path.stem: g for g in grades},
                           csv=(tmp / "grades.csv").read_text(), feedback=tmp / "grades_feedback")


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    graded = _grade(tmp_path_factory.mktemp("batch"), CASES, LIMITS)
    TIMINGS.append(f"adversarial batch, {len(CASES)} submissions, 2 at a time: {graded.seconds:.1f} s")
    return graded


@pytest.fixture(scope="module")
def inline(tmp_path_factory):
    """Some of the same submissions, graded without a child process per check (the fallback off Linux)."""
    return _grade(tmp_path_factory.mktemp("inline"), [BY_NAME[n] for n in INLINE], dataclasses.replace(LIMITS, fork=False))


def _assert_expected(case, grade):
    if isinstance(case.expected, str):
        assert grade.results == [] and grade.error is not None, grade
        assert case.expected in grade.error
        return
    assert grade.error is None, grade.error
    assert [r.name for r in grade.results] == list(case.expected)
    for r in grade.results:
        status, part = case.expected[r.name]
        assert (r.status, part.format(**NUMBERS) in r.message) == (status, True), str(r)
        assert "Traceback" not in r.message and 'File "' not in r.message


def test_the_set_has_at_least_20_hostile_or_broken_submissions():
    assert len(BY_NAME) == len(CASES) >= 20
    broken = [c for c in CASES if c.expected != {n: ("correct", "") for n in NAMES}]
    assert len(broken) >= 20


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_submission_gets_its_result(case, batch):
    _assert_expected(case, batch.grades[case.name])


@pytest.mark.parametrize("name", INLINE)
def test_without_fork_the_worker_is_restarted_and_the_results_are_the_same(name, inline):
    _assert_expected(BY_NAME[name], inline.grades[name])


def test_nothing_handed_in_is_changed(batch, inline):
    for graded in (batch, inline):
        assert {p.name: _sha256(p) for p in sorted(graded.folder.iterdir())} == graded.sums


def test_the_gradebook_has_a_row_per_submission_and_a_column_per_exercise(batch):
    rows = list(csv.reader(io.StringIO(batch.csv)))
    n = len(NAMES)
    assert rows[0] == ["submission", *NAMES, "total", "out of", "feedback"]
    assert [r[0] for r in rows[1:]] == sorted(c.name for c in CASES)
    for row in rows[1:]:
        grade, case = batch.grades[row[0]], BY_NAME[row[0]]
        points = [float(x) for x in row[1:n + 1]]
        assert float(row[n + 1]) == sum(points) and row[n + 2] == fmt_points(POINTS)
        if isinstance(case.expected, str):
            assert points == [0] * n and row[n + 3] == f"could not be graded: {grade.error}"
        else:
            assert points == [r.score for r in grade.results]
            assert [p > 0 for p in points] == [case.expected[name][0] == "correct" for name in NAMES]
            wrong = [r for r in grade.results if not r.correct]
            assert row[n + 3] == (" | ".join(f"{r.name}: {r.status} — {r.message}" for r in wrong) or "all correct")


def test_each_feedback_file_holds_the_lines_check_prints(batch):
    files = sorted(p.name for p in batch.feedback.iterdir())
    assert files == sorted(f"{c.name}.md" for c in CASES)
    for case in CASES:
        text = (batch.feedback / f"{case.name}.md").read_text()
        grade = batch.grades[case.name]
        assert text.startswith(f"# Feedback: {case.name}\n")
        if grade.error:
            assert grade.error in text and f"**0 of {fmt_points(POINTS)} points**" in text
        else:
            assert f"**{fmt_points(sum(r.score for r in grade.results))} of {fmt_points(POINTS)} points**" in text
            assert all(f"\n{r}\n" in text for r in grade.results)


@pytest.mark.parametrize("name", ["wrong_shape", "renamed", "stub"])
def test_the_feedback_is_what_check_prints_in_the_notebook(name, batch):
    """Run the (harmless) submission's graded cells in this process and call check() as the notebook does."""
    nb = nbformat.reads(BY_NAME[name].content.decode(), as_version=4)
    namespace = {"__name__": "__main__"}
    with redirect_stdout(io.StringIO()):
        for cell in nb.cells:
            if cell.cell_type == "code" and {"setup", "exercise"} & set(cell.metadata.get("tags", [])):
                exec(cell.source, namespace)
    text = (batch.feedback / f"{name}.md").read_text()
    for exercise in NAMES:
        out = io.StringIO()
        with redirect_stdout(out):
            exec(f"check({exercise!r})", namespace)
        assert f"\n{out.getvalue()}" in text
