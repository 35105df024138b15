# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     notebook_metadata_filter: rise
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
#   rise:
#     scroll: true
#     transition: none
# ---

# %% [markdown] slideshow={"slide_type": "slide"}
# # 11.3 Contextual embeddings
#
# A static embedding (word2vec, GloVe) gives *bank* one vector, whatever the sentence. The output of
# an encoder gives every **token in context** its own vector: the *bank* of a river and the *bank*
# that lends money end up in different places. What that space looks like depends on how the encoder was
# trained, so this notebook measures **three geometries side by side**, on the same tokens:
#
# | model | trained by | |
# |---|---|---|
# | `course-bert` | all-MiniLM-L6-v2 trained further by masked language modelling (§11.2), the course's BERT | `load_pretrained("course-bert")` |
# | all-MiniLM-L6-v2 | a 6-layer cut of MiniLM (itself distilled from a larger masked-language model), then contrastive sentence-embedding training | `load_pretrained()` |
# | random init | nothing: the same configuration, seeded random weights | `BertModel(config)` |
#
# All three have 6 layers of d = 384. Layers are counted from 0 everywhere: **L0 is the embedding output**,
# L1 … L6 the outputs of the six transformer blocks (`hidden_states[0]` … `hidden_states[6]`). In this notebook:
#
# 1. word vectors from the encoder: which layer, and how subword tokens become one word vector;
# 2. three models, the same tokens: the data every later section measures, embedded once per model;
# 3. word senses as clusters: Fig. 11.7's *die*;
# 4. word-sense disambiguation by the nearest sense centroid (eq. 11.8-11.9), layer by layer;
# 5. anisotropy, rogue dimensions and z-scoring (eq. 11.10-11.12);
# 6. word similarity against human judgments, raw and z-scored, and the same word in two contexts.
#
# Seven exercises and two predictions are graded with `check("…")`. Every number below is computed when the
# notebook runs (the models' vectors are cached on disk, so a second run is faster).

# %% tags=["setup"]
import math  # noqa: F401 - for your answers to the exercises

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

import course_lib
from course_lib.exercises import check

torch.set_printoptions(precision=3, sci_mode=False)
model, tokenizer = course_lib.load_pretrained()  # all-MiniLM-L6-v2: 6 layers, d = 384
L = model.config.num_hidden_layers

# %%
# %matplotlib inline

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. A vector for a word in context
#
# The forward pass returns the embedding output L0 and the output of each of the L = 6 blocks
# (`hidden_states`, L + 1 tensors of shape (T, d)). Which one is "the" contextual embedding? The
# last layer is the usual answer; for BERT it is also common to **average the last four layers** (the
# introduction of §11.3) or sum them (§11.3.1). ELMo went further and *learned* a weighted mix of all layers.
#
# A word that WordPiece splits into several tokens needs one more step: **pool** its subword vectors,
# usually by their mean. `Encoding.word_ids` says which word every token belongs to:

# %%
enc = tokenizer("The unaffordable rent near the river bank shocked us.")
list(zip(enc.tokens[0], enc.word_ids[0]))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise `word_vector`
# Write `word_vector(hidden_states, word_ids, word)`: `hidden_states` is a tuple of L + 1 tensors
# (T, d) for **one** sentence (L0, the embedding output, first), `word_ids` the T word indices (None for
# [CLS] and [SEP]). Return the (d,) vector of word number `word`: the mean of the last four layers
# (`hidden_states[-4:]`, whatever L is: L3 … L6 here), averaged over the word's subword tokens. (In every exercise
# of this notebook, leave the inputs as they were given: compute new tensors rather than changing them.)

# %% tags=["exercise"]
def word_vector(hidden_states, word_ids, word):
    """Mean of the last four layers, then mean over the subwords of word number `word`. Returns (d,)."""
    ### BEGIN SOLUTION
    last4 = torch.stack(hidden_states[-4:]).mean(0)           # (T, d)
    idx = [t for t, w in enumerate(word_ids) if w == word]
    return last4[idx].mean(0)
    ### END SOLUTION


# %%
check("word_vector")

# %% [markdown] slideshow={"slide_type": "fragment"}
# The library does the same for many sentences at once, for every layer: `target_states` returns
# (N, L + 1, d), and `combine_layers` picks a layer, the last, or the mean/sum of the last four.
# Same word, two senses, three contexts — static (L0) vs contextual:

# %%
# claim: bank-cosines
from course_lib.embeddings import combine_layers, target_states

texts = ["She deposited the cheque at the bank on Monday.",
         "The bank approved our loan this morning.",
         "We had a picnic on the grassy bank of the river."]
spans = [(t.index("bank"), t.index("bank") + 4) for t in texts]
S3 = target_states(model, tokenizer, texts=texts, spans=spans)  # (3, L+1, d)
print("token position of 'bank':", [tokenizer(t).tokens[0].index("bank") for t in texts])
for name, layers in [("L0 (static)", 0), ("last layer L6", "last"), ("mean of L3-L6", "last4_mean")]:
    V = F.normalize(combine_layers(S3, layers), dim=-1)
    print(f"{name:15s} cos(money, money) = {V[0] @ V[1]:.3f}   cos(money, river) = {V[0] @ V[2]:.3f}")

# %% [markdown] slideshow={"slide_type": "fragment"}
# At L0 a token's vector is its word embedding plus its position and segment embeddings, layer-normalised —
# nothing else. The first and third *bank* sit at the same position (token index 8, printed above, [CLS] is 0:
# *cheque* is two WordPieces, `che ##que`), so their vectors are identical (cosine 1)
# although they mean different things. After the blocks have attended to the context, the two financial
# banks are closer to each other than to the river bank.
#
# ## 2. Three models, the same tokens
#
# Everything below is measured on the same data for the three models:
#
# - **running text** for the geometry: course-bert's held-out English text (never trained on; pieces of all
#   23 sources of its training text, interleaved): 5,000 tokens of the pieces its card scores, and 5,000 tokens
#   of *other* held-out pieces for the z-scoring statistics — exactly as course-bert's `MODEL_CARD.md` measures it;
# - the project's **sense-labelled sentences** (30 ambiguous nouns, 2-4 WordNet senses each, split 75/25 by
#   sentence; `course_lib/data/wsd/DATA_CARD.md`);
# - the words of **WordSim-353** and **SimLex-999**, each embedded on its own.
#
# The vectors of every layer are computed once per model and cached (`course_lib.paths.cache_dir()`, keyed by
# the model's weights and the data): from a cold cache this is the notebook's one slow cell; after that it only
# reads the cache.

# %%
import time

