"""What the 11.3 widgets show, computed without any widget: sense scatter plots, WSD readouts, anisotropy plots.

Colours are the Okabe-Ito palette, and every sense also has its own marker shape, so
colour is never the only cue. The scatter plot is inline SVG: hovering a point shows
its sentence (a plain SVG <title>, no JavaScript).
"""
from __future__ import annotations

import html
import re
import textwrap
from dataclasses import dataclass

import numpy as np
import torch
from matplotlib.figure import Figure

from ..embeddings.geometry import ROGUE_SHARE, is_rogue
from ..embeddings.wsd import FLOOR_QUANTILE, Neighbour, WSDReadout, wsd_readout  # noqa: F401 - the readout, re-exported
from ..embeddings.senses import SenseExample

OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]
MARKERS = ["circle", "square", "triangle", "diamond"]
POINT_STYLE = 'stroke="white" stroke-width="0.8" fill-opacity="0.85"'
RAW_COLOUR, Z_COLOUR, ROGUE_COLOUR = "#0072B2", "#E69F00", "#D55E00"


# ----------------------------------------------------------------------------- sense clusters (SVG scatter)

def _marker_svg(shape: str, x: float, y: float, r: float, fill: str, extra: str = "") -> str:
    if shape == "square":
        return f'<rect x="{x - r:.1f}" y="{y - r:.1f}" width="{2 * r:.1f}" height="{2 * r:.1f}" fill="{fill}" {extra}/>'
    if shape == "triangle":
        pts = f"{x:.1f},{y - 1.2 * r:.1f} {x - 1.1 * r:.1f},{y + 0.8 * r:.1f} {x + 1.1 * r:.1f},{y + 0.8 * r:.1f}"
        return f'<polygon points="{pts}" fill="{fill}" {extra}/>'
    if shape == "diamond":
        pts = f"{x:.1f},{y - 1.3 * r:.1f} {x + 1.3 * r:.1f},{y:.1f} {x:.1f},{y + 1.3 * r:.1f} {x - 1.3 * r:.1f},{y:.1f}"
        return f'<polygon points="{pts}" fill="{fill}" {extra}/>'
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" fill="{fill}" {extra}/>'


def sense_scatter_svg(coords: np.ndarray, senses: list[str], texts: list[str], *, highlight: int | None = None,
                      title: str = "", width: int = 640, height: int = 440) -> str:
    """A scatter plot of 2-D points coloured and shaped by sense, with a legend; hover a point for its sentence."""
    coords = np.asarray(coords, dtype=float)
    if len(coords) != len(senses) or len(senses) != len(texts):
        raise ValueError(f"{len(coords)} points, {len(senses)} senses and {len(texts)} texts: they must match")
    order = list(dict.fromkeys(senses))
    style = {s: (OKABE_ITO[i % len(OKABE_ITO)], MARKERS[i % len(MARKERS)]) for i, s in enumerate(order)}
    left, right, top, bottom = 50, 200, 36, 44
    pw, ph = width - left - right, height - top - bottom
    lo, hi = coords.min(0), coords.max(0)
    span = np.where(hi - lo > 0, hi - lo, 1.0)
    px = left + 8 + (coords[:, 0] - lo[0]) / span[0] * (pw - 16)
    py = top + ph - 8 - (coords[:, 1] - lo[1]) / span[1] * (ph - 16)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="sense-scatter" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
             f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="white" stroke="#888"/>',
             f'<text x="{left + pw / 2}" y="{height - 12}" text-anchor="middle">UMAP dimension 1</text>',
             f'<text transform="translate(16 {top + ph / 2}) rotate(-90)" text-anchor="middle">UMAP dimension 2</text>',
             f'<text x="{left}" y="22" font-size="14" font-weight="bold">{html.escape(title)}</text>']
    for i, (x, y) in enumerate(zip(px, py)):
        colour, shape = style[senses[i]]
        tip = f"<title>{html.escape(senses[i])}: {html.escape(texts[i])}</title>"
        marker = _marker_svg(shape, x, y, 5, colour, POINT_STYLE)
        parts.append(f'<g class="point" data-index="{i}">{marker}{tip}</g>')
    if highlight is not None:
        if not 0 <= highlight < len(coords):
            raise IndexError(f"point {highlight} does not exist: there are {len(coords)} points")
        parts.append(f'<circle class="highlight" cx="{px[highlight]:.1f}" cy="{py[highlight]:.1f}" r="10" fill="none" '
                     'stroke="black" stroke-width="2.5"/>')
    lx = left + pw + 14
    parts.append(f'<text x="{lx}" y="{top + 4}" font-weight="bold">sense</text>')
    for k, s in enumerate(order):
        colour, shape = style[s]
        y = top + 24 + 22 * k
        n = senses.count(s)
        parts.append(_marker_svg(shape, lx + 6, y - 4, 6, colour))
        parts.append(f'<text x="{lx + 18}" y="{y}">{html.escape(s)} ({n})</text>')
    parts.append("</svg>")
    return "".join(parts)


