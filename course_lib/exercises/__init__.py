"""Graded exercises of the notebooks.

In a notebook, after writing an exercise's function::

    from course_lib.exercises import check
    check("attention")          # prints ✅ / ❌ hint / ⏳ and returns a Result

A whole notebook, without a kernel, in a separate process with time and memory limits (feedback only,
always exits 0); a folder of submissions into a CSV gradebook and one feedback file per student::

    python -m course_lib.exercises grade notebooks/student/11_1_bidirectional_encoders.ipynb
    python -m course_lib.exercises grade-all submissions/ --out grades.csv

Each notebook's exercises live in their own module (``ch11_1``, ``ch11_4a``, …), registered with
the :func:`exercise` decorator (functions) or :func:`question` (prediction questions). Every module
``ch<chapter>_<section>.py`` of this package is imported here, so a new notebook's module needs no edit of this file.
"""
import importlib
import pkgutil
import re

from .core import (CORRECT, EXERCISES, NOT_ATTEMPTED, WRONG, Exercise, NotAttempted, Result, Wrong, check, exercise,
                   get_exercise, question, run_exercise)

CHAPTER_MODULES = sorted(m.name for m in pkgutil.iter_modules(__path__) if re.fullmatch(r"ch\d+_\w+", m.name))
for _name in CHAPTER_MODULES:
    importlib.import_module(f"{__name__}.{_name}")  # registers that notebook's exercises
from .grading import Grade, SubmissionError, format_results
from .gradebook import grade_notebook

__all__ = [
    "Result", "Exercise", "EXERCISES", "exercise", "question", "CHAPTER_MODULES", "get_exercise", "run_exercise", "check", "grade_notebook",
    "format_results", "Wrong", "NotAttempted", "CORRECT", "WRONG", "NOT_ATTEMPTED", "Grade", "SubmissionError",
]
