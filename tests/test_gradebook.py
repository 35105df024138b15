"""The gradebook of grade-all against files that once cost the whole class its gradebook, without running a
notebook: the files are tiny, and where a worker is needed it is scripted (``sandbox.Worker`` replaced), so that the
grader reads exactly the frames a hostile submission could send on its channel.

A forged result, a frame nested thousands deep, a damaged nbformat-3 file, a bug of the grader: each costs its own
row only, and a forged result earns nothing. Names that are not UTF-8, or that a spreadsheet would run as a formula,
are shown as text; two submissions never share a feedback file; a row is out of its notebook's chapter's points in
the registry.
"""
import csv
import io
import json
import os
import queue
from pathlib import Path

import nbformat
import pytest

from course_lib.exercises import EXERCISES, sandbox, wire
from course_lib.exercises.core import fmt_points
from course_lib.exercises.gradebook import FORMULA_START, grade_all, text_cell, write_atomically
from course_lib.exercises.grading import chapter_of, notebook_chapter, read_cells
from course_lib.exercises.sandbox import Limits

LIMITS = Limits(fork=True)  # with fork, the grader starts no clock on a scripted process
CH11_2 = [n for n in EXERCISES if chapter_of(n) == "ch11_2"]
OUT_OF_11_2 = fmt_points(sum(EXERCISES[n].points for n in CH11_2))
STUB = "def mask_tokens(*args):\n    raise NotImplementedError"  # mlm_masking, of notebook 11.2
QUESTION = "at_unchanged"  # the variable of the question unchanged_prediction, of notebook 11.2
RIGHT = EXERCISES["unchanged_prediction"].answer


def _notebook(*cells: tuple[str, list[str]]) -> bytes:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source, metadata={"tags": tags})
                                         for source, tags in cells])
    return nbformat.writes(nb).encode()


ANSWERED = _notebook((STUB, ["exercise"]), (f"{QUESTION} = {RIGHT!r}", ["exercise"]))


class ScriptedWorker:
    """Stands for a worker: sends ``start`` (frames, or raw bytes that are not frames), then answers each request
    with ``answer(request)`` (a list of the same)."""

    scripts: dict = {}

    def __init__(self, box, job):
        self.frames, self.output, self.pid = queue.Queue(), "", 0
        start, self.answer = self.scripts[job["filename"]]
        self._emit(start)

    def _emit(self, items):
        for item in items:
            if isinstance(item, bytes):  # what is not a frame: the reader stops there
                self.frames.put("garbled")
            else:
                header, payload = item if isinstance(item, tuple) else (item, b"")
                self.frames.put(wire.read_frame_bytes(wire.frame(header, payload)))

    def send(self, header, payload=b""):
        self._emit(self.answer(header))

    def next(self, deadline, clock=None, idle_limit=None):
        try:
            item = self.frames.get(timeout=5)
        except queue.Empty:
            raise sandbox.Broken("hard") from None
        if item == "garbled":
            raise sandbox.Broken("garbled")
        return item

    def stop(self):
        return 0


def honest(values: dict):
    """A worker whose notebook defines ``values`` (name -> value) and answers each request truthfully."""
    def answer(request):
        op = request.get("op")
        if op == "probe":
            return [{"ev": "probe", "callables": [],
                     "names": {n: {"defined": n in values, "callable": False, "type": "str"} for n in request["names"]}}]
        if op == "get":
            header, payload = wire.encode(values.get(request["name"]))
            return [({"ev": "value", **header}, payload)]
        if op == "end":
            return [{"ev": "ended", "how": None, "cpu": 0.1}]
        return []
    return answer


def _ran(*names) -> list:
    return [{"ev": "ready"}, {"ev": "found", "names": list(names)}]


@pytest.fixture
def scripted(monkeypatch):
    """``scripts[filename] = (frames sent at the start, answer(request) -> frames)``."""
    ScriptedWorker.scripts = {}
    monkeypatch.setattr(sandbox, "Worker", ScriptedWorker)
    return ScriptedWorker.scripts


def _rows(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_bytes().decode("utf-8"), newline="")))


# ----------------------------------------------------------------------------- one bad file, one row

