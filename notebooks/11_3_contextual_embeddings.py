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
# that lends money end up in different places. In this notebook:
#
# 1. word vectors from the encoder: which layer, and how subword tokens become one word vector;
# 2. word senses as clusters (Fig. 11.7), with UMAP;
# 3. word-sense disambiguation by the nearest sense centroid (eq. 11.8-11.9), layer by layer;
# 4. anisotropy, rogue dimensions and z-scoring (eq. 11.10-11.12);
# 5. word similarity against human judgments, raw and z-scored.
#
# Five exercises are graded with `check("…")`. Every number below is computed when the notebook runs.

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

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. A vector for a word in context
#
# The forward pass returns the embedding layer and the output of each of the L = 6 blocks
# (`hidden_states`, L + 1 tensors of shape (T, d)). Which one is "the" contextual embedding? The
# last layer is the usual answer; for BERT it is also common to **average or sum the last four
# layers** (§11.3.1). ELMo went further and *learned* a weighted mix of all layers.
#
# A word that WordPiece splits into several tokens needs one more step: **pool** its subword vectors,
# usually by their mean. `Encoding.word_ids` says which word every token belongs to:

# %%
enc = tokenizer("The unaffordable rent near the river bank shocked us.")
list(zip(enc.tokens[0], enc.word_ids[0]))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise `word_vector`
# Write `word_vector(hidden_states, word_ids, word)`: `hidden_states` is a tuple of L + 1 tensors
# (T, d) for **one** sentence (embeddings first), `word_ids` the T word indices (None for [CLS] and
# [SEP]). Return the (d,) vector of word number `word`: the mean of the last four layers, averaged
# over the word's subword tokens.

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
# Same word, two senses, three contexts — static (layer 0) vs contextual:

# %%
from course_lib.embeddings import combine_layers, target_states

texts = ["She deposited the cheque at the bank on Monday.",
         "The bank approved our loan this morning.",
         "We had a picnic on the grassy bank of the river."]
spans = [(t.index("bank"), t.index("bank") + 4) for t in texts]
S = target_states(model, tokenizer, texts=texts, spans=spans)  # (3, L+1, d)
print("token position of 'bank':", [tokenizer(t).tokens[0].index("bank") for t in texts])
for name, layers in [("embedding layer (static)", 0), ("last layer", "last"), ("mean of last four", "last4_mean")]:
    V = F.normalize(combine_layers(S, layers), dim=-1)
    print(f"{name:25s} cos(money, money) = {V[0] @ V[1]:.3f}   cos(money, river) = {V[0] @ V[2]:.3f}")

# %% [markdown] slideshow={"slide_type": "fragment"}
# At the embedding layer a token's vector is its word embedding plus its position and segment
# embeddings — nothing else. The first and third *bank* sit at the same position, so their vectors are
# identical (cosine 1) although they mean different things. After the blocks have attended to the
# context, the two financial banks are closer to each other than to the river bank.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. Word senses as clusters (Fig. 11.7)
#
# To see senses we need many labelled instances. No sense-annotated corpus (SemCor) installs
# offline, so this project wrote one: 30 ambiguous nouns, 2-4 WordNet senses each, 20-32 sentences
# per sense (see `course_lib/data/wsd/DATA_CARD.md`), split 75/25 by sentence.

# %%
from course_lib.embeddings.senses import load_sense_data

data = load_sense_data()
print(f"{len(data.lemmas)} words, {len(data.senses)} senses, {len(data.train)} training and {len(data.test)} test sentences")
for s in data.senses_of("die"):
    print(f"  {s.label:20s} {s.sense_key:16s} {s.gloss}")

# %% [markdown] slideshow={"slide_type": "fragment"}
# Every instance of every word, at every layer, in one pass (about 20 seconds on a CPU):

# %%
states = target_states(model, tokenizer, data.examples)      # (N, L+1, d)
is_train = torch.tensor([e.split == "train" for e in data.examples])
train_states, test_states = states[is_train], states[~is_train]
tuple(states.shape)

