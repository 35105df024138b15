"""Slides with live widgets (issue 24, item 1): a notebook presented with jupyterlab-deck in headless Chromium at
1280x720, advanced from the keyboard, and a widget driven on its slide.

The deck is notebook 11.1 as a lecturer has it: every markdown cell with its slide metadata
(tools/slide_metadata.py) and the code cells its attention explorer needs (tests/notebook_runs.widget_slice),
run once in JupyterLab (Run All, as before a class). jupyterlab-deck then presents *the notebook panel itself*
(``deck:start``, the toolbar's deck button or "Start Deck" in the command palette), so the widgets on a slide are
the notebook's own live widgets, on its kernel. (jupyterlab-rise 0.43.1, used before, could not load the
ipywidgets 8 manager in its slide page: jupyterlab-contrib/rise#119.)

Keyboard: deck's → / ← / Space act when the focus is in its on-screen navigation (one click on an arrow); from
a cell, ↓ / ↑ step cell by cell (deathbeds/jupyterlab-deck#63). The test uses both.
"""
from __future__ import annotations

import sys

import jupytext
import nbformat
import pytest

from . import jupyterlab as jl
from .conftest import ROOT, SCREENSHOTS, widget_slice

sys.path.insert(0, str(ROOT / "tools"))
import deck_navigation  # noqa: E402

pytestmark = pytest.mark.slow

SOURCE = ROOT / "notebooks" / "11_1_bidirectional_encoders.py"
DECK = "11_1_bidirectional_encoders.slides.ipynb"
PRESENTING = jl.PRESENTING
REMOTE = ".jp-Deck-Remote"


def slides_notebook(source):
    """Every markdown cell (slide metadata kept) and the code cells the widgets need, in notebook order."""
    nb = jupytext.read(source)
    keep = set(widget_slice(nb))
    out = nbformat.v4.new_notebook()
    out.metadata = {k: v for k, v in nb.metadata.items() if k != "jupytext"}
    out.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            out.cells.append(nbformat.v4.new_markdown_cell(cell.source, metadata=dict(cell.metadata)))
        elif i in keep:
            out.cells.append(nbformat.v4.new_code_cell(cell.source, metadata=dict(cell.metadata)))
    return out


def _onscreen(page) -> list[int]:
    """Indices of the notebook's cells on the current slide."""
    return page.evaluate("""() => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell')]
        .map((c, i) => c.classList.contains('jp-deck-mod-onscreen') ? i : -1).filter(i => i >= 0)""")


def _active(page) -> int:
    return page.evaluate("() => window.jupyterapp.shell.currentWidget.content.activeCellIndex")


def _step(page, key: str | None = None) -> list[int]:
    """Press ``key`` (or click deck's forward arrow) and wait until deck has moved to another cell; returns the
    cells now on screen."""
    before = _active(page)
    if key is None:
        page.locator(f"{REMOTE} .jp-deck-mod-direction-forward").click()
    else:
        page.keyboard.press(key)
    page.wait_for_function("(b) => window.jupyterapp.shell.currentWidget.content.activeCellIndex !== b",
                           arg=before, timeout=15_000)
    page.wait_for_timeout(100)  # deck marks the cells on screen just after it moves
    return _onscreen(page)


