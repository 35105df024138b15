"""A folder of submissions into a CSV gradebook and one Markdown feedback file per submission.

    python -m course_lib.exercises grade-all submissions/ --out grades.csv

Every ``*.ipynb`` under the folder (``.ipynb_checkpoints`` and hidden folders skipped) is graded by
:func:`.sandbox.grade_file`, two at a time by default, with a progress bar. The gradebook has one row per
submission (its path under the folder, without ``.ipynb``), one column per exercise (the points earned),
the total, the points possible and a feedback column; each feedback file holds the lines ``check()`` prints
in the notebook; beside the gradebook, a class report (``<out>_report.md``, ``.csv``, ``.svg``: per exercise the
share correct / wrong / not attempted and the most frequent mistakes by hint, :mod:`.class_report`). The same
submissions always give byte-identical files (sorted, no timestamps); the submissions themselves are only read.

One file must never cost the class its gradebook: a file the grader cannot handle gets its own row ("could not be
graded: …", 0 points); the CSV is written to a temporary file and renamed over ``out``, so an earlier gradebook is
replaced whole or not at all; a name that is not UTF-8 is shown with ``\\xe9`` escapes. Each row is out of the points
its notebook's chapter has in the registry (:func:`.grading.notebook_chapter`), whatever the notebook calls
``check()`` on; the columns of another chapter's exercises are left empty in its row. A cell that begins like a
formula (``=``, ``+``, ``-``, ``@``, tab, carriage return) gets a leading ``'`` so that a spreadsheet shows it as text
(OWASP's advice against CSV injection). Two submissions never share a feedback file (:func:`feedback_names`).

What a submission wrote (an exception's message, a qualname) is plain text in every file (:mod:`.untrusted`): one
line without control characters, at most 2,000 characters a message, escaped for Markdown in the feedback files and
the report; the files are written with ``errors="backslashreplace"`` as well, so a character UTF-8 cannot encode
costs no one the gradebook.
"""
from __future__ import annotations

import csv
import hashlib
import io
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..paths import written_whole
from .core import EXERCISES, ICONS, NOT_ATTEMPTED, Result, fmt_points
from .grading import Grade, SubmissionError, chapter_of
from .untrusted import MAX_MESSAGE, clean_grade, clean_text, md_fence, md_inline

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet reads as the start of a formula


def submissions(folder: str | Path) -> list[Path]:
    """The notebooks under ``folder``, sorted by their path under it."""
    folder = Path(folder)
    found = [p for p in folder.rglob("*.ipynb")
             if (p.is_file() or p.is_symlink()) and not any(part.startswith(".") for part in p.relative_to(folder).parts)]
    return sorted(found, key=lambda p: p.relative_to(folder).as_posix())


def submission_id(folder: Path, path: Path) -> str:
    """The path under the folder, without .ipynb, as one line of plain text (:func:`.untrusted.clean_text`): a
    student names their own file, and an escape sequence in it (ESC[2J, which clears a terminal) would reach the
    CSV and the feedback file's name as it is. Bytes that are not UTF-8 are shown as ``\\xe9`` (written as they
    are, they would stop the gradebook from being written)."""
    sid = path.relative_to(folder).with_suffix("").as_posix()
    try:
        sid = sid.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a lone surrogate that is not an undecodable byte (possible in Windows names)
        sid = sid.encode("utf-8", "backslashreplace").decode("utf-8")
    return clean_text(sid, 4 * MAX_MESSAGE)


def own(grade: Grade) -> list[Result]:
    """The grade's results of its own chapter's exercises: check("…") on another notebook's exercise earns nothing."""
    return [r for r in grade.results if grade.chapter is not None and chapter_of(r.name) == grade.chapter]


def class_chapter(grades: Iterable[Grade]) -> str | None:
    """The chapter of most graded notebooks: the one a file that could not be graded is out of."""
    counts = Counter(g.chapter for g in grades if g.error is None and g.chapter is not None)
    return max(sorted(counts), key=counts.__getitem__, default=None)


def columns(grades: Iterable[Grade]) -> list[str]:
    """The exercises of the graded notebooks' chapters: the order of the submission with the most of its own (the
    fewest others' on a tie), then of the others, then the rest of those chapters in the registry's order."""
    graded = [g for g in grades if g.error is None]
    best = max(graded, key=lambda g: (len(own(g)), -len(g.results)), default=None)
    names = [r.name for r in own(best)] if best else []
    for g in graded:
        names += [r.name for r in own(g) if r.name not in names]
    chapters = {g.chapter for g in graded}
    names += [n for n in EXERCISES if chapter_of(n) in chapters and n not in names]
    return names


