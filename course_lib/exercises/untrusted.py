"""Text that comes from a submission, made safe for the grader's outputs: the terminal, the CSV gradebook, the
feedback files and the class report.

A result's message holds text the student chose: an exception's message, a function's ``__qualname__`` or
``__module__``, a type's name, a cell's error, a value the hint quotes. :func:`clean_grade` (called by
:func:`.sandbox.grade_file` on every grade it returns, and by the gradebook on the error it writes when the
grader itself fails) makes each message and error

- writable: a lone surrogate (``"\\ud800"``), which UTF-8 cannot encode, becomes the escape ``\\ud800``;
- one line of plain text: a line break or a tab becomes a space, every other control character (ESC, which
  erases and rewrites a terminal's lines, C1 controls, bidirectional overrides) the visible escape ``\\x1b``;
- at most :data:`MAX_MESSAGE` characters, ending in "…" when cut.

The grader's own messages hold none of these, so cleaning a whole message changes only the student's part.
At the Markdown sinks, :func:`md_inline` escapes what Markdown or HTML would read (``<img>``, ``[link](…)``,
``**bold**``, ``|`` in a table), keeping the code spans of the grader's messages (`` `mask_tokens` ``) as code,
and :func:`md_fence` opens a code block that no line of its text can close.
"""
from __future__ import annotations

import dataclasses
import re

MAX_MESSAGE = 2000  # characters of a result's message or a grade's error

_SPACE = (0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x85, 0x2028, 0x2029)  # what splitlines() breaks at, and tab
_ESCAPED = (*range(0x20), 0x7F, *range(0x80, 0xA0),  # C0, DEL, C1
            0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))  # bidirectional controls
_TABLE = {c: " " for c in _SPACE} | {c: (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}") for c in _ESCAPED if c not in _SPACE}


def clean_text(text, limit: int = MAX_MESSAGE) -> str:
    """``text`` as one line of printable, UTF-8-encodable text of at most ``limit`` characters (idempotent)."""
    text = text if isinstance(text, str) else str(text)
    cut = len(text) > limit
    text = text[:limit].encode("utf-8", "backslashreplace").decode("utf-8").translate(_TABLE)
    if cut or len(text) > limit:
        text = text[:limit - 1] + "…"
    return text


def clean_grade(grade):
    """``grade`` (a :class:`.grading.Grade`) with its error and each result's name and message cleaned."""
    results = [dataclasses.replace(r, name=clean_text(r.name), message=clean_text(r.message))
               if isinstance(r.message, str) else r for r in grade.results]
    error = clean_text(grade.error) if grade.error is not None else None
    return dataclasses.replace(grade, results=results, error=error)


# ----------------------------------------------------------------------------- Markdown

_MD_SPECIAL = re.compile(r"_+|[\\`*\[\]~|$<>&]")
_ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}


def _md_plain(text: str) -> str:
    """``text`` with every character Markdown or HTML would read escaped; a ``_`` between letters or digits, which
    cannot start or end emphasis (``mask_tokens``, ``d_k``), stays as it is."""
    def one(m: re.Match) -> str:
        s = m.group()
        if s[0] == "_":
            inside = m.start() > 0 and text[m.start() - 1].isalnum() and m.end() < len(text) and text[m.end()].isalnum()
            return s if inside else "\\_" * len(s)
        return _ENTITIES.get(s, "\\" + s)
    return _MD_SPECIAL.sub(one, text)


def md_inline(text: str) -> str:
    """``text`` (one line) as Markdown that shows it as it is, in a paragraph, a list item or a table cell: HTML,
    links, emphasis and pipes escaped. A code span whose content needs no escaping stays a code span."""
    out, pos = [], 0
    runs = list(re.finditer(r"`+", text))
    j = 0
    while j < len(runs):
        start = runs[j]
        close = next((k for k in range(j + 1, len(runs)) if len(runs[k].group()) == len(start.group())), None)
        if close is not None:
            content = text[start.end():runs[close].start()]
            if _md_plain(content) == content:
                out += [_md_plain(text[pos:start.start()]), text[start.start():runs[close].end()]]
                pos, j = runs[close].end(), close + 1
                continue
        j += 1  # a backtick that opens no harmless code span: escaped with the text around it
    out.append(_md_plain(text[pos:]))
    line = "".join(out)
    return "\\" + line if line.startswith(("#", "+", "-", "=")) else line


def md_fence(lines: list[str]) -> list[str]:
    """``lines`` in a fenced code block whose fence is longer than any run of backticks in them."""
    longest = max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, *lines, fence]
