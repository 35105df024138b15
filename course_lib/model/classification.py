"""Sequence classification on top of the encoder, SLP3 §11.4.1-11.4.2 (eq. 11.13, Fig. 11.10).

    y = softmax(W_C z_CLS)                                  (11.13)

``z_CLS`` is the last layer's output at the [CLS] position; W_C ∈ R^{C×d_h} (here with a bias) maps it to C
class scores. Sentence pairs (§11.4.2, NLI) use the same head: the input is ``[CLS] A [SEP] B [SEP]`` with
segment ids 0 for A and 1 for B, and [CLS] summarises the pair.

Two other ways to turn the T output vectors into one (``pool``):

* ``"mean"`` -- the mean of the non-padding tokens' vectors (what SentenceBERT and the embedded
  all-MiniLM-L6-v2 were trained with);
* ``"pooler"`` -- BERT's pooler tanh(W z_CLS + b), trained by NSP; this is what Hugging Face's
  ``BertForSequenceClassification`` feeds its classifier, so with it the two models agree number for number.

Names follow Hugging Face (``bert.*``, ``dropout``, ``classifier.*``).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from .bert import BertModel, EncoderOutput, init_weights

POOLINGS = ("cls", "mean", "pooler")


def pool(last_hidden_state: torch.Tensor, attention_mask: torch.Tensor | None = None, how: str = "cls",
         pooler_output: torch.Tensor | None = None) -> torch.Tensor:
    """One vector per sequence from the last layer (B, T, d) -> (B, d).

    how="cls": z_CLS, the vector at position 0; "mean": the mean over the tokens whose attention_mask is 1
    ([CLS] and [SEP] included, as sentence-transformers does); "pooler": ``pooler_output`` (tanh(W z_CLS + b)).
    """
    if how == "cls":
        return last_hidden_state[:, 0]  # (B, d)
    if how == "mean":
        if attention_mask is None:
            return last_hidden_state.mean(dim=1)
        m = attention_mask.to(last_hidden_state.dtype).unsqueeze(-1)  # (B, T, 1)
        return (last_hidden_state * m).sum(dim=1) / m.sum(dim=1).clamp(min=1e-9)  # (B, d)
    if how == "pooler":
        if pooler_output is None:
            raise ValueError("pooling='pooler' needs the encoder's pooler, and this encoder has none "
                             "(use pooling='cls' or 'mean')")
        return pooler_output
    raise ValueError(f"unknown pooling {how!r}: use one of {', '.join(POOLINGS)}")


@dataclass
class SequenceClassifierOutput:
    """What :class:`BertForSequenceClassification` returns (names as in transformers).

    logits: (B, C) class scores W_C z + b (softmax them for eq. 11.13's y)
    loss:   cross-entropy against ``labels`` (mean over the batch), when labels are given
    pooled: (B, d) the vector the head read (z_CLS, the mean, or the pooler's output)
    last_hidden_state, hidden_states, attentions: from the encoder, when asked for
    """

    logits: torch.Tensor
    loss: torch.Tensor | None = None
    pooled: torch.Tensor | None = None
    last_hidden_state: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


class BertForSequenceClassification(nn.Module):
    """Encoder + classifier head over one pooled vector: eq. 11.13 with ``pooling="cls"``.

    >>> from course_lib.model.bert import BertConfig
    >>> enc = BertModel(BertConfig(num_hidden_layers=1, hidden_size=32, num_attention_heads=4, intermediate_size=64))
    >>> clf = BertForSequenceClassification(enc, labels=["negative", "positive"])
    >>> clf(torch.tensor([[101, 2204, 102]])).logits.shape
    torch.Size([1, 2])
    """

    def __init__(self, bert: BertModel, num_labels: int | None = None, *, labels: Sequence[str] | None = None,
                 pooling: str = "cls", dropout: float | None = None):
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"unknown pooling {pooling!r}: use one of {', '.join(POOLINGS)}")
        if pooling == "pooler" and bert.pooler is None:
            raise ValueError("pooling='pooler' needs an encoder with a pooler (BertModel(add_pooling_layer=True))")
        if labels is not None:
            labels = [str(x) for x in labels]
            if num_labels is not None and num_labels != len(labels):
                raise ValueError(f"num_labels={num_labels} but {len(labels)} label names were given")
            num_labels = len(labels)
        if num_labels is None or num_labels < 2:
            raise ValueError("a classifier needs at least 2 classes: pass num_labels or the label names")
        self.bert = bert
        self.config = bert.config
        self.pooling = pooling
        self.num_labels = num_labels
        self.id2label = labels or [f"LABEL_{i}" for i in range(num_labels)]
        self.dropout = nn.Dropout(bert.config.hidden_dropout_prob if dropout is None else dropout)
        self.classifier = nn.Linear(bert.config.hidden_size, num_labels)  # W_C (C, d) and its bias
        init_weights(self.classifier, bert.config.initializer_range)

    def extra_repr(self) -> str:
        return f"pooling={self.pooling!r}, labels={self.id2label}"

    @property
    def device(self) -> torch.device:
        return self.bert.device

    def label_id(self, label: str | int) -> int:
        """The index of a label name (or a checked index)."""
        if isinstance(label, int) and not isinstance(label, bool):
            if not 0 <= label < self.num_labels:
                raise ValueError(f"label {label} is out of range: this classifier has {self.num_labels} classes")
            return label
        if label not in self.id2label:
            raise ValueError(f"unknown label {label!r}: this classifier knows {', '.join(map(repr, self.id2label))}")
        return self.id2label.index(label)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None, labels: torch.Tensor | None = None,
                output_hidden_states: bool = False, output_attentions: bool = False) -> SequenceClassifierOutput:
        """input_ids, attention_mask, token_type_ids: (B, T); labels: (B,) class indices."""
        enc: EncoderOutput = self.bert(input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                                       output_hidden_states=output_hidden_states, output_attentions=output_attentions)
        out = self.head(enc.last_hidden_state, labels=labels, attention_mask=attention_mask)
        out.hidden_states, out.attentions = enc.hidden_states, enc.attentions
        return out

    def head(self, z: torch.Tensor, labels: torch.Tensor | None = None,
             attention_mask: torch.Tensor | None = None) -> SequenceClassifierOutput:
        """From the last layer's vectors z (B, T, d): pool, then eq. 11.13's W_C (softmax left to the loss)."""
        if attention_mask is None:
            attention_mask = torch.ones(z.shape[:2], dtype=torch.long, device=z.device)
        pooler_output = self.bert.pooler(z) if self.pooling == "pooler" else None
        pooled = pool(z, attention_mask, self.pooling, pooler_output)  # (B, d)
        logits = self.classifier(self.dropout(pooled))  # (B, C)
        loss = nn.functional.cross_entropy(logits, labels.reshape(-1)) if labels is not None else None
        return SequenceClassifierOutput(logits=logits, loss=loss, pooled=pooled, last_hidden_state=z)

    def num_parameters(self, trainable_only: bool = False) -> int:
        return sum(p.numel() for p in self.parameters() if p.requires_grad or not trainable_only)
