"""Span-based masking and span tasks, SLP3 §11.5.

``masking`` -- SpanBERT's masking (§11.5.1): span lengths from a geometric distribution (p = 0.2) bounded at 10
words, mean 3.8; whole-word spans with a uniform start; spans until 15% of the tokens are covered; one
80/10/10 fate per span. ``sbo`` -- the span boundary objective, eq. 11.17-11.20: each token of a masked span is
predicted from the two tokens just outside it and a relative position embedding, L = L_MLM + L_SBO.
``representations`` -- span representations, eq. 11.21-11.26: mean, [z_i; z_j; g_ij], learned start/end FFNs,
attention pooling over the span. ``ner`` -- span-based NER, eq. 11.27-11.28: enumerate the T(T+1)/2 spans (or those
up to a length limit L), classify each as a type or NULL, decode (nested, or greedy without overlaps for flat NER),
span-level precision/recall/F1, and why BIO cannot hold nested entities. ``experiments`` -- the notebook's runs:
span NER vs a BIO tagger on GUM's nested entities, and a short SpanBERT (MLM + SBO) run. ``calibration`` -- undoing
the NULL spans' sampled share in the span classifier's probabilities (:func:`correct_null_prior`).
"""
from .calibration import correct_null_prior
from .masking import (MASK_BUDGET, MAX_SPAN_WORDS, P_GEOMETRIC, SpanMasking, choose_spans, clipped_mean_span_length,
                      mean_span_length, sample_span_lengths, span_length_distribution, span_mask, word_units)
from .ner import (NULL, Scores, SpanLabels, SpanNERClassifier, SpanSentence, bio_sequences_containing, bio_tags,
                  count_spans, decode_flat, decode_spans, enumerate_spans, load_gum_spans, nesting_depths, outermost,
                  span_labels, span_scores, word_token_spans)
from .representations import AttentionPooling, SpanRepresentation, StartEndFFN, boundary_representation, span_mean
from .sbo import SBOTargets, SpanBertForPreTraining, SpanBoundaryHead, sbo_input, sbo_inputs, sbo_targets

__all__ = [
    "correct_null_prior",
    "MASK_BUDGET", "MAX_SPAN_WORDS", "P_GEOMETRIC", "SpanMasking", "choose_spans", "clipped_mean_span_length",
    "mean_span_length", "sample_span_lengths", "span_length_distribution", "span_mask", "word_units",
    "NULL", "Scores", "SpanLabels", "SpanNERClassifier", "SpanSentence", "bio_sequences_containing", "bio_tags",
    "count_spans", "decode_flat", "decode_spans", "enumerate_spans", "load_gum_spans", "nesting_depths", "outermost",
    "span_labels", "span_scores", "word_token_spans",
    "AttentionPooling", "SpanRepresentation", "StartEndFFN", "boundary_representation", "span_mean",
    "SBOTargets", "SpanBertForPreTraining", "SpanBoundaryHead", "sbo_input", "sbo_inputs", "sbo_targets",
]
