"""Notebook 11.4b's widgets in JupyterLab (headless Chromium): the alignment viewer and the QA span viewer are
typed into, picked from and slid, and must redraw or show their message; screenshots in artifacts/screenshots/.

Uses the session's JupyterLab, Chromium and ``executed`` fixture (tests/browser/conftest.py), which runs the
notebook's widget cells and the cells they need.
"""
from __future__ import annotations

import json

import pytest

from . import jupyterlab as jl
from .conftest import ROOT, SCREENSHOTS

NOTEBOOK = "11_4b_sequence_labelling.ipynb"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not (ROOT / "notebooks" / NOTEBOOK).exists(), reason="notebook 11_4b not there yet")]


def _clean(page, name):
    assert not jl.kernel_problems(page), f"the kernel reported errors: {jl.kernel_problems(page)}"
    assert not jl.page_tracebacks(page), f"a Python traceback is on the page: {jl.page_tracebacks(page)[0]}"


def test_alignment_and_qa_viewers_respond(executed):
    page, result = executed(NOTEBOOK)
    assert not result.problems(), "\n".join(result.problems())
    name = result.name
    jl.watch_kernel(page, name)

    # alignment viewer: the chapter's sentence with both gold rows; a new sentence redraws; bad gold -> message
    A = ".alignment-viewer"
    page.locator(A).first.scroll_into_view_if_needed()
    jl.wait_text_shown(page, f"{A} .align-table")
    table0 = jl.inner_html(page, f"{A} .align-table")
    assert "##itas" in table0 and "-100" in table0 and "gold, first subword only" in table0
    jl.screenshot_widget(page, A, SCREENSHOTS / "alignment_viewer_mt_sanitas.png")
    jl.fill_text(page, f"{A} .align-gold input", "")
    jl.fill_text(page, f"{A} .align-text input", "Jane Villanueva of United Airlines Holding flew to Chicago.")
    jl.wait_html_contains(page, f"{A} .align-table", "Villanueva")  # clearing the gold redraws first
    jl.wait_until_idle(page, name)
    table1 = jl.inner_html(page, f"{A} .align-table")
    assert "Villanueva" in table1 and "gold, every" not in table1 and "entities:" in table1  # the word as typed
    jl.screenshot_widget(page, A, SCREENSHOTS / "alignment_viewer_typed.png")
    jl.fill_text(page, f"{A} .align-gold input", "B-PER O")
    jl.wait_text_shown(page, f"{A} .align-message")
    assert "2 gold tags for" in page.locator(f"{A} .align-message").first.inner_text()
    jl.screenshot_widget(page, A, SCREENSHOTS / "alignment_viewer_bad_gold.png")
    page.locator(f"{A} .align-pick select").first.select_option(index=3)
    jl.wait_until_idle(page, name)
    jl.wait_html_changed(page, f"{A} .align-table", table1)
    assert page.locator(f"{A} .align-message").first.inner_text().strip() == ""
    assert "gold, first subword only" in jl.inner_html(page, f"{A} .align-table")
    jl.screenshot_widget(page, A, SCREENSHOTS / "alignment_viewer_wikigold.png")

    # QA span viewer: strips drawn; a held-out question redraws; L = 1 gives a one-token span; empty question
    Q = ".qa-span-viewer"
    page.locator(Q).first.scroll_into_view_if_needed()
    jl.wait_text_shown(page, f"{Q} .qa-answer-line")
    svg0 = jl.inner_html(page, f"{Q} .qa-strips-box")
    assert "<svg" in svg0 and "p-start" in svg0 and "p-end" in svg0
    jl.screenshot_widget(page, Q, SCREENSHOTS / "qa_span_viewer_initial.png")
    page.locator(f"{Q} .qa-pick select").first.select_option(index=2)
    jl.wait_html_changed(page, f"{Q} .qa-strips-box", svg0)
    jl.wait_until_idle(page, name)
    svg1 = jl.inner_html(page, f"{Q} .qa-strips-box")
    jl.screenshot_widget(page, Q, SCREENSHOTS / "qa_span_viewer_heldout.png")
    jl.set_slider(page, f"{Q} .qa-maxlen", "1")  # L counts tokens (j - i < L): 1 is the smallest
    jl.wait_until_idle(page, name)
    # the answer line redraws after the kernel is idle again: wait for "no answer" or a one-token span "tokens i–i"
    # (a span of two or more tokens at L = 1 times out here, with the line it shows)
    jl.wait_widget(page, f"""() => {{
        const e = document.querySelector({json.dumps(Q + " .qa-answer-line")});
        if (!e) return false;
        const t = e.innerText, m = t.match(/tokens (\\d+)–(\\d+)/);
        return t.includes("no answer") || (m !== null && m[1] === m[2]);
    }}""", "show no answer or a one-token span at L = 1")
    jl.screenshot_widget(page, Q, SCREENSHOTS / "qa_span_viewer_L1.png")
    jl.fill_text(page, f"{Q} .qa-question input", "")
    jl.wait_text_shown(page, f"{Q} .qa-message", what="show the empty-question message")
    assert "type a question" in page.locator(f"{Q} .qa-message").first.inner_text()
    jl.screenshot_widget(page, Q, SCREENSHOTS / "qa_span_viewer_empty_question.png")
    assert svg1
    _clean(page, name)
