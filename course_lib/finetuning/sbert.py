"""SentenceBERT (Reimers & Gurevych 2019; L004): a siamese bi-encoder for sentence pairs.

The same encoder runs over each sentence on its own and pools its output into one vector (mean pooling):
u for sentence A, v for sentence B. For classification (NLI) the pair is represented as

    [u; v; |u − v|]  ∈ R^{3d}      and      y = softmax(W [u; v; |u − v|]),   W ∈ R^{C × 3d}

trained with cross-entropy; for similarity the model is used without W: cos(u, v). Because every sentence is
encoded once, scoring all pairs among n sentences takes n encoder passes (and an n × n matrix product),
against n(n−1)/2 passes for a cross-encoder that reads ``[CLS] A [SEP] B [SEP]`` (§11.4.2): see ``cost``.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import torch
from torch import nn

from ..model.bert import BertModel, init_weights
from ..model.classification import POOLINGS, pool
from .frozen import frozen_states, num_layers, pad_states, run_layers


def sbert_features(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """[u; v; |u − v|]: (B, d), (B, d) -> (B, 3d), the input of SentenceBERT's classifier."""
    if u.shape != v.shape:
        raise ValueError(f"u and v must have the same shape, got {tuple(u.shape)} and {tuple(v.shape)}")
    return torch.cat([u, v, (u - v).abs()], dim=-1)


@dataclass
class PairClassifierOutput:
    """logits (B, C); loss when labels are given; u, v (B, d): the two sentence vectors."""

    logits: torch.Tensor
    loss: torch.Tensor | None = None
    u: torch.Tensor | None = None
    v: torch.Tensor | None = None


