"""The attention explorer's pure functions, its widget wiring, and the attention-cost measurement."""
import re

import pytest
import torch

from course_lib.model.cost import attention_cost
from course_lib.views.common import figure_png
from course_lib.views.attention import (ExplorerInputError, attention_maps, draw_view, parse_input, readout,
                                 select_view)
from course_lib.widgets import AttentionExplorer

PAIR = "The bank raised its interest rates. [SEP] Savers were pleased."


@pytest.fixture(scope="module")
def pair_maps(embedded):
    return attention_maps(*embedded, PAIR)


def test_parse_input_single_and_pair():
    assert parse_input("  One sentence. ") == ("One sentence.", None)
    assert parse_input("A b. [SEP] C d.") == ("A b.", "C d.")
    # [SEP] in any case: a lower-case "[sep]" was read as the three tokens '[', 'sep', ']', with no word said
    assert parse_input("A b. [sep] C d.") == parse_input("A b. [Sep] C d.") == ("A b.", "C d.")
    with pytest.raises(ExplorerInputError, match="found it 2 times"):
        parse_input("a [SEP] b [sep] c")


@pytest.mark.parametrize("text, message", [
    ("", "Type a sentence (or two sentences separated by [SEP])."),
    ("   ", "Type a sentence (or two sentences separated by [SEP])."),
    ("a [SEP] b [SEP] c", "Use [SEP] once, between two sentences: found it 2 times."),
    ("[SEP] b", "A sentence pair needs text on both sides of [SEP]; there is nothing before it."),
    ("a [SEP]  ", "A sentence pair needs text on both sides of [SEP]; there is nothing after it."),
    # zero-width and other format characters (category Cf), which str.strip keeps, are nothing either: the
    # explorer drew "\u200b [SEP] \u200b" as [CLS] [SEP] [SEP]
    ("\u200b [SEP] \u200b", "A sentence pair needs text on both sides of [SEP]; there is nothing before it."),
    ("a [SEP] \ufeff\u200d", "A sentence pair needs text on both sides of [SEP]; there is nothing after it."),
    ("\u200b", "Type a sentence (or two sentences separated by [SEP])."),
])
def test_parse_input_explains_bad_input(text, message):
    with pytest.raises(ExplorerInputError) as err:
        parse_input(text)
    assert str(err.value).startswith(message)


@pytest.mark.parametrize("text, message", [
    ("\x07 [SEP] b", "there is nothing before it"),   # control characters: the tokenizer drops them
    ("a [SEP] \ufe0f", "there is nothing after it"),   # a lone variation selector, likewise
    ("\ufe0f", "the tokenizer finds no token in this text"),
])
def test_a_side_the_tokenizer_drops_entirely_is_empty(embedded, text, message):
    with pytest.raises(ExplorerInputError, match=message):
        attention_maps(*embedded, text)


def test_maps_match_the_model_and_mark_the_pair_boundary(embedded, pair_maps):
    model, tok = embedded
    enc = tok("The bank raised its interest rates.", "Savers were pleased.")
    with torch.no_grad():
        out = model(**enc, output_attentions=True)
    assert pair_maps.tokens == enc.tokens[0]
    assert pair_maps.weights.shape == (6, 12, len(pair_maps.tokens), len(pair_maps.tokens))
    torch.testing.assert_close(pair_maps.weights[4], out.attentions[4][0])
    torch.testing.assert_close(pair_maps.scores[1], out.scores[1][0])
    assert pair_maps.tokens[pair_maps.boundary] == "[SEP]" and pair_maps.boundary < len(pair_maps.tokens) - 1


def test_causal_maps_hide_the_future(embedded):
    maps = attention_maps(*embedded, "So long and thanks for all the fish", causal=True)
    T = len(maps.tokens)
    above = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    assert (maps.weights[..., above] == 0).all()
    assert torch.equal(maps.mask, ~above)
    assert "masked" in readout(maps, 0, 0, 1, 3)


def test_over_long_and_unreadable_texts_are_refused(embedded):
    with pytest.raises(ExplorerInputError, match="longer than the model's limit of 512 tokens"):
        attention_maps(*embedded, "word " * 600)
    with pytest.raises(ExplorerInputError, match="the explorer shows at most 64"):
        attention_maps(*embedded, "word " * 100)


