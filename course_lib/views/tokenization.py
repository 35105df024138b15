"""What notebook 11.1b shows, computed without any widget: coloured pieces, the merge table, fertility charts.

Pieces are boxes; the pieces of one word sit together and words are separated by a gap, so the
word a piece belongs to is visible without colour. Colours alternate along the pieces (Okabe-Ito
tints, distinguishable with the common colour-vision deficiencies); an unknown token has a dark
dashed border and a ⚠ marker, so colour is never the only cue.
"""
from __future__ import annotations

import html

from matplotlib.figure import Figure

from ..tokenization.bpe import BpeLearning
from ..tokenization.compare import count_words
from ..tokenization.segmentation import Segmentation

# light tints of Okabe-Ito orange, sky blue, bluish green, yellow, blue, vermillion, reddish purple
TINTS = ("#FBE3B3", "#CDE8F8", "#B3E2D5", "#FBF5C4", "#B3D4EA", "#F6CDB3", "#EFD2E2")
# Okabe-Ito, for bars and lines (tokenizer i gets colour i and hatch i)
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000")
HATCHES = ("", "//", "..", "xx", "\\\\", "--", "++")
UNKNOWN_STYLE = "background:#ffffff;border:2px dashed #222222"


WORDS_NOTE = "words: the text split at white space, the same count on every row"


def visible(piece: str) -> str:
    """A piece as it can be read in a box: a character that prints as nothing (a tab, a control or zero-width
    character; a space) is written as its code point, so ``'\t'`` shows as ``U+0009``."""
    return "".join(c if c.isprintable() and not c.isspace() else f"U+{ord(c):04X}" for c in piece)


def pieces_html(seg: Segmentation, name: str = "", unk_id: int | None = None, show_ids: bool = True,
                note: str = "", words: int | None = None) -> str:
    """One row: the tokenizer's name, the token count, and every piece as a box with its id below it.

    A piece whose id is ``unk_id`` is drawn as unknown (WordPiece shows it as [UNK], Unigram as its text).
    ``words``, the text's word count, is shown beside the token count when given. It is computed once from the
    typed text by the caller (:func:`comparison_html`, with :func:`~course_lib.tokenization.compare.count_words`),
    never from the segmentation: each tokenizer cuts words its own way (BERT around punctuation and CJK
    characters, Unigram at spaces only, GPT-2 before spaces), and that is only how the boxes are grouped.
    """
    groups: list[list[str]] = [[] for _ in seg.words]
    for k, (t, i, w) in enumerate(zip(seg.tokens, seg.ids, seg.word_ids)):
        unknown = unk_id is not None and i == unk_id
        style = UNKNOWN_STYLE if unknown else f"background:{TINTS[k % len(TINTS)]};border:1px solid #888888"
        label = ("⚠ " if unknown else "") + visible(t)
        idline = f"<br><small style='color:#444'>{i}</small>" if show_ids else ""
        groups[w].append(f"<span class='piece' title='piece {k}: {html.escape(visible(t))} (id {i}), word {w}' "
                        f"style='display:inline-block;margin:0 1px;padding:1px 4px;{style};border-radius:3px;"
                        f"font-family:monospace;text-align:center;line-height:1.2'>{html.escape(label)}{idline}</span>")
    body = "".join(f"<span class='word' style='display:inline-block;margin:2px 7px 2px 0;white-space:nowrap'>"
                   f"{''.join(boxes)}</span>" for boxes in groups if boxes) or "<i>no tokens</i>"
    plural = (lambda n, s: f"{n} {s}{'' if n == 1 else 's'}")
    count = plural(len(seg), "token") + ("" if words is None else ", " + plural(words, "word"))
    # two lines (name and count, then the note), so that five rows and the explorer's controls fit one 1280x720
    # slide below the cell that makes them
    head = (f"<div style='min-width:11em;font-weight:bold;line-height:1.3'>{html.escape(name)}"
            + (" · " if name else "")
            + f"<span class='count' style='font-weight:normal;white-space:nowrap' title='{WORDS_NOTE}'>{count}</span>"
            + (f"<br><small style='font-weight:normal;color:#555'>{html.escape(note)}</small>" if note else "")
            + "</div>")
    return (f"<div class='pieces-row' style='display:flex;align-items:flex-start;gap:8px;margin:2px 0'>"
            f"{head}<div>{body}</div></div>")


def comparison_html(rows: list[tuple[str, Segmentation, str, int | None]], text: str) -> str:
    """Several tokenizers on the same ``text``, one row each: (name, segmentation, note, id of the unknown token).

    The word count is computed here, once, from ``text`` (:func:`~course_lib.tokenization.compare.count_words`),
    so every row shows the same number of words."""
    words = count_words(text)
    return ("<div class='pieces-comparison'>"
            + "".join(pieces_html(seg, name, unk_id=unk, note=note, words=words) for name, seg, note, unk in rows)
            + f"<div class='words-note' style='color:#555;font-size:90%'>{WORDS_NOTE}</div></div>")


