"""Extractive question answering head (the BERT lectures; Devlin et al. 2019 §4.2).

Input: ``[CLS] question [SEP] passage [SEP]``. Fine-tuning learns two vectors S, E ∈ R^d; the score of
token i as the answer's start is S · T_i, of its end E · T_i, and

    P(start = i) = exp(S · T_i) / Σ_j exp(S · T_j),   P(end = j) likewise with E.

The answer is the span i ≤ j ≤ i + L with the largest S · T_i + E · T_j; pointing both at [CLS]
(position 0) means "no answer" (SQuAD 2.0). S and E are the two rows of one linear layer, named
``qa_outputs`` as in Hugging Face's ``BertForQuestionAnswering`` (which also gives each a bias).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .bert import BertConfig, BertModel, init_weights


@dataclass
class QuestionAnsweringOutput:
    """start_logits, end_logits: (B, T) scores S·T_i + b_S and E·T_j + b_E (as in transformers, no ``logits``
    field); loss: mean of the start and end cross-entropies (when positions are given)."""

    start_logits: torch.Tensor
    end_logits: torch.Tensor
    loss: torch.Tensor | None = None
    last_hidden_state: torch.Tensor | None = None


class BertForQuestionAnswering(nn.Module):
    """Encoder + the start and end vectors S, E. Wraps an existing :class:`BertModel` (shared, not copied).

    >>> enc = BertModel(BertConfig(num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64))
    >>> out = BertForQuestionAnswering(enc)(torch.tensor([[101, 2000, 102, 3000, 102]]))
    >>> out.start_logits.shape, out.end_logits.shape
    (torch.Size([1, 5]), torch.Size([1, 5]))
    """

    def __init__(self, encoder: BertModel):
        super().__init__()
        if not isinstance(encoder, BertModel):
            raise TypeError(f"the encoder must be a BertModel, not {type(encoder).__name__} "
                            "(for a model with an MLM head pass its .bert)")
        self.config = encoder.config
        self.bert = encoder
        self.qa_outputs = nn.Linear(self.config.hidden_size, 2)  # rows: S and E
        init_weights(self.qa_outputs, self.config.initializer_range)

    @classmethod
    def from_config(cls, config: BertConfig) -> "BertForQuestionAnswering":
        return cls(BertModel(config, add_pooling_layer=False))

    @property
    def S(self) -> torch.Tensor:
        """The start vector, (d,)."""
        return self.qa_outputs.weight[0]

    @property
    def E(self) -> torch.Tensor:
        """The end vector, (d,)."""
        return self.qa_outputs.weight[1]

    @property
    def device(self) -> torch.device:
        return self.bert.device

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, start_positions=None,
                end_positions=None) -> QuestionAnsweringOutput:
        T_ = self.bert(input_ids, attention_mask, token_type_ids, output_hidden_states=False).last_hidden_state  # (B, T, d)
        return self.head(T_, start_positions, end_positions)

    def head(self, T_: torch.Tensor, start_positions=None, end_positions=None) -> QuestionAnsweringOutput:
        """Start and end scores S·T_i, E·T_j on the encoder's outputs T_ (B, T, d), and the loss if positions are given."""
        logits = self.qa_outputs(T_)  # (B, T, 2)
        start_logits, end_logits = logits[..., 0], logits[..., 1]  # (B, T) each
        loss = None
        if (start_positions is None) != (end_positions is None):
            raise ValueError("give both start_positions and end_positions, or neither")
        if start_positions is not None:
            T = start_logits.size(1)
            bad = [p for p in (start_positions, end_positions) if ((p < 0) | (p >= T)).any()]
            if bad:
                raise ValueError(f"answer positions must lie in 0..{T - 1} (0 = [CLS], no answer), got {bad[0].tolist()}")
            ce = nn.functional.cross_entropy
            loss = (ce(start_logits, start_positions) + ce(end_logits, end_positions)) / 2
        return QuestionAnsweringOutput(start_logits, end_logits, loss, T_)