from course_lib.embeddings import (MODEL_NAMES, compared_models, heldout_texts, model_states, similarity_pairs,
                                   word_zscorers, zscoring_words)
from course_lib.embeddings.senses import load_sense_data

COURSE, MINILM, RANDOM = MODEL_NAMES
models = compared_models(seed=0, minilm=(model, tokenizer))  # {name: (model, tokenizer)}; random: seed 0
data = load_sense_data()
score_texts, fit_texts = heldout_texts()
pairs = {name: similarity_pairs(name) for name in ("wordsim353", "simlex999")}
sim_words = sorted({w for p in pairs.values() for a, b, _ in p for w in (a, b)})
other_words = zscoring_words(fit_texts, exclude=sim_words, n=1000)  # z-scoring isolated words (section 6)
states, word_z = {}, {}
for name, (m, tok) in models.items():
    t0 = time.perf_counter()
    states[name] = model_states(m, tok, examples=data.examples, words=sim_words,
                                score_texts=score_texts, fit_texts=fit_texts)
    word_z[name] = word_zscorers(m, tok, other_words)  # μ, σ per layer of other words, each on its own (section 6)
    print(f"{name:17s} {time.perf_counter() - t0:5.1f} s   tokens scored {tuple(states[name].scored.shape)}, "
          f"fitted {tuple(states[name].fitted.shape)}, sense targets {tuple(states[name].senses.shape)}, "
          f"words {tuple(states[name].words.shape)}")
is_train = torch.tensor([e.split == "train" for e in data.examples])
print(f"{len(data.lemmas)} ambiguous words, {len(data.senses)} senses, {len(data.train)} training and "
      f"{len(data.test)} test sentences")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Prediction `random_wsd`
# Predict before any result of the random encoder is shown. Section 4 disambiguates word senses with these
# vectors: a test word gets the sense whose **centroid** (the mean vector of that sense's training sentences) is
# nearest, and is compared with the **most-frequent-sense** (MFS) baseline, which always answers the sense seen
# most often in training, whatever the context. The random encoder has the architecture of the other two but no
# training. At its best layer (chosen on the training sentences), where does its nearest-centroid WSD land against MFS:
# `"well above it (by 10 points or more)"`, `"about level with it (within a few points)"`, or
# `"well below it (by 10 points or more)"`? Set `random_wsd`, run `check`, and only then read on.

# %% tags=["exercise"]
### BEGIN SOLUTION
random_wsd = "about level with it (within a few points)"
### END SOLUTION

# %%
check("random_wsd")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. Word senses as clusters: Fig. 11.7's *die*
#
# Fig. 11.7 (from Coenen et al. 2019) projects BERT's vectors of *die* in many English and German sentences to
# two dimensions: *a die* (the singular of dice), *to die*, and the German article *die* fall into separate
# clusters. Here are 8 sentences of each, written for this notebook (`course_lib.embeddings.DIE_SENTENCES`):

# %%
from course_lib.embeddings import DIE_SENTENCES, die_examples, sense_cosine_table, silhouette

for sense, sentences in DIE_SENTENCES.items():
    print(f"{sense:22s} e.g. {sentences[0]}")
die = die_examples()
die_labels = [e.sense for e in die]
die_states = {name: target_states(m, tok, die) for name, (m, tok) in models.items()}  # (24, L+1, d) each
del models, m, tok  # from here on only the vectors are needed (and all-MiniLM-L6-v2, `model`, for the widgets)

# %% [markdown] slideshow={"slide_type": "fragment"}
# How well does each model separate the three uses, layer by layer? The **silhouette** (cosine distance) of a
# point compares its mean distance to its own sense with that to the nearest other sense: near 1 for tight,
# separate clusters, near 0 when they overlap. It compares distances within and between the senses, so it is far
# less sensitive to anisotropy than a raw cosine, which grows with it.

# %%
# claim: die-silhouette
sil = {name: [silhouette(die_states[name][:, l], die_labels) for l in range(L + 1)] for name in MODEL_NAMES}
best_die = {name: max(range(L + 1), key=sil[name].__getitem__) for name in MODEL_NAMES}
for name in MODEL_NAMES:
    print(f"{name:17s} " + "  ".join(f"L{l} {v:+.2f}" for l, v in enumerate(sil[name]))
          + f"   best: L{best_die[name]} ({sil[name][best_die[name]]:+.2f})")

# %% [markdown] slideshow={"slide_type": "fragment"}
# At L0 every model sees only the word *die* and its position: the senses overlap (silhouette below 0). Both
# trained models separate the three uses from L1 on, more in the upper layers: MiniLM most at L4-L5 and clearly less
# at L6 (0.71, then 0.59), course-bert about level from L4 to L6 (0.56-0.59: gaps this small are noise for 24
# sentences). all-MiniLM-L6-v2, trained
# to tell sentences apart, separates them a little better (best silhouette about 0.7) than course-bert after its
# MLM training (about 0.6). The random encoder separates nothing at any layer. The mean cosine between the instances of two senses (a vector never with itself),
# at each model's best layer:

# %%
# claim: die-table
for name in MODEL_NAMES:
    senses, table = sense_cosine_table(die_states[name][:, best_die[name]], die_labels)
    print(f"{name}, L{best_die[name]}:")
    for s, row in zip(senses, table):
        print(f"   {s:22s} " + "  ".join(f"{v:.2f}" for v in row))

# %% [markdown] slideshow={"slide_type": "fragment"}
# In course-bert and MiniLM each sense is closest to itself, and the German article is the farthest from both
# English senses: the widest gap is between the languages, the next between the English senses (Fig. 11.7 shows
# the three clusters apart; the order of the gaps is what this table measures, and our German sentences are German
# throughout, so every word around *die* differs too). In the random
# encoder every cosine is about the same, about 0.7, whatever the sense: it has learnt nothing that tells the
# senses apart.
#
# The figure, with UMAP: course-bert is drawn, because it is the MLM-trained BERT like the one of Fig. 11.7 and
# its separation, a little weaker than MiniLM's, is clear (the silhouettes above); beside it, the random encoder at
# the same layer.

# %%
from course_lib.embeddings import umap_project
from course_lib.views.embeddings import OKABE_ITO

layer = best_die[COURSE]
fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
for ax, (name, l) in zip(axes, [(COURSE, 0), (COURSE, layer), (RANDOM, layer)]):
    xy = umap_project(combine_layers(die_states[name], l)).coords
    for k, s in enumerate(DIE_SENTENCES):
        pts = xy[[j for j, t in enumerate(die_labels) if t == s]]
        ax.scatter(pts[:, 0], pts[:, 1], color=OKABE_ITO[k], marker="os^"[k], label=s, alpha=0.85, edgecolor="white")
    ax.set_title(f"{name}, L{l}" + (" (no context)" if l == 0 else ""))
    ax.set_xlabel("UMAP dimension 1")
    ax.set_ylabel("UMAP dimension 2")
