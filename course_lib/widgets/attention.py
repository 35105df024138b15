"""Attention explorer: pick a sentence (or pair), a block (1 … L) and a head; see weights or raw scores, or how
one query's scores are made from its query and key vectors, dimension by dimension. "all" blocks and "all" heads
show every head of every block at once (the model view).

All numbers come from :mod:`course_lib.views.attention`; this module only wires controls
to those functions and shows the PNG they draw. The model runs once per text and
causal setting (one forward keeps every layer's and head's weights and scores; the last few
inputs are remembered, so toggling the causal mask back and forth does not run it again);
changing layer, head, kind or the selected cell only redraws, with
:func:`~course_lib.views.attention.heatmap_png` (a few ms, not a matplotlib figure).
"""
from __future__ import annotations

import html

import ipywidgets as W

from ..views.attention import (ExplorerInputError, attention_maps, head_numbers, heatmap_png, input_notes,
                               readout_cell, select_view, weight_and_score)
from ..views.common import error_html, note_html
from ..views.score_parts import parts_png, score_parts

DEFAULT_TEXT = "The bank raised its interest rates. [SEP] Savers were pleased."
SHOW = ("weights", "scores", "parts")
SCORES_LABEL = "raw scores QKᵀ/√d_h"  # each head's scores, divided by the root of its own size d_h = d/H
REMEMBERED = 16  # (text, causal) inputs whose maps are kept
CONTROLS_WIDTH = "390px"
# 480 px on a 720-pixel slide at JupyterLab's 13-pixel code, less with the lecture preset's larger code: the deck's
# margin, the cell's few lines of code and the text box fit above it
HEATMAP_MAX_HEIGHT = "calc(100vh - 175px - 5 * var(--jp-code-font-size, 13px))"


class AttentionExplorer(W.VBox):
    """``AttentionExplorer(model, tokenizer)``: display it as the last line of a cell.

    ``layer`` is the 0-based index of the block to show first (0 = block 1, as in ``attentions[0]``; -1 = the
    last) or ``"all"``; the dropdown, labelled "block", lists the blocks as 1..L. ``head`` is a head index from 0
    (-1 = the last) or ``"all"``. ``show`` is ``"weights"``, ``"scores"`` or ``"parts"`` (how the query's scores
    are made). Anything else raises a ValueError that says which values are valid.
    """

    def __init__(self, model, tokenizer, text: str = DEFAULT_TEXT, layer: int | str = 0, head: int | str = 0,
                 show: str = "weights"):
        self.model, self.tokenizer = model, tokenizer
        self.maps = None
        self._notes = ""  # what the text is read as, otherwise than typed (note_html), kept above every redraw
        self._maps: dict[tuple[str, bool], object] = {}
        self._updating = False
        L, H = model.config.num_hidden_layers, model.config.num_attention_heads
        layer, head = _start_layer(layer, L), _start_head(head, H)
        self.text = W.Text(value=text, description="text", continuous_update=False,
                           placeholder="a sentence, or: sentence A [SEP] sentence B",
                           layout=W.Layout(width="95%"))
        # blocks are shown as 1..L (block ℓ's output is layer Lℓ); the value stays the 0-based index (attentions[i])
        self.layer = W.Dropdown(options=[("all", "all")] + [(str(i + 1), i) for i in range(L)], value=layer,
                                description="block", layout=W.Layout(width="160px"))
        self.head = W.Dropdown(options=["all"] + list(range(H)), value=head, description="head",
                               layout=W.Layout(width="160px"))
        if show not in SHOW:
            raise ValueError(f"show={show!r}: pass one of {', '.join(map(repr, SHOW))}")
        self.kind = W.ToggleButtons(options=[("softmax weights", "weights"), (SCORES_LABEL, "scores"),
                                             ("q·k part by part", "parts")],
                                    value=show, description="show",
                                    style={"description_width": "40px", "button_width": "150px"})
        self.causal = W.Checkbox(value=False, description="causal mask (hide future tokens)", indent=False)
        self.query = W.Dropdown(description="query", layout=W.Layout(width="220px"))
        self.key = W.Dropdown(description="key", layout=W.Layout(width="220px"))
        self.message = W.HTML()
        self.readout = W.HTML()
        # the heat map takes the room beside the controls and never more than the window's height less the room its
        # cell and the text box take: on a 1280x720 slide it shows whole below the code that makes it, scaled down
        # (object-fit keeps its proportions); in a notebook it is about the size it is drawn
        self.heatmap = W.Image(format="png", layout=W.Layout(
            flex="1 1 auto", min_width="0", width="auto", height="auto", max_height=HEATMAP_MAX_HEIGHT,
            object_fit="contain", object_position="left top"))
        for w, cls in [(self.text, "explorer-text"), (self.layer, "explorer-layer"), (self.head, "explorer-head"),
                       (self.kind, "explorer-kind"), (self.causal, "explorer-causal"), (self.query, "explorer-query"),
                       (self.key, "explorer-key"), (self.message, "explorer-message"),
                       (self.readout, "explorer-readout"), (self.heatmap, "explorer-heatmap")]:
            w.add_class(cls)
        # the controls in a column on the left, the heat map on the right: stacked, they left no room on a slide
        controls = W.VBox([W.HBox([self.layer, self.head]), self.causal, self.kind, self.query, self.key,
                           self.readout], layout=W.Layout(width=CONTROLS_WIDTH, flex="0 0 auto"))
        super().__init__([
            self.text,
            self.message,
            W.HBox([controls, self.heatmap], layout=W.Layout(align_items="flex-start", width="100%")),
        ])
        self.add_class("attention-explorer")
        self.text.observe(self._recompute, "value")
        self.causal.observe(self._recompute, "value")
        for w in (self.layer, self.head, self.kind, self.query, self.key):
            w.observe(self._redraw, "value")
        self._recompute()

    # ------------------------------------------------------------------ callbacks
    def _recompute(self, _change=None):
        try:
            self.maps = self._attention_maps(self.text.value, self.causal.value)
        except ExplorerInputError as err:
            self._show_error(str(err))
            return
        self._notes = "<br>".join(note_html(n) for n in input_notes(self.tokenizer, self.text.value))
        labels = [(f"{i}: {t}", i) for i, t in enumerate(self.maps.tokens)]
        self._set_cells(labels, min(1, len(labels) - 1), 0)
        self._redraw()

    def _set_cells(self, labels: list, query, key):
        """New query/key choices, without a redraw for each of the four changes."""
        self._updating = True
        try:
            self.query.options, self.key.options = labels, labels
            self.query.value, self.key.value = query, key
        finally:
            self._updating = False

    def _attention_maps(self, text: str, causal: bool):
        """One forward per (text, causal), remembered for the last REMEMBERED inputs."""
        key = (text, bool(causal))
        if key not in self._maps:
            maps = attention_maps(self.model, self.tokenizer, text, causal=causal)
            if len(self._maps) >= REMEMBERED:
                self._maps.pop(next(iter(self._maps)))
            self._maps[key] = maps
        return self._maps[key]

    def _redraw(self, _change=None):
        if self.maps is None or self._updating or self.query.value is None:
            return
        self.message.value = self._notes
        self.heatmap.layout.display = ""
        q, k = self.query.value, self.key.value
        layer, head = self.layer.value, self.head.value
        if self.kind.value == "parts":
            if layer == "all" or head == "all":
                self._show_note("q·k part by part shows one head: pick a block and a head (not “all”).")
                return
            parts = score_parts(self.maps, layer, head, q)
            self.heatmap.value = parts_png(parts, key=k)
            self.readout.value = "<span style='font-family:monospace'>" + html.escape(parts.describe(k)) + "</span>"
            return
        view = select_view(self.maps, layer, head, self.kind.value)
        self.heatmap.value = heatmap_png(view, cell=(q, k))
        self.readout.value = _readout_html(*readout_cell(self.maps, layer, head, q, k))

    def _show_note(self, text: str):
        """Nothing to draw for this choice of controls (not an error: the text and its tokens stay)."""
        self.message.value = "<br>".join(filter(None, [self._notes, f"<i>{html.escape(text)}</i>"]))
        self.readout.value = ""
        self.heatmap.value = b""
        self.heatmap.layout.display = "none"

    def _show_error(self, text: str):
        self.maps = None
        self._set_cells([], None, None)  # the previous text's tokens must not stay beside the message
        self.readout.value = ""
        self.heatmap.value = b""
        self.heatmap.layout.display = "none"  # no broken-image icon while there is nothing to show
        self.message.value = error_html(text)


