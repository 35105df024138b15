"""The texts notebook 11.1b learns from and compares tokenizers on; all shipped with the project or Python.

* news: the Lee corpus of Australian news (gensim's test data): ``lee_background.cor`` (300 stories)
  for training, ``lee.cor`` (50 other stories) held out;
* glosses: 2,000 WordNet 3.0 glosses (the held-out file of the project's fill-mask model);
* wikipedia: the sentences of wikigold (CC BY 4.0; accents, names, numbers);
* code: the source of Python's own ``textwrap`` module;
* numbers: invoices, dates, times, phone numbers, written for the project (``data/tokenization``);
* german: a German passage written for the project (``data/tokenization``; see its data card).
"""
from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

from ..paths import data_dir, gensim_test_data
from .segmentation import words_of

SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")


def sentences(text: str) -> list[str]:
    """Split at ., ! or ? followed by white space (good enough for news prose)."""
    return [s.strip() for s in SENTENCE_END.split(text) if s.strip()]


@lru_cache(maxsize=2)
def lee(split: str = "train") -> tuple[str, ...]:
    """The Lee news corpus, one sentence per item: ``"train"`` (300 stories) or ``"test"`` (50 others)."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', not {split!r}")
    path = gensim_test_data("lee_background.cor" if split == "train" else "lee.cor")
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return tuple(s for line in lines for s in sentences(line))


@lru_cache(maxsize=1)
def wordnet_glosses() -> tuple[str, ...]:
    """2,000 WordNet 3.0 glosses, ``word: definition. Example.`` (WordNet licence in the same folder)."""
    path = data_dir("models", "minilm-wordnet-mlm", "heldout.txt")
    return tuple(line for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


@lru_cache(maxsize=1)
def wikipedia() -> tuple[str, ...]:
    """The 1,841 sentences of wikigold, words joined by spaces as in the release ("the band 's first")."""
    out, words = [], []
    for line in data_dir("wikigold", "wikigold.conll.txt").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("-DOCSTART-"):
            if words:
                out.append(" ".join(words))
            words = []
        else:
            words.append(line.rsplit(" ", 1)[0])
    if words:
        out.append(" ".join(words))
    return tuple(out)


def python_code() -> tuple[str, ...]:
    """The non-empty lines of Python's ``textwrap`` module."""
    import textwrap

    lines = Path(textwrap.__file__).read_text(encoding="utf-8").splitlines()
    return tuple(line for line in lines if line.strip())


def written_for_the_project(name: str) -> tuple[str, ...]:
    """``"numbers"`` or ``"german"``: the lines of the passages in ``data/tokenization`` (see its data card)."""
    path = data_dir("tokenization", f"{name}.txt")
    if not path.is_file():
        raise ValueError(f"there is no passage {name!r}; there are 'numbers' and 'german'")
    return tuple(line for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


def text_samples(max_lines: int | None = None) -> dict[str, tuple[str, ...]]:
    """One sample per kind of text, for the fertility comparison (news is the held-out Lee corpus);
    ``max_lines``: at most that many lines (sentences, glosses) of each, from the start."""
    samples = {
        "news (held out)": lee("test"),
        "WordNet glosses": wordnet_glosses(),
        "Wikipedia": wikipedia(),
        "Python code": python_code(),
        "numbers & dates": written_for_the_project("numbers"),
        "German": written_for_the_project("german"),
    }
    return {name: texts[:max_lines] for name, texts in samples.items()}


def word_counts(texts, lowercase: bool = False, split=words_of) -> Counter:
    """How often each word occurs (words from ``split``: whitespace and punctuation by default)."""
    return Counter(w.lower() if lowercase else w for t in texts for w in split(t))
