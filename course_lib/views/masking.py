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
