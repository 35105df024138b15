"""Corrupting the input so that an encoder can learn to repair it (SLP3 §11.2).

BERT (§11.2.1, §11.2.2)
    unigram_distribution  token frequencies of a corpus: where random replacements are drawn from
    mlm_mask              15% of the tokens selected; of those 80% -> [MASK], 10% -> random, 10% kept
    masked_lm_loss        L_MLM = -1/|M| Σ_{i∈M} log P(x_i | z_i): cross-entropy over selected tokens only
    nsp_pairs, encode_nsp next sentence prediction: 50% true next sentence, 50% from another document

RoBERTa (§11.2.3)
    pack_sequences        contiguous documents packed into fixed-length blocks, separated by [SEP]
    DynamicMasker         a fresh mask every epoch; StaticMasker: one mask, computed once (original BERT)

BART-style corruptions are in :mod:`course_lib.pretraining.noising`; the multilingual
sampler of eq. 11.7 in :mod:`course_lib.pretraining.multilingual`.

Every random function takes ``generator``: a ``torch.Generator``, an int seed, or
None (torch's global generator). The same seed gives the same corruption.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import NamedTuple

import torch
import torch.nn.functional as F

__all__ = [
    "IGNORE_INDEX", "IS_NEXT", "NOT_NEXT",
    "unigram_distribution", "MaskedBatch", "mlm_mask", "masked_lm_loss",
    "NSPPair", "nsp_pairs", "encode_nsp",
    "pack_sequences", "DynamicMasker", "StaticMasker",
]

IGNORE_INDEX = -100  # label of the tokens that are not in M: cross-entropy skips them (as in Hugging Face)
IS_NEXT, NOT_NEXT = 0, 1  # NSP labels, as Hugging Face's BertForPreTraining uses them


def _as_generator(generator: torch.Generator | int | None) -> torch.Generator | None:
    """A torch.Generator from a generator, an int seed, or None (torch's global generator)."""
    if generator is None or isinstance(generator, torch.Generator):
        return generator
    if isinstance(generator, bool) or not isinstance(generator, int):
        raise TypeError(f"generator must be a torch.Generator, an int seed or None, not {type(generator).__name__}")
    return torch.Generator().manual_seed(generator)


def _rand(shape, g: torch.Generator | None, device) -> torch.Tensor:
    """Uniform [0, 1) numbers drawn on the generator's device, returned on ``device``."""
    return torch.rand(shape, generator=g, device=g.device if g is not None else device).to(device)


def _check_prob(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a probability between 0 and 1, not {value}")


# ============================================================================= §11.2.1 masked language modeling

def unigram_distribution(
    corpus,
    vocab_size: int | None = None,
    *,
    tokenizer=None,
    exclude: Iterable[int] | None = None,
    smoothing: float = 0.0,
) -> torch.Tensor:
    """P(w) = count(w) / Σ counts over a corpus: the distribution random replacements are drawn from (§11.2.1).

    corpus:     a tensor of token ids (any shape), a list of token-id lists/tensors,
                or a list of texts (then ``tokenizer`` is needed)
    vocab_size: |V|; defaults to ``tokenizer.vocab_size``
    exclude:    ids that get probability 0; defaults to ``tokenizer.special_ids``
                ([PAD], [UNK], [CLS], [SEP], [MASK]), or to nothing without a tokenizer
    smoothing:  add-k smoothing: k is added to the count of every id not excluded.
                The default 0 is the plain relative frequency: a token never seen in the
                corpus is never drawn. (BERT's own code drew replacements uniformly from
                the vocabulary; the chapter describes unigram sampling, which we follow.)

    Returns a (|V|,) float tensor that sums to 1.
    """
    if tokenizer is not None:
        vocab_size = tokenizer.vocab_size if vocab_size is None else vocab_size
        exclude = tokenizer.special_ids if exclude is None else exclude
    if vocab_size is None:
        raise ValueError("vocab_size is needed: pass vocab_size=|V| or tokenizer=...")
    if smoothing < 0:
        raise ValueError(f"smoothing is a pseudo-count added to every token; it cannot be negative ({smoothing})")

    if torch.is_tensor(corpus):
        ids = corpus.flatten().long()
    else:
        corpus = list(corpus)
        if corpus and all(isinstance(c, str) for c in corpus):
            if tokenizer is None:
                raise ValueError("the corpus is a list of texts: pass tokenizer=... to turn them into token ids")
            corpus = [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(c)) for c in corpus]
        parts = [torch.as_tensor(c, dtype=torch.long).flatten() for c in corpus]
        ids = torch.cat(parts) if parts else torch.zeros(0, dtype=torch.long)
    if ids.numel() and (ids.min() < 0 or ids.max() >= vocab_size):
        bad = ids[(ids < 0) | (ids >= vocab_size)][0].item()
        raise ValueError(f"the corpus contains token id {bad}, outside the vocabulary of {vocab_size} ids")

    counts = torch.bincount(ids.cpu(), minlength=vocab_size).double() + smoothing  # (|V|,)
    excluded = [int(i) for i in (exclude or ())]
    counts[excluded] = 0.0
    total = counts.sum()
    if total == 0:
        raise ValueError("the corpus has no tokens outside the excluded (special) ids: nothing to count")
    return (counts / total).float()


@dataclass
class MaskedBatch:
    """What ``mlm_mask`` did to a batch. All tensors have the shape of the input, (B, T).

    input_ids:  the corrupted copy x^mask, the model's input
    labels:     the original id where ``selected`` (the set M), IGNORE_INDEX (-100) elsewhere
    eligible:   tokens that could be selected (not special, not padding)
    selected:   M, the tokens the loss is computed on; each one has exactly one fate:
    masked:     replaced by [MASK]
    randomized: replaced by a token drawn from the unigram distribution (which may, by
                chance, be the original token: the fate is recorded, not whether the id changed)
    kept:       left unchanged
    """

    input_ids: torch.Tensor
    labels: torch.Tensor
    eligible: torch.Tensor
    selected: torch.Tensor
    masked: torch.Tensor
    randomized: torch.Tensor
    kept: torch.Tensor

    def __getitem__(self, rows) -> "MaskedBatch":
        """The same batch restricted to some rows: ``batch[0:32]`` for a mini-batch."""
        return MaskedBatch(**{f.name: getattr(self, f.name)[rows] for f in fields(self)})

    def counts(self) -> dict[str, int]:
        """How many tokens were eligible, selected, masked, randomized and kept."""
        return {k: int(getattr(self, k).sum()) for k in ("eligible", "selected", "masked", "randomized", "kept")}


def _word_index(word_ids: Sequence[Sequence[int | None]], shape: tuple[int, ...]) -> tuple[torch.Tensor, int]:
    """(B, T) index of the word each token belongs to, numbered across the batch; -1 for None.

    A word is a run of consecutive tokens with the same (non-None) word id. Runs, not
    the ids themselves, because in a sentence pair the words of B are numbered from 0 again.
    """
    if len(shape) != 2:
        raise ValueError(f"whole-word masking needs input_ids of shape (B, T), not {tuple(shape)}")
    B, T = shape
    if len(word_ids) != B or any(len(w) != T for w in word_ids):
        raise ValueError(
            f"word_ids must be {B} lists of {T} entries (one per token, None for special/padding), "
            "as the tokenizer's Encoding.word_ids gives them"
        )
    index = torch.full((B, T), -1, dtype=torch.long)
    n = 0
    for b, row in enumerate(word_ids):
        prev = None
        for t, w in enumerate(row):
            if w is None:
                prev = None
                continue
            if w != prev:
                n += 1
            index[b, t] = n - 1
            prev = w
    return index, n


def mlm_mask(
    input_ids: torch.Tensor,
    *,
    special_ids: Iterable[int],
    mask_token_id: int,
    unigram: torch.Tensor,
    select_prob: float = 0.15,
    mask_prob: float = 0.8,
    random_prob: float = 0.1,
    generator: torch.Generator | int | None = None,
    attention_mask: torch.Tensor | None = None,
    whole_word: bool = False,
    word_ids: Sequence[Sequence[int | None]] | None = None,
) -> MaskedBatch:
    """MLM corruption of §11.2.1 (Fig. 11.4): select tokens, then give each one a fate.

    1. Every eligible token (not in ``special_ids`` or [MASK], not padding where
       ``attention_mask`` is 0) is selected independently with probability
       ``select_prob`` (a Bernoulli draw per token, as Hugging Face's data collator does:
       15% on average, not exactly 15% of every sequence as BERT's preprocessing did).
    2. A selected token is replaced by [MASK] with probability ``mask_prob`` (80%), by a
       token drawn from ``unigram`` with probability ``random_prob`` (10%), and left
       unchanged otherwise (10%). Special tokens are never drawn as replacements.

    input_ids: (B, T) token ids (any shape without ``whole_word``); never modified in place
    unigram:   (|V|,) probabilities, e.g. from ``unigram_distribution``
    whole_word: select whole words instead of tokens (``word_ids``: B lists of T word
               indices, None for special/padding, as in ``Encoding.word_ids``); all the
               subwords of a selected word share its fate ([MASK], random or unchanged),
               and ``select_prob`` is then the share of words, not of tokens.

    Returns a :class:`MaskedBatch` with the corrupted ``input_ids`` and the ``labels``.
    """
    for name, p in (("select_prob", select_prob), ("mask_prob", mask_prob), ("random_prob", random_prob)):
        _check_prob(name, p)
    if mask_prob + random_prob > 1.0 + 1e-9:
        raise ValueError(
            f"mask_prob + random_prob = {mask_prob} + {random_prob} = {mask_prob + random_prob:g} is more than 1: "
            "the selected tokens are shared between [MASK], a random token and unchanged"
        )
    if not torch.is_tensor(input_ids) or input_ids.dtype not in (torch.long, torch.int, torch.int16, torch.uint8):
        raise TypeError("input_ids must be a tensor of integer token ids (e.g. tokenizer(text).input_ids)")
    unigram = torch.as_tensor(unigram, dtype=torch.float)
    if unigram.dim() != 1:
        raise ValueError(f"unigram must be a (|V|,) vector of probabilities, not shape {tuple(unigram.shape)}")
    V = unigram.numel()
    if not torch.isfinite(unigram).all() or (unigram < 0).any():
        raise ValueError("unigram must hold non-negative, finite probabilities")
    if input_ids.numel() and (input_ids.min() < 0 or input_ids.max() >= V):
        raise ValueError(
            f"input_ids contain id {int(input_ids.max())}, but the unigram distribution covers only {V} ids: "
            "was it computed for another vocabulary?"
        )
    if not 0 <= mask_token_id < V:
        raise ValueError(f"mask_token_id {mask_token_id} is not in the vocabulary of {V} ids")

    device = input_ids.device
    g = _as_generator(generator)
    special = torch.tensor(sorted({int(i) for i in special_ids} | {int(mask_token_id)}), device=device)
    eligible = ~torch.isin(input_ids, special)  # (B, T)
    if attention_mask is not None:
        if attention_mask.shape != input_ids.shape:
            raise ValueError(
                f"attention_mask has shape {tuple(attention_mask.shape)}, input_ids {tuple(input_ids.shape)}"
            )
        eligible &= attention_mask.to(device).bool()

    # the units that are selected and get a fate: tokens, or whole words
    if whole_word:
        if word_ids is None:
            raise ValueError("whole_word=True needs word_ids (the tokenizer's Encoding.word_ids)")
        index, n_units = _word_index(word_ids, tuple(input_ids.shape))
        index = index.to(device)
        eligible &= index >= 0
        unit = index.clamp(min=0)  # (B, T) -> which unit's draw each token uses
        if n_units == 0:  # no word at all (e.g. no SpanBERT span fits a short text): nothing can be selected
            select_u = fate_u = torch.ones(input_ids.shape, device=device)
        else:
            select_u, fate_u = _rand(n_units, g, device), _rand(n_units, g, device)
            select_u, fate_u = select_u[unit], fate_u[unit]  # (B, T)
    else:
        select_u, fate_u = _rand(input_ids.shape, g, device), _rand(input_ids.shape, g, device)

    selected = eligible & (select_u < select_prob)
    masked = selected & (fate_u < mask_prob)
    randomized = selected & (fate_u >= mask_prob) & (fate_u < mask_prob + random_prob)
    kept = selected & ~masked & ~randomized

    corrupted = input_ids.clone()
    corrupted[masked] = mask_token_id
    n_random = int(randomized.sum())
    if n_random:
        weights = unigram.clone()
        weights[special[special < V].cpu()] = 0.0  # never draw [CLS], [MASK], … as a "random word"
        if weights.sum() <= 0:
            raise ValueError("the unigram distribution puts all its mass on special tokens: nothing to draw")
        draws = torch.multinomial(weights.to(g.device if g is not None else "cpu"), n_random, replacement=True,
                                  generator=g)
        corrupted[randomized] = draws.to(device=device, dtype=corrupted.dtype)
    labels = torch.where(selected, input_ids.long(), torch.full_like(input_ids, IGNORE_INDEX, dtype=torch.long))
    return MaskedBatch(corrupted, labels, eligible, selected, masked, randomized, kept)


def masked_lm_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """L_MLM = -1/|M| Σ_{i∈M} log P(x_i | z_i) (§11.2.1): cross-entropy over the selected tokens only.

    logits: (B, T, |V|) scores of the MLM head
    labels: (B, T) the original id at the selected positions M, -100 elsewhere

    The selected positions are gathered first, so the other positions' logits take no
    part at all (not even as NaN). Returns a scalar.
    """
    if logits.dim() < 2 or logits.shape[:-1] != labels.shape:
        raise ValueError(
            f"logits {tuple(logits.shape)} and labels {tuple(labels.shape)} do not match: "
            "expected logits (B, T, |V|) and labels (B, T)"
        )
    selected = labels != IGNORE_INDEX  # (B, T), the set M
    if not selected.any():
        raise ValueError(
            "no position is selected (every label is -100): L_MLM averages over the selected tokens M, "
            "and M is empty. Use a longer input or a larger select_prob."
        )
    V = logits.size(-1)
    targets = labels[selected]  # (|M|,)
    bad = targets[(targets < 0) | (targets >= V)]
    if bad.numel():
        raise ValueError(f"labels must be token ids in [0, {V}) or -100, found {int(bad[0])}")
    return F.cross_entropy(logits[selected], targets)  # (|M|, |V|) vs (|M|,): mean over M


# ============================================================================= §11.2.2 next sentence prediction

class NSPPair(NamedTuple):
    """A sentence pair for NSP: B follows A in the corpus (is_next) or comes from another document."""

    a: str
    b: str
    is_next: bool


def nsp_pairs(
    sentences_by_document: Sequence[Sequence[str]],
    *,
    p_next: float = 0.5,
    generator: torch.Generator | int | None = None,
) -> list[NSPPair]:
    """Next-sentence-prediction pairs (§11.2.2).

    Every sentence that has a successor in its document becomes sentence A once. With
    probability ``p_next`` (50% in BERT) B is the true next sentence; otherwise B is a
    sentence drawn uniformly from a *different* document (a random document, then a
    random sentence in it), so it cannot be the true continuation.
    """
    _check_prob("p_next", p_next)
    docs = [list(d) for d in sentences_by_document]
    nonempty = [i for i, d in enumerate(docs) if d]
    if p_next < 1 and len(nonempty) < 2:
        raise ValueError("NotNext pairs take sentence B from another document: give at least two documents")
    g = _as_generator(generator)
    pairs = []
    for d, doc in enumerate(docs):
        others = [i for i in nonempty if i != d]
        for i in range(len(doc) - 1):
            if torch.rand(1, generator=g).item() < p_next:
                pairs.append(NSPPair(doc[i], doc[i + 1], True))
            else:
                other = docs[others[int(torch.randint(len(others), (1,), generator=g))]]
                pairs.append(NSPPair(doc[i], other[int(torch.randint(len(other), (1,), generator=g))], False))
    return pairs


def encode_nsp(tokenizer, pairs: Sequence[tuple[str, str, bool]], **kwargs):
    """Tokenize NSP pairs as ``[CLS] A [SEP] B [SEP]``; return ``(encoding, labels)``.

    ``encoding.token_type_ids`` are 0 for [CLS] A [SEP] and 1 for B [SEP] (the segment
    embeddings of §11.2.2); ``labels`` (B,) are 0 = IsNext, 1 = NotNext, as Hugging Face's
    ``BertForPreTraining`` expects them. Other keyword arguments go to the tokenizer.
    """
    if not pairs:
        raise ValueError("no pairs to encode")
    a, b, is_next = zip(*pairs)
    enc = tokenizer(list(a), list(b), **kwargs)
    labels = torch.tensor([IS_NEXT if n else NOT_NEXT for n in is_next], dtype=torch.long)
    return enc, labels


# ============================================================================= §11.2.3 RoBERTa

def pack_sequences(
    documents: Sequence[Sequence[int]],
    block_size: int,
    sep_id: int,
    cls_id: int,
    *,
    pad_id: int | None = None,
) -> torch.Tensor:
    """Pack documents into (N, block_size) blocks of contiguous text, as RoBERTa does (§11.2.3).

    The documents are concatenated into one stream with [SEP] after each one
    (``doc1 [SEP] doc2 [SEP] …``); the stream is cut into pieces of ``block_size - 1``
    tokens and each block is ``[CLS] piece``. A document may thus continue into the
    next block, and a block holds as many documents as fit. The last, incomplete piece
    is dropped (as Hugging Face's ``group_texts`` does) unless ``pad_id`` is given;
    then it is padded with ``pad_id`` (use ``blocks != pad_id`` as attention mask).
    """
    if block_size < 2:
        raise ValueError(f"block_size must be at least 2 ([CLS] and one token), not {block_size}")
    stream: list[int] = []
    for doc in documents:
        doc = doc.tolist() if torch.is_tensor(doc) else list(doc)
        if doc:
            stream += [int(t) for t in doc] + [sep_id]
    n = block_size - 1  # tokens per block after [CLS]
    if pad_id is None:
        if len(stream) < n:
            raise ValueError(
                f"the documents hold {len(stream)} tokens with separators, fewer than one block of {block_size}: "
                "use a smaller block_size, or pass pad_id to keep the last, partial block"
            )
        stream = stream[: len(stream) // n * n]
    elif len(stream) % n:
        stream += [pad_id] * (n - len(stream) % n)
    pieces = torch.tensor(stream, dtype=torch.long).view(-1, n)  # (N, block_size - 1)
    return torch.cat([torch.full((pieces.size(0), 1), cls_id, dtype=torch.long), pieces], dim=1)  # (N, block_size)


class DynamicMasker:
    """RoBERTa's dynamic masking: every call draws a fresh MLM mask for the same sequences.

    Original BERT masked its data once, in preprocessing, so each sequence showed the
    same mask every epoch (see :class:`StaticMasker`). RoBERTa masks anew each time a
    sequence is fed to the model. Call once per epoch::

        masker = DynamicMasker(blocks, generator=0, special_ids=..., mask_token_id=..., unigram=...)
        for epoch in range(n_epochs):
            batch = masker()               # MaskedBatch over all sequences; batch[i:j] for mini-batches

    ``input_ids`` (N, T); the other keyword arguments are those of :func:`mlm_mask`.
    """

    def __init__(self, input_ids: torch.Tensor, *, generator: torch.Generator | int | None = None, **mask_kwargs):
        self.input_ids = input_ids
        self.generator = _as_generator(generator)
        self.mask_kwargs = mask_kwargs
        self.calls = 0

    def _draw(self) -> MaskedBatch:
        return mlm_mask(self.input_ids, generator=self.generator, **self.mask_kwargs)

    def __call__(self) -> MaskedBatch:
        self.calls += 1
        return self._draw()


class StaticMasker(DynamicMasker):
    """Original BERT's static masking: the mask is drawn once and every call returns it."""

    def __init__(self, input_ids: torch.Tensor, *, generator: torch.Generator | int | None = None, **mask_kwargs):
        super().__init__(input_ids, generator=generator, **mask_kwargs)
        self.batch = self._draw()

    def __call__(self) -> MaskedBatch:
        self.calls += 1
        return self.batch