def _readout_html(cell: str, maps: list[tuple[str, float, float]]) -> str:
    """The readout in the controls' column: the cell on one line, then its map's weight and score on the next, or,
    for several maps ("head 3", … or "block 2", …), a table of them in two columns (the numbers written by
    ``weight_and_score``); for every head of every block, the cell alone."""
    out = "<span style='font-family:monospace'>" + html.escape(cell)
    if not maps:
        return out + "</span>"
    if len(maps) == 1:
        return out + "<br>" + html.escape(head_numbers(*maps[0])) + "</span>"
    what = maps[0][0].split()[0]                                  # "head" or "block"
    rows = [(name.split()[-1], *weight_and_score(w, s)) for name, w, s in maps]
    half = -(-len(rows) // 2)
    td = "<td style='padding:0 6px;text-align:right'>{}</td>"
    head = "".join(f"<th style='padding:0 6px;text-align:right'>{t}</th>" for t in (what, "weight", "score") * 2)
    body = ""
    for i in range(half):
        pair = [rows[i]] + ([rows[i + half]] if i + half < len(rows) else [])
        body += "<tr>" + "".join(td.format(v) for r in pair for v in r) + "</tr>"
    return out + f"</span><table style='font-family:monospace;font-size:90%'><tr>{head}</tr>{body}</table>"


def _start_layer(layer, n: int) -> int | str:
    """``layer`` as the dropdown's value ("all" or 0 … n-1), or a ValueError in the words of the dropdown."""
    if layer == "all":
        return layer
    if isinstance(layer, bool) or not isinstance(layer, int) or not -n <= layer < n:
        raise ValueError(f"layer={layer!r} is not a block of this model: pass layer=0 … {n - 1} (or -1 for the last), "
                         f"the 0-based index of attentions[layer], or layer='all' for every block. The dropdown "
                         f"shows the same blocks as 1 … {n}: layer=0 is block 1, layer={n - 1} is block {n}.")
    return layer % n


def _start_head(head, n: int) -> int | str:
    """``head`` as the dropdown's value ("all" or 0 … n-1), or a ValueError that names the valid values."""
    if head == "all":
        return head
    if isinstance(head, bool) or not isinstance(head, int) or not -n <= head < n:
        raise ValueError(f"head={head!r} is not a head of this model: pass head=0 … {n - 1} (heads count from 0, "
                         f"as in the dropdown; -1 for the last) or head='all' for all {n} side by side.")
    return head % n
