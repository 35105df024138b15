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

    >>> fill_mask(model, tok, "She opened the [MASK] and walked in.")   # doctest: +SKIP
    [MaskPrediction(position=4, tokens=['door', 'window', 'room', ...], probs=[0.47, ...])]   # course-bert
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
        spelt = next((w for w in ("[mask]", "<mask>", "[ mask ]") if w in text.lower()), None)
        raise ValueError(f"there is no [MASK] in {text!r}: write [MASK] where the model should fill in a word"
                         + (f" (in capitals, with square brackets: {spelt!r} is read as ordinary text)" if spelt else ""))
    if not 1 <= top_k <= tokenizer.vocab_size:
        raise ValueError(f"top_k must be between 1 and {tokenizer.vocab_size}, not {top_k}")
    logits = model(**enc).logits[0]  # (T, |V|)
    out = []
    for pos in positions:
        p = logits[pos].softmax(-1)
        top = p.topk(top_k)
        out.append(MaskPrediction(pos, tokenizer.convert_ids_to_tokens(top.indices), top.values.tolist()))
    return out


def input_notes(tokenizer, text: str) -> list[str]:
    """What the model will not read as the words typed: pieces of ``text`` outside the vocabulary (they become
    [UNK]) and special tokens other than [MASK] typed as text ([PAD], [CLS], ...: read as those tokens)."""
    enc = tokenizer.backend.encode(text, add_special_tokens=False)
    unknown, typed = [], []
    for token, (start, end) in zip(enc.tokens, enc.offsets):
        piece = text[start:end]
        if token == "[UNK]" and piece != "[UNK]":
            unknown.append(piece)
        elif token in ("[PAD]", "[CLS]", "[SEP]", "[UNK]") and token not in typed:
            typed.append(token)
    notes = []
    if unknown:
        shown = ", ".join(repr(u) for u in dict.fromkeys(unknown))
        notes.append(f"{shown} {'is' if len(set(unknown)) == 1 else 'are'} not in the tokenizer's vocabulary: the model "
                     "sees [UNK] there, not what you typed")
    if typed:
        notes.append(f"{', '.join(typed)} typed in the text {'is a special token' if len(typed) == 1 else 'are special tokens'}"
                     " of the tokenizer: the model reads "
                     f"{'it' if len(typed) == 1 else 'each'} as that token, not as a word")
    return notes


@dataclass
class ClozeAccuracy:
    """Masked-token accuracy of a model beside the unigram-frequency baseline, on the same masks."""

    n_masked: int
    top1: float
    top5: float
    baseline_top1: float
    baseline_top5: float
    n_frequent: int = 0            # masked tokens that are among the ``frequent`` most frequent of ``unigram``
    top1_frequent: float = float("nan")
    top1_other: float = float("nan")
    distinct_top1: int = 0         # how many different tokens the model guesses first
    frequent: int = 50

    def __str__(self) -> str:
        return (f"{self.n_masked:,} masked tokens: top-1 {self.top1:.1%} (unigram baseline {self.baseline_top1:.1%}), "
                f"top-5 {self.top5:.1%} (baseline {self.baseline_top5:.1%})\n"
                f"  the {self.frequent} most frequent tokens ({self.n_frequent:,} of the masked): top-1 "
                f"{self.top1_frequent:.1%}; all other tokens ({self.n_masked - self.n_frequent:,}): top-1 "
                f"{self.top1_other:.1%}; {self.distinct_top1:,} different first guesses")


