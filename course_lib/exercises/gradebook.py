"""A folder of submissions into a CSV gradebook and one Markdown feedback file per submission.

    python -m course_lib.exercises grade-all submissions/ --out grades.csv

Every ``*.ipynb`` under the folder (``.ipynb_checkpoints`` and hidden folders skipped) is graded by
:func:`.sandbox.grade_file`, two at a time by default, with a progress bar. The gradebook has one row per
submission (its path under the folder, without ``.ipynb``), one column per exercise (the points earned),
the total, the points possible and a feedback column; each feedback file holds the lines ``check()`` prints
in the notebook. The same submissions always give byte-identical files (sorted, no timestamps); the
submissions themselves are only read.
"""
from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .core import EXERCISES, ICONS, NOT_ATTEMPTED, Result, fmt_points
from .grading import Grade


def submissions(folder: str | Path) -> list[Path]:
    """The notebooks under ``folder``, sorted by their path under it."""
    folder = Path(folder)
    found = [p for p in folder.rglob("*.ipynb")
             if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)]
    return sorted(found, key=lambda p: p.relative_to(folder).as_posix())


def submission_id(folder: Path, path: Path) -> str:
    return path.relative_to(folder).with_suffix("").as_posix()


def columns(grades: Iterable[Grade]) -> list[str]:
    """The exercises of the gradebook: the order of the submission with the most of them, then every other
    exercise of the same notebooks (chapter modules) in the registry's order."""
    graded = [g for g in grades if g.error is None]
    best = max(graded, key=lambda g: len(g.results), default=None)
    names = [r.name for r in best.results] if best else []
    chapters = {EXERCISES[r.name].module for g in graded for r in g.results}
    for g in graded:
        names += [r.name for r in g.results if r.name not in names]
    names += [n for n, ex in EXERCISES.items() if ex.module in chapters and n not in names]
    return names


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
    possible = sum(r.points for r in results)
    lines = [f"# Feedback: {sid}", ""]
    if grade.error is not None:
        lines += [f"**0 of {fmt_points(possible)} points**: this notebook could not be graded.", "", grade.error, ""]
        return "\n".join(lines)
    score = sum(r.score for r in results)
    lines += [f"**{fmt_points(score)} of {fmt_points(possible)} points** · "
              f"{sum(r.correct for r in results)} of {len(results)} exercises correct", "",
              "| exercise | points | result |", "|---|---|---|"]
    lines += [f"| {r.name} | {fmt_points(r.score)} / {fmt_points(r.points)} | {ICONS[r.status]} {r.status} |"
              for r in results]
    lines += ["", "What `check()` says for each exercise in your notebook:", "", "```"]
    lines += [str(r) for r in results] + ["```", ""]
    return "\n".join(lines)


def gradebook_csv(folder: Path, grades: list[Grade], names: list[str]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["submission", *names, "total", "out of", "feedback"])
    for grade in grades:
        results = complete(grade, names)
        score = 0 if grade.error is not None else sum(r.score for r in results)
        writer.writerow([submission_id(folder, grade.path), *[fmt_points(0 if grade.error else r.score) for r in results],
                         fmt_points(score), fmt_points(sum(r.points for r in results)), feedback_line(grade, results)])
    return out.getvalue()


def grade_all(folder: str | Path, out: str | Path, feedback_dir: str | Path | None = None, jobs: int = 2,
              limits=None, progress: bool = True) -> list[Grade]:
    """Grade every notebook under ``folder``; writes the gradebook ``out`` (CSV) and the feedback files
    (``feedback_dir``, default ``<out without .csv>_feedback/``). Returns the grades, in the gradebook's order."""
    from tqdm.auto import tqdm

    from .sandbox import grade_file

    folder, out = Path(folder), Path(out)
    feedback_dir = Path(feedback_dir) if feedback_dir is not None else out.with_name(out.stem + "_feedback")
    paths = submissions(folder)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool, \
            tqdm(total=len(paths), desc="grading", unit="notebook", disable=not progress) as bar:
        def one(path):
            grade = grade_file(path, limits)
            bar.update(1)
            return grade
        grades = list(pool.map(one, paths))
    names = columns(grades)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(gradebook_csv(folder, grades, names), encoding="utf-8")
    feedback_dir.mkdir(parents=True, exist_ok=True)
    for grade in grades:
        sid = submission_id(folder, grade.path)
        text = feedback_markdown(sid, grade, complete(grade, names))
        (feedback_dir / (sid.replace("/", "__") + ".md")).write_text(text, encoding="utf-8")
    return grades
