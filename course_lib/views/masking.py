"""What the 11.2 widgets show, computed without any widget: token fates, rates, top-k, eq. 11.7 bars.

Colours are the Okabe-Ito palette (distinguishable with the common colour-vision
deficiencies), and every fate also has its own text marker, so colour is never the
only cue.
"""
from __future__ import annotations

import html
from dataclasses import dataclass

from matplotlib.figure import Figure

from ..pretraining.masking import MaskedBatch

FATES = ("not selected", "[MASK]", "random token", "unchanged, predicted")
FATE_STYLE = {  # background colour, border style, marker
    "not selected": ("#ffffff", "1px solid #bbbbbb", ""),
    "[MASK]": ("#E69F00", "2px solid #8a5d00", "▮"),
    "random token": ("#56B4E9", "2px dashed #1d6a99", "↻"),
    "unchanged, predicted": ("#009E73", "2px dotted #00573f", "✓"),
}
TARGETS = {"selected": 0.15, "[MASK]": 0.8, "random token": 0.1, "unchanged, predicted": 0.1}


@dataclass
class TokenFate:
    original: str   # the token in the text
    shown: str      # what the model sees in its place
    fate: str       # one of FATES


def token_fates(batch: MaskedBatch, tokenizer, row: int = 0, attention_mask=None) -> list[TokenFate]:
    """Per token of one row: the original, what replaced it, and its fate (padding left out)."""
    out = []
    original = batch.input_ids[row].clone()
    original[batch.selected[row]] = batch.labels[row][batch.selected[row]]
    n = int(attention_mask[row].sum()) if attention_mask is not None else original.numel()
    for t in range(n):
        fate = ("[MASK]" if batch.masked[row, t] else "random token" if batch.randomized[row, t]
                else "unchanged, predicted" if batch.kept[row, t] else "not selected")
        out.append(TokenFate(tokenizer.id_to_token(int(original[t])), tokenizer.id_to_token(int(batch.input_ids[row, t])), fate))
    return out


def fates_html(fates: list[TokenFate]) -> str:
    """Tokens as coloured boxes with a marker; a random replacement shows 'original → replacement'."""
    spans = []
    for f in fates:
        bg, border, mark = FATE_STYLE[f.fate]
        text = f.original if f.fate in ("not selected", "unchanged, predicted") else f"{f.original} → {f.shown}"
        spans.append(f"<span class='fate' title='{html.escape(f.fate)}' style='display:inline-block;margin:2px;"
                     f"padding:2px 5px;background:{bg};border:{border};border-radius:4px;font-family:monospace'>"
                     f"{html.escape(mark + ' ' if mark else '')}{html.escape(text)}</span>")
    return "<div style='line-height:2.1'>" + "".join(spans) + "</div>"


def legend_html() -> str:
    items = []
    for fate in FATES:
        bg, border, mark = FATE_STYLE[fate]
        items.append(f"<span style='display:inline-block;margin:2px 8px 2px 0;padding:1px 5px;background:{bg};"
                     f"border:{border};border-radius:4px'>{html.escape((mark + ' ') if mark else '')}{fate}</span>")
    return "<div style='font-size:90%'>" + "".join(items) + "</div>"


def rates(totals: dict[str, int]) -> dict[str, float]:
    """Observed shares from summed ``MaskedBatch.counts()``: selected / eligible; fates / selected."""
    sel = max(totals.get("selected", 0), 1)
    return {
        "selected": totals.get("selected", 0) / max(totals.get("eligible", 0), 1),
        "[MASK]": totals.get("masked", 0) / sel,
        "random token": totals.get("randomized", 0) / sel,
        "unchanged, predicted": totals.get("kept", 0) / sel,
    }


def draw_rates(totals: dict[str, int], draws: int, targets: dict[str, float] = TARGETS) -> Figure:
    """Bar chart of the observed rates next to their targets (the running histogram)."""
    observed = rates(totals)
    fig = Figure(figsize=(6.4, 2.8), dpi=110, layout="constrained")
    ax = fig.subplots()
    names = list(observed)
    xs = range(len(names))
    colours = ["#999999", FATE_STYLE["[MASK]"][0], FATE_STYLE["random token"][0], FATE_STYLE["unchanged, predicted"][0]]
    ax.bar(xs, [observed[n] for n in names], color=colours, edgecolor="black", label="observed")
    ax.scatter(xs, [targets[n] for n in names], marker="_", s=900, color="black", linewidths=2.5, label="target", zorder=3)
    for x, n in zip(xs, names):
        ax.annotate(f"{observed[n]:.1%}", (x, observed[n]), ha="center", va="bottom", fontsize=8,
                    xytext=(0, 3), textcoords="offset points")
    ax.set_xticks(list(xs), ["selected\n(of eligible)", "[MASK]\n(of selected)", "random\n(of selected)",
                             "unchanged\n(of selected)"], fontsize=8)
    ax.set_ylabel("share")
    ax.set_ylim(0, 1)
    ax.set_title(f"after {draws} draw{'s' if draws != 1 else ''}, {totals.get('eligible', 0):,} eligible tokens", fontsize=9)
    ax.legend(fontsize=8, loc="upper right", markerscale=0.35)
    return fig


