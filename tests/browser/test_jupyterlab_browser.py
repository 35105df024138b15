"""The widgets as a student meets them: JupyterLab in headless Chromium, the widget cells run, no errors.

One JupyterLab server per test session (tests/browser/conftest.py) serves a temporary copy of notebooks/
(running cells never touches the repository's notebooks). For each notebook, the cells its widgets need
(its widget cells and, backwards, every cell they depend on: tests/notebook_runs.widget_slice) are run
with Run → Run All Cells -- the whole notebook already ran once, in tests/test_notebooks.py, and is not
run a second time -- checked for error outputs and screenshotted into artifacts/screenshots/ (see
docs/screenshots.md). The widgets are then driven like a student would: the attention explorer's layer
and head are changed and an empty sentence typed, and so on. Two self-tests on small generated notebooks
keep the checks honest (a notebook with 1/0 must be caught; a minimal widget with the explorer's class
contract must be driven by the same helpers).

Needs Debian's Chromium at /usr/bin/chromium: `make browser` installs it (`make test` does it first).
"""
from __future__ import annotations

import time

import pytest

from . import jupyterlab as jl
from .conftest import NOTEBOOKS_WITH_WIDGETS, ROOT, SCREENSHOTS, SELFTEST

EXPLORER_NOTEBOOK = "11_1_bidirectional_encoders.ipynb"

pytestmark = pytest.mark.slow


# ---------------------------------------------------------------------------- tests
@pytest.mark.parametrize("notebook", NOTEBOOKS_WITH_WIDGETS, ids=[p.stem for p in NOTEBOOKS_WITH_WIDGETS])
def test_widget_cells_run_in_jupyterlab(notebook, executed):
    name = notebook.with_suffix(".ipynb").name
    page, result = executed(name)
    start = time.perf_counter()
    shot = jl.screenshot_notebook(page, result.name, SCREENSHOTS / f"{notebook.stem}_widgets.png")
    print(f"\n{name}: widget cells opened with an idle kernel in {result.open_seconds:.1f} s, Run All Cells took "
          f"{result.seconds:.1f} s ({result.code_cells} code cells, {len(result.stderr)} stderr outputs), "
          f"screenshot {time.perf_counter() - start:.1f} s -> {shot.relative_to(ROOT)}")
    problems = result.problems()
    assert not problems, f"{name} in JupyterLab:\n" + "\n".join(problems)
    assert result.completed and not result.not_executed


@pytest.mark.parametrize("notebook", NOTEBOOKS_WITH_WIDGETS, ids=[p.stem for p in NOTEBOOKS_WITH_WIDGETS])
def test_every_widget_fits_a_1280x720_slide_under_the_code_that_makes_it(notebook, executed):
    """The slide metadata puts each widget on a slide of its own with its cell (tools/slide_metadata.py): the code
    and the widget, as the notebook shows them, must fit the slide's height, so a lecturer never scrolls inside a
    slide. (Before their controls went beside the heat map, the merge table and the plot, the attention explorer,
    the subword explorer and the sense clusters were 1,182, 884 and 642 px tall, under 83, 83 and 65 px of code.)"""
    page, _ = executed(notebook.with_suffix(".ipynb").name)
    for fonts in (None, jl.PRESET_FONTS):   # JupyterLab's own, then the lecture preset's 20-pixel code and text
        boxes = jl.widget_boxes_on_a_slide(page, fonts)
        assert boxes, "no widget on the page"
        # the README's one exception: under the preset's fonts the subword explorer (five rows of pieces, the
        # sliders and the merge table) is 694 px under 122 px of code
        exempt = {"subword-explorer"} if fonts else set()
        too_tall = [b for b in boxes if b["widget"] not in exempt
                    and (b["code"] + b["height"] > jl.SLIDE_ROOM or b["width"] > jl.SLIDE["width"])]
        assert not too_tall, (f"taller than the {jl.SLIDE_ROOM} px a 1280x720 slide leaves (code + widget), "
                              f"fonts {fonts or 'of JupyterLab'}: {too_tall}")


