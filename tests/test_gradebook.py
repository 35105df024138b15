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

    def __init__(self, box, job, max_bytes=None):
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


FORMULAS = ['=HYPERLINK("evil.example","click me")', "+1+1", "-2", "@SUM(1+1)", "\tTAB", "\rCR"]


def test_a_cell_that_begins_like_a_formula_stays_text(tmp_path):
    folder = tmp_path / "class"
    (folder / "=cmd").mkdir(parents=True)
    for name in FORMULAS:
        (folder / f"{name}.ipynb").write_bytes(b"")
    (folder / "=cmd" / "a.ipynb").write_bytes(b"")
    grade_all(folder, tmp_path / "grades.csv", limits=LIMITS, progress=False)
    rows = _rows(tmp_path / "grades.csv")
    # a tab or a carriage return in a name is a space in the gradebook (one line of plain text), so those two no
    # longer begin like a formula; the rest keep their quote
    shown = ["'" + name for name in FORMULAS[:4]] + [" TAB", " CR", "'=cmd/a"]
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


def test_a_name_with_escape_codes_is_plain_text_in_the_gradebook_and_the_feedback_file_name(tmp_path):
    # a red-team finding: ESC[2J in a file's name reached the CSV (and the feedback file's name) as it was, so
    # `cat grades.csv` cleared the terminal and showed what followed it
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "x\x1b[2J\x1b[HALL CORRECT.ipynb").write_bytes(b"")
    (folder / "x\\x1b[2J\\x1b[HALL CORRECT.ipynb").write_bytes(b"")  # shown the same: a backslash, x, 1, b
    grade_all(folder, tmp_path / "grades.csv", limits=LIMITS, progress=False)
    text = (tmp_path / "grades.csv").read_text()
    assert "\x1b" not in text
    assert [row[0] for row in _rows(tmp_path / "grades.csv")[1:]] == 2 * ["x\\x1b[2J\\x1b[HALL CORRECT"]
    files = sorted(p.name for p in (tmp_path / "grades_feedback").iterdir())
    assert len(files) == 2 and not any("\x1b" in f for f in files)  # two files: neither overwrote the other
    assert all(f.startswith("x\\x1b[2J\\x1b[HALL CORRECT-") for f in files)


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


# ----------------------------------------------------------------------------- text that comes from a submission

PROBS = "def language_probs(p, alpha):\n    return None"  # language_sampling, of notebook 11.2
HONEST_PROBS = _notebook((STUB, ["exercise"]), (PROBS, ["exercise"]), (f"{QUESTION} = {RIGHT!r}", ["exercise"]))
QUALNAME = ('x`\x1b[2K\x1b[G  ✅ language_sampling     correct        matches eq. 11.7\n8 of 8 exercises correct\x1b[8m'
            '\n```\n\n**Regraded: 8 of 8** <img src="https://attacker.example/p.png">\n\n```')
INJECTED = ('\x1b[2K\x1b[G  ✅ language_sampling     correct\x1b[8m <img src="https://attacker.example/t.png"> '
            '[regrade: all correct](https://attacker.example/x) <b>grace: 9/9</b> **bold** `code` $\\href{x}{y}$')


def probing(info: dict | None = None, raised: dict | None = None, cells: list | None = None):
    """(frames at the start, answers) of a worker whose notebook defines language_probs as ``info`` says (a function
    of the notebook's own, by default), whose calls raise ``raised``, and whose cells send ``cells`` first."""
    def answer(request):
        op = request.get("op")
        if op == "probe":
            return [{"ev": "probe", "callables": [], "names": {n: {"defined": True, "callable": True, "type": "function",
                                                                   "module": "__main__", "qualname": n, **(info or {})}
                                                               for n in request["names"]}}]
        if op == "call":
            return [{"ev": "raised", "kind": "other", "type": "ValueError", "message": "", **(raised or {})}]
        if op == "end":
            return [{"ev": "ended", "how": None, "cpu": 0.1}]
        return []
    return [{"ev": "ready"}, *(cells or []), {"ev": "found", "names": ["language_sampling"]}], answer


NEVER = {"defined": False}  # what the worker says of a function whose cell failed


def failed_cell(message: str) -> list:
    """The frames of a worker whose cell 1 (the one that defines language_probs) raised with ``message``."""
    template = f"the cell that defines `{{n}}` raised AssertionError: {message}, so `{{n}}` was never defined"
    return [{"ev": "cell_failed", "i": 1, "template": template}, {"ev": "cell_done", "i": 1}]


def grade_class(tmp_path: Path, scripted, **hostile) -> dict:
    """grade-all on alice (honest) and the ``hostile`` scripts (name -> probing(…)): the rows, the feedback files and
    the class report's Markdown."""
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "alice.ipynb").write_bytes(ANSWERED)
    scripted["alice.ipynb"] = (_ran("unchanged_prediction"), honest({QUESTION: RIGHT}))
    for name, script in hostile.items():
        (folder / f"{name}.ipynb").write_bytes(HONEST_PROBS)
        scripted[f"{name}.ipynb"] = script
    (tmp_path / "grades.csv").write_text("the earlier gradebook\n")
    grade_all(folder, tmp_path / "grades.csv", limits=LIMITS, progress=False)
    rows = {row[0]: row for row in _rows(tmp_path / "grades.csv")}
    feedback = {p.stem: p.read_text(encoding="utf-8") for p in (tmp_path / "grades_feedback").iterdir()}
    return dict(rows=rows, feedback=feedback, report=(tmp_path / "grades_report.md").read_text(encoding="utf-8"))


def rendered(markdown: str) -> str:
    """The HTML a CommonMark renderer (with tables, raw HTML allowed) makes of ``markdown``."""
    markdown_it = pytest.importorskip("markdown_it")
    return markdown_it.MarkdownIt("commonmark").enable("table").render(markdown)


def grade_in_terminal(tmp_path: Path, scripted, monkeypatch, capsys, script) -> str:
    """What `python -m course_lib.exercises grade` prints for a notebook the worker ``script`` serves."""
    from course_lib.exercises import __main__ as cli

    path = tmp_path / "mallory.ipynb"
    path.write_bytes(HONEST_PROBS)
    scripted[path.name] = script
    monkeypatch.setattr(cli, "_limits", lambda args: LIMITS)
    assert cli.main(["grade", str(path)]) == 0
    return capsys.readouterr().out


def test_a_lone_surrogate_costs_no_one_their_feedback(tmp_path, scripted, monkeypatch, capsys):
    """A surrogate in an exception message, a qualname, a module or a type name once stopped the whole class's
    gradebook (UnicodeEncodeError on writing it) and `grade` on printing it: it is shown as an escape."""
    graded = grade_class(tmp_path, scripted, message=probing(raised={"message": "\ud800 and \udce9"}),
                         qualname=probing({"module": "course_lib.\udc80", "qualname": "f\ud800"}),
                         type=probing({"callable": False, "type": "\ud83d"}))
    rows, feedback = graded["rows"], graded["feedback"]
    assert sorted(rows) == ["alice", "message", "qualname", "submission", "type"]
    assert rows["alice"][-3] == fmt_points(EXERCISES["unchanged_prediction"].points)  # honest: as before
    assert "your function language_probs raised ValueError: \\ud800 and \\udce9" in rows["message"][-1]
    assert "`course_lib.\\udc80.f\\ud800`" in rows["qualname"][-1] and "a \\ud83d" in rows["type"][-1]
    assert sorted(feedback) == ["alice", "message", "qualname", "type"]
    assert "raised ValueError: \\ud800 and \\udce9" in feedback["message"]
    out = grade_in_terminal(tmp_path, scripted, monkeypatch, capsys, probing(raised={"message": "\ud800"}))
    assert "language_sampling" in out and "raised ValueError: \\ud800" in out


def test_files_are_written_with_escapes_and_a_failed_write_leaves_the_earlier_gradebook(tmp_path, monkeypatch):
    out = tmp_path / "grades.csv"
    out.write_text("the earlier gradebook\n")
    write_atomically(out, "submission\ncaf\udce9\n")  # a second line of defence: a surrogate is written as an escape
    assert out.read_text() == "submission\ncaf\\udce9\n"

    def fail(*args):
        raise OSError("the disk is full")
    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError):
        write_atomically(out, "a new gradebook\n")
    assert out.read_text() == "submission\ncaf\\udce9\n" and os.listdir(tmp_path) == ["grades.csv"]


def test_a_cell_s_error_message_is_never_a_template_of_the_grader(tmp_path, scripted, monkeypatch, capsys):
    """The worker's message for a failed cell holds `{n}` where the name goes, and the cell's error: braces in the
    error once crashed the grader (KeyError) or made a 200 MB gradebook ({n:>200000000})."""
    graded = grade_class(tmp_path, scripted, config=probing(NEVER, cells=failed_cell("unexpected config {'alpha': 0.3}")),
                         big=probing(NEVER, cells=failed_cell("{n:>200000000} {0} {n.__class__}")))
    rows = graded["rows"]
    assert (
        "language_sampling: wrong — the cell that defines `language_probs` raised AssertionError: unexpected config "
        "{'alpha': 0.3}, so `language_probs` was never defined") in rows["config"][-1]
    assert ("the cell that defines `language_probs` raised AssertionError: {n:>200000000} {0} {n.__class__}, so "
            "`language_probs` was never defined") in rows["big"][-1]
    assert (tmp_path / "grades.csv").stat().st_size < 20_000
    assert rows["alice"][-3] == fmt_points(EXERCISES["unchanged_prediction"].points)  # honest: as before
    out = grade_in_terminal(tmp_path, scripted, monkeypatch, capsys,
                            probing(NEVER, cells=failed_cell("unexpected config {'alpha': 0.3}")))
    assert "raised AssertionError: unexpected config {'alpha': 0.3}, so `language_probs` was never defined" in out


def test_a_message_is_at_most_2000_characters(tmp_path, scripted):
    """A hint may quote the student's value (a question's answer of 30,000 characters): the gradebook does not."""
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "long.ipynb").write_bytes(ANSWERED)
    scripted["long.ipynb"] = (_ran("unchanged_prediction"), honest({QUESTION: "x" * 30_000}))
    grade, = grade_all(folder, tmp_path / "grades.csv", limits=LIMITS, progress=False)
    message = next(r.message for r in grade.results if r.name == "unchanged_prediction")
    assert "xxxxx" in message and len(message) == 2000 and message.endswith("…")


def test_student_text_is_plain_text_in_the_terminal_the_csv_the_feedback_and_the_report(tmp_path, scripted,
                                                                                      monkeypatch, capsys):
    """A qualname or an exception message with escape codes, line breaks, a code fence, HTML and links: in the terminal
    they once erased the real ❌ line and printed a fake ✅; in the feedback the ``` ended the code block. Control
    characters are shown as escapes (\\x1b), line breaks as spaces; the Markdown shows the text as text."""
    graded = grade_class(tmp_path, scripted, qualname=probing({"module": "course_lib.pretraining", "qualname": QUALNAME}),
                         inject=probing(raised={"message": INJECTED}))
    rows, feedback = graded["rows"], graded["feedback"]
    for name in ("qualname", "inject"):
        cell = rows[name][-1]
        assert "\x1b" not in cell and "\n" not in cell and "\\x1b[2K\\x1b[G" in cell, cell
    assert "`language_probs` is course_lib's own `course_lib.pretraining.x`\\x1b[2K" in rows["qualname"][-1]
    for name in ("qualname", "inject"):
        html = rendered(feedback[name])
        assert "<img" not in html and "<b>" not in html and "attacker.example/x\"" not in html, html
        assert html.count("<pre>") == 1 and "Regraded" not in html.split("</pre>")[1], html
        assert "&lt;img src=&quot;https://attacker.example/" in html.split("<pre>")[1], html
    html = rendered(graded["report"])
    assert html.count("<img") == 1 and "<b>" not in html and "<a href" not in html and "<strong>" not in html, html
    assert "<code>language_probs</code>" in html and "\\x1b[2K" in html  # our own code spans stay code
    assert "&lt;img src=&quot;https://attacker.example/t.png&quot;&gt; [regrade: all correct]" in html
    assert "\x1b" not in graded["report"] and "\x1b" not in feedback["qualname"]
    out = grade_in_terminal(tmp_path, scripted, monkeypatch, capsys,
                            probing({"module": "course_lib.pretraining", "qualname": QUALNAME}))
    lines = out.splitlines()
    assert "\x1b" not in out and len(lines) == 3, out  # the title, the one exercise, the total: nothing erased
    assert lines[1].startswith("  ❌ language_sampling  wrong          `language_probs` is course_lib's own "), out
    assert "\\x1b[2K\\x1b[G  ✅ language_sampling" in lines[1] and lines[2] == "0 of 1 exercises correct", out


def test_clean_text_and_markdown_escapes():
    from course_lib.exercises.untrusted import clean_text, md_fence, md_inline

    raw = "a\tb\r\nc\x1b[31m\x85\u202e\ud800" + "x" * 3000
    once = clean_text(raw)
    assert once.startswith("a b  c\\x1b[31m \\u202e\\ud800x") and len(once) == 2000 and once.endswith("…")
    assert clean_text(once) == once and clean_text("ok — ✅ `f`") == "ok — ✅ `f`"
    text = "`mask_tokens` got <b>[x](y)</b> | **2** `<i>` d_k _a_ $x$ ``` a\\"
    md = md_inline(text)
    assert md.startswith("`mask_tokens` got &lt;b&gt;\\[x\\](y)&lt;/b&gt; \\| \\*\\*2\\*\\* \\`&lt;i&gt;\\` d_k \\_a\\_ \\$x\\$")
    html = rendered(md)
    assert "<code>mask_tokens</code>" in html and "<b>" not in html and "<a" not in html and "<em>" not in html
    assert md_inline("# not a heading").startswith("\\#") and md_fence(["a ```` b"])[0] == "`" * 5
