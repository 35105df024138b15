"""What the attention explorer shows, computed without any widget (SLP3 §11.1, Fig. 11.1-11.2).

The widget in :mod:`course_lib.widgets` only draws these objects and wires the
controls; everything here is a plain function with a unit test.

    maps = attention_maps(model, tokenizer, "The bank raised its rates. [SEP] It was expected.")
    view = select_view(maps, layer=2, head=3, kind="weights")   # block 3 (index 2), head 3
    fig = draw_view(view)                       # a matplotlib Figure
    readout(maps, layer=2, head=3, query=1, key=2)

``layer`` is the 0-based index of a transformer *block*, as in ``attentions[layer]``: index 0 is block 1, whose
output is layer L1 (``hidden_states[1]``; L0 is the embedding output). Titles and readouts name the block,
"block 3", never "layer 2". Heads count from 0.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import torch
from matplotlib.figure import Figure

from ..model.bert import check_index

PAIR_SEPARATOR = "[SEP]"
MAX_EXPLORER_TOKENS = 64  # beyond this the labels of a T×T heatmap stop being readable
KINDS = ("weights", "scores")


class ExplorerInputError(ValueError):
    """Input the explorer cannot show; the message is meant for the person who typed it."""


def blank(text: str) -> bool:
    """True if ``text`` shows nothing: only white space and invisible format characters (Unicode category Cf:
    zero-width space and joiners, the byte-order mark, …), which ``str.strip`` keeps."""
    return all(c.isspace() or unicodedata.category(c) == "Cf" for c in text)


def parse_input(text: str) -> tuple[str, str | None]:
    """Split 'sentence A [SEP] sentence B' into a pair; plain text is one sentence. A side that is :func:`blank`
    counts as empty."""
    if not isinstance(text, str) or blank(text):
        raise ExplorerInputError("Type a sentence (or two sentences separated by [SEP]).")
    parts = text.split(PAIR_SEPARATOR)
    if len(parts) == 1:
        return text.strip(), None
    if len(parts) > 2:
        raise ExplorerInputError(
            f"Use [SEP] once, between two sentences: found it {len(parts) - 1} times. "
            "The model adds the [CLS] and final [SEP] itself."
        )
    a, b = (p.strip() for p in parts)
    if blank(a) or blank(b):
        raise _nothing_on_one_side("before" if blank(a) else "after")
    return a, b


def _nothing_on_one_side(side: str) -> ExplorerInputError:
    return ExplorerInputError(f"A sentence pair needs text on both sides of [SEP]; there is nothing {side} it.")


@dataclass
class AttentionMaps:
    """Every layer's attention for one input.

    tokens:  T subword strings, with [CLS] and [SEP]
    weights: (L, H, T, T) softmax weights
    scores:  (L, H, T, T) raw scores QKᵀ/√d_k, before masking
    mask:    (T, T) bool, True where a query may attend to a key
    boundary: index of the first [SEP] in a sentence pair, else None
    causal:  whether a causal mask was applied
    """

    tokens: list[str]
    weights: torch.Tensor
    scores: torch.Tensor
    mask: torch.Tensor
    boundary: int | None
    causal: bool

    @property
    def num_layers(self) -> int:
        return self.weights.size(0)

    @property
    def num_heads(self) -> int:
        return self.weights.size(1)


@torch.no_grad()
def attention_maps(model, tokenizer, text: str, causal: bool = False,
                   max_tokens: int = MAX_EXPLORER_TOKENS) -> AttentionMaps:
    """Run the model once on ``text`` (one sentence, or 'A [SEP] B') and keep all attention maps."""
    a, b = parse_input(text)
    # characters the tokenizer drops (control characters, a lone variation selector, …) leave a side without tokens
    if b is not None and not (tokenizer.tokenize(a) and tokenizer.tokenize(b)):
        raise _nothing_on_one_side("before" if not tokenizer.tokenize(a) else "after")
    if b is None and not tokenizer.tokenize(a):
        raise ExplorerInputError("Type a sentence (or two sentences separated by [SEP]): the tokenizer finds no "
                                 "token in this text.")
    try:
        enc = tokenizer(a, b) if b is not None else tokenizer(a)
    except ValueError as err:  # longer than the model's 512-token limit
        limit = tokenizer.model_max_length
        raise ExplorerInputError(f"The text is longer than the model's limit of {limit} tokens; shorten it.") from err
    T = enc.input_ids.size(1)
    if T > max_tokens:
        raise ExplorerInputError(
            f"The text has {T} tokens; the explorer shows at most {max_tokens} so that every token stays readable. "
            "Shorten it."
        )
    out = model(**enc.to(model.device), output_attentions=True, causal=causal)
    weights = torch.stack([w[0] for w in out.attentions]).float().cpu()  # (L, H, T, T)
    scores = torch.stack([s[0] for s in out.scores]).float().cpu()
    mask = torch.ones(T, T, dtype=torch.bool).tril() if causal else torch.ones(T, T, dtype=torch.bool)
    boundary = enc.tokens[0].index("[SEP]") if b is not None else None
    return AttentionMaps(enc.tokens[0], weights, scores, mask, boundary, causal)


@dataclass
class View:
    """One picture: a single head's (T, T) matrix, or all heads of a layer as (H, T, T)."""

    matrices: torch.Tensor  # (H, T, T); H = 1 for a single head
    heads: list[int]
    tokens: list[str]
    layer: int
    kind: str
    mask: torch.Tensor
    boundary: int | None
    title: str

    @property
    def value_range(self) -> tuple[float, float]:
        """Colour scale: weights on [0, 1]; scores symmetric around 0 over the allowed cells."""
        if self.kind == "weights":
            return 0.0, 1.0
        allowed = self.matrices[:, self.mask]
        m = float(allowed.abs().max()) if allowed.numel() else 1.0
        return -m, m