def chapter_results(grade: Grade, names: list[str], fallback: str | None) -> list[Result]:
    """The grade's result for each column of its chapter (``fallback`` for a file that could not be graded): what
    its points are out of, from the registry, whatever else the notebook checked."""
    chapter = grade.chapter or fallback
    return complete(grade, [n for n in names if chapter_of(n) == chapter])


def complete(grade: Grade, names: list[str]) -> list[Result]:
    """The grade's result for each column; an exercise its notebook does not hold is 'not attempted'."""
    mine = {r.name: r for r in grade.results}
    missing = ("this exercise is not in your notebook (no check(\"{name}\") call and no {needs}): "
               "work in the notebook you were given")
    return [mine.get(n) or Result(n, NOT_ATTEMPTED, missing.format(name=n, needs=", ".join(
        f"`{x}`" for x in EXERCISES[n].needs))) for n in names]


def feedback_line(grade: Grade, results: list[Result]) -> str:
    if grade.error is not None:
        return f"could not be graded: {grade.error}"
    wrong = [r for r in results if not r.correct]
    if not wrong:
        return "all correct"
    return " | ".join(str(r).split(" ", 1)[1] for r in wrong)  # without the icon


def feedback_markdown(sid: str, grade: Grade, results: list[Result]) -> str:
    """The feedback file of one submission. What may hold the student's text (the error, each result's line) is
    shown as text: the error escaped (:func:`.untrusted.md_inline`), the results in a code block that no line of
    theirs can close (:func:`.untrusted.md_fence`)."""
    possible = sum(r.points for r in results)
    lines = [f"# Feedback: {md_inline(clean_text(sid))}", ""]
    if grade.error is not None:
        lines += [f"**0 of {fmt_points(possible)} points**: this notebook could not be graded.", "",
                  md_inline(clean_text(grade.error).strip()), ""]
        return "\n".join(lines)
    score = sum(r.score for r in results)
    lines += [f"**{fmt_points(score)} of {fmt_points(possible)} points** · "
              f"{sum(r.correct for r in results)} of {len(results)} exercises correct", "",
              "| exercise | points | result |", "|---|---|---|"]
    lines += [f"| {r.name} | {fmt_points(r.score)} / {fmt_points(r.points)} | {ICONS[r.status]} {r.status} |"
              for r in results]
    lines += ["", "What `check()` says for each exercise in your notebook:", ""]
    lines += md_fence([clean_text(str(r), 4 * MAX_MESSAGE) for r in results]) + [""]
    return "\n".join(lines)


def grade_notebook(path: str | Path, limits=None) -> list[Result]:
    """Results of every registered exercise found in the notebook at ``path`` (.ipynb or py:percent .py).

    An exercise belongs to the notebook if the notebook defines one of its functions or calls
    ``check("<name>")``; results come in the notebook's order. The cells run in a separate process
    (:func:`.sandbox.grade_file`, with ``limits``); a file that cannot be graded raises :class:`SubmissionError`.
    """
    from .sandbox import grade_file

    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"there is no notebook at {path}")
    grade = grade_file(path, limits)
    if grade.error is not None:
        raise SubmissionError(grade.error)
    return grade.results


