"""The lecture preset (issue 24, item 2) in Chromium: a notebook prepared by tools/lecture.py opens with its outputs
already there and with the presenting settings applied (the fonts JupyterLab computes are the preset's)."""
from __future__ import annotations

import contextlib
import sys

import nbformat
import pytest

from . import jupyterlab as jl
from .conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import lecture  # noqa: E402

pytestmark = pytest.mark.slow


KERNEL = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}


@contextlib.contextmanager
def preset_lab(root):
    """JupyterLab on ``root`` with the lecture preset's settings (22-pixel fonts), stopped afterwards."""
    plugins = {rel.removesuffix(".jupyterlab-settings"): values for rel, values in lecture.settings(22).items()}
    server = jl.JupyterLab(root, settings=plugins)
    try:
        server.start()
    except RuntimeError as err:
        pytest.fail(str(err), pytrace=False)
    try:
        yield server
    finally:
        server.cleanup()


def test_a_prepared_notebook_opens_with_its_outputs_and_large_fonts(tmp_path, browser):
    source = tmp_path / "source" / "demo.ipynb"
    source.parent.mkdir()
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('prepared ' + str(6 * 7))")],
                                            metadata=KERNEL), source)
    copy, _ = lecture.prepare(source, tmp_path / "root" / "lecture")
    with preset_lab(tmp_path / "root") as server:
        page = jl.open_notebook(browser, server, "lecture/demo.ipynb")
        page.wait_for_selector(".jp-OutputArea-output:has-text('prepared 42')", timeout=30_000)  # no cell was run
        fonts = page.evaluate("""() => { const s = getComputedStyle(document.body);
            return ['--jp-code-font-size', '--jp-content-font-size1', '--jp-ui-font-size1']
                .map(v => s.getPropertyValue(v).trim()); }""")
        assert fonts == ["22px", "22px", "18px"], fonts
        size = page.evaluate("() => getComputedStyle(document.querySelector('.jp-OutputArea-output pre')).fontSize")
        assert size == "22px", size
        page.context.close()


def test_in_the_lecture_preset_the_keys_step_through_the_deck_at_once_and_a_text_box_keeps_its_keys(tmp_path,
                                                                                                      browser):
    """deck's own keys act only once its on-screen navigation has the focus (deathbeds/jupyterlab-deck#63); the
    preset's shortcuts make → and Space step through the slides from the start, except in a widget's text box."""
    slide = {"slideshow": {"slide_type": "slide"}}
    md = nbformat.v4.new_markdown_cell
    cells = [md("# One", metadata=slide), md("# Two", metadata=slide),
             nbformat.v4.new_code_cell("import ipywidgets as w\nw.Text(placeholder='type here')", metadata=slide),
             md("# Four", metadata=slide)]
    root = tmp_path / "root"
    root.mkdir()
    nbformat.write(nbformat.v4.new_notebook(cells=cells, metadata=KERNEL), root / "keys.ipynb")
    with preset_lab(root) as server:
        page = jl.open_notebook(browser, server, "keys.ipynb")
        result = jl.run_all_cells(page, "keys.ipynb")
        assert not result.problems(), "\n".join(result.problems())
        jl.start_deck(page)
        page.evaluate("() => document.activeElement && document.activeElement.blur()")  # the focus deck leaves
        active = "() => window.jupyterapp.shell.currentWidget.content.activeCellIndex"

        def step(key: str, want: int) -> None:
            page.keyboard.press(key)
            page.wait_for_function(f"() => ({active})() === {want}", timeout=15_000)
        step("ArrowRight", 1)                     # no click on deck's arrows first
        step("Space", 2)                          # the widget's slide
        box = page.locator(".jp-Cell.jp-deck-mod-onscreen .widget-text input")
        box.click()
        page.keyboard.type("a b")                 # Space in the box is a space, not the next slide
        assert box.input_value() == "a b" and page.evaluate(active) == 2
        editor = page.locator(".jp-CodeCell.jp-deck-mod-onscreen .cm-content")
        editor.click()                            # the lecturer edits the code on the slide
        page.keyboard.press("Control+End")
        page.keyboard.press("ArrowLeft")
        page.keyboard.type(" ")
        assert "type here' )" in editor.inner_text() and page.evaluate(active) == 2
        page.keyboard.press("Escape")             # command mode: deck's own keys again
        step("ArrowLeft", 1)
        page.evaluate("async () => { await window.jupyterapp.commands.execute('deck:stop'); }")
        page.context.close()
