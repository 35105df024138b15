"""Sense-labelled sentences for word-sense disambiguation (SLP3 §11.3.1).

The project's own data set (``course_lib/data/wsd/<lemma>.json``, see its DATA_CARD.md):
ambiguous English words, 2-4 senses each, each sense mapped to its WordNet 3.0 sense key
and gloss, with 20-32 sentences per sense written for this project. The target word is
marked ``[[like this]]`` in the files; :func:`load_sense_data` turns the mark into a
character span.

Data from elsewhere (e.g. SemCor converted by you) enters through
:func:`sense_examples`: a sentence, where the target is (a character span or a word
index), and a sense label.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ..paths import data_dir as package_data_dir

DATA_DIR = package_data_dir("wsd")
TEST_EVERY = 4  # sentence i of a sense is a test sentence when i % 4 == 3: a 75/25 split by sentence
_MARK = re.compile(r"\[\[(.+?)\]\]")


@dataclass(frozen=True)
class SenseExample:
    """One labelled occurrence: ``text[start:end]`` is the target word, used in sense ``sense``."""

    text: str
    start: int
    end: int
    lemma: str
    sense: str
    split: str = "train"

    @property
    def word(self) -> str:
        return self.text[self.start:self.end]

    def marked(self) -> str:
        """The sentence with the target in brackets: 'the muddy [bank] of the river'."""
        return f"{self.text[:self.start]}[{self.word}]{self.text[self.end:]}"


@dataclass(frozen=True)
class Sense:
    lemma: str
    label: str          # 'bank (river)'
    sense_key: str      # WordNet 3.0 sense key, 'bank%1:17:01::'
    gloss: str          # WordNet's definition


@dataclass
class SenseData:
    """The examples and the sense inventory (label -> Sense) of a data set."""

    examples: list[SenseExample]
    senses: dict[str, Sense]

    def split(self, name: str) -> list[SenseExample]:
        return [e for e in self.examples if e.split == name]

    @property
    def train(self) -> list[SenseExample]:
        return self.split("train")

    @property
    def test(self) -> list[SenseExample]:
        return self.split("test")

    @property
    def lemmas(self) -> list[str]:
        return sorted({e.lemma for e in self.examples})

    def for_lemma(self, lemma: str, split: str | None = None) -> list[SenseExample]:
        if lemma not in self.lemmas:
            raise KeyError(f"no sense-labelled sentences for {lemma!r}; the words are: {', '.join(self.lemmas)}")
        return [e for e in self.examples if e.lemma == lemma and (split is None or e.split == split)]

    def senses_of(self, lemma: str) -> list[Sense]:
        return [s for s in self.senses.values() if s.lemma == lemma]

    def counts(self) -> Counter:
        return Counter((e.lemma, e.sense, e.split) for e in self.examples)


def parse_marked(sentence: str) -> tuple[str, int, int]:
    """'They sat on the [[bank]].' -> ('They sat on the bank.', 16, 20)."""
    marks = list(_MARK.finditer(sentence))
    if len(marks) != 1:
        raise ValueError(f"mark exactly one target word with [[...]]; found {len(marks)} in {sentence!r}")
    m = marks[0]
    text = sentence[:m.start()] + m.group(1) + sentence[m.end():]
    return text, m.start(), m.start() + len(m.group(1))


def load_sense_data(data_dir: str | Path | None = None, lemmas: list[str] | None = None) -> SenseData:
    """The project's sense-labelled sentences, split 75/25 by sentence (every 4th sentence of a sense is test)."""
    data_dir = DATA_DIR if data_dir is None else Path(data_dir)
    files = sorted(data_dir.glob("*.json"))
    if not files:
        raise FileNotFoundError(f"no sense data (*.json) in {data_dir}")
    examples, senses = [], {}
    for f in files:
        d = json.loads(f.read_text(encoding="utf-8"))
        lemma = d["lemma"]
        if lemmas is not None and lemma not in lemmas:
            continue
        for s in d["senses"]:
            senses[s["label"]] = Sense(lemma, s["label"], s["sense_key"], s["gloss"])
            for i, sentence in enumerate(s["sentences"]):
                text, start, end = parse_marked(sentence)
                split = "test" if i % TEST_EVERY == TEST_EVERY - 1 else "train"
                examples.append(SenseExample(text, start, end, lemma, s["label"], split))
    if lemmas is not None:
        missing = sorted(set(lemmas) - {e.lemma for e in examples})
        if missing:
            raise KeyError(f"no sense data for {', '.join(map(repr, missing))} in {data_dir}")
    return SenseData(examples, senses)


