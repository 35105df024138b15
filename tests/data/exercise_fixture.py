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
# # Exercise fixture: the four exercises of notebook 11.1, solved
#
# Used by tests/test_exercises.py and tests/test_make_student.py, independent of the real notebook.

# %% tags=["setup"]
import math

import torch

from course_lib.exercises import check

# %% [markdown]
# ### Exercise `attention`: scaled dot-product attention (eq. 11.1-11.6)

# %% tags=["exercise"]
def scaled_dot_product_attention(Q, K, V, mask=None):
    """softmax(QKᵀ/√d_k) V. Returns (output (…, T_q, d_v), weights (…, T_q, T_k))."""
    ### BEGIN SOLUTION
    scores = Q @ K.transpose(-2, -1) / math.sqrt(K.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    return weights @ V, weights
    ### END SOLUTION


# %%
check("attention")

# %% [markdown]
# ### Exercise `causal_mask`

# %% tags=["exercise"]
def causal_mask(T):
    """(T, T) bool: True on and below the diagonal."""
    ### BEGIN SOLUTION
    return torch.ones(T, T, dtype=torch.bool).tril()
    ### END SOLUTION


# %%
check("causal_mask")

# %% [markdown]
# ### Exercise `heads`

# %% tags=["exercise"]
def split_heads(X, n_heads):
    """(B, T, d) -> (B, H, T, d/H)."""
    ### BEGIN SOLUTION
    B, T, d = X.shape
    return X.view(B, T, n_heads, d // n_heads).transpose(1, 2)
    ### END SOLUTION


def merge_heads(X):
    """(B, H, T, d_h) -> (B, T, H·d_h)."""
    ### BEGIN SOLUTION
    B, H, T, dh = X.shape
    return X.transpose(1, 2).reshape(B, T, H * dh)
    ### END SOLUTION


# %%
check("heads")

# %% [markdown]
# ### Exercise `param_count`

# %% tags=["exercise"]
def bert_parameter_count(config):
    """Parameters of BertModel(config): embeddings + L layers + pooler."""
    ### BEGIN SOLUTION
    d, V, L, d_ff = config.hidden_size, config.vocab_size, config.num_hidden_layers, config.intermediate_size
    embeddings = (V + config.max_position_embeddings + config.type_vocab_size) * d + 2 * d
    attention = 4 * (d * d + d) + 2 * d
    feed_forward = (d * d_ff + d_ff) + (d_ff * d + d) + 2 * d
    pooler = d * d + d
    return embeddings + L * (attention + feed_forward) + pooler
    ### END SOLUTION


# %%
check("param_count")