class SiameseClassifier(nn.Module):
    """SentenceBERT's classification objective: one shared encoder, softmax(W [u; v; |u − v|])."""

    def __init__(self, bert: BertModel, labels, pooling: str = "mean"):
        super().__init__()
        if pooling not in ("cls", "mean"):
            raise ValueError(f"pooling must be 'cls' or 'mean' for a bi-encoder, not {pooling!r} (of {POOLINGS})")
        self.bert = bert
        self.pooling = pooling
        self.id2label = [str(x) for x in labels]
        self.classifier = nn.Linear(3 * bert.config.hidden_size, len(self.id2label))  # W
        init_weights(self.classifier, bert.config.initializer_range)

    def extra_repr(self) -> str:
        return f"pooling={self.pooling!r}, labels={self.id2label}"

    def embed(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """One vector per sentence, (B, T) -> (B, d)."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        z = self.bert(input_ids, attention_mask=attention_mask).last_hidden_state  # (B, T, d)
        return pool(z, attention_mask, self.pooling)

    def forward(self, a_input_ids, a_attention_mask, b_input_ids, b_attention_mask, labels=None) -> PairClassifierOutput:
        return self.classify(self.embed(a_input_ids, a_attention_mask), self.embed(b_input_ids, b_attention_mask), labels)

    def classify(self, u: torch.Tensor, v: torch.Tensor, labels=None) -> PairClassifierOutput:
        logits = self.classifier(sbert_features(u, v))  # (B, C)
        loss = nn.functional.cross_entropy(logits, labels.reshape(-1)) if labels is not None else None
        return PairClassifierOutput(logits, loss, u, v)


class SiameseFromLayer(nn.Module):
    """A :class:`SiameseClassifier` run from block ``start`` on cached frozen states of both sentences."""

    def __init__(self, model: SiameseClassifier, start: int):
        super().__init__()
        if not 0 <= start <= num_layers(model.bert):
            raise ValueError(f"start must be a layer between 0 and {num_layers(model.bert)}, not {start}")
        self.model, self.start = model, start

    def _embed(self, hidden, mask):
        return pool(run_layers(self.model.bert, hidden, mask, self.start), mask, self.model.pooling)

    def forward(self, a_hidden, a_attention_mask, b_hidden, b_attention_mask, labels=None):
        return self.model.classify(self._embed(a_hidden, a_attention_mask), self._embed(b_hidden, b_attention_mask),
                                   labels)


@dataclass(frozen=True)
class PairStates:
    a: torch.Tensor   # (T_a, d)
    b: torch.Tensor   # (T_b, d)
    label: int


def collate_pair_states(examples: list[PairStates]) -> dict[str, torch.Tensor]:
    a, am = pad_states([e.a for e in examples])
    b, bm = pad_states([e.b for e in examples])
    return {"a_hidden": a, "a_attention_mask": am, "b_hidden": b, "b_attention_mask": bm,
            "labels": torch.tensor([e.label for e in examples])}


def pair_state_examples(model: SiameseClassifier, examples, collate, start: int) -> list[PairStates]:
    """Frozen states of every distinct sentence once (a premise with three hypotheses is encoded once)."""
    sentences = sorted({e.premise for e in examples} | {e.hypothesis for e in examples})
    ids = _token_ids(collate, sentences)
    states = dict(zip(sentences, frozen_states(model.bert, ids, start=start)))
    labels = collate.label_ids(examples).tolist()
    return [PairStates(states[e.premise], states[e.hypothesis], y) for e, y in zip(examples, labels)]


def _token_ids(collate, sentences: list[str]) -> list[list[int]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        enc = collate.tokenizer(sentences, max_length=collate.max_length, truncation=True)
    n = enc.attention_mask.sum(1).tolist()
    return [row[:k] for row, k in zip(enc.input_ids.tolist(), n)]


def encode_sentences(bert: BertModel, tokenizer, sentences: list[str], pooling: str | tuple[str, ...] = "mean",
                     batch_size: int = 64, max_length: int = 64, normalize: bool = False, cache: bool = False):
    """Sentence vectors (N, d), in the order given; batches are formed by length, so there is little padding.
    With several poolings (``("mean", "cls")``), one pass gives them all: ``{pooling: (N, d) vectors}``.
    ``cache=True``: computed once per (encoder weights, sentences, poolings, max_length) and kept on disk as float32
    (:func:`course_lib.embeddings.cache.cached_states`), the same numbers read or computed."""
    if not sentences:
        raise ValueError("no sentences to encode")
    poolings = (pooling,) if isinstance(pooling, str) else tuple(pooling)
    if cache:
        from ..embeddings.cache import cached_states

        def compute():  # one pass of the encoder gives every pooling
            vectors = _encode(bert, tokenizer, sentences, poolings, batch_size, max_length)
            return torch.stack([vectors[p] for p in poolings])

        stacked = cached_states(bert, "sentence-vectors", [list(sentences), poolings, max_length], compute,
                                keep=torch.float32)
        out = dict(zip(poolings, stacked))
    else:
        out = _encode(bert, tokenizer, sentences, poolings, batch_size, max_length)
    if normalize:
        out = {p: nn.functional.normalize(v, dim=-1) for p, v in out.items()}
    return out[pooling] if isinstance(pooling, str) else out


@torch.no_grad()
def _encode(bert: BertModel, tokenizer, sentences: list[str], poolings: tuple[str, ...], batch_size: int,
            max_length: int) -> dict[str, torch.Tensor]:
    was_training = bert.training
    bert.eval()
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    out = {p: torch.empty(len(sentences), bert.config.hidden_size) for p in poolings}
    try:
        for s in range(0, len(order), batch_size):
            idx = order[s:s + batch_size]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                enc = tokenizer([sentences[i] for i in idx], max_length=max_length, truncation=True).to(bert.device)
            z = bert(enc.input_ids, attention_mask=enc.attention_mask).last_hidden_state
            for p in poolings:
                out[p][idx] = pool(z, enc.attention_mask, p).float().cpu()
    finally:
        bert.train(was_training)
    return out


def cosine_matrix(u: torch.Tensor, v: torch.Tensor | None = None) -> torch.Tensor:
    """All cosines between the rows of u (N, d) and of v (M, d) -> (N, M) (v defaults to u)."""
    u = nn.functional.normalize(u, dim=-1)
    v = u if v is None else nn.functional.normalize(v, dim=-1)
    return u @ v.T


def pair_cosines(bert: BertModel, tokenizer, examples, pooling: str = "mean", cache: bool = False) -> torch.Tensor:
    """cos(u, v) of every premise/hypothesis pair (N,), each distinct sentence encoded once (``cache``: as in
    :func:`encode_sentences`)."""
    sentences = sorted({e.premise for e in examples} | {e.hypothesis for e in examples})
    index = {s: i for i, s in enumerate(sentences)}
    vecs = nn.functional.normalize(encode_sentences(bert, tokenizer, sentences, pooling, cache=cache), dim=-1)
    a = vecs[[index[e.premise] for e in examples]]
    b = vecs[[index[e.hypothesis] for e in examples]]
    return (a * b).sum(-1)


def timed(fn, *args, **kwargs):
    """(result, seconds) of one call."""
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0