@torch.no_grad()
def masked_token_accuracy(model, tokenizer, texts, unigram: torch.Tensor, *, select_prob: float = 0.15,
                          seed: int = 0, batch_size: int = 64, frequent: int = 50) -> ClozeAccuracy:
    """How often the original token is the model's top-1 / in its top-5 when 15% of the tokens are [MASK]ed.

    Every selected token becomes [MASK] (no 80/10/10 at evaluation). The baseline
    ignores the context and always guesses the most frequent tokens of ``unigram``
    (a (|V|,) distribution counted on the training text). Seeded: the same texts and
    seed give the same masks. Top-1 is also split into the ``frequent`` most frequent tokens of ``unigram``
    and all the others (a model that has learnt only frequencies scores on the first and not the second).
    """
    from .masking import mlm_mask

    if not getattr(model, "has_mlm_head", False):
        raise NoMLMHeadError(f"{getattr(model, 'name_or_path', 'this model')} has no MLM head to evaluate")
    texts = list(texts)
    if not texts:
        raise ValueError("no texts to evaluate on")
    base_top5 = unigram.topk(5).indices.to(model.device)
    is_frequent = torch.zeros(unigram.numel(), dtype=torch.bool, device=model.device)
    is_frequent[unigram.topk(frequent).indices.to(model.device)] = True
    g = torch.Generator().manual_seed(seed)
    n = hit1 = hit5 = b1 = b5 = nf = hf = 0
    guesses = set()
    for i in range(0, len(texts), batch_size):
        enc = tokenizer(texts[i:i + batch_size])
        masked = mlm_mask(enc.input_ids, special_ids=tokenizer.special_ids, mask_token_id=tokenizer.mask_token_id,
                          unigram=unigram, select_prob=select_prob, mask_prob=1.0, random_prob=0.0, generator=g,
                          attention_mask=enc.attention_mask)
        sel = masked.labels != -100
        if not sel.any():
            continue
        dev = model.device
        hidden = model.bert.last_hidden_by_length(masked.input_ids.to(dev), enc.attention_mask.to(dev),
                                                  enc.token_type_ids.to(dev))  # (B, T, d), little padding computed
        logits = model.cls.predictions(hidden[sel.to(dev)])  # (n, |V|)
        gold = masked.labels[sel].to(dev)
        top5 = logits.topk(5, dim=-1).indices
        n += int(sel.sum())
        hit1 += int((top5[:, 0] == gold).sum())
        hit5 += int((top5 == gold[:, None]).any(-1).sum())
        b1 += int((gold == base_top5[0]).sum())
        b5 += int((base_top5[None, :] == gold[:, None]).any(-1).sum())
        freq = is_frequent[gold]
        nf += int(freq.sum())
        hf += int((top5[:, 0] == gold)[freq].sum())
        guesses.update(top5[:, 0].tolist())
    if n == 0:
        raise ValueError("the texts are too short: no token was selected for masking")
    return ClozeAccuracy(n, hit1 / n, hit5 / n, b1 / n, b5 / n, nf, hf / nf if nf else float("nan"),
                         (hit1 - hf) / (n - nf) if n > nf else float("nan"), len(guesses), frequent)


FATES = ("[MASK]", "random token", "unchanged", "not selected")


@dataclass
class FateStats:
    """What the MLM head predicts at the positions that met one fate of the 80/10/10 corruption.

    n:               number of positions
    top1_original:   share where the top-1 prediction is the original token
    p_original:      mean probability of the original token
    top1_shown:      share where the top-1 prediction is the token the model was shown (for [MASK]: 0)
    """

    fate: str
    n: int
    top1_original: float
    p_original: float
    top1_shown: float

    def __str__(self) -> str:
        return (f"{self.fate:13s} {self.n:6,d} positions: top-1 = original {self.top1_original:6.1%}, "
                f"mean P(original) {self.p_original:.3f}, top-1 = the token shown {self.top1_shown:6.1%}")


HEAD_ROWS = 512  # positions whose |V| scores are held at once (512 x 30,522 floats: 62 MB)


