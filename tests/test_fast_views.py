"""The widgets' cheap drawings (PNG heatmaps drawn with Pillow, SVG charts) and the compute-once wiring:
the same numbers as the matplotlib views and the per-call functions, without re-running the model."""
from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import torch
from PIL import Image

from course_lib.views import raster
from course_lib.views.attention import attention_maps, heatmap_png, select_view
from course_lib.views.embeddings import WSDReadout, anisotropy_svg, sense_scores_svg
from course_lib.views.masking import language_sampling_svg, rates_svg, top_k_svg
from course_lib.views.svg import nice_ticks, tick_label

PAIR = "The bank raised its interest rates. [SEP] Savers were pleased."
SVG = "{http://www.w3.org/2000/svg}"


def png_image(data: bytes) -> np.ndarray:
    assert data.startswith(b"\x89PNG")
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


def svg_texts(data: bytes) -> list[str]:
    root = ET.fromstring(data.decode("utf-8"))  # well-formed XML, or this raises
    assert root.tag == f"{SVG}svg" and int(root.get("width")) > 0 and int(root.get("height")) > 0
    return ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]


def colours(img: np.ndarray) -> set[tuple[int, int, int]]:
    return set(map(tuple, img.reshape(-1, 3)))


# ----------------------------------------------------------------------------- the attention heatmap as PNG
@pytest.fixture(scope="module")
def maps(embedded):
    return attention_maps(*embedded, PAIR), attention_maps(*embedded, PAIR, causal=True)


def test_heatmap_png_shows_the_weights_with_the_colour_map_and_rings_the_cell(maps):
    bidir, _ = maps
    view = select_view(bidir, 2, 3, "weights")
    plain = png_image(heatmap_png(view))
    ringed = png_image(heatmap_png(view, cell=(1, 2)))
    assert plain.shape == ringed.shape and plain.shape[0] > 300 and plain.shape[1] > 300
    table = {tuple(c) for c in raster.colour_table("viridis")}
    assert len(colours(plain) & table) > 20, "the cells are painted with viridis"
    assert (0xE6, 0x61, 0x00) in colours(ringed) and (0xE6, 0x61, 0x00) not in colours(plain)
    # the brightest cell of the map is the colour of its weight
    w = view.matrices[0]
    q, k = divmod(int(w.argmax()), w.size(1))
    top = raster.colour_cells(np.array([float(w[q, k])]), "viridis", 0.0, 1.0)[0]
    assert tuple(top) in colours(plain)
    other = png_image(heatmap_png(select_view(bidir, 2, 4, "weights")))
    assert other.shape == plain.shape and not np.array_equal(other, plain), "another head, another picture"


def test_heatmap_png_grid_and_masked_scores(maps):
    bidir, causal = maps
    grid = png_image(heatmap_png(select_view(bidir, 0, "all", "weights")))
    one = png_image(heatmap_png(select_view(bidir, 0, 0, "weights")))
    assert grid.shape[0] > one.shape[0] and grid.shape[1] > one.shape[1]
    def grey(img):  # (anti-aliased text has a few grey pixels too; a masked cell has hundreds)
        return int((img == np.array([0xD9, 0xD9, 0xD9])).all(-1).sum())

    T = len(causal.tokens)
    masked = grey(png_image(heatmap_png(select_view(causal, 1, 0, "scores"))))  # cells a causal query cannot see
    assert masked > 100 * T * (T - 1) / 2 > 50 * grey(png_image(heatmap_png(select_view(bidir, 1, 0, "scores"))))


def test_colour_cells_clip_and_paint_nan():
    out = raster.colour_cells(np.array([-5.0, 0.0, 1.0, 9.0, np.nan]), "viridis", 0.0, 1.0)
    table = raster.colour_table("viridis")
    assert (out[0] == table[0]).all() and (out[1] == table[0]).all()
    assert (out[2] == table[255]).all() and (out[3] == table[255]).all()
    assert tuple(out[4]) == (0xD9, 0xD9, 0xD9)


# ----------------------------------------------------------------------------- SVG charts
def test_ticks():
    assert nice_ticks(0, 1) == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert nice_ticks(0, 950) == [0.0, 250.0, 500.0, 750.0] and nice_ticks(-0.6, 1.0)[:2] == [-0.5, 0.0]
    assert [tick_label(v, 0.25) for v in (0, 0.25, -0.5)] == ["0.00", "0.25", "−0.50"]
    assert tick_label(400.0, 200.0) == "400"


def test_rates_svg_bars_targets_and_title():
    data = rates_svg({"eligible": 1000, "selected": 150, "masked": 120, "randomized": 18, "kept": 12}, draws=3)
    texts = svg_texts(data)
    assert "after 3 draws, 1,000 eligible tokens" in texts
    assert {"15.0%", "80.0%", "12.0%", "8.0%"} <= set(texts) and "share" in texts
    titles = re.findall(r"<title>([^<]*)</title>", data.decode())
    assert titles[1] == "[MASK]: 80.0% observed, target 80%"


def test_top_k_svg_lists_the_tokens_best_first():
    from course_lib.pretraining.fill_mask import MaskPrediction

    data = top_k_svg([MaskPrediction(6, ["paris", "lyon", "<b>"], [0.6, 0.2, 0.1])])
    texts = svg_texts(data)
    tokens = [t for t in texts if t in ("paris", "lyon", "<b>")]
    assert tokens == ["paris", "lyon", "<b>"] and "[MASK] #1 (token position 6)" in texts


