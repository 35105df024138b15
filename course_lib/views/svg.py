"""A few SVG building blocks for the widgets' charts: a plot area with linear or log axes, bars, lines, text.

The widgets redraw a chart on every move of a slider; writing a few hundred SVG elements as text takes about a
millisecond, where rendering the same chart with matplotlib into a PNG takes 100-1,000 ms. The charts keep
matplotlib's look where it matters for reading them: labelled axes, ticks, legends, the same colours.
"""
from __future__ import annotations

import html
import math

FONT = "DejaVu Sans, Verdana, sans-serif"


def esc(text) -> str:
    return html.escape(str(text), quote=True)


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` round tick values covering [lo, hi] (1, 2, 2.5 or 5 times a power of ten apart)."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / max(n - 1, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw * 0.999)
    first = math.ceil(lo / step - 1e-9) * step
    out, v = [], first
    while v <= hi + step * 1e-9:
        out.append(0.0 if abs(v) < step * 1e-9 else v)
        v += step
    return out


def tick_label(v: float, step: float) -> str:
    """``v`` with as many decimals as the tick step needs (0.25 -> 2, 0.2 -> 1, 5 -> 0), minus sign as in print."""
    d = 0
    while d < 6 and abs(step * 10 ** d - round(step * 10 ** d)) > 1e-6:
        d += 1
    return f"{v:.{d}f}".replace("-", "−")


class Plot:
    """One plot area inside an SVG: data coordinates -> pixels; ``log_y`` for a log-scaled y axis."""

    def __init__(self, x: float, y: float, w: float, h: float, xlim: tuple[float, float], ylim: tuple[float, float],
                 log_y: bool = False):
        self.x, self.y, self.w, self.h = x, y, w, h
        self.xlim, self.ylim, self.log_y = xlim, ylim, log_y

    def px(self, v: float) -> float:
        lo, hi = self.xlim
        return self.x + (v - lo) / ((hi - lo) or 1.0) * self.w

    def py(self, v: float) -> float:
        lo, hi = self.ylim
        if self.log_y:
            v, lo, hi = math.log10(max(v, 1e-300)), math.log10(lo), math.log10(hi)
        return self.y + self.h - (v - lo) / ((hi - lo) or 1.0) * self.h


class Svg:
    """Collects SVG elements; ``str(svg)`` is the document."""

    def __init__(self, width: int, height: int, css_class: str = "chart", font_size: int = 11):
        self.width, self.height = width, height
        self.parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="{esc(css_class)}" width="{width}" '
                      f'height="{height}" viewBox="0 0 {width} {height}" font-family="{FONT}" '
                      f'font-size="{font_size}">', f'<rect width="{width}" height="{height}" fill="white"/>']

    def add(self, element: str) -> None:
        self.parts.append(element)

    def rect(self, x, y, w, h, fill, stroke="none", extra: str = "", title: str | None = None) -> None:
        if w < 0:
            x, w = x + w, -w
        if h < 0:
            y, h = y + h, -h
        attrs = f'x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" fill="{fill}" stroke="{stroke}"'
        if extra:
            attrs += " " + extra
        self.parts.append(f"<rect {attrs}><title>{esc(title)}</title></rect>" if title else f"<rect {attrs}/>")

    def line(self, x1, y1, x2, y2, stroke="black", width: float = 1, dash: str | None = None) -> None:
        d = f' stroke-dasharray="{dash}"' if dash else ""
        self.parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{stroke}" '
                          f'stroke-width="{width}"{d}/>')

    def polyline(self, points, stroke="black", width: float = 1, dash: str | None = None, fill="none") -> None:
        d = f' stroke-dasharray="{dash}"' if dash else ""
        pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        self.parts.append(f'<polyline points="{pts}" fill="{fill}" stroke="{stroke}" stroke-width="{width}"{d}/>')

    def text(self, x, y, s, anchor: str = "start", size: int | None = None, weight: str | None = None,
             rotate: float | None = None, fill: str = "black", baseline: str = "central", css: str = "") -> None:
        attrs = [f'x="{x:.1f}"', f'y="{y:.1f}"', f'text-anchor="{anchor}"', f'dominant-baseline="{baseline}"']
        if size:
            attrs.append(f'font-size="{size}"')
        if weight:
            attrs.append(f'font-weight="{weight}"')
        if fill != "black":
            attrs.append(f'fill="{fill}"')
        if rotate is not None:
            attrs.append(f'transform="rotate({rotate} {x:.1f} {y:.1f})"')
        if css:
            attrs.append(f'class="{esc(css)}"')
        self.parts.append(f'<text {" ".join(attrs)}>{esc(s)}</text>')

    def lines(self, x, y, rows: list[str], step: float = 13, **kw) -> None:
        """Several lines of text, the first at ``y``."""
        for i, s in enumerate(rows):
            self.text(x, y + i * step, s, **kw)

    def hatch(self, name: str, colour: str, background: str) -> str:
        """Define a diagonal hatch fill (like matplotlib's '//'); returns the fill value to use."""
        self.parts.append(f'<defs><pattern id="{name}" width="6" height="6" patternUnits="userSpaceOnUse" '
                          f'patternTransform="rotate(45)"><rect width="6" height="6" fill="{background}"/>'
                          f'<line x1="0" y1="0" x2="0" y2="6" stroke="{colour}" stroke-width="1.6"/></pattern></defs>')
        return f"url(#{name})"

    # ------------------------------------------------------------------ axes
    def frame(self, p: Plot) -> None:
        self.rect(p.x, p.y, p.w, p.h, "none", stroke="black")

    def y_axis(self, p: Plot, ticks: list[float] | None = None, label: str = "", fmt=None, grid: bool = False) -> None:
        if p.log_y:
            lo, hi = (math.floor(math.log10(p.ylim[0]) + 1e-9), math.ceil(math.log10(p.ylim[1]) - 1e-9))
            ticks = [10.0 ** e for e in range(lo, hi + 1) if p.ylim[0] <= 10.0 ** e <= p.ylim[1] * (1 + 1e-9)]
            fmt = fmt or (lambda v: f"10^{round(math.log10(v))}")
        ticks = ticks if ticks is not None else nice_ticks(*p.ylim)
        step = (ticks[1] - ticks[0]) if len(ticks) > 1 else 1.0
        fmt = fmt or (lambda v: tick_label(v, step))
        for t in ticks:
            y = p.py(t)
            self.line(p.x - 4, y, p.x, y)
            if grid:
                self.line(p.x, y, p.x + p.w, y, stroke="#e6e6e6")
            label_text = fmt(t)
            if p.log_y and label_text.startswith("10^"):
                exp = label_text[3:].replace("-", "−")
                self.parts.append(f'<text x="{p.x - 6:.1f}" y="{y:.1f}" text-anchor="end" dominant-baseline="central">'
                                  f'10<tspan dy="-5" font-size="8">{esc(exp)}</tspan></text>')
            else:
                self.text(p.x - 6, y, label_text, anchor="end")
        if label:
            self.text(p.x - 46, p.y + p.h / 2, label, anchor="middle", rotate=-90)

    def x_axis(self, p: Plot, ticks: list[float] | None = None, label: str = "", fmt=None) -> None:
        ticks = ticks if ticks is not None else nice_ticks(*p.xlim)
        step = (ticks[1] - ticks[0]) if len(ticks) > 1 else 1.0
        fmt = fmt or (lambda v: tick_label(v, step))
        for t in ticks:
            x = p.px(t)
            self.line(x, p.y + p.h, x, p.y + p.h + 4)
            self.text(x, p.y + p.h + 13, fmt(t), anchor="middle")
        if label:
            self.text(p.x + p.w / 2, p.y + p.h + 32, label, anchor="middle")

    def legend(self, x: float, y: float, items: list[tuple[str, str]], step: float = 16) -> None:
        """items: (swatch SVG at (0, 0) of a 14 x 10 box, label)."""
        w = 24 + max((len(label) for _, label in items), default=0) * 6.3
        self.rect(x - 4, y - 9, w, step * len(items) + 4, "white", stroke="#cccccc", extra='fill-opacity="0.9"')
        for i, (swatch, label) in enumerate(items):
            yy = y + i * step
            self.parts.append(f'<g transform="translate({x:.1f} {yy - 5:.1f})">{swatch}</g>')
            self.text(x + 20, yy, label)

    def __str__(self) -> str:
        return "".join(self.parts) + "</svg>"

    def bytes(self) -> bytes:
        """The document as UTF-8, for an ipywidgets ``Image(format="svg+xml")``."""
        return str(self).encode("utf-8")