axes[1].legend(loc="best", fontsize=9)
fig.suptitle("'die' in 24 sentences (Fig. 11.7): dice, to die, the German article")
fig.tight_layout()

# %% [markdown] slideshow={"slide_type": "fragment"}
# **Sense clusters.** The same for the 30 words of the sense data (all-MiniLM-L6-v2): choose a word, a layer and
# how subwords are pooled; hover a point to read its sentence, or pick a sentence in the list to ring its point.
# (Projections are cached, so going back to a setting is instant; a new one shows "computing…" for a moment.)

# %% slideshow={"slide_type": "subslide"}
from course_lib.widgets import SenseClusters

SenseClusters(model, tokenizer, data, states={"mean": states[MINILM].senses}, word="bank")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Word-sense disambiguation by the nearest centroid (eq. 11.8-11.9)
#
# Training: average the vectors of all training instances of a sense,
# $\mathbf{v}_s = \frac{1}{n}\sum_i \mathbf{v}_i$ (eq. 11.8). Test: embed the target token and choose
# the sense of the same word whose centroid has the highest cosine,
# $\text{sense}(t) = \text{argmax}_{s \in \text{senses}(t)} \cos(\mathbf{t}, \mathbf{v}_s)$ (eq. 11.9).

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise `sense_centroids`
# Write `sense_centroids(vectors, labels)`: `vectors` (N, d), `labels` a list of N sense labels.
# Return a dict {label: the (d,) mean vector of that sense}.

# %% tags=["exercise"]
def sense_centroids(vectors, labels):
    """Eq. 11.8: {sense: mean of its vectors}."""
    ### BEGIN SOLUTION
    return {s: vectors[[i for i, l in enumerate(labels) if l == s]].mean(0) for s in dict.fromkeys(labels)}
    ### END SOLUTION


# %%
check("sense_centroids")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise `nearest_sense`
# Write `nearest_sense(vector, centroids)`: return the label whose centroid has the highest
# **cosine** with `vector` (d,) — not the smallest distance, not the largest dot product.

# %% tags=["exercise"]
def nearest_sense(vector, centroids):
    """Eq. 11.9: the sense whose centroid is most cosine-similar to the vector."""
    ### BEGIN SOLUTION
    return max(centroids, key=lambda s: F.cosine_similarity(vector, centroids[s], dim=0).item())
    ### END SOLUTION


# %%
check("nearest_sense")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise `wsd_predict` (putting it together)
# The data mixes many words: *mouse*, *bank*, *die* … and a sense belongs to one word. Write
# `wsd_predict(train_vectors, train_senses, train_lemmas, test_vectors, test_lemmas)`: the training vectors
# (N, d) with their sense labels and lemmas (lists of N strings), the test vectors (M, d) with their lemmas;
# return a list of M sense labels, each test vector's nearest sense by eq. 11.9. Use your `sense_centroids`
# and `nearest_sense`. Every test lemma has training examples.

# %% tags=["exercise"]
def wsd_predict(train_vectors, train_senses, train_lemmas, test_vectors, test_lemmas):
    """1-nearest-centroid WSD over many words (eq. 11.8-11.9)."""
    ### BEGIN SOLUTION
    centroids = {}
    for lemma in dict.fromkeys(train_lemmas):
        idx = [i for i, l in enumerate(train_lemmas) if l == lemma]
        centroids[lemma] = sense_centroids(train_vectors[idx], [train_senses[i] for i in idx])
    return [nearest_sense(v, centroids[lemma]) for v, lemma in zip(test_vectors, test_lemmas)]
    ### END SOLUTION


# %%
check("wsd_predict")

# %% [markdown] slideshow={"slide_type": "fragment"}
# Your function on every test sentence, with course-bert's mean of the last four layers:

# %%
S_course = states[COURSE].senses
train_v, test_v = combine_layers(S_course[is_train], "last4_mean"), combine_layers(S_course[~is_train], "last4_mean")
try:
    predicted = wsd_predict(train_v, [e.sense for e in data.train], [e.lemma for e in data.train], test_v,
                            [e.lemma for e in data.test])
    correct = sum(p == e.sense for p, e in zip(predicted, data.test))
    print(f"{correct} of {len(data.test)} test sentences right ({correct / len(data.test):.1%}): compare the "
          "library's on the same vectors below, course-bert's 'mean of L3-L6'")
except NotImplementedError:
    print("Write sense_centroids, nearest_sense and wsd_predict above, then run this cell again.")

# %% [markdown] slideshow={"slide_type": "fragment"}
# The library's `NearestSenseWSD` does the same (each word choosing only among its own senses), and gives the
# **most-frequent-sense** (MFS) baseline: always the sense seen most often in training, whatever the context.
# Now the three models, layer by layer (your prediction of section 2 is answered here):

# %%
# claim: wsd-by-layer
from course_lib.embeddings import choose_layer, wsd_by_layer

wsd = {name: wsd_by_layer(S.senses[is_train], data.train, S.senses[~is_train], data.test)
       for name, S in states.items()}
# the layer is chosen on the training sentences (leave-one-out), never on the test sentences it is then scored on
chosen = {name: choose_layer(S.senses[is_train], data.train) for name, S in states.items()}  # {layer: accuracy}
mfs = wsd[COURSE][0].mfs_accuracy
for name in MODEL_NAMES:
    per = [r for r in wsd[name] if isinstance(r.layers, int)]
    last4 = next(r for r in wsd[name] if r.layers == "last4_mean")
    pick = next(iter(chosen[name]))
    print(f"{name:17s} " + " ".join(f"L{r.layers} {r.accuracy:.1%}" for r in per) + f" | mean of L3-L6 {last4.accuracy:.1%}")
    print(f"{'':17s} leave-one-out on the training sentences: " + " ".join(
        f"L{l} {chosen[name][l]:.1%}" for l in range(L + 1)) + f" -> chosen L{pick}, test {per[pick].accuracy:.1%}")
print(f"most frequent sense: {mfs:.1%} ({len(data.test)} test sentences)")

# how sure are the gaps? both sides answered the same test sentences: a paired bootstrap over them
from course_lib.stats import mean_gap

for name in MODEL_NAMES:
    per = [r for r in wsd[name] if isinstance(r.layers, int)]
    first, second = (per[l] for l in list(chosen[name])[:2])  # the training sentences' first and second choice
    print(f"{name:17s} chosen L{first.layers} minus second choice L{second.layers}: "
          f"{mean_gap(first.correct, second.correct)}; minus MFS: {mean_gap(first.correct, first.mfs_correct)}")

