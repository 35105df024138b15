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

from ..embeddings.wsd import NearestSenseWSD, cosine_matrix
from ..embeddings.senses import SenseData, SenseExample

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


@dataclass
class Neighbour:
    example: SenseExample
    cosine: float


@dataclass
class WSDReadout:
    lemma: str
    senses: list[str]
    glosses: list[str]
    cosines: list[float]        # to each sense centroid, in the order of ``senses`` (best first)
    predicted: str
    neighbours: list[Neighbour]  # the nearest training sentences of this lemma


def wsd_readout(wsd: NearestSenseWSD, data: SenseData, train_examples: list[SenseExample], train_vectors: torch.Tensor,
                vector: torch.Tensor, lemma: str, k: int = 3) -> WSDReadout:
    """Cosine of ``vector`` to each sense centroid of ``lemma`` (eq. 11.9) and its k nearest training sentences."""
    scores = wsd.scores(vector, lemma)
    idx = [i for i, e in enumerate(train_examples) if e.lemma == lemma]
    cos = cosine_matrix(vector[None], train_vectors[idx])[0]
    top = cos.argsort(descending=True)[:k].tolist()
    return WSDReadout(lemma, [s.sense for s in scores], [data.senses[s.sense].gloss for s in scores],
                      [s.cosine for s in scores], scores[0].sense,
                      [Neighbour(train_examples[idx[t]], float(cos[t])) for t in top])


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
    ax.set_xlabel("cosine with the sense centroid (eq. 11.9)")
    ax.set_title(f"'{r.lemma}': nearest sense = {r.predicted}", fontsize=11)
    fig.tight_layout()
    return fig


def neighbours_html(r: WSDReadout) -> str:
    rows = "".join(f"<li>{html.escape(nb.example.sense)} · cosine {nb.cosine:.3f}: {marked_html(nb.example)}</li>"
                   for nb in r.neighbours)
    return f"<div class='wsd-neighbours'><b>nearest training sentences</b><ol>{rows}</ol></div>"


def sentence_words(sentence: str) -> list[str]:
    """The words of a sentence, in order and without repeats, for the target-word chooser."""
    return list(dict.fromkeys(re.findall(r"[A-Za-z][A-Za-z'-]*", sentence)))


# ----------------------------------------------------------------------------- anisotropy and z-scoring

def draw_anisotropy(raw: torch.Tensor, z: torch.Tensor, variance: torch.Tensor, rogue: list[int], title: str) -> Figure:
    """Left: histogram of pair cosines, raw vs z-scored. Right: variance per dimension, rogue dimensions marked."""
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
    v = variance.numpy()
    b.bar(np.arange(len(v)), v, color=RAW_COLOUR, width=1.0, label="variance")
    top = v.max()
    for k, d in enumerate(rogue):  # wide bars and a marker, so that a 1-pixel bar is not the only cue
        b.bar([d], [v[d]], color=ROGUE_COLOUR, width=max(3.0, len(v) / 120))
        b.plot([d], [v[d] + 0.03 * top], marker="v", color=ROGUE_COLOUR, markersize=9, ls="none",
               label="rogue (largest share of the mean cosine)" if k == 0 else None)
        b.annotate(f"dim {d}", (d, v[d] + 0.03 * top), textcoords="offset points", xytext=(0, 8 + 13 * k),
                   ha="center", fontsize=9, color=ROGUE_COLOUR, fontweight="bold")
    b.set_xlabel("dimension")
    b.set_ylabel("variance over the corpus")
    b.set_title("per-dimension variance")
    b.set_ylim(0, top * (1.25 + 0.08 * len(rogue)))
    b.legend(fontsize=9, loc="upper left")
    fig.suptitle(title, fontsize=12)
    fig.tight_layout()
    return fig
