"""What the 11.5 widgets show (§11.5), as HTML and SVG strings: no ipywidgets, no matplotlib (fast to redraw).

* :func:`span_mask_html` -- a sentence after SpanBERT masking: each masked span framed as one unit, coloured by
  its fate (the 11.2 palette and markers: [MASK], random token, unchanged);
* :func:`length_histogram_svg` -- span lengths drawn so far (bars) against the exact distribution (dots);
* :func:`nested_spans_svg` -- words with their (possibly nested) spans drawn as stacked brackets and labels;
* :func:`span_table_html` -- every enumerated span with its best label and probability;
* two matplotlib figures of the notebook's SpanBERT run (matplotlib imported only when they are drawn):
  :func:`draw_sbo_training` (the losses along the run, full running-mean windows, the passes through the pool of
  batches marked) and :func:`draw_position_accuracy` (top-1 by distance from the span boundary, against always
  guessing the most frequent token).

Colours are Okabe-Ito (safe with the common colour-vision deficiencies), and text or markers always say the
same as the colour.
"""
from __future__ import annotations

import html
from collections.abc import Sequence

from .masking import FATE_STYLE

SPAN_FATES = {"masked": "[MASK]", "randomized": "random token", "kept": "unchanged, predicted"}
TYPE_COLOURS = {"PER": "#0072B2", "ORG": "#D55E00", "LOC": "#009E73", "NULL": "#999999"}
OTHER_COLOURS = ("#CC79A7", "#E69F00", "#56B4E9", "#F0E442")


def type_colour(label: str) -> str:
    if label in TYPE_COLOURS:
        return TYPE_COLOURS[label]
    return OTHER_COLOURS[sum(map(ord, label)) % len(OTHER_COLOURS)]


def span_mask_html(original: Sequence[str], shown: Sequence[str], spans: Sequence[tuple[int, int]],
                   fates: Sequence[str]) -> str:
    """Tokens of one sentence; each masked span (first, last token, inclusive) is one framed group in its fate's
    colour, showing 'original → what the model sees' for replaced tokens. Special tokens are shown grey."""
    if len(original) != len(shown):
        raise ValueError(f"{len(original)} original tokens but {len(shown)} shown tokens")
    if len(spans) != len(fates):
        raise ValueError(f"{len(spans)} spans but {len(fates)} fates")
    start_of = {s: (s, e, f) for (s, e), f in zip(spans, fates)}
    out, t = [], 0
    plain = "display:inline-block;margin:2px;padding:2px 5px;font-family:monospace;border:1px solid #bbbbbb;" \
            "border-radius:4px"
    while t < len(original):
        if t in start_of:
            s, e, fate = start_of[t]
            key = SPAN_FATES.get(fate)
            if key is None:
                raise ValueError(f"unknown fate {fate!r}: expected one of {', '.join(SPAN_FATES)}")
            bg, border, mark = FATE_STYLE[key]
            inner = []
            for k in range(s, e + 1):
                text = original[k] if fate == "kept" else f"{original[k]} → {shown[k]}"
                inner.append(f"<span style='font-family:monospace;padding:0 3px'>{html.escape(text)}</span>")
            out.append(f"<span class='span-unit' data-fate='{fate}' title='one span of {e - s + 1} token(s): "
                       f"{html.escape(key)}' style='display:inline-block;margin:2px;padding:2px 4px;background:{bg};"
                       f"border:{border};border-radius:6px'>{html.escape(mark)} {''.join(inner)}</span>")
            t = e + 1
            continue
        grey = original[t].startswith("[") and original[t].endswith("]")
        out.append(f"<span style='{plain};color:{'#888' if grey else '#000'}'>{html.escape(original[t])}</span>")
        t += 1
    return "<div class='span-mask' style='line-height:2.3'>" + "".join(out) + "</div>"