# %%
fig, ax = plt.subplots(figsize=(7.5, 4))
for (name, colour, marker) in zip(MODEL_NAMES, ["#0072B2", "#009E73", "#999999"], "os^"):
    per = [r for r in wsd[name] if isinstance(r.layers, int)]
    ax.plot([r.layers for r in per], [100 * r.accuracy for r in per], marker + "-", color=colour, label=name)
ax.axhline(100 * mfs, color="#D55E00", ls="--", label="most frequent sense")
ax.set_xticks(range(L + 1), [f"L{l}" for l in range(L + 1)])
ax.set_xlabel("layer (L0 = embedding output)")
ax.set_ylabel("test accuracy (%)")
ax.set_ylim(0, 100)
ax.set_title(f"nearest-centroid WSD, {len(data.test)} test sentences of {len(data.lemmas)} words")
ax.legend(loc="lower right")
fig.tight_layout()

# %% [markdown] slideshow={"slide_type": "fragment"}
# - **L0 knows the word but not the context**: no model beats MFS there. course-bert's embeddings started as
#   MiniLM's and moved only a little in its MLM training, so the two score alike at L0.
# - **Each block adds context**: both trained models climb far above MFS, about 40 points at L6 (course-bert 38,
#   MiniLM 42); the mean of the last four layers is a little worse than L6 alone here (about 3 points).
# - **Which layer?** Choosing the layer with the highest test accuracy and then measuring it on the same test
#   sentences would flatter it. So each model's layer is chosen on the *training* sentences alone (leave-one-out: each
#   training sentence classified by centroids computed without it), and only that layer is scored on the test
#   sentences. Both trained models choose L6, which also has their highest test accuracy. How sure is its lead? The
#   last lines compare it with the training sentences' second choice on the 523 test sentences, which both layers
#   answered (a paired bootstrap): MiniLM's L6 beats L4 by an interval above 0; course-bert's lead over L5 is about
#   two points, an interval that reaches below 0, so for course-bert read "best at L5-L6".
# - **The random encoder is about level with MFS**, never above it at any layer; at the layer its training sentences
#   choose (L4) it is about a point below, an interval of roughly −7 to +4 points: it rules out 10 points either way,
#   not a few. Why it cannot do
#   better is the point: its blocks pass each token's own
#   (random) embedding through almost unchanged (section 5 measures it: the same token's vectors at L0 and L6
#   keep a cosine near 0.9), so two instances of a word differ mostly by their positions. Context is learnt,
#   not built in. MFS itself is weak here
#   (41.9%): our words' senses have similar shares of these sentences (the everyday sense a few more), where in running text one sense usually
#   dominates and MFS is a strong baseline.
#
# ELMo's **learned scalar mix** $\gamma\sum_j s_j \mathbf{h}_j$ with $s = \text{softmax}(w)$ lets the data choose
# the layer weights; here it is fitted for course-bert on the WSD training sentences:

# %%
# claim: scalar-mix
from course_lib.embeddings import NearestSenseWSD, accuracy, fit_scalar_mix

train_S, test_S = S_course[is_train], S_course[~is_train]
mix = fit_scalar_mix(train_S, data.train, steps=50)
with torch.no_grad():
    mixed = NearestSenseWSD().fit(mix(train_S), data.train)
    mix_acc = accuracy(mixed.predict(mix(test_S), [e.lemma for e in data.test]), [e.sense for e in data.test])
weights = mix.weights.tolist()
pick = next(iter(chosen[COURSE]))
print("learned layer weights:", "  ".join(f"L{l} {w:.2f}" for l, w in enumerate(weights)),
      f"(uniform would be {1 / (L + 1):.2f})")
print(f"largest weight: L{max(range(L + 1), key=weights.__getitem__)}; test accuracy {mix_acc:.1%} "
      f"(the layer leave-one-out chose, L{pick}: {wsd[COURSE][pick].accuracy:.1%})")

# %% [markdown] slideshow={"slide_type": "fragment"}
# What these weights are, honestly: they are fitted for *this* objective (each training sentence's softmax over
# the cosines to its word's sense centroids, at temperature 0.05; 50 Adam steps from equal weights) on the
# training sentences only — not ELMo's weights, which are learnt with each downstream task's own model. And they
# do not blend: the mix puts almost all its weight on one layer, the one leave-one-out chose too, and so reaches
# that layer's test accuracy, no more. Here the learned mix *selects* a layer. (γ scales all vectors alike, so it
# changes no cosine and no prediction.)
#
# The senses are a fixed list, and eq. 11.9 always picks one of them, even when none fits: a nearest-centroid
# classifier has no "none of these". What gives such a case away is **how high the best bar is**, not the margin
# between the bars. The reference: each training sentence's cosine to its own sense's centroid (computed without
# it), of which 95% are above a line (their 5th percentile). Here with all-MiniLM-L6-v2 and the mean of L3-L6, as in
# the widget below; the *die* of the sense data is a game cube or a metal-cutting tool, never the verb nor the
# German article:

# %%
# claim: wsd-floor
from course_lib.embeddings import typical_floor, word_states

train_m, test_m = (combine_layers(states[MINILM].senses[split], "last4_mean") for split in (is_train, ~is_train))
nearest = NearestSenseWSD().fit(train_m, data.train)
floor = typical_floor(train_m, data.train)  # 95% of the training sentences reach this cosine with their own sense


def best_and_margin(vector, lemma):
    first, second = nearest.scores(vector, lemma)[:2]
    return first.cosine, first.cosine - second.cosine, first.sense


on_test = torch.tensor([best_and_margin(v, e.lemma)[:2] for v, e in zip(test_m, data.test)])  # (best, margin) each
print(f"the line: {floor:.3f}; test sentences whose best cosine is below it: {(on_test[:, 0] < floor).float().mean():.0%}, "
      f"median margin {on_test[:, 1].median():.3f}")
for text, word, lemma in [("Roll the die again.", "die", "die"), ("Many trees will die.", "die", "die"),
                          ("Die Bank ist geschlossen.", "Die", "die"), ("Ich sitze auf der Bank im Park.", "Bank", "bank")]:
    best, margin, sense = best_and_margin(combine_layers(word_states(model, tokenizer, text, word), "last4_mean"), lemma)
    print(f"{text:32s} {word}: {sense}, best cosine {best:.3f}, {'below' if best < floor else 'above'} the line; "
          f"margin {margin:.3f} (test sentences with a margin this small or smaller: "
          f"{(on_test[:, 1] <= margin).float().mean():.0%})")

