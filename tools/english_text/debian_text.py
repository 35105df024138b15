"""Plain-text sources from Debian packages: fortune cookies, An Anarchist FAQ, the Jargon File and the game
dialogue of ``games.py``. Each extractor takes the unpacked roots (in the order of the Source's packages) and
yields paragraphs of plain English prose, whitespace normalised and markup removed."""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from .base import Source
from .fetch import Package
from .games import crawl, endless_sky, is_prose, normalise, read_text, wesnoth

# ----------------------------------------------------------------------------------------------- fortunes

FORTUNE_DIR = "usr/share/games/fortunes"
_CODE_LINE = re.compile(r"[;{}]\s*$|^\s*(?:#include|#!|//|/\*|\$\w+\s*=|sub |my \$|print )")
_SKIP_FORTUNE_FILES = {"ascii-art"}
_TRAILING_ATTRIBUTION = re.compile(r"(?<=[.!?\"')])\s+--\s+([A-Z\"'(][^\n]{0,80})$")


def fortune_entry(entry: str) -> str:
    """One ``%``-separated fortune as one paragraph ('' for code, art, or an entry that is mostly not letters)."""
    lines = entry.splitlines()
    if sum(bool(_CODE_LINE.search(ln)) for ln in lines) >= 2:
        return ""
    kept, attribution_indent = [], None
    for ln in lines:
        indent = len(ln.expandtabs()) - len(ln.expandtabs().lstrip())
        if ln.strip().startswith("--"):
            attribution_indent = indent
            continue
        if attribution_indent is not None and ln.strip() and indent >= attribution_indent:
            continue  # the attribution's continuation lines (book title, date)
        attribution_indent = None
        kept.append(ln)
    while kept and not kept[-1].strip():
        kept.pop()
    if kept:
        kept[-1] = _TRAILING_ATTRIBUTION.sub("", kept[-1].rstrip())
    text = normalise("\n".join(kept)).replace("`", "'")
    text = re.sub(r"^BOFH excuse #\d+:\s*", "", text)
    return text if is_prose(text, min_words=4) else ""


def split_clean(text: str, separator: str, clean) -> Iterator[str]:
    """The non-empty results of ``clean`` on the parts of ``text`` between matches of ``separator``."""
    for part in re.split(separator, text):
        if part.strip():
            cleaned = clean(part)
            if cleaned:
                yield cleaned


def fortunes(roots: list[Path]) -> Iterator[str]:
    for root in roots:
        folder = root / FORTUNE_DIR
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):  # not recursive: the offensive ones are in off/
            if (not path.is_file() or path.is_symlink() or path.suffix in (".dat", ".u8")
                    or path.name in _SKIP_FORTUNE_FILES):
                continue
            yield from split_clean(read_text(path), r"(?m)^%[ \t]*$", fortune_entry)


# ------------------------------------------------------------------------------------------- anarchist FAQ

FAQ_DIR = "usr/share/doc/anarchism/markdown"
_LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^()]*(?:\([^()]*\)[^()]*)*)\)")
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!>|])")


def markdown_inline(text: str) -> str:
    """Links -> their text, images, html tags, emphasis markers and backslash escapes removed."""
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", text)
    text = _LINK.sub(lambda m: m.group(1), text)
    text = re.sub(r"<https?://[^>]*>|</?[a-zA-Z][^>]*>", "", text)
    text = text.replace("**", "").replace("__", "")
    text = re.sub(r"(?<![\w\\])[_*](?=\S)|(?<=[^\s\\])[_*](?!\w)", "", text)
    text = _ESCAPE.sub(r"\1", text)
    text = re.sub(r"\[\s+", "[", text)
    return normalise(text)


def markdown_block(block: str) -> str:
    """One blank-line-separated markdown block as a paragraph ('' for headings, tables, code, link lists)."""
    lines = block.splitlines()
    first = lines[0].lstrip()
    if first.startswith(("#", "|", "```", "~~~")) or all(ln.startswith(("    ", "\t")) for ln in lines):
        return ""
    link_chars = sum(len(m.group(0)) for m in _LINK.finditer(block))
    if link_chars > 0.5 * len(block.strip()):
        return ""  # a table of contents
    body = []
    for ln in lines:
        ln = re.sub(r"^\s*(?:>\s?)+", "", ln)                 # block quote markers (the quote is kept)
        ln = re.sub(r"^\s*(?:[*+-]|\d+\\?\.)\s+", "", ln)     # list bullets
        body.append(ln)
    text = markdown_inline("\n".join(body))
    return text if is_prose(text, min_words=8) and text[-1] in ".!?:;\"')]”’" else ""


