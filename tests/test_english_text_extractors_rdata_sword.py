"""The R-data and SWORD extractors of tools/english_text on tiny hand-built inputs (no network, no R, no libsword)."""
import gzip
import struct
import sys
import zlib
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

from english_text import rdata, sword  # noqa: E402

HEADER = b"X\n" + struct.pack(">iii", 2, 0x040201, 0x020300)
NIL = struct.pack(">i", 254)


def charsxp(s):
    if s is None:
        return struct.pack(">ii", 9, -1)
    b = s.encode("utf-8")
    return struct.pack(">ii", 9 | (8 << 12), len(b)) + b  # UTF8 level


def sym(name):
    return struct.pack(">i", 1) + charsxp(name)


def strsxp(items, attrs=b""):
    return struct.pack(">ii", 16 | (bool(attrs) << 9), len(items)) + b"".join(charsxp(s) for s in items) + attrs


def intsxp(items, attrs=b""):
    return struct.pack(">ii", 13 | (bool(attrs) << 9), len(items)) + b"".join(
        struct.pack(">i", rdata.NA_INT if v is None else v) for v in items) + attrs


def vecsxp(items, attrs=b""):
    return struct.pack(">ii", 19 | (bool(attrs) << 9), len(items)) + b"".join(items) + attrs


def pairlist(tagged):
    return b"".join(struct.pack(">i", 2 | (1 << 10)) + sym(tag) + value for tag, value in tagged) + NIL


def names(*ns):
    return pairlist([("names", strsxp(list(ns)))])


def test_unserialize_strings_with_na_and_attributes():
    obj = rdata.unserialize(HEADER + strsxp(["It is a truth", None, "caf\u00e9"], names("a", "b", "c")))
    assert list(obj) == ["It is a truth", None, "caf\u00e9"]
    assert obj.attrs["names"] == ["a", "b", "c"]


def test_unserialize_factor_data_frame_and_refs():
    factor = intsxp([1, 2, 1, None], pairlist([("levels", strsxp(["x", "y"])),
                                               ("class", strsxp(["factor"]))]))
    frame = vecsxp([factor, strsxp(["p", "q", "r", "s"])], names("f", "text"))
    cols = rdata.columns(rdata.unserialize(HEADER + frame))
    assert list(cols["f"]) == ["x", "y", "x", None] and list(cols["text"]) == ["p", "q", "r", "s"]
    # a REFSXP to the first symbol read: list(a = 1L, a = 2L) written with a back-reference for the 2nd tag
    ref = struct.pack(">i", 255 | (1 << 8))
    body = (struct.pack(">i", 2 | (1 << 10)) + sym("a") + intsxp([1]) + struct.pack(">i", 2 | (1 << 10)) + ref
            + intsxp([2]) + NIL)
    assert [(str(t), list(v)) for t, v in rdata.unserialize(HEADER + body)] == [("a", [1]), ("a", [2])]


def test_unserialize_altrep_compact_intseq():
    info = pairlist([("x", sym("compact_intseq")), ("y", sym("base")), ("z", intsxp([13]))])
    state = struct.pack(">ii", 14, 3) + struct.pack(">ddd", 4, 5, 1)
    obj = rdata.unserialize(HEADER + struct.pack(">i", 238) + info + state + NIL)
    assert list(obj) == [5, 6, 7, 8]


def test_unsupported_type_is_a_clear_error():
    with pytest.raises(rdata.RDataError, match="unsupported R object type CLOSXP"):
        rdata.unserialize(HEADER + struct.pack(">i", 3))
    with pytest.raises(rdata.RDataError, match="XDR"):
        rdata.unserialize(b"A\n" + HEADER[2:])


def _lazyload_db(folder: Path, objects: dict[str, bytes]) -> None:
    folder.mkdir(parents=True)
    blob, where = b"", {}
    for name, body in objects.items():
        ser = HEADER + body
        chunk = struct.pack(">I", len(ser)) + zlib.compress(ser)
        where[name] = (len(blob), len(chunk))
        blob += chunk
    (folder / "Rdata.rdb").write_bytes(blob)
    variables = vecsxp([intsxp(list(v)) for v in where.values()], names(*where))
    index = vecsxp([variables, vecsxp([]), struct.pack(">ii", 10, 1) + struct.pack(">i", 1)],
                   names("variables", "references", "compressed"))
    (folder / "Rdata.rdx").write_bytes(gzip.compress(HEADER + index))


