"""SpanBERT's heads on held-out sentences (SLP3 §11.5, eq. 11.17-11.20): :func:`sbo_position_accuracy` scores the
MLM head (from z_i) and the SBO head (from the span's boundaries) by where a token sits inside its span, beside the
unigram loss and a guess that ignores the context (always the most frequent token); :func:`position_gap` asks how
sure a head's drop from the edge to the middle of a span is (a bootstrap over the sentences)."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from ..finetuning.labelling import encode_words
from .masking import span_mask
from .ner import SpanSentence
from .sbo import SpanBertForPreTraining, sbo_targets


def _unigram_loss(unigram: torch.Tensor, labels: torch.Tensor) -> float:
    return float(-unigram[labels].clamp_min(1e-12).log().mean())


@dataclass
class PositionAccuracy:
    """Held-out masked tokens scored by the MLM head (from z_i) and the SBO head (from the boundaries): top-1
    accuracy by distance from the nearer span boundary (1 = a span's first or last token, 2 = one further in,
    ...; the last bucket holds everything beyond), and the mean losses against the unigram loss.

    Short spans have only edge tokens, so the first bucket holds every token of every short span and the last
    only tokens of long ones: ``*_long`` are the same accuracies over the spans long enough to reach the last
    bucket (at least 2·buckets - 1 tokens), where each distance comes from the same spans. ``long_tokens`` holds
    each of those tokens as (sentence index, distance bucket from 0, MLM right, SBO right): what a bootstrap over
    the sentences resamples (:func:`position_gap`). ``unigram`` and ``unigram_long``: the top-1 accuracy of always
    guessing the unigram distribution's most probable token (``top_token``), on the same tokens: what a guess that
    ignores the context gets."""

    distance: list
    mlm: list
    sbo: list
    counts: list
    mlm_loss: float = math.nan
    sbo_loss: float = math.nan
    unigram_loss: float = math.nan
    mlm_long: list = field(default_factory=list)
    sbo_long: list = field(default_factory=list)
    counts_long: list = field(default_factory=list)
    long_tokens: list = field(default_factory=list)
    unigram: list = field(default_factory=list)
    unigram_long: list = field(default_factory=list)
    top_token: int = -1


def sbo_position_accuracy(model: SpanBertForPreTraining, tokenizer, unigram, sentences: Sequence[SpanSentence], *,
                          draws: int = 2, batch_size: int = 32, seed: int = 1, buckets: int = 3,
                          mask_prob: float = 1.0, random_prob: float = 0.0) -> PositionAccuracy:
    """Mask held-out sentences ``draws`` times (fixed seed) and score every masked token's MLM and SBO guesses.

    Every span token is replaced by [MASK] by default: with the 80/10/10 of training, the 10% of spans kept as
    they are would show the MLM head its answer in its input (and the boundary vectors the span's words)."""
    g = torch.Generator().manual_seed(seed)
    hit_m, hit_s, n = [0] * buckets, [0] * buckets, [0] * buckets
    long_m, long_s, long_n = [0] * buckets, [0] * buckets, [0] * buckets
    hit_u, long_u = [0] * buckets, [0] * buckets  # always guessing the most frequent token
    top = int(unigram.argmax())
    long_tokens = []
    sums = {"mlm": 0.0, "sbo": 0.0, "unigram": 0.0}
    model.eval()
    with torch.no_grad():
        for _ in range(draws):
            for k in range(0, len(sentences), batch_size):
                chunk = [list(s.words) for s in sentences[k:k + batch_size]]
                enc = encode_words(tokenizer, chunk, truncation=True, max_length=128)
                m = span_mask(enc.input_ids, enc.word_ids, special_ids=tokenizer.special_ids,
                              mask_token_id=tokenizer.mask_token_id, unigram=unigram, mask_prob=mask_prob,
                              random_prob=random_prob, attention_mask=enc.attention_mask, generator=g)
                targets = sbo_targets(m.spans, m.labels)
                if not len(targets):
                    continue
                out = model(m.input_ids, enc.attention_mask, targets=targets)
                sums["mlm"] += float(nn.functional.cross_entropy(out.logits, targets.labels, reduction="sum"))
                sums["sbo"] += float(nn.functional.cross_entropy(out.sbo_logits, targets.labels, reduction="sum"))
                sums["unigram"] += _unigram_loss(unigram, targets.labels) * len(targets)
                dist = targets.from_nearer_boundary.clamp(max=buckets) - 1
                long = (targets.end - targets.start + 1 >= 2 * buckets - 1).tolist()
                for d, a, b, u, is_long, row in zip(dist.tolist(), (out.logits.argmax(-1) == targets.labels).tolist(),
                                                    (out.sbo_logits.argmax(-1) == targets.labels).tolist(),
                                                    (targets.labels == top).tolist(), long, targets.row.tolist()):
                    n[d] += 1
                    hit_m[d] += a
                    hit_s[d] += b
                    hit_u[d] += u
                    if is_long:
                        long_n[d] += 1
                        long_m[d] += a
                        long_s[d] += b
                        long_u[d] += u
                        long_tokens.append((k + row, d, bool(a), bool(b)))
    total = max(sum(n), 1)

    def rates(hits, counts):
        return [h / max(c, 1) for h, c in zip(hits, counts)]

    return PositionAccuracy(list(range(1, buckets + 1)), rates(hit_m, n), rates(hit_s, n), n, sums["mlm"] / total,
                            sums["sbo"] / total, sums["unigram"] / total, rates(long_m, long_n), rates(long_s, long_n),
                            long_n, long_tokens, rates(hit_u, n), rates(long_u, long_n), top)


def position_gap(acc: PositionAccuracy, head: str, near: int = 0, far: int = -1, *, resamples: int = 2000,
                 seed: int = 0):
    """How sure is a head's drop in top-1 from one distance bucket to another (spans of 5+ tokens)? Its accuracy
    at ``near`` minus that at ``far``, with a bootstrap over the sentences (all the tokens of a sentence drawn
    together: a sentence's spans, and its two draws of masks, are not independent). ``head``: "mlm" or "sbo"."""
    import numpy as np

    from ..stats import paired_bootstrap

    if head not in ("mlm", "sbo"):
        raise ValueError(f"head must be 'mlm' or 'sbo', not {head!r}")
    if not acc.long_tokens:
        raise ValueError("no tokens of long spans to resample")
    sent, bucket, mlm, sbo = (np.array(c) for c in zip(*acc.long_tokens))
    hit = (mlm if head == "mlm" else sbo).astype(float)
    near, far = range(len(acc.distance))[near], range(len(acc.distance))[far]

    def drop(idx):
        b, h = bucket[idx], hit[idx]
        return h[b == near].mean() - h[b == far].mean()

    return paired_bootstrap(drop, len(sent), resamples=resamples, seed=seed, groups=sent.tolist())
