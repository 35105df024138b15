"""The explorer's two new pictures: every head of every block at once (the model view), and how one query's
scores are made from its query and key vectors, dimension by dimension (the neuron view)."""
from __future__ import annotations

import html
import io
import math

import numpy as np
import pytest
import torch
from PIL import Image

from course_lib.views.attention import attention_maps, draw_view, heatmap_png, readout, select_view
from course_lib.views.attention_draw import grid_shape
from course_lib.views.score_parts import parts_png, random_rotation, rotation_onto, score_parts
from course_lib.widgets import AttentionExplorer

PAIR = "The bank raised its interest rates. [SEP] Savers were pleased."


def png_image(data: bytes) -> np.ndarray:
    data = bytes(data)
    assert data.startswith(b"\x89PNG")
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


@pytest.fixture(scope="module")
def maps(embedded):
    return attention_maps(*embedded, PAIR)


@pytest.fixture(scope="module")
def causal_maps(embedded):
    return attention_maps(*embedded, PAIR, causal=True)


# ----------------------------------------------------------------------------- queries and keys
def test_the_maps_keep_each_heads_queries_and_keys_and_they_make_its_scores(maps, embedded):
    L, H, T = maps.num_layers, maps.num_heads, len(maps.tokens)
    assert maps.queries.shape == maps.keys.shape == (L, H, T, 32)
    torch.testing.assert_close(maps.queries @ maps.keys.transpose(-1, -2) / math.sqrt(32), maps.scores,
                               atol=1e-4, rtol=1e-5)
    # the first block's queries are the query projection of the embeddings, split into heads
    model, tokenizer = embedded
    enc = tokenizer(*PAIR.split(" [SEP] ")).to(model.device)
    with torch.no_grad():
        x = model.embeddings(enc.input_ids, enc.token_type_ids)
        q = model.encoder.layer[0].attention.self.query(x)[0].view(T, H, 32).transpose(0, 1)
    torch.testing.assert_close(maps.queries[0], q.float().cpu(), atol=1e-5, rtol=1e-5)