def draw_top_k(predictions, tokens_at=None) -> Figure:
    """One horizontal bar chart of top-k tokens per [MASK] (from ``course_lib.fill_mask``)."""
    n = len(predictions)
    k = len(predictions[0].tokens) if n else 0
    fig = Figure(figsize=(5.2 * max(n, 1), 0.42 * k + 1.4), dpi=110, layout="constrained")
    axes = fig.subplots(1, max(n, 1), squeeze=False)[0]
    for i, (ax, p) in enumerate(zip(axes, predictions)):
        ax.barh(range(k), p.probs[::-1], color="#0072B2")
        ax.set_yticks(range(k), p.tokens[::-1], fontsize=10)
        ax.set_xlim(0, 1)
        ax.set_xlabel("probability")
        ax.set_title(f"[MASK] #{i + 1} (token position {p.position})", fontsize=9)
        for y, v in enumerate(p.probs[::-1]):
            ax.annotate(f"{v:.2f}", (v, y), va="center", fontsize=8, xytext=(3, 0), textcoords="offset points")
    return fig


def draw_language_sampling(names: list[str], counts: list[float], alpha: float) -> Figure:
    """Eq. 11.7: the data share p_i and the sampling probability q_i of each language, at one α."""
    from ..pretraining.multilingual import language_sampling_probs

    q = language_sampling_probs(counts, alpha).tolist()
    total = sum(counts)
    p = [c / total for c in counts]
    fig = Figure(figsize=(7.5, 3.0), dpi=110, layout="constrained")
    ax = fig.subplots()
    xs = range(len(names))
    ax.bar([x - 0.2 for x in xs], p, width=0.4, color="#999999", edgecolor="black", label="p_i: share of the data")
    ax.bar([x + 0.2 for x in xs], q, width=0.4, color="#CC79A7", edgecolor="black", hatch="//",
           label=f"q_i: sampling probability (α = {alpha:g})")
    ax.set_xticks(list(xs), names)
    ax.set_yscale("log")
    ax.set_ylabel("probability (log scale)")
    ax.set_xlabel("language")
    ax.legend(fontsize=8)
    return fig


# ----------------------------------------------------------------------------- the same charts as SVG (widgets)
RATE_LABELS = [["selected", "(of eligible)"], ["[MASK]", "(of selected)"], ["random", "(of selected)"],
               ["unchanged", "(of selected)"]]


def rates_svg(totals: dict[str, int], draws: int, targets: dict[str, float] = TARGETS) -> bytes:
    """:func:`draw_rates` as SVG (what the mask sampler shows): observed rates as bars, targets as black marks."""
    from .svg import Plot, Svg

    observed = rates(totals)
    names = list(observed)
    colours = ["#999999", FATE_STYLE["[MASK]"][0], FATE_STYLE["random token"][0], FATE_STYLE["unchanged, predicted"][0]]
    svg = Svg(620, 290, "rates-chart")
    p = Plot(64, 34, 536, 190, (-0.5, len(names) - 0.5), (0.0, 1.0))
    svg.text(p.x + p.w / 2, 16, f"after {draws} draw{'s' if draws != 1 else ''}, {totals.get('eligible', 0):,} "
             "eligible tokens", anchor="middle", size=12)
    svg.y_axis(p, label="share")
    for i, n in enumerate(names):
        x, v = p.px(i), observed[n]
        svg.rect(x - 0.4 * p.w / len(names), p.py(v), 0.8 * p.w / len(names), p.py(0) - p.py(v), colours[i],
                 stroke="black", title=f"{n}: {v:.1%} observed, target {targets[n]:.0%}")
        svg.line(x - 0.22 * p.w / len(names), p.py(targets[n]), x + 0.22 * p.w / len(names), p.py(targets[n]),
                 width=3)
        svg.text(x, p.py(v) - 8, f"{v:.1%}", anchor="middle", size=10)
        svg.line(x, p.y + p.h, x, p.y + p.h + 4)
        svg.lines(x, p.y + p.h + 14, RATE_LABELS[i], anchor="middle", size=10)
    svg.frame(p)
    svg.legend(p.x + p.w - 100, p.y + 14, [
        ('<rect width="14" height="10" fill="#999999" stroke="black"/>', "observed"),
        ('<line x1="0" y1="5" x2="14" y2="5" stroke="black" stroke-width="3"/>', "target")])
    return svg.bytes()


