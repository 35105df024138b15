"""The live pretraining's corpus (SLP3 §11.2): the Python reference manual's prose as documents of
sentences, the held-out split, the corpus hash that keys the cache, a WordPiece vocabulary learned on it
(``tokenizers``), and NSP pairs collated into ``[CLS] A [SEP] B [SEP]`` tensors with segment ids."""
from __future__ import annotations

import functools
import hashlib
import json
import re

import torch

from ..tokenization.bert_tokenizer import SPECIAL_TOKENS, BertTokenizer
from .masking import IS_NEXT, NOT_NEXT

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")


@functools.cache   # read once, as the module it replaces was imported once (callers only read it)
def python_reference_topics() -> dict[str, str]:
    """The Python reference manual's topics, as Python 3.11.7's standard library ships them (``pydoc_data.topics``,
    PSF licence), copied into ``course_lib/data/python_reference`` (see its data card): every Python patch version
    ships another manual, and the live pretraining's text must not change with the Python that runs it."""
    from ..paths import data_dir

    return json.loads(data_dir("python_reference", "topics.json").read_text(encoding="utf-8"))["topics"]


def python_reference_documents(min_words: int = 4) -> list[list[str]]:
    """Documents (lists of sentences) from the Python reference manual's prose (:func:`python_reference_topics`).

    Code blocks (indented lines), headings and underlines are dropped; paragraphs
    are joined and split into sentences at '.', '!' or '?' followed by a capital.
    """
    topics = python_reference_topics()
    docs = []
    for name in sorted(topics):
        paragraphs, current = [], []
        for line in topics[name].splitlines():
            if not line.strip() or line.startswith((" ", "\t")) or set(line.strip()) <= set("*=-~^"):
                if current:
                    paragraphs.append(" ".join(current))
                    current = []
                continue
            current.append(line.strip())
        if current:
            paragraphs.append(" ".join(current))
        sentences = [s.strip() for p in paragraphs for s in _SENTENCE_END.split(p)]
        sentences = [s for s in sentences if len(s.split()) >= min_words]
        if len(sentences) >= 2:
            docs.append(sentences)
    return docs


def split_documents(docs: list[list[str]], held_out_every: int = 10) -> tuple[list[list[str]], list[list[str]]]:
    """(training documents, held-out documents): every ``held_out_every``-th document is held out."""
    if held_out_every < 2:
        raise ValueError(f"held_out_every must be at least 2 (one document in n held out), not {held_out_every}")
    held = [d for i, d in enumerate(docs) if i % held_out_every == 0]
    train = [d for i, d in enumerate(docs) if i % held_out_every != 0]
    if not train or len(held) < 2:
        raise ValueError(f"{len(docs)} documents are too few to hold out one in {held_out_every}")
    return train, held


def corpus_hash(docs: list[list[str]]) -> str:
    """sha256 of the documents' text (part of the cache key: another Python's manual is another corpus)."""
    h = hashlib.sha256()
    for d in docs:
        for s in d:
            h.update(s.encode())
            h.update(b"\n")
        h.update(b"\f")
    return h.hexdigest()


def train_wordpiece(texts: list[str], vocab_size: int = 1000, model_max_length: int = 512,
                    name: str = "Python reference") -> BertTokenizer:
    """Learn a lower-cased WordPiece vocabulary of ``vocab_size`` from ``texts`` (takes about a second).

    ``tokenizers`` numbers the tokens it learns in an order that changes from run to run (its word-internal
    symbols come out of a hash map). The ids are therefore renumbered canonically -- the special tokens first,
    then every other token in sorted order -- so that the same set always gives the same ids, and a training run
    with a fixed seed is reproducible. (WordPiece's greedy longest-match segmentation depends only on the set.)
    The *set* itself is the same in every run on the course's text (tests/test_pretraining_run.py trains it
    twice, and retrains the shipped run's first steps); on other texts the trainer breaks ties between equally
    frequent pairs by those changing numbers and can learn another set (huggingface/tokenizers#1794).
    """
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    learner = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    learner.normalizer = normalizers.BertNormalizer(lowercase=True)
    learner.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    learner.train_from_iterator(texts, trainers.WordPieceTrainer(
        vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS), show_progress=False))
    learned = set(learner.get_vocab()) - set(SPECIAL_TOKENS)
    vocab = {t: i for i, t in enumerate([*SPECIAL_TOKENS, *sorted(learned)])}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.add_special_tokens(list(SPECIAL_TOKENS))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    return BertTokenizer(tok, model_max_length, name=f"WordPiece-{vocab_size} ({name})")


def corpus_tokenizer(vocab_size: int = 1000) -> tuple[BertTokenizer, list[list[str]]]:
    """The demo's documents and a WordPiece tokenizer learned on them (all documents; for quick experiments)."""
    docs = python_reference_documents()
    return train_wordpiece([s for d in docs for s in d], vocab_size), docs


def collate_pairs(pairs, *, cls_id: int, sep_id: int, pad_id: int, max_length: int):
    """NSP pairs of token-id lists -> ``[CLS] A [SEP] B [SEP]`` tensors, cut to ``max_length``.

    ``pairs``: (ids_a, ids_b, is_next) triples (``nsp_pairs`` of tokenized documents). The longer of
    A and B loses its last token until the pair fits (the tokenizer's "longest first" truncation).
    Returns input_ids, attention_mask, token_type_ids (B, T) and the NSP labels (B,): 0 IsNext, 1 NotNext.
    """
    if max_length < 5:
        raise ValueError(f"max_length {max_length} leaves no room for [CLS] A [SEP] B [SEP]")
    rows = []
    for a, b, _ in pairs:
        a, b = list(a), list(b)
        while len(a) + len(b) + 3 > max_length:
            (a if len(a) > len(b) else b).pop()
        rows.append(([cls_id, *a, sep_id, *b, sep_id], [0] * (len(a) + 2) + [1] * (len(b) + 1)))
    T = max(len(r) for r, _ in rows)
    ids = torch.full((len(rows), T), pad_id, dtype=torch.long)
    types = torch.zeros_like(ids)
    att = torch.zeros_like(ids)
    for i, (r, t) in enumerate(rows):
        ids[i, :len(r)] = torch.tensor(r)
        types[i, :len(t)] = torch.tensor(t)
        att[i, :len(r)] = 1
    labels = torch.tensor([IS_NEXT if p[2] else NOT_NEXT for p in pairs], dtype=torch.long)
    return ids, att, types, labels