def select_view(maps: AttentionMaps, layer: int, head: int | str = "all", kind: str = "weights") -> View:
    """Pick what to draw: one head ('head=3') or the grid of all heads ('head="all"') of block ``layer + 1``."""
    if kind not in KINDS:
        raise ValueError(f"kind must be 'weights' or 'scores', not {kind!r}")
    layer = check_index("layer", layer, maps.num_layers)
    source = maps.weights if kind == "weights" else maps.scores
    if head == "all":
        heads = list(range(maps.num_heads))
    else:
        heads = [check_index("head", head, maps.num_heads)]
    what = "softmax weights" if kind == "weights" else "raw scores QKᵀ/√d_k"
    direction = "causal" if maps.causal else "bidirectional"
    where = f"block {layer + 1}, head {heads[0]}" if len(heads) == 1 else f"block {layer + 1}, all {len(heads)} heads"
    return View(source[layer, heads].clone(), heads, maps.tokens, layer, kind, maps.mask, maps.boundary,
                f"{where}: {what} ({direction})")


def readout_cell(maps: AttentionMaps, layer: int, head: int | str, query: int,
                 key: int) -> tuple[str, list[tuple[int, float, float]]]:
    """One cell, as :func:`readout` writes it: the line that names it, and (head, weight, score) for each head shown."""
    layer = check_index("layer", layer, maps.num_layers)
    T = len(maps.tokens)
    query, key = check_index("query token", query, T), check_index("key token", key, T)
    q, k = maps.tokens[query], maps.tokens[key]
    head_list = range(maps.num_heads) if head == "all" else [check_index("head", head, maps.num_heads)]
    masked = not bool(maps.mask[query, key])
    heads = [(h, float(maps.weights[layer, h, query, key]), float(maps.scores[layer, h, query, key]))
             for h in head_list]
    note = " (masked: a causal model cannot look ahead, so the weight is 0)" if masked else ""
    return f"block {layer + 1}, query {q!r} ({query}) → key {k!r} ({key}){note}", heads