# %% [markdown] slideshow={"slide_type": "fragment"}
# UMAP squeezes the 384-dimensional vectors of one word into 2-D, keeping near neighbours near.
# Here is *die* — the textbook's example — at the embedding layer and at the last layer:

# %%
from course_lib.embeddings import umap_project
from course_lib.views.embeddings import OKABE_ITO

idx = [i for i, e in enumerate(data.examples) if e.lemma == "die"]
senses = [data.examples[i].sense for i in idx]
fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
for ax, layers in zip(axes, [0, "last"]):
    xy = umap_project(combine_layers(states[idx], layers)).coords
    for k, s in enumerate(dict.fromkeys(senses)):
        pts = xy[[j for j, t in enumerate(senses) if t == s]]
        ax.scatter(pts[:, 0], pts[:, 1], color=OKABE_ITO[k], marker="os^D"[k], label=s, alpha=0.85, edgecolor="white")
    ax.set_title("embedding layer (no context)" if layers == 0 else "last layer (in context)")
    ax.set_xlabel("UMAP dimension 1")
    ax.set_ylabel("UMAP dimension 2")
axes[1].legend(loc="best")
fig.suptitle("every instance of 'die' in the project's sentences")
fig.tight_layout()

# %% [markdown] slideshow={"slide_type": "fragment"}
# At the embedding layer the points group by *position* in the sentence (the only thing that differs);
# in the last layer they group by sense.
#
# **Sense clusters.** Choose a word, a layer and how subwords are pooled; hover a point to read its
# sentence, or pick a sentence in the list to ring its point. (Projections are cached, so going back
# to a setting is instant.)

# %%
from course_lib.widgets import SenseClusters

SenseClusters(model, tokenizer, data, states={"mean": states}, word="bank")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. Word-sense disambiguation by the nearest centroid (eq. 11.8-11.9)
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

# %% [markdown] slideshow={"slide_type": "fragment"}
# Your two functions, on the test sentences of *mouse*, with the mean of the last four layers:

# %%
tr = [(e, v) for e, v in zip(data.train, combine_layers(train_states, "last4_mean")) if e.lemma == "mouse"]
te = [(e, v) for e, v in zip(data.test, combine_layers(test_states, "last4_mean")) if e.lemma == "mouse"]
try:
    cents = sense_centroids(torch.stack([v for _, v in tr]), [e.sense for e, _ in tr])
    correct = sum(nearest_sense(v, cents) == e.sense for e, v in te)
    print(f"mouse: {correct} of {len(te)} test sentences right")
except NotImplementedError:
    print("Write sense_centroids and nearest_sense above, then run this cell again.")

# %% [markdown] slideshow={"slide_type": "fragment"}
# The library's `NearestSenseWSD` does this for all words, each choosing only among its own
# senses, and gives the **most-frequent-sense** (MFS) baseline: always the sense seen most often in
# training, whatever the context. Which layer is best?

# %%
from course_lib.embeddings import layer_name, wsd_by_layer

results = wsd_by_layer(train_states, data.train, test_states, data.test)
mfs = results[0].mfs_accuracy
for r in results:
    print(f"{layer_name(r.layers):16s} 1-NN {r.accuracy:6.1%}   (MFS {r.mfs_accuracy:.1%})")
best = max(results, key=lambda r: r.accuracy)

# %%
per_layer = [r for r in results if isinstance(r.layers, int)]
fig, ax = plt.subplots(figsize=(7, 3.6))
ax.plot([r.layers for r in per_layer], [100 * r.accuracy for r in per_layer], "o-", color="#0072B2",
        label="1-NN sense centroid (eq. 11.9)")