def text_cell(text: str) -> str:
    """``text`` as a spreadsheet must show it: one that begins like a formula gets a leading ' and stays text, so a
    file named ``=HYPERLINK(…)`` is not a link in the teacher's spreadsheet. A carriage return becomes a line break,
    which the csv module quotes (Python 3.11 writes a lone \\r bare, and a reader would end the row there)."""
    text = "'" + text if text.startswith(FORMULA_START) else text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def gradebook_csv(folder: Path, grades: list[Grade], names: list[str]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([text_cell(n) for n in ["submission", *names, "total", "out of", "feedback"]])
    fallback = class_chapter(grades)
    for grade in grades:
        results = chapter_results(grade, names, fallback)
        scores = {r.name: 0 if grade.error is not None else r.score for r in results}
        row = [submission_id(folder, grade.path), *[fmt_points(scores[n]) if n in scores else "" for n in names],
               fmt_points(sum(scores.values())), fmt_points(sum(r.points for r in results)), feedback_line(grade, results)]
        writer.writerow([text_cell(cell) for cell in row])
    return out.getvalue()


def write_atomically(path: Path, text: str) -> None:
    """Write a temporary file in ``path``'s folder, then rename it over ``path``: an earlier gradebook there is
    replaced whole or not at all, never left empty or cut off by an error halfway. A character UTF-8 cannot
    encode (a lone surrogate) is written as its escape (``\\ud800``)."""
    with written_whole(path) as tmp:
        tmp.write_text(text, encoding="utf-8", errors="backslashreplace")


def feedback_names(sids: list[str]) -> list[str]:
    """The feedback file of each submission, in order: its id with / as __, plus a short hash of the id and its
    place where two would give one file (alice/11_1 and alice__11_1; Bob and bob on a disk that ignores case; two
    names that differ only in a control character, which :func:`submission_id` shows the same), which would
    otherwise hold only the feedback of the last one written."""
    plain = [sid.replace("/", "__") for sid in sids]
    shared = Counter(name.casefold() for name in plain)
    names, used = [], set()
    for i, (sid, name) in enumerate(zip(sids, plain)):
        if shared[name.casefold()] > 1:
            name += "-" + hashlib.sha256(f"{i}/{sid}".encode("utf-8")).hexdigest()[:8]
        while name.casefold() in used:  # only a name made to look like another's with its hash
            name += "_"
        used.add(name.casefold())
        names.append(name + ".md")
    return names


def grade_all(folder: str | Path, out: str | Path, feedback_dir: str | Path | None = None, jobs: int = 2,
              limits=None, progress: bool = True) -> list[Grade]:
    """Grade every notebook under ``folder``; writes the gradebook ``out`` (CSV) and the feedback files
    (``feedback_dir``, default ``<out without .csv>_feedback/``). Returns the grades, in the gradebook's order.
    A file the grader fails on (a bug of the grader, a result it cannot read) is that file's error, not the batch's."""
    from tqdm.auto import tqdm

    from .isolation import choose
    from .sandbox import Limits, grade_file

    choose((limits or Limits()).isolation)  # no sandbox here: one clear error, before any file is graded
    folder, out = Path(folder), Path(out)
    feedback_dir = Path(feedback_dir) if feedback_dir is not None else out.with_name(out.stem + "_feedback")
    paths = submissions(folder)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool, \
            tqdm(total=len(paths), desc="grading", unit="notebook", disable=not progress) as bar:
        def one(path):
            try:
                grade = grade_file(path, limits)
            except Exception as e:  # noqa: BLE001 - it costs this file its grade, never the class its gradebook
                import traceback

                frames = traceback.extract_tb(e.__traceback__)[1:]  # (the first is this function's own)
                where = " < ".join(f"{Path(f.filename).name}:{f.lineno}" for f in reversed(frames))
                # grade_file's grades are clean already; this error may quote the student (str(e))
                grade = clean_grade(Grade(path, error=f"the grader itself failed on this file ({type(e).__name__}: "
                                                      f"{str(e)[:200]}, at {where}); ask your teacher to grade it by "
                                                      "hand"))
            bar.update(1)
            return grade
        grades = list(pool.map(one, paths))
    names, fallback = columns(grades), class_chapter(grades)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(out, gradebook_csv(folder, grades, names))
    feedback_dir.mkdir(parents=True, exist_ok=True)
    sids = [submission_id(folder, grade.path) for grade in grades]
    for sid, file, grade in zip(sids, feedback_names(sids), grades):
        text = feedback_markdown(sid, grade, chapter_results(grade, names, fallback))
        (feedback_dir / file).write_text(text, encoding="utf-8", errors="backslashreplace")
    write_class_report(out, grades, names, fallback)
    return grades


def report_paths(out: Path) -> dict[str, Path]:
    """Where the class report goes, beside the gradebook ``out``: Markdown, CSV and the chart."""
    return {ext: out.with_name(f"{out.stem}_report.{ext}") for ext in ("md", "csv", "svg")}


def write_class_report(out: Path, grades: list[Grade], names: list[str], fallback: str | None) -> dict[str, Path]:
    """The class report (:mod:`.class_report`) of these grades, written beside the gradebook."""
    from .class_report import report_csv, report_markdown, report_svg, summarise

    summaries = summarise([(chapter_results(g, names, fallback), g.error) for g in grades], names)
    paths = report_paths(out)
    write_atomically(paths["svg"], report_svg(summaries))
    write_atomically(paths["csv"], report_csv(summaries))
    write_atomically(paths["md"], report_markdown(summaries, chart=paths["svg"].name))
    return paths
