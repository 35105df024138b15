"""python -m course_lib.exercises grade PATH [PATH ...] | list"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import EXERCISES, format_results, grade_notebook


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m course_lib.exercises",
                                 description="Grade a notebook's exercises (feedback: exits 0 whatever the results).")
    sub = ap.add_subparsers(dest="command", required=True)
    grade = sub.add_parser("grade", help="run every exercise of a notebook (.ipynb or py:percent .py)")
    grade.add_argument("paths", nargs="+", metavar="PATH")
    sub.add_parser("list", help="list the exercises and the functions each one asks for")
    args = ap.parse_args(argv)

    if args.command == "list":
        width = max(len(name) for name in EXERCISES) + 2
        for ex in EXERCISES.values():
            print(f"{ex.name:<{width}}{', '.join(ex.needs)}")
        return 0
    status = 0
    for path in args.paths:
        if not Path(path).is_file():
            print(f"there is no notebook at {path}", file=sys.stderr)
            status = 2
            continue
        print(format_results(grade_notebook(path), title=path))
    return status


if __name__ == "__main__":
    sys.exit(main())