last4 = next(r for r in results if r.layers == "last4_mean")
ax.axhline(100 * last4.accuracy, color="#009E73", ls="-.", label="1-NN, mean of last four layers")
ax.axhline(100 * mfs, color="#D55E00", ls="--", label="most frequent sense")
ax.set_xticks(range(L + 1), ["emb"] + [str(l) for l in range(1, L + 1)])
ax.set_xlabel("layer")
ax.set_ylabel("test accuracy (%)")
ax.set_ylim(0, 100)
ax.set_title(f"WSD on {len(data.test)} test sentences of {len(data.lemmas)} words")
ax.legend(loc="lower right")
fig.tight_layout()
print(f"best: {layer_name(best.layers)}, {best.accuracy:.1%}: {100 * (best.accuracy - mfs):.0f} points above MFS")

# %% [markdown] slideshow={"slide_type": "fragment"}
# The embedding layer knows the word but not the context, so it can barely beat MFS; each block
# of attention adds context. How the subwords are pooled matters little for these words (most are
# single tokens). ELMo's **learned scalar mix** lets the data choose the layer weights:

# %%
from course_lib.embeddings import NearestSenseWSD, accuracy, fit_scalar_mix

mix = fit_scalar_mix(train_states, data.train, steps=100)
with torch.no_grad():
    wsd = NearestSenseWSD().fit(mix(train_states), data.train)
    acc = accuracy(wsd.predict(mix(test_states), [e.lemma for e in data.test]), [e.sense for e in data.test])
weights = mix.weights.tolist()
print("learned layer weights:", [f"{w:.2f}" for w in weights])
top = max(range(L + 1), key=lambda l: weights[l])
print(f"the mix puts {weights[top]:.0%} of its weight on {layer_name(top)}; test accuracy {acc:.1%} "
      f"(best single layer: {best.accuracy:.1%})")

# %% [markdown] slideshow={"slide_type": "fragment"}
# **Nearest-neighbour WSD.** Type a sentence, pick the target word: the bars are the cosines to each
# sense centroid of that word (with WordNet's glosses), and below are the training sentences nearest
# to your word.

# %%
from course_lib.widgets import NearestSenseExplorer

NearestSenseExplorer(model, tokenizer, data, states={"mean": states},
                     sentence="The fisherman pulled his boat onto the bank before the storm.", word="bank")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Anisotropy, rogue dimensions and z-scoring
#
# Ethayarajh (2019) measured the **anisotropy** of a layer as the expected cosine between the
# vectors of two random tokens of a corpus: 0 when vectors point every which way, near 1 when they
# all share one direction — then every cosine is high and says little. We measure it on the tokens
# of the Lee news corpus (shipped with gensim).

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise `anisotropy`
# Write `anisotropy_estimate(X, n_pairs=10000, generator=None)`: the mean cosine of `n_pairs` random
# pairs of **different** rows of X (N, d). Pass `generator` to every random call.

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

# %%
from course_lib.embeddings import corpus_states, lee_corpus

corpus = corpus_states(model, tokenizer, lee_corpus(), max_tokens=10000)  # (N tokens, L+1, d)
tuple(corpus.shape)

# %% [markdown] slideshow={"slide_type": "fragment"}
# Timkey & van Schijndel (2021) found the cause in a few **rogue dimensions** with a huge mean and
# variance: they dominate every dot product. The cure is to **standardize** each dimension with
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

# %% [markdown] slideshow={"slide_type": "fragment"}
# Anisotropy per layer, raw and z-scored, for the embedded model and for a **randomly initialised
# copy** of it (same architecture, no training):

# %%
from course_lib.embeddings import ZScorer, anisotropy, dimension_report

course_lib.seed_everything(0)
random_model = course_lib.BertModel(model.config).eval()
random_corpus = corpus_states(random_model, tokenizer, lee_corpus(), max_tokens=10000)
rows = []
for l in range(L + 1):
    X, R = corpus[:, l], random_corpus[:, l]
    rep = dimension_report(X)
    rows.append((l, anisotropy(X), anisotropy(ZScorer().fit(X)(X)), anisotropy(R), rep.rogue, rep.top_share()))
    print(f"{layer_name(l):11s} raw {rows[-1][1]:.3f}  z-scored {rows[-1][2]:+.4f}  random init {rows[-1][3]:.3f}   "
          f"rogue dims {rep.rogue} carry {rep.top_share():.0%} of the mean cosine")

