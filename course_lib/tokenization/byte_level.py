"""Byte-level BPE (GPT-2, RoBERTa; lecture 004: "use byte-level BPE, not character-level BPE").

Character-level BPE needs every character of the test text in its alphabet; an unseen character
(``☃``, a Cyrillic letter in English training text) becomes an unknown token. Byte-level BPE starts
from the 256 possible *bytes* of the UTF-8 encoding instead, so its alphabet is complete and no
string ever needs an unknown token: ``é`` is two bytes, ``☃`` three.

To reuse string-based BPE code, GPT-2 maps each byte to a printable Unicode character
(:func:`bytes_to_unicode`): the printable ASCII and Latin-1 bytes map to themselves, the other 68
(control bytes, space, …) to the characters from U+0100 on. That is why a space shows as ``Ġ`` and
a newline as ``Ċ`` in GPT-2 and RoBERTa vocabularies.

Words are cut with GPT-2's regular expression (contractions, letters, digits, other symbols, each
with the space before it); the cutting is done by the ``tokenizers`` library, the byte mapping and
the BPE here.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

from .bpe import BPE, BpeLearning, learn_bpe
from .segmentation import Segmentation

# GPT-2's pre-tokenization: 's 't 're 've 'm 'll 'd, letters, digits, other symbols (each with the space before), spaces
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


@lru_cache(maxsize=1)
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's map from each of the 256 bytes to a printable character (a bijection)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    mapping, extra = {}, 0
    for b in range(256):
        if b in keep:
            mapping[b] = chr(b)
        else:
            mapping[b] = chr(256 + extra)
            extra += 1
    return mapping


@lru_cache(maxsize=1)
def unicode_to_bytes() -> dict[str, int]:
    return {c: b for b, c in bytes_to_unicode().items()}


def to_byte_string(text: str) -> str:
    """UTF-8 bytes of ``text`` as mapped characters: ``' café'`` → ``'ĠcafÃ©'``."""
    table = bytes_to_unicode()
    return "".join(table[b] for b in text.encode("utf-8"))


def from_byte_string(pieces: str | Iterable[str]) -> str:
    """The inverse: mapped characters (one string, or pieces to join) → the original text."""
    table = unicode_to_bytes()
    joined = pieces if isinstance(pieces, str) else "".join(pieces)
    return bytes(table[c] for c in joined).decode("utf-8", errors="replace")


@lru_cache(maxsize=1)
def _splitter():
    from tokenizers import Regex, pre_tokenizers

    return pre_tokenizers.Split(Regex(GPT2_PATTERN), behavior="isolated")


def gpt2_words(text: str) -> list[str]:
    """Cut text as GPT-2 does, then map each word's bytes: "It's 2024" → ['It', "'s", 'Ġ2024']."""
    if not isinstance(text, str):
        raise TypeError(f"expected a string of text, got {type(text).__name__}")
    return [to_byte_string(w) for w, _ in _splitter().pre_tokenize_str(text)]


def byte_alphabet() -> list[str]:
    """All 256 byte characters, in byte order."""
    return [bytes_to_unicode()[b] for b in range(256)]


def learn_byte_bpe(texts: Iterable[str], num_merges: int) -> BpeLearning:
    """BPE on bytes: the alphabet is all 256 bytes (also those the corpus lacks) and there is no end-of-word marker
    (the space that starts a word, ``Ġ``, marks word boundaries instead)."""
    counts = Counter(w for t in texts for w in gpt2_words(t))
    learning = learn_bpe(counts, num_merges, end_of_word=None)
    learning.alphabet = byte_alphabet()  # the corpus' bytes, in code-point order, decided the tie-break; now all 256
    return learning


class ByteLevelBPE(BPE):
    """BPE over GPT-2's byte characters: every string encodes, with no unknown token."""

    def __init__(self, merges: list[tuple[str, str]], vocab: list[str] | dict[str, int]):
        super().__init__(merges, vocab, end_of_word=None, unk_token=None)
        missing = [c for c in byte_alphabet() if c not in self.vocab]
        if missing:
            raise ValueError(f"a byte-level vocabulary needs all 256 byte characters; {len(missing)} are missing "
                             f"(e.g. {missing[0]!r})")

    @classmethod
    def from_learning(cls, learning: BpeLearning, steps: int | None = None) -> "ByteLevelBPE":
        return cls([(m.left, m.right) for m in learning.merges[:steps]], learning.vocabulary(steps))

    @classmethod
    def from_tokenizers(cls, tokenizer) -> "ByteLevelBPE":
        plain = BPE.from_tokenizers(tokenizer)
        return cls([(a, b) for (a, b), _ in sorted(plain.ranks.items(), key=lambda kv: kv[1][0])], plain.vocab)

    def encode(self, text: str) -> Segmentation:
        return self.encode_words(gpt2_words(text))

    def decode(self, tokens: list[str]) -> str:
        return from_byte_string(tokens)
