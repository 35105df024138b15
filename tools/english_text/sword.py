"""Bibles in SWORD zText modules (Debian ``sword-text-*``), read without libsword: the World English Bible (modern)
and the King James Version, as plain-text paragraphs of a few verses, never across a chapter.

A zText module is ``ot.*``/``nt.*`` file triples: ``.bzs`` the blocks (uint32 offset, compressed size,
uncompressed size, little-endian), ``.bzz`` the compressed blocks, ``.bzv`` the verses (uint32 block, uint32
offset in the uncompressed block, uint16 size; ``zText4``: uint32 size), in canonical order, with the book and
chapter introductions as entries of their own. The module's ``mods.d/*.conf`` names its path and compression.
"""
from __future__ import annotations

import bz2
import html
import lzma
import re
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

from .base import Source
from .fetch import Package

MIN_WORDS, MAX_WORDS = 60, 120  # a paragraph: whole verses, about this many words
_DECOMPRESS = {"ZIP": zlib.decompress, "BZIP2": bz2.decompress, "LZMA": lzma.decompress, "XZ": lzma.decompress}


class SwordError(ValueError):
    pass


def read_conf(conf: Path) -> dict[str, str]:
    """A module's .conf as {key: value} (the first value of a repeated key; ``[name]`` under ``"name"``)."""
    out: dict[str, str] = {}
    for line in conf.read_text(encoding="utf-8", errors="replace").splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]") and "name" not in out:
            out["name"] = line[1:-1]
        elif "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            out.setdefault(key.strip(), value.strip())
    return out


def find_module(root: Path, name: str | None = None) -> tuple[Path, dict[str, str]]:
    """The data folder and .conf of the (first, or the named) zText module under an unpacked package."""
    for conf_file in sorted(root.glob("usr/share/sword/mods.d/*.conf")):
        conf = read_conf(conf_file)
        if name is None or conf.get("name", "").lower() == name.lower():
            if conf.get("ModDrv", "").lower() not in ("ztext", "ztext4"):
                raise SwordError(f"{conf_file}: ModDrv {conf.get('ModDrv')!r} is not zText")
            if conf.get("CipherKey"):
                raise SwordError(f"{conf_file}: the module is enciphered")
            return root / "usr/share/sword" / conf["DataPath"].lstrip("./"), conf
    raise SwordError(f"no SWORD module {name or ''} under {root}/usr/share/sword/mods.d")


def raw_verses(data: Path, compress: str = "ZIP", driver: str = "zText") -> Iterator[str]:
    """Every entry of the module's verse index (OT then NT), as the stored markup ('' for an empty entry)."""
    if compress.upper() not in _DECOMPRESS:
        raise SwordError(f"unsupported CompressType {compress!r}")
    decompress = _DECOMPRESS[compress.upper()]
    entry = struct.Struct("<III" if driver.lower() == "ztext4" else "<IIH")
    for testament in ("ot", "nt"):
        if not (data / f"{testament}.bzv").exists():
            continue
        bzs, bzv = (data / f"{testament}.bzs").read_bytes(), (data / f"{testament}.bzv").read_bytes()
        bzz = (data / f"{testament}.bzz").read_bytes()
        blocks = [struct.unpack_from("<III", bzs, i) for i in range(0, len(bzs) - 11, 12)]
        cache: dict[int, bytes] = {}
        for i in range(0, len(bzv) - entry.size + 1, entry.size):
            block, offset, size = entry.unpack_from(bzv, i)
            if size == 0 or block >= len(blocks):
                yield ""
                continue
            if block not in cache:
                cache.clear()  # verses come in order: one block at a time
                start, csize, _usize = blocks[block]
                cache[block] = decompress(bzz[start:start + csize])
            yield cache[block][offset:offset + size].decode("utf-8", errors="replace")


_DROP = re.compile(r"<(note|title|rdg|catchWord|speaker)\b[^>]*?(?<!/)>.*?</\1>", re.S)  # notes, headings, variants
_CANON_TITLE = re.compile(r"<title\b[^>]*canonical=\"true\"[^>]*>(.*?)</title>", re.S)  # psalm superscriptions
_BLOCK_TAG = re.compile(r"</?(?:l|lg|lb|p|div|chapter|milestone|list|item|br)\b[^>]*>")
_TAG = re.compile(r"<[^>]*>")
_CHAPTER = re.compile(r"<chapter\b[^>]*\bsID=")