def length_histogram_svg(counts: Sequence[int], probs: Sequence[float], *, title: str = "",
                         width: int = 460, height: int = 230) -> str:
    """Bars: the share of drawn lengths 1..n (``counts``); dots: the exact probabilities (``probs``).
    Labelled axes; the y axis runs to the larger of the two maxima."""
    n = len(probs)
    if len(counts) != n or n == 0:
        raise ValueError(f"counts ({len(counts)}) and probs ({n}) must have one entry per length, at least one")
    total = sum(counts)
    shares = [c / total if total else 0.0 for c in counts]
    top = max(max(shares), max(probs)) * 1.15 or 1.0
    left, right, top_pad, bottom = 48, 12, 26 if title else 12, 40
    pw, ph = width - left - right, height - top_pad - bottom
    bw = pw / n
    y = lambda v: top_pad + ph - v / top * ph  # noqa: E731
    parts = [f"<svg class='length-histogram' xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
             f"font-family='sans-serif' font-size='11'>",
             f"<rect x='0' y='0' width='{width}' height='{height}' fill='white'/>"]
    if title:
        parts.append(f"<text x='{width / 2}' y='15' text-anchor='middle' font-size='12'>{html.escape(title)}</text>")
    for k in range(5):  # y grid and ticks
        v = top * k / 4
        parts.append(f"<line x1='{left}' x2='{left + pw}' y1='{y(v):.1f}' y2='{y(v):.1f}' stroke='#eee'/>"
                     f"<text x='{left - 4}' y='{y(v) + 4:.1f}' text-anchor='end'>{v:.0%}</text>")
    for i in range(n):
        x = left + i * bw
        parts.append(f"<rect class='bar' x='{x + bw * 0.15:.1f}' y='{y(shares[i]):.1f}' width='{bw * 0.7:.1f}' "
                     f"height='{top_pad + ph - y(shares[i]):.1f}' fill='#56B4E9'><title>ℓ = {i + 1}: "
                     f"{shares[i]:.1%} drawn, {probs[i]:.1%} exact</title></rect>")
        parts.append(f"<circle class='exact' cx='{x + bw / 2:.1f}' cy='{y(probs[i]):.1f}' r='4' fill='#D55E00'/>")
        parts.append(f"<text x='{x + bw / 2:.1f}' y='{top_pad + ph + 14}' text-anchor='middle'>{i + 1}</text>")
    parts.append(f"<line x1='{left}' x2='{left + pw}' y1='{top_pad + ph}' y2='{top_pad + ph}' stroke='#333'/>")
    parts.append(f"<text x='{left + pw / 2}' y='{height - 6}' text-anchor='middle'>span length ℓ (words) — "
                 f"bars: {total:,} drawn; dots: exact P(ℓ)</text>")
    parts.append(f"<text transform='translate(12,{top_pad + ph / 2}) rotate(-90)' text-anchor='middle'>share</text>")
    parts.append("</svg>")
    return "".join(parts)


def bracket_levels(spans: Sequence[tuple[int, int]]) -> list[int]:
    """A row for each span's bracket so that brackets on one row never overlap: inner (shorter) spans nearer the
    words, the spans that contain them below."""
    order = sorted(range(len(spans)), key=lambda k: (spans[k][1] - spans[k][0], spans[k][0]))
    rows: list[list[tuple[int, int]]] = []
    level = [0] * len(spans)
    for k in order:
        s, e = spans[k]
        r = 0
        while r < len(rows) and any(not (e < a or b < s) for a, b in rows[r]):
            r += 1
        if r == len(rows):
            rows.append([])
        rows[r].append((s, e))
        level[k] = r
    return level


def nested_spans_svg(words: Sequence[str], spans: Sequence[tuple[int, int, str]], *, probs: Sequence[float] | None = None,
                     char_width: float = 7.4, gap: float = 10.0, row_height: int = 22) -> str:
    """Words in a line and each span (first_word, last_word, label) as a bracket under them, nested spans stacked;
    with ``probs``, each label shows its probability."""
    if not words:
        raise ValueError("no words to draw")
    xs, x = [], 8.0
    for w in words:
        wd = max(len(w), 1) * char_width
        xs.append((x, x + wd))
        x += wd + gap
    width = int(x + 8)
    levels = bracket_levels([(s, e) for s, e, _ in spans])
    height = 34 + row_height * (max(levels) + 1 if levels else 0) + 6
    parts = [f"<svg class='nested-spans' xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
             "font-family='monospace' font-size='12'>", f"<rect width='{width}' height='{height}' fill='white'/>"]
    for w, (a, _b) in zip(words, xs):
        parts.append(f"<text x='{a:.1f}' y='18'>{html.escape(w)}</text>")
    for k, ((s, e, label), lv) in enumerate(zip(spans, levels)):
        if not 0 <= s <= e < len(words):
            raise ValueError(f"span ({s}, {e}) is outside the {len(words)} words")
        x0, x1 = xs[s][0] - 2, xs[e][1] + 2
        yb = 26 + lv * row_height
        colour = type_colour(label)
        text = label if probs is None else f"{label} {probs[k]:.2f}"
        parts.append(f"<g class='bracket' data-label='{html.escape(label)}'><path d='M{x0:.1f},{yb - 4} L{x0:.1f},{yb} "
                     f"L{x1:.1f},{yb} L{x1:.1f},{yb - 4}' fill='none' stroke='{colour}' stroke-width='2'/>"
                     f"<text x='{(x0 + x1) / 2:.1f}' y='{yb + 13}' text-anchor='middle' fill='{colour}' "
                     f"font-family='sans-serif' font-size='11'>{html.escape(text)}</text>"
                     f"<title>{html.escape(' '.join(words[s:e + 1]))}: {html.escape(text)}</title></g>")
    parts.append("</svg>")
    return "".join(parts)


