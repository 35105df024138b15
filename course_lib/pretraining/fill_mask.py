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


@dataclass
class ClozeAccuracy:
    """Masked-token accuracy of a model beside the unigram-frequency baseline, on the same masks."""

    n_masked: int
    top1: float
    top5: float
    baseline_top1: float
    baseline_top5: float

    def __str__(self) -> str:
        return (f"{self.n_masked:,} masked tokens: top-1 {self.top1:.1%} (unigram baseline {self.baseline_top1:.1%}), "
                f"top-5 {self.top5:.1%} (baseline {self.baseline_top5:.1%})")


@torch.no_grad()
def masked_token_accuracy(model, tokenizer, texts, unigram: torch.Tensor, *, select_prob: float = 0.15,
                          seed: int = 0, batch_size: int = 64) -> ClozeAccuracy:
    """How often the original token is the model's top-1 / in its top-5 when 15% of the tokens are [MASK]ed.

    Every selected token becomes [MASK] (no 80/10/10 at evaluation). The baseline
    ignores the context and always guesses the most frequent tokens of ``unigram``
    (a (|V|,) distribution counted on the training text). Seeded: the same texts and
    seed give the same masks.
    """
    from .masking import mlm_mask

    if not getattr(model, "has_mlm_head", False):
        raise NoMLMHeadError(f"{getattr(model, 'name_or_path', 'this model')} has no MLM head to evaluate")
    texts = list(texts)
    if not texts:
        raise ValueError("no texts to evaluate on")
    base_top5 = unigram.topk(5).indices.to(model.device)
    g = torch.Generator().manual_seed(seed)
    n = hit1 = hit5 = b1 = b5 = 0
    for i in range(0, len(texts), batch_size):
        enc = tokenizer(texts[i:i + batch_size])
        masked = mlm_mask(enc.input_ids, special_ids=tokenizer.special_ids, mask_token_id=tokenizer.mask_token_id,
                          unigram=unigram, select_prob=select_prob, mask_prob=1.0, random_prob=0.0, generator=g,
                          attention_mask=enc.attention_mask)
        sel = masked.labels != -100
        if not sel.any():
            continue
        dev = model.device
        out = model.bert(masked.input_ids.to(dev), enc.attention_mask.to(dev), enc.token_type_ids.to(dev),
                         output_hidden_states=False)
        logits = model.cls.predictions(out.last_hidden_state[sel.to(dev)])  # (n, |V|)
        gold = masked.labels[sel].to(dev)
        top5 = logits.topk(5, dim=-1).indices
        n += int(sel.sum())
        hit1 += int((top5[:, 0] == gold).sum())
        hit5 += int((top5 == gold[:, None]).any(-1).sum())
        b1 += int((gold == base_top5[0]).sum())
        b5 += int((base_top5[None, :] == gold[:, None]).any(-1).sum())
    if n == 0:
        raise ValueError("the texts are too short: no token was selected for masking")
    return ClozeAccuracy(n, hit1 / n, hit5 / n, b1 / n, b5 / n)
