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


def _forward_by_length(model, enc, batch_size: int):
    """Yield (rows, hidden_states) for batches of ``batch_size`` texts of ``enc`` of about equal length (sorted
    by their number of tokens), each batch cut to its longest text: little padding is computed."""
    lengths = enc.attention_mask.sum(1).tolist()
    enc_model = _encoder(model)
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    for b in range(0, len(order), batch_size):
        rows = order[b:b + batch_size]
        T = lengths[rows[-1]]  # ascending lengths: the last text of a batch is its longest
        idx = torch.tensor(rows)
        batch = {k: getattr(enc, k)[idx, :T].to(enc_model.device)
                 for k in ("input_ids", "attention_mask", "token_type_ids")}
        yield rows, enc_model(**batch, output_hidden_states=True).hidden_states


@torch.no_grad()
def sentence_states(model, tokenizer, texts: Sequence[str], *, batch_size: int = 32):
    """Every token's vector at every layer for each text, one forward per text: a list of ((T_i, L+1, d), offsets_i).

    Texts are encoded in batches of ``batch_size`` texts of about equal length (sorted by their number of
    tokens), so that little padding is computed; the results come back in the order of ``texts``, without the
    padding.
    """
    texts = list(texts)
    if not texts:
        return []
    enc = tokenizer(texts)  # over-long text: the tokenizer's ValueError
    lengths = enc.attention_mask.sum(1).tolist()
    out: list = [None] * len(texts)
    for rows, hs in _forward_by_length(model, enc, batch_size):
        H = torch.stack(hs, dim=2).float().cpu()  # (B, T, L+1, d)
        for j, i in enumerate(rows):
            out[i] = (H[j, :lengths[i]], enc.offsets[i][:lengths[i]])
    return out


def span_tokens(offsets, start: int, end: int) -> list[int]:
    """The tokens whose characters overlap ``[start, end)`` (special tokens, with empty spans, never do)."""
    return [t for t, (s, e) in enumerate(offsets) if e > s and s < end and e > start]


def pool(vectors: torch.Tensor, pooling: str = "mean") -> torch.Tensor:
    """(k, L+1, d) subword vectors -> (L+1, d): their mean, sum, or the first one."""
    _check_pooling(pooling)
    return vectors[0] if pooling == "first" else vectors.sum(0) if pooling == "sum" else vectors.mean(0)


@torch.no_grad()
def target_states(model, tokenizer, examples: Sequence[SenseExample] | None = None, *, texts=None, spans=None,
                  pooling: str = "mean", batch_size: int = 32) -> torch.Tensor:
    """The vector of each target word at every layer: (N, L+1, d), float32 on the CPU.

    Give ``examples`` (:class:`SenseExample` s), or ``texts`` and character ``spans``.
    The subword tokens that overlap the span are pooled into one word vector:
    ``mean`` (default), ``first`` (the first subword, as many taggers do) or ``sum``.

    Each distinct sentence is encoded once, however many of its words are targets, in batches of
    ``batch_size`` sentences of about equal length; from each batch's hidden states only the targets' tokens
    are gathered (every (target, token) pair at once) and pooled.
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
    distinct = list(dict.fromkeys(texts))
    row = {t: i for i, t in enumerate(distinct)}
    enc = tokenizer(distinct)  # over-long text: the tokenizer's ValueError
    by_row: list[list[tuple[int, list[int]]]] = [[] for _ in distinct]  # per sentence: (target, its tokens)
    for n, (text, (start, end)) in enumerate(zip(texts, spans)):
        idx = span_tokens(enc.offsets[row[text]], start, end)
        if not idx:  # checked for all targets before any forward
            raise ValueError(f"no token covers characters {start}-{end} of {text!r}: is the span inside the sentence?")
        by_row[row[text]].append((n, idx[:1] if pooling == "first" else idx))
    out = None
    for rows, hs in _forward_by_length(model, enc, batch_size):
        T = hs[0].size(1)
        target, pick = [], []
        for j, r in enumerate(rows):
            for n, idx in by_row[r]:
                target += [n] * len(idx)
                pick += [j * T + t for t in idx]
        target_t, pick_t = torch.tensor(target), torch.tensor(pick)
        if out is None:
            out = torch.zeros(len(texts), len(hs), hs[0].size(-1))
        for layer, h in enumerate(hs):  # (B, T, d) -> the targets' tokens, summed per target
            out[:, layer].index_add_(0, target_t, h.reshape(-1, h.size(-1))[pick_t].float().cpu())
    if pooling == "mean":
        counts = torch.zeros(len(texts))
        for targets in by_row:
            for n, idx in targets:
                counts[n] = len(idx)
        out /= counts[:, None, None]
    return out


def find_word(sentence: str, word: str, occurrence: int = 0) -> tuple[int, int]:
    """The character span of ``word``'s ``occurrence``-th appearance in ``sentence`` (case-insensitive, whole word)."""
    if not sentence.strip():
        raise ValueError("the sentence is empty: type a sentence that contains the target word")
    if not word.strip():
        raise ValueError("no target word given: say which word of the sentence to look at")
    found = [m.span() for m in re.finditer(rf"(?<!\w){re.escape(word.strip())}(?!\w)", sentence, re.IGNORECASE)]
    if not found:
        raise ValueError(f"the target word {word.strip()!r} does not occur in the sentence {sentence!r}")
    if occurrence >= len(found):
        raise ValueError(f"{word!r} occurs {len(found)} time(s) in the sentence; occurrence {occurrence} does not exist")
    return found[occurrence]


