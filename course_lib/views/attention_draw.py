"""The attention explorer's pictures: a :class:`~course_lib.views.attention.View` drawn as a matplotlib Figure
(:func:`draw_view`) or, for the widget, directly as PNG bytes in a few milliseconds (:func:`heatmap_png`).

One head is a heat map with every token labelled; a grid shows several maps (the heads of a block, or one head
in every block) with the tokens on its outer edges; the "model view", every head of every block, is a block per
row and a head per column, small maps without token labels (as in bertviz's model view).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from matplotlib.figure import Figure

if TYPE_CHECKING:
    from .attention import View

WEIGHT_CMAP = "viridis"   # sequential, colour-blind safe
SCORE_CMAP = "PuOr_r"     # diverging, colour-blind safe, centred on 0
RING = "#e66100"          # the selected cell


def grid_shape(view: View) -> tuple[int, int]:
    """(rows, columns) of the maps: a block's heads four to a row, a head's blocks in two rows, the model view a
    row per block."""
    n = len(view.heads)
    if n == 1:
        return 1, 1
    if view.model_view:
        rows = len(set(view.blocks))
        return rows, n // rows
    cols = -(-n // 2) if view.layer == "all" and n <= 8 else min(4, n)
    return -(-n // cols), cols


def draw_view(view: View, cell: tuple[int, int] | None = None) -> Figure:
    """Draw a View as a heatmap (one head) or a grid of heatmaps; return the Figure."""
    import matplotlib

    T = len(view.tokens)
    n = len(view.heads)
    rows, cols = grid_shape(view)
    size = 0.22 * T + 2.2 if n == 1 else (0.05 * T + 0.6 if view.model_view else 0.12 * T + 1.4)
    fig = Figure(figsize=(min(size * cols + 1.2, 16), min(size * rows, 16) + 0.4), dpi=96, layout="constrained")
    # masked cells (scores view) in light grey
    cmap = matplotlib.colormaps[WEIGHT_CMAP if view.kind == "weights" else SCORE_CMAP].with_extremes(bad="#d9d9d9")
    lo, hi = view.value_range
    font = max(5, min(10, 260 // max(T, 1))) if n == 1 else max(4, min(7, 120 // max(T, 1)))
    axes = fig.subplots(rows, cols, squeeze=False)
    names = view.names
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
        if view.model_view:  # too small for tokens: the heads over the first row, the blocks left of each row
            ax.set_xticks([])
            ax.set_yticks([])
            if idx < cols:
                ax.set_title(f"head {view.heads[idx]}", fontsize=7)
            if first_col:
                ax.set_ylabel(f"block {view.blocks[idx] + 1}", fontsize=7)
        else:
            ax.set_xticks(range(T), view.tokens if (n == 1 or last_row) else [], rotation=90, fontsize=font)
            ax.set_yticks(range(T), view.tokens if (n == 1 or first_col) else [], fontsize=font)
            if n > 1:
                ax.set_title(names[idx], fontsize=8)
        if view.boundary is not None:
            for line in (ax.axhline, ax.axvline):
                line(view.boundary + 0.5, color="white", lw=1.2 if not view.model_view else 0.6, ls="--")
        if cell is not None and n == 1:
            q, k = cell
            ax.add_patch(matplotlib.patches.Rectangle((k - 0.5, q - 0.5), 1, 1, fill=False, ec=RING, lw=2))
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
    shows, redrawn on every change of block, head, kind or cell.
    """
    import numpy as np
    from PIL import Image, ImageDraw

    from . import raster

    T, n = len(view.tokens), len(view.heads)
    rows, cols = grid_shape(view)
    small, title_font = raster.font(11), raster.font(13)
    if n == 1:
        c = int(min(30, max(10, 480 // max(T, 1))))
        f = raster.font(int(min(13, max(9, c - 3))))
    elif view.model_view:
        c = int(min(6, max(1, 72 // max(T, 1))))
        f = small
    else:
        c = int(min(14, max(4, 200 // max(T, 1))))
        f = raster.font(int(min(10, max(7, c))))
    h = raster.text_height(f)
    side = T * c                                    # one heatmap, in pixels
    # token labels beside the maps; in the model view, the blocks' names instead (and no token under the maps)
    row_names = [f"block {b + 1}" for b in sorted(set(view.blocks))] if view.model_view else view.tokens
    tick_w = max(raster.text_width(t, f) for t in row_names) + 6
    head_title = raster.text_height(small) + 4 if n > 1 else 0
    gap = (6 if view.model_view else 12) if n > 1 else 0
    under = 0 if view.model_view else tick_w
    ylabel = raster.rotated_text("query: the token attending", small)
    xlabel = "key: the token attended to" + (" (in every small map)" if view.model_view else "")
    left = 6 + ylabel.width + 4 + tick_w
    top = raster.text_height(title_font) + 12
    grid_w, grid_h = cols * side + (cols - 1) * gap, rows * (side + head_title) + (rows - 1) * gap
    if view.model_view:  # the heads' names over the first row only
        grid_h = head_title + rows * side + (rows - 1) * gap
    lo, hi = view.value_range
    cmap = WEIGHT_CMAP if view.kind == "weights" else SCORE_CMAP
    bar = raster.colour_bar(min(grid_h, max(120, side)), cmap, lo, hi, "weight" if view.kind == "weights" else "score",
                            small)
    width = max(left + grid_w + 16 + bar.width + 8, raster.text_width(view.title, title_font) + 12)
    height = top + grid_h + under + raster.text_height(small) + 10
    img = Image.new("RGB", (width, height), raster.BACKGROUND)
    d = ImageDraw.Draw(img)
    d.text(((width - raster.text_width(view.title, title_font)) // 2, 6), view.title, font=title_font, fill=raster.INK)

    values = view.matrices.float().numpy().copy()            # (n, T, T)
    if view.kind == "scores":
        values[:, ~view.mask.numpy()] = np.nan                # masked cells in grey, as in draw_view
    colours = raster.colour_cells(values, cmap, lo, hi)       # (n, T, T, 3)
    xticks = None if view.model_view else raster.rotated_labels(view.tokens, c, tick_w, f)
    names = view.names
    for idx in range(n):
        r, k = divmod(idx, cols)
        x0 = left + k * (side + gap)
        if view.model_view:
            y0 = top + head_title + r * (side + gap)
            if r == 0:
                name = f"head {view.heads[idx]}"
                d.text((x0 + (side - raster.text_width(name, small)) // 2, top), name, font=small, fill=raster.INK)
            if k == 0:
                name = row_names[r]
                d.text((x0 - 4 - raster.text_width(name, f), y0 + (side - h) // 2), name, font=f, fill=raster.INK)
        else:
            y0 = top + r * (side + head_title + gap) + head_title
            if n > 1:
                d.text((x0 + (side - raster.text_width(names[idx], small)) // 2, y0 - head_title), names[idx],
                       font=small, fill=raster.INK)
            if k == 0:  # token labels on the left of the first column
                for t, tok in enumerate(view.tokens):
                    d.text((x0 - 4 - raster.text_width(tok, f), y0 + t * c + (c - h) // 2), tok, font=f,
                           fill=raster.INK)
            if r == rows - 1 or idx + cols >= n:  # and under the bottom row
                img.paste(xticks, (x0, y0 + side + 2))
        img.paste(Image.fromarray(raster.upscale(colours[idx], c)), (x0, y0))
        d.rectangle((x0 - 1, y0 - 1, x0 + side, y0 + side), outline=raster.INK)
        if view.boundary is not None:
            b = (view.boundary + 1) * c
            raster.dashed_line(d, (x0 + b, y0, x0 + b, y0 + side), (255, 255, 255), width=2 if n == 1 else 1)
            raster.dashed_line(d, (x0, y0 + b, x0 + side, y0 + b), (255, 255, 255), width=2 if n == 1 else 1)
        if cell is not None and n == 1:
            q, kk = cell
            d.rectangle((x0 + kk * c - 1, y0 + q * c - 1, x0 + (kk + 1) * c, y0 + (q + 1) * c), outline=RING, width=2)
    img.paste(ylabel, (6, top + (grid_h - ylabel.height) // 2))
    d.text((left + (grid_w - raster.text_width(xlabel, small)) // 2, top + grid_h + under + 4), xlabel, font=small,
           fill=raster.INK)
    img.paste(bar, (left + grid_w + 16, top + head_title - raster.text_height(small) // 2))
    return raster.png_bytes(img)