def plain(markup: str) -> str:
    """A verse's OSIS/ThML/GBF markup as plain text: notes, headings, Strong's numbers and other tags removed."""
    text = _CANON_TITLE.sub(r" \1 ", markup)
    text = _DROP.sub(" ", text)
    text = _BLOCK_TAG.sub(" ", text)
    text = _TAG.sub("", re.sub(r"<[^>]*$", "", text))  # (an entry can end in a cut tag)
    text = re.sub(r"\\[a-z]+[0-9]*\*?", "", text)  # a stray USFM marker, e.g. \\nd
    text = re.sub(r"<[A-Z]{1,2}[^>]*>", "", text)  # GBF tags, e.g. <WH0430>, <FI>
    text = html.unescape(text).replace("\u00b6", " ")  # the pilcrow of KJV paragraph starts
    text = " ".join(text.split())
    return re.sub(r"\s+([,.;:!?])", r"\1", text)


def _starts_paragraph(markup: str) -> bool:
    """Whether the verse opens with a paragraph mark (an OSIS ``<div type="x-p" sID=..>``, ``<p>`` or ``\u00b6``)."""
    lead = re.match(r"(?:\s|\u00b6|<(?!w\b)[^>]*>)*", markup).group()
    return "\u00b6" in lead or "<p>" in lead or bool(re.search(r"<div\b(?=[^>]*\bsID=)[^>]*type=\"x-p\"", lead))


def chapters(verses: Iterator[str]) -> Iterator[list[tuple[str, bool]]]:
    """The verses of each chapter as (plain text, starts a paragraph); book introductions are left out."""
    current: list[tuple[str, bool]] | None = None  # None: before a book's first chapter
    for markup in verses:
        if (book := re.search(r"<div\b[^>]*type=\"book\"", markup)) or _CHAPTER.search(markup):
            if current:
                yield current
            current = None if book and not _CHAPTER.search(markup) else []
            continue  # a book or chapter introduction (title, milestones)
        if current is not None and (text := plain(markup)):
            current.append((text, _starts_paragraph(markup)))
    if current:
        yield current


def group(chapter: list[tuple[str, bool]], lo: int = MIN_WORDS, hi: int = MAX_WORDS) -> list[str]:
    """A chapter's verses as paragraphs of whole verses, about lo..hi words, preferring the text's paragraph
    starts; a short remainder is joined to the paragraph before it."""
    out: list[list[str]] = []
    cur: list[str] = []
    n = 0
    for text, para in chapter:
        w = len(text.split())
        if cur and (n >= hi or n + w > hi and n >= lo or para and n >= lo * 2 // 3):
            out.append(cur)
            cur, n = [], 0
        cur.append(text)
        n += w
    if cur:
        if out and n < lo // 3:
            out[-1].extend(cur)
        else:
            out.append(cur)
    return [" ".join(p) for p in out]


def bible_paragraphs(root: Path, name: str | None = None) -> Iterator[str]:
    data, conf = find_module(root, name)
    for chapter in chapters(raw_verses(data, conf.get("CompressType", "ZIP"), conf.get("ModDrv", "zText"))):
        yield from group(chapter)


def web(roots: list[Path]) -> Iterator[str]:
    yield from bible_paragraphs(roots[0])


def kjv(roots: list[Path]) -> Iterator[str]:
    yield from bible_paragraphs(roots[0])


_NOTE = ("the module's zText verse index read without libsword; OSIS markup, footnotes, section headings and "
         "Strong's numbers removed; verses grouped into paragraphs of about 60-120 words within a chapter")
SOURCES = [
    Source("web-bible", "World English Bible with Deuterocanon (SWORD module engWEB2015eb)",
           (Package("debian", "sword-text-web"),), "public domain", "scripture", web,
           licence_files=("usr/share/doc/sword-text-web/copyright",), modern=True, note=_NOTE),
    Source("kjv", "King James Version (SWORD module engKJV2006eb)", (Package("debian", "sword-text-kjv"),),
           "public domain", "scripture", kjv, licence_files=("usr/share/doc/sword-text-kjv/copyright",),
           cap_words=300_000, modern=False, note=_NOTE + "; capped"),
]