def _explorer_shown(executed):
    """(page, result) of notebook 11.1 run in JupyterLab, its explorer scrolled into view with a heat map shown."""
    page, result = executed(EXPLORER_NOTEBOOK)
    jl.watch_kernel(page, result.name)
    explorer = page.locator(jl.EXPLORER).first
    explorer.wait_for(state="attached", timeout=30_000)
    explorer.scroll_into_view_if_needed()
    jl.wait_heatmap_shown(page)
    return page, result


def _explorer_box(page, fonts) -> dict:
    return next(b for b in jl.widget_boxes_on_a_slide(page, fonts) if b["widget"] == "attention-explorer")


@pytest.mark.skipif(not (ROOT / "notebooks" / EXPLORER_NOTEBOOK).exists(), reason="notebook 11_1 not there yet")
def test_the_explorer_with_all_heads_and_their_readout_still_fits_a_slide(executed):
    """All heads: twelve small maps, and the readout's twelve weights in a table of two columns beside them."""
    page, result = _explorer_shown(executed)
    before = jl.dropdown_options(page, jl.HEAD)[1]
    src = jl.heatmap_src(page)
    jl.choose_other(page, jl.HEAD, prefer=["all"])
    jl.wait_heatmap_changed(page, src)
    jl.wait_until_idle(page, result.name)
    assert jl.dropdown_options(page, jl.HEAD)[1] == "all"
    assert page.locator(f"{jl.EXPLORER} .explorer-readout table tr").count() == 1 + 6
    try:
        for fonts in (None, jl.PRESET_FONTS):
            box = _explorer_box(page, fonts)
            assert box["code"] + box["height"] <= jl.SLIDE_ROOM, (fonts, box)
    finally:
        jl.choose_other(page, jl.HEAD, prefer=[before])


@pytest.mark.skipif(not (ROOT / "notebooks" / EXPLORER_NOTEBOOK).exists(), reason="notebook 11_1 not there yet")
def test_the_explorer_shows_every_head_of_every_block_and_how_a_score_is_made_on_a_slide(executed):
    """Block "all" and head "all": 72 small maps (the model view); then "how a score is made": one head's query and
    key vectors and their products, a row per key. Each redraws, reads out, and fits a slide with both fonts."""
    page, result = _explorer_shown(executed)
    layer, head = jl.dropdown_options(page, jl.LAYER)[1], jl.dropdown_options(page, jl.HEAD)[1]
    readout = f"{jl.EXPLORER} .explorer-readout"

    def fits(what: str):
        for fonts in (None, jl.PRESET_FONTS):
            box = _explorer_box(page, fonts)
            assert box["code"] + box["height"] <= jl.SLIDE_ROOM and box["width"] <= jl.SLIDE["width"], (what, fonts, box)

    def show(label: str):
        src = jl.heatmap_src(page)
        page.locator(f"{jl.EXPLORER} .explorer-kind button", has_text=label).first.click()
        return src

    try:
        for selector, label in ((jl.LAYER, "all"), (jl.HEAD, "all")):
            src = jl.heatmap_src(page)
            jl.choose_other(page, selector, prefer=[label])
            jl.wait_heatmap_changed(page, src)
        jl.wait_until_idle(page, result.name)
        assert "pick a block or a head" in page.locator(readout).first.inner_text()
        jl.screenshot_explorer(page, SCREENSHOTS / "explorer_model_view.png")
        fits("every head of every block")
        show("q·k part by part")
        jl.wait_message_shown(page)
        assert "pick a block and a head" in jl.message_text(page)
        src = jl.heatmap_src(page)
        jl.choose_other(page, jl.LAYER, prefer=[layer])
        jl.choose_other(page, jl.HEAD, prefer=[head])
        jl.wait_heatmap_changed(page, src)
        jl.wait_text_shown(page, readout, 30, what="read out the sum")
        jl.wait_until_idle(page, result.name)
        assert "q·k = Σ of 32 products" in page.locator(readout).first.inner_text() and jl.message_text(page) == ""
        jl.screenshot_explorer(page, SCREENSHOTS / "explorer_score_parts.png")
        fits("how a score is made")
    finally:
        show("softmax weights")


