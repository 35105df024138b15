"""Game dialogue and narration from Debian packages (Wesnoth, Endless Sky, Dungeon Crawl), and the small text
helpers the Debian extractors share (``read_text``, ``normalise``, ``is_prose``)."""
from __future__ import annotations

import gzip
import re
from collections.abc import Iterator
from pathlib import Path

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_SYMBOL_RUN = re.compile(r"([^\w\s.])\1{3,}")       # ____  ====  ||||  ****: drawings and rulers


def read_text(path: Path) -> str:
    """A file (gzipped or not) as text: UTF-8, else Latin-1; backspace overstrikes and control characters gone."""
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    text = re.sub(r".\x08", "", text)
    return _CONTROL.sub("", text)


def normalise(text: str) -> str:
    """Whitespace runs -> one space; no space before , ; : . ! ?"""
    text = " ".join(text.split())
    return re.sub(r"\s+([,;:.!?])(?=\s|$)", r"\1", text)


def is_prose(text: str, min_words: int = 6, letters: float = 0.75) -> bool:
    """At least ``min_words`` words, mostly letters, no drawing made of repeated symbols."""
    if len(text.split()) < min_words or _SYMBOL_RUN.search(text):
        return False
    chars = [c for c in text if not c.isspace()]
    return sum(c.isalpha() for c in chars) >= letters * len(chars)


_MARKUP = re.compile(r"[<>{}$@\[\]|\\=]|&\w+;")
_START = re.compile(r"^[\"'“‘(]*[A-Z]|^\.\.\.|^…")


def sentence(text: str, min_words: int = 6) -> str:
    """``text`` normalised if it reads as a sentence (capital start, end punctuation, no markup), else ''."""
    text = normalise(text)
    if not text or _MARKUP.search(text) or not _START.match(text) or text[-1] not in ".!?\"')”’…":
        return ""
    return text if is_prose(text, min_words) else ""


# ------------------------------------------------------------------------------------------------ wesnoth

WESNOTH_SKIP_DIRS = {"test", "languages", "gui", "lua", "tools"}
_WML_STRING = re.compile(r'\b_\s*"((?:[^"]|"")*)"', re.S)
_SIMPLE_TAGS = re.compile(r"</?(?:b|i|u|big|small|tt)>|<span(?: \w+='[^'<>]*')*>|</span>")


def wesnoth_strings(cfg: str) -> Iterator[str]:
    """The paragraphs of the translatable strings ``_ "..."`` of one .cfg file (``""`` is a quote)."""
    cfg = "\n".join(ln for ln in cfg.splitlines() if not ln.lstrip().startswith("#"))
    for m in _WML_STRING.finditer(cfg):
        value = _SIMPLE_TAGS.sub("", m.group(1).replace('""', '"')).replace("&amp;", "&")
        value = re.sub(r"^[\w ]+\^", "", value)  # a translation context: female^, race+plural^
        for part in re.split(r"\n\s*\n", value):
            text = sentence(part)
            if text:
                yield text


def wesnoth(roots: list[Path]) -> Iterator[str]:
    for root in roots:
        for path in sorted(root.rglob("*.cfg")):
            if not WESNOTH_SKIP_DIRS & set(path.relative_to(root).parts):
                yield from wesnoth_strings(read_text(path))


# -------------------------------------------------------------------------------------------- endless sky

ENDLESS_SKY_DATA = "usr/share/games/endless-sky/data"
_ES_BACKQUOTED = re.compile(r"`([^`]*)`")
_ES_QUOTED = re.compile(r'"([^"]*)"')


def endless_sky_strings(data: str) -> Iterator[str]:
    """The sentences of one data file: each line's backquoted strings, or else its double-quoted ones."""
    for ln in data.splitlines():
        if ln.lstrip().startswith("#"):
            continue
        for value in _ES_BACKQUOTED.findall(ln) or _ES_QUOTED.findall(ln):
            value = re.sub(r"^\s*\[([^\[\]]*)\]\s*$", r"\1", value)  # a tutorial aside in [brackets]
            text = sentence(value)
            if text:
                yield text


def endless_sky(roots: list[Path]) -> Iterator[str]:
    for path in sorted((roots[0] / ENDLESS_SKY_DATA).rglob("*.txt")):
        yield from endless_sky_strings(read_text(path))


# -------------------------------------------------------------------------------------------------- crawl

CRAWL_DIRS = ("usr/share/crawl/dat", "usr/share/games/crawl/dat")


def crawl_entries(data: str) -> Iterator[str]:
    """The paragraphs of one ``%%%%``-separated file (key lines, comments and quote attributions dropped)."""
    data = "\n".join(ln for ln in data.splitlines() if not ln.startswith("#"))
    for entry in re.split(r"(?m)^%%%%[ \t]*$", data):
        body = entry.strip().split("\n", 1)   # the first line is the key
        if len(body) < 2:
            continue
        for part in re.split(r"\n\s*\n", body[1]):
            lines = [ln for ln in part.splitlines() if not re.match(r"\s*[-—]\s?[A-Z\"“_]", ln)]
            text = sentence("\n".join(lines))
            if text:
                yield text


def crawl(roots: list[Path]) -> Iterator[str]:
    for folder in CRAWL_DIRS:
        for sub in ("descript", "database"):   # *.txt directly inside: English (translations are in folders)
            for path in sorted((roots[0] / folder / sub).glob("*.txt")):
                yield from crawl_entries(read_text(path))