def test_select_view_single_head_and_grid(pair_maps):
    one = select_view(pair_maps, layer=2, head=3, kind="scores")
    torch.testing.assert_close(one.matrices[0], pair_maps.scores[2, 3])
    assert one.title == "block 3, head 3: raw scores QKᵀ/√d_k (bidirectional)"
    lo, hi = one.value_range
    assert lo == -hi and hi == pytest.approx(float(pair_maps.scores[2, 3].abs().max()))
    grid = select_view(pair_maps, layer=-1, head="all")
    assert grid.matrices.shape[0] == 12 and grid.layer == 5 and grid.value_range == (0.0, 1.0)
    with pytest.raises(IndexError, match=r"layer 6 is out of range: this model has 6 blocks \(1-6\), indexed 0-5: "
                                         r"index 0 is block 1, whose output is layer L1 \(L0 is the embedding output"):
        select_view(pair_maps, 6, 0)
    with pytest.raises(IndexError, match="head 12 is out of range: this model has 12 heads"):
        select_view(pair_maps, 0, 12)


def test_readout_reports_the_cell(pair_maps):
    line = readout(pair_maps, 1, 2, query=2, key=0)
    w = float(pair_maps.weights[1, 2, 2, 0])
    assert line.startswith("block 2, query 'bank' (2) → key '[CLS]' (0): head 2: ")
    assert f"weight {w:.3f}" in line
    assert readout(pair_maps, 1, "all", 2, 0).count("head ") == 12


def test_drawn_figure_labels_every_token(pair_maps):
    fig = draw_view(select_view(pair_maps, 0, 0), cell=(1, 2))
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == pair_maps.tokens
    assert [t.get_text() for t in ax.get_yticklabels()] == pair_maps.tokens
    assert ax.get_xlabel() and ax.get_ylabel()
    assert figure_png(fig)[:8] == b"\x89PNG\r\n\x1a\n"
    grid = draw_view(select_view(pair_maps, 0, "all"))
    assert sum(a.get_visible() for a in grid.axes) == 12 + 1  # 12 heads + colour bar


def test_widget_redraws_on_layer_and_head_and_shows_errors(embedded):
    w = AttentionExplorer(*embedded, text=PAIR)
    first = w.heatmap.value
    assert first and w.message.value == ""
    w.layer.value = 3
    assert w.heatmap.value != first
    second = w.heatmap.value
    w.head.value = 7
    assert w.heatmap.value != second and "head 7" in w.readout.value
    w.text.value = "a [SEP] b [SEP] c"
    assert "Use [SEP] once" in w.message.value and w.heatmap.value == b"" and w.heatmap.layout.display == "none"
    # no stale tokens of the previous sentence in the cell choosers beside the message
    assert w.query.options == () and w.key.options == () and w.query.value is None and w.readout.value == ""
    w.layer.value, w.head.value, w.causal.value = 1, "all", True  # nothing to redraw: must not raise
    assert "Use [SEP] once" in w.message.value and w.heatmap.value == b""
    w.text.value = "\u200b [SEP] \u200b"
    assert "nothing before it" in w.message.value and w.query.options == ()
    w.text.value = "So long and thanks for all the fish"
    assert w.message.value == "" and w.heatmap.value
    assert w.query.options[1] == ("1: so", 1) and (w.query.value, w.key.value) == (1, 0)


@pytest.mark.parametrize("kwargs, message", [
    ({"layer": 6}, "layer=6 is not a block of this model: pass layer=0 … 5 (or -1 for the last), the 0-based index "
                   "of attentions[layer], or layer='all' for every block. The dropdown shows the same blocks as "
                   "1 … 6: layer=0 is block 1, layer=5 is block 6."),
    ({"layer": -7}, "layer=-7 is not a block of this model: pass layer=0 … 5"),
    ({"layer": 1.0}, "layer=1.0 is not a block of this model"),
    ({"head": 12}, "head=12 is not a head of this model: pass head=0 … 11 (heads count from 0, as in the dropdown; "
                   "-1 for the last) or head='all' for all 12 side by side."),
    ({"head": "x"}, "head='x' is not a head of this model"),
    ({"head": True}, "head=True is not a head of this model"),
    ({"show": "weight"}, "show='weight': pass one of 'weights', 'scores', 'parts'"),
])
def test_widget_refuses_a_block_or_head_the_model_lacks_in_plain_words(embedded, kwargs, message):
    """layer=6 or head=12 raised traitlets' bare TraitError('Invalid selection: value not found')."""
    with pytest.raises(ValueError) as err:
        AttentionExplorer(*embedded, text="hello", **kwargs)
    assert str(err.value).startswith(message) and "TraitError" not in type(err.value).__name__


def test_widget_takes_the_last_block_and_head_from_the_end(embedded):
    w = AttentionExplorer(*embedded, text="hello world", layer=-1, head=-1)
    assert (w.layer.value, w.head.value, w.layer.label) == (5, 11, "6")
    assert "block 6" in w.readout.value and "head 11" in w.readout.value


