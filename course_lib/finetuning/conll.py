"""NER data in the CoNLL format, and BIO (SLP3 §11.4.3, eq. 11.16).

* :class:`TaggedSentence`, :func:`read_conll`, :func:`write_conll` -- one ``word tag`` per line, blank lines between
  sentences, ``-DOCSTART-`` between documents;
* :func:`iob1_to_bio` -- IOB1 (an entity starts with I-; B- only right after an entity of the same type) to BIO /
  IOB2 (every entity starts with B-); :func:`bio_violations` finds I- tags that BIO forbids;
* :func:`load_wikigold` -- the shipped wikigold data (``course_lib/data/wikigold/DATA_CARD.md``), :func:`tag_counts`;
* :func:`split_words` -- typed text to words the way CoNLL data splits them (every widget that splits typed
  text into words uses it).
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ENTITY_TYPES = ("LOC", "MISC", "ORG", "PER")  # wikigold's types, in this order everywhere
_TAG = re.compile(r"^(O|[BI]-\S+)$")


@dataclass(frozen=True)
class TaggedSentence:
    """One sentence: its words and one tag per word ('O', 'B-PER', 'I-PER', ...); ``doc`` numbers documents."""

    words: tuple[str, ...]
    tags: tuple[str, ...]
    doc: int = 0

    def __post_init__(self):
        if len(self.words) != len(self.tags):
            raise ValueError(f"a sentence has {len(self.words)} words but {len(self.tags)} tags: "
                             f"{' '.join(self.words)[:80]!r}")

    def __len__(self) -> int:
        return len(self.words)


def read_conll(source: str | Path, *, text: bool = False) -> list[TaggedSentence]:
    """Read CoNLL-format NER data: one ``word tag`` per line (the tag is the last column), a blank line
    between sentences, ``-DOCSTART-`` lines between documents.

    ``source`` is a path, or the text itself with ``text=True``.
    """
    raw = source if text else Path(source).read_text(encoding="utf-8")
    sentences, words, tags, doc, seen_words = [], [], [], 0, False
    for n, line in enumerate(raw.splitlines(), 1):
        line = line.strip()
        if line.startswith("-DOCSTART-"):
            if words:
                sentences.append(TaggedSentence(tuple(words), tuple(tags), doc))
                words, tags = [], []
            if seen_words:
                doc += 1
                seen_words = False
            continue
        if not line:
            if words:
                sentences.append(TaggedSentence(tuple(words), tuple(tags), doc))
                words, tags = [], []
            continue
        parts = line.split()
        if len(parts) < 2:
            raise ValueError(f"line {n} has no tag: {line!r} (expected 'word tag')")
        if not _TAG.match(parts[-1]):
            raise ValueError(f"line {n}: {parts[-1]!r} is not a BIO tag (expected O, B-TYPE or I-TYPE)")
        words.append(parts[0])
        tags.append(parts[-1])
        seen_words = True
    if words:
        sentences.append(TaggedSentence(tuple(words), tuple(tags), doc))
    return sentences


def write_conll(sentences: list[TaggedSentence]) -> str:
    """The inverse of :func:`read_conll`: documents separated by ``-DOCSTART- O``, sentences by blank lines."""
    out, doc = [], None
    for s in sentences:
        if s.doc != doc:
            out.append("-DOCSTART- O\n")
            doc = s.doc
        out.extend(f"{w} {t}" for w, t in zip(s.words, s.tags))
        out.append("")
    return "\n".join(out) + "\n"


def iob1_to_bio(tags) -> list[str]:
    """IOB1 -> BIO (IOB2): an entity's first word always gets B-.

    In IOB1 an entity starts with I- and B- appears only where an entity directly follows another of the
    same type. So I- means "inside" *or* "first word": the tag of a word depends on its neighbour's type.
    BIO gives every entity's first word B-, and I- always continues.
    """
    out, prev = [], "O"
    for t in tags:
        if t.startswith("I-") and (prev == "O" or prev[2:] != t[2:]):
            t = "B-" + t[2:]
        out.append(t)
        prev = t
    return out


def bio_violations(tags) -> list[int]:
    """Positions of I-X tags that follow neither B-X nor I-X (invalid in BIO; an IOB1 entity start)."""
    bad, prev = [], "O"
    for i, t in enumerate(tags):
        if t.startswith("I-") and (prev == "O" or prev[2:] != t[2:]):
            bad.append(i)
        prev = t
    return bad


def load_wikigold(split: str = "train") -> list[TaggedSentence]:
    """Wikigold (Balasuriya et al. 2009), converted to BIO, split by document (see its DATA_CARD.md).

    ``split``: "train" (116 documents) or "test" (29 held-out documents); "original" gives the whole
    corpus as released, with its IOB1 tags.
    """
    from ..paths import data_dir

    files = {"train": "train.bio.conll", "test": "test.bio.conll", "original": "wikigold.conll.txt"}
    if split not in files:
        raise ValueError(f"unknown split {split!r}: choose 'train', 'test' or 'original'")
    return read_conll(data_dir("wikigold", files[split]))


def tag_counts(sentences) -> Counter:
    """How many entities of each type (counted at their B- tags; use on BIO data)."""
    return Counter(t[2:] for s in sentences for t in s.tags if t.startswith("B-"))


_TRAILING = ",;:!?)\"'"
_LEADING = "(\"'"


_DROPPED = "\ufffd\u1734"  # dropped by BERT's tokenizer too: U+FFFD by its text cleaning, U+1734 (Mc now) as Mn


def invisible(piece: str) -> bool:
    """True when BERT's tokenizer makes no token of ``piece``: every character is one its text cleaning removes
    (control and format characters: zero-width, byte-order mark; U+FFFD) or a non-spacing mark it strips with the
    accents (variation selectors, a lone combining accent)."""
    from ..tokenization.pretokenize import is_control

    return all(is_control(c) or c in _DROPPED or unicodedata.category(c) == "Mn" for c in piece)


def split_words(text: str) -> list[str]:
    """Typed text -> words as CoNLL data has them: split at spaces; brackets, quotes and , ; : ! ? come off as
    words of their own, and so does the full stop that ends the sentence ('Mt.' keeps its stop).

    A piece the tokenizer makes no token of (a variation selector, a zero-width or control character on its own)
    stays with the word before it, and is dropped at the start: so every word has at least one subword."""
    raws = text.split()
    words: list[str] = []
    for n, raw in enumerate(raws):
        lead, tail, stop_done = [], [], n < len(raws) - 1
        while len(raw) > 1 and raw[0] in _LEADING:
            lead.append(raw[0])
            raw = raw[1:]
        while len(raw) > 1 and (raw[-1] in _TRAILING or (raw[-1] == "." and not stop_done)):
            stop_done = stop_done or raw[-1] == "."
            tail.insert(0, raw[-1])
            raw = raw[:-1]
        for w in lead + [raw] + tail:
            if not invisible(w):
                words.append(w)
            elif words:
                words[-1] += w
    return words
