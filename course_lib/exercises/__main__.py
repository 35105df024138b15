"""python -m course_lib.exercises grade PATH [PATH ...] | grade-all FOLDER --out grades.csv | list | export …"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import EXERCISES, format_results
from .core import fmt_points


def _limits(args):
    from .sandbox import Limits

    return Limits(time_limit=args.time_limit, margin=args.time_margin, cell_time_limit=args.cell_time_limit,
                  memory_mb=args.memory_mb, isolation="unsafe" if args.unsafe else args.isolation)


def _limit_options(parser) -> None:
    parser.add_argument("--time-limit", type=float, metavar="S",
                        help="seconds of computing per exercise (default: the reference solution's time + margin)")
    parser.add_argument("--time-margin", type=float, default=5.0, metavar="S",
                        help="seconds above the reference solution's time (default 5)")
    parser.add_argument("--cell-time-limit", type=float, metavar="S",
                        help="seconds per setup/exercise cell (default: the notebook's reference + 2 × margin)")
    parser.add_argument("--memory-mb", type=int, default=2048, metavar="MB", help="memory per exercise (default 2048)")
    parser.add_argument("--isolation", choices=["bwrap", "uid"],
                        help="the sandbox students' code runs in (default: bubblewrap where it works, else a user id "
                             "of its own when run as root; see the README)")
    parser.add_argument("--unsafe", action="store_true",
                        help="grade without a sandbox (time and memory limits only): only for notebooks you trust")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m course_lib.exercises",
                                 description="Grade notebooks' exercises (feedback: exits 0 whatever the results).")
    sub = ap.add_subparsers(dest="command", required=True)
    grade = sub.add_parser("grade", help="run every exercise of a notebook (.ipynb or py:percent .py)")
    grade.add_argument("paths", nargs="+", metavar="PATH")
    _limit_options(grade)
    batch = sub.add_parser("grade-all", help="grade every .ipynb in a folder into a CSV gradebook and feedback files")
    batch.add_argument("folder", type=Path, metavar="FOLDER")
    batch.add_argument("--out", type=Path, required=True, metavar="GRADES.csv")
    batch.add_argument("--feedback", type=Path, metavar="DIR",
                       help="one Markdown file per submission (default: <GRADES>_feedback/ next to the CSV)")
    batch.add_argument("--jobs", type=int, default=2, help="submissions graded at a time (default 2)")
    _limit_options(batch)
    sub.add_parser("list", help="list the exercises, their points and the functions each one asks for")
    export = sub.add_parser("export", help="otter: a test file per exercise (EXERCISE ..., default all); nbgrader: "
                                           "the notebooks NOTEBOOK ... with an autograder test cell per exercise")
    export.add_argument("--out", type=Path, required=True, metavar="DIR")
    export.add_argument("what", nargs="+", metavar="otter|nbgrader [EXERCISE|NOTEBOOK ...]")
    args, extra = ap.parse_known_args(argv)
    if extra and (args.command != "export" or any(x.startswith("-") for x in extra)):
        ap.error(f"unrecognized arguments: {' '.join(extra)}")
    if extra:  # export otter --out DIR name name: argparse leaves the names after --out over
        args.what += extra

    if args.command == "list":
        width = max(len(name) for name in EXERCISES) + 2
        for ex in EXERCISES.values():
            print(f"{ex.name:<{width}}{fmt_points(ex.points):>3} pt  {', '.join(ex.needs)}")
        return 0
    if args.command == "export":
        from .interop import export

        fmt, *items = args.what
        if fmt not in ("otter", "nbgrader"):
            ap.error(f"export writes 'otter' test files or 'nbgrader' notebooks, not {fmt!r}")
        for path in export(fmt, args.out, items or None):
            print(path)
        return 0
    from .isolation import SandboxUnavailable, choose

    try:
        choose(_limits(args).isolation)
    except SandboxUnavailable as e:
        print(f"not graded: {e}", file=sys.stderr)
        return 2
    if args.command == "grade-all":
        from .gradebook import grade_all

        if not args.folder.is_dir():
            print(f"there is no folder {args.folder}", file=sys.stderr)
            return 2
        rows = grade_all(args.folder, args.out, feedback_dir=args.feedback, jobs=args.jobs, limits=_limits(args))
        from .gradebook import report_paths

        print(f"{len(rows)} submissions graded: {args.out}; class report: {report_paths(args.out)['md']}")
        return 0
    from .sandbox import grade_file

    status = 0
    for path in args.paths:
        if not Path(path).is_file():
            print(f"there is no notebook at {path}", file=sys.stderr)
            status = 2
            continue
        graded = grade_file(path, _limits(args))
        print(f"{path}\n  this notebook could not be graded: {graded.error}" if graded.error
              else format_results(graded.results, title=path))
    return status


if __name__ == "__main__":
    sys.exit(main())
