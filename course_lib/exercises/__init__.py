"""Graded exercises of the notebooks.

In a notebook, after writing an exercise's function::

    from course_lib.exercises import check
    check("attention")          # prints ✅ / ❌ hint / ⏳ and returns a Result

A whole notebook, without a kernel (feedback only, always exits 0)::

    python -m course_lib.exercises grade notebooks/student/11_1_bidirectional_encoders.ipynb

Each chapter's exercises live in their own module (``ch11_1``), registered with
the :func:`exercise` decorator.
"""
from . import ch11_1  # noqa: F401 - registers the exercises of notebook 11.1
from . import ch11_2  # noqa: F401 - registers the exercises of notebook 11.2
from . import ch11_3  # noqa: F401 - registers the exercises of notebook 11.3
from .core import (CORRECT, EXERCISES, NOT_ATTEMPTED, WRONG, Exercise, NotAttempted, Result, Wrong, check, exercise,
                   get_exercise, run_exercise)
from .grading import format_results, grade_notebook

__all__ = [
    "Result", "Exercise", "EXERCISES", "exercise", "get_exercise", "run_exercise", "check", "grade_notebook",
    "format_results", "Wrong", "NotAttempted", "CORRECT", "WRONG", "NOT_ATTEMPTED",
]
