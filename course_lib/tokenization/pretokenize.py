"""BERT's basic pre-tokenizer: the normalisation and word splitting before WordPiece (lecture 004, subwords).

Before any subword algorithm runs, text is cut into *words*. BERT (Devlin et al. 2019) does it in
two steps, which are also what the ``tokenizers`` library calls ``BertNormalizer`` and
``BertPreTokenizer``:

1. normalise (:func:`normalize`): drop control characters, turn every whitespace character into a
   space, put spaces around CJK ideographs (each becomes a word of its own), strip accents
   (Unicode NFD, then drop the combining marks: ``é`` → ``e``) and lower-case;
2. split (:func:`split_words`): at whitespace (which is dropped) and around every punctuation
   character (which is kept as a word of its own): ``"mt. sanitas"`` → ``mt``, ``.``, ``sanitas``.

:func:`basic_tokenize` does both. The functions work on plain strings, one character at a time,
so that each rule can be read on its own; the tests check them against ``tokenizers`` character by
character (Latin, Greek, Cyrillic, punctuation, CJK and the rest of the Basic Multilingual Plane below
U+0600) and on thousands of real sentences. One caveat: character classes come from Python's
``unicodedata`` (Unicode 14 in Python 3.11) and ``tokenizers`` has its own tables, so a few hundred rare
characters added to Unicode in the last versions (e.g. U+0890 ARABIC POUND MARK ABOVE) are classified
differently by the two.
"""
from __future__ import annotations

import unicodedata
from functools import lru_cache

# CJK Unified Ideographs and their extensions, as in tokenizers' BertNormalizer (BERT's own tokenization.py
# starts the fifth range at 0x2B820; tokenizers, whose output we must match, at 0x2B920)
CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
              (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


@lru_cache(maxsize=None)  # a text has few distinct characters: classify each once
def is_whitespace(ch: str) -> bool:
    """Space, tab, newline, carriage return and every other Unicode White_Space character.

    (Python's ``str.isspace`` also accepts the separators U+001C…U+001F, which Unicode does not count as
    white space; they are control characters.)
    """
    return ch.isspace() and not "\x1c" <= ch <= "\x1f"


@lru_cache(maxsize=None)  # a text has few distinct characters: classify each once
def is_control(ch: str) -> bool:
    """Control, format, private-use and surrogate characters (Cc, Cf, Co, Cs), except tab, newline and return.

    Unassigned code points (Cn) are kept, as ``tokenizers`` keeps them (BERT's original code dropped them).
    """
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs")


@lru_cache(maxsize=None)  # a text has few distinct characters: classify each once
def is_punctuation(ch: str) -> bool:
    """ASCII punctuation and symbols (``$``, ``+``, ``^`` … count too) and every Unicode punctuation (P*)."""
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


@lru_cache(maxsize=None)  # a text has few distinct characters: classify each once
def is_cjk(ch: str) -> bool:
    """A CJK ideograph: BERT makes each one a word of its own (Chinese has no spaces between words)."""
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in CJK_RANGES)


def strip_accents(text: str) -> str:
    """Decompose (NFD) and drop the non-spacing combining marks (category Mn): 'Björk' → 'Bjork'."""
    return "".join(ch for ch in unicodedata.normalize("NFD", text) if unicodedata.category(ch) != "Mn")


def normalize(text: str, lowercase: bool = True, strip_accents_: bool | None = None, clean_text: bool = True,
              handle_chinese_chars: bool = True) -> str:
    """BERT's normaliser. ``strip_accents_=None`` strips accents exactly when lower-casing (as BERT does).

    >>> normalize("Mt. Sanitas\\tin  Björk's  Café")
    "mt. sanitas in  bjork's  cafe"
    """
    if not isinstance(text, str):
        raise TypeError(f"expected a string of text, got {type(text).__name__}")
    if clean_text:
        text = "".join(" " if is_whitespace(ch) else ch for ch in text
                       if not (ch == "\x00" or ch == "\ufffd" or is_control(ch)))
    if handle_chinese_chars:
        text = "".join(f" {ch} " if is_cjk(ch) else ch for ch in text)
    if lowercase if strip_accents_ is None else strip_accents_:
        text = strip_accents(text)
    if lowercase:  # character by character, as tokenizers does: str.lower() would make a word-final Σ into ς
        text = "".join(ch.lower() for ch in text)
    return text


def split_words(text: str) -> list[str]:
    """Split at whitespace (dropped) and around punctuation (kept, one character per word); no normalising.

    >>> split_words("Mt. Sanitas isn't far!")
    ['Mt', '.', 'Sanitas', 'isn', "'", 't', 'far', '!']
    """
    words, current = [], []
    for ch in text:
        if is_whitespace(ch) or is_punctuation(ch):
            if current:
                words.append("".join(current))
                current = []
            if not is_whitespace(ch):
                words.append(ch)
        else:
            current.append(ch)
    if current:
        words.append("".join(current))
    return words


def basic_tokenize(text: str, lowercase: bool = True) -> list[str]:
    """Normalise, then split into words: what BERT does before WordPiece.

    >>> basic_tokenize("Mt. Sanitas is in Sunshine Canyon.")
    ['mt', '.', 'sanitas', 'is', 'in', 'sunshine', 'canyon', '.']
    """
    return split_words(normalize(text, lowercase=lowercase))
