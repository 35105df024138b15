"""Sequence labelling with subwords (SLP3 §11.4.3, eq. 11.14-11.16).

NER data comes as one BIO tag per *word*; the encoder sees *subwords*. This module moves labels
between the two:

* reading CoNLL files and converting IOB1 tags (wikigold's) to BIO / IOB2 (:func:`iob1_to_bio`);
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

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import torch

IGNORE_INDEX = -100  # the label the loss skips (torch's CrossEntropyLoss ignore_index)
ALIGNMENT_POLICIES = ("every", "first")
ENTITY_TYPES = ("LOC", "MISC", "ORG", "PER")  # wikigold's types, in this order everywhere
_TAG = re.compile(r"^(O|[BI]-\S+)$")


# ----------------------------------------------------------------------------- data

@dataclass(frozen=True)
class TaggedSentence:
    """One sentence: its words and one tag per word ('O', 'B-PER', 'I-PER', ...); ``doc`` numbers documents."""

    words: tuple[str, ...]
    tags: tuple[str, ...]
    doc: int = 0

    def __post_init__(self):
        if len(self.words) != len(self.tags):
            raise ValueError(f"a sentence has {len(self.words)} words but {len(self.tags)} tags: "
                             f"{' '.join(self.words)[:80]!r}")

    def __len__(self) -> int:
        return len(self.words)


def read_conll(source: str | Path, *, text: bool = False) -> list[TaggedSentence]:
    """Read CoNLL-format NER data: one ``word tag`` per line (the tag is the last column), a blank line
    between sentences, ``-DOCSTART-`` lines between documents.

    ``source`` is a path, or the text itself with ``text=True``.
    """
    raw = source if text else Path(source).read_text(encoding="utf-8")
    sentences, words, tags, doc, seen_words = [], [], [], 0, False
    for n, line in enumerate(raw.splitlines(), 1):
        line = line.strip()
        if line.startswith("-DOCSTART-"):
            if words:
                sentences.append(TaggedSentence(tuple(words), tuple(tags), doc))
                words, tags = [], []
            if seen_words:
                doc += 1
                seen_words = False
            continue
        if not line:
            if words:
                sentences.append(TaggedSentence(tuple(words), tuple(tags), doc))
                words, tags = [], []
            continue
        parts = line.split()
        if len(parts) < 2:
            raise ValueError(f"line {n} has no tag: {line!r} (expected 'word tag')")
        if not _TAG.match(parts[-1]):
            raise ValueError(f"line {n}: {parts[-1]!r} is not a BIO tag (expected O, B-TYPE or I-TYPE)")
        words.append(parts[0])
        tags.append(parts[-1])
        seen_words = True
    if words:
        sentences.append(TaggedSentence(tuple(words), tuple(tags), doc))
    return sentences


def write_conll(sentences: list[TaggedSentence]) -> str:
    """The inverse of :func:`read_conll`: documents separated by ``-DOCSTART- O``, sentences by blank lines."""
    out, doc = [], None
    for s in sentences:
        if s.doc != doc:
            out.append("-DOCSTART- O\n")
            doc = s.doc
        out.extend(f"{w} {t}" for w, t in zip(s.words, s.tags))
        out.append("")
    return "\n".join(out) + "\n"


def iob1_to_bio(tags) -> list[str]:
    """IOB1 -> BIO (IOB2): an entity's first word always gets B-.

    In IOB1 an entity starts with I- and B- appears only where an entity directly follows another of the
    same type. So I- means "inside" *or* "first word": the tag of a word depends on its neighbour's type.
    BIO gives every entity's first word B-, and I- always continues.
    """
    out, prev = [], "O"
    for t in tags:
        if t.startswith("I-") and (prev == "O" or prev[2:] != t[2:]):
            t = "B-" + t[2:]
        out.append(t)
        prev = t
    return out


def bio_violations(tags) -> list[int]:
    """Positions of I-X tags that follow neither B-X nor I-X (invalid in BIO; an IOB1 entity start)."""
    bad, prev = [], "O"
    for i, t in enumerate(tags):
        if t.startswith("I-") and (prev == "O" or prev[2:] != t[2:]):
            bad.append(i)
        prev = t
    return bad


def load_wikigold(split: str = "train") -> list[TaggedSentence]:
    """Wikigold (Balasuriya et al. 2009), converted to BIO, split by document (see its DATA_CARD.md).

    ``split``: "train" (116 documents) or "test" (29 held-out documents); "original" gives the whole
    corpus as released, with its IOB1 tags.
    """
    from ..paths import data_dir

    files = {"train": "train.bio.conll", "test": "test.bio.conll", "original": "wikigold.conll.txt"}
    if split not in files:
        raise ValueError(f"unknown split {split!r}: choose 'train', 'test' or 'original'")
    return read_conll(data_dir("wikigold", files[split]))


def tag_counts(sentences) -> Counter:
    """How many entities of each type (counted at their B- tags; use on BIO data)."""
    return Counter(t[2:] for s in sentences for t in s.tags if t.startswith("B-"))


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


_TRAILING = ",;:!?)\"'"
_LEADING = "(\"'"


def split_words(text: str) -> list[str]:
    """Typed text -> words as CoNLL data has them: split at spaces; brackets, quotes and , ; : ! ? come off as
    words of their own, and so does the full stop that ends the sentence ('Mt.' keeps its stop)."""
    raws = text.split()
    words = []
    for n, raw in enumerate(raws):
        lead, tail, stop_done = [], [], n < len(raws) - 1
        while len(raw) > 1 and raw[0] in _LEADING:
            lead.append(raw[0])
            raw = raw[1:]
        while len(raw) > 1 and (raw[-1] in _TRAILING or (raw[-1] == "." and not stop_done)):
            stop_done = stop_done or raw[-1] == "."
            tail.insert(0, raw[-1])
            raw = raw[:-1]
        words += lead + [raw] + tail
    return words


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
