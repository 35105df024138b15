"""The same algorithms in the library people use (``tokenizers``), set up exactly like ours, for side-by-side checks.

Notebook 11.1b puts our learners beside these; the tests prove token-for-token equality on thousands
of sentences. Nothing here is used by our own algorithms.
"""
from __future__ import annotations

import json
from collections.abc import Iterable

from .corpora import word_counts


def bpe_trainer(texts: Iterable[str], num_merges: int, end_of_word: str | None = "</w>", byte_level: bool = False):
    """A ``tokenizers.Tokenizer`` whose BPE was learnt by ``BpeTrainer`` on ``texts``, with our pre-tokenization:
    BERT's whitespace/punctuation split (case kept) with an optional end-of-word marker, or GPT-2's bytes."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    texts = list(texts)
    if byte_level:
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        trainer = trainers.BpeTrainer(vocab_size=256 + num_merges, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                      show_progress=False)
    else:
        extra = {"end_of_word_suffix": end_of_word} if end_of_word else {}
        tok = Tokenizer(models.BPE(unk_token="[UNK]", **extra))
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        words = word_counts(texts)
        alphabet = len({c for w in words for c in w}) + (len({w[-1] for w in words}) if end_of_word else 0)
        trainer = trainers.BpeTrainer(vocab_size=1 + alphabet + num_merges, special_tokens=["[UNK]"],
                                      show_progress=False, **extra)
    tok.train_from_iterator(texts, trainer)
    return tok


def merges_of(tokenizer) -> list[tuple[str, str]]:
    """The merges of a ``tokenizers`` BPE model, in the order they were learnt."""
    merges = json.loads(tokenizer.to_str())["model"]["merges"]
    return [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in merges]


def first_difference(a: list, b: list) -> int | None:
    """The first index where two lists differ (a shorter list differs where it ends), or None if equal."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def embedded_wordpiece():
    """The embedded model's own tokenizer (``tokenizers``), without truncation, padding or special tokens added."""
    from tokenizers import Tokenizer

    from ..checkpoints import embedded_model_dir

    tok = Tokenizer.from_file(str(embedded_model_dir() / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok
