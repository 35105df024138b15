"""Comparing tokenizers on real text: fertility, unknown tokens, and how rare words fragment (notebook 11.1b, §4).

*Fertility* is the number of pieces per word. The words are the same for every tokenizer (the text
split at white space), so the numbers can be compared: 1.0 means every word is one piece; code,
numbers and a language the tokenizer was not trained on cost more pieces per word, hence more
positions of the 512 a BERT can read, and more compute.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .bpe import BpeLearning
    from .unigram_training import UnigramTraining
    from .wordpiece import WordPiece

Tokenize = Callable[[str], list[str]]


def count_words(text: str) -> int:
    """The number of words of ``text`` wherever 11.1b compares tokenizers: the text split at white space.

    One definition, independent of every tokenizer (each one cuts words its own way: BERT around every
    punctuation mark and CJK character, Unigram only at spaces, GPT-2 before each space), so that the same text
    has the same number of words in every row of the explorer and in every fertility.
    """
    return len(text.split())


def fertility(tokenize: Tokenize, texts: Iterable[str]) -> float:
    """Pieces per white-space-separated word (:func:`count_words`) over all ``texts`` (0 when there are no words)."""
    pieces = words = 0
    for t in texts:
        pieces += len(tokenize(t))
        words += count_words(t)
    return pieces / words if words else 0.0


def fertility_table(tokenizers: dict[str, Tokenize], samples: dict[str, Iterable[str]]) -> dict[str, dict[str, float]]:
    """table[sample][tokenizer] = fertility."""
    samples = {name: list(texts) for name, texts in samples.items()}
    return {name: {tok: fertility(fn, texts) for tok, fn in tokenizers.items()} for name, texts in samples.items()}


def unknown_share(tokenize: Tokenize, texts: Iterable[str], unk_token: str) -> float:
    """The share of pieces that are the unknown token."""
    pieces = [p for t in texts for p in tokenize(t)]
    return sum(p == unk_token for p in pieces) / len(pieces) if pieces else 0.0


@dataclass(frozen=True)
class FrequencyBin:
    """Words seen between ``low`` and ``high`` times (high None: or more) and their mean number of pieces."""

    low: int
    high: int | None
    words: int
    mean_pieces: float
    example: str = ""
    example_pieces: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        if self.high is None:
            return f"≥ {self.low}"
        return f"{self.low}" if self.low == self.high else f"{self.low}–{self.high}"


def pieces_by_frequency(encode_word: Callable[[str], list[str]], counts: Counter,
                        bins=((1, 1), (2, 4), (5, 19), (20, 99), (100, None))) -> list[FrequencyBin]:
    """Mean pieces per word for words grouped by how often they occur in ``counts`` (the training corpus).

    Frequent words become single pieces (the merges were made for them); words seen once fragment.
    The example of each bin is its longest word (ties: alphabetical).
    """
    out = []
    for low, high in bins:
        words = [w for w, c in counts.items() if c >= low and (high is None or c <= high)]
        if not words:
            out.append(FrequencyBin(low, high, 0, 0.0))
            continue
        lengths = [len(encode_word(w)) for w in words]
        example = min(words, key=lambda w: (-len(w), w))
        out.append(FrequencyBin(low, high, len(words), sum(lengths) / len(words), example, tuple(encode_word(example))))
    return out


@dataclass
class CourseTokenizers:
    """The tokenizers of notebook 11.1b: BPE, byte-level BPE and Unigram learnt from the Lee news corpus,
    beside the embedded model's real WordPiece (30,522 pieces, learnt by Google from far more text)."""

    bpe: "BpeLearning"
    byte_bpe: "BpeLearning"
    unigram: "UnigramTraining"
    wordpiece: "WordPiece"

    def tokenizers(self) -> dict[str, Tokenize]:
        """name → tokenize function, for :func:`fertility_table`."""
        from .byte_level import ByteLevelBPE

        return {f"BPE ({len(self.bpe.merges):,} merges)": self.bpe.tokenizer().tokenize,
                f"byte-level BPE ({len(self.byte_bpe.merges):,})": ByteLevelBPE.from_learning(self.byte_bpe).tokenize,
                f"Unigram ({len(self.unigram.model):,} pieces)": self.unigram.model.tokenize,
                f"BERT WordPiece ({len(self.wordpiece.vocab):,})": self.wordpiece.tokenize}


def course_tokenizers(num_merges: int = 2000, unigram_size: int = 2000) -> CourseTokenizers:
    """Learn BPE, byte-level BPE and Unigram from the Lee training stories (about 8 s on one core); load WordPiece."""
    from ..checkpoints import embedded_model_dir
    from . import corpora
    from .bpe import learn_bpe
    from .byte_level import learn_byte_bpe
    from .unigram_training import train_unigram
    from .wordpiece import WordPiece

    train = corpora.lee("train")
    return CourseTokenizers(
        bpe=learn_bpe(corpora.word_counts(train), num_merges),
        byte_bpe=learn_byte_bpe(train, num_merges),
        unigram=train_unigram(corpora.word_counts(train, split=str.split), unigram_size),
        wordpiece=WordPiece.from_tokenizer_json(embedded_model_dir() / "tokenizer.json"),
    )
