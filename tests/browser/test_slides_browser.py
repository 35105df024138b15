"""Slides (issue 17, item 5): a notebook presented with jupyterlab-rise, advanced slide by slide in headless
Chromium, and a widget moved inside the slides.

The deck is notebook 11.1 as a lecturer has it: every markdown cell with its slide metadata
(tools/slide_metadata.py) and the code cells its attention explorer needs (tests/notebook_runs.widget_slice),
run once in JupyterLab (Run All, as before a class) and saved; then ``/rise/<notebook>`` (what View → "Open as
Reveal Slideshow" opens) shows it as slides on the same kernel.

Known upstream limit, checked rather than assumed: jupyterlab-rise 0.43.1's slide page cannot load the
ipywidgets 8 manager ("Shared module @jupyterlab/console doesn't exist in shared scope default",
jupyterlab-contrib/rise#119 and #126), so widgets show as their text repr in the slides. When that exact error is
seen, the widget step is reported as xfail; on any other outcome the widget must render and respond.
"""
from __future__ import annotations

import json

import jupytext
import nbformat
import pytest

from . import jupyterlab as jl
from .conftest import ROOT, SCREENSHOTS, widget_slice

pytestmark = pytest.mark.slow

SOURCE = ROOT / "notebooks" / "11_1_bidirectional_encoders.py"
DECK = "11_1_bidirectional_encoders.slides.ipynb"
WIDGETS_MISSING = "Shared module @jupyterlab/console doesn't exist in shared scope"


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


def _present(page) -> dict:
    return page.evaluate("""() => {
        const s = document.querySelector('.reveal .slides section.present section.present')
               || document.querySelector('.reveal .slides section.present');
        return {hash: location.hash, id: s ? s.id : null,
                visible_fragments: s ? s.querySelectorAll('.fragment.visible').length : 0};
    }""")


def _cell_visible(page, index: int) -> bool:
    return page.evaluate("""(i) => {
        const c = document.querySelectorAll('.jp-Cell')[i];
        return !!c && !!c.closest('section.present')
            && c.checkVisibility({opacityProperty: true, visibilityProperty: true});
    }""", index)


@pytest.fixture(scope="module")
def deck(lab, browser):
    """(rise page, deck notebook, console errors): the deck run in JupyterLab, saved, opened as slides."""
    nb = slides_notebook(SOURCE)
    nbformat.write(nb, lab.root_dir / DECK)
    page = jl.open_notebook(browser, lab, DECK)
    result = jl.run_all_cells(page, DECK)
    assert not result.problems(), "\n".join(result.problems())
    page.evaluate("async () => { await window.jupyterapp.commands.execute('docmanager:save'); }")
    rise = page.context.new_page()
    errors: list[str] = []
    rise.on("console", lambda m: m.type == "error" and errors.append(m.text))
    rise.on("pageerror", lambda e: errors.append(str(e)))
    rise.goto(lab.url(f"rise/{DECK}"), wait_until="domcontentloaded")
    rise.wait_for_selector(".reveal .slides section.present", timeout=90_000)
    rise.wait_for_function("() => document.querySelectorAll('.reveal .jp-Cell').length > 0", timeout=60_000)
    yield rise, nb, errors
    page.context.close()


def test_the_deck_has_the_notebooks_slides_and_advances(deck):
    page, nb, errors = deck
    kinds = [c.metadata.get("slideshow", {}).get("slide_type") for c in nb.cells]
    # one reveal.js section per slide and per subslide (a slide without subslides is one section too)
    sections = page.evaluate("() => document.querySelectorAll('.reveal .slides section section').length")
    assert sections == kinds.count("slide") + kinds.count("subslide"), (sections, kinds.count("slide"),
                                                                          kinds.count("subslide"))
    assert page.evaluate("() => document.querySelectorAll('.reveal .fragment').length") >= kinds.count("fragment")

    page.locator(".reveal").first.click(position={"x": 40, "y": 40})  # focus the slides (command mode)
    page.keyboard.press("Home")
    page.wait_for_function("() => location.hash === '#/slide-0-0' || location.hash === '' || location.hash === '#/'")
    first = _present(page)
    assert "Bidirectional transformer encoders" in page.locator("section.present").first.inner_text()
    seen = [first["hash"]]
    for _ in range(6):  # Space: the next fragment, else the next (sub)slide
        page.keyboard.press("Space")
        page.wait_for_function("(h) => location.hash !== h", arg=seen[-1], timeout=10_000)
        seen.append(_present(page)["hash"])
    assert len(set(seen)) == len(seen), f"Space did not advance every time: {seen}"
    assert any(h.count("/") >= 2 for h in seen), f"no fragment was stepped through: {seen}"  # #/slide-1-0/0
    jl.screenshot_widget(page, ".reveal", SCREENSHOTS / "slides_11_1_advanced.png")
    assert not [e for e in errors if "Traceback" in e]


def test_a_widget_moves_inside_the_slides(deck):
    page, nb, errors = deck
    index = next(i for i, c in enumerate(nb.cells) if "AttentionExplorer(" in c.source)
    page.locator(".reveal").first.click(position={"x": 40, "y": 40})
    page.keyboard.press("Home")
    for _ in range(300):  # advance as a lecturer does until the explorer's cell is on screen
        if _cell_visible(page, index):
            break
        page.keyboard.press("Space")
        page.wait_for_timeout(40)
    assert _cell_visible(page, index), "the explorer's slide was never reached"
    jl.screenshot_widget(page, ".reveal", SCREENSHOTS / "slides_11_1_explorer.png")
    if page.locator(jl.EXPLORER).count() == 0 and any(WIDGETS_MISSING in e for e in errors):
        pytest.xfail("jupyterlab-rise 0.43.1 cannot load the ipywidgets 8 manager in its slide page "
                     f"({WIDGETS_MISSING}: jupyterlab-contrib/rise#119, #126): the explorer shows as text")
    explorer = page.locator(jl.EXPLORER).first
    explorer.wait_for(state="visible", timeout=60_000)
    jl.wait_heatmap_shown(page)
    src0 = jl.heatmap_src(page)
    layer = jl.choose_other(page, jl.LAYER, prefer=["4", "1"])
    jl.wait_heatmap_changed(page, src0)
    assert jl.dropdown_options(page, jl.LAYER)[1] == layer
    jl.screenshot_widget(page, ".reveal", SCREENSHOTS / f"slides_11_1_explorer_layer{layer}.png")
    print(f"\nslides: explorer moved to layer {layer} inside the slides; console errors: {json.dumps(errors[:3])}")
