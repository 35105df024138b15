"""course_lib: the library behind the notebooks for SLP3 ch. 11, Fine-Tuning and Masked Language Models.

One package per chapter concept (see docs/architecture.md): ``model`` (attention, the encoder, heads),
``checkpoints`` (loading and the shipped models), ``tokenization``, ``pretraining`` (§11.2),
``embeddings`` (§11.3), ``finetuning`` (§11.4), ``spans`` (§11.5), ``views`` and ``widgets``, and
``exercises``. The names a notebook needs most are here at the top.
"""
from .checkpoints import CheckpointError, load_pretrained, shipped_models
from .model import (AttentionOutput, BertConfig, BertForPreTraining, BertModel, EncoderOutput, PreTrainingOutput,
                    attention, bidirectional_mask, causal_mask, get_device, merge_heads, padding_mask,
                    seed_everything, split_heads)
from .pretraining import (DynamicMasker, MaskedBatch, StaticMasker, encode_nsp, fill_mask, language_sampling_probs,
                          masked_lm_loss, mlm_mask, nsp_pairs, pack_sequences, unigram_distribution)
from .tokenization import BertTokenizer, Encoding

__all__ = [
    "AttentionOutput", "bidirectional_mask", "causal_mask", "padding_mask", "split_heads", "merge_heads", "attention",
    "BertConfig", "BertModel", "BertForPreTraining", "EncoderOutput", "PreTrainingOutput", "get_device",
    "seed_everything", "load_pretrained", "shipped_models", "CheckpointError", "BertTokenizer", "Encoding",
    "fill_mask", "unigram_distribution", "mlm_mask", "MaskedBatch", "masked_lm_loss", "nsp_pairs", "encode_nsp",
    "pack_sequences", "DynamicMasker", "StaticMasker", "language_sampling_probs",
]
__version__ = "0.2.0"

from .kernel import trim_after_each_cell as _trim_after_each_cell  # noqa: E402

_trim_after_each_cell()  # in a notebook's kernel: freed memory goes back to the system after every cell