# ----------------------------------------------------------------------------- every block at once
def test_all_blocks_and_heads_is_a_row_per_block_and_a_column_per_head(maps):
    v = select_view(maps, "all", "all", "weights")
    assert v.model_view and grid_shape(v) == (6, 12) and v.matrices.shape == (72, 15, 15)
    assert v.title == "every head of every block (6 × 12): softmax weights (bidirectional)"
    for i in (0, 13, 71):   # map i is block i // 12, head i % 12
        torch.testing.assert_close(v.matrices[i], maps.weights[i // 12, i % 12])
    assert (v.blocks[13], v.heads[13]) == (1, 1)


def test_one_head_in_every_block(maps):
    v = select_view(maps, "all", 3, "scores")
    assert not v.model_view and grid_shape(v) == (2, 3) and v.names == [f"block {b}" for b in range(1, 7)]
    torch.testing.assert_close(v.matrices, maps.scores[:, 3])
    assert v.title == "head 3 in every block: raw scores QKᵀ/√d_k (bidirectional)"
    line = readout(maps, "all", 3, query=2, key=0)
    assert line.startswith("every block, query 'bank' (2) → key '[CLS]' (0): block 1: weight ")
    assert line.count("; block ") == 5 and f"weight {float(maps.weights[5, 3, 2, 0]):.3f}" in line.split("; ")[-1]
    assert readout(maps, "all", "all", 2, 0).endswith("(pick a block or a head to read its numbers)")


def test_the_model_view_png_has_a_map_per_head_and_block_in_its_colours(maps):
    v = select_view(maps, "all", "all")
    img = png_image(heatmap_png(v))
    assert img.shape[0] <= 720 and img.shape[1] <= 1280           # all 72 maps on one slide, unscaled
    # block 1, head 2 attends to the previous token: its diagonal's bright yellow is in the picture
    yellow = np.all(img == np.array([253, 231, 37]), axis=-1).sum()
    assert yellow > 0
    fig = draw_view(v)
    visible = [a for a in fig.axes if a.get_visible()]
    assert len(visible) == 72 + 1   # 72 maps and the colour bar
    assert [a.get_title() for a in visible[:12]] == [f"head {h}" for h in range(12)]
    assert [visible[12 * b].get_ylabel() for b in range(6)] == [f"block {b}" for b in range(1, 7)]


# ----------------------------------------------------------------------------- how a score is made
def test_the_score_is_the_sum_of_the_products_over_root_d_and_the_weights_are_its_softmax(maps):
    parts = score_parts(maps, 0, 2, query=3)
    assert parts.tokens[3] == "raised" and parts.d_h == 32
    torch.testing.assert_close(parts.products, parts.q * parts.keys)
    torch.testing.assert_close(parts.scores, maps.scores[0, 2, 3], atol=1e-4, rtol=1e-5)
    torch.testing.assert_close(parts.scores.softmax(-1), parts.weights, atol=1e-4, rtol=1e-4)
    top = parts.top_dimensions(key=2, n=32)
    assert sum(s for _, s in top) == pytest.approx(float(parts.scores[2]), abs=1e-3)
    assert [abs(s) for _, s in top] == sorted((abs(s) for _, s in top), reverse=True)
    text = parts.describe(2)
    assert text.startswith("block 1, head 2, query 'raised' (3) → key 'bank' (2): q·k = Σ of 32 products = ")
    assert f"score {float(parts.scores[2]):+.2f}" in text and f"dim {top[0][0]} {top[0][1]:+.2f}" in text


def test_a_masked_key_is_named_masked_and_refused_indices_are_plain(causal_maps):
    parts = score_parts(causal_maps, 0, 2, query=3)
    assert parts.visible.tolist() == [True] * 4 + [False] * 11 and float(parts.weights[4:].sum()) == 0
    assert "masked (a causal model cannot look ahead)" in parts.describe(5)
    with pytest.raises(IndexError, match="head 12 is out of range"):
        score_parts(causal_maps, 0, 12, 3)
    with pytest.raises(IndexError, match="query token 15 is out of range"):
        score_parts(causal_maps, 0, 0, 15)


def test_a_rotation_keeps_every_score_and_weight_and_moves_the_parts(maps, causal_maps):
    for m in (maps, causal_maps):
        parts = score_parts(m, 0, 2, query=3)
        for R in (random_rotation(32, seed=1), rotation_onto(parts.q, axis=5)):
            turned = parts.rotated(R)
            torch.testing.assert_close(turned.scores, parts.scores, atol=1e-4, rtol=1e-5)
            torch.testing.assert_close(turned.weights, parts.weights, atol=1e-5, rtol=1e-5)
            assert not torch.allclose(turned.products, parts.products, atol=1e-3)
            assert torch.equal(turned.visible, parts.visible)
    onto = parts.rotated(rotation_onto(parts.q, axis=5))
    assert [d for d, _ in onto.top_dimensions(2, n=1)] == [5]                     # all of the score in one axis
    assert onto.top_dimensions(2, n=1)[0][1] == pytest.approx(float(parts.scores[2]), abs=1e-4)
    assert not torch.equal(random_rotation(32, seed=1), random_rotation(32, seed=2))
    with pytest.raises(ValueError, match=r"R must be a \(32, 32\) rotation for this head, got shape \(16, 16\)"):
        parts.rotated(torch.eye(16))
    with pytest.raises(ValueError, match="R is not orthogonal"):
        parts.rotated(2 * torch.eye(32))
    with pytest.raises(IndexError, match="axis 32 is out of range"):
        rotation_onto(parts.q, axis=32)


def test_the_parts_picture_rings_the_key_and_greys_masked_keys(maps, causal_maps):
    plain = png_image(parts_png(score_parts(maps, 0, 2, 3)))
    ringed = png_image(parts_png(score_parts(maps, 0, 2, 3), key=2))
    ring = np.array([0xe6, 0x61, 0x00])
    assert not np.all(plain == ring, axis=-1).any() and np.all(ringed == ring, axis=-1).sum() > 100
    grey = lambda img: np.all(img == np.array([0xd9, 0xd9, 0xd9]), axis=-1).sum()  # noqa: E731
    assert grey(png_image(parts_png(score_parts(causal_maps, 0, 2, 3)))) > 50 * grey(plain) + 1000


def test_the_products_colour_bar_says_they_are_before_the_division(maps, monkeypatch):
    """The bar read "products" (±26) beside printed parts after ÷√32 (dimension 31: +4.60): readers compared the two."""
    import course_lib.views.score_parts as sp

    labels, draw = [], sp._horizontal_bar
    monkeypatch.setattr(sp, "_horizontal_bar", lambda width, lo, hi, label, f: labels.append((label, hi))
                        or draw(width, lo, hi, label, f))
    parts = score_parts(maps, 0, 2, 3)
    png_image(parts_png(parts))
    assert [label for label, _ in labels] == ["vector entries", "q[m]·k[m] (before ÷√d_h)"]
    assert labels[1][1] == pytest.approx(float(parts.products.abs().max()))   # the bar's range: the products undivided


# ----------------------------------------------------------------------------- in the widget
def test_the_widget_shows_every_block_and_how_a_score_is_made(embedded):
    w = AttentionExplorer(*embedded, text=PAIR, layer=0, head=2)
    w.query.value, w.key.value = 3, 2
    single = w.heatmap.value
    w.layer.value = "all"
    assert w.heatmap.value != single and w.readout.value.count("<tr>") == 1 + 3   # blocks 1-3 beside 4-6
    w.head.value = "all"
    assert "pick a block or a head" in w.readout.value and w.heatmap.value
    w.kind.value = "parts"
    assert w.heatmap.value == b"" and "pick a block and a head" in w.message.value
    assert w.query.options and w.heatmap.layout.display == "none"   # a note, not an error: the tokens stay
    w.layer.value, w.head.value = 0, 2
    assert w.message.value == "" and w.heatmap.layout.display == ""
    assert png_image(w.heatmap.value).shape[0] > 100 and "q·k = Σ of 32 products" in w.readout.value
    before = w.heatmap.value
    w.query.value = 4
    assert w.heatmap.value != before and "query 'its' (4)" in html.unescape(w.readout.value)
