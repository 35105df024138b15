"""The model, SLP3 §11.1-11.2: a BERT encoder written to be read, with Hugging Face's parameter names.

Self-attention, eq. 11.1-11.6 -- query/key/value projections, the N×N score matrix QKᵀ/√d_k
(Fig. 11.2), bidirectional, causal (Fig. 11.1) and padding masks, the row softmax, multi-head
split and merge (``attention``); the encoder, its config and the transformer block of Fig. 11.3
(``bert``); the pretraining heads -- the MLM head (dense + GELU + LayerNorm, then the decoder tied to
the word embeddings) and the NSP head on the pooler's tanh(W z_CLS) (``heads``); fine-tuning heads
for [CLS] classification, token classification, spans and QA (``classification``, ``tagging``,
``qa``); what a causal mask takes away from each position (``context``), parameter counts per component
(``size``), attention-head patterns (``head_patterns``); device handling (``device``) and the measured
cost of attention (``cost``).
"""
from . import attention
from .attention import AttentionOutput, bidirectional_mask, causal_mask, merge_heads, padding_mask, split_heads
from .bert import BertConfig, BertModel, EncoderOutput, check_index, parameter_count
from .device import get_device, seed_everything
from .heads import BertForPreTraining, PreTrainingOutput

__all__ = [
    "attention", "AttentionOutput", "bidirectional_mask", "causal_mask", "merge_heads", "padding_mask", "split_heads",
    "BertConfig", "BertModel", "EncoderOutput", "check_index", "parameter_count", "get_device", "seed_everything",
    "BertForPreTraining", "PreTrainingOutput",
]
