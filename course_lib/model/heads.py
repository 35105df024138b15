"""Heads that sit on top of the encoder (SLP3 §11.2).

Names follow Hugging Face's ``BertForPreTraining`` / ``BertForMaskedLM``: the
encoder is ``bert.*``, the MLM head ``cls.predictions.*`` and the NSP head
``cls.seq_relationship.*``, so their checkpoints load without renaming.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .bert import ACTIVATIONS, BertConfig, BertModel, EncoderOutput, LayerScores, init_weights

IGNORE_INDEX = -100  # the label of positions that are not predicted (as in transformers)


@dataclass
class PreTrainingOutput:
    """What :class:`BertForPreTraining` returns (field names as in transformers' ``BertForPreTrainingOutput``
    and ``MaskedLMOutput``).

    loss:                    MLM cross-entropy over the labelled positions (+ NSP's), when labels are given
    logits:                  (B, T, |V|) the MLM head's scores
    seq_relationship_logits: (B, 2) the NSP head's scores (None without an NSP head)
    last_hidden_state:       (B, T, d) the encoder's last layer
    hidden_states, attentions, scores: as in the encoder's output, when requested
    """

    logits: torch.Tensor
    seq_relationship_logits: torch.Tensor | None = None
    loss: torch.Tensor | None = None
    last_hidden_state: torch.Tensor | None = None
    pooler_output: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None
    scores: LayerScores | None = None

    attention = EncoderOutput.attention


class BertPredictionHeadTransform(nn.Module):
    """h = LayerNorm(GELU(W z + b)): the MLM head's hidden layer, (B, T, d) -> (B, T, d).

    Why a layer here at all, when the chapter writes y = softmax(W_V z)? The last encoder layer must serve
    every position, selected or not, and (after pretraining) every task; this small transform lets the
    MLM head reshape z into the space of the output embeddings without bending the encoder's states
    towards the vocabulary. The output matrix is the word-embedding table itself (weight tying), so
    ``h`` is compared with the same vectors the input looks words up in.
    """

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.act = ACTIVATIONS[config.hidden_act]
        self.act_name = config.hidden_act
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def extra_repr(self) -> str:  # the activation is a function, not a module: name it in the printout
        return f"dense -> {self.act_name.upper()} -> LayerNorm"

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

    ``forward`` returns a :class:`PreTrainingOutput`: ``logits`` (B, T, |V|), ``seq_relationship_logits``
    (B, 2) when there is an NSP head, and ``loss`` when ``labels`` (-100 = not predicted) and/or
    ``next_sentence_label`` are given.
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
        """Share the MLM output matrix with the input word embeddings (as BERT does), and the decoder's bias
        with the head's own ``bias`` (one tensor, two checkpoint names)."""
        self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight
        self.cls.predictions.decoder.bias = self.cls.predictions.bias

    @property
    def device(self) -> torch.device:
        return self.bert.device

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, output_attentions=False, causal=False,
                output_hidden_states=False, labels=None, next_sentence_label=None) -> PreTrainingOutput:
        enc: EncoderOutput = self.bert(input_ids, attention_mask, token_type_ids, output_attentions=output_attentions,
                                       causal=causal, output_hidden_states=output_hidden_states)
        logits = self.cls.predictions(enc.last_hidden_state)
        nsp = self.cls.seq_relationship(enc.pooler_output) if self.cls.seq_relationship is not None else None
        loss = None
        if labels is not None:
            loss = nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1),
                                               ignore_index=IGNORE_INDEX)
        if next_sentence_label is not None:
            if nsp is None:
                raise ValueError("next_sentence_label was given, but this model has no NSP head")
            nsp_loss = nn.functional.cross_entropy(nsp, next_sentence_label.reshape(-1))
            loss = nsp_loss if loss is None else loss + nsp_loss
        return PreTrainingOutput(logits=logits, seq_relationship_logits=nsp, loss=loss,
                                 last_hidden_state=enc.last_hidden_state, pooler_output=enc.pooler_output,
                                 hidden_states=enc.hidden_states, attentions=enc.attentions, scores=enc.scores)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


PRETRAINING_PARTS = {  # part -> prefixes of its parameter names (Hugging Face names)
    "embeddings (word, position, segment, LayerNorm)": ("bert.embeddings.",),
    "transformer blocks": ("bert.encoder.",),
    "pooler (W, b of tanh(W z_CLS + b))": ("bert.pooler.",),
    "MLM head: transform (dense + LayerNorm)": ("cls.predictions.transform.",),
    "MLM head: output bias b": ("cls.predictions.bias", "cls.predictions.decoder.bias"),
    "MLM head: output matrix (tied: the word embeddings)": ("cls.predictions.decoder.weight",),
    "NSP head W_NSP": ("cls.seq_relationship.",),
}


def pretraining_parameter_breakdown(config: BertConfig, nsp: bool = True) -> dict[str, int]:
    """Part -> parameters of ``BertForPreTraining(config)``, built on the meta device (nothing allocated).

    Tied tensors are counted once, where PyTorch lists them first: the MLM output matrix *is* the word-embedding
    table, so its part counts 0 (an untied one would add vocab_size × hidden_size). The values sum to
    ``model.num_parameters()``.
    """
    with torch.device("meta"):
        model = BertForPreTraining(config, nsp=nsp)
    counts = dict.fromkeys(PRETRAINING_PARTS, 0)
    for name, p in model.named_parameters():  # named_parameters lists a shared tensor once
        part = next((k for k, pre in PRETRAINING_PARTS.items() if name.startswith(pre)), None)
        if part is None:
            raise ValueError(f"parameter {name!r} belongs to no part of {list(PRETRAINING_PARTS)}")
        counts[part] += p.numel()
    if not nsp:
        del counts["NSP head W_NSP"]
    return counts
