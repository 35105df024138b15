"""Token classification head for sequence labelling (SLP3 §11.4.3, eq. 11.14-11.15).

Every output vector z_i of the encoder goes through one linear layer W_K ∈ R^{k×d} and a softmax over the
k tags: y_i = softmax(W_K z_i) (eq. 11.14); the greedy tag is t_i = argmax_k y_i (eq. 11.15).
Names follow Hugging Face's ``BertForTokenClassification`` (``bert.*``, ``classifier.*``), so its
checkpoints load without renaming; labels of -100 are ignored by the loss, as there.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .bert import BertConfig, BertModel, init_weights


@dataclass
class TokenClassifierOutput:
    """logits: (B, T, k) scores W_K z_i (before the softmax); loss: mean cross-entropy over labels ≠ -100."""

    logits: torch.Tensor
    loss: torch.Tensor | None = None
    last_hidden_state: torch.Tensor | None = None  # (B, T, d): the z_i the head read


class BertForTokenClassification(nn.Module):
    """Encoder + W_K: one k-way classifier applied to every token.

    Wraps an existing :class:`BertModel` (e.g. the pretrained one from ``load_pretrained``) -- the encoder is
    shared, not copied -- and adds a freshly initialised head.

    >>> enc = BertModel(BertConfig(num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64))
    >>> model = BertForTokenClassification(enc, num_labels=9)
    >>> model(torch.tensor([[101, 2000, 102]])).logits.shape
    torch.Size([1, 3, 9])
    """

    def __init__(self, encoder: BertModel, num_labels: int, dropout: float | None = None):
        super().__init__()
        if not isinstance(encoder, BertModel):
            raise TypeError(f"the encoder must be a BertModel, not {type(encoder).__name__} "
                            "(for a model with an MLM head pass its .bert)")
        if num_labels < 2:
            raise ValueError(f"a tagger needs at least 2 labels, got num_labels={num_labels}")
        self.config = encoder.config
        self.num_labels = num_labels
        self.bert = encoder
        self.dropout = nn.Dropout(self.config.hidden_dropout_prob if dropout is None else dropout)
        self.classifier = nn.Linear(self.config.hidden_size, num_labels)  # W_K (k, d) and a bias
        init_weights(self.classifier, self.config.initializer_range)

    @classmethod
    def from_config(cls, config: BertConfig, num_labels: int) -> "BertForTokenClassification":
        """A randomly initialised encoder (no pooler: this head does not use it) with the head."""
        return cls(BertModel(config, add_pooling_layer=False), num_labels)

    @property
    def device(self) -> torch.device:
        return self.bert.device

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, labels=None) -> TokenClassifierOutput:
        z = self.bert(input_ids, attention_mask, token_type_ids, output_hidden_states=False).last_hidden_state  # (B, T, d)
        return self.head(z, labels)

    def head(self, z: torch.Tensor, labels: torch.Tensor | None = None) -> TokenClassifierOutput:
        """Eq. 11.14 on the encoder's outputs z (B, T, d): logits W_K z_i (B, T, k), and the loss if labels are given."""
        logits = self.classifier(self.dropout(z))  # (B, T, k)
        loss = None
        if labels is not None:
            if labels.shape != logits.shape[:2]:
                raise ValueError(f"labels have shape {tuple(labels.shape)}, the tokens {tuple(logits.shape[:2])}")
            loss = nn.functional.cross_entropy(logits.reshape(-1, self.num_labels), labels.reshape(-1),
                                               ignore_index=-100)
        return TokenClassifierOutput(logits=logits, loss=loss, last_hidden_state=z)