def word_states(model, tokenizer, sentence: str, word: str, *, occurrence: int = 0, pooling: str = "mean"):
    """(L+1, d) vectors of ``word`` in ``sentence`` (its ``occurrence``-th appearance; case-insensitive)."""
    span = find_word(sentence, word, occurrence)
    return target_states(model, tokenizer, texts=[sentence], spans=[span], pooling=pooling)[0]


@torch.no_grad()
def corpus_states(model, tokenizer, texts: Sequence[str], *, max_tokens: int = 20000, batch_size: int = 32,
                  max_length: int = 128) -> torch.Tensor:
    """Vectors of the corpus's tokens at every layer, (N, L+1, d), skipping [CLS]/[SEP]/padding; at most max_tokens.

    The texts are tokenized in batches of ``batch_size``, in order (a batch holding a text of over 4 x
    ``max_length`` characters is cut at ``max_length`` tokens); of each batch only the texts that the first
    ``max_tokens`` tokens reach go through the model, those of about equal length together (little padding)."""
    enc_model = _encoder(model)
    out, n = [], 0
    texts = [t for t in texts if t.strip()]
    special = torch.tensor(sorted(tokenizer.special_ids))
    for b in range(0, len(texts), batch_size):
        enc = tokenizer(texts[b:b + batch_size], truncation=True, max_length=max_length) if any(
            len(t) > 4 * max_length for t in texts[b:b + batch_size]) else tokenizer(texts[b:b + batch_size])
        keep = enc.attention_mask.bool() & ~torch.isin(enc.input_ids, special)  # (B, T)
        counts = keep.sum(1).tolist()
        rows, total = [], n
        for i, c in enumerate(counts):  # the texts this batch still needs
            if total >= max_tokens:
                break
            rows.append(i)
            total += c
        lengths = enc.attention_mask.sum(1).tolist()
        by_length = sorted(rows, key=lambda i: lengths[i])
        vectors: dict[int, torch.Tensor] = {}
        step = max(1, batch_size // 2)  # two forwards a batch: each padded to its own longest text
        for s in range(0, len(by_length), step):
            idx = by_length[s:s + step]
            T = max(lengths[i] for i in idx)
            inputs = {k: enc[k][idx, :T].to(enc_model.device) for k in enc.keys()}
            hs = enc_model(**inputs, output_hidden_states=True).hidden_states
            H = torch.stack(hs, dim=2).float().cpu()  # (b, T, L+1, d)
            for r, i in enumerate(idx):
                vectors[i] = H[r, :T][keep[i, :T]]
        out += [vectors[i] for i in rows]
        n = total
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


class PoolingCache:
    """Word states of the sense data per pooling, for the examples a view asks for (rows), computed on first use.

    The mean states are passed in (the notebook's) or encoded on first use. The other poolings come from them
    without encoding the sentences again: a target of k subword tokens has sum = k × mean, and, when k = 1,
    first = mean; only the few targets split into several tokens are encoded for "first". k comes from the
    tokenizer alone (no forward pass). Every result is kept, so each pooling of each set of rows is made once.
    """

    def __init__(self, model, tokenizer, examples, states=None):
        self.model, self.tokenizer, self.examples = model, tokenizer, list(examples)
        self.full = dict(states or {})  # pooling -> (N, L+1, d) states of every example
        self.parts: dict[tuple, torch.Tensor] = {}  # (pooling, rows) -> the states of those rows
        self.n_tokens: dict[int, int] = {}  # example -> the number of subword tokens of its target
        self.encoded = 0  # targets this cache has run through the model

    def __call__(self, pooling: str, rows=None) -> torch.Tensor:
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, not {pooling!r}")
        rows = list(range(len(self.examples))) if rows is None else list(rows)
        if pooling in self.full:
            return self.full[pooling][rows]
        key = (pooling, tuple(rows))
        if key not in self.parts:
            self.parts[key] = self._derive(pooling, rows)
        return self.parts[key]

    def ready(self, pooling: str, rows) -> bool:
        """Whether the states of ``rows`` under ``pooling`` are at hand (no computing)."""
        return pooling in self.full or (pooling, tuple(rows)) in self.parts

    def _encode(self, rows: list[int], pooling: str) -> torch.Tensor:
        self.encoded += len(rows)
        return target_states(self.model, self.tokenizer, [self.examples[i] for i in rows], pooling=pooling)

    def subword_counts(self, rows: list[int]) -> torch.Tensor:
        """The number of subword tokens of each row's target word, from tokenizing its sentence."""
        todo = [i for i in rows if i not in self.n_tokens]
        if todo:
            texts = list(dict.fromkeys(self.examples[i].text for i in todo))
            enc = self.tokenizer(texts)
            at = {t: r for r, t in enumerate(texts)}
            for i in todo:
                e = self.examples[i]
                self.n_tokens[i] = len(span_tokens(enc.offsets[at[e.text]], e.start, e.end))
        return torch.tensor([self.n_tokens[i] for i in rows])

    def _derive(self, pooling: str, rows: list[int]) -> torch.Tensor:
        if "mean" not in self.full:  # nothing to derive from: encode these rows
            return self._encode(rows, pooling)
        mean = self.full["mean"][rows]
        k = self.subword_counts(rows)
        if pooling == "sum":
            return mean * k.to(mean.dtype)[:, None, None]
        out = mean.clone()  # "first": the mean of one token is that token
        multi = (k > 1).nonzero().flatten().tolist()
        if multi:
            out[multi] = self._encode([rows[m] for m in multi], "first")
        return out
