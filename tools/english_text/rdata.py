"""19th-century novels shipped as R data in Debian packages (janeaustenr, tidytext, tokenizers), read without R.

A minimal reader of R's XDR serialization (``serialize()``/``save()`` format 2 and 3): the types these data sets
use (vectors, strings, lists, pairlists, symbols, references, ALTREP compact sequences and wrappers), from an
``.rda``/``.RData`` file or from an object of a lazy-load database (``Rdata.rdb`` + ``Rdata.rdx``).
"""
from __future__ import annotations

import bz2
import gzip
import lzma
import re
import struct
import zlib
from collections.abc import Iterable, Iterator
from itertools import groupby
from pathlib import Path

from .base import Source
from .fetch import Package

SITE = Path("usr/lib/R/site-library")
NA_INT = -(2 ** 31)
_TYPE_NAMES = {0: "NILSXP", 1: "SYMSXP", 2: "LISTSXP", 3: "CLOSXP", 4: "ENVSXP", 5: "PROMSXP", 6: "LANGSXP",
               7: "SPECIALSXP", 8: "BUILTINSXP", 9: "CHARSXP", 10: "LGLSXP", 13: "INTSXP", 14: "REALSXP",
               15: "CPLXSXP", 16: "STRSXP", 17: "DOTSXP", 19: "VECSXP", 20: "EXPRSXP", 21: "BCODESXP",
               22: "EXTPTRSXP", 23: "WEAKREFSXP", 24: "RAWSXP", 25: "S4SXP"}


class RDataError(ValueError):
    pass


class RSymbol(str):
    """An R symbol (``as.name``)."""


class RVector(list):
    """An R vector (atomic or list) with its attributes (``names``, ``class``, ``levels``, ...)."""

    def __init__(self, items: Iterable = (), attrs: dict | None = None, rtype: str = ""):
        super().__init__(items)
        self.attrs = attrs or {}
        self.rtype = rtype


class RPairlist(RVector):
    """An R pairlist (or language object) as ``[(tag or None, value), ...]``, with its attributes."""


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos, self.refs = data, 0, []

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise RDataError(f"R serialization truncated at byte {self.pos} (wanted {n} more)")
        self.pos += n
        return self.data[self.pos - n:self.pos]

    def int(self) -> int:
        return struct.unpack(">i", self.take(4))[0]

    def length(self) -> int:
        n = self.int()
        if n == -1:  # long vector: two 32-bit halves
            hi, lo = self.int(), self.int()
            n = (hi << 32) + (lo & 0xFFFFFFFF)
        return n

    def header(self) -> None:
        fmt = self.take(2)
        if fmt != b"X\n":
            raise RDataError(f"only the XDR serialization format ('X\\n') is supported, not {fmt!r}")
        version, _writer, _min_reader = self.int(), self.int(), self.int()
        if version == 3:
            self.take(self.int())  # native encoding name
        elif version != 2:
            raise RDataError(f"unsupported R serialization version {version}")

    def attrs(self) -> dict:
        return {str(tag): value for tag, value in self.item()}

    def item(self):  # noqa: C901 - one branch per SEXP type
        flags = self.int()
        t, levels = flags & 0xFF, flags >> 12
        has_attr, has_tag = bool(flags & (1 << 9)), bool(flags & (1 << 10))
        if t == 254 or t == 0:  # NILVALUE_SXP, NILSXP
            return None
        if t in (253, 252, 251, 250, 242, 241):  # global/base/empty env, unbound value, missing arg
            return RSymbol({253: "<GlobalEnv>", 252: "<unbound>", 251: "<missing>", 250: "<base namespace>",
                            242: "<emptyenv>", 241: "<baseenv>"}[t])
        if t == 255:  # REFSXP
            idx = flags >> 8 or self.int()
            return self.refs[idx - 1]
        if t in (247, 248, 249):  # PERSISTSXP, PACKAGESXP, NAMESPACESXP: a string vector naming it
            self.int()  # 0
            names = [self.item() for _ in range(self.int())]
            self.refs.append(RSymbol(f"<{'namespace' if t == 249 else 'package' if t == 248 else 'persist'}:"
                                     f"{':'.join(str(n) for n in names)}>"))
            return self.refs[-1]
        if t == 1:  # SYMSXP
            self.refs.append(RSymbol(self.item() or ""))
            return self.refs[-1]
        if t in (2, 6, 17, 239, 240):  # LISTSXP, LANGSXP, DOTSXP, ATTRLISTSXP, ATTRLANGSXP
            items, attrs = [], {}
            while True:
                if has_attr:
                    attrs.update(self.attrs())
                tag = self.item() if has_tag else None
                items.append((tag, self.item()))
                flags = self.int()  # the CDR: a further cons cell, or the list's end
                t = flags & 0xFF
                has_attr, has_tag = bool(flags & (1 << 9)), bool(flags & (1 << 10))
                if t in (254, 0):
                    return RPairlist(items, attrs, "LISTSXP")
                if t not in (2, 6, 17, 239, 240):
                    self.pos -= 4
                    items.append((RSymbol("<dotted-cdr>"), self.item()))
                    return RPairlist(items, attrs)
        if t == 9:  # CHARSXP
            n = self.int()
            if n == -1:
                return None  # NA_character_
            return self.take(n).decode("latin-1" if levels & 4 and not levels & 8 else "utf-8", errors="replace")
        if t == 238:  # ALTREP_SXP: class info, state, attributes
            return _altrep(self.item(), self.item(), self.item())
        if t in (10, 13):  # LGLSXP, INTSXP
            n = self.length()
            vals = struct.unpack(f">{n}i", self.take(4 * n))
            value = RVector((None if v == NA_INT else v for v in vals), rtype=_TYPE_NAMES[t])
        elif t == 14:  # REALSXP
            n = self.length()
            value = RVector(struct.unpack(f">{n}d", self.take(8 * n)), rtype="REALSXP")
        elif t == 16:  # STRSXP
            value = RVector((self.item() for _ in range(self.length())), rtype="STRSXP")
        elif t in (19, 20):  # VECSXP, EXPRSXP
            value = RVector((self.item() for _ in range(self.length())), rtype=_TYPE_NAMES[t])
        elif t == 24:  # RAWSXP
            value = RVector(self.take(self.length()), rtype="RAWSXP")
        else:
            raise RDataError(f"unsupported R object type {_TYPE_NAMES.get(t, t)} (SEXPTYPE {t}) at byte "
                             f"{self.pos - 4}")
        if has_attr:
            value.attrs = self.attrs()
        return value