# %% [markdown] slideshow={"slide_type": "fragment"}
# The verb in *Many trees will die.* and the German article in *Die Bank ist geschlossen.* fall below the line; a
# real die in *Roll the die again.* is far above it. Their margins would not have told: the German article's is
# as small as that of about a third of the real test sentences. The line catches a use that is far from every
# sense, not one that resembles a wrong sense: the German *Bank* (a bench) of *Ich sitze auf der Bank im Park.* lands
# on the river bank, above the line.
#
# **Nearest-neighbour WSD.** Type a sentence, pick the target word: the bars are the cosines to each
# sense centroid of that word (with WordNet's glosses), the dashed line the 5th percentile above, and below are the
# training sentences nearest to your word (all-MiniLM-L6-v2). When even the best bar stays left of the line, the
# widget says that no sense may fit.

# %% slideshow={"slide_type": "subslide"}
from course_lib.widgets import NearestSenseExplorer

NearestSenseExplorer(model, tokenizer, data, states={"mean": states[MINILM].senses},
                     sentence="The fisherman pulled his boat onto the bank before the storm.", word="bank")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. Anisotropy, rogue dimensions and z-scoring
#
# Ethayarajh (2019) measured the **anisotropy** of a layer as the expected cosine between the
# vectors of two random tokens of a corpus: 0 when vectors point every which way, near 1 when they
# all share one direction — then every cosine is high and says little.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise `anisotropy`
# Write `anisotropy_estimate(X, n_pairs=10000, generator=None)`: the mean cosine of `n_pairs` random
# pairs of **different** rows of X (N, d). Pass `generator` to every random call, and leave torch's global
# generator as it was (no `torch.manual_seed`).

# %% tags=["exercise"]
def anisotropy_estimate(X, n_pairs=10000, generator=None):
    """Expected cosine of two different random rows of X (Ethayarajh 2019)."""
    ### BEGIN SOLUTION
    i = torch.randint(len(X), (n_pairs,), generator=generator)
    j = (i + torch.randint(1, len(X), (n_pairs,), generator=generator)) % len(X)
    Xn = F.normalize(X, dim=-1)
    return (Xn[i] * Xn[j]).sum(-1).mean().item()
    ### END SOLUTION


# %%
check("anisotropy")

# %% [markdown] slideshow={"slide_type": "fragment"}
# Timkey & van Schijndel (2021) found one cause in a few **rogue dimensions** with a huge mean and
# variance: they dominate every dot product (below we find them by their share of the expected cosine, which
# their large mean gives them). The cure is to **standardize** each dimension — subtract its mean and
# divide by its standard deviation σ (the chapter's text says "the variance", but eq. 11.11-11.12 divide by σ) — with
# statistics of a corpus C: $\boldsymbol{\mu} = \frac{1}{|C|}\sum_{\mathbf{x} \in C} \mathbf{x}$
# (eq. 11.10), $\boldsymbol{\sigma} = \sqrt{\frac{1}{|C|}\sum_{\mathbf{x} \in C}(\mathbf{x}-\boldsymbol{\mu})^2}$
# (eq. 11.11), $\mathbf{z} = (\mathbf{x}-\boldsymbol{\mu})/\boldsymbol{\sigma}$ (eq. 11.12).

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise `z_score`
# Write `z_score(X, corpus, eps=1e-6)`: fit μ and σ (the population standard deviation, dividing by
# |C|) on `corpus` (N, d) and return (X − μ) / σ for X (M, d). A dimension whose σ ≤ eps is
# constant over the corpus: set it to 0 instead of dividing by (almost) zero.

# %% tags=["exercise"]
def z_score(X, corpus, eps=1e-6):
    """Eq. 11.10-11.12 with statistics from `corpus`; zero-variance dimensions become 0."""
    ### BEGIN SOLUTION
    mu = corpus.mean(0)
    sigma = ((corpus - mu) ** 2).mean(0).sqrt()
    ok = sigma > eps
    return torch.where(ok, (X - mu) / torch.where(ok, sigma, torch.ones_like(sigma)), torch.zeros_like(X))
    ### END SOLUTION


# %%
check("z_score")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise `anisotropy_by_layer`
# Put the two together. Write `anisotropy_by_layer(scored, fitted, n_pairs=10000, generator=None)`: `scored`
# (N, L + 1, d) and `fitted` (M, L + 1, d) are the vectors of two *different* sets of tokens at every layer.
# Return a list with one pair `(raw, z_scored)` per layer, L0 first: the anisotropy estimate of the scored
# tokens, and that of the scored tokens z-scored with μ and σ fitted on the **fitted** tokens of the same layer.
# (Why not fit on the scored tokens themselves? Then the z-vectors average exactly 0 and the result proves
# nothing about tokens the statistics have not seen.)

# %% tags=["exercise"]
def anisotropy_by_layer(scored, fitted, n_pairs=10000, generator=None):
    """[(raw, z-scored anisotropy)] per layer; μ, σ of each layer fitted on the other tokens, `fitted`."""
    ### BEGIN SOLUTION
    out = []
    for layer in range(scored.size(1)):
        X = scored[:, layer]
        out.append((anisotropy_estimate(X, n_pairs, generator),
                    anisotropy_estimate(z_score(X, fitted[:, layer]), n_pairs, generator)))
    return out
    ### END SOLUTION


# %%
check("anisotropy_by_layer")

# %% [markdown] slideshow={"slide_type": "fragment"}
# Yours, on 2,000 of course-bert's held-out tokens (scored) and 2,000 others (fitted):

# %%
try:
    mine = anisotropy_by_layer(states[COURSE].scored[:2000], states[COURSE].fitted[:2000],
                               generator=torch.Generator().manual_seed(0))
    print("  ".join(f"L{l} {raw:.2f} → {z:+.3f}" for l, (raw, z) in enumerate(mine)))
except NotImplementedError:
    print("Write anisotropy_estimate, z_score and anisotropy_by_layer above, then run this cell again.")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Prediction `most_anisotropic`
# Which model's **last layer (L6)** is the most anisotropic on the held-out text: `"course-bert"`,
# `"all-MiniLM-L6-v2"` or `"random init"`? Set `most_anisotropic`, run `check`, and only then read on.

# %% tags=["exercise"]
### BEGIN SOLUTION
most_anisotropic = "random init"
### END SOLUTION

# %%
check("most_anisotropic")

