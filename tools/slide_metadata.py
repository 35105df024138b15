"""Slide metadata for every notebook source, from one deterministic rule, so that jupyterlab-deck presents
the notebooks as a lecture on the live notebook (the deck button in the notebook toolbar, or "Start Deck"). The
metadata is the standard ``slideshow.slide_type`` that RISE and nbconvert read too.

    python tools/slide_metadata.py            # rewrite notebooks/*.py where the metadata differs from the rule
    python tools/slide_metadata.py --check    # exit 1 if a source differs from the rule (what the test runs)

then ``python tools/make_notebooks.py`` regenerates the .ipynb files.

The rule, cell by cell (``slide_types``):

* a markdown cell that opens with a ``#`` or ``##`` heading (the title, a numbered section) starts a **slide**;
* one that opens with a ``###`` (or deeper) heading (an exercise, a prediction, a sub-topic) starts a **subslide**;
* a markdown cell without a heading that follows a code cell (the comment on a result just shown) is a
  **fragment**: the lecturer shows the result, then its reading;
* a code cell that makes one of the course's widgets (``course_lib.widgets``) starts a **subslide**: each
  widget gets a slide of its own, with the cell that makes it, so that it fits the screen;
* a code cell is **skip**ped only if it is a long helper that shows nothing (only ``def``/``class``/imports,
  at least ``HELPER_LINES`` lines) and carries no ``exercise`` or ``setup`` tag; skipped cells still run with
  Run All (they are hidden in the slides only). Today no cell of the notebooks matches: nothing is skipped;
* every other cell continues the current slide (no metadata, RISE's "-");
* **Two subslides in a row** (a subslide of one cell: a widget with an exercise's heading right after it, or a
  heading right before its widget): the first is a **slide**. jupyterlab-deck 0.2.0 links a subslide that
  follows no other cell of its subslide to the last cell of the *slide* before, so Space jumped from there past
  the first subslide and everything between (tools/deck_navigation.py ports deck's navigation; the tests check
  that Space from the first slide shows every cell of every notebook).

Only the cell header lines (``# %% ...``) and the notebook header (``rise`` settings: scrolling slides, no
transition; ``notebook_metadata_filter: rise`` so that saving from JupyterLab keeps them) are rewritten; cell
sources are never touched, and running the tool twice changes nothing.
"""
from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"

HELPER_LINES = 12
NEVER_SKIPPED = {"exercise", "setup"}
RISE = {"scroll": True, "transition": "none"}  # RISE's notebook settings, kept for those who present with RISE
HEADER = re.compile(r"^# %%(?P<rest>.*)$")
HEADING = re.compile(r"^(#+)\s")
WIDGETS = ("AlignmentViewer", "QASpanViewer", "AttentionExplorer", "MaskSampler", "FillMaskExplorer", "LanguageSampler",
           "SenseClusters", "NearestSenseExplorer", "AnisotropyExplorer", "SubwordExplorer", "SpanMaskSampler",
           "SpanEnumerator", "FineTuningPanel")  # course_lib.widgets
WIDGET_CALL = re.compile(r"^(?!\s*(?:from|import)\b).*\b(?:" + "|".join(WIDGETS) + r")\(", re.M)


def sources(folder: Path = NOTEBOOKS) -> list[Path]:
    return sorted(p for p in folder.glob("*.py") if not p.name.startswith("_"))


def _heading_level(source: str) -> int:
    first = next((line for line in source.splitlines() if line.strip()), "")
    m = HEADING.match(first)
    return len(m.group(1)) if m else 0


def _is_helper(source: str) -> bool:
    try:
        body = ast.parse(source).body
    except SyntaxError:  # magics and the like: shown
        return False
    return (len(source.strip().splitlines()) >= HELPER_LINES and bool(body)
            and all(isinstance(s, (ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)) for s in body))


def slide_types(cells) -> list[str | None]:
    """The slide type of every cell (None: continues the slide), from the rule in the module docstring."""
    types: list[str | None] = []
    previous = None
    for cell in cells:
        kind = None
        if cell.cell_type == "markdown":
            level = _heading_level(cell.source)
            if level in (1, 2):
                kind = "slide"
            elif level >= 3:
                kind = "subslide"
            elif previous == "code":
                kind = "fragment"
        elif cell.cell_type == "code":
            tags = set(cell.metadata.get("tags", []))
            if WIDGET_CALL.search(cell.source):
                kind = "subslide"
            elif not tags & NEVER_SKIPPED and _is_helper(cell.source):
                kind = "skip"
        types.append(kind)
        previous = cell.cell_type
    if types and types[0] is None:
        types[0] = "slide"  # a deck opens with a slide
    shown = [i for i, kind in enumerate(types) if kind != "skip"]
    for i, j in zip(shown, shown[1:]):
        if types[i] == "subslide" and types[j] == "subslide":
            types[i] = "slide"  # one cell, then a subslide: see "Two subslides in a row" above
    return types


SLIDESHOW = re.compile(r'\s*slideshow=\{"slide_type": "[a-z-]+"\}')


def _header_line(line: str, kind: str | None) -> str:
    """A '# %% ...' line with its slideshow metadata set to ``kind`` (removed for None); the rest kept as is."""
    line = SLIDESHOW.sub("", line).rstrip()
    return line if kind is None else f'{line} slideshow={json.dumps({"slide_type": kind})}'


def _with_rise_header(lines: list[str]) -> list[str]:
    """The notebook header (between the first two '# ---' lines) with the rise settings and their filter."""
    if not lines or lines[0] != "# ---":
        raise ValueError("no jupytext header at the top of the file")
    end = lines.index("# ---", 1)
    head = [line for line in lines[1:end]]
    if not any("notebook_metadata_filter:" in line for line in head):
        i = next(k for k, line in enumerate(head) if line.startswith("#     formats:"))
        head.insert(i + 1, "#     notebook_metadata_filter: rise")
    if "#   rise:" not in head:
        head += ["#   rise:"] + [f"#     {k}: {json.dumps(v) if isinstance(v, bool) else v}" for k, v in RISE.items()]
    return [lines[0], *head, *lines[end:]]


def apply(text: str) -> str:
    """``text`` (a py:percent notebook) with the rule's slide metadata; idempotent."""
    nb = jupytext.reads(text, fmt="py:percent")
    lines = _with_rise_header(text.splitlines())
    headers = [i for i, line in enumerate(lines) if HEADER.match(line)]
    if len(headers) != len(nb.cells):
        raise ValueError(f"{len(headers)} '# %%' lines but jupytext reads {len(nb.cells)} cells")
    for i, kind in zip(headers, slide_types(nb.cells)):
        lines[i] = _header_line(lines[i], kind)
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only report sources whose metadata differs from the rule")
    ap.add_argument("files", nargs="*", type=Path, help="notebook sources (default: notebooks/*.py)")
    args = ap.parse_args(argv)
    bad = 0
    for py in args.files or sources():
        text = py.read_text()
        new = apply(text)
        if new == text:
            continue
        if args.check:
            print(f"slide metadata differs from the rule: {py} (run `python tools/slide_metadata.py`)")
            bad += 1
        else:
            py.write_text(new)
            counts = {}
            for kind in slide_types(jupytext.reads(new, fmt="py:percent").cells):
                counts[kind or "-"] = counts.get(kind or "-", 0) + 1
            print(f"{py.name}: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
