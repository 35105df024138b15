"""Masked language modelling (SLP3 §11.2): predicting the tokens behind [MASK]."""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class MaskPrediction:
    """Top-k candidates for one [MASK]: its position in the token sequence, tokens and probabilities."""

    position: int
    tokens: list[str]
    probs: list[float]


class NoMLMHeadError(ValueError):
    """The model cannot predict masked tokens because its checkpoint has no MLM head."""


@torch.no_grad()
def fill_mask(model, tokenizer, text: str, top_k: int = 5) -> list[MaskPrediction]:
    """The cloze task: for each [MASK] in ``text``, the top-k tokens with their probabilities.

    >>> fill_mask(model, tok, "The capital of France is [MASK].")   # doctest: +SKIP
    [MaskPrediction(position=6, tokens=['paris', ...], probs=[0.41, ...])]
    """
    if not getattr(model, "has_mlm_head", False):
        raise NoMLMHeadError(
            f"{getattr(model, 'name_or_path', 'this model')} has no MLM head (its checkpoint has no "
            "cls.predictions.* weights), so it cannot predict masked tokens. Load a checkpoint that has one "
            "(e.g. a Hugging Face BertForMaskedLM directory)."
        )
    enc = tokenizer(text, device=model.device)
    positions = (enc.input_ids[0] == tokenizer.mask_token_id).nonzero().flatten().tolist()
    if not positions:
        raise ValueError(f"there is no [MASK] in {text!r}: write [MASK] where the model should fill in a word")
    if not 1 <= top_k <= tokenizer.vocab_size:
        raise ValueError(f"top_k must be between 1 and {tokenizer.vocab_size}, not {top_k}")
    logits = model(**enc).logits[0]  # (T, |V|)
    out = []
    for pos in positions:
        p = logits[pos].softmax(-1)
        top = p.topk(top_k)
        out.append(MaskPrediction(pos, tokenizer.convert_ids_to_tokens(top.indices), top.values.tolist()))
    return out
