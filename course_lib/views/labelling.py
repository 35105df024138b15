"""What the 11.4b widgets show, computed and drawn without any widget (pure data -> HTML / SVG).

* :func:`alignment_table` / :func:`alignment_html` -- one column per subword: its word, the gold tag under the
  chapter's every-subword alignment and under first-subword alignment (-100 shown), the predicted tag, and the
  word's decoded tag at its first subword; wrong cells marked (✗ and a dashed border, not colour alone);
  the decoded entities below.
* :func:`value_bars` -- grouped bars on a matplotlib axis, each bar labelled with its value (a bar of 0 shows
  "0.00" rather than looking missing).
* :func:`qa_strips` / :func:`qa_svg` -- P(start = i) and P(end = j) over the context tokens as two aligned bar
  strips, the best span shaded, [CLS] (no answer) drawn apart.

Colours: Okabe-Ito (readable with the common colour-vision deficiencies), one per entity type.
"""
from __future__ import annotations

import html
from dataclasses import dataclass

from ..finetuning.labelling import IGNORE_INDEX, align_labels, first_subword_positions
from ..finetuning.ner_eval import get_entities

TYPE_COLOURS = {"LOC": "#56B4E9", "PER": "#E69F00", "ORG": "#009E73", "MISC": "#CC79A7"}
OTHER_COLOUR = "#dddddd"
START_COLOUR, END_COLOUR, SPAN_COLOUR = "#0072B2", "#D55E00", "#F0E442"


def _tag_colour(tag) -> str:
    if not isinstance(tag, str) or tag == "O":
        return "#ffffff"
    return TYPE_COLOURS.get(tag[2:], OTHER_COLOUR)


# ----------------------------------------------------------------------------- alignment

@dataclass(frozen=True)
class AlignmentColumn:
    """One subword of the sentence and what each row of the viewer says about it."""

    token: str
    word: int | None            # index of its word (None: [CLS], [SEP])
    first: bool                 # the first subword of its word
    gold_every: object          # gold label under the chapter's alignment (tag or -100)
    gold_first: object          # gold label under first-subword alignment (tag or -100)
    predicted: str | None       # the model's argmax tag for this subword
    decoded: str | None         # the word's decoded tag (first subword only)
    wrong: bool                 # decoded tag differs from the gold word tag (first subwords only)


def alignment_table(words, tokens, word_ids, predicted=None, gold=None) -> list[AlignmentColumn]:
    """Columns of the alignment viewer. ``predicted``: one tag per subword (or None); ``gold``: one tag per word
    (or None). Decoding is the chapter's: each word takes its first subword's tag."""
    if gold is not None and len(gold) != len(words):
        raise ValueError(f"{len(gold)} gold tags for {len(words)} words: give one tag per word")
    every = align_labels(list(gold), word_ids, "every") if gold is not None else [None] * len(tokens)
    first_al = align_labels(list(gold), word_ids, "first") if gold is not None else [None] * len(tokens)
    firsts = set(first_subword_positions(word_ids))
    cols = []
    for i, (tok, w) in enumerate(zip(tokens, word_ids)):
        if tok == "[PAD]":
            break
        is_first = i in firsts
        pred = predicted[i] if predicted is not None else None
        decoded = pred if is_first and w is not None else None
        wrong = bool(gold is not None and decoded is not None and decoded != gold[w])
        cols.append(AlignmentColumn(tok, w, is_first, every[i], first_al[i], pred, decoded, wrong))
    return cols


def decoded_entities(words, cols: list[AlignmentColumn]) -> list[tuple[str, str]]:
    """(entity text, type) read from the decoded word tags."""
    tags = ["O"] * len(words)
    for c in cols:
        if c.decoded is not None:
            tags[c.word] = c.decoded
    return [(" ".join(words[a:b + 1]), t) for t, a, b in get_entities(tags)]


def _cell(text, bg="#ffffff", wrong=False, muted=False, cls="") -> str:
    border = "2px dashed #000000" if wrong else "1px solid #cccccc"
    colour = "#888888" if muted else "#000000"
    mark = "✗ " if wrong else ""
    return (f"<td class='{cls}' style='background:{bg};border:{border};color:{colour};padding:2px 5px;"
            f"text-align:center;font-family:monospace;white-space:nowrap'>{html.escape(mark + str(text))}</td>")