def drive_explorer(page, name: str, shot_prefix: str) -> dict:
    """Change layer and head, then type an empty sentence; return what was seen. Asserts along the way."""
    jl.watch_kernel(page, name)
    explorer = page.locator(jl.EXPLORER).first
    explorer.wait_for(state="attached", timeout=30_000)
    explorer.scroll_into_view_if_needed()
    jl.wait_heatmap_shown(page)
    jl.screenshot_explorer(page, SCREENSHOTS / f"{shot_prefix}_initial.png")
    src0, png0 = jl.heatmap_src(page), jl.heatmap_bytes(page)
    assert png0.startswith(b"\x89PNG"), f"the heatmap is not a PNG: {src0[:60]!r}"

    layer = jl.choose_other(page, jl.LAYER, prefer=["4", "1"])
    jl.wait_heatmap_changed(page, src0)
    src1 = jl.heatmap_src(page)
    head = jl.choose_other(page, jl.HEAD, prefer=["7", "all"])
    jl.wait_heatmap_changed(page, src1)
    jl.wait_until_idle(page, name)
    png2 = jl.heatmap_bytes(page)
    assert png2.startswith(b"\x89PNG") and png2 != png0, "the heatmap did not change with layer and head"
    assert jl.dropdown_options(page, jl.LAYER)[1] == layer and jl.dropdown_options(page, jl.HEAD)[1] == head
    jl.screenshot_explorer(page, SCREENSHOTS / f"{shot_prefix}_layer{layer}_head{head}.png")

    jl.set_text(page, "")
    jl.wait_message_shown(page)
    jl.wait_until_idle(page, name)
    message = jl.message_text(page)
    jl.screenshot_explorer(page, SCREENSHOTS / f"{shot_prefix}_empty_text.png")
    assert message, "an empty sentence should show a message in the explorer"
    assert jl.TRACEBACK not in message
    assert not jl.kernel_problems(page), f"the kernel reported errors: {jl.kernel_problems(page)}"
    assert not jl.page_tracebacks(page), f"a Python traceback is on the page: {jl.page_tracebacks(page)[0]}"
    return {"layer": layer, "head": head, "message": message, "src_scheme": src0.split(":", 1)[0]}


@pytest.mark.skipif(not (ROOT / "notebooks" / EXPLORER_NOTEBOOK).exists(), reason="notebook 11_1 not there yet")
def test_attention_explorer_responds_to_layer_head_and_bad_input(executed):
    page, result = executed(EXPLORER_NOTEBOOK)
    assert not result.problems(), "\n".join(result.problems())
    seen = drive_explorer(page, result.name, "attention_explorer")
    print(f"\nattention explorer: layer {seen['layer']}, head {seen['head']} redrew the heatmap "
          f"({seen['src_scheme']}: URL, PNG bytes compared); "
          f"empty text -> {seen['message']!r}")


def test_selftest_an_error_in_a_cell_is_caught_and_a_warning_is_not(executed):
    name = f"{SELFTEST}/error.ipynb"
    _, result = executed(name)
    assert [(e["cell"], e["ename"]) for e in result.errors] == [(1, "ZeroDivisionError")]
    assert not result.completed and result.not_executed == [2]
    assert any("only a warning" in s for s in result.stderr)   # on stderr, yet not an error
    assert len(result.dom_tracebacks) == 1                      # the rendered traceback is found too
    assert result.problems() == ["cell 1: ZeroDivisionError: division by zero"]


def test_selftest_explorer_helpers_drive_a_minimal_widget(executed):
    name = f"{SELFTEST}/mini_explorer.ipynb"
    page, result = executed(name)
    assert not result.problems(), "\n".join(result.problems())
    seen = drive_explorer(page, name, "selftest_mini_explorer")
    assert seen == {"layer": "4", "head": "7", "message": "Type a sentence.", "src_scheme": "blob"}


# ---------------------------------------------------------------------------- the widgets of 11.2 and 11.3
MLM_NOTEBOOK = "11_2_masked_language_modeling.ipynb"
EMBEDDINGS_NOTEBOOK = "11_3_contextual_embeddings.ipynb"


def _clean(page, name):
    assert not jl.kernel_problems(page), f"the kernel reported errors: {jl.kernel_problems(page)}"
    assert not jl.page_tracebacks(page), f"a Python traceback is on the page: {jl.page_tracebacks(page)[0]}"


@pytest.mark.skipif(not (ROOT / "notebooks" / MLM_NOTEBOOK).exists(), reason="notebook 11_2 not there yet")
def test_mlm_widgets_respond(executed):
    page, result = executed(MLM_NOTEBOOK)
    name = result.name  # the page shows the notebook of its widget cells
    assert not result.problems(), "\n".join(result.problems())
    jl.watch_kernel(page, name)

    # mask sampler: resample redraws the tokens; 100 more draws redraw the histogram
    S = ".mask-sampler"
    page.locator(S).first.scroll_into_view_if_needed()
    jl.wait_image_shown(page, f"{S} img.sampler-histogram")
    hist0 = jl.image_src(page, f"{S} img.sampler-histogram")
    jl.screenshot_widget(page, S, SCREENSHOTS / "mask_sampler_initial.png")
    page.locator(f"{S} .sampler-resample").first.click()
    jl.wait_image_changed(page, f"{S} img.sampler-histogram", hist0)  # the histogram now counts 2 draws
    jl.wait_until_idle(page, name)
    assert page.locator(f"{S} .sampler-seed input").first.input_value() == "1"  # resample moved to the next seed
    hist1 = jl.image_src(page, f"{S} img.sampler-histogram")
    page.locator(f"{S} .sampler-many").first.click()
    jl.wait_image_changed(page, f"{S} img.sampler-histogram", hist1)
    jl.wait_until_idle(page, name)
    jl.screenshot_widget(page, S, SCREENSHOTS / "mask_sampler_after_101_draws.png")

    # fill-mask explorer: a new sentence redraws the chart; a sentence without [MASK] shows a message
    F = ".fill-mask-explorer"
    jl.wait_image_shown(page, f"{F} img.fillmask-chart")
    chart0 = jl.image_src(page, f"{F} img.fillmask-chart")
    jl.fill_text(page, f"{F} .fillmask-text input", "She played the [MASK] at the concert.")
    jl.wait_image_changed(page, f"{F} img.fillmask-chart", chart0)
    jl.wait_until_idle(page, name)
    jl.screenshot_widget(page, F, SCREENSHOTS / "fill_mask_explorer.png")
    jl.fill_text(page, f"{F} .fillmask-text input", "There is nothing to fill in here.")
    jl.wait_text_shown(page, f"{F} .fillmask-message")
    assert "no [MASK]" in page.locator(f"{F} .fillmask-message").first.inner_text()
    jl.screenshot_widget(page, F, SCREENSHOTS / "fill_mask_explorer_no_mask.png")
    # an emoji: the chart is drawn, with a note that the model sees [UNK] there
    chart1 = jl.image_src(page, f"{F} img.fillmask-chart")
    jl.fill_text(page, f"{F} .fillmask-text input", "I love 😀 and the [MASK].")
    jl.wait_image_changed(page, f"{F} img.fillmask-chart", chart1)
    jl.wait_text_shown(page, f"{F} .fillmask-message")
    assert "the model sees [UNK] there" in page.locator(f"{F} .fillmask-message").first.inner_text()
    jl.screenshot_widget(page, F, SCREENSHOTS / "fill_mask_explorer_unknown_piece.png")

    # eq. 11.7: moving α redraws the bars
    A = ".language-sampler"
    jl.wait_image_shown(page, f"{A} img.sampler-alpha-chart")
    bars0 = jl.image_src(page, f"{A} img.sampler-alpha-chart")
    jl.set_slider(page, f"{A} .sampler-alpha", "0.7")
    jl.wait_image_changed(page, f"{A} img.sampler-alpha-chart", bars0)
    jl.wait_until_idle(page, name)
    jl.screenshot_widget(page, A, SCREENSHOTS / "language_sampler_alpha_0.7.png")
    _clean(page, name)


