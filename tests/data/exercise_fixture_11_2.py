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
# # Exercise fixture: the four exercises of notebook 11.2, solved
#
# Used by tests/test_exercises_11_2.py, independent of the real notebook.

# %% tags=["setup"]
import torch
import torch.nn.functional as F

from course_lib.exercises import check

# %% [markdown]
# ### Exercise `mlm_masking`: 15% selected; 80% [MASK], 10% random, 10% unchanged (§11.2.1)

# %% tags=["exercise"]
def mask_tokens(input_ids, special_ids, mask_token_id, unigram, select_prob=0.15, generator=None):
    """MLM corruption, §11.2.1. Returns (corrupted_ids (B, T), labels (B, T))."""
    ### BEGIN SOLUTION
    eligible = ~torch.isin(input_ids, torch.tensor(sorted(special_ids)))
    selected = eligible & (torch.rand(input_ids.shape, generator=generator) < select_prob)
    labels = torch.where(selected, input_ids, torch.full_like(input_ids, -100))
    fate = torch.rand(input_ids.shape, generator=generator)
    corrupted = input_ids.clone()
    masked = selected & (fate < 0.8)
    randomized = selected & (fate >= 0.8) & (fate < 0.9)
    corrupted[masked] = mask_token_id
    n_random = int(randomized.sum())
    if n_random:
        corrupted[randomized] = torch.multinomial(unigram, n_random, replacement=True, generator=generator)
    return corrupted, labels
    ### END SOLUTION


# %%
check("mlm_masking")

# %% [markdown]
# ### Exercise `mlm_loss`

# %% tags=["exercise"]
def masked_lm_loss(logits, labels):
    """L_MLM: cross-entropy averaged over positions whose label is not -100."""
    ### BEGIN SOLUTION
    keep = labels != -100
    return F.cross_entropy(logits[keep], labels[keep])
    ### END SOLUTION


# %%
check("mlm_loss")

# %% [markdown]
# ### Exercise `nsp_input`

# %% tags=["exercise"]
def build_nsp_input(ids_a, ids_b, cls_id, sep_id):
    """[CLS] A [SEP] B [SEP] and its segment ids."""
    ### BEGIN SOLUTION
    input_ids = [cls_id] + list(ids_a) + [sep_id] + list(ids_b) + [sep_id]
    token_type_ids = [0] * (len(ids_a) + 2) + [1] * (len(ids_b) + 1)
    return input_ids, token_type_ids
    ### END SOLUTION


# %%
check("nsp_input")

# %% [markdown]
# ### Exercise `language_sampling` (eq. 11.7)

# %% tags=["exercise"]
def language_probs(p, alpha):
    """Eq. 11.7: q_i = p_i^α / Σ_j p_j^α."""
    ### BEGIN SOLUTION
    p = torch.as_tensor(p, dtype=torch.float64)
    p = p / p.sum()
    q = p ** alpha
    return q / q.sum()
    ### END SOLUTION


# %%
check("language_sampling")
