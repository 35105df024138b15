"""course_lib: the library behind the notebooks for SLP3 ch. 11, Fine-Tuning and Masked Language Models."""
# the function attention() stays in course_lib.attention, so that the submodule name is not shadowed
from . import attention
from .attention import AttentionOutput, bidirectional_mask, causal_mask, merge_heads, padding_mask, split_heads
from .bert import BertConfig, BertModel, EncoderOutput
from .device import get_device, seed_everything
from .heads import BertForPreTraining
from .masking import (DynamicMasker, MaskedBatch, StaticMasker, encode_nsp, masked_lm_loss, mlm_mask, nsp_pairs,
                      pack_sequences, unigram_distribution)
from .multilingual import language_sampling_probs
from .mlm import fill_mask
from .pretrained import CheckpointError, load_pretrained
from .tokenizer import BertTokenizer, Encoding

__all__ = [
    "AttentionOutput", "bidirectional_mask", "causal_mask", "padding_mask", "split_heads", "merge_heads",
    "BertConfig", "BertModel", "BertForPreTraining", "EncoderOutput", "get_device", "seed_everything",
    "load_pretrained", "CheckpointError", "BertTokenizer", "Encoding", "fill_mask",
    "unigram_distribution", "mlm_mask", "MaskedBatch", "masked_lm_loss", "nsp_pairs", "encode_nsp", "pack_sequences",
    "DynamicMasker", "StaticMasker", "language_sampling_probs",
]
__version__ = "0.1.0"
