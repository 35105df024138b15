"""Generate the students' notebooks from the solution sources (notebooks/*.py).

    python tools/make_student.py                      # every notebook with exercises -> notebooks/student/*.ipynb
    python tools/make_student.py --out DIR NB.py ...  # chosen notebooks, another folder
    python tools/make_student.py --force              # replace edited copies (the old one is kept as .bak-…)

Each ``### BEGIN SOLUTION`` … ``### END SOLUTION`` block (markers included) becomes,
at the same indentation::

    raise NotImplementedError("Exercise: replace this line with your code")

Everything else (markdown, setup, ``check(...)`` calls, cell tags) is kept. The
source is never modified. A student's copy whose code differs from what would be
generated now is never overwritten without --force; a copy that was only run
(same code, new outputs) is up to date and left as it is.
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
STUDENT = NOTEBOOKS / "student"

BEGIN = re.compile(r"^(\s*)### BEGIN SOLUTION\s*$")
END = re.compile(r"^\s*### END SOLUTION\s*$")
STUB = 'raise NotImplementedError("Exercise: replace this line with your code")'
ASSIGNMENT = re.compile(r"^\s*([A-Za-z_]\w*)\s*=(?!=)")
PREDICTION_STUB = "{name} = ...  # your prediction: replace ... with one of the choices"


class SolutionMarkerError(ValueError):
    """A BEGIN SOLUTION without its END (or the reverse): the file and line say where."""


def has_solutions(text: str) -> bool:
    return any(BEGIN.match(line) for line in text.splitlines())


def sources(folder: Path = NOTEBOOKS) -> list[Path]:
    """The notebooks of ``folder`` that contain exercises (a BEGIN SOLUTION marker)."""
    return sorted(p for p in folder.glob("*.py") if not p.name.startswith("_") and has_solutions(p.read_text()))


def strip_solutions(text: str, filename: str = "<source>") -> str:
    """Replace every solution block by the NotImplementedError stub, at the block's indentation."""
    out, start, block = [], None, []  # start: (line number, indentation) of the open block; block: its lines
    for n, line in enumerate(text.splitlines(keepends=True), start=1):
        if (m := BEGIN.match(line)) is not None:
            if start is not None:
                raise SolutionMarkerError(f"{filename}:{n}: a new '### BEGIN SOLUTION' before the "
                                          f"'### END SOLUTION' of the block opened on line {start[0]}")
            start = (n, m.group(1))
        elif END.match(line):
            if start is None:
                raise SolutionMarkerError(f"{filename}:{n}: '### END SOLUTION' without a '### BEGIN SOLUTION' before it")
            out.extend(_stub(block, start[1]))
            start, block = None, []
        elif start is None:
            out.append(line)
        else:
            block.append(line)
    if start is not None:
        raise SolutionMarkerError(f"{filename}:{start[0]}: '### BEGIN SOLUTION' has no matching '### END SOLUTION'")
    return "".join(out)


def _stub(block: list[str], indent: str) -> list[str]:
    """The stub of one solution block: a prediction (a top-level block of only `name = value` lines) keeps its
    names, set to `...`; anything else becomes the NotImplementedError line."""
    code = [line for line in block if line.strip() and not line.strip().startswith("#")]
    names = [m.group(1) for line in code if (m := ASSIGNMENT.match(line)) and not line[:1].isspace()]
    if indent == "" and code and len(names) == len(code):
        return [f"{indent}{PREDICTION_STUB.format(name=n)}\n" for n in dict.fromkeys(names)]
    return [f"{indent}{STUB}\n"]


def student_notebook(py: Path):
    """The student's version of the solution source ``py``, as a notebook object."""
    nb = jupytext.reads(strip_solutions(py.read_text(), str(py)), fmt="py:percent")
    # a standalone .ipynb: no jupytext pairing, so saving it in JupyterLab writes no .py next to it
    nb.metadata["jupytext"] = {"formats": "ipynb"}
    for i, cell in enumerate(nb.cells):
        cell.id = f"cell-{i}"  # stable ids: the same source always gives the same file
    return nb


def _inputs(nb) -> list[tuple[str, str]]:
    return [(c.cell_type, c.source.strip()) for c in nb.cells]


def _existing_inputs(path: Path) -> list[tuple[str, str]] | None:
    try:
        return _inputs(jupytext.read(path))
    except Exception:  # noqa: BLE001 - an unreadable copy counts as edited: it is kept, never overwritten
        return None


def write_student(py: Path, out_dir: Path = STUDENT, force: bool = False) -> str:
    """Write ``out_dir/<stem>.ipynb``; returns what happened, in one line."""
    target = out_dir / f"{py.stem}.ipynb"
    nb = student_notebook(py)
    shown = _shown(target)
    if target.exists():
        if _existing_inputs(target) == _inputs(nb):
            return f"{shown}: up to date"
        if not force:
            return f"kept your edited copy {shown}; use --force to replace it"
        backup = keep_copy(target)
        jupytext.write(nb, target, fmt="ipynb")
        return f"{shown}: replaced (your old copy is {_shown(backup)})"
    out_dir.mkdir(parents=True, exist_ok=True)
    jupytext.write(nb, target, fmt="ipynb")
    return f"{shown}: written"


def keep_copy(path: Path) -> Path:
    """Rename ``path`` to ``<name>.bak-<time>`` (``-1``, ``-2``… for two within one second); the new name."""
    stamp, n = time.strftime("%Y%m%d-%H%M%S"), 0
    kept = path.with_name(f"{path.name}.bak-{stamp}")
    while kept.exists():
        n += 1
        kept = path.with_name(f"{path.name}.bak-{stamp}-{n}")
    path.rename(kept)
    return kept


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=STUDENT, help="folder for the students' notebooks (default notebooks/student)")
    ap.add_argument("--force", action="store_true", help="replace edited copies, keeping each old one as <name>.ipynb.bak-<time>")
    ap.add_argument("notebooks", nargs="*", type=Path, metavar="NOTEBOOK.py",
                    help="solution sources (default: every notebooks/*.py with a '### BEGIN SOLUTION')")
    args = ap.parse_args(argv)
    chosen = args.notebooks or sources()
    if not chosen:
        print("no notebook with '### BEGIN SOLUTION' found: nothing to do")
        return 0
    status = 0
    for py in chosen:
        if py.suffix != ".py" or not py.is_file():
            print(f"error: {py} is not a py:percent notebook source (notebooks/*.py)", file=sys.stderr)
            status = 1
            continue
        try:
            print(write_student(py, args.out, force=args.force))
        except SolutionMarkerError as e:
            print(f"error: {e}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
