"""GCIDE, the GNU Collaborative International Dictionary of English (Debian ``dict-gcide``, GPL-2+): its
definitions and quotations as plain-text paragraphs (markup, etymologies, pronunciations and source tags removed).
The only training text of course-bert v1; one source among many for v2."""
from __future__ import annotations

import gzip
import re
from collections.abc import Iterator
from pathlib import Path

from .base import Source
from .fetch import Package

GCIDE_DICT = Path("usr/share/dictd/gcide.dict.dz")
MIN_WORDS = 6


_SOURCE_TAG = re.compile(r"^\s*\[[^\]]*(?:Webster|PJC|WordNet|Century|Chambers)[^\]]*\].*$")
_TRAILING_TAG = re.compile(r"\[[^\]]*(?:Webster|PJC|WordNet|Century|Chambers)[^\]]*\].*$")
_ATTRIBUTION = re.compile(r"\s--\s?[A-Z][^\n]*$|^\s*--[A-Z][^\n]*$")
_ACCENT = re.compile(r"\[([`'\"=~^.,\-]?)([A-Za-z]{1,2})([`'\"=~^.,\-]?)\]")
_SPECIAL = {"[ae]": "ae", "[AE]": "Ae", "[oe]": "oe", "[OE]": "Oe", "[imac]": "i", "[aum]": "a", "[eth]": "th",
            "[thorn]": "th", "[ng]": "ng", "[oo^]": "oo", "[=oo]": "oo", "[.oo]": "oo", "[root]": "", "[add]": "",
            "[asl]": "", "[deg]": " degrees", "[frac12]": " 1/2", "[frac14]": " 1/4", "[frac34]": " 3/4"}
_SENSE = re.compile(r"(?:^|(?<=\s))(?:\d{1,2}\.|\([a-z0-9]{1,2}\))(?=\s)")
_POS = re.compile(r"^(?:(?:n|a|adj|adv|v|t|i|p|pr|pl|imp|vb|prep|conj|interj|pron|superl|compar|sing|obs|"
                  r"pos|fem|masc)\.\s*(?:&\s*)?|,\s*)+")
_LABEL = re.compile(r"\((?:[A-Z][A-Za-z]*\.?\s?){1,3}\)")  # (Zool.), (Bot.), (Naut.), (Her.)


def _balanced_brackets_removed(text: str) -> str:
    """Drop every [...] span (etymologies, usage labels, source tags), nested accent codes included."""
    out, depth = [], 0
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def clean_block(block: str, is_head: bool) -> str:
    """One blank-line-separated block of a GCIDE entry as plain text ('' if nothing is left)."""
    lines = [ln for ln in block.splitlines() if not _SOURCE_TAG.match(ln)]
    lines = [_TRAILING_TAG.sub("", ln) for ln in lines]  # "... [1913 Webster] Nextword": the rest is the index's
    lines = [_ATTRIBUTION.sub("", ln) for ln in lines]
    lines = [ln for ln in lines if not ln.strip().startswith(("Syn:", "Syn.", "Syn "))]
    text = "\n".join(lines)
    if is_head:  # "Anchovy \An*cho"vy\ ([a^]n*ch[=o]"v[y^]), n. [Sp. anchoa ...] (Zool.) A small fish ..."
        last = text.rfind("\\")
        if last < 0:
            return ""
        text = text[last + 1:]
        text = re.sub(r"^\s*\([^)]*\)", "", text)  # a pronunciation in parentheses
    for code, repl in _SPECIAL.items():
        text = text.replace(code, repl)
    text = _ACCENT.sub(lambda m: m.group(2), text)
    text = _balanced_brackets_removed(text)
    text = " ".join(text.split())
    text = text.replace("{", "").replace("}", "")
    text = _LABEL.sub("", text)
    text = _POS.sub("", text.strip()) if is_head else text
    text = re.sub(r"^Note:\s*", "", text.strip())
    text = _SENSE.sub("", text)
    text = " ".join(text.split())
    text = re.sub(r"\s+([,;:.!?])", r"\1", text).strip(" ,;:-")
    return text


def is_prose(text: str) -> bool:
    """At least MIN_WORDS words, mostly made of letters, without leftover markup."""
    words = text.split()
    if len(words) < MIN_WORDS or any(c in text for c in "\\<>*"):
        return False
    alpha = sum(w.strip(".,;:!?'\"()-").isalpha() for w in words)
    return alpha >= 0.7 * len(words)


def gcide_paragraphs(root: Path) -> list[str]:
    """GCIDE's definitions and quotations as plain-text paragraphs of >= MIN_WORDS words, in dictionary order,
    without duplicates."""
    with gzip.open(root / GCIDE_DICT, "rt", encoding="utf-8", errors="replace") as f:
        raw = f.read()
    start = raw.find("\n\nA \\A\\")  # skip the database's licence header and "00-database-*" entries
    raw = raw[start:] if start > 0 else raw
    out, seen = [], set()
    for entry in re.split(r"\n\n(?=\S)", raw):
        for i, block in enumerate(re.split(r"\n\s*\n", entry)):
            text = clean_block(block, is_head=(i == 0))
            if not is_prose(text):
                continue
            key = _normalise(text)
            if key not in seen:
                seen.add(key)
                out.append(text)
    return out


def _normalise(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


def gcide(roots: list[Path]) -> Iterator[str]:
    yield from gcide_paragraphs(roots[0])


SOURCES = [
    Source("gcide", "GCIDE (Webster's 1913 and later additions)", (Package("debian", "dict-gcide"),),
           "GPL-2.0-or-later", "dictionary", gcide, licence_files=("usr/share/doc/dict-gcide/copyright",),
           cap_words=1_500_000, modern=False,
           note="definitions and quotations; markup, etymologies, pronunciations and source tags removed; capped"),
]
