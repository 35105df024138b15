"""Grading a whole notebook without a kernel: run its setup and exercise cells, then every check.

Only code cells tagged ``setup`` or ``exercise`` run (in order, each in its own
try/except, in one fresh namespace, with ``check`` replaced by a no-op); the
exercise functions must therefore need nothing that other cells define.
"""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from .core import EXERCISES, ICONS, WRONG, Result, run_exercise

GRADED_TAGS = {"setup", "exercise"}
CHECK_CALL = re.compile(r"""\bcheck\(\s*["']([^"']+)["']\s*\)""")


def _no_check(name, *args, **kwargs):
    """Stands in for ``check`` while grading: the grader runs every check itself afterwards."""


def _python_only(source: str) -> str:
    """Comment out IPython magics and shell lines (%matplotlib, !pip), which plain exec cannot run."""
    return "\n".join("# " + line if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def _describe_error(e: BaseException) -> str:
    if isinstance(e, SyntaxError):
        return f"SyntaxError: {e.msg} (line {e.lineno})"
    detail = str(e).strip().splitlines()[0][:200] if str(e).strip() else ""
    return type(e).__name__ + (f": {detail}" if detail else "")


def _defines(source: str, name: str) -> bool:
    return re.search(rf"^\s*(def\s+{re.escape(name)}\s*\(|{re.escape(name)}\s*=)", source, re.MULTILINE) is not None


def grade_notebook(path: str | Path) -> list[Result]:
    """Results of every registered exercise found in the notebook at ``path`` (.ipynb or py:percent .py).

    An exercise belongs to the notebook if the notebook defines one of its
    functions or calls ``check("<name>")``; results come in the notebook's order.
    Nothing the cells print is shown.
    """
    import jupytext

    path = Path(path).expanduser().resolve()
    if not path.is_file():
        raise FileNotFoundError(f"there is no notebook at {path}")
    nb = jupytext.read(path)
    namespace: dict = {"__name__": "__main__"}
    failed: list[tuple[str, str]] = []  # (cell source, what it raised)
    quiet = io.StringIO()
    with contextlib.chdir(path.parent), contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or not GRADED_TAGS & set(cell.metadata.get("tags", [])):
                continue
            namespace["check"] = _no_check
            try:
                exec(compile(_python_only(cell.source), f"<{path.name}, cell {i}>", "exec"), namespace)
            except (Exception, SystemExit) as e:  # one broken cell must not hide the other exercises
                failed.append((cell.source, _describe_error(e)))
        namespace["check"] = _no_check

        source = "\n".join(c.source for c in nb.cells)
        called = set(CHECK_CALL.findall(source))
        results = []
        for name, ex in EXERCISES.items():
            if name not in called and not any(n in namespace or _defines(source, n) for n in ex.needs):
                continue
            broken = [(n, err) for n in ex.needs if n not in namespace for src, err in failed if _defines(src, n)]
            if broken:
                n, err = broken[0]
                results.append(Result(name, WRONG, f"the cell that defines `{n}` raised {err}, so `{n}` was never defined"))
            else:
                results.append(run_exercise(name, namespace))
    return sorted(results, key=lambda r: _first_mention(source, EXERCISES[r.name]))


def _first_mention(source: str, ex) -> int:
    """Where the notebook first calls check("<name>") or defines one of its functions: results follow the notebook."""
    spots = [m.start() for m in CHECK_CALL.finditer(source) if m.group(1) == ex.name]
    spots += [m.start() for n in ex.needs for m in re.finditer(rf"^\s*def\s+{re.escape(n)}\s*\(", source, re.MULTILINE)]
    return min(spots, default=len(source))


def format_results(results: list[Result], title: str | None = None) -> str:
    """A table, one exercise a line, then how many are correct."""
    lines = [title] if title else []
    if not results:
        return "\n".join(lines + ["  no graded exercises in this notebook"])
    width = max(len(r.name) for r in results)
    for r in results:
        lines.append(f"  {ICONS[r.status]} {r.name:<{width}}  {r.status:<13}  {r.message}".rstrip())
    lines.append(f"{sum(r.correct for r in results)} of {len(results)} exercises correct")
    return "\n".join(lines)