# %% [markdown] slideshow={"slide_type": "fragment"}
# The library's `layer_geometry` does the same with 20,000 pairs, and also measures the **rogue dimensions**:
# each dimension i contributes $E[\hat u_i]^2$ to the expected cosine (û = x/‖x‖), and the *top-3 share* is the
# part of the anisotropy carried by the three largest contributions. We call those three *rogue* only when they carry
# at least 30% of it (`ROGUE_SHARE`; if all 384 dimensions shared alike, three would carry under 1%). It also takes
# z-scoring apart: **μ removed** subtracts the fitted mean only, without dividing by σ, and the last row compares the
# *order* of the same 20,000 pairs' cosines with μ removed and z-scored (Spearman ρ; 1 if dividing by σ reorders no
# pair).

# %%
# claim: geometry
from course_lib.embeddings import layer_geometry

geometry = {name: layer_geometry(S.scored, S.fitted) for name, S in states.items()}
for name in MODEL_NAMES:
    g = geometry[name]
    print(f"{name}")
    print("   raw          " + "  ".join(f"L{l} {v:.3f}" for l, v in enumerate(g.anisotropy)))
    print("   μ removed    " + "  ".join(f"L{l} {v:+.3f}" for l, v in enumerate(g.centred)))
    print("   z-scored     " + "  ".join(f"L{l} {v:+.3f}" for l, v in enumerate(g.zscored)))
    print("   same order   " + "  ".join(f"L{l} {v:.2f}" for l, v in enumerate(g.same_order)))
    print("   top-3 share  " + "  ".join(f"L{l} {v:.2f}" for l, v in enumerate(g.top_share)))
    m = g.most_anisotropic()
    print(f"   at L{m} (the most anisotropic layer): {g.top_label(m)}")
    X = states[name].scored
    print(f"   the same token at L0 and L{L}: mean cosine "
          f"{float(torch.nn.functional.cosine_similarity(X[:, 0], X[:, L], dim=-1).mean()):.2f}")

# %%
fig, (ax, ax2) = plt.subplots(1, 2, figsize=(13, 4.4))
for (name, colour, marker) in zip(MODEL_NAMES, ["#0072B2", "#009E73", "#999999"], "os^"):
    g = geometry[name]
    ax.plot(range(L + 1), g.anisotropy, marker + "-", color=colour, label=f"{name}, raw")
    ax.plot(range(L + 1), g.zscored, marker + ":", color=colour, alpha=0.7, label=f"{name}, z-scored")
    ax2.plot(range(L + 1), g.top_share, marker + "-", color=colour, label=name)
for a in (ax, ax2):
    a.set_xticks(range(L + 1), [f"L{l}" for l in range(L + 1)])
    a.set_xlabel("layer (L0 = embedding output)")
ax.axhline(0, color="black", lw=0.6)
ax.set_ylabel("anisotropy (mean cosine of token pairs)")
ax.set_title("anisotropy per layer, held-out English tokens")
ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=3, fontsize=8)
from course_lib.embeddings.geometry import ROGUE_SHARE

ax2.axhline(ROGUE_SHARE, color="black", lw=0.8, ls="--", label=f"rogue from here ({ROGUE_SHARE:.0%})")
ax2.set_ylabel("share of the expected cosine")
ax2.set_ylim(0, 1)
ax2.set_title("the top 3 dimensions' share (rogue above the line)")
ax2.legend(loc="upper right", fontsize=9)
fig.tight_layout()

# %% [markdown] slideshow={"slide_type": "fragment"}
# What this shows, model by model:
#
# - **course-bert (MLM)** rises with depth from 0.04 at L0 to 0.20 at L4, then *drops* to 0.16 at L5 and 0.07
#   at L6 — not a steady rise, and far below the chapter's "quite close to 1" for the final layer of BERT or other
#   models (in Ethayarajh's measurements the closest to 1 is GPT-2's) and the
#   rise to about 0.6 that Ethayarajh's (2019) Fig. 1 shows for bert-base (course-bert is 6 layers deep, its MLM
#   run saw about 110 times fewer tokens than BERT-base's pretraining, and it started from a contrastively trained
#   model: see below; its model card gives the same numbers). From L0 to L5 three rogue dimensions carry 45-65% of the expected cosine; at L6 the top three carry about an
#   eighth, too little to call them rogue — there the anisotropy is spread over many dimensions.
# - **all-MiniLM-L6-v2 (contrastive)** starts a little higher at L0 (0.06; course-bert's embeddings started as
#   MiniLM's and its MLM training moved them) and rises to L5, but its **last layer is nearly isotropic**. That is
#   not what the chapter reports for BERT's last layer. It fits its last training stage: contrastive
#   sentence-embedding training, on a billion sentence pairs, pushes the (mean-pooled last-layer) vectors of
#   unrelated sentences apart, a pressure to spread vectors out (Gao et al. 2021 make the same point for SimCSE),
#   though this notebook does not show that the training caused it.
# - **random init** is the most anisotropic at every layer, for a plain reason: every token of a one-sentence
#   input adds the *same* segment embedding. At random initialisation the word, position and segment embeddings
#   are three random vectors of the same size, so two tokens share about a third of their vector, and the
#   expected cosine is about 1/3 — at every layer, since random blocks mostly pass the residual stream
#   through: the same token's vectors at L0 and L6 have a mean cosine near 0.9 in the random encoder, about 0.3 in
#   the trained ones (printed above). That shared direction is spread over all dimensions: no rogue dimensions (top-3 share below 0.1).
#   Training replaces this accidental direction by learned ones.
# - **z-scoring** (μ, σ from the *other* held-out tokens) brings every layer of every model to 0.02 or less. But
#   subtracting μ alone does the same: the "μ removed" row is within 0.01 of the z-scored one at every layer of every
#   model. The drop in the mean cosine comes from removing μ, not from dividing by σ, and it is mostly by
#   construction: once the mean vector is subtracted, two random tokens' expected cosine is near 0 whatever the
#   dimensions do. What dividing by σ changes is *which pairs* come out as similar: in the trained models the order of
#   the same pairs' cosines, μ removed vs z-scored, has a Spearman ρ of only 0.80-0.97 (1.00 in the random encoder,
#   where σ reorders next to nothing). Whether z-scoring's order of pairs is closer to human judgments than the raw
#   order is section 6's question.
#
# **Anisotropy and z-scoring.** Choose a model and slide through the layers: the histogram of pair cosines,
# raw and z-scored (with the other tokens' μ and σ), and each of the 384 dimensions' part of the mean cosine,
# $(E[\hat u_i])^2$ — the parts add up to it — with the three largest marked, called rogue only when they carry 30%
# or more. Every model's statistics are computed when the widget is built.

# %% slideshow={"slide_type": "slide"}
from course_lib.widgets import AnisotropyExplorer

AnisotropyExplorer({name: S.scored for name, S in states.items()}, fit_states={name: S.fitted for name, S in states.items()},
                   corpus_name="held-out English text", layer=5)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The geometry while MLM training runs