def span_table_html(words: Sequence[str], rows: Sequence[tuple[int, int, str, float]], *, max_rows: int = 400) -> str:
    """Every span (first_word, last_word, best label, its probability), entities (label ≠ NULL) in bold and coloured."""
    body = []
    for s, e, label, p in rows[:max_rows]:
        style = f"font-weight:bold;color:{type_colour(label)}" if label != "NULL" else "color:#555"
        body.append(f"<tr class='span-row' style='{style}'><td style='{CELL}'>({s}, {e})</td><td style='{CELL}'>"
                    f"{html.escape(' '.join(words[s:e + 1]))}</td><td style='{CELL}'>{html.escape(label)}</td>"
                    f"<td style='{CELL};text-align:right'>{p:.3f}</td></tr>")
    more = f"<p>… and {len(rows) - max_rows} more</p>" if len(rows) > max_rows else ""
    return ("<div style='max-height:260px;overflow-y:auto'><table class='span-table' style='border-collapse:collapse;"
            f"font-size:12px'><tr>{''.join(f'<th style={CELL!r}>{h}</th>' for h in ('(i, j)', 'span', 'label', 'P'))}</tr>"
            + "".join(body)
            + "</table>" + more + "</div>")


POOL_COLOUR, BASELINE_COLOUR = "#999999", "#000000"
CELL = "padding:1px 12px 1px 0"  # room between the span table's columns (a long span ran into its label)


def draw_sbo_training(run, pool: int | None = None, window: int = 10):
    """The SpanBERT run's training curve: L_SBO, the unigram loss of the same tokens and L_MLM, each a mean of
    ``window`` steps drawn only where a full window exists (from step ``window`` on). With ``pool`` (the run cycled
    through that many fixed batches), a vertical line where the pool starts again: from there on the head is
    scored on batches it has trained on."""
    from matplotlib.figure import Figure

    steps = [r["step"] for r in run.losses]
    if not steps:
        raise ValueError("the run has no steps to draw")
    window = max(1, min(window, len(steps)))
    fig = Figure(figsize=(7, 3.4), dpi=100)
    ax = fig.subplots()
    for key, colour, ls, label in (("unigram", "#D55E00", ":", "unigram loss of the same tokens"),
                                   ("sbo", "#0072B2", "-", "L_SBO"), ("mlm", "#E69F00", "--", "L_MLM (frozen model)")):
        ax.plot(steps[window - 1:], run.smoothed(key, window), color=colour, ls=ls, label=label)
    repeats = [k for k in range(pool, steps[-1], pool)] if pool else []
    for n, k in enumerate(repeats):
        ax.axvline(k, color=POOL_COLOUR, ls="-.", lw=1, label=f"pool repeats (every {pool} steps)" if n == 0 else None)
        ax.text(k + 1, 0.98, "pool repeats", transform=ax.get_xaxis_transform(), fontsize=8, va="top", color="#333333")
    if repeats:  # headroom above the curves for those labels
        low, high = ax.get_ylim()
        ax.set_ylim(low, high + 0.12 * (high - low))
    ax.set_xlim(0, steps[-1] + 1)
    ax.set(xlabel="training step", ylabel=f"cross-entropy (nats),\nmean of the last {window} steps",
           title="SpanBERT's boundary objective, trained on GUM")
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    return fig


def draw_position_accuracy(acc, top_token: str = "the most frequent token"):
    """Top-1 accuracy of the MLM and the SBO head on held-out masked tokens of spans of 5+ tokens, by distance from
    the nearer span boundary (``acc``: a :class:`~course_lib.spans.sbo_eval.PositionAccuracy`), and a black bar
    across each group for always guessing ``top_token`` on the same tokens (``acc.unigram_long``)."""
    from matplotlib.figure import Figure

    n = len(acc.distance)
    if not (len(acc.mlm_long) == len(acc.sbo_long) == len(acc.unigram_long) == n):
        raise ValueError("give the MLM, SBO and most-frequent-token accuracies for every distance")
    fig = Figure(figsize=(6, 3.2), dpi=100)
    ax = fig.subplots()
    xs = list(range(n))
    ax.bar([x - 0.2 for x in xs], acc.mlm_long, width=0.4, color="#E69F00", label="MLM (from z_i)")
    ax.bar([x + 0.2 for x in xs], acc.sbo_long, width=0.4, color="#0072B2", hatch="//", edgecolor="white",
           label="SBO (from z_(s-1), z_(e+1), p)")
    ax.hlines(acc.unigram_long, [x - 0.45 for x in xs], [x + 0.45 for x in xs], colors=BASELINE_COLOUR, lw=2,
              linestyles="--", label=f"always guessing {top_token} (no context)")
    ticks = [str(d) for d in acc.distance]
    ticks[0], ticks[-1] = f"{ticks[0]} (edge)", f"{ticks[-1]}+ (middle)"
    ax.set_xticks(xs, ticks)
    ax.set(xlabel="distance from the nearer span boundary", ylabel="top-1 accuracy",
           title="held-out masked tokens, spans of 5 or more tokens")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
