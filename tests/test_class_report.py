"""The class report grade-all writes beside the gradebook, on a synthetic class whose mistakes are known."""
from __future__ import annotations

import csv
import io
from pathlib import Path

import course_lib.exercises  # noqa: F401  (registers every exercise)
from course_lib.exercises.class_report import NOT_GRADED, report_markdown, report_svg, summarise
from course_lib.exercises.core import CORRECT, EXERCISES, NOT_ATTEMPTED, WRONG, Result
from course_lib.exercises.gradebook import class_chapter, columns, report_paths, write_class_report
from course_lib.exercises.grading import Grade, chapter_of

CHAPTER = "ch11_1"
NAMES = [n for n in EXERCISES if chapter_of(n) == CHAPTER]
SCALE = "you forgot to divide the scores by √d_k"
AXIS = "the weights sum to 1 along axis -2 instead of along each row"


def student(i: int, attention: tuple[str, str] | None, **others) -> Grade:
    results = []
    if attention is not None:
        results.append(Result("attention", *attention))
    for name, status in others.items():
        results.append(Result(name, status, "" if status != WRONG else "wrong somehow"))
    return Grade(Path(f"class/s{i:02d}.ipynb"), results=results, chapter=CHAPTER)


def synthetic_class() -> list[Grade]:
    """10 students and one unreadable file: on `attention` 5 correct, 3 forgot the scaling, 1 normalised the wrong
    axis, 1 did not attempt it; `causal_mask`: 9 correct, 1 not attempted (no check call at all)."""
    g = [student(i, (CORRECT, "")) for i in range(5)]
    g += [student(5 + i, (WRONG, SCALE)) for i in range(3)]
    g += [student(8, (WRONG, AXIS)), student(9, None)]
    for k, s in enumerate(g):
        if k != 9:
            s.results.append(Result("causal_mask", CORRECT))
    g.append(Grade(Path("class/broken.ipynb"), error="not a notebook (nbformat 3)"))
    return g


def summaries_of(grades):
    names, fallback = columns(grades), class_chapter(grades)
    from course_lib.exercises.gradebook import chapter_results

    return {s.name: s for s in summarise([(chapter_results(g, names, fallback), g.error) for g in grades], names)}


def test_counts_shares_and_mistakes_by_hint():
    s = summaries_of(synthetic_class())
    att = s["attention"]
    assert att.total == 11 and dict(att.counts) == {CORRECT: 5, WRONG: 4, NOT_ATTEMPTED: 1, NOT_GRADED: 1}
    assert att.top_mistakes() == [(SCALE, 3), (AXIS, 1)]
    assert round(att.share(WRONG), 3) == round(4 / 11, 3)
    cm = s["causal_mask"]
    assert dict(cm.counts) == {CORRECT: 9, NOT_ATTEMPTED: 1, NOT_GRADED: 1} and not cm.mistakes
    # every exercise of the chapter has a row (out of the registry), attempted by anyone or not
    assert set(s) == set(NAMES) and all(x.total == 11 for x in s.values())


def test_the_files_beside_the_gradebook(tmp_path):
    grades = synthetic_class()
    out = tmp_path / "grades.csv"
    paths = write_class_report(out, grades, columns(grades), class_chapter(grades))
    assert paths == report_paths(out) and all(p.exists() for p in paths.values())
    rows = {r["exercise"]: r for r in csv.DictReader(io.StringIO(paths["csv"].read_text()))}
    att = rows["attention"]
    assert (att["submissions"], att[CORRECT], att[WRONG], att[NOT_ATTEMPTED], att[NOT_GRADED]) == ("11", "5", "4", "1", "1")
    assert (att["mistake 1"], att["mistake 1: submissions"], att["mistake 2"]) == (SCALE, "3", AXIS)
    md = paths["md"].read_text()
    assert "| attention | 45% | 36% | 9% | 9% | 27%: you forgot to divide the scores by √d_k |" in md
    assert "### attention: 4 of 11 wrong" in md and "- 27% (3): you forgot to divide" in md
    assert "](grades_report.svg)" in md
    svg = paths["svg"].read_text()
    assert svg.count("class='bar'") == sum(1 for s in summaries_of(grades).values() for k in s.counts if s.counts[k])
    assert "attention: wrong 4 of 11" in svg and all(k in svg for k in (CORRECT, WRONG, NOT_ATTEMPTED, NOT_GRADED))
    again = {k: p.read_bytes() for k, p in write_class_report(out, grades, columns(grades), class_chapter(grades)).items()}
    assert again == {k: p.read_bytes() for k, p in paths.items()}, "the same class gives the same files"


def test_a_hint_is_text_in_a_spreadsheet_and_one_line_in_markdown():
    grades = [student(0, (WRONG, "=HYPERLINK(\"x\")\nsecond line | with a pipe"))]
    s = list(summaries_of(grades).values())
    from course_lib.exercises.class_report import report_csv

    assert "'=HYPERLINK" in report_csv(s)
    md = report_markdown(s)
    assert "second line \\| with a pipe" in md and "\nsecond line" not in md
    assert report_svg([]).startswith("<svg")
