"""Whole-word masking: what a [MASK] on one piece of a word gives away.

BERT selects tokens, and a token is often one WordPiece of a longer word. With the word's other pieces in view,
the masked piece can often be read off them instead of from the context. :func:`piece_vs_whole_word` measures
that: the same piece of the same word in the same text, asked of the MLM head once with only that piece masked and
once with every piece of its word masked (what ``mlm_mask(..., whole_word=True)`` does to a selected word).

    scores = piece_vs_whole_word(model, tokenizer, texts, seed=0)
    print(scores["piece alone"], scores["whole word"], sep="\\n")
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from .fill_mask import NoMLMHeadError, head_top1_and_p

CONDITIONS = ("piece alone", "whole word")


@dataclass
class PieceScore:
    """What the MLM head predicts at the chosen pieces under one condition.

    n:           number of pieces asked about (one per text that has a word of two or more pieces)
    top1:        share where the top-1 prediction is the original piece
    p_original:  mean probability of the original piece
    """

    condition: str
    n: int
    top1: float
    p_original: float

    def __str__(self) -> str:
        return (f"{self.condition:11s} {self.n:5,d} pieces: top-1 = the original piece {self.top1:6.1%}, "
                f"mean P(original) {self.p_original:.3f}")


def mask_one_word(input_ids: torch.Tensor, word_ids, mask_token_id: int, rng: random.Random):
    """For each row that has a word of two or more pieces, choose one such word and one of its pieces.

    input_ids: (B, T) token ids; word_ids: B lists of T word indices (None for special tokens and padding).
    Returns ``(rows, positions, piece_alone, whole_word)``: the chosen rows and piece positions (two lists of the
    same length), and two copies of those rows of ``input_ids``, (n, T): one with only the chosen piece replaced by
    ``mask_token_id``, one with every piece of its word replaced. ``input_ids`` is not modified.
    """
    rows, positions, words = [], [], []
    for b, wids in enumerate(word_ids):
        pieces: dict[int, list[int]] = {}
        for t, w in enumerate(wids):
            if w is not None:
                pieces.setdefault(w, []).append(t)
        long_words = [p for p in pieces.values() if len(p) >= 2]
        if not long_words:
            continue
        word = rng.choice(long_words)
        rows.append(b)
        positions.append(rng.choice(word))
        words.append(word)
    piece_alone, whole_word = input_ids[rows].clone(), input_ids[rows].clone()
    for k, (t, word) in enumerate(zip(positions, words)):
        piece_alone[k, t] = mask_token_id
        whole_word[k, word] = mask_token_id
    return rows, positions, piece_alone, whole_word


@torch.no_grad()
def piece_vs_whole_word(model, tokenizer, texts, *, seed: int = 0, batch_size: int = 64) -> dict[str, PieceScore]:
    """Top-1 accuracy and P(original) at one piece of one multi-piece word per text, with only that piece masked
    ("piece alone") and with its whole word masked ("whole word"). Texts without such a word are skipped."""
    if not getattr(model, "has_mlm_head", False):
        raise NoMLMHeadError(f"{getattr(model, 'name_or_path', 'this model')} has no MLM head to ask")
    texts = list(texts)
    if not texts:
        raise ValueError("no texts to mask")
    rng = random.Random(seed)
    sums = {c: [0, 0, 0.0] for c in CONDITIONS}  # n, top-1 == original, sum of P(original)
    dev = model.device
    for i in range(0, len(texts), batch_size):
        enc = tokenizer(texts[i:i + batch_size])
        rows, positions, piece_alone, whole_word = mask_one_word(enc.input_ids, enc.word_ids,
                                                                 tokenizer.mask_token_id, rng)
        if not rows:
            continue
        at = torch.arange(len(rows)), torch.tensor(positions)
        original = enc.input_ids[rows][at].to(dev)  # (n,)
        for condition, ids in zip(CONDITIONS, (piece_alone, whole_word)):
            hidden = model.bert.last_hidden_by_length(ids.to(dev), enc.attention_mask[rows].to(dev),
                                                      enc.token_type_ids[rows].to(dev))[at]  # (n, d)
            top1, p = head_top1_and_p(model, hidden, original)
            sums[condition][0] += len(original)
            sums[condition][1] += int((top1 == original).sum())
            sums[condition][2] += float(p.double().sum())
    if not sums[CONDITIONS[0]][0]:
        raise ValueError("none of the texts has a word of two or more pieces: there is nothing to compare")
    return {c: PieceScore(c, n, hits / n, p_sum / n) for c, (n, hits, p_sum) in sums.items()}
