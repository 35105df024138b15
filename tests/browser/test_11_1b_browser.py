"""Notebook 11.1b in a real JupyterLab (headless Chromium): its widget cells run, then the SubwordExplorer is driven.

Types a new sentence, moves the BPE merge slider, presses "sample again", types an empty text; checks
that each step redraws the pieces (or shows the message) with no error in the kernel, and leaves
screenshots in artifacts/screenshots/subword_explorer_*.png.

Needs Debian's Chromium at /usr/bin/chromium: `make browser` installs it.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from . import jupyterlab as jl

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = "11_1b_subword_tokenization.ipynb"
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
X = ".subword-explorer"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def page(executed):
    """The widget cells of the notebook (and what they need) run in the session's JupyterLab: see conftest."""
    page, result = executed(NOTEBOOK)
    assert not result.problems(), "\n".join(result.problems())
    assert result.completed and not result.not_executed
    page.notebook_name = result.name
    return page


def _rows_text(page) -> str:
    return page.locator(f"{X} .subword-rows").first.inner_text()


def _count(page, row: int) -> int:
    """The token count shown in row ``row`` (0: BPE, 1: byte-level BPE, 2: WordPiece, 3: Unigram Viterbi,
    4: Unigram sample)."""
    text = page.locator(f"{X} .pieces-row").nth(row).locator(".count").inner_text()
    return int(re.match(r"(\d+) tokens?", text).group(1))


def test_subword_explorer_responds_to_text_merges_and_sampling(page):
    jl.watch_kernel(page, page.notebook_name)
    explorer = page.locator(X).first
    explorer.wait_for(state="attached", timeout=30_000)
    explorer.scroll_into_view_if_needed()
    jl.wait_text_shown(page, f"{X} .subword-rows")
    first = _rows_text(page)
    assert "BPE (2,000 merges)" in first and "##itas" in first and "WordPiece (BERT)" in first
    assert "byte-level BPE (2,000 merges)" in first
    assert page.locator(f"{X} .pieces-row").count() == 5
    jl.screenshot_widget(page, X, SCREENSHOTS / "subword_explorer_initial.png")

    # type a sentence: all five rows are redrawn for it
    html0 = jl.inner_html(page, f"{X} .subword-rows")
    jl.fill_text(page, f"{X} .subword-text input", "Tokenizers split unaffable words in Zürich ☃.")
    jl.wait_html_changed(page, f"{X} .subword-rows", html0)
    jl.wait_until_idle(page, page.notebook_name)
    typed = _rows_text(page)
    assert "una" in typed and "##ffa" in typed and "⚠" in typed  # WordPiece's greedy pieces; ☃ unknown
    byte_row = page.locator(f"{X} .pieces-row").nth(1).inner_text()
    assert byte_row.startswith("byte-level BPE") and "⚠" not in byte_row and "Ġ" in byte_row  # no unknown token
    counts = [page.locator(f"{X} .pieces-row").nth(i).locator(".count").inner_text() for i in range(5)]
    assert all(c.endswith(", 7 words") for c in counts), counts  # one count from the text, on every row
    jl.screenshot_widget(page, X, SCREENSHOTS / "subword_explorer_typed.png")

    # fewer BPE merges: more, smaller pieces, and the vocabulary table follows the slider
    bpe_tokens = _count(page, 0)
    html1 = jl.inner_html(page, f"{X} .subword-rows")
    jl.set_slider(page, f"{X} .subword-merges", "50")
    jl.wait_html_changed(page, f"{X} .subword-rows", html1)
    jl.wait_until_idle(page, page.notebook_name)
    assert "BPE (50 merges)" in _rows_text(page) and _count(page, 0) > bpe_tokens
    assert "after 50 of 2,000 merges" in page.locator(f"{X} .subword-vocab").first.inner_text()
    jl.screenshot_widget(page, X, SCREENSHOTS / "subword_explorer_50_merges.png")

    # sample again: a new Unigram draw (the label counts the draws; the pieces usually change too)
    for draw in (2, 3):
        html2 = jl.inner_html(page, f"{X} .subword-rows")
        page.locator(f"{X} .subword-sample").first.click()
        jl.wait_html_changed(page, f"{X} .subword-rows", html2)
        jl.wait_until_idle(page, page.notebook_name)
        assert f"Unigram, sample {draw}" in _rows_text(page)
    jl.screenshot_widget(page, X, SCREENSHOTS / "subword_explorer_sample_3.png")

    # an empty text: a message, no rows, no traceback
    jl.fill_text(page, f"{X} .subword-text input", "")
    jl.wait_text_shown(page, f"{X} .subword-message")
    jl.wait_until_idle(page, page.notebook_name)
    assert "no text" in page.locator(f"{X} .subword-message").first.inner_text()
    jl.screenshot_widget(page, X, SCREENSHOTS / "subword_explorer_empty_text.png")
    assert not jl.kernel_problems(page), f"the kernel reported errors: {jl.kernel_problems(page)}"
    assert not jl.page_tracebacks(page), f"a Python traceback is on the page: {jl.page_tracebacks(page)[0]}"
