"""Fine-tuning, SLP3 §11.4: the training loop and the models of notebooks 11.4a and 11.4b.

A generic loop for any model that returns ``.loss`` (``training``; its runs -- config, per-epoch records, cache
keys and files -- in ``runs``): AdamW with warm-up, progress bar, held-out curves per epoch, runs cached by
config + model + data hash, stoppable without losing finished epochs, GPU-aware. For §11.4.1-11.4.2 (notebook
11.4a): the labelled sentences and pairs (``data``), freezing strategies (``freezing``: head only, last k
layers, full), training the top layers on cached frozen states (``frozen``), sentence and pair classification
(``classify``: eq. 11.13 over [CLS] or mean pooling, the cross-encoder), SentenceBERT (``sbert``:
softmax(W[u; v; |u−v|]), cosine) and the cost of scoring all pairs (``cost``). For §11.4.3 (notebook 11.4b):
label alignment, entity-level evaluation and QA (``labelling``, ``ner``, ``ner_eval``, ``qa``, ``qa_eval``, ``qa_reader``).
"""
from .runs import EpochRecord, TrainConfig, TrainRun
from .training import batches, evaluate, fingerprint, fit, predict, run_key, trainable_named_parameters

__all__ = ["EpochRecord", "TrainConfig", "TrainRun", "batches", "evaluate", "fingerprint", "fit", "predict",
           "run_key", "trainable_named_parameters"]

# §11.4.3 and QA (notebook 11.4b)
from .crf import LinearChainCRF  # noqa: E402
from .labelling import (IGNORE_INDEX, LabelSet, TaggedSentence, align_labels, decode_combined,  # noqa: E402
                        decode_first_subword, encode_words, iob1_to_bio, load_wikigold, read_conll, split_words)
from .ner import NerTagger, dictionary_baseline, word_majority_baseline  # noqa: E402
from .ner_eval import entity_scores, get_entities, token_accuracy  # noqa: E402
from .qa import QAExample, best_span, load_squad, make_features, predict_answers  # noqa: E402
from .qa_eval import exact_match, normalize_answer, squad_scores, token_f1  # noqa: E402
from .qa_reader import QAReader  # noqa: E402

__all__ += ["LinearChainCRF", "IGNORE_INDEX", "LabelSet", "TaggedSentence", "align_labels", "decode_combined",
            "decode_first_subword", "encode_words", "iob1_to_bio", "load_wikigold", "read_conll", "split_words",
            "NerTagger", "dictionary_baseline", "word_majority_baseline", "entity_scores", "get_entities",
            "token_accuracy", "QAExample", "best_span", "exact_match", "load_squad", "make_features",
            "normalize_answer", "predict_answers", "squad_scores", "token_f1", "QAReader"]