#
# A geometry is a property of a training stage, not of "MLM" once and for all. course-bert's training script
# measured the anisotropy of every layer on held-out text each time it evaluated the model
# (`losses.json` in its folder; 2,000 tokens each time, so the values differ a little from the table above).
# Left: each line is one evaluation, from the fresh MLM head (dark) to the end of the run (light), the shipped
# checkpoint thick; the dashed line is a *schematic* of bert-base's profile in Ethayarajh's (2019) Fig. 1 — its
# shape and rough level, not his measured numbers — on its own 12-layer depth (top axis). Right: the held-out MLM
# loss and the anisotropy of the last layer along the run. Step 0 is all-MiniLM-L6-v2 with a fresh MLM head:
# course-bert did not start from random weights.

# %%
# claim: geometry-during-training
import json

from course_lib.checkpoints import shipped_model_dir
from course_lib.views.geometry_training import (ETHAYARAJH_BERT_BASE, draw_geometry_during_training,
                                                geometry_summary)

curve = json.loads((shipped_model_dir(COURSE) / "losses.json").read_text())
summary = geometry_summary(curve)
print(f"evaluations at steps {summary['steps']}")
print(f"held-out MLM loss: {summary['first_loss']:.2f} at step 0 -> {summary['final_loss']:.2f} at step "
      f"{summary['final_step']}")
start = min(curve["evaluations"], key=lambda r: r["step"])
print(f"L{summary['n_blocks']} anisotropy: {start['anisotropy'][-1]:.2f} at step 0, highest {summary['last_layer_peak']:.2f} at step "
      f"{summary['last_layer_peak_step']} (loss {summary['loss_at_last_layer_peak']:.2f}); at the end "
      f"{summary['final_last_layer']:.2f}")
print("at step 0, per layer:   " + "  ".join(f"L{l} {v:.2f}" for l, v in enumerate(start["anisotropy"])))
print("moved by the run:       " + "  ".join(f"L{l} {b - a:+.2f}" for l, (a, b) in
                                           enumerate(zip(start["anisotropy"], summary["final_anisotropy"]))))
print("at the end, per layer: " + "  ".join(f"L{l} {v:.2f}" for l, v in enumerate(summary["final_anisotropy"])))

# %%
draw_geometry_during_training(curve, reference=ETHAYARAJH_BERT_BASE)

# %% [markdown] slideshow={"slide_type": "fragment"}
# The run tells the story the chapter's single number hides. At the first evaluation after the fresh MLM head
# starts learning (step 100, loss still 6.2 nats), the last layer's anisotropy jumps from 0.03 to 0.27: plausibly
# the fresh head's first gradients pushing every token's output the same way, towards what predicts frequent
# tokens, though this run does not measure why. As
# the model learns to use the context (loss 3.9 by step 1,000, 3.06 at the end of the run, step 12,000), that
# transient fades and the last layer settles at 0.08; the profile that remains rises from L0 to L4 and falls in
# the top layers. But most of that profile is **inherited**: course-bert began as all-MiniLM-L6-v2, and L1-L4 end
# within 0.03 of where they started. What the MLM run changed is the top — L5 fell from 0.24 to 0.16, L6 rose
# from 0.03 to 0.08. So, measured honestly on a model this small, this briefly trained and not trained from
# scratch:
#
# - **reproduced**: contextual vectors are anisotropic — every layer above L0 has a clearly positive mean cosine —
#   and more so in the middle layers than at the embeddings; a few rogue dimensions carry much of it (L0-L5);
#   z-scoring with other tokens' statistics brings the mean cosine to about 0 (eq. 11.10-11.12), though subtracting
#   μ alone does that just as well, so this does not show what dividing by σ adds;
# - **not reproduced**: the *size* of bert-base's anisotropy and its rise in the upper layers (about 0.6 in the
#   schematic). This run cannot say what MLM alone does to a model's geometry, since it started from a
#   contrastively trained one; what it does show is that the top layers' anisotropy *spiked* when the fresh head
#   began to learn and fell back within the first 1,000 steps (L5 crept up again afterwards, still below where it
#   began), so a high value early in a run says nothing about a trained model.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Word similarity: cosine vs human judgments
#
# WordSim-353 and SimLex-999 (shipped with gensim) give human similarity scores for word pairs
# (*tiger–cat* 7.35 of 10). We embed each word on its own, take the cosine of each pair, and report
# Spearman's ρ with the human scores at every layer — raw, and z-scored (eq. 11.10-11.12) two ways: with the μ and
# σ of the held-out *tokens* of section 5 (words in running text), and with those of 1,000 *other words*, each
# embedded on its own as the pairs' words are (the most frequent words of the held-out text that are in neither
# set). (SimLex-999 scores *similarity*, not relatedness: *coffee–cup* is related but not similar.)

# %%
# claim: similarity
from course_lib.embeddings import similarity_by_layer, zscoring_gain_by_layer

print(f"z-scoring of isolated words fitted on {len(other_words)} other words: {', '.join(other_words[:6])}, … "
      f"(none of the {len(sim_words)} words of the pairs)")
for name in MODEL_NAMES:
    zscorers = {"tokens": geometry[name].zscorers, "words": word_z[name]}
    for set_name, p in pairs.items():
        raw = similarity_by_layer(states[name].words, sim_words, p)
        print(f"{name:17s} {set_name:10s} raw        " + " ".join(f"{v:+.3f}" for v in raw))
        for how, zs in zscorers.items():
            z = similarity_by_layer(states[name].words, sim_words, p, zs)
            change = [b - a for a, b in zip(raw, z)]
            line = (f"{'':28s} z, {how:6s}  " + " ".join(f"{v:+.3f}" for v in z)
                    + f"   raises ρ at {sum(c > 0 for c in change)} of {L + 1} layers, "
                    f"changes it by {min(change):+.3f} to {max(change):+.3f}")
            if name != RANDOM:  # how sure is each change? a paired bootstrap over the pairs
                gains = zscoring_gain_by_layer(states[name].words, sim_words, p, zs)
                line += (f"; clearly up at {sum(g.low > 0 for g in gains)}, clearly down at "
                         f"{sum(g.high < 0 for g in gains)} (L6: {gains[L]})")
            print(line)

