"""Sequence labelling with subwords (SLP3 §11.4.3, eq. 11.14-11.16).

NER data comes as one BIO tag per *word*; the encoder sees *subwords*. This module moves labels
between the two:

* the data side -- CoNLL files, IOB1 -> BIO, wikigold -- lives in :mod:`.conll` (its names are re-exported here);
* encoding pre-split words so that ``Encoding.word_ids`` index the words (:func:`encode_words`);
* training alignment, word tags -> subword labels (:func:`align_labels`), with two policies:
  ``"every"`` -- the chapter's: every subword gets its word's tag, so 'Mt.' -> 'mt' B-LOC, '.' B-LOC;
  ``"first"`` -- the common one: the first subword gets the tag, the others -100 (ignored by the loss);
* decoding, subword predictions -> word tags: the first subword's argmax (:func:`decode_first_subword`,
  the chapter's simplest approach) or the argmax of the subwords' combined distributions
  (:func:`decode_combined`).

Tags are strings ('B-LOC'); :class:`LabelSet` turns them into class ids and back.
"""
from __future__ import annotations

import torch

from .conll import (ENTITY_TYPES, TaggedSentence, bio_violations, iob1_to_bio, load_wikigold, read_conll,  # noqa: F401
                    split_words, tag_counts, write_conll)

IGNORE_INDEX = -100  # the label the loss skips (torch's CrossEntropyLoss ignore_index)
ALIGNMENT_POLICIES = ("every", "first")


class LabelSet:
    """The tags of a task and their class ids: 'O' is 0, then B-X, I-X for each type X.

    >>> labels = LabelSet(["LOC", "PER"])
    >>> labels.tags
    ('O', 'B-LOC', 'I-LOC', 'B-PER', 'I-PER')
    """

    def __init__(self, types=ENTITY_TYPES):
        self.types = tuple(types)
        self.tags = ("O",) + tuple(f"{p}-{t}" for t in self.types for p in "BI")
        self.tag2id = {t: i for i, t in enumerate(self.tags)}

    def __len__(self) -> int:
        return len(self.tags)

    def __repr__(self) -> str:
        return f"LabelSet({list(self.tags)})"

    def encode(self, tags) -> list[int]:
        """Tags -> ids; -100 and None pass through as -100."""
        out = []
        for t in tags:
            if t is None or t == IGNORE_INDEX:
                out.append(IGNORE_INDEX)
            elif t in self.tag2id:
                out.append(self.tag2id[t])
            else:
                raise ValueError(f"unknown tag {t!r}: this label set has {list(self.tags)}")
        return out

    def decode(self, ids) -> list[str]:
        """Ids -> tags (-100 stays -100)."""
        ids = ids.tolist() if torch.is_tensor(ids) else ids
        return [IGNORE_INDEX if int(i) == IGNORE_INDEX else self.tags[int(i)] for i in ids]


# ----------------------------------------------------------------------------- subwords

def encode_words(tokenizer, words, *, max_length: int | None = None, truncation: bool = False):
    """Tokenize text that is already split into words (one sentence, or a batch of them).

    Like ``tokenizer(text)`` (an :class:`Encoding`, padded on the right), but ``word_ids`` index the given
    words: 'Mt.' stays one word, where tokenizing the joined text would split off the full stop.
    A sentence of more than ``max_length`` subwords (default: the model's limit) is refused, or cut with
    ``truncation=True``.
    """
    from ..tokenization.bert_tokenizer import Encoding

    single = bool(words) and isinstance(words[0], str)
    batch = [list(words)] if single else [list(w) for w in words]
    if not batch or any(not w for w in batch):
        raise ValueError("no words given: pass a non-empty list of words (or a list of such lists)")
    for s in batch:
        for w in s:
            if not isinstance(w, str) or not w.strip():
                raise ValueError(f"every word must be a non-empty string; got {w!r} in {' '.join(map(str, s))[:80]!r}")
    limit = tokenizer.model_max_length if max_length is None else max_length
    encs = tokenizer.backend.encode_batch(batch, is_pretokenized=True)
    rows = []
    for i, e in enumerate(encs):
        ids, tokens, wids, offs = list(e.ids), list(e.tokens), list(e.word_ids), list(e.offsets)
        if len(ids) > limit:
            if not truncation:
                raise ValueError(f"sentence {i} has {len(ids)} subwords, more than the limit of {limit}; "
                                 "pass truncation=True to cut it")
            keep = limit - 1
            ids, tokens, wids, offs = ids[:keep] + ids[-1:], tokens[:keep] + tokens[-1:], wids[:keep] + [None], \
                offs[:keep] + offs[-1:]
        rows.append((ids, tokens, wids, offs))
    T = max(len(r[0]) for r in rows)
    pad = tokenizer.pad_token_id
    input_ids = torch.full((len(rows), T), pad, dtype=torch.long)
    attention_mask = torch.zeros((len(rows), T), dtype=torch.long)
    out = Encoding(input_ids, attention_mask, torch.zeros((len(rows), T), dtype=torch.long))
    for b, (ids, tokens, wids, offs) in enumerate(rows):
        n = len(ids)
        input_ids[b, :n] = torch.tensor(ids)
        attention_mask[b, :n] = 1
        out.tokens.append(tokens + ["[PAD]"] * (T - n))
        out.word_ids.append(wids + [None] * (T - n))
        out.sequence_ids.append([None if w is None else 0 for w in wids] + [None] * (T - n))
        out.offsets.append(list(offs) + [(0, 0)] * (T - n))
    return out


