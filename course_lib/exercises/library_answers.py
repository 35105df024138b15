"""The library's own implementations of what each exercise asks the student to write, and the other packages
that implement an answer whole: the tables :mod:`.references` reads (see its docstring for what is listed and
what is left out)."""
from __future__ import annotations

REFERENCES: dict[str, tuple[str, ...]] = {
    # ----------------------------------------------------------------------------- ch11_1: bidirectional encoders
    # additive_mask (the float mask) is left out: a step of the masking, not its answer
    "attention": ("course_lib.model.attention.attention", "course_lib.model.attention.masked_softmax",
                  "course_lib.model.attention.attention_scores"),
    "causal_mask": ("course_lib.model.attention.causal_mask",),
    # not causal_mask (the solution calls its own causal_mask) nor attention (the notebook lets the student reuse
    # scaled_dot_product_attention, of which it is the library's version); combine_masks is a plain `&`
    "self_attention": ("course_lib.model.attention.self_attention",),
    "heads": ("course_lib.model.attention.split_heads", "course_lib.model.attention.merge_heads"),
    # BertModel: "from the config alone" -- building the model and counting is the library's answer
    "param_count": ("course_lib.model.bert.parameter_count", "course_lib.model.bert.BertModel",
                    "course_lib.model.bert.BertModel.num_parameters", "course_lib.model.size.parameter_breakdown"),

    # ----------------------------------------------------------------------------- ch11_1b: subword tokenization
    # BertTokenizer is the embedded model's tokenizer, the very thing graded: no legitimate use inside these two
    "wordpiece_encode": ("course_lib.tokenization.wordpiece.WordPiece",
                         "course_lib.tokenization.wordpiece.WordPiece.encode_word",
                         "course_lib.tokenization.reference.embedded_wordpiece",
                         "course_lib.tokenization.bert_tokenizer.BertTokenizer",
                         "course_lib.exercises.ch11_1b._reference", "course_lib.exercises.ch11_1b._library_wordpiece"),
    "bpe_merge_step": ("course_lib.exercises.ch11_1b._reference_merge", "course_lib.tokenization.merges.PairCounts",
                       "course_lib.tokenization.merges.best_pairs", "course_lib.tokenization.bpe.pair_counts",
                       "course_lib.tokenization.bpe.learn_bpe"),
    "viterbi": ("course_lib.tokenization.unigram.Unigram", "course_lib.tokenization.unigram.Unigram.viterbi"),
    # not basic_tokenize: the notebook names it and the solution calls it
    "wordpiece_word_ids": ("course_lib.tokenization.wordpiece.WordPiece",
                           "course_lib.tokenization.wordpiece.WordPiece.encode",
                           "course_lib.tokenization.reference.embedded_wordpiece",
                           "course_lib.tokenization.bert_tokenizer.BertTokenizer",
                           "course_lib.exercises.ch11_1b._reference",
                           "course_lib.exercises.ch11_1b._library_wordpiece"),

    # ----------------------------------------------------------------------------- ch11_2: masked language modelling
    "mlm_masking": ("course_lib.pretraining.masking.mlm_mask", "course_lib.pretraining.masking.DynamicMasker",
                    "course_lib.pretraining.masking.StaticMasker"),
    "mlm_loss": ("course_lib.pretraining.masking.masked_lm_loss", "course_lib.exercises.ch11_2._selected_loss"),
    "nsp_input": ("course_lib.exercises.ch11_2._nsp_reference", "course_lib.pretraining.corpus.collate_pairs"),
    "language_sampling": ("course_lib.pretraining.multilingual.language_sampling_probs",),
    # none: no library function goes from texts to the loss; of its steps, mlm_mask is allowed by the notebook
    # ("your mask_tokens, or course_lib's mlm_mask") and masked_lm_loss is dropped because the solution calls its
    # own masked_lm_loss (the last step, ch11_2._selected_loss, is mlm_loss's answer, not this one's)
    "masked_batch": (),

    # ----------------------------------------------------------------------------- ch11_3: contextual embeddings
    "word_vector": ("course_lib.embeddings.layers.combine_layers",),
    "sense_centroids": ("course_lib.embeddings.wsd.sense_centroids",),
    # not cosine_matrix: a cosine, as legitimate as F.cosine_similarity; the work is choosing by it
    "nearest_sense": ("course_lib.embeddings.wsd.NearestSenseWSD", "course_lib.embeddings.wsd.NearestSenseWSD.scores",
                      "course_lib.embeddings.wsd.NearestSenseWSD.predict"),
    "wsd_predict": ("course_lib.embeddings.wsd.NearestSenseWSD", "course_lib.embeddings.wsd.NearestSenseWSD.fit",
                    "course_lib.embeddings.wsd.NearestSenseWSD.predict", "course_lib.embeddings.wsd.wsd_by_layer"),
    "z_score": ("course_lib.embeddings.geometry.ZScorer", "course_lib.embeddings.geometry.ZScorer.fit",
                "course_lib.embeddings.geometry.ZScorer.transform"),
    "anisotropy": ("course_lib.embeddings.geometry.anisotropy", "course_lib.embeddings.geometry.pair_cosines",
                   "course_lib.exercises.ch11_3.expected_cosine", "course_lib.exercises.ch11_3.pair_stats"),
    # the whole per-layer computation only: anisotropy and ZScorer are the library's versions of the student's own
    # anisotropy_estimate and z_score, which the solution reuses
    "anisotropy_by_layer": ("course_lib.embeddings.geometry.layer_geometry",
                            "course_lib.exercises.ch11_3._reference_by_layer"),

    # ----------------------------------------------------------------------------- ch11_4a: sentence classification
    # pool(how="cls") is only hidden[:, 0]: the work is the masked batch, the head and its loss; the library's
    # classifier is eq. 11.13 on an encoder, the whole answer (the encoder and tokenizer are handed in)
    "cls_head": ("course_lib.exercises.ch11_4a.cls_reference",
                 "course_lib.model.classification.BertForSequenceClassification",
                 "course_lib.finetuning.classify.classify_texts"),
    "freeze_last_k": ("course_lib.finetuning.freezing.freeze", "course_lib.finetuning.frozen.freeze_below"),
    "sbert_features": ("course_lib.finetuning.sbert.sbert_features",),
    # pool does the masked mean pooling, this exercise's own step; not sbert_features, which the notebook says to
    # reuse and the solution calls
    "bi_encoder_logits": ("course_lib.exercises.ch11_4a.bi_reference", "course_lib.model.classification.pool"),
    "distillation_loss": ("course_lib.finetuning.distill.distillation_loss", "course_lib.finetuning.distill.Student",
                          "course_lib.exercises.ch11_4a.reference_distillation"),

    # ----------------------------------------------------------------------------- ch11_4b: sequence labelling
    "align_labels": ("course_lib.finetuning.labelling.align_labels",),
    "decode_first_subword": ("course_lib.finetuning.labelling.decode_first_subword",
                             "course_lib.finetuning.labelling.first_subword_positions"),
    # get_entities is read_entities, written in the same cell; the Scores classes do P/R/F1 from the counts
    "entity_f1": ("course_lib.finetuning.ner_eval.entity_scores", "course_lib.finetuning.ner_eval.get_entities",
                  "course_lib.finetuning.ner_eval.Scores", "course_lib.spans.ner.span_scores",
                  "course_lib.spans.ner.Scores"),
    "best_span": ("course_lib.finetuning.qa.best_span",),
    # not decode_first_subword (the solution calls its own) nor get_entities (the library's read_entities, which
    # the notebook says to reuse)
    "predicted_entities": ("course_lib.exercises.ch11_4b._entities",),

    # ----------------------------------------------------------------------------- ch11_5: span-based methods
    "span_lengths": ("course_lib.spans.masking.sample_span_lengths",
                     "course_lib.spans.masking.span_length_distribution"),
    "span_enumeration": ("course_lib.spans.ner.enumerate_spans",),
    "boundary_rep": ("course_lib.spans.representations.boundary_representation",
                     "course_lib.spans.representations.span_mean",
                     "course_lib.spans.representations.SpanRepresentation"),
    "sbo_input": ("course_lib.spans.sbo.sbo_input", "course_lib.spans.sbo.sbo_inputs"),
    # decode_spans keeps the non-NULL argmax spans, this exercise's own step; not enumerate_spans (the solution calls
    # its own) nor boundary_representation (the library's span_representation, which the notebook says to reuse)
    "span_ner_decode": ("course_lib.exercises.ch11_5.reference_entities", "course_lib.spans.ner.decode_spans"),
}


# Other packages that implement an exercise's answer whole: any use of them in that exercise's code is refused
# (`tokenizers` is the very library the tokenizer checks compare with; seqeval's scores are entity F1 itself)
PACKAGES: dict[str, tuple[str, ...]] = {
    "wordpiece_encode": ("tokenizers", "transformers"), "wordpiece_word_ids": ("tokenizers", "transformers"),
    "viterbi": ("tokenizers", "sentencepiece"), "bpe_merge_step": ("tokenizers",),
    "entity_f1": ("seqeval",),
}
