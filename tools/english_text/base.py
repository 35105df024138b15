"""What a text source is: the packages it comes from, its licence, its register and how to extract it."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .fetch import Package

# The registers the held-out text is reported by (every source names one).
REGISTERS = {
    "fiction": "novels and stories",
    "news-mixed": "1961 American English across genres (news, fiction, learned, ...)",
    "speech": "formal speeches and argumentative essays",
    "encyclopedic": "encyclopedia and reference articles",
    "conversational": "e-mail, dialogue, quips and game dialogue",
    "scripture": "bible translations",
    "dictionary": "dictionary definitions and quotations",
    "early-modern": "Early Modern English drama and verse",
    "example-sentences": "dictionaries' usage examples: short sentences of everyday English",
    "instructions": "recipes and how-to help",
}


@dataclass(frozen=True)
class Source:
    name: str                    # short id used in file names and tables, e.g. "brown"
    title: str                   # what the data card calls it, e.g. "Brown corpus"
    packages: tuple[Package, ...]
    licence: str                 # as the package states it, e.g. "MIT (text public domain)"
    register: str                # a key of REGISTERS
    extract: Callable[[list[Path]], Iterator[str]]  # the unpacked roots (in the order of ``packages``) -> paragraphs
    licence_files: tuple[str, ...] = ()   # paths (glob patterns) inside the first root: copied beside the data card
    attribution: Callable[[list[Path]], str] | None = None  # the unpacked roots -> ATTRIBUTION.txt beside them
    cap_words: int | None = None  # keep at most this many words of the source (None: all)
    note: str = ""               # anything the data card should say about how the text was extracted
    modern: bool = True          # modern English (for the data card's "modern, non-technical" count)
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.register not in REGISTERS:
            raise ValueError(f"{self.name}: unknown register {self.register!r}")
