"""Heads that sit on top of the encoder (SLP3 §11.2).

Names follow Hugging Face's ``BertForPreTraining`` / ``BertForMaskedLM``: the
encoder is ``bert.*``, the MLM head ``cls.predictions.*`` and the NSP head
``cls.seq_relationship.*``, so their checkpoints load without renaming.
"""
from __future__ import annotations

import torch
from torch import nn

from .bert import ACTIVATIONS, BertConfig, BertModel, EncoderOutput, init_weights


class BertPredictionHeadTransform(nn.Module):
    """h = LayerNorm(GELU(W z)): the MLM head's hidden layer."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.act = ACTIVATIONS[config.hidden_act]
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, z):
        return self.LayerNorm(self.act(self.dense(z)))


class BertLMPredictionHead(nn.Module):
    """MLM head (§11.2.1): y_i = softmax(E h_i + b) over the vocabulary.

    The output matrix is the input embedding matrix E (weight tying); the bias
    ``b`` is the head's own parameter (``cls.predictions.bias``).
    """

    def __init__(self, config: BertConfig):
        super().__init__()
        self.transform = BertPredictionHeadTransform(config)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))
        self.decoder.bias = self.bias  # one tensor, two checkpoint names

    def forward(self, z):  # (B, T, d) -> (B, T, |V|)
        return self.decoder(self.transform(z))


class BertPreTrainingHeads(nn.Module):
    """``cls``: the MLM head, plus the NSP classifier W_NSP on the pooled [CLS] vector."""

    def __init__(self, config: BertConfig, nsp: bool = True):
        super().__init__()
        self.predictions = BertLMPredictionHead(config)
        self.seq_relationship = nn.Linear(config.hidden_size, 2) if nsp else None


class BertForPreTraining(nn.Module):
    """Encoder + MLM head (+ NSP head): what BERT is pretrained as.

    ``forward`` returns the encoder's :class:`EncoderOutput` with ``logits``
    (B, T, |V|) filled in, and ``nsp_logits`` (B, 2) when there is an NSP head.
    """

    has_mlm_head = True

    def __init__(self, config: BertConfig, nsp: bool = True, add_pooling_layer: bool = True):
        super().__init__()
        if nsp and not add_pooling_layer:
            raise ValueError("the NSP head reads the pooled [CLS] vector: it needs add_pooling_layer=True")
        self.config = config
        self.bert = BertModel(config, add_pooling_layer=add_pooling_layer)
        self.cls = BertPreTrainingHeads(config, nsp=nsp)
        init_weights(self.cls, config.initializer_range)
        self.tie_weights()
        self.name_or_path = "randomly initialised BERT with pretraining heads"

    def tie_weights(self) -> None:
        """Share the MLM output matrix with the input word embeddings (as BERT does)."""
        self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight

    @property
    def device(self) -> torch.device:
        return self.bert.device

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, output_attentions=False, causal=False,
                output_hidden_states=True):
        out: EncoderOutput = self.bert(input_ids, attention_mask, token_type_ids, output_attentions, causal,
                                       output_hidden_states)
        out.logits = self.cls.predictions(out.last_hidden_state)
        if self.cls.seq_relationship is not None:
            out.nsp_logits = self.cls.seq_relationship(out.pooler_output)
        return out

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