def _shot(page, name: str) -> None:
    """What the audience sees: the whole 1280x720 window."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / name))


def _command(page, command: str) -> None:
    page.evaluate("async (c) => { await window.jupyterapp.commands.execute(c); }", command)


@pytest.fixture(scope="module")
def deck(lab, browser):
    """(page presenting the deck, deck notebook, console errors): the deck run in JupyterLab, then deck:start."""
    nb = slides_notebook(SOURCE)
    nbformat.write(nb, lab.root_dir / DECK)
    page = jl.open_notebook(browser, lab, DECK)
    errors: list[str] = []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_viewport_size({"width": 1280, "height": 720})
    result = jl.run_all_cells(page, DECK)
    assert not result.problems(), "\n".join(result.problems())
    jl.start_deck(page)
    page.wait_for_selector(REMOTE, timeout=30_000)
    yield page, nb, errors
    if page.locator(PRESENTING).count():  # leave the (saved) deck setting off for the other browser tests
        _command(page, "deck:stop")
    page.context.close()


def test_the_deck_shows_one_slide_at_a_time_and_the_keyboard_moves_through_it(deck):
    page, nb, errors = deck
    first = _onscreen(page)
    assert first and first[0] == 0 and len(first) < len(nb.cells), first  # the title slide, not the notebook
    assert "Bidirectional transformer encoders" in page.locator(".jp-Cell.jp-deck-mod-onscreen").first.inner_text()
    seen = [(_active(page), first), (None, _step(page))]  # one click on deck's arrow: the keys are deck's now
    seen[-1] = (_active(page), seen[-1][1])
    for _ in range(40):  # → : onwards, a cell at a time, until two more slides have come on screen
        on = _step(page, "ArrowRight")
        seen.append((_active(page), on))
        if len({tuple(o) for _, o in seen}) >= 4:
            break
    actives = [a for a, _ in seen]
    assert all(b > a for a, b in zip(actives, actives[1:])), f"→ did not move forward every time: {actives}"
    assert len({tuple(on) for _, on in seen}) >= 4, f"the slides on screen hardly changed: {seen}"
    assert all(len(on) < len(nb.cells) // 2 for _, on in seen), "a slide, not the whole notebook"
    _step(page, "ArrowLeft")
    assert _active(page) < actives[-1]
    _shot(page, "slides_11_1_deck.png")
    assert not [e for e in errors if "Traceback" in e or "Uncaught" in e], errors


def test_a_widget_is_live_on_its_slide(deck):
    page, nb, errors = deck
    index = next(i for i, c in enumerate(nb.cells) if "AttentionExplorer(" in c.source)
    page.evaluate("() => { window.jupyterapp.shell.currentWidget.content.activeCellIndex = 0; }")  # the title slide
    page.wait_for_function("() => window.jupyterapp.shell.currentWidget.content.activeCellIndex === 0")
    start = _active(page)
    _step(page)  # one click on deck's arrow, then the keyboard
    path = [_active(page)]
    for _ in range(300):  # Space: through every slide, subslide and fragment, as a lecturer does
        if index in _onscreen(page):
            break
        _step(page, "Space")
        path.append(_active(page))
    assert index in _onscreen(page), "the explorer's slide was never reached"
    # The port of deck's navigation that tests/test_slide_metadata.py trusts for every notebook goes the same way,
    # cell by cell. This deck keeps only the code cells the widgets need, so two subslides (an exercise's heading,
    # its code dropped, and the next heading) follow each other: the real deck jumps over the first, as the port
    # says it does, and as tools/slide_metadata.py's rule prevents in the notebooks themselves.
    types = deck_navigation.slide_types(nb)
    ext = deck_navigation.extents(types)
    expected = [deck_navigation.go(ext, start, "forward")]
    while len(expected) < len(path):
        expected.append(deck_navigation.go(ext, expected[-1], "down", "forward"))
    assert path == expected
    skipped = [i for i in range(path[-1]) if i not in (start, *path) and types[i] in ("slide", "subslide")]
    assert skipped and skipped == deck_navigation.never_shown(types)[:len(skipped)], skipped
    explorer = page.locator(f".jp-Cell.jp-deck-mod-onscreen {jl.EXPLORER}").first
    explorer.wait_for(state="visible", timeout=60_000)  # the live widget, not its text repr
    jl.wait_heatmap_shown(page)
    _shot(page, "slides_11_1_explorer.png")
    box = explorer.bounding_box()
    assert box and box["width"] <= 1280 and box["y"] >= 0, box  # on the 1280x720 slide
    heatmap = page.locator(f".jp-Cell.jp-deck-mod-onscreen {jl.HEATMAP}").first.bounding_box()
    assert box["y"] + box["height"] <= 720 and heatmap["y"] + heatmap["height"] <= 720, (box, heatmap)  # all of it
    src0 = jl.heatmap_src(page)
    layer = jl.choose_other(page, jl.LAYER, prefer=["4", "1"])
    jl.wait_heatmap_changed(page, src0)
    assert jl.dropdown_options(page, jl.LAYER)[1] == layer
    assert index in _onscreen(page), "changing the widget left its slide"
    _shot(page, f"slides_11_1_explorer_layer{layer}.png")
    page.locator(f"{REMOTE} .jp-deck-mod-stop").click()  # Exit Deck: back to the notebook, widgets as they were
    page.wait_for_function("() => document.body.dataset.jpDeckMode !== 'presenting'", timeout=15_000)
    assert jl.dropdown_options(page, jl.LAYER)[1] == layer