def head_top1_and_p(model, hidden: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The MLM head's top-1 token and its probability of ``targets`` at each of the (n, d) states ``hidden``:
    two (n,) tensors, the |V| scores computed HEAD_ROWS positions at a time."""
    top1, p_target = [], []
    for j in range(0, len(hidden), HEAD_ROWS):
        logits = model.cls.predictions(hidden[j:j + HEAD_ROWS])
        t = targets[j:j + HEAD_ROWS]
        top1.append(logits.argmax(-1))
        p_target.append((logits.gather(1, t[:, None])[:, 0] - logits.logsumexp(-1)).exp())  # softmax at the target
    return torch.cat(top1), torch.cat(p_target)


@torch.no_grad()
def predictions_by_fate(model, tokenizer, texts, unigram: torch.Tensor, *, seed: int = 0,
                        batch_size: int = 64, unselected_every: int = 1) -> dict[str, FateStats]:
    """Corrupt ``texts`` as in training (15%; 80/10/10) and ask the MLM head about every position.

    Why 80/10/10 (§11.2.1)? If every selected token became [MASK], the head would only ever be trained
    where it sees [MASK], and could ignore what a real token tells it; but after pretraining there is no
    [MASK] in the input. The 10% random tokens teach it not to trust a token blindly, the 10% unchanged
    ones that an observed token is usually right. The result shows both at once: at "unchanged" (and at
    "not selected") positions the head predicts the token it sees; at "random token" positions it often
    recovers the original instead of copying what it was shown. A random replacement that happened to
    draw the original token counts as "unchanged".

    ``unselected_every=k`` asks the head at every k-th "not selected" position only (in reading order): they are
    85% of the text, and the head's |V| scores at each are most of the time this takes; the corruption, and the
    other fates, are the same for every k.

    Returns {fate: FateStats} for "[MASK]", "random token", "unchanged" and "not selected".
    """
    from .masking import mlm_mask

    if not getattr(model, "has_mlm_head", False):
        raise NoMLMHeadError(f"{getattr(model, 'name_or_path', 'this model')} has no MLM head to ask")
    texts = list(texts)
    if not texts:
        raise ValueError("no texts to corrupt")
    if not isinstance(unselected_every, int) or unselected_every < 1:
        raise ValueError(f"unselected_every must be a whole number >= 1, got {unselected_every!r}")
    g = torch.Generator().manual_seed(seed)
    sums = {f: torch.zeros(4, dtype=torch.float64) for f in FATES}  # n, top1 == original, P(original), top1 == shown
    dev = model.device
    for i in range(0, len(texts), batch_size):
        enc = tokenizer(texts[i:i + batch_size])
        b = mlm_mask(enc.input_ids, special_ids=tokenizer.special_ids, mask_token_id=tokenizer.mask_token_id,
                     unigram=unigram, generator=g, attention_mask=enc.attention_mask)
        hidden = model.bert.last_hidden_by_length(b.input_ids.to(dev), enc.attention_mask.to(dev),
                                                  enc.token_type_ids.to(dev))  # (B, T, d)
        original, shown = enc.input_ids.to(dev), b.input_ids.to(dev)
        swapped = b.randomized.to(dev) & (shown != original)
        groups = {"[MASK]": b.masked.to(dev), "random token": swapped,
                  "unchanged": (b.kept.to(dev) | (b.randomized.to(dev) & ~swapped)),
                  "not selected": (b.eligible & ~b.selected).to(dev)}
        for fate, where in groups.items():
            if not where.any():
                continue
            orig, seen, states = original[where], shown[where], hidden[where]
            if fate == "not selected" and unselected_every > 1:
                orig, seen, states = orig[::unselected_every], seen[::unselected_every], states[::unselected_every]
            top1, p_orig = head_top1_and_p(model, states, orig)  # 3,000 rows at once would be 0.4 GB
            sums[fate] += torch.tensor([len(orig), (top1 == orig).sum().item(), p_orig.double().sum().item(),
                                        (top1 == seen).sum().item()], dtype=torch.float64)
    stats = {}
    for fate, (n, t1, po, ts) in ((f, s.tolist()) for f, s in sums.items()):
        n = int(n)
        stats[fate] = FateStats(fate, n, t1 / n if n else float("nan"), po / n if n else float("nan"),
                                ts / n if n else float("nan"))
    return stats


@dataclass
class ClozeRow:
    """One [MASK] of a cloze sentence: the model's top-k, and where it ranks the word the text had there."""

    text: str
    mask: int                  # which [MASK] of the text (0-based)
    word: str | None           # the word the original text has there (None: not known)
    tokens: list[str]
    probs: list[float]
    word_rank: int | None      # 1 = the model's first guess; None when the word is not one token of the vocabulary
    word_prob: float | None

    def summary(self) -> str:
        """The top-k with probabilities, and the rank and probability of the word (without the text)."""
        top = ", ".join(f"{t} {p:.3f}" for t, p in zip(self.tokens, self.probs))
        if self.word is None:
            about = ""
        elif self.word_rank is None:
            about = f"  | {self.word!r} is not a single token of the vocabulary"
        else:
            about = f"  | {self.word!r}: rank {self.word_rank:,}, p = {self.word_prob:.4f}"
        return top + about

    def __str__(self) -> str:
        return f"{self.text}  [MASK] #{self.mask + 1}: {self.summary()}"


@torch.no_grad()
def cloze_table(model, tokenizer, items, top_k: int = 5) -> list[ClozeRow]:
    """Fill-mask on cloze sentences whose answers are known: ``items`` is a list of (text, words), one word
    (or None) per [MASK] of the text. Each row has the top-k and the rank and probability of the word."""
    rows = []
    for text, words in items:
        words = list(words)
        enc = tokenizer(text, device=model.device)
        positions = (enc.input_ids[0] == tokenizer.mask_token_id).nonzero().flatten().tolist()
        if len(words) != len(positions):
            raise ValueError(f"{text!r} has {len(positions)} [MASK]s but {len(words)} words were given for them")
        logits = model(**enc).logits[0]  # (T, |V|)
        for i, (pos, word) in enumerate(zip(positions, words)):
            p = logits[pos].softmax(-1)
            top = p.topk(top_k)
            rank = prob = None
            wid = tokenizer.token_to_id(word.lower()) if word is not None else None
            if wid is not None:
                prob = float(p[wid])
                rank = int((p > p[wid]).sum()) + 1
            rows.append(ClozeRow(text, i, word, tokenizer.convert_ids_to_tokens(top.indices), top.values.tolist(),
                                 rank, prob))
    return rows
