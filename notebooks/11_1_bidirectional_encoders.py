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
# # 11.1 Bidirectional transformer encoders
#
# A causal (decoder-only) transformer computes the representation of token *i* from tokens
# 1…*i* only. A **bidirectional encoder** lets every token look at the whole input, left
# *and* right (Fig. 11.1). It does not generate text; it turns a sequence of input embeddings
# $\mathbf{x}_1 \dots \mathbf{x}_N$ into contextual embeddings $\mathbf{y}_1 \dots \mathbf{y}_N$
# of the same length, useful for tagging, classification and much more.
#
# In this notebook:
# 1. self-attention from scratch on a toy input (eq. 11.1-11.6), then on a pretrained model;
# 2. causal vs bidirectional attention on the same sentence, and padding masks;
# 3. multi-head attention: splitting and merging heads;
# 4. the transformer block, checked against the pretrained model;
# 5. how many parameters a BERT has;
# 6. why inputs stop at 512 tokens: the quadratic cost;
# 7. the **attention explorer**, to look at any layer and head.
#
# Four exercises are graded: run `check("…")` after each one.

# %% tags=["setup"]
import math

import matplotlib.pyplot as plt
import torch

import course_lib
import course_lib.model.attention as A
from course_lib.exercises import check

torch.set_printoptions(precision=3, sci_mode=False)
model, tokenizer = course_lib.load_pretrained()  # all-MiniLM-L6-v2: 6 layers, d = 384, 12 heads

# %% [markdown]
# ## 1. Self-attention from scratch
#
# Each input vector $\mathbf{x}_i$ is projected into three roles (eq. 11.1):
# a **query** $\mathbf{q}_i = \mathbf{W^Q}\mathbf{x}_i$, a **key** $\mathbf{k}_i = \mathbf{W^K}\mathbf{x}_i$
# and a **value** $\mathbf{v}_i = \mathbf{W^V}\mathbf{x}_i$. Packing the N inputs as rows of
# $\mathbf{X}$, all projections are three matrix products (eq. 11.5).
#
# Our toy input: five tokens of *So long and thanks for …* with random 4-dimensional embeddings.

# %%
course_lib.seed_everything(0)
words = ["so", "long", "and", "thanks", "for"]
N, d = len(words), 4
X = torch.randn(N, d)                                   # (N, d): one row per token
W_Q, W_K, W_V = (torch.randn(d, d) for _ in range(3))
Q, K, V = X @ W_Q, X @ W_K, X @ W_V                     # eq. 11.5, each (N, d)
Q.shape, K.shape, V.shape

# %% [markdown]
# Every query is compared with every key by a dot product, $\text{score}_{ij} = \mathbf{q}_i\cdot\mathbf{k}_j$
# (eq. 11.4). $\mathbf{QK}^\mathsf{T}$ computes all $N \times N$ comparisons at once (Fig. 11.2).
# Dividing by $\sqrt{d_k}$ keeps the scores from growing with the dimension.

# %%
scores = Q @ K.T / math.sqrt(d)                          # (N, N)
scores

# %% [markdown]
# A softmax over each **row** turns the scores of query *i* into weights $\alpha_{ij}$ that are
# positive and sum to 1 (eq. 11.3); the output $\mathbf{y}_i$ is the weighted sum of the values
# (eq. 11.2). Together: $\text{SelfAttention}(\mathbf{Q},\mathbf{K},\mathbf{V}) =
# \text{softmax}\left(\frac{\mathbf{QK}^\mathsf{T}}{\sqrt{d_k}}\right)\mathbf{V}$ (eq. 11.6).

# %%
alpha = scores.softmax(dim=-1)                           # (N, N), each row sums to 1
Y = alpha @ V                                            # (N, d)
alpha.sum(dim=-1), Y.shape

# %% [markdown]
# `course_lib.model.attention.attention` does the same and returns the output, the raw scores and the weights:

# %%
out = A.attention(Q, K, V)
torch.allclose(out.output, Y, atol=1e-6), torch.allclose(out.weights, alpha, atol=1e-6)

# %% [markdown]
# ### Exercise `attention`: scaled dot-product attention
# Write `scaled_dot_product_attention(Q, K, V, mask=None)` returning `(output, weights)`.
# `Q` is (…, T_q, d_k), `K` is (…, T_k, d_k), `V` is (…, T_k, d_v): it must also work with
# leading batch and head dimensions. `mask` is a boolean tensor that is `True` where a query
# **may** attend to a key; masked positions must get weight exactly 0.
# Hint: `tensor.masked_fill(~mask, float("-inf"))` before the softmax.

# %% tags=["exercise"]
def scaled_dot_product_attention(Q, K, V, mask=None):
    """softmax(QKᵀ/√d_k) V, eq. 11.6. Returns (output (…, T_q, d_v), weights (…, T_q, T_k))."""
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
# ## 2. Causal vs bidirectional (Fig. 11.1)
#
# A causal model must not see the future: query *i* may only attend to keys $j \le i$. That is
# a lower-triangular **mask** over the $N \times N$ matrix. A bidirectional encoder simply leaves
# the mask out.