def marked_html(e: SenseExample) -> str:
    """The sentence with its target word in bold."""
    return f"{html.escape(e.text[:e.start])}<b>{html.escape(e.word)}</b>{html.escape(e.text[e.end:])}"


# ----------------------------------------------------------------------------- nearest-neighbour WSD readout

_SUFFIXES = ("'s", "s'", "es", "s", "ies")


def find_lemma(word: str, lemmas) -> str | None:
    """The lemma of the sense data that ``word`` is a form of (bank, Banks, bank's -> bank), or None."""
    w = word.strip().lower().strip(".,;:!?\"'()")
    lemmas = set(lemmas)
    if w in lemmas:
        return w
    for suf in _SUFFIXES:
        if w.endswith(suf):
            stem = w[: -len(suf)] + ("y" if suf == "ies" else "")
            if stem in lemmas:
                return stem
    return {"mice": "mouse"}.get(w) if {"mice": "mouse"}.get(w) in lemmas else None


def draw_sense_scores(r: WSDReadout) -> Figure:
    """Horizontal bars: cosine to each sense centroid, labelled with the sense and its WordNet gloss."""
    n = len(r.senses)
    fig = Figure(figsize=(8, 0.9 + 0.75 * n), dpi=100)
    ax = fig.subplots()
    y = np.arange(n)[::-1]
    colours = [OKABE_ITO[0] if s == r.predicted else "#9e9e9e" for s in r.senses]
    ax.barh(y, r.cosines, color=colours, height=0.6)
    labels = [f"{s}\n" + textwrap.shorten(g, 60, placeholder="…") for s, g in zip(r.senses, r.glosses)]
    ax.set_yticks(y, labels, fontsize=9)
    for yy, c in zip(y, r.cosines):
        ax.text(c + 0.01, yy, f"{c:.3f}", va="center", fontsize=9)
    lo = min(0.0, min(r.cosines) - 0.05)
    ax.set_xlim(lo, max(1.0, max(r.cosines) + 0.12))
    if r.floor is not None:
        ax.axvline(r.floor, color=FLOOR_COLOUR, ls="--", lw=1.5, label=FLOOR_LABEL)
        ax.legend(fontsize=8, loc="lower right")
    ax.set_xlabel("cosine with the sense centroid (eq. 11.9)")
    ax.set_title(f"'{r.lemma}': nearest sense = {r.predicted}", fontsize=11)
    fig.tight_layout()
    return fig


FLOOR_COLOUR = "#000000"
FLOOR_LABEL = f"{FLOOR_QUANTILE:.0%} of training sentences are below (to their own sense)"


def neighbours_html(r: WSDReadout) -> str:
    rows = "".join(f"<li>{html.escape(nb.example.sense)} · cosine {nb.cosine:.3f}: {marked_html(nb.example)}</li>"
                   for nb in r.neighbours)
    return f"<div class='wsd-neighbours'><b>nearest training sentences</b><ol>{rows}</ol></div>"


