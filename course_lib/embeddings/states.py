"""Contextual word vectors (SLP3 §11.3): one vector per word at every layer, subword states pooled to the word.

    states = target_states(model, tok, data.train)   # (N, L+1, d): every layer, subwords pooled to the word
    word_states(model, tok, "The bank raised rates.", "bank")  # (L+1, d)
    corpus_states(model, tok, texts)                  # (n_tokens, L+1, d): every token of a corpus

Layers count as in the encoder's ``hidden_states``: 0 is the embedding layer, 1..L the outputs of the
transformer blocks.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

import torch

from .senses import SenseExample


POOLINGS = ("mean", "first", "sum")



def _encoder(model):
    return getattr(model, "bert", model)  # BertForPreTraining -> its BertModel


def _check_pooling(pooling: str) -> None:
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, not {pooling!r}")


@torch.no_grad()
def target_states(model, tokenizer, examples: Sequence[SenseExample] | None = None, *, texts=None, spans=None,
                  pooling: str = "mean", batch_size: int = 32) -> torch.Tensor:
    """The vector of each target word at every layer: (N, L+1, d), float32 on the CPU.

    Give ``examples`` (:class:`SenseExample` s), or ``texts`` and character ``spans``.
    The subword tokens that overlap the span are pooled into one word vector:
    ``mean`` (default), ``first`` (the first subword, as many taggers do) or ``sum``.
    """
    _check_pooling(pooling)
    if examples is not None:
        texts, spans = [e.text for e in examples], [(e.start, e.end) for e in examples]
    if texts is None or spans is None:
        raise ValueError("give examples=..., or texts=... and spans=[(start, end), ...]")
    texts, spans = list(texts), list(spans)
    if len(texts) != len(spans):
        raise ValueError(f"{len(texts)} texts but {len(spans)} spans")
    if not texts:
        raise ValueError("no examples: nothing to embed")
    enc_model = _encoder(model)
    device = enc_model.device
    out = []
    for b in range(0, len(texts), batch_size):
        enc = tokenizer(texts[b:b + batch_size])
        hs = enc_model(**enc.to(device), output_hidden_states=True).hidden_states
        H = torch.stack(hs, dim=1).float().cpu()  # (B, L+1, T, d)
        for i, (start, end) in enumerate(spans[b:b + batch_size]):
            idx = [t for t, (s, e) in enumerate(enc.offsets[i]) if e > s and s < end and e > start]
            if not idx:
                raise ValueError(f"no token covers characters {start}-{end} of {texts[b + i]!r}: "
                                 "is the span inside the sentence?")
            v = H[i][:, idx]  # (L+1, k, d)
            out.append(v[:, 0] if pooling == "first" else v.sum(1) if pooling == "sum" else v.mean(1))
    return torch.stack(out)


def word_states(model, tokenizer, sentence: str, word: str, *, occurrence: int = 0, pooling: str = "mean"):
    """(L+1, d) vectors of ``word`` in ``sentence`` (its ``occurrence``-th appearance; case-insensitive)."""
    if not sentence.strip():
        raise ValueError("the sentence is empty: type a sentence that contains the target word")
    if not word.strip():
        raise ValueError("no target word given: say which word of the sentence to look at")
    found = [m.span() for m in re.finditer(rf"(?<!\w){re.escape(word.strip())}(?!\w)", sentence, re.IGNORECASE)]
    if not found:
        raise ValueError(f"the target word {word.strip()!r} does not occur in the sentence {sentence!r}")
    if occurrence >= len(found):
        raise ValueError(f"{word!r} occurs {len(found)} time(s) in the sentence; occurrence {occurrence} does not exist")
    return target_states(model, tokenizer, texts=[sentence], spans=[found[occurrence]], pooling=pooling)[0]


@torch.no_grad()
def corpus_states(model, tokenizer, texts: Sequence[str], *, max_tokens: int = 20000, batch_size: int = 32,
                  max_length: int = 128) -> torch.Tensor:
    """Vectors of the corpus's tokens at every layer, (N, L+1, d), skipping [CLS]/[SEP]/padding; at most max_tokens."""
    enc_model = _encoder(model)
    out, n = [], 0
    texts = [t for t in texts if t.strip()]
    for b in range(0, len(texts), batch_size):
        enc = tokenizer(texts[b:b + batch_size], truncation=True, max_length=max_length) if any(
            len(t) > 4 * max_length for t in texts[b:b + batch_size]) else tokenizer(texts[b:b + batch_size])
        hs = enc_model(**enc.to(enc_model.device), output_hidden_states=True).hidden_states
        H = torch.stack(hs, dim=2).float().cpu()  # (B, T, L+1, d)
        keep = enc.attention_mask.bool().cpu() & ~torch.isin(enc.input_ids.cpu(), torch.tensor(sorted(tokenizer.special_ids)))
        out.append(H[keep])
        n += int(keep.sum())
        if n >= max_tokens:
            break
    if not out:
        raise ValueError("the corpus is empty")
    return torch.cat(out)[:max_tokens]


@torch.no_grad()
def isolated_word_states(model, tokenizer, words: Sequence[str], *, pooling: str = "mean") -> torch.Tensor:
    """(N, L+1, d): each word on its own ("[CLS] word [SEP]"), subwords pooled."""
    words = list(words)
    return target_states(model, tokenizer, texts=words, spans=[(0, len(w)) for w in words], pooling=pooling,
                         batch_size=128)