@pytest.mark.skipif(not (ROOT / "notebooks" / EMBEDDINGS_NOTEBOOK).exists(), reason="notebook 11_3 not there yet")
def test_contextual_embedding_widgets_respond(executed):
    page, result = executed(EMBEDDINGS_NOTEBOOK)
    assert not result.problems(), "\n".join(result.problems())
    name = result.name  # the page shows the notebook of its widget cells
    jl.watch_kernel(page, name)

    # UMAP sense clusters: another word redraws the SVG; picking a sentence moves the ring
    C = ".sense-clusters"
    page.locator(C).first.scroll_into_view_if_needed()
    jl.wait_text_shown(page, f"{C} .clusters-sentence")
    svg0 = jl.inner_html(page, f"{C} .clusters-plot")
    assert "<svg" in svg0 and "UMAP dimension 1" in svg0 and "<title>" in svg0
    jl.screenshot_widget(page, C, SCREENSHOTS / "sense_clusters_bank.png")
    page.locator(f"{C} .clusters-word select").first.select_option(label="mouse")
    jl.wait_html_changed(page, f"{C} .clusters-plot", svg0)
    jl.wait_until_idle(page, name)
    svg1 = jl.inner_html(page, f"{C} .clusters-plot")
    assert "mouse (computer)" in svg1 and "bank (river)" not in svg1
    page.locator(f"{C} .clusters-point select").first.select_option(index=5)
    jl.wait_html_changed(page, f"{C} .clusters-plot", svg1)
    jl.wait_until_idle(page, name)
    assert "6." in jl.dropdown_options(page, f"{C} .clusters-point select")[1]
    jl.screenshot_widget(page, C, SCREENSHOTS / "sense_clusters_mouse.png")

    # nearest-neighbour WSD: a new sentence picks its known word and redraws; an unknown word -> message
    N = ".nearest-sense"
    jl.wait_image_shown(page, f"{N} img.wsd-chart")
    chart0 = jl.image_src(page, f"{N} img.wsd-chart")
    jl.fill_text(page, f"{N} .wsd-sentence input", "Click the left mouse button twice to open the file.")
    jl.wait_image_changed(page, f"{N} img.wsd-chart", chart0)
    jl.wait_until_idle(page, name)
    assert jl.dropdown_options(page, f"{N} .wsd-word select")[1] == "mouse"
    assert "mouse (" in page.locator(f"{N} .wsd-neighbours").first.inner_text()
    jl.screenshot_widget(page, N, SCREENSHOTS / "nearest_sense_mouse.png")
    # a use none of the word's senses fits: the best bar stays left of the line, and the widget says so
    chart1 = jl.image_src(page, f"{N} img.wsd-chart")
    jl.fill_text(page, f"{N} .wsd-sentence input", "Many trees will die.")
    jl.wait_image_changed(page, f"{N} img.wsd-chart", chart1)
    jl.wait_text_shown(page, f"{N} .wsd-note")
    assert "no sense may fit" in page.locator(f"{N} .wsd-note").first.inner_text()
    jl.screenshot_widget(page, N, SCREENSHOTS / "nearest_sense_no_sense_fits.png")
    jl.fill_text(page, f"{N} .wsd-sentence input", "The weather was lovely today.")
    jl.wait_text_shown(page, f"{N} .wsd-message")
    assert "has no sense data" in page.locator(f"{N} .wsd-message").first.inner_text()
    jl.screenshot_widget(page, N, SCREENSHOTS / "nearest_sense_unknown_word.png")

    # anisotropy: another layer redraws the histograms and the bars of each dimension's part of the mean cosine
    A = ".anisotropy-explorer"
    jl.wait_image_shown(page, f"{A} img.aniso-chart")
    img0, text0 = jl.image_src(page, f"{A} img.aniso-chart"), page.locator(f"{A} .aniso-readout").first.inner_text()
    jl.set_slider(page, f"{A} .aniso-layer", "6")
    jl.wait_image_changed(page, f"{A} img.aniso-chart", img0)
    jl.wait_until_idle(page, name)
    assert page.locator(f"{A} .aniso-readout").first.inner_text() != text0
    assert page.locator(f"{A} .aniso-readout").first.inner_text().startswith("L6")
    jl.screenshot_widget(page, A, SCREENSHOTS / "anisotropy_layer6.png")
    # another model: its precomputed statistics are drawn, the layer stays
    img6 = jl.image_src(page, f"{A} img.aniso-chart")
    page.locator(f"{A} .aniso-model select").first.select_option(label="random init")
    jl.wait_image_changed(page, f"{A} img.aniso-chart", img6)
    jl.wait_until_idle(page, name)
    assert page.locator(f"{A} .aniso-readout").first.inner_text().startswith("L6: random init")
    jl.screenshot_widget(page, A, SCREENSHOTS / "anisotropy_random_init_layer6.png")
    _clean(page, name)