@dataclass(frozen=True)
class WordChoice:
    """One occurrence of a word in a sentence, as the target-word chooser lists it."""

    label: str   # the word as written; from its second occurrence on with the count: "bank (2nd)"
    word: str    # the word as written
    start: int   # its characters, sentence[start:end]
    end: int


# a word: letters and digits with a letter among them; an apostrophe between two of them stays inside
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


def ordinal(n: int) -> str:
    """1 -> '1st', 2 -> '2nd', 11 -> '11th', 23 -> '23rd'."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def sentence_words(sentence: str) -> list[WordChoice]:
    """Every word of a sentence, in order, each occurrence its own choice: the second *bank* of a sentence is
    "bank (2nd)" (occurrences counted whatever the case).

    Words split where the tokenizer's pre-tokenization splits, at whitespace and at punctuation, hyphens
    included: *river-bank* is *river* and *bank*. Only an apostrophe between letters stays inside a word
    (*bank's*), as in the target words of the sense data; its tokens are then pooled together.
    """
    seen: dict[str, int] = {}
    out = []
    for m in _WORD.finditer(sentence):
        word = m.group(0)
        if not any(ch.isalpha() for ch in word):
            continue
        n = seen[word.lower()] = seen.get(word.lower(), 0) + 1
        out.append(WordChoice(word if n == 1 else f"{word} ({ordinal(n)})", word, m.start(), m.end()))
    return out


# ----------------------------------------------------------------------------- anisotropy and z-scoring

SHARE_TITLE = "each dimension's part of the mean cosine"
SHARE_LABEL = "(E[û_i])²: the parts add up to it"


def top_legend(rogue: list[int], top_share: float | None) -> str:
    """The marked dimensions' legend: rogue only when they carry ROGUE_SHARE of the mean cosine (or no share given)."""
    if top_share is None or is_rogue(top_share):
        return "rogue (largest share of the mean cosine)"
    return f"top {len(rogue)}: {top_share:.0%} of it, not rogue (< {ROGUE_SHARE:.0%})"


def draw_anisotropy(raw: torch.Tensor, z: torch.Tensor, share: torch.Tensor, rogue: list[int], title: str,
                    top_share: float | None = None) -> Figure:
    """Left: pair cosines, raw vs z-scored. Right: each dimension's part (E[û_i])² of the mean cosine, the top ones
    marked (called rogue only if ``top_share`` is at least ROGUE_SHARE, or not given)."""
    fig = Figure(figsize=(11, 3.8), dpi=100)
    a, b = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.3]})
    bins = np.linspace(-0.6, 1.0, 65)
    a.hist(raw.numpy(), bins=bins, color=RAW_COLOUR, alpha=0.75, label=f"raw (mean {raw.mean():.3f})")
    a.hist(z.numpy(), bins=bins, histtype="step", color=Z_COLOUR, lw=2.2, ls="--",
           label=f"z-scored (mean {z.mean():.3f})")
    a.axvline(float(raw.mean()), color=RAW_COLOUR, lw=1)
    a.axvline(float(z.mean()), color=Z_COLOUR, lw=1, ls="--")
    a.set_xlabel("cosine of a random token pair")
    a.set_ylabel("number of pairs")
    a.set_title("anisotropy = mean cosine")
    a.legend(fontsize=9)
    v = share.numpy()
    b.bar(np.arange(len(v)), v, color=RAW_COLOUR, width=1.0, label="part of the mean cosine")
    top = v.max()
    for k, d in enumerate(rogue):  # wide bars and a marker, so that a 1-pixel bar is not the only cue
        b.bar([d], [v[d]], color=ROGUE_COLOUR, width=max(3.0, len(v) / 120))
        b.plot([d], [v[d] + 0.03 * top], marker="v", color=ROGUE_COLOUR, markersize=9, ls="none",
               label=top_legend(rogue, top_share) if k == 0 else None)
        b.annotate(f"dim {d}", (d, v[d] + 0.03 * top), textcoords="offset points", xytext=(0, 8 + 13 * k),
                   ha="center", fontsize=9, color=ROGUE_COLOUR, fontweight="bold")
    b.set_xlabel("dimension")
    b.set_ylabel(SHARE_LABEL)
    b.set_title(SHARE_TITLE)
    b.set_ylim(0, top * (1.25 + 0.08 * len(rogue)))
    b.legend(fontsize=9, loc="upper left")
    fig.suptitle(title, fontsize=12)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- the same charts as SVG (widgets)

