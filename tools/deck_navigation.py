"""Where jupyterlab-deck 0.2.0's keys go, computed from the slide metadata alone, so that a test can say, for every
notebook and in milliseconds, whether pressing Space from the first slide shows every cell.

This is a port of the two functions of deck's notebook presenter (``lib/notebook/presenter.js`` in the
``@deathbeds/jupyterlab-deck`` lab extension) that decide navigation: ``_getExtents``, which gives every cell an
*extent* (the cells on screen with it, and the cell each of the four directions goes to), and ``go``, which moves
the active cell. Space is bound to direction ``down`` with ``forward`` as the alternate (``lib/tokens.js``), so
from a subslide Space goes down into the next subslide when there is one; the port reproduces deck's quirk that
made 11.1's explorer unreachable (tests/browser/test_slides_browser.py checks the port against the real deck).

    python tools/deck_navigation.py            # each notebook: cells Space never shows (exit 1 if any)
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Extent:
    index: int
    slide_type: str | None
    on_screen: list[int] = field(default_factory=list)
    forward: int | None = None
    back: int | None = None
    up: int | None = None
    down: int | None = None


def slide_types(nb) -> list[str | None]:
    return [c.metadata.get("slideshow", {}).get("slide_type") for c in nb.cells]


def extents(types: list[str | None]) -> dict[int, Extent]:
    """deck's ``_getExtents``, statement by statement (the ``visible`` and ``notes`` lists, which do not move
    anything, are left out)."""
    out: dict[int, Extent] = {}
    slides: list[Extent] = []
    subslides: list[Extent] = []
    fragments: list[Extent] = []
    nulls: list[Extent] = []
    on_screen: list[Extent] = []

    def last_on_screen_of(i: int) -> Extent | None:
        e = out.get(i)
        return out.get(e.on_screen[0]) if e and e.on_screen else None

    for index, kind in enumerate(types):
        if index == 0 and kind in (None, "subslide"):
            kind = "slide"
        ext = Extent(index, kind)
        s0 = slides[0] if slides else None
        ss0 = subslides[0] if subslides else None
        f0 = fragments[0] if fragments else None
        n0 = nulls[0] if nulls else None
        a0 = n0 or f0 or ss0 or s0
        if kind == "skip":
            continue
        if kind is None:
            prev = n0 or f0 or ss0 or s0
            if prev is not None:
                prev.forward = prev.down = index
                ext.back = ext.up = prev.index
            for n in on_screen:
                n.on_screen.insert(0, index)
            on_screen.insert(0, ext)
            nulls.insert(0, ext)
            ext.on_screen[:0] = a0.on_screen if a0 else []
        elif kind == "slide":
            if subslides and s0:
                ext.back = s0.index
                for s in [*subslides, s0]:
                    last = last_on_screen_of(s.index)
                    if last:
                        last.forward = index
            elif n0 or f0:
                (n0 or f0).forward = index
                ext.back = (n0 or f0).index
            elif s0:
                last = last_on_screen_of(s0.index)
                if last:
                    last.forward = index
                    ext.back = last.index
            subslides, nulls, fragments = [], [], []
            on_screen = [ext]
            slides.insert(0, ext)
            ext.on_screen.insert(0, index)
        elif kind == "subslide":
            if n0 or f0:
                (n0 or f0).down = index
                ext.up = (n0 or f0).index
            elif s0:
                last = last_on_screen_of(s0.index)
                if last:
                    last.down = index
                    ext.up = last.index
                ext.back = s0.back
            fragments, nulls = [], []
            on_screen = [ext]
            subslides.insert(0, ext)
            ext.on_screen.insert(0, index)
        elif kind == "fragment":
            for n in on_screen:
                n.on_screen.insert(0, index)
            on_screen.insert(0, ext)
            prev = n0 or f0 or ss0 or s0
            if prev is not None:
                prev.down = prev.forward = index
                ext.up = ext.back = prev.index
            nulls = []
            on_screen.insert(0, ext)
            ext.on_screen[:0] = a0.on_screen if a0 else []
            fragments.insert(0, ext)
        else:  # "notes" and anything else: no extent moves
            continue
        out[index] = ext
    return out


def go(ext: dict[int, Extent], active: int, direction: str, alternate: str | None = None) -> int | None:
    """deck's ``go``: the cell that becomes active, or None where deck says 'Cannot go'."""
    while active not in ext and active > 0:
        active -= 1
    e = ext.get(active)
    if e is None:
        return None
    target = getattr(e, direction)
    if target is None and alternate:
        target = getattr(e, alternate)
    return target


def space_walk(types: list[str | None], limit: int = 10_000) -> list[int]:
    """The active cells, from the first, as Space (down, else forward) is pressed until deck cannot go on."""
    ext = extents(types)
    path = [0]
    while len(path) < limit:
        nxt = go(ext, path[-1], "down", "forward")
        if nxt is None or nxt in path:
            break
        path.append(nxt)
    return path


def never_shown(types: list[str | None]) -> list[int]:
    """The cells (not skipped) that are on screen at no step of the Space walk from the first slide."""
    ext = extents(types)
    seen = {i for a in space_walk(types) for i in ext[a].on_screen}
    return [i for i, t in enumerate(types) if t != "skip" and i not in seen]


def main() -> int:
    bad = 0
    for py in sorted((ROOT / "notebooks").glob("*.py")):
        nb = jupytext.read(py)
        missed = never_shown(slide_types(nb))
        if missed:
            bad += 1
            print(f"{py.name}: Space never shows cells {missed}")
        else:
            print(f"{py.name}: Space shows every cell ({len(space_walk(slide_types(nb)))} presses)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