def test_austen_from_a_lazy_load_database(tmp_path):
    books = ["sensesensibility", "prideprejudice", "mansfieldpark", "emma", "northangerabbey", "persuasion"]
    lines = ["EMMA", "", "By Jane Austen", "", "VOLUME I", "", "CHAPTER I", "", "Emma Woodhouse, handsome,",
             "clever, and rich.", "", "She was the  _youngest_ of two.", "", "Chapter 2", "", "\"Yes.\""]
    _lazyload_db(tmp_path / rdata.SITE / "janeaustenr/data", {b: strsxp(lines) for b in books})
    assert rdata.read_rdb(tmp_path / rdata.SITE / "janeaustenr/data/Rdata.rdb", "emma") == lines
    paras = list(rdata.austen([tmp_path]))
    assert paras == ["Emma Woodhouse, handsome, clever, and rich.", "She was the youngest of two.", "\"Yes.\""] * 6


def test_moby_dick_skips_the_gutenberg_header_and_licence(tmp_path):
    text = ("The Project Gutenberg EBook of Moby Dick\r\n\r\n*** START OF THIS PROJECT GUTENBERG EBOOK ***\r\n\r\n"
            "ETYMOLOGY.\r\n\r\nThe pale Usher--threadbare in coat.\r\n\r\nCHAPTER 1. Loomings.\r\n\r\n"
            "Call me Ishmael. Some years\r\nago--never mind how long.\r\n\r\n*** END OF THIS PROJECT ***\r\nlicence")
    _lazyload_db(tmp_path / rdata.SITE / "tokenizers/data", {"mobydick": strsxp([text], names("mobydick"))})
    assert list(rdata.moby_dick([tmp_path])) == ["The pale Usher--threadbare in coat.",
                                                 "Call me Ishmael. Some years ago--never mind how long."]


def test_tidytext_books_from_an_rda_file(tmp_path):
    text = ["The War of the Worlds", "", "by H. G. Wells [1898]", "", "CHAPTER ONE", "THE EVE OF THE WAR", "",
            "No one would have believed", "it.", "", "Pride and Prejudice", "", "It is a truth."]
    title = ["The War of the Worlds"] * 10 + ["Pride and Prejudice"] * 3
    frame = vecsxp([strsxp(text), strsxp(title)], names("text", "title"))
    folder = tmp_path / rdata.SITE / "tidytext/extdata"
    folder.mkdir(parents=True)
    (folder / "books.rda").write_bytes(gzip.compress(b"RDX2\n" + HEADER + pairlist([("books", frame)])))
    assert list(rdata.tidytext_books([tmp_path])) == ["No one would have believed it."]


def _ztext_module(root: Path, verses: list[str]) -> None:
    (root / "usr/share/sword/mods.d").mkdir(parents=True)
    (root / "usr/share/sword/mods.d/test.conf").write_text(
        "[Test]\nDataPath=./modules/texts/ztext/test/\nModDrv=zText\nCompressType=ZIP\nBlockType=BOOK\n")
    data = root / "usr/share/sword/modules/texts/ztext/test"
    data.mkdir(parents=True)
    raw, index = b"", b""
    for v in verses:
        b = v.encode("utf-8")
        index += struct.pack("<IIH", 0, len(raw), len(b))
        raw += b
    block = zlib.compress(raw)
    (data / "ot.bzs").write_bytes(struct.pack("<III", 0, len(block), len(raw)))
    (data / "ot.bzz").write_bytes(block)
    (data / "ot.bzv").write_bytes(index)


def test_sword_ztext_module(tmp_path):
    verses = ["", '<milestone type="x-importer"/>',
              '<div type="book" osisID="Gen" sID="b1"/><title type="main">Genesis</title>',
              '<chapter n="1" osisID="Gen.1" sID="Gen.1"/>',
              '<w lemma="strong:H7225">In the beginning</w>, <w lemma="strong:H0430">God</w><note placement="foot">'
              '<reference>1:1</reference>Elohim.</note><w lemma="strong:H1254">created</w> the heavens &amp; earth.',
              '<div sID="p2" type="x-p"/>\u00b6 <transChange type="added">It was</transChange> good.  ',
              '<chapter n="2" osisID="Gen.2" sID="Gen.2"/>', "<l level=\"1\"/>Line one<lb/>line two."]
    _ztext_module(tmp_path, verses)
    data, conf = sword.find_module(tmp_path)
    assert conf["CompressType"] == "ZIP" and list(sword.raw_verses(data)) == verses
    assert list(sword.web([tmp_path])) == ["In the beginning, God created the heavens & earth. It was good.",
                                           "Line one line two."]


def test_sword_group_makes_paragraphs_of_whole_verses():
    chapter = [(" ".join(["w"] * 30), False)] * 9 + [("last one", False)]
    paras = sword.group(chapter, lo=60, hi=120)
    assert [len(p.split()) for p in paras] == [120, 120, 32]