def test_the_scores_toggle_names_the_heads_scaling(embedded):
    """The toggle read "raw scores QKᵀ/√d": the scores are divided by √d_h = √32, each head's size, not √d = √384."""
    w = AttentionExplorer(*embedded, text="hello world")
    assert dict(w.kind.options)["raw scores QKᵀ/√d_h"] == "scores"
    assert not [label for label, _ in w.kind.options if label.endswith("√d")]


def test_a_lower_case_sep_makes_a_pair_in_the_widget(embedded):
    w = AttentionExplorer(*embedded, text="The bank closed. [sep] Savers left.")
    tokens = [label.split(": ", 1)[1] for label, _ in w.query.options]
    assert tokens.count("[SEP]") == 2 and "sep" not in tokens and w.maps.boundary == tokens.index("[SEP]")
    assert w.message.value == ""


@pytest.mark.parametrize("typed", ["[CLS]", "[PAD]", "[MASK]"])
def test_a_special_token_typed_in_the_text_gets_a_note(embedded, typed):
    """A typed [CLS], [PAD] or [MASK] silently became that special token inside the sentence."""
    w = AttentionExplorer(*embedded, text=f"The bank {typed} closed. [SEP] Savers left.")
    tokens = [label.split(": ", 1)[1] for label, _ in w.query.options]
    assert typed in tokens and w.heatmap.value                         # still drawn: a note, not an error
    assert "note:" in w.message.value and "⚠" not in w.message.value
    assert f"{typed} typed in the text is a special token of the tokenizer: the model reads it as that token, not as a " \
           "word" in w.message.value
    w.layer.value = 2                                                  # the note stays through a redraw
    assert typed in w.message.value
    w.kind.value, w.layer.value = "parts", "all"                       # beside the parts' own note
    assert typed in w.message.value and "pick a block and a head" in w.message.value
    w.kind.value, w.layer.value = "weights", 0
    w.text.value = "So long and thanks for all the fish"                # the note goes with the text
    assert w.message.value == ""


def test_attention_cost_grows_quadratically():
    pts = attention_cost(lengths=(64, 128, 256), repeats=3)
    assert [p.n for p in pts] == [64, 128, 256]
    for small, big in zip(pts, pts[1:]):
        # doubling N: one (H, N, N) matrix is 4x larger, and so is the measured peak
        assert big.matrix_bytes == 4 * small.matrix_bytes
        assert 3.0 <= big.peak_bytes / small.peak_bytes <= 4.5
    assert all(p.peak_bytes >= p.matrix_bytes for p in pts)


def test_attention_cost_counts_exactly_and_times_on_one_thread():
    """The timings zig-zagged (0.10, 5.36, 0.32, 1.55, 38.71 ms) on a shared machine: the fastest of many calls on
    one thread is measured, and the exact sizes (the matrix, the FLOPs) carry the claims."""
    import torch

    threads = torch.get_num_threads()
    pts = attention_cost(lengths=(16, 32), heads=2, d_head=8, repeats=3, threads=1)
    assert torch.get_num_threads() == threads      # the setting is restored
    assert [p.matmul_flops for p in pts] == [2 * 2 * 2 * 16 * 16 * 8, 2 * 2 * 2 * 32 * 32 * 8]
    assert pts[1].matmul_flops == 4 * pts[0].matmul_flops and pts[1].matrix_bytes == 4 * pts[0].matrix_bytes
    assert all(p.seconds > 0 for p in pts)


def test_the_readout_is_the_cell_then_one_line_per_head_even_with_the_masked_note(embedded):
    """Beside the heat map the readout has a narrow column: the cell on one line, each head on its own."""
    w = AttentionExplorer(*embedded, text="so long and thanks", layer=0, head="all")
    w.causal.value = True
    w.query.value, w.key.value = 1, 3   # a key after its query: masked, and the note holds a ": "
    cell, table = w.readout.value.split("</span>", 1)
    assert "block 1, query" in cell and "masked: a causal model cannot look ahead" in cell and "<br>" not in cell
    rows = re.findall(r"<tr>(.*?)</tr>", table)
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", r) for r in rows[1:]]
    assert len(rows) == 1 + 6 and all(len(c) == 6 for c in cells)   # a header, then heads 0-5 beside 6-11
    heads = [c[k] for k in (0, 3) for c in cells]
    assert heads == [str(h) for h in range(12)] and {c[1] for c in cells} == {"0.000"}   # masked: weight 0
    w.head.value = 2
    lines = w.readout.value.split("<br>")
    assert len(lines) == 2 and lines[1].startswith("head 2: weight 0.000, score")