def alignment_html(words, cols: list[AlignmentColumn]) -> str:
    """The viewer's table: rows word / subword / gold (every) / gold (first) / predicted / decoded."""
    has_gold = any(c.gold_every is not None for c in cols)
    has_pred = any(c.predicted is not None for c in cols)
    head = "<th style='text-align:right;padding-right:8px;white-space:nowrap'>{}</th>"
    rows = []
    rows.append("<tr>" + head.format("word") + "".join(
        _cell(words[c.word] if c.word is not None and c.first else ("" if c.word is not None else "—"), muted=c.word is None)
        for c in cols) + "</tr>")
    rows.append("<tr>" + head.format("subword") + "".join(_cell(c.token, muted=c.word is None) for c in cols) + "</tr>")
    if has_gold:
        for name, attr in (("gold, every subword (chapter)", "gold_every"), ("gold, first subword only", "gold_first")):
            rows.append("<tr>" + head.format(name) + "".join(
                _cell(getattr(c, attr), _tag_colour(getattr(c, attr)), muted=getattr(c, attr) == IGNORE_INDEX,
                      cls="ignored" if getattr(c, attr) == IGNORE_INDEX else "") for c in cols) + "</tr>")
    if has_pred:
        rows.append("<tr>" + head.format("predicted (argmax per subword)") + "".join(
            _cell(c.predicted if c.word is not None else "", _tag_colour(c.predicted) if c.word is not None else "#ffffff")
            for c in cols) + "</tr>")
        rows.append("<tr>" + head.format("word tag (first subword)") + "".join(
            _cell(c.decoded if c.decoded is not None else "", _tag_colour(c.decoded), wrong=c.wrong,
                  cls="wrong" if c.wrong else "") for c in cols) + "</tr>")
    table = ("<table class='alignment-table' style='border-collapse:collapse;font-size:12px'>"
             + "".join(rows) + "</table>")
    chips = ""
    if has_pred:
        ents = decoded_entities(words, cols)
        chips = "<div class='entities' style='margin-top:6px'><b>entities:</b> " + (" ".join(
            f"<span class='entity' style='background:{TYPE_COLOURS.get(t, OTHER_COLOUR)};padding:2px 6px;"
            f"border-radius:4px;margin:2px'>{html.escape(text)} <b>{t}</b></span>" for text, t in ents) or "none") + "</div>"
    n_wrong = sum(c.wrong for c in cols)
    summary = (f"<div class='alignment-summary'>{n_wrong} of {len(words)} words tagged wrong (✗)</div>"
               if has_gold and has_pred else "")
    return f"<div style='overflow-x:auto'>{table}</div>{chips}{summary}"


# ----------------------------------------------------------------------------- QA strips

@dataclass(frozen=True)
class QAStrips:
    """Bars of the QA span viewer: positions shown (the [CLS] token, then the context tokens) with their tokens,
    P(start), P(end), and the best span as positions in ``positions``."""

    positions: list[int]
    tokens: list[str]
    p_start: list[float]
    p_end: list[float]
    span: tuple[int, int]
    no_answer: bool


def qa_strips(view: dict) -> QAStrips:
    """From :meth:`QAReader.answer`'s dict to the bars shown: [CLS] and the context tokens, question left out."""
    ctx = [i for i, m in enumerate(view["context_mask"].tolist()) if m]
    keep = [0] + ctx
    return QAStrips(keep, [view["tokens"][i] for i in keep], [float(view["p_start"][i]) for i in keep],
                    [float(view["p_end"][i]) for i in keep], tuple(view["span"]), bool(view["no_answer"]))