def _altrep(info, state, attr):
    cls = str(info[0][1]) if isinstance(info, RPairlist) and info else "?"
    if cls == "compact_intseq" or cls == "compact_realseq":
        n, start, step = state
        vals = [start + i * step for i in range(int(n))]
        value = RVector((int(v) for v in vals) if cls == "compact_intseq" else vals,
                        rtype="INTSXP" if cls == "compact_intseq" else "REALSXP")
    elif cls.startswith("wrap_"):  # state: pairlist (wrapped vector, metadata)
        inner = state[0][1] if isinstance(state, RPairlist) else state[0]
        value = RVector(inner, rtype=getattr(inner, "rtype", ""))
    elif cls == "deferred_string":  # state: pairlist (the numbers to format, info)
        arg = state[0][1] if isinstance(state, RPairlist) else state
        value = RVector(("NA" if v is None else f"{v:g}" if isinstance(v, float) else str(v) for v in arg),
                        rtype="STRSXP")
    else:
        raise RDataError(f"unsupported ALTREP class {cls!r}")
    if isinstance(attr, RPairlist):
        value.attrs = {str(k): v for k, v in attr}
    return value


def unserialize(data: bytes):
    """The R object of an XDR serialization (as written by ``serialize(x, NULL)``)."""
    (r := _Reader(data)).header()
    return r.item()


def _decompress(data: bytes) -> bytes:
    for magic, decompress in ((b"\x1f\x8b", gzip.decompress), (b"BZh", bz2.decompress), (b"\xfd7zXZ", lzma.decompress)):
        if data.startswith(magic):
            return decompress(data)
    return data


def read_rda(path: Path) -> dict:
    """The objects saved in an ``.rda``/``.RData`` file (``save()``), by name."""
    data = _decompress(path.read_bytes())
    if data[:5] not in (b"RDX2\n", b"RDX3\n"):
        raise RDataError(f"{path}: not an XDR .rda file (starts {data[:5]!r})")
    return {str(tag): v for tag, v in unserialize(data[5:])}


def _lazyload_chunk(blob: bytes, compressed) -> bytes:
    size = struct.unpack(">I", blob[:4])[0]
    if compressed in (2, 3):  # R >= 2.10 "type" byte: Z zlib, 2 bzip2, X xz, 0 none
        data = {b"Z": zlib.decompress, b"2": bz2.decompress, b"X": lzma.decompress, b"0": bytes}[blob[4:5]](blob[5:])
    else:
        data = zlib.decompress(blob[4:])
    if len(data) != size:
        raise RDataError(f"lazy-load chunk: {len(data)} bytes, header says {size}")
    return data


def read_rdb(rdb: Path, name: str):
    """Object ``name`` of an R lazy-load database (``X.rdb`` with its index ``X.rdx``)."""
    raw = rdb.with_suffix(".rdx").read_bytes()  # gzip (data/, saveRDS) or length + zlib (R/, the code's index)
    index = unserialize(_decompress(raw) if raw[:2] == b"\x1f\x8b" else zlib.decompress(raw[4:]))
    fields = dict(zip(index.attrs["names"], index))
    compressed = fields.get("compressed", [True])[0]
    variables = dict(zip(fields["variables"].attrs["names"], fields["variables"]))
    if name not in variables:
        raise RDataError(f"{rdb}: no object {name!r} (has {sorted(variables)})")
    offset, length = (int(v) for v in variables[name])
    return unserialize(_lazyload_chunk(rdb.read_bytes()[offset:offset + length], compressed))