def merges_html(learning: BpeLearning, step: int, last: int = 8) -> str:
    """The vocabulary after ``step`` merges and the last few merges up to there (rank, pair, new symbol, count)."""
    step = max(0, min(step, len(learning.merges)))
    vocab = len(learning.vocabulary(step))
    td = "<td style='padding:1px 10px;text-align:{}'>{}</td>"
    rows = "".join(
        "<tr>" + td.format("right", r + 1)
        + td.format("left", f"<code>{html.escape(m.left)}</code> + <code>{html.escape(m.right)}</code>")
        + td.format("left", f"→ <code>{html.escape(m.token)}</code>") + td.format("right", f"{m.count:,}")
        + td.format("left", f"tied with {m.tied - 1} other pair{'s' if m.tied > 2 else ''}" if m.tied > 1 else "")
        + "</tr>"
        for r, m in list(enumerate(learning.merges))[max(0, step - last):step])
    th = "".join(f"<th style='padding:1px 10px;text-align:left'>{h}</th>" for h in ("merge", "pair", "new symbol",
                                                                                    "count", "ties"))
    table = (f"<table style='border-collapse:collapse;font-size:90%'><tr>{th}</tr>{rows}</table>" if rows
             else "<i>no merges yet: characters only</i>")
    return (f"<div class='bpe-vocab'><b>BPE after {step:,} of {len(learning.merges):,} merges</b>: "
            f"{len(learning.alphabet):,} initial symbols + {step:,} merges = {vocab:,} symbols in the vocabulary"
            f"{table}</div>")


def _grouped_bars(ax, groups: list[str], series: dict[str, list[float]]) -> None:
    n = len(series)
    width = 0.8 / max(n, 1)
    for k, (name, values) in enumerate(series.items()):
        xs = [g + (k - (n - 1) / 2) * width for g in range(len(groups))]
        ax.bar(xs, values, width, label=name, color=COLOURS[k % len(COLOURS)], hatch=HATCHES[k % len(HATCHES)],
               edgecolor="white", linewidth=0.5)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=15, ha="right")


def draw_fertility(table: dict[str, dict[str, float]], title: str = "pieces per word by kind of text") -> Figure:
    """Grouped bars: one group per kind of text, one bar per tokenizer (``table[text][tokenizer]``)."""
    texts = list(table)
    tokenizers = list(next(iter(table.values()))) if table else []
    fig = Figure(figsize=(8.5, 3.8), dpi=110)
    ax = fig.subplots()
    _grouped_bars(ax, texts, {t: [table[x][t] for x in texts] for t in tokenizers})
    ax.axhline(1.0, color="grey", lw=0.8, ls=":")
    ax.set_ylabel("fertility (pieces per word)")
    ax.set_xlabel("kind of text")
    ax.set_title(title)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    return fig


def draw_fragmentation(bins_by_tokenizer: dict[str, list], title: str = "rare words fragment") -> Figure:
    """Mean pieces per word against how often the word occurred in the training text (one line per tokenizer)."""
    fig = Figure(figsize=(6.5, 3.4), dpi=110)
    ax = fig.subplots()
    markers = "osD^v"
    for k, (name, bins) in enumerate(bins_by_tokenizer.items()):
        ax.plot(range(len(bins)), [b.mean_pieces for b in bins], marker=markers[k % len(markers)],
                color=COLOURS[k % len(COLOURS)], label=name)
        labels = [b.label for b in bins]
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels)
    ax.set_xlabel("times the word occurs in the training text")
    ax.set_ylabel("mean pieces per word")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def draw_segmentation_probs(exact: dict[tuple[str, ...], float], sampled: dict[tuple[str, ...], float],
                            top: int = 8, title: str = "") -> Figure:
    """Horizontal bars: the exact probability of the ``top`` most probable segmentations beside the sampled share."""
    keys = sorted(exact, key=exact.get, reverse=True)[:top]
    fig = Figure(figsize=(7, 0.4 * len(keys) + 1.2), dpi=110)
    ax = fig.subplots()
    ys = range(len(keys))
    ax.barh([y - 0.2 for y in ys], [exact[k] for k in keys], 0.4, color=COLOURS[0], label="exact P(x)^α / Σ")
    ax.barh([y + 0.2 for y in ys], [sampled.get(k, 0.0) for k in keys], 0.4, color=COLOURS[1], hatch="//",
            edgecolor="white", label="share of samples")
    ax.set_yticks(list(ys))
    ax.set_yticklabels([" ".join(k) for k in keys], fontfamily="monospace")
    ax.invert_yaxis()
    ax.set_xlabel("probability")
    ax.set_ylabel("segmentation")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig
