"""Batch grading through ``grade-all``, timed (goal: < 2 min on 2 cores): 30 ordinary submissions, and a class of
hostile and broken ones.

    .venv/bin/python benchmarks/grading.py [--jobs 2] [--test-limits] [--only ordinary|hostile] [--json out.json]

The ordinary class is 30 copies of notebook 11.2's student copy answered with its solution (what a class hands in).

The class is tests/adversarial_submissions.py (notebook 11.2's student copy, answered, then one hostile or
broken thing per file: exits, loops, sleeping, memory, segfaults, patches, damaged files…), graded 2 at a
time with the default limits (each exercise: its reference time + 5 s of computing; each cell: + 10 s;
2 GB), or with the test's smaller limits (``--test-limits``). Printed: the wall-clock time, the computing
time of all grading processes (a machine whose 2 cores are free needs about that time / 2, plus the
seconds the sleeping submission is allowed to wait) and the load average, since a shared machine
stretches the wall-clock time.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from adversarial_submissions import answered, cases, write  # noqa: E402

from course_lib.exercises.gradebook import grade_all  # noqa: E402
from course_lib.exercises.sandbox import Limits  # noqa: E402

GOAL_S = 120


def grading(jobs: int = 2, test_limits: bool = False, kind: str = "hostile") -> dict:
    limits = Limits(margin=3, cell_time_limit=6, memory_mb=1024) if test_limits else Limits()
    with tempfile.TemporaryDirectory(prefix="grading-bench-") as tmp:
        folder = Path(tmp) / "submissions"
        folder.mkdir()
        if kind == "ordinary":
            honest = write(answered())
            chosen = [f"student{i:02d}.ipynb" for i in range(30)]
            for name in chosen:
                (folder / name).write_bytes(honest)
        else:
            chosen = cases()
            for case in chosen:
                (folder / case.filename).write_bytes(case.content)
        load_before = os.getloadavg()[0]
        cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        grade_all(folder, Path(tmp) / "grades.csv", jobs=jobs, limits=limits, progress=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - cpu_before.ru_utime) + (after.ru_stime - cpu_before.ru_stime)
        load_after = os.getloadavg()[0]
    result = {"class": kind, "submissions": len(chosen), "jobs": jobs, "limits": "test" if test_limits else "default",
              "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "cpu_s_per_core": round(cpu / jobs, 1),
              "load_before": load_before, "load_after": load_after}
    what = "ordinary" if kind == "ordinary" else "hostile and broken"
    print(f"\ngrade-all of {len(chosen)} {what} submissions, {jobs} at a time, {result['limits']} limits:")
    from course_lib.exercises.isolation import choose

    # under bubblewrap the workers are reaped inside their PID namespace, so their computing is not counted here
    computing = "n/a (bubblewrap)" if choose(limits.isolation) == "bwrap" else f"{cpu:6.1f} s ({cpu / jobs:5.1f} s per core)"
    print(f"  wall {wall:6.1f} s   computing {computing}   "
          f"load average {load_before:.1f} → {load_after:.1f}   "
          f"{'goal < 120 s met' if wall < GOAL_S else 'wall above the 120 s goal (see the load)'}")
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--test-limits", action="store_true", help="the smaller limits of tests/test_grading_adversarial.py")
    ap.add_argument("--only", choices=["ordinary", "hostile"], help="one of the two classes (default: both)")
    ap.add_argument("--json", help="also write the result to this file")
    args = ap.parse_args(argv)
    results = {kind: grading(args.jobs, args.test_limits, kind) for kind in ("ordinary", "hostile")
               if args.only in (None, kind)}
    if args.json:
        Path(args.json).write_text(json.dumps({"grading": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
