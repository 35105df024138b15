"""Training bidirectional encoders, SLP3 §11.2.

MLM corruption -- 15% of the tokens selected, of those 80% [MASK], 10% a random token drawn from the
unigram distribution, 10% unchanged, special tokens never chosen, whole-word masking -- and the loss
averaged over the selected tokens only (``masking``, §11.2.1); next-sentence-prediction pairs with
segment ids (§11.2.2); RoBERTa's dynamic masking and packing to a fixed length; BART's corruptions
(``noising``); multilingual sampling with q_i = p_i^α / Σ_j p_j^α, eq. 11.7 (``multilingual``); the
live pretraining of a tiny BERT (``training``), MLM domain adaptation (``adaptation``, lecture 003) and
fill-mask with a model's MLM head, with what it predicts at each fate of the 80/10/10 corruption
(``fill_mask``).
"""
from .fill_mask import (ClozeAccuracy, ClozeRow, FateStats, MaskPrediction, NoMLMHeadError, cloze_table, fill_mask,
                        masked_token_accuracy, predictions_by_fate)
from .everyday import EverydayScores, everyday_cloze, everyday_cloze_scores
from .masking import (IGNORE_INDEX, DynamicMasker, MaskedBatch, NSPPair, StaticMasker, encode_nsp, masked_lm_loss,
                      mlm_mask, nsp_pairs, pack_sequences, unigram_distribution)
from .multilingual import language_sampling_probs

__all__ = [
    "ClozeAccuracy", "ClozeRow", "FateStats", "MaskPrediction", "NoMLMHeadError", "cloze_table", "fill_mask",
    "masked_token_accuracy", "predictions_by_fate", "IGNORE_INDEX", "EverydayScores", "everyday_cloze",
    "everyday_cloze_scores",
    "DynamicMasker", "MaskedBatch", "NSPPair", "StaticMasker", "encode_nsp", "masked_lm_loss", "mlm_mask",
    "nsp_pairs", "pack_sequences", "unigram_distribution", "language_sampling_probs",
]