def test_one_bad_file_costs_only_its_own_row_and_a_forged_result_earns_nothing(tmp_path, scripted):
    folder = tmp_path / "class"
    folder.mkdir()
    for name in ("good", "forged", "credit", "nested", "crash"):
        (folder / f"{name}.ipynb").write_bytes(ANSWERED)
    v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": [{"cell_type": "code",
                                                                                          "input": STUB}]}]}
    (folder / "v3.ipynb").write_text(json.dumps(v3))  # nbformat 3 with a cell missing its outputs
    truthful = honest({QUESTION: RIGHT})
    wrong = honest({QUESTION: "[MASK]"})

    def forging(result: dict):
        def answer(request):  # a result line in place of the value asked for
            return [result] if request.get("op") == "get" else wrong(request)
        return answer
    scripted.update({
        "good.ipynb": (_ran("unchanged_prediction"), truthful),
        "forged.ipynb": (_ran("unchanged_prediction"), forging({"ev": "result", "name": "unchanged_prediction",
                                                                 "status": "correct", "message": ""})),
        "credit.ipynb": (_ran("unchanged_prediction"), forging({"ev": "result", "name": "unchanged_prediction",
                                                                 "status": "wrong", "credit": 1000})),
        "nested.ipynb": (_ran("unchanged_prediction"), lambda r: [b"[" * 100_000] if r.get("op") == "get" else wrong(r)),
        "crash.ipynb": ([{"ev": "ready"}, {"ev": "found", "names": 5}], truthful),  # once a TypeError in the grader
    })
    (tmp_path / "grades.csv").write_text("the earlier gradebook\n")
    grade_all(folder, tmp_path / "grades.csv", limits=LIMITS, progress=False)
    rows = {row[0]: row for row in _rows(tmp_path / "grades.csv")}
    order = ["mlm_masking", "unchanged_prediction"]  # the notebook's order, then the registry's
    columns = [*order, *[n for n in CH11_2 if n not in order]]
    assert rows.pop("submission") == ["submission", *columns, "total", "out of", "feedback"]
    assert sorted(rows) == ["crash", "credit", "forged", "good", "nested", "v3"]
    points = fmt_points(EXERCISES["unchanged_prediction"].points)
    for name in ("good", "crash"):  # crash: the grader finds the exercises itself
        assert rows[name][1:-1] == ["0", points, *["0"] * (len(CH11_2) - 2), points, OUT_OF_11_2], name
    for name in ("forged", "credit", "nested"):
        assert rows[name][1:-1] == [*["0"] * (len(CH11_2) + 1), OUT_OF_11_2], name
        assert "the grader could not read the answer" in rows[name][-1], rows[name][-1]
    assert rows["v3"][-1].startswith("could not be graded: the notebook is in the old format of Jupyter (nbformat 3) "
                                     "and is damaged")
    assert f"**0 of {OUT_OF_11_2} points**" in (tmp_path / "grades_feedback" / "v3.md").read_text()


def test_a_grader_failure_names_the_lines_it_passed_through(tmp_path, monkeypatch):
    """What a teacher reports when the grader fails: the exception and the grader's lines, innermost first."""
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "a.ipynb").write_bytes(ANSWERED)

    def inner():
        raise KeyError("lost")

    def grade_file(path, limits=None):
        inner()
    monkeypatch.setattr(sandbox, "grade_file", grade_file)
    grade, = grade_all(tmp_path / "class", tmp_path / "grades.csv", limits=LIMITS, progress=False)
    line = inner.__code__.co_firstlineno
    assert grade.error == (f"the grader itself failed on this file (KeyError: 'lost', at test_gradebook.py:{line + 1} "
                           f"< test_gradebook.py:{line + 4}); ask your teacher to grade it by hand")


