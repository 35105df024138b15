"""Batch grading: a class of hostile and broken submissions through ``grade-all``, timed (goal: < 2 min on 2 cores).

    .venv/bin/python benchmarks/grading.py [--jobs 2] [--test-limits] [--json out.json]

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

from adversarial_submissions import cases  # noqa: E402

from course_lib.exercises.gradebook import grade_all  # noqa: E402
from course_lib.exercises.sandbox import Limits  # noqa: E402

GOAL_S = 120


def grading(jobs: int = 2, test_limits: bool = False) -> dict:
    limits = Limits(margin=3, cell_time_limit=6, memory_mb=1024) if test_limits else Limits()
    with tempfile.TemporaryDirectory(prefix="grading-bench-") as tmp:
        folder = Path(tmp) / "submissions"
        folder.mkdir()
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
    result = {"submissions": len(chosen), "jobs": jobs, "limits": "test" if test_limits else "default",
              "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "cpu_s_per_core": round(cpu / jobs, 1),
              "load_before": load_before, "load_after": load_after}
    print(f"\ngrade-all of {len(chosen)} hostile and broken submissions, {jobs} at a time, {result['limits']} limits:")
    print(f"  wall {wall:6.1f} s   computing {cpu:6.1f} s ({cpu / jobs:5.1f} s per core)   "
          f"load average {load_before:.1f} → {load_after:.1f}   "
          f"{'goal < 120 s met' if wall < GOAL_S else 'wall above the 120 s goal (see the load)'}")
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--test-limits", action="store_true", help="the smaller limits of tests/test_grading_adversarial.py")
    ap.add_argument("--json", help="also write the result to this file")
    args = ap.parse_args(argv)
    result = grading(args.jobs, args.test_limits)
    if args.json:
        Path(args.json).write_text(json.dumps({"grading": result}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
