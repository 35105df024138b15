"""What the whole class got right and wrong, exercise by exercise: written by ``grade-all`` beside the gradebook.

For each exercise of the class's notebooks: how many submissions got it correct, wrong, or did not attempt it,
and the most frequent mistakes, grouped by the hint each wrong answer got. The checks give one fixed hint per
kind of mistake on fixed inputs, so the same misconception gives the same message ("the weights sum to 1 along
axis -2 instead of along each row" for 38% of the class tells the teacher what to explain again).

    <gradebook>_report.md    a table and each exercise's top mistakes, with the chart
    <gradebook>_report.csv   one row per exercise: counts, shares, the three most frequent mistakes
    <gradebook>_report.svg   stacked bars per exercise (correct / wrong / not attempted)

Files that could not be graded count as "not graded" in every exercise of their chapter. The files are the same
for the same submissions (sorted, no timestamps).
"""
from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import dataclass, field

from ..views.svg import FONT, esc
from .core import CORRECT, NOT_ATTEMPTED, WRONG
from .untrusted import clean_text, md_inline

NOT_GRADED = "not graded"
KINDS = (CORRECT, WRONG, NOT_ATTEMPTED, NOT_GRADED)
# Okabe-Ito, readable with every kind of colour blindness; the bars also carry hatching and labels
COLOURS = {CORRECT: "#009E73", WRONG: "#D55E00", NOT_ATTEMPTED: "#E6E6E6", NOT_GRADED: "#999999"}
TOP = 3


