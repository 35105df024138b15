"""BART-style corruptions of a text (SLP3 §11.2 and the BART lecture: "masks, substitutions,
reorderings, deletions, and extraneous insertions").

    token_mask        each token -> [MASK] with probability p
    token_delete      each token deleted with probability p
    text_infill       spans with Poisson(λ = 3) lengths -> one [MASK] each (length 0 = an insertion)
    sentence_permute  the sentences of a document in random order
    document_rotate   the document rotated to start at a random token

Each takes a list of tokens (or ids), or a string that is split on whitespace and
joined back, and a ``generator`` (a torch.Generator, an int seed or None).
"""
from __future__ import annotations

from collections.abc import Sequence

import torch

from .masking import _as_generator, _check_prob, _rand

__all__ = ["token_mask", "token_delete", "sample_infill_spans", "text_infill", "sentence_permute", "document_rotate"]


def _as_tokens(tokens) -> tuple[list, bool]:
    """A list of tokens, and whether the input was a string (split on whitespace, joined back after)."""
    if isinstance(tokens, str):
        return tokens.split(), True
    return (tokens.tolist() if torch.is_tensor(tokens) else list(tokens)), False


def _out(tokens: list, was_text: bool):
    return " ".join(str(t) for t in tokens) if was_text else tokens


def token_mask(tokens, *, p: float = 0.15, mask_token="[MASK]", generator=None):
    """Token masking: each token becomes ``mask_token`` with probability ``p`` (as in BERT, without the 80/10/10).

    ``tokens``: a list of tokens (strings or ids), or a string (split into words; a string is returned).
    """
    _check_prob("p", p)
    toks, text = _as_tokens(tokens)
    u = _rand(len(toks), _as_generator(generator), "cpu")
    return _out([mask_token if x < p else t for t, x in zip(toks, u.tolist())], text)


def token_delete(tokens, *, p: float = 0.15, generator=None):
    """Token deletion: each token is dropped with probability ``p``; the model must find *where* input is missing."""
    _check_prob("p", p)
    toks, text = _as_tokens(tokens)
    u = _rand(len(toks), _as_generator(generator), "cpu")
    return _out([t for t, x in zip(toks, u.tolist()) if x >= p], text)


def sample_infill_spans(
    n_tokens: int, *, mask_ratio: float = 0.3, lam: float = 3.0, generator=None
) -> list[tuple[int, int]]:
    """The (start, length) spans ``text_infill`` replaces, sorted by start.

    Span lengths are drawn from Poisson(λ) until they cover round(mask_ratio · n) tokens
    (the last one is cut to fit); a length of 0 is an insertion point. The spans are
    placed at random, in random order, with at least one untouched token between two
    spans, so that each [MASK] in the output stands for exactly one span.
    """
    if not 0.0 <= mask_ratio < 1.0:
        raise ValueError(f"mask_ratio is the share of tokens to mask, in [0, 1), not {mask_ratio}")
    if lam <= 0:
        raise ValueError(f"lam, the mean span length of the Poisson distribution, must be > 0, not {lam}")
    g = _as_generator(generator)
    budget = round(mask_ratio * n_tokens)
    lengths: list[int] = []
    while sum(lengths) < budget:
        L = int(torch.poisson(torch.tensor([float(lam)]), generator=g).item())
        lengths.append(min(L, budget - sum(lengths)))
    while lengths and len(lengths) - 1 > n_tokens - sum(lengths):  # no room for one token between spans
        lengths.pop()
    k = len(lengths)
    if k == 0:
        return []
    order = torch.randperm(k, generator=g).tolist()  # spans appear in random order
    lengths = [lengths[i] for i in order]
    # spread the free tokens over the k + 1 gaps (before, between, after the spans): "stars and bars"
    free = n_tokens - sum(lengths) - (k - 1)
    bars = sorted(torch.randperm(free + k, generator=g)[:k].tolist())
    extra = [bars[0]] + [bars[i] - bars[i - 1] - 1 for i in range(1, k)]  # extra gap before each span
    spans, pos = [], 0
    for i, L in enumerate(lengths):
        pos += extra[i] + (1 if i else 0)
        spans.append((pos, L))
        pos += L
    return spans


def text_infill(tokens, *, mask_ratio: float = 0.3, lam: float = 3.0, mask_token="[MASK]", generator=None):
    """Text infilling (BART): spans of Poisson(λ=3) length are each replaced by a single ``mask_token``.

    A 0-length span inserts a ``mask_token``, so the model must also learn how many tokens
    a mask stands for (none, one, several). The spans are ``sample_infill_spans(len(tokens), …)``
    with the same generator.
    """
    toks, text = _as_tokens(tokens)
    spans = sample_infill_spans(len(toks), mask_ratio=mask_ratio, lam=lam, generator=generator)
    out, prev = [], 0
    for start, L in spans:
        out += toks[prev:start] + [mask_token]
        prev = start + L
    return _out(out + toks[prev:], text)


def sentence_permute(sentences: Sequence, *, generator=None) -> list:
    """Sentence permutation (BART): the document's sentences in a random order."""
    sentences = list(sentences)
    order = torch.randperm(len(sentences), generator=_as_generator(generator)).tolist()
    return [sentences[i] for i in order]


def document_rotate(tokens, *, generator=None):
    """Document rotation (BART): a token is chosen uniformly and the document rotated to start with it."""
    toks, text = _as_tokens(tokens)
    if not toks:
        return _out(toks, text)
    k = int(torch.randint(len(toks), (1,), generator=_as_generator(generator)))
    return _out(toks[k:] + toks[:k], text)