def test_language_sampling_svg_bars_follow_eq_11_7():
    def heights(alpha):
        data = language_sampling_svg(["en", "sw"], [1e9, 1e6], alpha).decode()
        return [float(h) for h in re.findall(r'<rect x="[\d.]+" y="[\d.]+" width="[\d.]+" height="([\d.]+)" '
                                             r'fill="(?:#999999|url\(#q-hatch\))" stroke="black"><title>', data)]
    p_en, q_en, p_sw, q_sw = heights(1.0)
    assert q_en == pytest.approx(p_en, abs=0.11) and q_sw == pytest.approx(p_sw, abs=0.11)  # α = 1: q = p
    p_en, q_en, p_sw, q_sw = heights(0.3)
    assert q_sw > p_sw + 50 and q_en < p_en  # the small language sampled far above its share
    assert "q_i: sampling probability (α = 0.3)" in svg_texts(language_sampling_svg(["en"], [1.0], 0.3))


def test_sense_scores_and_anisotropy_svg():
    r = WSDReadout("bank", ["bank (river)", "bank (finance)"], ["sloping land", "a financial institution"],
                   [0.81, -0.2], "bank (river)", [])
    texts = svg_texts(sense_scores_svg(r))
    assert "'bank': nearest sense = bank (river)" in texts and "0.810" in texts and "−0.50" not in texts
    assert "cosine with the sense centroid (eq. 11.9)" in texts
    g = torch.Generator().manual_seed(0)
    X = torch.randn(300, 32, generator=g)
    X[:, 5] += 10
    from course_lib.embeddings import pair_cosines

    raw = pair_cosines(X)
    from course_lib.embeddings.geometry import dimension_report

    texts = svg_texts(anisotropy_svg(raw, pair_cosines(X - X.mean(0)), dimension_report(X).cosine_share, [5, 7],
                                     "a title"))
    assert {"a title", "dim 5", "dim 7", "dimension", "cosine of a random token pair",
            "each dimension's part of the mean cosine", "(E[û_i])²: the parts add up to it"} <= set(texts)
    assert f"raw (mean {raw.mean():.3f})" in texts and float(raw.mean()) > 0.5


# ----------------------------------------------------------------------------- compute once
def test_attention_explorer_runs_the_model_once_per_text_and_mask(embedded):
    from course_lib.widgets import AttentionExplorer

    model, tok = embedded
    calls = []
    hook = model.register_forward_hook(lambda *a: calls.append(1))
    try:
        w = AttentionExplorer(model, tok, text=PAIR)
        w.causal.value = True
        w.causal.value = False
        w.causal.value = True
        for head in ("all", 3, 7):
            w.head.value = head
        w.layer.value = 4
        w.kind.value = "scores"
    finally:
        hook.remove()
    assert len(calls) == 2, "one forward for the bidirectional maps, one for the causal ones"
    assert bytes(w.heatmap.value).startswith(b"\x89PNG") and "head 7" in w.readout.value


def test_fill_mask_explorer_cuts_one_prediction_per_text(tiny_mlm_dir):
    import course_lib
    from course_lib.pretraining.fill_mask import fill_mask
    from course_lib.widgets import FillMaskExplorer

    model, tok = course_lib.load_pretrained(tiny_mlm_dir[0], device="cpu")
    text = "The capital of [MASK] is [MASK]."
    w = FillMaskExplorer(model, tok, text, top_k=3)
    for k in (1, 7, 15):
        w.top_k.value = k
        assert w.predictions == fill_mask(model, tok, text, top_k=k)
    assert bytes(w.chart.value).startswith(b"<svg")


def test_nearest_sense_explorer_vectors_are_word_states(embedded):
    from course_lib.embeddings import combine_layers, load_sense_data, target_states, word_states
    from course_lib.widgets import NearestSenseExplorer

    model, tok = embedded
    data = load_sense_data(lemmas=["bank", "mouse"])
    w = NearestSenseExplorer(model, tok, data, states={"mean": target_states(model, tok, data.examples)},
                             sentence="The mouse ran along the river bank.", word="bank")
    for word in ("mouse", "bank", "river"):
        torch.testing.assert_close(w._word_states(w.sentence.value, word),
                                   word_states(model, tok, w.sentence.value, word), atol=1e-5, rtol=0)
    w.layer.value = 3
    torch.testing.assert_close(w.train_vectors, combine_layers(w.train_states, 3))
    assert bytes(w.chart.value).startswith(b"<svg") and w.readout.lemma == "bank"


def test_anisotropy_explorer_statistics_per_layer_as_computed_on_demand():
    from course_lib.embeddings import ZScorer, dimension_report, layer_name, pair_cosines
    from course_lib.widgets import AnisotropyExplorer

    g = torch.Generator().manual_seed(1)
    states = torch.randn(300, 3, 16, generator=g)
    states[:, 1, 2] += 6
    w = AnisotropyExplorer(states, layer=0, n_pairs=1000)
    for layer in (1, 2, 0):
        w.layer.value = layer
        X = states[:, layer]
        raw, z = pair_cosines(X, 1000), pair_cosines(ZScorer().fit(X)(X), 1000)
        assert w.values == (float(raw.mean()), float(z.mean()), dimension_report(X, 3).rogue)
        assert bytes(w.chart.value).startswith(b"<svg") and layer_name(layer) in w.readout.value