def sense_scores_svg(r: WSDReadout) -> bytes:
    """:func:`draw_sense_scores` as SVG: cosine to each sense centroid, labelled with the sense and its gloss."""
    from .svg import Plot, Svg

    n = len(r.senses)
    lo = min(0.0, min(r.cosines) - 0.05)
    hi = max(1.0, max(r.cosines) + 0.12)
    svg = Svg(800, 34 + 54 * n + 52 + (18 if r.floor is not None else 0), "sense-scores-chart")
    p = Plot(330, 34, 450, 54 * n, (lo, hi), (n - 0.5, -0.5))
    svg.text(p.x + p.w / 2, 16, f"'{r.lemma}': nearest sense = {r.predicted}", anchor="middle", size=13)
    for i, (s, g, c) in enumerate(zip(r.senses, r.glosses, r.cosines)):
        y = p.py(i)
        colour = OKABE_ITO[0] if s == r.predicted else "#9e9e9e"
        svg.rect(p.px(0), y - 16, p.px(c) - p.px(0), 32, colour, title=f"{s}: cosine {c:.3f}")
        svg.text(max(p.px(c), p.px(0)) + 5, y, f"{c:.3f}", size=11)
        svg.line(p.x - 4, y, p.x, y)
        svg.text(p.x - 8, y - 8, s, anchor="end", size=12, weight="bold" if s == r.predicted else None)
        svg.text(p.x - 8, y + 8, textwrap.shorten(g, 50, placeholder="…"), anchor="end", size=10, fill="#333333")
    if lo < 0:
        svg.line(p.px(0), p.y, p.px(0), p.y + p.h, stroke="#666666")
    if r.floor is not None:  # the reference: how high the best bar usually is
        fx = p.px(r.floor)
        svg.line(fx, p.y - 4, fx, p.y + p.h, stroke=FLOOR_COLOUR, width=1.5, dash="5 3")
        svg.add(f'<line class="wsd-floor" x1="{p.x:.1f}" y1="{p.y + p.h + 48:.1f}" x2="{p.x + 22:.1f}" '
                f'y2="{p.y + p.h + 48:.1f}" stroke="{FLOOR_COLOUR}" stroke-width="1.5" stroke-dasharray="5 3"/>')
        svg.text(p.x + 28, p.y + p.h + 48, f"{r.floor:.3f}: {FLOOR_LABEL}", size=10)
    svg.frame(p)
    svg.x_axis(p, label="cosine with the sense centroid (eq. 11.9)")
    return svg.bytes()


