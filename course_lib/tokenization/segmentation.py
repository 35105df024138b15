"""What every subword tokenizer of notebook 11.1b returns: pieces, their ids, and the word each came from.

The word ids are the mapping the later notebooks need (§11.4.3): a label given per word is copied to
every piece of the word, and a prediction per piece is read back from the word's first piece.
"""
from __future__ import annotations

from dataclasses import dataclass

from .pretokenize import split_words


@dataclass(frozen=True)
class Segmentation:
    """tokens[i] is a piece, ids[i] its vocabulary id, word_ids[i] the index in ``words`` it came from."""

    tokens: list[str]
    ids: list[int]
    word_ids: list[int]
    words: list[str]

    def __len__(self) -> int:
        return len(self.tokens)

    def pieces_per_word(self) -> list[list[str]]:
        """[['mt'], ['.'], ['san', '##itas'], …]: the pieces of each word."""
        out: list[list[str]] = [[] for _ in self.words]
        for t, w in zip(self.tokens, self.word_ids):
            out[w].append(t)
        return out

    @property
    def fertility(self) -> float:
        """Pieces per word (0 for no words)."""
        return len(self.tokens) / len(self.words) if self.words else 0.0


def words_of(text: str) -> list[str]:
    """Words for the learners that keep case: split at whitespace and around punctuation, nothing else."""
    if not isinstance(text, str):
        raise TypeError(f"expected a string of text, got {type(text).__name__}")
    return split_words(text)
