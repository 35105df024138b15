# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Exercise fixture: the five exercises of notebook 11.3, solved
#
# Used by tests/test_exercises_11_3.py, independent of the real notebook.

# %% tags=["setup"]

import torch
import torch.nn.functional as F

from course_lib.exercises import check

# %% [markdown]
# ### Exercise `word_vector`: the mean of the last four layers over the word's subword tokens (§11.3.1)
#
# `hidden_states` is a tuple of L+1 tensors (T, d) (embeddings, then each layer) for ONE sentence; `word_ids` a
# list of T word indices (None for [CLS]/[SEP]), as the tokenizer's `Encoding.word_ids[0]`. Return the vector of
# word number `word`: average the last four layers, then average over the word's subword tokens.

# %% tags=["exercise"]
def word_vector(hidden_states, word_ids, word):
    """(d,): the last four layers averaged, then the word's subword tokens averaged."""
    ### BEGIN SOLUTION
    last4 = torch.stack(hidden_states[-4:]).mean(0)           # (T, d)
    idx = [t for t, w in enumerate(word_ids) if w == word]
    return last4[idx].mean(0)
    ### END SOLUTION


# %%
check("word_vector")

# %% [markdown]
# ### Exercise `sense_centroids` (eq. 11.8)
#
# `vectors` (N, d), `labels` a list of N sense labels. Return a dict {label: (d,) mean vector of that sense}.

# %% tags=["exercise"]
def sense_centroids(vectors, labels):
    """Eq. 11.8: {sense: the mean of the vectors labelled with that sense}."""
    ### BEGIN SOLUTION
    return {s: vectors[[i for i, l in enumerate(labels) if l == s]].mean(0) for s in dict.fromkeys(labels)}
    ### END SOLUTION


# %%
check("sense_centroids")

# %% [markdown]
# ### Exercise `nearest_sense` (eq. 11.9)
#
# `vector` (d,), `centroids` {label: (d,)}. Return the label whose centroid has the highest COSINE with the
# vector (not the smallest distance, not the dot product).

# %% tags=["exercise"]
def nearest_sense(vector, centroids):
    """Eq. 11.9: the label of the centroid of highest cosine."""
    ### BEGIN SOLUTION
    return max(centroids, key=lambda s: F.cosine_similarity(vector, centroids[s], dim=0).item())
    ### END SOLUTION


# %%
check("nearest_sense")

# %% [markdown]
# ### Exercise `z_score` (eq. 11.10-11.12)
#
# Fit μ and σ (population std, divide by |C|) on `corpus` (N, d), return (X − μ) / σ for X (M, d); dimensions with
# σ <= eps become 0.

# %% tags=["exercise"]
def z_score(X, corpus, eps=1e-6):
    """Eq. 11.10-11.12: z-scores of X with the corpus's mean and population std; 0 where σ <= eps."""
    ### BEGIN SOLUTION
    mu = corpus.mean(0)
    sigma = ((corpus - mu) ** 2).mean(0).sqrt()
    ok = sigma > eps
    return torch.where(ok, (X - mu) / torch.where(ok, sigma, torch.ones_like(sigma)), torch.zeros_like(X))
    ### END SOLUTION


# %%
check("z_score")

# %% [markdown]
# ### Exercise `anisotropy`: the expected cosine of two different random rows (Ethayarajh 2019)
#
# Estimate the expected cosine between two DIFFERENT randomly chosen rows of X (N, d) from `n_pairs` random pairs.
# Use `generator` (a torch.Generator) for every random draw.

# %% tags=["exercise"]
def anisotropy_estimate(X, n_pairs=10000, generator=None):
    """The mean cosine of n_pairs random pairs of different rows of X."""
    ### BEGIN SOLUTION
    i = torch.randint(len(X), (n_pairs,), generator=generator)
    j = (i + torch.randint(1, len(X), (n_pairs,), generator=generator)) % len(X)
    Xn = F.normalize(X, dim=-1)
    return (Xn[i] * Xn[j]).sum(-1).mean().item()
    ### END SOLUTION


# %%
check("anisotropy")
