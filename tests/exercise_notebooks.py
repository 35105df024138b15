"""Helpers of the exercise tests: which notebook holds an exercise, and the namespace of its graded cells.

The solution of each exercise lives only in its notebook (notebooks/<stem>.py, between ``### BEGIN SOLUTION``
and ``### END SOLUTION``); tests that need a correct answer take it from there with :func:`graded_namespace`.
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import io
import pkgutil
import re
from pathlib import Path

import jupytext

import exercise_cases
from conftest import ROOT

NOTEBOOKS = ROOT / "notebooks"
CHECK_CALL = re.compile(r"""\bcheck\(\s*["']([^"']+)["']\s*\)""")


def chapter_of(ex) -> str:
    """``"ch11_2"`` for an exercise registered by ``course_lib.exercises.ch11_2``."""
    return ex.module.rpartition(".")[2]


def notebooks_of_chapter(chapter: str) -> list[Path]:
    """The notebook sources of chapter module ``ch11_2``: notebooks/11_2_*.py (or notebooks/11_2.py)."""
    stem = chapter.removeprefix("ch")
    return sorted({*NOTEBOOKS.glob(f"{stem}_*.py"), *NOTEBOOKS.glob(f"{stem}.py")})


@functools.lru_cache(maxsize=None)
def checks_called(notebook: Path) -> tuple[str, ...]:
    """The exercise names of the ``check("…")`` calls in the code cells of ``notebook``, in order."""
    cells = jupytext.read(notebook).cells
    return tuple(name for c in cells if c.cell_type == "code" for name in CHECK_CALL.findall(c.source))


@functools.lru_cache(maxsize=None)
def _namespace(notebook: Path, tags: frozenset[str]) -> dict:
    namespace: dict = {"__name__": "__main__"}
    quiet = io.StringIO()
    with contextlib.chdir(notebook.parent), contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
        for i, cell in enumerate(jupytext.read(notebook).cells):
            if cell.cell_type == "code" and tags & set(cell.metadata.get("tags", [])):
                exec(compile(cell.source, f"<{notebook.name}, cell {i}>", "exec"), namespace)
    return namespace


def graded_namespace(notebook: Path, tags=("setup", "exercise")) -> dict:
    """A fresh copy of the globals after running the cells of ``notebook`` tagged with one of ``tags``
    (by default what grading runs: the imports and the solved exercises). Each notebook runs once per session."""
    return dict(_namespace(Path(notebook).resolve(), frozenset(tags)))


def cell_source(notebook: Path, start: str) -> str:
    """The source of the one code cell of ``notebook`` that starts with ``start``."""
    found = [c.source for c in jupytext.read(notebook).cells if c.cell_type == "code" and c.source.startswith(start)]
    assert len(found) == 1, f"{notebook.name}: {len(found)} code cells start with {start!r}"
    return found[0]


def case_modules() -> dict[str, object]:
    """tests/exercise_cases/ch*.py by chapter name (``"ch11_2"``)."""
    names = sorted(m.name for m in pkgutil.iter_modules(exercise_cases.__path__) if m.name.startswith("ch"))
    return {name: importlib.import_module(f"exercise_cases.{name}") for name in names}
