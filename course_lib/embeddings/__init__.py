"""Contextual embeddings, SLP3 §11.3: what the encoder's vectors are and how to use them.

Word vectors at every layer with subwords pooled to the word (``states``), choosing or mixing layers,
including ELMo's learnt scalar mix (``layers``), word-sense disambiguation by nearest sense centroid,
eq. 11.8-11.9, with the most-frequent-sense baseline (``wsd``) over the project's sense-labelled
sentences (``senses``), the geometry of the space -- anisotropy (Ethayarajh 2019), rogue dimensions
(Timkey & van Schijndel 2021) and z-scoring, eq. 11.10-11.12 (``geometry``), word similarity against
WordSim-353 and SimLex-999 (``similarity``), and cached 2-D UMAP projections for Fig. 11.7 (``projection``);
three models side by side -- MLM, contrastive, random -- with Fig. 11.7's *die* (``compare``), their states cached
on disk by model weights and data (``cache``).

    states = target_states(model, tok, data.train)        # (N, L+1, d)
    X = combine_layers(states, "last4_mean")               # (N, d)
    wsd = NearestSenseWSD().fit(X, data.train)             # eq. 11.8
    Z = ZScorer().fit(other_vectors); anisotropy(Z(vectors))
"""
from .cache import cached_states, model_fingerprint
from .compare import (DIE_SENTENCES, MODEL_NAMES, ModelStates, compared_models, die_examples, heldout_texts,
                      model_states, sense_cosine_table, sense_states, silhouette, word_zscorers, zscoring_words)
from .geometry import DimensionReport, LayerGeometry, ZScorer, anisotropy, dimension_report, layer_geometry, pair_cosines
from .layers import LAYER_CHOICES, ScalarMix, combine_layers, layer_name
from .projection import UMAP_CACHE, Projection, ProjectionCache, import_umap, umap_project, warm_umap
from .senses import Sense, SenseData, SenseExample, load_sense_data, parse_marked, sense_examples
from .similarity import (InContext, auc_change, gensim_test_data, in_context_similarity, lee_corpus, same_word_pairs,
                         similarity_by_layer, similarity_correlation, similarity_pairs, spearman,
                         zscoring_gain_by_layer)
from .states import POOLINGS, corpus_states, isolated_word_states, target_states, word_states
from .wsd import (NearestSenseWSD, SenseScore, WSDResult, accuracy, choose_layer, cosine_matrix, fit_scalar_mix,
                  leave_one_out, sense_centroids, typical_floor, wsd_by_layer)

__all__ = [
    "cached_states", "model_fingerprint", "DIE_SENTENCES", "MODEL_NAMES", "ModelStates", "compared_models",
    "die_examples", "heldout_texts", "model_states", "sense_cosine_table", "sense_states", "silhouette", "word_zscorers",
    "zscoring_words", "LayerGeometry",
    "layer_geometry", "similarity_by_layer", "zscoring_gain_by_layer", "InContext", "auc_change", "in_context_similarity", "same_word_pairs",
    "DimensionReport", "ZScorer", "anisotropy", "dimension_report", "pair_cosines", "LAYER_CHOICES", "ScalarMix",
    "combine_layers", "layer_name", "UMAP_CACHE", "Projection", "ProjectionCache", "import_umap", "umap_project",
    "warm_umap", "Sense", "SenseData", "SenseExample", "load_sense_data", "parse_marked", "sense_examples",
    "gensim_test_data", "lee_corpus", "similarity_correlation", "similarity_pairs", "spearman", "POOLINGS",
    "corpus_states", "isolated_word_states", "target_states", "word_states", "NearestSenseWSD", "SenseScore",
    "WSDResult", "accuracy", "choose_layer", "cosine_matrix", "fit_scalar_mix", "leave_one_out", "sense_centroids",
    "typical_floor", "wsd_by_layer",
]
