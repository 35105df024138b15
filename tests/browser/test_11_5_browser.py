"""Notebook 11.5's widgets in JupyterLab (headless Chromium): the span mask sampler is resampled, slid and typed
into, the span enumerator is slid and typed into; each must redraw or show its message. Screenshots in
artifacts/screenshots/.

Uses the session's JupyterLab, Chromium and ``executed`` fixture (tests/browser/conftest.py), which runs the
notebook's widget cells and the cells they need (the span classifier comes from the cache the notebook's own
run filled).
"""
from __future__ import annotations

import pytest

from . import jupyterlab as jl
from .conftest import ROOT, SCREENSHOTS

NOTEBOOK = "11_5_span_based.ipynb"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not (ROOT / "notebooks" / NOTEBOOK).exists(), reason="notebook 11_5 not there yet")]


def text_of(page, selector: str) -> str:
    return page.locator(selector).first.inner_text()


def test_span_mask_sampler_and_span_enumerator_respond(executed):
    page, result = executed(NOTEBOOK)
    assert not result.problems(), "\n".join(result.problems())
    name = result.name
    jl.watch_kernel(page, name)

    # span mask sampler: resample redraws the masked sentence; p redraws the histogram; bad text -> message
    S = ".span-mask-sampler"
    page.locator(S).first.scroll_into_view_if_needed()
    jl.wait_text_shown(page, f"{S} .spansampler-tokens")
    tokens0 = jl.inner_html(page, f"{S} .spansampler-tokens")
    hist0 = jl.inner_html(page, f"{S} .spansampler-histogram")
    assert "<svg" in hist0 and "p = 0.20" in hist0 and "target 15%" in text_of(page, f"{S} .spansampler-message")
    jl.screenshot_widget(page, S, SCREENSHOTS / "span_mask_sampler_initial.png")
    for _ in range(5):  # a new seed can draw the same spans: try a few
        page.locator(f"{S} .spansampler-resample").first.click()
        jl.wait_until_idle(page, name)
        if jl.inner_html(page, f"{S} .spansampler-tokens") != tokens0:
            break
    assert jl.inner_html(page, f"{S} .spansampler-tokens") != tokens0, "resample never changed the masked spans"
    jl.set_slider(page, f"{S} .spansampler-p", "0.5")
    jl.wait_html_changed(page, f"{S} .spansampler-histogram", hist0)
    jl.wait_until_idle(page, name)
    assert "p = 0.50" in jl.inner_html(page, f"{S} .spansampler-histogram")
    jl.screenshot_widget(page, S, SCREENSHOTS / "span_mask_sampler_p_0.5.png")
    message0 = jl.inner_html(page, f"{S} .spansampler-message")
    jl.fill_text(page, f"{S} .spansampler-text input", "")
    jl.wait_html_changed(page, f"{S} .spansampler-message", message0)
    assert "the text is empty" in text_of(page, f"{S} .spansampler-message")
    jl.screenshot_widget(page, S, SCREENSHOTS / "span_mask_sampler_empty_text.png")

    # span enumerator: the chapter's sentence with nested brackets; L changes the counts; a new sentence; empty
    E = ".span-enumerator"
    page.locator(E).first.scroll_into_view_if_needed()
    jl.wait_text_shown(page, f"{E} .enumerator-counts")
    counts0 = text_of(page, f"{E} .enumerator-counts")
    assert "T(T+1)/2" in counts0 and "Villanueva" in jl.inner_html(page, f"{E} .enumerator-table")
    jl.screenshot_widget(page, E, SCREENSHOTS / "span_enumerator_initial.png")
    table0 = jl.inner_html(page, f"{E} .enumerator-table")
    jl.set_slider(page, f"{E} .enumerator-limit", "2")
    jl.wait_html_changed(page, f"{E} .enumerator-table", table0)
    jl.wait_until_idle(page, name)
    assert "with L = 2" in text_of(page, f"{E} .enumerator-counts")
    jl.screenshot_widget(page, E, SCREENSHOTS / "span_enumerator_L2.png")
    table1 = jl.inner_html(page, f"{E} .enumerator-table")
    jl.fill_text(page, f"{E} .enumerator-text input", "The University of Chicago Press is in Chicago .")
    jl.wait_html_changed(page, f"{E} .enumerator-table", table1)
    jl.wait_until_idle(page, name)
    assert "T = 9" in text_of(page, f"{E} .enumerator-counts")
    jl.screenshot_widget(page, E, SCREENSHOTS / "span_enumerator_typed.png")
    jl.fill_text(page, f"{E} .enumerator-text input", "   ")
    jl.wait_text_shown(page, f"{E} .enumerator-message")  # empty until now: waits for the message
    assert "type a sentence" in text_of(page, f"{E} .enumerator-message")
    assert not jl.kernel_problems(page), jl.kernel_problems(page)
    assert not jl.page_tracebacks(page), jl.page_tracebacks(page)[0]