def weight_and_score(weight: float, score: float) -> tuple[str, str]:
    """A cell's softmax weight and raw score as the readouts write them."""
    return f"{weight:.3f}", f"{score:+.2f}"


def head_numbers(h: int, weight: float, score: float) -> str:
    w, s = weight_and_score(weight, score)
    return f"head {h}: weight {w}, score {s}"


def readout(maps: AttentionMaps, layer: int, head: int | str, query: int, key: int) -> str:
    """One line about one cell: how much token `query` attends to token `key`."""
    cell, heads = readout_cell(maps, layer, head, query, key)
    return f"{cell}: " + "; ".join(head_numbers(*h) for h in heads)


# ----------------------------------------------------------------------------- drawing

WEIGHT_CMAP = "viridis"   # sequential, colour-blind safe
SCORE_CMAP = "PuOr_r"     # diverging, colour-blind safe, centred on 0


def draw_view(view: View, cell: tuple[int, int] | None = None) -> Figure:
    """Draw a View as a heatmap (one head) or a grid of heatmaps (all heads); return the Figure."""
    import matplotlib

    T = len(view.tokens)
    n = len(view.heads)
    cols = 1 if n == 1 else min(4, n)
    rows = -(-n // cols)
    size = 0.22 * T + 2.2 if n == 1 else 0.12 * T + 1.4
    fig = Figure(figsize=(min(size * cols + 1.2, 16), min(size * rows, 16) + 0.4), dpi=96, layout="constrained")
    # masked cells (scores view) in light grey
    cmap = matplotlib.colormaps[WEIGHT_CMAP if view.kind == "weights" else SCORE_CMAP].with_extremes(bad="#d9d9d9")
    lo, hi = view.value_range
    font = max(5, min(10, 260 // max(T, 1))) if n == 1 else max(4, min(7, 120 // max(T, 1)))
    axes = fig.subplots(rows, cols, squeeze=False)
    im = None
    for idx, ax in enumerate(axes.flat):
        if idx >= n:
            ax.set_visible(False)
            continue
        m = view.matrices[idx].clone()
        if view.kind == "scores":
            m[~view.mask] = float("nan")
        im = ax.imshow(m.numpy(), cmap=cmap, vmin=lo, vmax=hi, interpolation="nearest")
        first_col, last_row = idx % cols == 0, idx // cols == rows - 1 or idx + cols >= n
        ax.set_xticks(range(T), view.tokens if (n == 1 or last_row) else [], rotation=90, fontsize=font)
        ax.set_yticks(range(T), view.tokens if (n == 1 or first_col) else [], fontsize=font)
        if view.boundary is not None:
            for line in (ax.axhline, ax.axvline):
                line(view.boundary + 0.5, color="white", lw=1.2, ls="--")
        if n > 1:
            ax.set_title(f"head {view.heads[idx]}", fontsize=8)
        if cell is not None and n == 1:
            q, k = cell
            ax.add_patch(matplotlib.patches.Rectangle((k - 0.5, q - 0.5), 1, 1, fill=False, ec="#e66100", lw=2))
    if n == 1:
        axes[0, 0].set_xlabel("key: the token attended to")
        axes[0, 0].set_ylabel("query: the token attending")
    else:
        fig.supxlabel("key: the token attended to", fontsize=9)
        fig.supylabel("query: the token attending", fontsize=9)
    fig.suptitle(view.title, fontsize=10)
    fig.colorbar(im, ax=axes, shrink=0.8, label="weight" if view.kind == "weights" else "score")
    return fig


def heatmap_png(view: View, cell: tuple[int, int] | None = None) -> bytes:
    """The picture of :func:`draw_view` (same colours, labels, boundary and ringed cell) drawn directly as PNG bytes.

    A few milliseconds instead of the 0.2-1.5 s of rendering the matplotlib figure: this is what the explorer
    shows, redrawn on every change of layer, head, kind or cell.
    """
    import numpy as np
    from PIL import Image, ImageDraw

    from . import raster

    T, n = len(view.tokens), len(view.heads)
    cols = 1 if n == 1 else min(4, n)
    rows = -(-n // cols)
    if n == 1:
        c = int(min(30, max(10, 480 // max(T, 1))))
        f = raster.font(int(min(13, max(9, c - 3))))
    else:
        c = int(min(14, max(4, 200 // max(T, 1))))
        f = raster.font(int(min(10, max(7, c))))
    small, title_font = raster.font(11), raster.font(13)
    h = raster.text_height(f)
    side = T * c                                    # one heatmap, in pixels
    tick_w = max(raster.text_width(t, f) for t in view.tokens) + 6
    head_title = raster.text_height(small) + 4 if n > 1 else 0
    gap = 12 if n > 1 else 0
    ylabel = raster.rotated_text("query: the token attending", small)
    xlabel = "key: the token attended to"
    left = 6 + ylabel.width + 4 + tick_w
    top = raster.text_height(title_font) + 12
    grid_w, grid_h = cols * side + (cols - 1) * gap, rows * (side + head_title) + (rows - 1) * gap
    lo, hi = view.value_range
    cmap = WEIGHT_CMAP if view.kind == "weights" else SCORE_CMAP
    bar = raster.colour_bar(min(grid_h, max(120, side)), cmap, lo, hi, "weight" if view.kind == "weights" else "score",
                            small)
    width = left + grid_w + 16 + bar.width + 8
    height = top + grid_h + tick_w + raster.text_height(small) + 10
    img = Image.new("RGB", (width, height), raster.BACKGROUND)
    d = ImageDraw.Draw(img)
    d.text(((width - raster.text_width(view.title, title_font)) // 2, 6), view.title, font=title_font, fill=raster.INK)

    values = view.matrices.float().numpy().copy()            # (n, T, T)
    if view.kind == "scores":
        values[:, ~view.mask.numpy()] = np.nan                # masked cells in grey, as in draw_view
    colours = raster.colour_cells(values, cmap, lo, hi)       # (n, T, T, 3)
    xticks = raster.rotated_labels(view.tokens, c, tick_w, f)
    for idx in range(n):
        r, k = divmod(idx, cols)
        x0 = left + k * (side + gap)
        y0 = top + r * (side + head_title + gap) + head_title
        if n > 1:
            name = f"head {view.heads[idx]}"
            d.text((x0 + (side - raster.text_width(name, small)) // 2, y0 - head_title), name, font=small,
                   fill=raster.INK)
        img.paste(Image.fromarray(raster.upscale(colours[idx], c)), (x0, y0))
        d.rectangle((x0 - 1, y0 - 1, x0 + side, y0 + side), outline=raster.INK)
        if view.boundary is not None:
            b = (view.boundary + 1) * c
            raster.dashed_line(d, (x0 + b, y0, x0 + b, y0 + side), (255, 255, 255), width=2 if n == 1 else 1)
            raster.dashed_line(d, (x0, y0 + b, x0 + side, y0 + b), (255, 255, 255), width=2 if n == 1 else 1)
        if k == 0:  # token labels on the left of the first column
            for t, tok in enumerate(view.tokens):
                d.text((x0 - 4 - raster.text_width(tok, f), y0 + t * c + (c - h) // 2), tok, font=f, fill=raster.INK)
        if r == rows - 1 or idx + cols >= n:  # and under the bottom row
            img.paste(xticks, (x0, y0 + side + 2))
        if cell is not None and n == 1:
            q, kk = cell
            d.rectangle((x0 + kk * c - 1, y0 + q * c - 1, x0 + (kk + 1) * c, y0 + (q + 1) * c), outline="#e66100",
                        width=2)
    img.paste(ylabel, (6, top + (grid_h - ylabel.height) // 2))
    d.text((left + (grid_w - raster.text_width(xlabel, small)) // 2, top + grid_h + tick_w + 4), xlabel, font=small,
           fill=raster.INK)
    img.paste(bar, (left + grid_w + 16, top + head_title - raster.text_height(small) // 2))
    return raster.png_bytes(img)