def anarchist_faq(roots: list[Path]) -> Iterator[str]:
    for path in sorted((roots[0] / FAQ_DIR).glob("*.md.gz")):
        yield from split_clean(read_text(path), r"\n\s*\n", markdown_block)


# ----------------------------------------------------------------------------------------------- jargon

JARGON_TXT = "usr/share/doc/jargon-text/jargon.txt.gz"
_HEADWORD = re.compile(r"^:([^:\n]+):")
_XREF_WORDS = re.compile(r"\b(?:See|see|also|Also|Compare|compare|Cf\.|Syn\.|Antonym:?|Oppose|and|or)\b|[.,;:]")
_END = ".!?:;\"')]”’"


def jargon_block(block: str, head: str | None) -> str:
    """A definition paragraph, the headword ``head`` put before the first one ('' for cross-references)."""
    text = normalise(block).replace("`", "'")
    text = re.sub(r"^\d+\.\s+", "", text)                            # sense numbers
    text = re.sub(r"^\[[^\]\s]+(?:\s[^\]\s]+){0,2}\]\s*", "", text)  # [Usenet], [techspeak], [MIT]: usage labels
    if not _XREF_WORDS.sub("", re.sub(r"\{[^}]*\}", "", text)).split():
        return ""  # only "See {foo}." or "Syn. {bar}."
    text = text.replace("{", "").replace("}", "")
    if not is_prose(text, min_words=5) or text[-1] not in _END:
        return ""
    return f"{head}: {text}" if head else text


def jargon(roots: list[Path]) -> Iterator[str]:
    head = None
    for block in re.split(r"\n\s*\n", read_text(roots[0] / JARGON_TXT)):
        if not block.strip():
            continue
        m = _HEADWORD.match(block.strip())
        if m:
            head = m.group(1).strip()
            continue
        text = jargon_block(block, head)
        if text:
            head = None
            yield text


# ------------------------------------------------------------------------------------------------ sources

def _deb(*names: str) -> tuple[Package, ...]:
    return tuple(Package("debian", n) for n in names)


WESNOTH_CAMPAIGNS = ("did", "dm", "dw", "ei", "httt", "l", "low", "nr", "sof", "sota", "sotbe", "thot", "trow",
                     "tsg", "ttb", "utbs")

SOURCES: list[Source] = [
    Source("fortunes", "Fortune cookies (fortune-mod, BLAG anarchism, BOFH excuses)",
           _deb("fortunes", "fortunes-min", "fortune-anarchism", "fortunes-bofh-excuses"),
           "BSD (fortune-mod); public domain (fortune-anarchism, fortunes-bofh-excuses)", "conversational",
           fortunes, licence_files=("usr/share/doc/fortunes/copyright",),
           note="One paragraph per %-separated fortune (not the offensive off/ ones), attributions, code and "
                "ASCII art dropped."),
    Source("anarchist-faq", "An Anarchist FAQ", _deb("anarchism"), "GPL-2", "speech", anarchist_faq,
           licence_files=("usr/share/doc/anarchism/copyright",), cap_words=600_000,
           note="The markdown edition's prose paragraphs and block quotes, markdown removed; headings, tables "
                "of contents and tables dropped."),
    Source("jargon", "The Jargon File 4.4.7", _deb("jargon-text"), "public domain", "conversational", jargon,
           licence_files=("usr/share/doc/jargon-text/copyright",),
           note="The plain-text edition's paragraphs, each entry's first definition prefixed with its headword; "
                "pronunciations, usage labels and cross-reference-only lines dropped."),
    Source("wesnoth", "The Battle for Wesnoth 1.16 (campaigns and unit descriptions)",
           _deb("wesnoth-1.16-data", *(f"wesnoth-1.16-{c}" for c in WESNOTH_CAMPAIGNS)), "GPL-2+",
           "conversational", wesnoth, licence_files=("usr/share/doc/wesnoth-1.16-data/copyright",),
           note="The translatable strings (_ \"...\") of the .cfg files with at least 6 words that read as "
                "sentences; strings with markup or variables dropped."),
    Source("endless-sky", "Endless Sky (missions, conversations and descriptions)", _deb("endless-sky-data"),
           "GPL-3+", "conversational", endless_sky, licence_files=("usr/share/doc/endless-sky-data/copyright",),
           note="The quoted and backquoted strings of data/*.txt with at least 6 words that read as sentences; "
                "strings with <placeholders> dropped."),
    Source("crawl", "Dungeon Crawl Stone Soup (descriptions, quotes and speech)", _deb("crawl-common"), "GPL-2+",
           "conversational", crawl, licence_files=("usr/share/doc/crawl-common/copyright",),
           note="The %%%%-separated English entries of dat/descript and dat/database, paragraph by paragraph; "
                "quote attributions and entries with markup dropped."),
]
