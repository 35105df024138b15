"""Subword tokenization (the lectures' BPE, WordPiece and Unigram LM; SLP3 §11.4.3's "Mt. Sanitas" example).

``bert_tokenizer``: the embedded model's real WordPiece tokenizer (Hugging Face ``tokenizers``), returning
tensors together with the tokens, character offsets and ``word_ids`` -- the subword-to-word mapping that
word vectors (§11.3) and label alignment (§11.4.3) need. Beside it, the algorithms of notebook 11.1b written
from scratch and proven equal to the real libraries: BERT's pre-tokenizer (``pretokenize``), the BPE learner
with incremental pair counts and its merge-rank encoder (``merges``, ``bpe``), GPT-2/RoBERTa byte-level BPE
(``byte_level``), WordPiece's greedy longest-match encoder and likelihood-score trainer (``wordpiece``),
the Unigram LM with Viterbi, sampling (subword regularization) and EM training (``unigram``,
``unigram_training``), and comparisons on real text (``compare``, ``corpora``).
"""
from .bert_tokenizer import SPECIAL_TOKENS, BertTokenizer, Encoding
from .bpe import BPE, BpeLearning, learn_bpe
from .byte_level import ByteLevelBPE, learn_byte_bpe
from .compare import CourseTokenizers, course_tokenizers, fertility
from .unigram import Unigram
from .unigram_training import train_unigram
from .wordpiece import WordPiece, train_wordpiece

__all__ = ["SPECIAL_TOKENS", "BertTokenizer", "Encoding", "BPE", "BpeLearning", "learn_bpe", "ByteLevelBPE",
           "learn_byte_bpe", "CourseTokenizers", "course_tokenizers", "fertility", "Unigram", "train_unigram",
           "WordPiece", "train_wordpiece"]