def columns(frame) -> dict:
    """A data frame's columns by name; factor columns as their labels."""
    def labels(col):
        levels = getattr(col, "attrs", {}).get("levels")
        return col if levels is None else RVector(None if i is None else levels[i - 1] for i in col)
    return {name: labels(col) for name, col in zip(frame.attrs["names"], frame)}


_NUMBER = (r"(?:\d+|(?-i:[IVXLCDM]+)|(?:ONE|TWO|THREE|FOUR|FIVE|SIX|SEVEN|EIGHT|NINE|TEN|ELEVEN|TWELVE|TWENTY|THIRTY|"
           r"FORTY|FIFTY|FIRST|SECOND|THIRD|FOURTH|FIFTH|LAST)(?:[- ][A-Z]+)?)")
_HEADING = re.compile(r"^(?:(?:CHAPTER|BOOK|VOLUME|PART)\s+" + _NUMBER + r"\b[.:]?(?:\s.{0,80})?|" + _NUMBER
                      + r"\.?|(?:THE )?END\.?|FINIS\.?|EPILOGUE\.?|PROLOGUE\.?|PREFACE\.?)$", re.IGNORECASE)
_NOT_PROSE = re.compile(r"gutenberg|\be-?text\b|^\[.*\]$|^by\b|^produced by\b|transcriber", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ufeff]")


def is_heading(text: str, paragraph: bool = True) -> bool:
    """A chapter/part heading, a title line or a by-line: short, and numbered, without lower-case letters, or a
    by-line or note; or a fragment of at most 3 words without end punctuation."""
    n = len(text.split())
    return n <= 12 and bool(_HEADING.match(text) or not re.search(r"[a-z]", text) or (
        _NOT_PROSE.search(text) and n <= 8) or (paragraph and n <= 3 and not re.search(r"[.!?\"')]$", text)))


def paragraphs(lines: Iterable[str | None]) -> Iterator[str]:
    """Join consecutive non-empty lines into paragraphs (split at empty lines); drop headings, title lines and
    Project Gutenberg notes; normalise whitespace (and drop the ``_`` of italics)."""
    buf: list[str] = []

    def flush() -> str | None:
        text = " ".join(" ".join(buf).replace("_", " ").split())
        buf.clear()
        return None if not text or is_heading(text) or re.search(r"gutenberg|\be-?text\b", text, re.I) else text

    for line in [*lines, ""]:  # the "" ends the last paragraph
        line = _CONTROL.sub(" ", line or "").strip()
        if line:
            if not buf and is_heading(line, paragraph=False):
                continue  # a heading line followed directly by text or by another heading
            buf.append(line)
        elif buf and (text := flush()):
            yield text


def austen(roots: list[Path]) -> Iterator[str]:
    rdb = roots[0] / SITE / "janeaustenr/data/Rdata.rdb"
    for name in ("sensesensibility", "prideprejudice", "mansfieldpark", "emma", "northangerabbey", "persuasion"):
        yield from paragraphs(read_rdb(rdb, name))


def tidytext_books(roots: list[Path]) -> Iterator[str]:
    """The novels of tidytext's ``books`` data frame except Pride and Prejudice (which ``austen`` already has)."""
    for frame in read_rda(roots[0] / SITE / "tidytext/extdata/books.rda").values():
        cols = columns(frame)
        for title, rows in groupby(zip(cols["text"], cols["title"]), key=lambda row: row[1]):
            if "pride and prejudice" not in str(title).lower():
                yield from (p for p in paragraphs(line for line, _ in rows) if p != title)


def moby_dick(roots: list[Path]) -> Iterator[str]:
    text = read_rdb(roots[0] / SITE / "tokenizers/data/Rdata.rdb", "mobydick")
    text = "".join(t or "" for t in text)  # one string: Project Gutenberg's header, the book, its licence
    text = text[max(text.find("ETYMOLOGY."), 0):]  # the book starts with its etymology of "whale"
    yield from paragraphs(text[:text.find("*** END OF")].splitlines())


def _source(name, title, pkg, extract, note) -> Source:
    return Source(name, title, (Package("debian", pkg),), "MIT (text public domain)", "fiction", extract,
                  licence_files=(f"usr/share/doc/{pkg}/copyright",), modern=False, note=note)


SOURCES = [
    _source("austen", "Jane Austen's six novels (janeaustenr)", "r-cran-janeaustenr", austen,
            "the six novels' line vectors read from the package's R lazy-load database (Rdata.rdb) without R; "
            "lines joined into paragraphs; chapter headings and title lines dropped"),
    _source("wells-verne-dickens", "Novels by Wells, Verne and Dickens (tidytext)", "r-cran-tidytext",
            tidytext_books, "the books data frame of extdata/books.rda read without R; lines joined into "
            "paragraphs; chapter headings and title lines dropped"),
    _source("moby-dick", "Herman Melville, Moby Dick (tokenizers)", "r-cran-tokenizers", moby_dick,
            "the mobydick string read from the package's R lazy-load database (Rdata.rdb) without R; split into "
            "paragraphs at blank lines; chapter headings dropped"),
]