@dataclass
class ExerciseSummary:
    name: str
    counts: Counter = field(default_factory=Counter)      # kind -> submissions
    mistakes: Counter = field(default_factory=Counter)    # hint of a wrong answer -> submissions

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def share(self, kind: str) -> float:
        return self.counts[kind] / self.total if self.total else 0.0

    def top_mistakes(self, n: int = TOP) -> list[tuple[str, int]]:
        return sorted(self.mistakes.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def summarise(rows: list[tuple[list, str | None]], names: list[str]) -> list[ExerciseSummary]:
    """``rows``: for each submission, its results for the columns of its chapter and its error (None when it was
    graded). Returns one summary per exercise of ``names`` that some submission is graded on."""
    out = {n: ExerciseSummary(n) for n in names}
    for results, error in rows:
        for r in results:
            if r.name not in out:
                continue
            s = out[r.name]
            if error is not None:
                s.counts[NOT_GRADED] += 1
            elif r.status == CORRECT:
                s.counts[CORRECT] += 1
            elif r.status == WRONG:
                s.counts[WRONG] += 1
                s.mistakes[clean_text(r.message).strip() or "(no message)"] += 1
            else:
                s.counts[NOT_ATTEMPTED] += 1
    return [s for s in out.values() if s.total]


def report_csv(summaries: list[ExerciseSummary]) -> str:
    from .gradebook import text_cell

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    head = ["exercise", "submissions", *KINDS, *(f"share {k}" for k in KINDS)]
    for i in range(1, TOP + 1):
        head += [f"mistake {i}", f"mistake {i}: submissions"]
    w.writerow(head)
    for s in summaries:
        row = [s.name, s.total, *(s.counts[k] for k in KINDS), *(f"{s.share(k):.3f}" for k in KINDS)]
        top = s.top_mistakes()
        for i in range(TOP):
            row += list(top[i]) if i < len(top) else ["", ""]
        w.writerow([text_cell(str(c)) for c in row])
    return buf.getvalue()


def _pct(x: float) -> str:
    return f"{x:.0%}"


def report_markdown(summaries: list[ExerciseSummary], chart: str | None = None) -> str:
    n = max((s.total for s in summaries), default=0)
    lines = ["# Class report", "",
             f"{n} submissions. Per exercise: the share correct, wrong and not attempted, and the most frequent "
             "mistakes, grouped by the hint each wrong answer got.", ""]
    if chart:
        lines += [f"![correct, wrong and not attempted per exercise]({chart})", ""]
    lines += ["| exercise | correct | wrong | not attempted | not graded | most frequent mistake |",
              "|---|---|---|---|---|---|"]
    for s in summaries:
        top = s.top_mistakes(1)
        first = f"{_pct(top[0][1] / s.total)}: {_md(top[0][0], 90)}" if top else ""
        lines.append(f"| {s.name} | {_pct(s.share(CORRECT))} | {_pct(s.share(WRONG))} | {_pct(s.share(NOT_ATTEMPTED))} "
                     f"| {_pct(s.share(NOT_GRADED))} | {first} |")
    worst = sorted((s for s in summaries if s.mistakes), key=lambda s: (-s.share(WRONG), s.name))
    if worst:
        lines += ["", "## Mistakes, exercise by exercise", ""]
    for s in worst:
        lines += [f"### {s.name}: {s.counts[WRONG]} of {s.total} wrong", ""]
        lines += [f"- {_pct(k / s.total)} ({k}): {_md(msg, 400)}" for msg, k in s.top_mistakes()]
        if len(s.mistakes) > TOP:
            rest = sum(s.mistakes.values()) - sum(k for _, k in s.top_mistakes())
            lines.append(f"- and {rest} more wrong answers with {len(s.mistakes) - TOP} other hints")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _md(text: str, limit: int) -> str:
    """A hint as text in one line of a Markdown table or list, cut at ``limit`` characters: no line breaks or
    control characters, and what Markdown or HTML would read (a pipe, ``<img>``, a link) escaped, as a hint may
    quote the student's text (:mod:`.untrusted`); the hint's own code spans stay code."""
    text = " ".join(clean_text(text).split())
    return md_inline(text if len(text) <= limit else text[:limit - 1] + "…")


def _swatch(x: float, y: float, w: float, h: float, kind: str, bar: str = "") -> list[str]:
    """A rectangle in the colour of ``kind``, hatched when it is 'wrong' (``bar``: the bar's class and title)."""
    cls = " class='bar'" if bar else ""
    out = [f"<rect{cls} x='{x:.1f}' y='{y:.1f}' width='{w:.1f}' "
           f"height='{h}' fill='{COLOURS[kind]}' stroke='#333333' stroke-width='0.5'>"
           + (f"<title>{esc(bar)}</title>" if bar else "") + "</rect>"]
    if kind == WRONG:
        out.append(f"<rect x='{x:.1f}' y='{y:.1f}' width='{w:.1f}' height='{h}' fill='url(#hatch)'/>")
    return out


def report_svg(summaries: list[ExerciseSummary], width: int = 720) -> str:
    """Stacked horizontal bars, one per exercise: correct / wrong / not attempted / not graded, with a legend."""
    left, bar_h, gap, top = 190, 18, 6, 34
    plot_w = width - left - 60
    height = top + len(summaries) * (bar_h + gap) + 40
    parts = [f"<svg class='class-report' xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
             f"font-family='{FONT}' font-size='12'>",
             "<defs><pattern id='hatch' width='6' height='6' patternUnits='userSpaceOnUse' "
             "patternTransform='rotate(45)'><line x1='0' y1='0' x2='0' y2='6' stroke='#ffffff' stroke-width='2'/>"
             "</pattern></defs>",
             f"<rect x='0' y='0' width='{width}' height='{height}' fill='white'/>",
             f"<text x='{left}' y='16' font-weight='bold'>share of submissions per exercise</text>"]
    for i, s in enumerate(summaries):
        y = top + i * (bar_h + gap)
        parts.append(f"<text x='{left - 6}' y='{y + bar_h - 5}' text-anchor='end'>{esc(s.name)}</text>")
        x = float(left)
        for kind in KINDS:
            w = plot_w * s.share(kind)
            if w <= 0:
                continue
            parts += _swatch(x, y, w, bar_h, kind, bar=f"{s.name}: {kind} {s.counts[kind]} of {s.total}")
            if w >= 34:  # black on a white halo: readable on every colour and on the hatching
                parts.append(f"<text x='{x + w / 2:.1f}' y='{y + bar_h - 5}' text-anchor='middle' fill='#000000' "
                             f"stroke='#ffffff' stroke-width='3' paint-order='stroke'>{_pct(s.share(kind))}</text>")
            x += w
    y = top + len(summaries) * (bar_h + gap) + 10
    x = left
    for kind in KINDS:
        parts += _swatch(x, y, 12, 12, kind)
        parts.append(f"<text x='{x + 16}' y='{y + 11}'>{kind}</text>")
        x += 16 + 8 * len(kind) + 18
    parts.append("</svg>")
    return "".join(parts)