def anisotropy_svg(raw: torch.Tensor, z: torch.Tensor, share: torch.Tensor, rogue: list[int], title: str,
                   top_share: float | None = None) -> bytes:
    """:func:`draw_anisotropy` as SVG. Left: histogram of pair cosines, raw vs z-scored. Right: each dimension's part
    of the mean cosine, the top dimensions marked (a wide bar, a triangle and their number; rogue or not, as there)."""
    from .svg import Plot, Svg

    svg = Svg(1000, 380, "anisotropy-chart")
    svg.text(500, 16, title, anchor="middle", size=14)
    bins = np.linspace(-0.6, 1.0, 65)
    raw_n, _ = np.histogram(raw.numpy(), bins=bins)
    z_n, _ = np.histogram(z.numpy(), bins=bins)
    a = Plot(70, 54, 340, 260, (-0.6, 1.0), (0.0, max(raw_n.max(), z_n.max(), 1) * 1.05))
    svg.text(a.x + a.w / 2, 40, "anisotropy = mean cosine", anchor="middle", size=12)
    for k, count in enumerate(raw_n):
        if count:
            svg.rect(a.px(bins[k]), a.py(count), a.px(bins[k + 1]) - a.px(bins[k]), a.py(0) - a.py(count), RAW_COLOUR,
                     extra='fill-opacity="0.75"')
    step = [(a.px(bins[0]), a.py(0))]
    for k, count in enumerate(z_n):
        step += [(a.px(bins[k]), a.py(count)), (a.px(bins[k + 1]), a.py(count))]
    step.append((a.px(bins[-1]), a.py(0)))
    svg.polyline(step, stroke=Z_COLOUR, width=2.2, dash="6 3")
    rm, zm = float(raw.mean()), float(z.mean())
    svg.line(a.px(rm), a.y, a.px(rm), a.y + a.h, stroke=RAW_COLOUR)
    svg.line(a.px(zm), a.y, a.px(zm), a.y + a.h, stroke=Z_COLOUR, dash="5 3")
    svg.frame(a)
    svg.x_axis(a, label="cosine of a random token pair")
    svg.y_axis(a, label="number of pairs")
    svg.legend(a.x + a.w - 172, a.y + 14, [
        (f'<rect width="14" height="10" fill="{RAW_COLOUR}" fill-opacity="0.75"/>', f"raw (mean {rm:.3f})"),
        (f'<line x1="0" y1="5" x2="14" y2="5" stroke="{Z_COLOUR}" stroke-width="2.2" stroke-dasharray="4 2"/>',
         f"z-scored (mean {zm:.3f})")])

    v = share.numpy()
    d, top = len(v), float(v.max()) if len(v) else 1.0
    b = Plot(510, 54, 470, 260, (-0.5, d - 0.5), (0.0, top * (1.25 + 0.08 * len(rogue)) or 1.0))
    svg.text(b.x + b.w / 2, 40, SHARE_TITLE, anchor="middle", size=12)
    unit = b.w / d
    bars = "".join(f"M{b.px(i) - unit / 2:.1f} {b.py(0):.1f}V{b.py(x):.1f}h{unit:.2f}V{b.py(0):.1f}z"
                   for i, x in enumerate(v) if x > 0)
    svg.add(f'<path d="{bars}" fill="{RAW_COLOUR}"/>')
    wide = max(3.0, d / 120) * unit
    for k, dim in enumerate(rogue):
        x, y = b.px(dim), b.py(v[dim])
        svg.rect(x - wide / 2, y, wide, b.py(0) - y, ROGUE_COLOUR, title=f"dimension {dim}: part of the mean cosine {v[dim]:.3g}")
        ym = b.py(v[dim] + 0.03 * top)
        svg.add(f'<polygon points="{x - 6:.1f},{ym - 10:.1f} {x + 6:.1f},{ym - 10:.1f} {x:.1f},{ym:.1f}" '
                f'fill="{ROGUE_COLOUR}"/>')
        svg.text(x, ym - 18 - 13 * k, f"dim {dim}", anchor="middle", size=11, weight="bold", fill=ROGUE_COLOUR)
    svg.frame(b)
    svg.x_axis(b, [t for t in (0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000) if t < d], label="dimension")
    svg.y_axis(b, label=SHARE_LABEL)
    svg.legend(b.x + 10, b.y + 14, [
        (f'<rect width="14" height="10" fill="{RAW_COLOUR}"/>', "part of the mean cosine"),
        (f'<polygon points="1,0 13,0 7,10" fill="{ROGUE_COLOUR}"/>', top_legend(rogue, top_share))])
    return svg.bytes()
