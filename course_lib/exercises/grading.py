"""Grading a notebook without a kernel: what a submission is, which exercises it holds, and the table of results.

Only code cells tagged ``setup`` or ``exercise`` run (in order, each on its own, in one fresh namespace, with
``check`` replaced by a no-op); the exercise functions must therefore need nothing that other cells define.
They run in a separate process with time and memory limits (:mod:`.sandbox`, :mod:`.worker`): whatever a
submission does ends at most one exercise, and the file handed in is only ever read.

A file that cannot be graded at all (empty, cut off, not a notebook, a notebook of another course) gives one
:class:`SubmissionError` whose message says what is wrong in the student's words.

A notebook's chapter (:func:`notebook_chapter`) is read from what its graded cells define, never from what it calls
``check()`` on: the gradebook takes the points it is out of from the registry for that chapter.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from .core import EXERCISES, ICONS, Result, fmt_points
from .untrusted import clean_text

GRADED_TAGS = {"setup", "exercise"}
CHECK_CALL = re.compile(r"""\bcheck\(\s*["']([^"']+)["']\s*\)""")
MAX_BYTES = 50_000_000  # a notebook of this course is well under 1 MB, even with its outputs
MAX_CODE = 1_000_000    # characters of code in all its code cells: ours have well under 100,000
SAVE_AGAIN = "open it in JupyterLab, save it (File → Save Notebook) and hand in the saved .ipynb again"


class SubmissionError(ValueError):
    """A file that cannot be graded at all; the message is meant for the student."""


@dataclass(frozen=True)
class Cell:
    index: int
    source: str
    code: bool      # a code cell (markdown and raw cells are only read)
    graded: bool    # a code cell tagged setup or exercise: grading runs it


@dataclass
class Grade:
    """The grading of one file: its results (notebook order), or ``error`` when it could not be graded."""

    path: Path
    results: list[Result] = field(default_factory=list)
    error: str | None = None
    cpu: dict[str, float] = field(default_factory=dict)  # seconds of computing of each check, and of "cells"
    chapter: str | None = None  # the chapter module whose notebook this is ("ch11_2"): see notebook_chapter

    @property
    def score(self) -> float:
        return round(sum(r.score for r in self.results), 4)

    @property
    def points(self) -> float:
        return round(sum(r.points for r in self.results), 4)


# ----------------------------------------------------------------------------- reading a submission

def read_cells(path: str | Path) -> list[Cell]:
    """The cells of the notebook at ``path`` (.ipynb, or a py:percent .py), or a :class:`SubmissionError`."""
    cells = _read_cells(Path(path))
    code = sum(len(c.source) for c in cells if c.code)
    if code > MAX_CODE:  # before any scan of it, and the job the worker is sent stays within what it reads
        raise SubmissionError(f"the notebook has {code:,} characters of code, far more than the exercises need "
                              f"(at most {MAX_CODE:,}): remove the data pasted into its cells (read it from a file "
                              "instead), save it and hand it in again")
    return cells


def _read_cells(path: Path) -> list[Cell]:
    if path.is_symlink():
        raise SubmissionError("the file handed in is a link to another file, not a notebook: hand in the .ipynb itself")
    size = path.stat().st_size
    if size > MAX_BYTES:  # before reading it: a sparse file of gigabytes is not read to find out
        raise SubmissionError(f"the file is {size / 1e6:.0f} MB, far more than a notebook of this course: clear "
                              "the outputs (Edit → Clear Outputs of All Cells), save it and hand it in again")
    with open(path, "rb") as f:
        data = f.read(MAX_BYTES + 1)
    if not data.strip():
        raise SubmissionError(f"the file is empty ({len(data)} bytes): {SAVE_AGAIN}")
    if len(data) > MAX_BYTES:
        raise SubmissionError(f"the file is {len(data) / 1e6:.0f} MB, far more than a notebook of this course: clear "
                              "the outputs (Edit → Clear Outputs of All Cells), save it and hand it in again")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SubmissionError("the file is not a text file, so it is not a notebook: is it the right file? "
                              "Hand in the .ipynb of the exercises") from None
    if path.suffix == ".py":
        import jupytext

        nb = jupytext.reads(text, fmt="py:percent")
        return [Cell(i, c.source, c.cell_type == "code", c.cell_type == "code" and _graded(c.metadata))
                for i, c in enumerate(nb.cells)]
    if path.suffix != ".ipynb":
        raise SubmissionError(f"a {path.suffix or 'file without an extension'} is not a notebook: hand in the .ipynb")
    return _ipynb_cells(text)


def _ipynb_cells(text: str) -> list[Cell]:
    try:
        nb = json.loads(text)
    except RecursionError:  # "[[[[…" thousands deep: no notebook is, and json cannot read it
        raise SubmissionError(f"the notebook file is damaged (its JSON is nested thousands of levels deep); "
                              f"{SAVE_AGAIN}") from None
    except json.JSONDecodeError as e:
        if not text.rstrip().endswith("}"):  # a notebook ends with the '}' that closes it
            raise SubmissionError(f"the notebook is cut off (its text stops at line {e.lineno}, in the middle of the "
                                  f"notebook): it was not saved or copied completely; {SAVE_AGAIN}") from None
        raise SubmissionError(f"the notebook file is damaged (line {e.lineno}, column {e.colno}: {e.msg}), so Jupyter "
                              f"cannot open it either; if you edited it in a text editor, {SAVE_AGAIN}") from None
    if isinstance(nb, dict) and "worksheets" in nb:  # nbformat 3: let nbformat convert it
        import nbformat

        try:
            nb = json.loads(nbformat.writes(nbformat.reads(text, as_version=4)))
        except Exception as e:  # noqa: BLE001 - nbformat raises what it likes (ValidationError, KeyError…)
            raise SubmissionError(f"the notebook is in the old format of Jupyter (nbformat 3) and is damaged, so it "
                                  f"cannot be converted ({type(e).__name__}: {str(e)[:200]}); {SAVE_AGAIN}") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise SubmissionError("the file is JSON but not a Jupyter notebook (it has no list of cells): "
                              "hand in the .ipynb of the exercises")
    cells = []
    for i, c in enumerate(nb["cells"]):
        if not isinstance(c, dict):
            raise SubmissionError(f"cell {i + 1} of the notebook is damaged (not a cell): {SAVE_AGAIN}")
        source = c.get("source", "")
        source = "".join(map(str, source)) if isinstance(source, list) else str(source)
        code = c.get("cell_type") == "code"
        meta = c.get("metadata") if isinstance(c.get("metadata"), dict) else {}
        cells.append(Cell(i, source, code, code and _graded(meta)))
    return cells


def _graded(metadata) -> bool:
    tags = metadata.get("tags") or []
    return isinstance(tags, list) and bool(GRADED_TAGS & {t for t in tags if isinstance(t, str)})


# ----------------------------------------------------------------------------- which exercises a notebook holds

def code_of(cells: list[Cell]) -> str:
    return "\n".join(c.source for c in cells if c.code)


def defines(source: str, name: str) -> bool:
    """Whether ``source`` defines ``name`` (``def name(`` or ``name =`` at the start of a line, after spaces or
    tabs only: a ``\\s*`` there would run over newlines, and rescan a run of blank lines from each of its lines)."""
    return re.search(rf"^[ \t]*(def\s+{re.escape(name)}\s*\(|{re.escape(name)}\s*=)", source, re.MULTILINE) is not None


_defines = defines


def python_only(source: str) -> str:
    """``source`` with its IPython magics and shell lines (``%matplotlib inline``, ``!pip install x``, ``%%time``)
    made ``pass  # %matplotlib inline``, which plain Python can run: a no-op at the line's indentation (a magic alone
    in a block leaves it valid). As in IPython, a line is a magic only where a statement begins: a ``%`` or ``!``
    that begins a line inside brackets, after a backslash or in a string is Python (``(labels`` / ``!= -100)``).
    A magic line that ends with a backslash goes on to the next line, which is commented out too. Lines end at
    ``\\n``, ``\\r\\n`` or ``\\r`` only, as for Python (not at a form feed or U+2028 in a string)."""
    lines = re.split(r"\r\n|\r|\n", source)
    depth, quote, continued, magic = 0, None, False, False
    for k, line in enumerate(lines):
        body = line.lstrip(" \t\f")
        if magic:  # the continuation of a magic line
            lines[k], magic = "# " + line, line.endswith("\\")
        elif depth == 0 and quote is None and not continued and body.startswith(("%", "!")):
            lines[k], magic = f"{line[:len(line) - len(body)]}pass  # {body}", line.endswith("\\")
        else:
            depth, quote, continued = _scan(line, depth, quote)
    return "\n".join(lines).removesuffix("\n")


_CODE_STOP = re.compile(r"[\'\"#()\[\]{}\\]")
_STRING_STOP = {q: re.compile(r"\\|" + q) for q in ("'", '"', "'''", '"""')}