# %% [markdown] slideshow={"slide_type": "fragment"}
# (Columns are L0 … L6.) What the numbers say:
#
# - Both trained models correlate with the human scores (ρ about 0.7 on WordSim-353, 0.4-0.5 on SimLex-999)
#   already at L0 — a word on its own is what a static embedding is — and deeper layers do not raise ρ much: MiniLM's
#   stays about level (within 0.03), course-bert's falls after L1 (WordSim-353: 0.70 at L1, 0.62 at L6).
#   The random encoder's ρ is weak everywhere: within 0.05 of 0 on SimLex-999 (a standard error of about 0.03
#   for 999 pairs) and within 0.15 on WordSim-353 (about 0.05 for 353 pairs), where its largest values lie two to
#   three standard errors from 0 — small, mostly negative, and on one set only: its vectors carry no meaning the
#   human scores see.
# - **z-scoring needs statistics of the same kind of vector.** A word embedded on its own (`[CLS] word [SEP]`) is
#   not a token of running text, and its vectors have a mean and spread of their own. With the tokens' μ and σ,
#   z-scoring moves WordSim-353's ρ by a few hundredths either way (0.02 at most for MiniLM, −0.04 to +0.03 for
#   course-bert), and a paired bootstrap over the pairs (the last numbers of each line: how many layers' changes
#   have a 95% interval above or below 0) finds most of MiniLM's within noise, and course-bert's clear ones going
#   both ways, more of them down: with the wrong statistics, z-scoring is no reliable help.
#   With the other isolated words' μ and σ, it raises WordSim-353's ρ at **every** layer for course-bert, clearly
#   at only some of them, most in the top layers (L6: 0.62 → 0.70, an interval well above 0), so most of the
#   top-layer fall is gone; for MiniLM the changes are 0.02 or less.
# - **On SimLex-999, which scores similarity alone, it mostly hurts.** SimLex-999's ρ goes *down* at most layers
#   for both models, with either statistics, by about 0.05 or less, clearly so at three or more layers of seven;
#   the one clear rise is course-bert's L6 with the other words' statistics. WordSim-353 mixes similarity with relatedness
#   (Agirre et al. 2009 split it in two), so "z-scoring helps" holds here on that mixed set, for course-bert, with
#   statistics fitted on vectors like the ones compared — not in general.
# - The chapter's other caution stands, and z-scoring does not address it: cosine underestimates the similarity
#   of very frequent words (Zhou et al. 2022). Cosine of contextual vectors is a useful but rough proxy for human
#   similarity judgments.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The same word in two contexts
#
# §11.3.2's own use of the cosine is between two *instances*: the same word in two sentences. The sense-labelled
# sentences of section 4 give pairs of instances of one ambiguous word, in the same sense or in two different
# senses. Per layer: the mean cosine of each kind of pair, and the **AUC**, the chance that a same-sense pair has
# the higher cosine of a same-sense and a different-sense pair *of the same word* (0.5: no better than a coin;
# pairs of different words are never compared, since a word whose instances all look alike would then pass for
# one whose senses differ); raw, and z-scored with the held-out tokens' μ and σ — the right statistics here,
# since these are words in running text.

# %%
# claim: in-context
from course_lib.embeddings import auc_change, in_context_similarity, same_word_pairs

_, _, same_sense = same_word_pairs(data.examples)
print(f"{len(same_sense):,} pairs of sentences that share their ambiguous word, {int(same_sense.sum()):,} of them "
      "in the same sense")
in_context = {}
for name in MODEL_NAMES:
    raw = in_context_similarity(states[name].senses, data.examples)
    z = in_context_similarity(states[name].senses, data.examples, geometry[name].zscorers)
    in_context[name] = (raw, z)
    print(f"{name}")
    print("   same sense      " + "  ".join(f"L{l} {r.same:.2f}" for l, r in enumerate(raw)))
    print("   other senses    " + "  ".join(f"L{l} {r.different:.2f}" for l, r in enumerate(raw)))
    print("   AUC             " + "  ".join(f"L{l} {r.auc:.2f}" for l, r in enumerate(raw)))
    print("   AUC, z-scored   " + "  ".join(f"L{l} {r.auc:.2f}" for l, r in enumerate(z)))
    print("   z-scoring moves " + " ".join(f"L{l} {b.auc - a.auc:+.3f}" for l, (a, b) in enumerate(zip(raw, z))))
    # is the move more than noise? a paired bootstrap over the words (the pairs of one word hang together)
    moves = [auc_change(a, b) for a, b in list(zip(raw, z))[1:]]
    print(f"   95% interval, {len(raw[0].word_weight)} words: " + "  ".join(f"L{l} [{g.low:+.3f}, {g.high:+.3f}]"
                                                      for l, g in enumerate(moves, 1)))

# %%
fig, ax = plt.subplots(figsize=(7.5, 4))
for (name, colour, marker) in zip(MODEL_NAMES, ["#0072B2", "#009E73", "#999999"], "os^"):
    raw, z = in_context[name]
    ax.plot(range(L + 1), [r.auc for r in raw], marker + "-", color=colour, label=f"{name}, raw")
    ax.plot(range(L + 1), [r.auc for r in z], marker + ":", color=colour, alpha=0.7, label=f"{name}, z-scored")
ax.axhline(0.5, color="black", lw=0.6, ls="--", label="a coin (AUC 0.5)")
ax.set_xticks(range(L + 1), [f"L{l}" for l in range(L + 1)])
ax.set_xlabel("layer (L0 = embedding output)")
ax.set_ylabel("AUC: same-sense pair more similar")
ax.set_ylim(0.45, 0.75)
ax.set_title("the same word in two sentences: does the cosine see the sense?")
ax.legend(loc="upper left", fontsize=8, ncol=2)
fig.tight_layout()

# %% [markdown] slideshow={"slide_type": "fragment"}
# What the pairs say:
#
# - At L0 no model tells the senses apart (AUC 0.51): the word's own embedding is the same in every sentence
#   (unless its form differs, *bank* and *banks*), and only its position differs.
# - In both trained models, same-sense pairs are the more similar at every layer above L0, and the AUC rises with
#   depth: course-bert's layer by layer to 0.67 at L6, MiniLM's to 0.67-0.68 from L4 on. The random encoder stays
#   at about 0.51: its vectors carry no meaning to compare.
# - Yet every cosine is high: in course-bert at L4, 0.78 for the same sense and 0.74 for different senses. Two
#   instances of a word look alike whatever they mean — the word itself is in both vectors, and so is the
#   anisotropy of section 5 — and the sense adds a few hundredths. An AUC of 0.67 ranks a same-sense pair of a
#   word above a different-sense pair of it two times in three. That is a harder test than section 4's, where a vector is compared
#   with a centroid, the average of many sentences of each sense; here it meets one other sentence.
# - z-scoring with the matching statistics raises the AUC of both trained models at every layer above L0, a
#   little (by 0.02 or less, at L6 by less than 0.01) but clearly: each 95% interval, from resampling the 30 words,
#   lies above 0. Comparing words in running text, with running text's statistics, it helps slightly.