def align_labels(word_tags, word_ids, policy: str = "first") -> list:
    """Eq. 11.16 made subword-sized: one training label per subword.

    word_tags: one tag per word ('B-LOC', ...; or class ids); word_ids: one entry per subword, the index of
    its word or None ([CLS], [SEP], padding).

    * ``policy="every"`` (the chapter's): every subword gets its word's tag -- a word tagged B-LOC that
      splits into two pieces gives two B-LOC labels in a row.
    * ``policy="first"``: the first subword of each word gets the tag, later pieces -100.

    Special tokens and padding get -100 under both policies.
    """
    if policy not in ALIGNMENT_POLICIES:
        raise ValueError(f"unknown alignment policy {policy!r}: choose 'every' or 'first'")
    n_words = len(word_tags)
    labels, prev = [], None
    for w in word_ids:
        if w is None:
            labels.append(IGNORE_INDEX)
        elif not 0 <= w < n_words:
            raise ValueError(f"word id {w} is out of range: there are {n_words} word tags")
        elif policy == "every" or w != prev:
            labels.append(word_tags[w])
        else:
            labels.append(IGNORE_INDEX)
        prev = w
    return labels


def first_subword_positions(word_ids) -> list[int]:
    """Index of the first subword of every word, in word order."""
    first = {}
    for i, w in enumerate(word_ids):
        if w is not None and w not in first:
            first[w] = i
    if first and sorted(first) != list(range(len(first))):
        missing = sorted(set(range(max(first) + 1)) - set(first))
        raise ValueError(f"words {missing} have no subword (were they cut off?)")
    return [first[w] for w in sorted(first)]


def decode_first_subword(subword_labels, word_ids) -> list:
    """The chapter's decoding: each word takes the label predicted for its first subword.

    subword_labels: one predicted label per subword (tags, or ids, or a (T,) tensor of ids).
    """
    if torch.is_tensor(subword_labels):
        subword_labels = subword_labels.tolist()
    if len(subword_labels) < len(word_ids):
        raise ValueError(f"{len(subword_labels)} subword labels for {len(word_ids)} subwords")
    return [subword_labels[i] for i in first_subword_positions(word_ids)]


def decode_combined(logits: torch.Tensor, word_ids, how: str = "mean") -> list[int]:
    """The alternative: combine the tag distributions of all of a word's subwords, then take the argmax.

    logits: (T, K) scores of one sentence. ``how="mean"`` averages the subwords' probabilities;
    ``how="product"`` multiplies them (sums log-probabilities). Returns one class id per word.
    """
    if how not in ("mean", "product"):
        raise ValueError(f"how must be 'mean' or 'product', not {how!r}")
    logp = torch.log_softmax(logits.float(), dim=-1)  # (T, K)
    n_words = len(first_subword_positions(word_ids))
    out = []
    for w in range(n_words):
        rows = [i for i, x in enumerate(word_ids) if x == w]
        combined = logp[rows].exp().mean(0) if how == "mean" else logp[rows].sum(0)  # (K,)
        out.append(int(combined.argmax()))
    return out


def subword_entities_every(word_tags, word_ids) -> int:
    """How many entities a BIO reader finds in the ``"every"``-aligned subword labels of one sentence
    (a B- copied onto a continuation piece starts a second entity)."""
    from .ner_eval import get_entities

    labels = [t for t in align_labels(word_tags, word_ids, "every") if t != IGNORE_INDEX]
    return len(get_entities(labels))