# %% [markdown]
# ### Exercise `causal_mask`
# Write `causal_mask(T)` returning a (T, T) boolean tensor that is `True` where query *i* may
# attend to key *j*, i.e. on and below the diagonal.

# %% tags=["exercise"]
def causal_mask(T):
    """(T, T) bool: True on and below the diagonal."""
    ### BEGIN SOLUTION
    return torch.ones(T, T, dtype=torch.bool).tril()
    ### END SOLUTION


# %%
check("causal_mask")

# %% [markdown]
# The library's version, applied to our toy input: the weights above the diagonal are exactly 0,
# so *so* learns nothing from *long*, while in the bidirectional case it draws on every word.

# %%
causal = A.attention(Q, K, V, mask=A.causal_mask(N))
causal.weights

# %% [markdown]
# Now the same sentence through the pretrained encoder, once bidirectionally (how it was trained)
# and once with a causal mask added in every layer. The mask changes every representation
# after the first token: this is exactly the information a left-to-right model does not have.

# %%
from course_lib.views.attention import attention_maps, draw_view, select_view

sentence = "So long and thanks for all the fish"
fig, axes = plt.subplots(1, 2, figsize=(10, 4.4))
for ax, is_causal in zip(axes, (False, True)):
    maps = attention_maps(model, tokenizer, sentence, causal=is_causal)
    w = maps.weights[1, 4]                               # layer 1, head 4: (T, T)
    im = ax.imshow(w, cmap="viridis", vmin=0, vmax=1)
    ax.set_xticks(range(len(maps.tokens)), maps.tokens, rotation=90)
    ax.set_yticks(range(len(maps.tokens)), maps.tokens)
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    ax.set_title(("causal" if is_causal else "bidirectional") + ": layer 1, head 4")
fig.colorbar(im, ax=axes, label="attention weight", shrink=0.8)

# %% [markdown]
# **Padding masks.** Sentences in a batch have different lengths; the tokenizer pads the short
# ones with `[PAD]` and returns `attention_mask` (1 = real token, 0 = padding). The encoder turns
# it into a key mask, so no real token attends to padding:

# %%
batch = tokenizer(["The bank is closed.", "We sat on the bank of the river all afternoon."])
with torch.no_grad():
    out = model(**batch, output_attentions=True)
pad_keys = batch.attention_mask[0] == 0
batch.tokens[0], out.attentions[0][0, :, :, pad_keys].abs().max()   # weight on padded keys: 0

# %% [markdown]
# ## 3. Multi-head attention
#
# A transformer layer runs H attention **heads** in parallel, each on its own slice of
# $d_h = d/H$ dimensions, so that different heads can track different relations. In practice the
# projections are computed once at full width d and then **split**: (B, T, d) → (B, H, T, d_h).
# After attention, the heads are **merged** back: (B, H, T, d_h) → (B, T, d), and $\mathbf{W^O}$
# mixes them.

# %% [markdown]
# ### Exercise `heads`
# Write `split_heads(X, n_heads)`: (B, T, d) → (B, H, T, d/H), where head *h* holds dimensions
# $h\,d_h \dots (h+1)\,d_h - 1$ of every token, and `merge_heads(X)`: (B, H, T, d_h) → (B, T, H·d_h),
# its inverse. Hint: `view`, then `transpose`.

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
# Shapes inside the pretrained model (d = 384, H = 12, so d_h = 32):

# %%
enc = tokenizer("Mt. Sanitas is in Sunshine Canyon.")
x = model.embeddings(enc.input_ids, enc.token_type_ids)          # (1, T, 384)
q = A.split_heads(model.encoder.layer[0].attention.self.query(x), 12)
x.shape, q.shape, A.merge_heads(q).shape

# %% [markdown]
# ## 4. The transformer block (Fig. 11.3)
#
# Each of BERT's layers is the same block: multi-head attention, a residual connection and layer
# norm, then a two-layer feed-forward network with its own residual connection and layer norm:
#
# $\mathbf{h} = \text{LayerNorm}(\mathbf{x} + \mathbf{W^O}\,\text{MultiHead}(\mathbf{x}))$,
# $\quad\mathbf{y} = \text{LayerNorm}(\mathbf{h} + \mathbf{W_2}\,\text{GELU}(\mathbf{W_1}\mathbf{h}))$
#
# Written out with the first layer's own weights, it reproduces the model's output for layer 1:

# %%
block = model.encoder.layer[0]
att = block.attention.self
with torch.no_grad():
    q, k, v = (A.split_heads(proj(x), 12) for proj in (att.query, att.key, att.value))
    heads = A.attention(q, k, v).output                                   # (1, 12, T, 32)
    h = block.attention.output.LayerNorm(x + block.attention.output.dense(A.merge_heads(heads)))
    ffn = block.output.dense(torch.nn.functional.gelu(block.intermediate.dense(h)))
    y = block.output.LayerNorm(h + ffn)                                   # (1, T, 384)
    layer1 = model(**enc, output_hidden_states=True).hidden_states[1]
torch.allclose(y, layer1, atol=1e-5)

# %% [markdown]
# ## 5. How many parameters?
#
# The chapter quotes about 110M parameters for BERT-base (30,000-token vocabulary, d = 768,
# 12 layers of 12 heads) and about 550M for XLM-RoBERTa large (250,000 tokens, d = 1024,
# 24 layers of 16 heads). Where do they sit? Counting by building each model on PyTorch's
# `meta` device (no memory is allocated):

# %%
from course_lib.model.bert import BertConfig, parameter_count

bert_base = BertConfig()   # the defaults are BERT-base
xlmr_large = BertConfig(vocab_size=250002, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                        intermediate_size=4096, max_position_embeddings=514, type_vocab_size=1)
for name, cfg in [("BERT-base", bert_base), ("XLM-R large", xlmr_large), ("all-MiniLM-L6-v2", model.config)]:
    print(f"{name:18s} {parameter_count(cfg) / 1e6:7.1f}M parameters")

# %% [markdown]
# The embedded model's count from its config agrees with the weights actually stored in its checkpoint:

# %%
from course_lib.checkpoints import embedded_model_dir, read_state_dict

stored = sum(t.numel() for k, t in read_state_dict(embedded_model_dir()).items() if not k.endswith("position_ids"))
stored, model.num_parameters(), parameter_count(model.config)

# %% [markdown]
# ### Exercise `param_count`
# Write `bert_parameter_count(config)` that computes the number of parameters of a BERT **from
# the config alone**: embeddings (word, position, segment, and their LayerNorm), each layer
# (query, key, value and output projections with biases, two LayerNorms, the two feed-forward
# layers), and the pooler (one d × d layer with bias). Fields: `vocab_size`, `hidden_size`,
# `num_hidden_layers`, `intermediate_size`, `max_position_embeddings`, `type_vocab_size`.

# %% tags=["exercise"]
def bert_parameter_count(config):
    """Parameters of BertModel(config): embeddings + L layers + pooler."""
    ### BEGIN SOLUTION
    d, V, L = config.hidden_size, config.vocab_size, config.num_hidden_layers
    d_ff = config.intermediate_size
    embeddings = (V + config.max_position_embeddings + config.type_vocab_size) * d + 2 * d
    attention = 4 * (d * d + d) + 2 * d
    feed_forward = (d * d_ff + d_ff) + (d_ff * d + d) + 2 * d
    pooler = d * d + d
    return embeddings + L * (attention + feed_forward) + pooler
    ### END SOLUTION


# %%
check("param_count")

# %% [markdown]
# ## 6. Why 512 tokens? The quadratic cost
#
# Self-attention compares every token with every other: the score matrix has $N^2$ entries per
# head. Doubling the input length makes that matrix four times larger, in time and in memory.
# Measured here for one layer's 12 heads (d_h = 64, as in BERT-base):

# %%
from course_lib.model.cost import attention_cost

points = attention_cost(lengths=(32, 64, 128, 256, 512), repeats=5)
for p in points:
    print(f"N = {p.n:4d}: {p.seconds * 1e3:7.2f} ms, peak memory {p.peak_bytes / 2**20:6.1f} MiB")

# %%
ns = [p.n for p in points]
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
ax1.loglog(ns, [p.seconds * 1e3 for p in points], "o-", color="#0072B2", label="measured")
ax2.loglog(ns, [p.peak_bytes / 2**20 for p in points], "s-", color="#D55E00", label="measured")
for ax, first in ((ax1, points[-1].seconds * 1e3), (ax2, points[-1].peak_bytes / 2**20)):
    ax.loglog(ns, [first * (n / ns[-1]) ** 2 for n in ns], "--", color="grey", label="∝ N² (slope 2)")
    ax.set_xlabel("sequence length N (tokens)")
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.xaxis.set_minor_locator(plt.NullLocator())  # only the measured lengths on the x axis
    ax.legend()
ax1.set_ylabel("time per attention call (ms)")
ax2.set_ylabel("peak memory (MiB)")
ax1.set_title("time")
ax2.set_title("memory")
fig.tight_layout()

# %% [markdown]
# Memory follows the N² line closely. Time does too once N is large; for short inputs the fixed
# per-call overhead dominates. This is why BERT and XLM-R fix a maximum input of **512 subword
# tokens**; `course_lib`'s tokenizer refuses longer inputs, or cuts them with a warning if asked:

# %%
try:
    tokenizer("word " * 600)
except ValueError as err:
    print(err)

# %% [markdown]
# ## 7. The attention explorer
#
# Type a sentence, or two separated by `[SEP]`; pick a layer and a head ("all" shows the whole
# layer); switch between the raw scores $\mathbf{QK}^\mathsf{T}/\sqrt{d_k}$ and the softmax
# weights; add a causal mask. Choose a query and a key token to read one cell.
# Things to look for: heads that attend to the previous or next token (a diagonal just off the
# main one), heads that park attention on `[CLS]` or `[SEP]`, and, in sentence pairs, heads that
# connect the two sentences across the dashed boundary.

# %%
from course_lib.widgets import AttentionExplorer

AttentionExplorer(model, tokenizer, layer=2, head=3)
