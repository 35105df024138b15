"""Measure the reference times of the exercises: how long the notebooks' own solutions take to grade.

    .venv/bin/python tools/measure_reference_times.py            # every notebook with exercises
    .venv/bin/python tools/measure_reference_times.py NB.py ...  # some of them (the others keep their times)

Each solution source (notebooks/*.py with '### BEGIN SOLUTION') is graded in the sandbox, ``--repeats`` times,
with generous limits; the largest computing time (CPU seconds) of each check and of each notebook's graded
cells is written to course_lib/data/exercises/reference_times.json, which the grader reads: an exercise
may compute for its reference time plus a margin (``course_lib.exercises.sandbox.Limits``). Run it again after
changing a check or adding a notebook; an exercise with no reference time gets 1 s.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from make_student import sources  # noqa: E402

from course_lib.exercises import EXERCISES  # noqa: E402
from course_lib.exercises.sandbox import Limits, grade_file  # noqa: E402
from course_lib.paths import data_dir  # noqa: E402

TARGET = data_dir("exercises", "reference_times.json")


def measure(notebook: Path, repeats: int) -> tuple[dict, dict]:
    limits = Limits(time_limit=600, cell_time_limit=600)
    exercises, cells = {}, {}
    for _ in range(repeats):
        grade = grade_file(notebook, limits)
        if grade.error is not None:
            raise SystemExit(f"{notebook}: {grade.error}")
        wrong = [str(r) for r in grade.results if not r.correct]
        if wrong:
            raise SystemExit(f"{notebook}: the solution is not graded correct: {wrong}")
        for r in grade.results:
            exercises[r.name] = max(exercises.get(r.name, 0.0), round(grade.cpu.get(r.name, 0.0) + 0.05, 1))
        chapters = {EXERCISES[r.name].module.rpartition(".")[2] for r in grade.results}
        for chapter in chapters:
            cells[chapter] = max(cells.get(chapter, 0.0), round(grade.cpu.get("cells", 0.0) + 0.05, 1))
    return exercises, cells


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebooks", nargs="*", type=Path)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args(argv)
    old = json.loads(TARGET.read_text()) if TARGET.is_file() else {}
    exercises, cells = dict(old.get("exercises", {})), dict(old.get("cells", {}))
    for notebook in args.notebooks or sources():
        ex, ce = measure(notebook, args.repeats)
        exercises.update(ex)
        cells.update(ce)
        print(f"{notebook.name}: cells {ce}, checks {ex}")
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    TARGET.write_text(json.dumps({
        "about": "CPU seconds of the notebooks' own solutions, graded by tools/measure_reference_times.py "
                 "(1 torch thread); the grader allows each exercise its time plus a margin",
        "exercises": dict(sorted(exercises.items())), "cells": dict(sorted(cells.items()))}, indent=1) + "\n")
    print(f"written {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
