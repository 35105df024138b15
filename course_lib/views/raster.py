"""Small raster pictures drawn directly with Pillow: heatmaps with readable labels, a colour bar, PNG bytes.

A widget redraws its picture on every move of a control; rendering a matplotlib figure into a PNG takes
100-1,500 ms (layout, every tick label, the Agg renderer), drawing the same pixels here takes a few ms. The
colours are matplotlib's colour maps (looked up as a 256-entry table), the font is the DejaVu Sans that
ships with matplotlib, so the pictures look like the library's figures.
"""
from __future__ import annotations

import functools
import io
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

BACKGROUND = (255, 255, 255)
INK = (0, 0, 0)


@functools.lru_cache(maxsize=16)
def font(size: int, bold: bool = False) -> ImageFont.FreeTypeFont:
    """DejaVu Sans (matplotlib's default font, shipped with it) at ``size`` pixels."""
    import matplotlib

    name = "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"
    return ImageFont.truetype(str(Path(matplotlib.get_data_path()) / "fonts" / "ttf" / name), size)


def text_width(text: str, f: ImageFont.FreeTypeFont) -> int:
    return int(np.ceil(f.getlength(text)))


def text_height(f: ImageFont.FreeTypeFont) -> int:
    """Height of a line (ascent + descent), the same for every text in one font."""
    ascent, descent = f.getmetrics()
    return ascent + descent


@functools.lru_cache(maxsize=8)
def colour_table(cmap: str) -> np.ndarray:
    """(256, 3) uint8: the colours of a matplotlib colour map at 256 evenly spaced values."""
    import matplotlib

    return (matplotlib.colormaps[cmap](np.linspace(0, 1, 256))[:, :3] * 255 + 0.5).astype(np.uint8)


def hex_rgb(colour: str) -> tuple[int, int, int]:
    colour = colour.lstrip("#")
    return tuple(int(colour[i:i + 2], 16) for i in (0, 2, 4))


def colour_cells(values: np.ndarray, cmap: str, lo: float, hi: float, bad: str = "#d9d9d9") -> np.ndarray:
    """(..., 3) uint8 colours of ``values`` on [lo, hi] (clipped); NaN cells get the colour ``bad``."""
    table = colour_table(cmap)
    span = hi - lo if hi > lo else 1.0
    nan = np.isnan(values)
    idx = np.clip(np.nan_to_num((values - lo) / span, nan=0.0) * 255 + 0.5, 0, 255).astype(np.intp)
    out = table[idx]
    if nan.any():
        out[nan] = hex_rgb(bad)
    return out


def upscale(cells: np.ndarray, size: int) -> np.ndarray:
    """(R, C, 3) cells -> (R*size, C*size, 3) pixels, each cell a size x size block."""
    return np.repeat(np.repeat(cells, size, axis=0), size, axis=1)


def rotated_labels(labels: list[str], step: int, length: int, f: ImageFont.FreeTypeFont) -> Image.Image:
    """Labels written bottom to top (rotated 90°), one every ``step`` pixels from the left, each ending at the top
    edge of an image ``length`` pixels high (like matplotlib's rotation=90 tick labels)."""
    h = text_height(f)
    strip = Image.new("RGB", (length, step * len(labels)), BACKGROUND)
    d = ImageDraw.Draw(strip)
    for i, s in enumerate(labels):
        d.text((length - 3 - text_width(s, f), i * step + (step - h) // 2), s, font=f, fill=INK)
    return strip.rotate(90, expand=True)


def rotated_text(text: str, f: ImageFont.FreeTypeFont) -> Image.Image:
    """One text, reading bottom to top."""
    img = Image.new("RGB", (text_width(text, f) + 2, text_height(f)), BACKGROUND)
    ImageDraw.Draw(img).text((1, 0), text, font=f, fill=INK)
    return img.rotate(90, expand=True)


def dashed_line(d: ImageDraw.ImageDraw, xy: tuple[int, int, int, int], colour, width: int = 1, dash: int = 4,
                gap: int = 3) -> None:
    """A horizontal or vertical dashed line from (x0, y0) to (x1, y1)."""
    x0, y0, x1, y1 = xy
    if x0 == x1:
        for y in range(y0, y1, dash + gap):
            d.line((x0, y, x1, min(y + dash, y1)), fill=colour, width=width)
    else:
        for x in range(x0, x1, dash + gap):
            d.line((x, y0, min(x + dash, x1), y1), fill=colour, width=width)


def colour_bar(height: int, cmap: str, lo: float, hi: float, label: str, f: ImageFont.FreeTypeFont,
               ticks: list[float] | None = None, width: int = 14) -> Image.Image:
    """A vertical colour bar with tick labels and a label on its right."""
    ticks = ticks if ticks is not None else list(np.linspace(lo, hi, 5))
    fmt = (lambda v: f"{v:.2f}") if hi - lo <= 2 else (lambda v: f"{v:.1f}")
    labels = [fmt(t) for t in ticks]
    lab_w = max(text_width(s, f) for s in labels)
    rot = rotated_text(label, f)
    h = text_height(f)
    img = Image.new("RGB", (width + 6 + lab_w + 6 + rot.width, height + h), BACKGROUND)
    top = h // 2
    grad = colour_table(cmap)[np.linspace(255, 0, height).round().astype(np.intp)]  # (height, 3), top = hi
    img.paste(Image.fromarray(np.repeat(grad[:, None, :], width, axis=1)), (0, top))
    d = ImageDraw.Draw(img)
    d.rectangle((0, top, width - 1, top + height - 1), outline=INK)
    span = hi - lo if hi > lo else 1.0
    for t, s in zip(ticks, labels):
        y = top + round((hi - t) / span * (height - 1))
        d.line((width, y, width + 3, y), fill=INK)
        d.text((width + 6, y - h // 2), s, font=f, fill=INK)
    img.paste(rot, (width + 6 + lab_w + 6, top + max(0, (height - rot.height) // 2)))
    return img


def png_bytes(img: Image.Image) -> bytes:
    """PNG bytes, compressed fast (these pictures are mostly flat colour and stay small)."""
    buf = io.BytesIO()
    img.save(buf, format="PNG", compress_level=1)
    return buf.getvalue()