def sense_examples(records, split: str = "train") -> list[SenseExample]:
    """Sense-tagged data from outside the project, as :class:`SenseExample` s.

    Each record is a dict (or a tuple ``(sentence, target, sense)`` / ``(sentence, target, sense, lemma)``) with
    ``sentence``, ``sense``, optional ``lemma`` (default: the sense label up to the first '%', ' ', '.' or '(';
    a WordNet key 'bank%1:17:01::' gives 'bank') and the target, one of:

    - ``span``: a character span ``(start, end)`` in the sentence,
    - ``word_index``: the index of the target in ``sentence.split()``,
    - ``word``: the target word itself, when it occurs once in the sentence.
    """
    out = []
    for i, r in enumerate(records):
        if isinstance(r, (tuple, list)):
            r = dict(zip(("sentence", "target", "sense", "lemma"), r))
            target = r.pop("target")
            r["span" if isinstance(target, (tuple, list)) else "word_index" if isinstance(target, int) else "word"] = target
        text, sense = r["sentence"], r["sense"]
        if "span" in r:
            start, end = map(int, r["span"])
            if not 0 <= start < end <= len(text):
                raise ValueError(f"record {i}: span {r['span']} lies outside the sentence ({len(text)} characters)")
        elif "word_index" in r:
            words = list(re.finditer(r"\S+", text))
            k = r["word_index"]
            if not -len(words) <= k < len(words):
                raise ValueError(f"record {i}: word_index {k}, but the sentence has {len(words)} words")
            m = words[k]
            w = re.match(r"^\W*(.*?)\W*$", m.group())  # strip punctuation around the word
            start, end = m.start() + w.start(1), m.start() + w.end(1)
        elif "word" in r:
            found = [m.start() for m in re.finditer(rf"(?<!\w){re.escape(r['word'])}(?!\w)", text, re.IGNORECASE)]
            if len(found) != 1:
                where = "does not occur" if not found else f"occurs {len(found)} times"
                raise ValueError(f"record {i}: the target word {r['word']!r} {where} in {text!r}"
                                 + ("; give its span or word_index instead" if found else ""))
            start, end = found[0], found[0] + len(r["word"])
        else:
            raise ValueError(f"record {i}: say where the target is, with span=(start, end), word_index or word")
        lemma = r.get("lemma") or re.split(r"[% .(]", str(sense), maxsplit=1)[0].lower()
        out.append(SenseExample(text, start, end, lemma, str(sense), r.get("split", split)))
    return out


def counts_table(data: SenseData | None = None) -> str:
    """The Markdown table of the data card: senses and train/test sentences per word."""
    data = load_sense_data() if data is None else data
    c = data.counts()
    rows = ["| word | sense | WordNet 3.0 sense key | train | test |", "|---|---|---|---|---|"]
    for lemma in data.lemmas:
        for s in data.senses_of(lemma):
            rows.append(f"| {lemma} | {s.label} | `{s.sense_key}` | {c[(lemma, s.label, 'train')]} | "
                        f"{c[(lemma, s.label, 'test')]} |")
    rows.append(f"| **{len(data.lemmas)} words** | **{len(data.senses)} senses** | | **{len(data.train)}** | "
                f"**{len(data.test)}** |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":  # python -m course_lib.embeddings.senses: print the data card's table
    print(counts_table(), end="")
