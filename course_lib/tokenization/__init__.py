"""Subword tokenization (the lectures' BPE, WordPiece and Unigram LM; SLP3 §11.4.3's "Mt. Sanitas" example).

``bert_tokenizer``: the embedded model's real WordPiece tokenizer (Hugging Face ``tokenizers``), returning
tensors together with the tokens, character offsets and ``word_ids`` -- the subword-to-word mapping that
word vectors (§11.3) and label alignment (§11.4.3) need. The from-scratch algorithms of notebook 11.1b
live beside it.
"""
from .bert_tokenizer import SPECIAL_TOKENS, BertTokenizer, Encoding

__all__ = ["SPECIAL_TOKENS", "BertTokenizer", "Encoding"]