def top_k_svg(predictions) -> bytes:
    """:func:`draw_top_k` as SVG: one horizontal bar chart of the top-k tokens per [MASK]."""
    from .svg import Plot, Svg, esc

    n = max(len(predictions), 1)
    k = len(predictions[0].tokens) if predictions else 0
    label_w = max([len(t) for p in predictions for t in p.tokens] + [4]) * 7 + 14
    panel_w, bar_h = label_w + 330, 22
    svg = Svg(panel_w * n + 10, 34 + bar_h * k + 46, "topk-chart")
    for i, p in enumerate(predictions):
        plot = Plot(i * panel_w + label_w, 30, 300, bar_h * k, (0.0, 1.0), (k - 0.5, -0.5))
        svg.text(plot.x + plot.w / 2, 14, f"[MASK] #{i + 1} (token position {p.position})", anchor="middle", size=11)
        for r, (tok, pr) in enumerate(zip(p.tokens, p.probs)):
            y = plot.py(r)
            svg.rect(plot.px(0), y - 0.4 * bar_h, plot.px(pr) - plot.px(0), 0.8 * bar_h, "#0072B2",
                     title=f"{tok}: {pr:.3f}")
            svg.text(plot.px(pr) + 4, y, f"{pr:.2f}", size=10)
            svg.line(plot.x - 4, y, plot.x, y)
            svg.add(f'<text x="{plot.x - 6:.1f}" y="{y:.1f}" text-anchor="end" dominant-baseline="central" '
                    f'font-size="12" class="topk-token">{esc(tok)}</text>')
        svg.frame(plot)
        svg.x_axis(plot, [0, 0.2, 0.4, 0.6, 0.8, 1.0], label="probability")
    return svg.bytes()


def language_sampling_svg(names: list[str], counts: list[float], alpha: float) -> bytes:
    """:func:`draw_language_sampling` as SVG: data share p_i and sampling probability q_i (eq. 11.7), log scale."""
    import math

    from ..pretraining.multilingual import language_sampling_probs
    from .svg import Plot, Svg

    q = language_sampling_probs(counts, alpha).tolist()
    total = sum(counts)
    p = [c / total for c in counts]
    values = [v for v in p + q if v > 0]
    lo = 10.0 ** math.floor(math.log10(min(values)))
    svg = Svg(700, 290, "language-chart")
    plot = Plot(70, 20, 610, 210, (-0.5, len(names) - 0.5), (lo, 1.0), log_y=True)
    svg.y_axis(plot, label="probability (log scale)", grid=True)
    hatch = svg.hatch("q-hatch", "#7a3b62", "#CC79A7")
    bw = 0.4 * plot.w / len(names)
    for i, name in enumerate(names):
        x = plot.px(i)
        svg.rect(x - bw, plot.py(p[i]), bw, plot.py(lo) - plot.py(p[i]), "#999999", stroke="black",
                 title=f"{name}: p = {p[i]:.3g}")
        svg.rect(x, plot.py(q[i]), bw, plot.py(lo) - plot.py(q[i]), hatch, stroke="black",
                 title=f"{name}: q = {q[i]:.3g}")
        svg.line(x, plot.y + plot.h, x, plot.y + plot.h + 4)
        svg.text(x, plot.y + plot.h + 14, name, anchor="middle")
    svg.frame(plot)
    svg.text(plot.x + plot.w / 2, plot.y + plot.h + 34, "language", anchor="middle")
    svg.legend(plot.x + plot.w - 250, plot.y + 14, [
        ('<rect width="14" height="10" fill="#999999" stroke="black"/>', "p_i: share of the data"),
        (f'<rect width="14" height="10" fill="{hatch}" stroke="black"/>',
         f"q_i: sampling probability (α = {alpha:g})")])
    return svg.bytes()