# %%
fig, ax = plt.subplots(figsize=(7, 4.4))
ax.plot([r[0] for r in rows], [r[1] for r in rows], "o-", color="#0072B2", label="all-MiniLM-L6-v2, raw")
ax.plot([r[0] for r in rows], [r[2] for r in rows], "s--", color="#E69F00", label="all-MiniLM-L6-v2, z-scored")
ax.plot([r[0] for r in rows], [r[3] for r in rows], "^:", color="#999999", label="randomly initialised copy, raw")
ax.set_xticks(range(L + 1), ["emb"] + [str(l) for l in range(1, L + 1)])
ax.set_xlabel("layer")
ax.set_ylabel("anisotropy (mean cosine of token pairs)")
ax.axhline(0, color="black", lw=0.6)
ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=9)
ax.set_title("anisotropy per layer on the Lee news corpus")
fig.tight_layout()

# %% [markdown] slideshow={"slide_type": "fragment"}
# What this shows, honestly:
#
# - **The middle layers are anisotropic** — the textbook effect, driven by a few rogue dimensions
#   (the printout says how much of the mean cosine they carry).
# - **The last layer is nearly isotropic.** That is not what the chapter reports for BERT's last
#   layer, and it is not an accident: all-MiniLM-L6-v2 was trained, after pretraining, with a
#   *contrastive* sentence-embedding objective on a billion sentence pairs, which pushes unrelated
#   sentences' (mean-pooled last-layer) vectors apart — exactly what isotropy means. The layers it
#   changed least still show the pretraining geometry.
# - **The random copy** is anisotropic too, for a plain reason: every token of a one-sentence input
#   adds the *same* segment embedding (token type 0). With random initialisation the word, position
#   and segment embeddings are three random vectors of the same size, so any two tokens share about a
#   third of their vector, and the expected cosine is about 1/3 — at every layer, since random blocks
#   mostly pass the residual stream through. Training replaces this accidental direction by learned
#   ones (the rogue dimensions).
# - **z-scoring removes it everywhere**: after eq. 11.12 the expected cosine is about 0 at every layer.
#
# **Anisotropy and z-scoring.** Slide through the layers: the histogram of pair cosines, raw and
# z-scored, and the variance of each of the 384 dimensions with the rogue ones marked.

# %%
from course_lib.widgets import AnisotropyExplorer

AnisotropyExplorer(corpus, layer=4)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. Word similarity: cosine vs human judgments
#
# WordSim-353 and SimLex-999 (shipped with gensim) give human similarity scores for word pairs
# (*tiger–cat* 7.35 of 10). We embed each word on its own, take the cosine of each pair, and report
# Spearman's ρ with the human scores — raw, and z-scored with the corpus statistics of the same
# layer. (SimLex-999 scores *similarity*, not relatedness: *coffee–cup* is related but not similar.)

# %%
from course_lib.embeddings import isolated_word_states, similarity_correlation, similarity_pairs

for name in ("wordsim353", "simlex999"):
    pairs = similarity_pairs(name)
    words = sorted({w for a, b, _ in pairs for w in (a, b)})
    W = isolated_word_states(model, tokenizer, words)  # (n words, L+1, d)
    for l in (3, L):
        vecs = dict(zip(words, W[:, l]))
        raw = similarity_correlation(vecs, pairs)
        z = similarity_correlation(vecs, pairs, ZScorer().fit(corpus[:, l]))
        print(f"{name:10s} {layer_name(l):8s}  Spearman ρ raw {raw:.3f}   z-scored {z:.3f}")

# %% [markdown] slideshow={"slide_type": "fragment"}
# z-scoring fixes the *geometry* (anisotropy) but barely changes these rankings: Spearman's ρ depends
# only on the order of the cosines, which a shared offset shifts for all pairs alike. Words out of
# context are also not what the encoder was trained on; the chapter's caution stands — cosine
# similarity of contextual vectors is a rough proxy for human similarity judgments.