def qa_svg(strips: QAStrips, cell: int = 22, height: int = 70) -> str:
    """Two bar strips over the tokens (P(start) above, P(end) below), the best span shaded, tokens between."""
    n = len(strips.tokens)
    left, label_h = 70, 70
    W_ = left + n * cell + 10
    H = 2 * height + label_h + 40  # room for the caption under the shaded span and the dashed [CLS] box
    span_a, span_b = strips.positions.index(strips.span[0]), strips.positions.index(strips.span[1])
    top = 20
    out = [f"<svg class='qa-strips' xmlns='http://www.w3.org/2000/svg' width='{W_}' height='{H}' "
           f"font-family='sans-serif' font-size='11'>",
           f"<rect x='{left + span_a * cell}' y='{top}' width='{(span_b - span_a + 1) * cell}' "
           f"height='{2 * height + label_h}' fill='{SPAN_COLOUR}' opacity='0.45' class='best-span'/>"]
    if strips.no_answer:
        out.append(f"<rect x='{left}' y='{top}' width='{cell}' height='{2 * height + label_h}' fill='none' "
                   f"stroke='#000' stroke-width='2' stroke-dasharray='4,2' class='no-answer'/>")
    out.append(f"<text x='{left - 6}' y='{top + height / 2}' text-anchor='end'>P(start)</text>")
    out.append(f"<text x='{left - 6}' y='{top + height + label_h + height / 2}' text-anchor='end'>P(end)</text>")
    ymax = max(max(strips.p_start), max(strips.p_end), 1e-9)
    for k, (tok, ps, pe) in enumerate(zip(strips.tokens, strips.p_start, strips.p_end)):
        x = left + k * cell
        hs, he = height * ps / ymax, height * pe / ymax
        out.append(f"<rect class='p-start' x='{x + 3}' y='{top + height - hs:.1f}' width='{cell - 6}' height='{hs:.1f}' "
                   f"fill='{START_COLOUR}'><title>P(start = {html.escape(tok)}) = {ps:.3f}</title></rect>")
        out.append(f"<rect class='p-end' x='{x + 3}' y='{top + height + label_h}' width='{cell - 6}' height='{he:.1f}' "
                   f"fill='{END_COLOUR}'><title>P(end = {html.escape(tok)}) = {pe:.3f}</title></rect>")
        ty = top + height + 6
        out.append(f"<text x='{x + cell / 2}' y='{ty}' transform='rotate(90 {x + cell / 2} {ty})' "
                   f"font-family='monospace'>{html.escape(tok[:10])}</text>")
    out.append(f"<line x1='{left}' x2='{W_ - 10}' y1='{top + height}' y2='{top + height}' stroke='#555'/>")
    out.append(f"<line x1='{left}' x2='{W_ - 10}' y1='{top + height + label_h}' y2='{top + height + label_h}' "
               f"stroke='#555'/>")
    out.append(f"<text x='{left}' y='{H - 4}'>bars scaled to the largest probability ({ymax:.2f}); shaded: the best "
               f"span{'; dashed: [CLS] wins, no answer' if strips.no_answer else ''}</text>")
    out.append("</svg>")
    return "".join(out)


def qa_answer_html(view: dict) -> str:
    """The answer line under the strips."""
    i, j = view["span"]
    t = float(view.get("null_threshold", 0.0))  # a reader's no-answer threshold: [CLS] must win by more than t
    plus = f" + threshold {t:.2f}" if t else ""
    if view["no_answer"]:
        return (f"<div class='qa-answer'><b>no answer</b>: [CLS] scores {view['null_score']:.2f} &gt; best span "
                f"{view['span_score']:.2f}{plus} (“{html.escape(view['text'])}”)</div>")
    return (f"<div class='qa-answer'><b>answer:</b> “{html.escape(view['text'])}” (tokens {i}–{j}, score "
            f"{view['span_score']:.2f}; [CLS] {view['null_score']:.2f}{', threshold ' + format(t, '.2f') if t else ''})</div>")


def value_bars(ax, groups, series: dict, colours, fmt: str = "{:.2f}", width: float = 0.27) -> list:
    """One bar per group and series (``series``: name -> one value per group) with the value printed on each bar,
    so that a zero is read as 0, not as a bar left out. Returns the text labels drawn."""
    n, labels = len(series), []
    for k, ((name, values), colour) in enumerate(zip(series.items(), colours)):
        xs = [g + (k - (n - 1) / 2) * width for g in range(len(groups))]
        bars = ax.bar(xs, values, width=width, color=colour, label=name)
        labels += ax.bar_label(bars, labels=[fmt.format(v) for v in values], fontsize=7.5, padding=1)
    ax.set_xticks(range(len(groups)), groups)
    return labels