def _scan(line: str, depth: int, quote: str | None) -> tuple[int, str | None, bool]:
    """Python's state at the end of ``line``, from the state at its start: (the depth of brackets, the quote of
    the string that is open, whether a backslash continues the line)."""
    i, n = 0, len(line)
    while i < n:
        if quote is not None:  # in a string: up to its closing quote; a backslash escapes the next character
            m = _STRING_STOP[quote].search(line, i)
            if m is None:
                break
            if m.group() == "\\":
                if m.end() == n:  # an escaped line end: the string goes on
                    return depth, quote, False
                i = m.end() + 1
            else:
                i, quote = m.end(), None
            continue
        m = _CODE_STOP.search(line, i)
        if m is None or m.group() == "#":
            break
        c, i = m.group(), m.end()
        if c in "'\"":
            quote = line[m.start():m.start() + 3] if line.startswith(c * 3, m.start()) else c
            i = m.start() + len(quote)
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(depth - 1, 0)
        elif i == n:  # a backslash that ends the line
            return depth, None, True
    if quote is not None and len(quote) == 1:
        quote = None  # a string left open at the end of its line: a syntax error, which Python reports
    return depth, quote, False


def exercises_in(source: str, defined=()) -> list[str]:
    """The exercises of a notebook, in its order: those it calls ``check("<name>")`` for, or whose functions it
    defines (in ``source``, its code, or among the names ``defined`` by running it)."""
    called, defined = set(CHECK_CALL.findall(source)), set(defined)
    found = [name for name, ex in EXERCISES.items()
             if name in called or any(n in defined or _defines(source, n) for n in ex.needs)]
    return sorted(found, key=lambda name: _first_mention(source, EXERCISES[name]))