def test_a_notebook_nested_thousands_deep_is_a_damaged_file(tmp_path):
    path = tmp_path / "deep.ipynb"
    path.write_text("[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(ValueError, match="nested thousands of levels deep"):
        read_cells(path)


# ----------------------------------------------------------------------------- names in the CSV and on disk

def test_a_name_that_is_not_utf8_is_shown_escaped_and_the_gradebook_is_replaced_whole(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    try:
        (folder / os.fsdecode(b"caf\xe9.ipynb")).write_bytes(b"")
    except OSError:  # a file system that accepts only UTF-8 names (macOS)
        pytest.skip("this file system does not accept a name that is not UTF-8")
    (tmp_path / "grades.csv").write_text("the earlier gradebook\n")
    grade_all(folder, tmp_path / "grades.csv", limits=LIMITS, progress=False)
    rows = _rows(tmp_path / "grades.csv")
    assert [row[0] for row in rows] == ["submission", "caf\\xe9"]
    assert rows[1][-1].startswith("could not be graded: the file is empty")
    assert sorted(os.listdir(tmp_path)) == ["class", "grades.csv", "grades_feedback", "grades_report.csv",
                                           "grades_report.md", "grades_report.svg"]  # no temporary file left
    assert os.listdir(tmp_path / "grades_feedback") == ["caf\\xe9.md"]


def test_a_gradebook_that_cannot_be_written_leaves_the_earlier_one_whole(tmp_path):
    out = tmp_path / "grades.csv"
    out.write_text("the earlier gradebook\n")
    with pytest.raises(UnicodeEncodeError):
        write_atomically(out, "submission\ncaf\udce9\n")  # what a name that is not UTF-8 once did halfway
    assert out.read_text() == "the earlier gradebook\n" and os.listdir(tmp_path) == ["grades.csv"]


FORMULAS = ['=HYPERLINK("evil.example","click me")', "+1+1", "-2", "@SUM(1+1)", "\tTAB", "\rCR"]


def test_a_cell_that_begins_like_a_formula_stays_text(tmp_path):
    folder = tmp_path / "class"
    (folder / "=cmd").mkdir(parents=True)
    for name in FORMULAS:
        (folder / f"{name}.ipynb").write_bytes(b"")
    (folder / "=cmd" / "a.ipynb").write_bytes(b"")
    grade_all(folder, tmp_path / "grades.csv", limits=LIMITS, progress=False)
    rows = _rows(tmp_path / "grades.csv")
    shown = ["'" + name.replace("\r", "\n") for name in [*FORMULAS, "=cmd/a"]]  # a lone \r would end the row
    assert sorted(row[0] for row in rows[1:]) == sorted(shown)
    assert not [cell for row in rows for cell in row if cell.startswith(FORMULA_START)]
    assert text_cell("alice") == "alice" and text_cell("a=1") == "a=1" and text_cell("-2") == "'-2"


def test_two_submissions_never_share_a_feedback_file(tmp_path):
    folder = tmp_path / "class"
    (folder / "alice").mkdir(parents=True)
    (folder / "alice" / "11_1.ipynb").write_bytes(b"")
    (folder / "alice__11_1.ipynb").write_bytes(b"PK\x03\x04\xff\xfe")
    (folder / "Bob.ipynb").write_bytes(b"")
    (folder / "bob.ipynb").write_bytes(b"PK\x03\x04\xff\xfe")  # the same file as Bob's on macOS and Windows
    (folder / "carol.ipynb").write_bytes(b"")
    grade_all(folder, tmp_path / "grades.csv", limits=LIMITS, progress=False)
    files = sorted((tmp_path / "grades_feedback").iterdir())
    assert len(files) == 5 and len({p.name.casefold() for p in files}) == 5
    assert (tmp_path / "grades_feedback" / "carol.md").is_file()  # a name no one else's maps to stays plain
    texts = {p.read_text().splitlines()[0].removeprefix("# Feedback: "): p.read_text() for p in files}
    assert sorted(texts) == ["Bob", "alice/11_1", "alice__11_1", "bob", "carol"]
    for sid in ("alice/11_1", "Bob", "carol"):
        assert "the file is empty" in texts[sid] and "not a text file" not in texts[sid]
    for sid in ("alice__11_1", "bob"):
        assert "the file is not a text file" in texts[sid]


# ----------------------------------------------------------------------------- what a row is out of

def test_checking_every_exercise_of_the_course_changes_no_one_s_out_of(tmp_path, scripted):
    every = "\n".join(f'check("{n}")' for n in EXERCISES)  # an untagged cell
    hostile = _notebook((STUB, ["exercise"]), (f"{QUESTION} = {RIGHT!r}", ["exercise"]), (every, []))
    assert notebook_chapter(read_cells_of(tmp_path, hostile)) == "ch11_2"
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "alice.ipynb").write_bytes(ANSWERED)
    (folder / "mallory.ipynb").write_bytes(hostile)
    (folder / "empty.ipynb").write_bytes(b"")
    scripted.update({"alice.ipynb": (_ran("unchanged_prediction"), honest({QUESTION: RIGHT})),
                     "mallory.ipynb": (_ran(*EXERCISES), honest({QUESTION: RIGHT}))})  # every exercise "found"
    grade_all(folder, tmp_path / "grades.csv", limits=LIMITS, progress=False)
    rows = {row[0]: row for row in _rows(tmp_path / "grades.csv")}
    header = rows["submission"]
    assert sorted(header[1:-3]) == sorted(CH11_2) and header[-3:] == ["total", "out of", "feedback"]
    out_of = {name: row[-2] for name, row in rows.items() if name != "submission"}
    assert out_of == {"alice": OUT_OF_11_2, "empty": OUT_OF_11_2, "mallory": OUT_OF_11_2}
    assert rows["mallory"][1:-2] == rows["alice"][1:-2]  # the same work, the same points


def read_cells_of(tmp_path: Path, content: bytes):
    path = tmp_path / "notebook.ipynb"
    path.write_bytes(content)
    return read_cells(path)


def test_a_notebook_is_the_chapter_whose_functions_its_graded_cells_define(tmp_path):
    every = "\n".join(f'check("{n}")' for n in EXERCISES)
    assert notebook_chapter(read_cells_of(tmp_path, _notebook((every, ["exercise"]), (STUB, ["exercise"])))) == "ch11_2"
    assert notebook_chapter(read_cells_of(tmp_path, _notebook(('check("mlm_loss")', ["setup"])))) == "ch11_2"
    assert notebook_chapter(read_cells_of(tmp_path, _notebook(("x = 1", ["setup"])))) is None


def test_the_trusted_side_never_imports_the_sandbox():
    """One direction of dependency inside course_lib/exercises: grading.py (reading submissions, the results) is
    imported by sandbox.py (running them), never the other way round, not even inside a function."""
    import ast

    from conftest import ROOT

    tree = ast.parse((ROOT / "course_lib" / "exercises" / "grading.py").read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in imported if m and m.split(".")[-1] in ("sandbox", "worker")}, imported