def _first_mention(source: str, ex) -> int:
    """Where the notebook first calls check("<name>") or defines one of its functions: results follow the notebook."""
    spots = [m.start() for m in CHECK_CALL.finditer(source) if m.group(1) == ex.name]
    spots += [m.start() for n in ex.needs for m in re.finditer(rf"^[ \t]*def\s+{re.escape(n)}\s*\(", source, re.MULTILINE)]
    return min(spots, default=len(source))


def chapter_of(name: str) -> str:
    """The chapter module of exercise ``name``: "ch11_2" for one registered by ``course_lib.exercises.ch11_2``."""
    return EXERCISES[name].module.rpartition(".")[2]


def notebook_chapter(cells: list[Cell]) -> str | None:
    """The chapter whose notebook this is: the one with the largest share of its exercises' functions (or prediction
    variables) defined in graded cells, as the student copy defines each of them as a stub; then the largest share
    of its exercises found at all. A cell that calls check() on every exercise of the course cannot make the
    notebook another chapter's, nor raise the points it is out of. None when it holds no exercise at all."""
    graded, found = "\n".join(c.source for c in cells if c.graded), set(exercises_in(code_of(cells)))
    chapters: dict[str, list[str]] = {}
    for name in EXERCISES:
        chapters.setdefault(chapter_of(name), []).append(name)

    def share(chapter: str) -> tuple[float, float]:
        names = chapters[chapter]
        defined = sum(any(_defines(graded, n) for n in EXERCISES[name].needs) for name in names)
        return defined / len(names), len(found.intersection(names)) / len(names)
    best = max(sorted(chapters), key=share, default=None)
    return best if best is not None and share(best) > (0, 0) else None


def checked(grade: Grade) -> Grade:
    """``grade``, or an error in its place when it holds a result the grader cannot read: a status that is not one of
    the three, credit outside 0…1 (more points than the exercise is worth) or a message that is not text. Only code
    that writes to the grader's own channel sends those, and the gradebook must not show them (nor crash on them)."""
    for r in grade.results:
        credit = r.credit is None or (type(r.credit) in (int, float) and 0 <= r.credit < 1)
        if not isinstance(r.status, str) or r.status not in ICONS or not credit or not isinstance(r.message, str):
            return Grade(grade.path, error=f"the grader received a result for `{r.name}` that it cannot read (status "
                                           f"{str(r.status)[:40]!r}, credit {str(r.credit)[:40]}): did the notebook "
                                           "write to the grader's own output? Ask your teacher to grade it by hand",
                         chapter=grade.chapter)
    return grade


def check_gradable(cells: list[Cell]) -> list[str]:
    """The exercises found without running anything; a :class:`SubmissionError` when there is nothing to grade."""
    found = exercises_in(code_of(cells))
    if not found:
        raise SubmissionError("this notebook holds none of the course's exercises (no check(\"…\") call and none of "
                              "the functions they ask for): is it the notebook of this course's exercises?")
    if not any(c.graded for c in cells):
        raise SubmissionError("no cell of this notebook is tagged `setup` or `exercise`, so nothing can be graded: "
                              "were the cells copied into a new notebook? Work in the notebook you were given")
    return found


# ----------------------------------------------------------------------------- grading and showing

def format_results(results: list[Result], title: str | None = None) -> str:
    """A table, one exercise a line, then how many are correct and the points."""
    lines = [title] if title else []
    if not results:
        return "\n".join(lines + ["  no graded exercises in this notebook"])
    width = max(len(r.name) for r in results)
    for r in results:
        lines.append(f"  {ICONS[r.status]} {r.name:<{width}}  {r.status:<13}  {clean_text(r.message)}".rstrip())
    score, points = sum(r.score for r in results), sum(r.points for r in results)
    total = f"{sum(r.correct for r in results)} of {len(results)} exercises correct"
    if score != sum(r.correct for r in results) or points != len(results):
        total += f", {fmt_points(score)} of {fmt_points(points)} points"
    lines.append(total)
    return "\n".join(lines)
