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
# 2. causal vs bidirectional attention on the same sentence (from ELMo and GPT to BERT), what the causal mask
#    takes from each position, why an encoder is not trained to predict the next word, padding masks, and one
#    attention head built from its inputs;
# 3. multi-head attention: splitting and merging heads;
# 4. what limits BERT to 512 tokens (a prediction); the input representation and the transformer block, both
#    checked against the pretrained model; the whole encoder written from its weights (an exercise); what the
#    position embeddings are for (a prediction);
# 5. how many parameters a BERT has, and where they are;
# 6. what limits BERT to 512 tokens: the answer to the prediction of §4;
# 7. the **attention explorer**, to look at any block and head, or at all of them at once;
# 8. how one attention score is made, dimension by dimension (with a prediction).
#
# Six exercises and five predictions are graded: run `check("…")` after each one. A prediction is asked
# *before* the cell that reveals the answer: commit to one, then read on.
#
# Layers are counted as in every notebook: **L0 is the embedding output** (`hidden_states[0]`) and layer ℓ is
# the output of block ℓ (`hidden_states[ℓ]`), ℓ = 1 … 6. Python indexes the blocks themselves from 0:
# `model.encoder.layer[0]`, `attentions[0]` and `maps.weights[0]` belong to block 1, whose output is layer L1.
# Heads count from 0. The explorer lists the blocks as 1 … 6.

# %% tags=["setup"]
import math

import matplotlib.pyplot as plt
import torch

import course_lib
import course_lib.model.attention as A
from course_lib.exercises import check

torch.set_printoptions(precision=3, sci_mode=False)
model, tokenizer = course_lib.load_pretrained()  # all-MiniLM-L6-v2: 6 layers, d = 384, 12 heads

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. Self-attention from scratch
#
# Each input vector $\mathbf{x}_i$ is projected into three roles (eq. 11.1):
# a **query** $\mathbf{q}_i = \mathbf{W^Q}\mathbf{x}_i$, a **key** $\mathbf{k}_i = \mathbf{W^K}\mathbf{x}_i$
# and a **value** $\mathbf{v}_i = \mathbf{W^V}\mathbf{x}_i$. Packing the N inputs as rows of
# $\mathbf{X}$, all projections are three matrix products (eq. 11.5). (Eq. 11.1 treats $\mathbf{x}_i$ as a column;
# with the tokens as *rows* of $\mathbf{X}$, as in the code, the same projection reads $\mathbf{q}_i =
# \mathbf{x}_i\mathbf{W^Q}$ and $\mathbf{Q} = \mathbf{XW^Q}$: the matrix is transposed, nothing else changes.)
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

# %% [markdown] slideshow={"slide_type": "fragment"}
# Every query is compared with every key by a dot product, $\text{score}_{ij} = \mathbf{q}_i\cdot\mathbf{k}_j$
# (eq. 11.4). $\mathbf{QK}^\mathsf{T}$ computes all $N \times N$ comparisons at once (Fig. 11.2); the cell also
# divides them by $\sqrt{d}$, as eq. 11.6 does (why, just below).

# %%
scores = Q @ K.T / math.sqrt(d)                          # (N, N)
scores

# %% [markdown] slideshow={"slide_type": "fragment"}
# Why divide by $\sqrt{d_k}$? A dot product sums d_k products, so for random vectors (components of variance 1)
# its spread grows like $\sqrt{d_k}$, and such large scores push the softmax to put nearly all the weight on one
# key. A softmax that saturated has almost no gradient with respect to its scores, so the queries and keys would
# hardly learn: the reason Vaswani et al. (2017) give for the scaling. Divided by $\sqrt{d_k}$, the spread stays
# near 1 whatever the dimension. Measured on random queries, each compared with
# 8 random keys:

# %%
# claim: scaling
g = torch.Generator().manual_seed(0)
for d_k in (4, 64, 1024):
    qs, ks = torch.randn(2000, 1, d_k, generator=g), torch.randn(2000, 8, d_k, generator=g)
    dots = (qs * ks).sum(-1)                             # (2000, 8): each query against its 8 keys
    scaled = dots / math.sqrt(d_k)
    print(f"d_k = {d_k:4d}: spread (std) of q·k {dots.std():6.2f}, of q·k/√d_k {scaled.std():.2f}; "
          f"mean largest weight {dots.softmax(-1).max(-1).values.mean():.2f} unscaled, "
          f"{scaled.softmax(-1).max(-1).values.mean():.2f} scaled")

# %% [markdown] slideshow={"slide_type": "fragment"}
# A softmax over each **row** turns the scores of query *i* into weights $\alpha_{ij}$ that are
# positive and sum to 1 (eq. 11.3); the output $\mathbf{y}_i$ is the weighted sum of the values
# (eq. 11.2). Together: $\text{SelfAttention}(\mathbf{Q},\mathbf{K},\mathbf{V}) =
# \text{softmax}\left(\frac{\mathbf{QK}^\mathsf{T}}{\sqrt{d_k}}\right)\mathbf{V}$ (eq. 11.6).

# %%
# claim: softmax-rows
alpha = scores.softmax(dim=-1)                           # (N, N), each row sums to 1
Y = alpha @ V                                            # (N, d)
alpha.sum(dim=-1), Y.shape

# %% [markdown] slideshow={"slide_type": "fragment"}
# `course_lib.model.attention.attention` does the same and returns the output, the raw scores and the weights:

# %%
# claim: library-attention
out = A.attention(Q, K, V)
torch.allclose(out.output, Y, atol=1e-6), torch.allclose(out.weights, alpha, atol=1e-6)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise `attention`: scaled dot-product attention
# Write `scaled_dot_product_attention(Q, K, V, mask=None)` returning `(output, weights)`.
# `Q` is (…, T_q, d_k), `K` is (…, T_k, d_k), `V` is (…, T_k, d_v): it must also work with
# leading batch and head dimensions. `mask` is a boolean tensor that is `True` where a query
# **may** attend to a key, of any shape that broadcasts to the scores (…, T_q, T_k): a (T, T) causal mask, or
# (B, 1, T_k) to hide the same keys from every query of a text; masked positions must get weight exactly 0.
# Hint: a masked key needs a score that the softmax turns into a weight of exactly 0, whatever the other scores.

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

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. Causal vs bidirectional (Fig. 11.1)
#
# A causal model must not see the future: query *i* may only attend to keys $j \le i$. That is
# a lower-triangular **mask** over the $N \times N$ matrix. A bidirectional encoder simply leaves
# the mask out.
#
# **From ELMo and GPT to BERT** (the lecture slides). *ELMo* (Peters et al. 2018) reads a sentence with two
# LSTM language models, one left to right and one right to left, with separate LSTMs (trained together, sharing
# only the token representations and the softmax), and concatenates their states: each half of a vector has
# seen one side only, and the two sides never meet inside the network. (Its token representations come from a
# character CNN, and a task that uses ELMo learns its own weighted mix of the layers, the "scalar mix" of
# notebook 11.3.) *GPT* (Radford et al. 2018) is a
# 12-layer transformer trained left to right, to predict the next word: every token is conditioned on the
# tokens before it only. *BERT* (Devlin et al. 2019) is a transformer encoder whose every layer attends to both
# sides at once, jointly bidirectional; since that makes the next word visible, it is trained on other tasks
# (masked words, §11.2).

# %% [markdown] slideshow={"slide_type": "subslide"}
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

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Prediction `changes_least`
# Put the causal mask in every layer of the pretrained encoder and encode a sentence of T tokens both ways.
# Whose vector after block 1 (layer L1) moves **least** from its bidirectional one: the `"first"` position, a
# `"middle"` one, the `"last"`, or `"none"` (they all move alike)? Set `changes_least`, run `check`, and only
# then read on.

# %% tags=["exercise"]
### BEGIN SOLUTION
changes_least = "last"
### END SOLUTION

# %%
check("changes_least")

# %% [markdown] slideshow={"slide_type": "fragment"}
# Under the mask, position *i* keeps keys 0 … *i*: a share (i + 1)/T of the sentence. The library's mask on
# our toy input: every weight above the diagonal is exactly 0, so *so* draws on nothing but itself, while
# *for* may still attend to all five words.

# %%
# claim: causal-toy
from course_lib.model.context import causal_reach

causal = A.attention(Q, K, V, mask=A.causal_mask(N))
above = torch.ones(N, N, dtype=torch.bool).triu(1)
print("largest weight above the diagonal:", float(causal.weights[above].abs().max()))
for word, share in zip(words, causal_reach(N)):
    print(f"{word:>7s} may attend to {share:.0%} of the sentence")
causal.weights

# %% [markdown] slideshow={"slide_type": "fragment"}
# Now the same sentence through the pretrained encoder, once bidirectionally (how it was trained) and once with
# the causal mask added in every layer. First, one head's weights: the causal map keeps only the lower
# triangle.

# %%
from course_lib.views.attention import attention_maps

sentence = "So long and thanks for all the fish"
fig, axes = plt.subplots(1, 2, figsize=(10, 4.4), sharey=True)   # one row of query labels, on the left
for ax, is_causal in zip(axes, (False, True)):
    maps = attention_maps(model, tokenizer, sentence, causal=is_causal)
    w = maps.weights[1, 4]                               # block 2 (index 1), head 4: (T, T)
    im = ax.imshow(w, cmap="viridis", vmin=0, vmax=1)
    ax.set_xticks(range(len(maps.tokens)), maps.tokens, rotation=90)
    ax.set_yticks(range(len(maps.tokens)), maps.tokens)
    ax.set_xlabel("key (attended to)")
    ax.set_title(("causal" if is_causal else "bidirectional") + ": block 2, head 4")
axes[0].set_ylabel("query (attending)")
fig.colorbar(im, ax=axes, label="attention weight", shrink=0.8)

# %% [markdown] slideshow={"slide_type": "fragment"}
# What does the mask do to the vectors? `compare_causal` encodes the sentence both ways and measures, for every
# layer and position, how far the causal vector lies from the bidirectional one (‖h_causal − h_bidir‖ divided
# by ‖h_bidir‖; 0 means unchanged). The top panel is the share of keys each position keeps.

# %%
from course_lib.model.context import compare_causal, first_token_spread
from course_lib.views.causal import draw_causal_change

cmp = compare_causal(model, tokenizer(sentence))
cmp.change.shape  # (L0 + layers L1-L6, T tokens)

# %%
draw_causal_change(cmp)

# %%
# claim: causal-layer1
layer1 = cmp.layer_change(0)  # 0-based over the blocks: block 1, whose output is layer L1
print("layer 1, change per position:", " ".join(f"{t}={c:.3f}" for t, c in zip(cmp.tokens, layer1)))
print(f"layer 1, last position ({cmp.tokens[-1]}): change {float(layer1[-1])}, exactly 0: {bool(layer1[-1] == 0)}")
print(f"layer 1, smallest change among the other positions: {float(layer1[:-1].min()):.3g}")
print(f"layer 1, first position ({cmp.tokens[0]}): change {float(layer1[0]):.3g}; the largest is at "
      f"{cmp.tokens[int(layer1.argmax())]!r}: {float(layer1.max()):.3g}")
for block in range(1, cmp.num_layers):  # 0-based index: block + 1 is the block, and its output layer
    moved = cmp.layer_change(block)
    print(f"layer {block + 1}: smallest change {float(moved.min()):.3g}, last position {float(moved[-1]):.3g}")

# %% [markdown] slideshow={"slide_type": "fragment"}
# Read the numbers:
#
# * In **layer 1** (the output of the first block) the **last** position is exactly unchanged: it keeps every
#   key, and the keys and values it reads are still the bidirectional ones. Every other position changes.
# * The **first** position loses the most context (it keeps 1 key of T), yet its layer-1 vector is not the
#   one that moves most: how far a vector moves in one layer also depends on how much weight it had put on the
#   keys it lost and on what those keys carried. Losing context is better seen another way (next cell).
# * From layer 2 on, **every** position has moved, the last one included: its keys and values are now the
#   outputs of a masked block 1.
#
# The plot's `[CLS]` column is the puzzle: the position that keeps the fewest keys hardly moves until the last
# layer. Losing keys only matters for a position that was reading them. Where does the *bidirectional* `[CLS]`
# look, block by block (attention weights averaged over the 12 heads)?

# %%
# claim: causal-cls
with torch.no_grad():
    bidir = model(**tokenizer(sentence).to(model.device), output_attentions=True).attentions  # (1, H, T, T) per block
for block, weights in enumerate(bidir, start=1):
    to_self = float(weights[0, :, 0, 0].mean())
    print(f"block {block}: [CLS] attends to itself {to_self:.2f}, to the other tokens {1 - to_self:.2f}; "
          f"its change under the causal mask at layer L{block}: {float(cmp.change[block, 0]):.2f}")

# %% [markdown] slideshow={"slide_type": "fragment"}
# In blocks 2 to 5 the bidirectional `[CLS]` puts almost all its attention on itself, so the mask takes away
# keys it was not reading, and its vector stays put (a change of 0.03 or less). Block 6 is where it reads the
# sentence — half its attention goes to the other tokens — and there the mask costs it most: its change jumps
# to 0.66.
#
# Block 1 does not fit: there `[CLS]` puts 0.42 of its attention on the other tokens, yet its vector moves only
# 0.02. Where does the change go? A block adds two things to the vector it receives: the attention sublayer's
# output, then the feed-forward sublayer's (§4). `sublayer_changes` measures, for `[CLS]`, what the mask changes in
# the attention output (relative to the vector it is added to), how large the feed-forward output is, how much
# the mask changes it, and the block's output:

# %%
# claim: causal-sublayers
from course_lib.model.context import sublayer_changes

for r in sublayer_changes(model, tokenizer(sentence), position=0):
    print(f"block {r.block}: reads others {r.reads_others:.2f}; the mask changes the attention output by "
          f"{r.attention_change:.2f} of the input; feed-forward output {r.ffn_size:.2f} × its input, changed by "
          f"{r.ffn_change:.2f}; block output changed by {r.output_change:.2f}")

# %% [markdown] slideshow={"slide_type": "fragment"}
# In block 1 the mask does change what attention adds to `[CLS]`, by 0.69 of the vector it is added to, about as
# much as in block 6 (0.63). But block 1's feed-forward sublayer then adds a vector 6.62 times as long as its
# input, which the mask changes by only 0.04, and after the last layer norm that vector is most of `[CLS]`: the
# change is drowned. In block 6 the feed-forward output is smaller than its input (0.43 ×) and changes by 0.39,
# so the change goes through. How far a vector moves depends on what the position was reading, and on how much
# the rest of the block adds on top of it.
#
# Under the mask the first token attends only to itself, in every layer. So its vector cannot depend on the
# rest of the sentence at all. Compare the last-layer `[CLS]` vectors of three different sentences:

# %%
# claim: causal-first-token
others = [sentence, "Mt. Sanitas is in Sunshine Canyon.", "The bank raised its interest rates."]
spread_bidir = first_token_spread(model, tokenizer, others, causal=False)
spread_causal = first_token_spread(model, tokenizer, others, causal=True)
print(f"largest distance between the three [CLS] vectors: bidirectional {spread_bidir:.3f}, "
      f"causal {spread_causal:.2e}")

# %% [markdown] slideshow={"slide_type": "fragment"}
# Bidirectionally, the three `[CLS]` vectors differ; under the causal mask they are the same vector (up to
# rounding): the first token has lost all of its context.
#
# **A masked encoder is not a causal language model.** What we did here, adding a causal mask to a model that
# was *trained* bidirectionally, is an experiment on the model, not a way to get a left-to-right model out of
# it. The encoder learnt its weights reading both sides, never with a mask over the future (§11.2); under the mask
# it meets inputs it never saw in training, its vectors drift from the ones it was trained to produce, and it
# has no head trained to predict the next token. A causal language model (Chapter 10) is *trained* with the
# mask and the next-word objective from the start. How far do the vectors drift, layer by layer? On our
# sentence, and averaged over 40 sentences of movie reviews (one sentence cannot tell a trend from its accidents),
# with a bootstrap over those sentences for each layer's change:

# %%
# claim: causal-drift
from course_lib.finetuning.data import load_sentiment
from course_lib.stats import mean_gap
from course_lib.views.causal import layer_labels

drift_texts = [e.text for e in load_sentiment("test", n=40)]
per_sentence = torch.stack([compare_causal(model, tokenizer(t)).cosine.mean(dim=1) for t in drift_texts]).numpy()
mean_cos = cmp.cosine.mean(dim=1)  # (L+1,): our sentence, mean over its positions
for layer, (label, c) in enumerate(zip(layer_labels(cmp.num_layers), mean_cos)):
    line = (f"{label:>15s}: mean cosine(causal, bidirectional) = {c:.3f}; over {len(drift_texts)} sentences "
            f"{per_sentence[:, layer].mean():.3f}")
    if layer >= 2:
        step = per_sentence[:, layer] - per_sentence[:, layer - 1]
        line += f", change from the layer below {mean_gap(step)}"
    print(line)

# %% [markdown] slideshow={"slide_type": "fragment"}
# The drift grows with depth overall: over the 40 sentences the cosine falls from 0.99 at L1 to about 0.8 at
# L6, most of it in the last block. But not at every step: block 5 brings the vectors a little back toward the
# bidirectional ones (its change has an interval above 0), which our sentence alone does not show.

# %% [markdown]
# **Why an encoder is not trained to predict the next word.** Change only the last word of the sentence and
# encode both versions, bidirectionally and with the causal mask: how far does each earlier position's
# last-layer vector move?

# %%
# claim: next-word
other = "So long and thanks for all the bread"
one, two = tokenizer(sentence).to(model.device), tokenizer(other).to(model.device)  # on the model's device (CPU or GPU)
assert len(one.tokens[0]) == len(two.tokens[0])  # 'fish' and 'bread' are one token each
for is_causal in (False, True):
    with torch.no_grad():
        h1 = model(**one, causal=is_causal).last_hidden_state[0]
        h2 = model(**two, causal=is_causal).last_hidden_state[0]
    moved = ((h1 - h2).norm(dim=-1) / h1.norm(dim=-1))[:-2]   # every position before the changed word
    print(f"{'causal' if is_causal else 'bidirectional':>13s}: the first word '{one.tokens[0][1]}' moves "
          f"{float(moved[1]):.3g}; the largest move of a position before the changed word: {float(moved.max()):.3g}")

# %% [markdown] slideshow={"slide_type": "fragment"}
# Bidirectionally, the vector of *so*, seven words before *fish*, already depends on *fish*; under the causal mask
# no position before the changed word moves at all. That is why an encoder cannot be trained on next-word
# prediction (§11.2): without the mask, the vector at position *i* has read word *i* + 1, so predicting the next
# word from it is trivial, the answer is in the input; it would learn to copy, not to model language. BERT is
# trained to fill in masked words instead (notebook 11.2).
#
# **Padding masks.** Sentences in a batch have different lengths; the tokenizer pads the short
# ones with `[PAD]` and returns `attention_mask` (1 = real token, 0 = padding). The encoder turns
# it into a key mask, so no real token attends to padding:

# %%
# claim: padding
batch = tokenizer(["The bank is closed.", "We sat on the bank of the river all afternoon."]).to(model.device)
with torch.no_grad():
    out = model(**batch, output_attentions=True)
pad_keys = batch.attention_mask[0] == 0
print("largest weight on a padded key, any layer and head:",
      max(float(a[0, :, :, pad_keys].abs().max()) for a in out.attentions))
batch.tokens[0]

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise `self_attention`: one head, from the inputs to the outputs
# Put the pieces together. Write `single_head_self_attention(X, W_Q, W_K, W_V, causal=False,
# attention_mask=None)` returning `(output, weights)`:
#
# * `X` is a batch of input embeddings (B, T, d); `W_Q` and `W_K` are (d, d_k) and `W_V` is (d, d_v), so that
#   $\mathbf{Q} = \mathbf{XW^Q}$ as in eq. 11.5;
# * with `causal=True`, no token may attend to a later one;
# * `attention_mask` (B, T) is what the tokenizer returns (1 = real token, 0 = `[PAD]`): no query may attend
#   to a padded key, but a padded query still attends to the real keys;
# * `output` is (B, T, d_v) and `weights` (B, T, T).
#
# You may call your `scaled_dot_product_attention` and `causal_mask` from above: the work here is to get the
# projections and the two masks right, and to combine the masks so that a key is visible only if both allow it.

# %% tags=["exercise"]
def single_head_self_attention(X, W_Q, W_K, W_V, causal=False, attention_mask=None):
    """One attention head over a batch, with the optional causal and padding masks."""
    ### BEGIN SOLUTION
    B, T, _ = X.shape
    mask = torch.ones(B, T, T, dtype=torch.bool)
    if causal:
        mask = mask & causal_mask(T)
    if attention_mask is not None:
        mask = mask & attention_mask.bool()[:, None, :]   # hide padded keys, for every query
    return scaled_dot_product_attention(X @ W_Q, X @ W_K, X @ W_V, mask)
    ### END SOLUTION


# %%
check("self_attention")

# %% [markdown] slideshow={"slide_type": "fragment"}
# The library's `self_attention` does the same. On two toy sentences of 4 and 2 real tokens with the causal
# mask, the second sentence's queries never look at its two `[PAD]` keys, nor at any later token:

# %%
# claim: self-attention-toy
course_lib.seed_everything(1)
X2, W2 = torch.randn(2, 4, 6), [torch.randn(6, 3) for _ in range(3)]
pad = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
toy = A.self_attention(X2, *W2, causal=True, attention_mask=pad)
hidden = ~(A.causal_mask(4) & pad.bool()[:, None, :])   # (2, 4, 4): True where a key is hidden from a query
print("largest weight on a hidden key:", float(toy.weights[hidden].abs().max()))
toy.weights[1]

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. Multi-head attention
#
# A transformer layer runs H attention **heads** in parallel, each on its own slice of
# $d_h = d/H$ dimensions, so that different heads can track different relations. In practice the
# projections are computed once at full width d and then **split**: (B, T, d) → (B, H, T, d_h).
# After attention, the heads are **merged** back: (B, H, T, d_h) → (B, T, d), and $\mathbf{W^O}$
# mixes them.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise `heads`
# Write `split_heads(X, n_heads)`: (B, T, d) → (B, H, T, d/H), where head *h* holds dimensions
# $h\,d_h \dots (h+1)\,d_h - 1$ of every token, and `merge_heads(X)`: (B, H, T, d_h) → (B, T, H·d_h),
# its inverse. Hint: first cut each token's vector into H pieces (the tokens stay apart), then reorder the axes;
# merging undoes the two steps in the opposite order.

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

# %% [markdown] slideshow={"slide_type": "fragment"}
# Shapes inside the pretrained model (d = 384, H = 12, so d_h = 32):

# %%
# claim: head-shapes
enc = tokenizer("Mt. Sanitas is in Sunshine Canyon.").to(model.device)  # on the model's device (CPU or GPU)
x = model.embeddings(enc.input_ids, enc.token_type_ids)          # (1, T, 384)
q = A.split_heads(model.encoder.layer[0].attention.self.query(x), 12)
x.shape, q.shape, A.merge_heads(q).shape

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. The input, and the transformer block (Fig. 11.3)
#
# BERT and XLM-R read at most 512 subword tokens (§11.1). Before this section takes the input apart, predict what
# sets that limit for a BERT already trained (§6 gives the answer).

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Prediction `limit_512`
# What stops a trained BERT from reading a 513th token: `"the position table"`, `"the quadratic cost"` or
# `"the vocabulary"`?

# %% tags=["exercise"]
### BEGIN SOLUTION
limit_512 = "the position table"
### END SOLUTION

# %%
check("limit_512")

# %% [markdown] slideshow={"slide_type": "fragment"}
# **The input representation.** For a sentence pair the tokenizer puts `[CLS]` in front, a `[SEP]` after each
# sentence, and returns `token_type_ids`: 0 for the first segment (with `[CLS]` and the first `[SEP]`), 1 for the
# second (§11.2.2). The input vector of token *i* is three embeddings looked up and added, then layer-normalised:
#
# $\mathbf{x}_i = \text{LayerNorm}(\mathbf{E}_\text{tok}[w_i] + \mathbf{E}_\text{pos}[i] +
# \mathbf{E}_\text{seg}[s_i])$,
#
# with $w_i$ the token's id, *i* its position and $s_i$ its segment. Computed by hand from the model's three
# tables, it is the model's layer L0 (`hidden_states[0]`); without the LayerNorm it is not:

# %%
# claim: input-representation
pair_enc = tokenizer("The bank raised its interest rates.", "Savers were pleased.").to(model.device)
emb = model.embeddings
ids, segments = pair_enc.input_ids, pair_enc.token_type_ids
positions = torch.arange(ids.size(1), device=ids.device)
with torch.no_grad():
    summed = emb.word_embeddings(ids) + emb.position_embeddings(positions) + emb.token_type_embeddings(segments)
    x_pair = emb.LayerNorm(summed)                                           # (1, T, 384)
    layer0 = model(**pair_enc, output_hidden_states=True).hidden_states[0]
print(" ".join(f"{t}/{s}" for t, s in zip(pair_enc.tokens[0], segments[0].tolist())))
print("LayerNorm(E_tok[ids] + E_pos[:T] + E_seg[token_type_ids]) equals hidden_states[0]:",
      torch.allclose(x_pair, layer0, atol=1e-6))
print(f"the sum without the LayerNorm equals it: {torch.allclose(summed, layer0, atol=1e-6)} "
      f"(largest difference {float((summed - layer0).abs().max()):.2f})")

# %% [markdown] slideshow={"slide_type": "fragment"}
# Each token is printed with its segment: `[CLS]` and the first sentence's tokens are in segment 0, the second
# sentence's in segment 1, and the two `[SEP]` close each segment.
#
# **The block.**
# Each of BERT's layers is the same block: multi-head attention, a residual connection and layer
# norm, then a two-layer feed-forward network with its own residual connection and layer norm:
#
# $\mathbf{h} = \text{LayerNorm}(\mathbf{x} + \mathbf{W^O}\,\text{MultiHead}(\mathbf{x}))$,
# $\quad\mathbf{y} = \text{LayerNorm}(\mathbf{h} + \mathbf{W_2}\,\text{GELU}(\mathbf{W_1}\mathbf{h}))$
#
# (Here MultiHead is the heads' outputs joined side by side, and $\mathbf{W^O}$ mixes them, once; where
# MultiHead is defined with $\mathbf{W^O}$ inside, as in Vaswani et al. and chapter 10, it is not applied again.
# Every linear map also has a bias, left out of the formulas. These two equations put each matrix on the left of
# a column vector; the code, and the rest of this notebook, multiply row vectors on the right,
# $\mathbf{x}\mathbf{W}$: the same maps, transposed.)
#
# BERT's block is *post-LayerNorm*, LayerNorm(x + Sublayer(x)): the layer norm comes after each residual sum.
# Many later transformers (GPT-2 among them) are *pre-LayerNorm*, x + Sublayer(LayerNorm(x)), which trains more
# stably in deep stacks.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise `bert_encoder` (putting it together): BERT from its weights
# Write `bert_encoder(input_ids, token_type_ids, attention_mask, model)`: the list of the L + 1 hidden states
# `[L0, L1, …, L_L]`, each (B, T, d), of a **padded batch**, computed from the model's weights alone:
# `model.embeddings` (its three tables and its `LayerNorm`) and, for each `block` in `model.encoder.layer`,
# `block.attention.self.query`/`key`/`value` (with `.num_heads`), `block.attention.output.dense` and `.LayerNorm`,
# `block.intermediate.dense`, `block.output.dense` and `.LayerNorm`. Use your `split_heads`, `merge_heads` and
# `scaled_dot_product_attention`. Calling a block, or the model, as a whole is refused: the check runs your
# function on two small random BERTs of their own widths and head counts, with texts of different lengths.
#
# Hints: the attention mask says which *keys* are real; every head of every query must ignore the padding. Padding
# positions may hold anything finite in your output: only real tokens are compared. Make every tensor you create
# (the positions, say) on the device of `input_ids`: the check runs on the CPU, the embedded model may not.

# %% tags=["exercise"]
def bert_encoder(input_ids, token_type_ids, attention_mask, model):
    """[L0, L1, ..., L_L] of a padded batch, from the model's weights (eq. 11.1-11.6 and Fig. 11.3)."""
    ### BEGIN SOLUTION
    emb = model.embeddings
    positions = torch.arange(input_ids.size(1), device=input_ids.device)
    x = emb.LayerNorm(emb.word_embeddings(input_ids) + emb.position_embeddings(positions)
                      + emb.token_type_embeddings(token_type_ids))
    states = [x]
    real_keys = attention_mask.bool()[:, None, None, :]  # (B, 1, 1, T): for every head and every query
    for block in model.encoder.layer:
        att, out = block.attention.self, block.attention.output
        q, k, v = (split_heads(proj(x), att.num_heads) for proj in (att.query, att.key, att.value))
        heads, _ = scaled_dot_product_attention(q, k, v, real_keys)
        h = out.LayerNorm(x + out.dense(merge_heads(heads)))
        x = block.output.LayerNorm(h + block.output.dense(torch.nn.functional.gelu(block.intermediate.dense(h))))
        states.append(x)
    return states
    ### END SOLUTION


# %%
check("bert_encoder")

# %% [markdown] slideshow={"slide_type": "fragment"}
# The same two equations, checked on the embedded model: block 1 written out with its own weights
# (`model.encoder.layer[0]`) and the library's `split_heads`, `attention` and `merge_heads` reproduces the model's
# layer L1, the output of block 1 (`hidden_states[1]`), for the sentence of §3:

# %%
# claim: block
block = model.encoder.layer[0]
att = block.attention.self
with torch.no_grad():
    q, k, v = (A.split_heads(proj(x), 12) for proj in (att.query, att.key, att.value))
    heads = A.attention(q, k, v).output                                   # (1, 12, T, 32)
    h = block.attention.output.LayerNorm(x + block.attention.output.dense(A.merge_heads(heads)))
    ffn = block.output.dense(torch.nn.functional.gelu(block.intermediate.dense(h)))
    y = block.output.LayerNorm(h + ffn)                                   # (1, T, 384)
    layer1_output = model(**enc, output_hidden_states=True).hidden_states[1]
torch.allclose(y, layer1_output, atol=1e-5)

# %% [markdown] slideshow={"slide_type": "fragment"}
# Once your `bert_encoder` passes, run it on the embedded MiniLM itself, on two sentences of different lengths, and compare every
# layer with the model's own `hidden_states` at the real tokens:

# %%
batch = tokenizer(["The bank raised its interest rates.", "Savers were pleased."]).to(model.device)
try:
    with torch.no_grad():
        mine = bert_encoder(batch.input_ids, batch.token_type_ids, batch.attention_mask, model)
        theirs = model(**batch, output_hidden_states=True).hidden_states
    real = batch.attention_mask.bool()
    print("largest difference per layer, at the real tokens:",
          [f"{float((a[real] - b[real]).abs().max()):.1e}" for a, b in zip(mine, theirs)])
except NotImplementedError:
    print("write bert_encoder above to run your BERT on the embedded model")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Prediction `word_order`
# Take a copy of the model, set its whole position table $\mathbf{E}_\text{pos}$ to zero, and encode *the dog bit
# the man* and *the man bit the dog*. Their last-layer `[CLS]` vectors will be: `"identical, up to rounding"`,
# `"different, but close"` or `"very different"`? (Go through your `bert_encoder`: which of its steps could tell
# the two orders apart?)

# %% tags=["exercise"]
### BEGIN SOLUTION
word_order = "identical, up to rounding"
### END SOLUTION

# %%
check("word_order")

# %%
# claim: word-order
import copy

orderless = copy.deepcopy(model).eval()  # the same weights, but every position embedding set to zero
with torch.no_grad():
    orderless.embeddings.position_embeddings.weight.zero_()
pair, other = ("the dog bit the man", "the man bit the dog"), "a storm closed the airport"
for name, m in (("learned positions", model), ("positions zeroed", orderless)):
    with torch.no_grad():
        h1, h2, h3 = (m(**tokenizer(s).to(model.device)).last_hidden_state[0] for s in (*pair, other))
    cls_cos = float(torch.nn.functional.cosine_similarity(h1[0], h2[0], dim=0))
    print(f"{name:17s}: [CLS] cosine {cls_cos:.6f}, largest difference {float((h1[0] - h2[0]).abs().max()):.1e}; "
          f"'dog' (position 2, then 5): largest difference {float((h1[2] - h2[5]).abs().max()):.1e}")
    if m is model:
        print(f"{'':17s}  [CLS] cosine with '{other}': {float(torch.nn.functional.cosine_similarity(h1[0], h3[0], dim=0)):.2f}")
print(tokenizer(pair[0]).tokens[0], tokenizer(pair[1]).tokens[0])

# %% [markdown] slideshow={"slide_type": "fragment"}
# With the positions zeroed, the two `[CLS]` vectors are the same to the sixth decimal, and *dog* gets the same
# vector at position 2 as at position 5. Attention weighs every key by its content, wherever it stands, and the
# feed-forward network treats each position on its own: only $\mathbf{E}_\text{pos}$ says where a token is.
# Without it the encoder reads a **bag of words**, and who bit whom is lost in every layer. With the learned
# positions the vectors differ, though not by much: a cosine of about 0.99, where a sentence with other words
# is much further away (the cosine printed beside it). In this model, which words a sentence has moves its
# `[CLS]` vector far more than their order.
#
# What did the table learn? The cosine of every pair of its rows (the map shows the first 128; the means printed
# are over every row of the table):

# %%
# claim: position-rows
rows = torch.nn.functional.normalize(model.embeddings.position_embeddings.weight.detach().float().cpu(), dim=1)
cosines = rows @ rows.T  # (positions, positions)
for gap in (1, 3, 6, 9, 10, 12, 100):
    print(f"rows {gap:3d} apart: mean cosine {float(torch.diagonal(cosines, gap).mean()):.2f}")
fig, ax = plt.subplots(figsize=(4.6, 3.8))
image = ax.imshow(cosines[:128, :128], cmap="cividis", vmin=-1, vmax=1)
fig.colorbar(image, ax=ax, label="cosine")
ax.set(xlabel="position j", ylabel="position i", title="Cosine of the position embeddings\nE_pos[i] and E_pos[j]")
fig.tight_layout()

# %% [markdown] slideshow={"slide_type": "fragment"}
# A bright band along the diagonal: neighbouring positions have the most similar rows, and rows a hundred apart
# are far less alike — though the fall is not smooth. Fainter stripes run beside the diagonal: rows six apart are
# more alike than rows three apart, and rows twelve apart more than rows nine apart, as if part of the table
# oscillated with a period of about six positions. The original transformer's encodings are built from such
# waves by design (sines and cosines of wavelengths from 2π to 10,000·2π positions); this table is learnt.
# Nobody told this model that position 7 is near position 8; its code for *where* came out of training.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. How many parameters?
#
# BERT-base has a 30,522-token WordPiece vocabulary, d = 768 and 12 layers of 12 heads; BERT-large the same
# vocabulary, d = 1024 and 24 layers of 16 heads; XLM-RoBERTa large has 250,002 tokens, d = 1024 and 24 layers of
# 16 heads.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Prediction `bert_base_size`
# How many parameters does BERT-base have: `"10M"`, `"110M"`, `"340M"` or `"1B"`? (A d × d matrix of
# d = 768 holds 0.59M numbers.)

# %% tags=["exercise"]
### BEGIN SOLUTION
bert_base_size = "110M"
### END SOLUTION

# %%
check("bert_base_size")

# %% [markdown] slideshow={"slide_type": "fragment"}
# The chapter says "about 100M" parameters for BERT-base and "about 550M" for XLM-RoBERTa large; the slides say
# 110M for BERT-base and 340M for BERT-large. Counting by building each model on PyTorch's `meta` device (no
# memory is allocated):

# %%
# claim: parameter-counts
from course_lib.model.bert import BertConfig, parameter_count

bert_base = BertConfig()   # the defaults are BERT-base
bert_large = BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)
xlmr_large = BertConfig(vocab_size=250002, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                        intermediate_size=4096, max_position_embeddings=514, type_vocab_size=1)
configs = [("BERT-base", bert_base), ("BERT-large", bert_large), ("XLM-R large", xlmr_large),
           ("all-MiniLM-L6-v2", model.config)]
for name, cfg in configs:
    print(f"{name:18s} {parameter_count(cfg) / 1e6:7.1f}M parameters")

# %% [markdown] slideshow={"slide_type": "fragment"}
# So BERT-base has 109.5M parameters: the encoder with its pooler. As BERT was pretrained it also has the MLM
# head's transform and bias and the NSP head, 0.6M more: 110.1M, the count notebook 11.2 makes. The chapter's
# "about 100M" and the slides' "110M" are these numbers rounded two ways. Where are they? `parameter_breakdown` sums them by component:

# %%
# claim: parameter-breakdown
from course_lib.model.size import parameter_breakdown

parts = parameter_breakdown(bert_base)
total = sum(parts.values())
for part, n in parts.items():
    print(f"{part:28s} {n / 1e6:6.2f}M  {n / total:6.1%}")
print(f"{'total':28s} {total / 1e6:6.2f}M")

# %% [markdown] slideshow={"slide_type": "fragment"}
# Half of BERT-base is feed-forward weights (two d × 4d matrices per layer), a quarter is attention (four d × d
# matrices per layer), and a fifth is the word-embedding table alone; positions, segments, layer norms and
# the pooler are small change. XLM-R large's 250,002-token table (256M numbers at d = 1024) is why it is so much
# bigger than BERT-large with the same layers.

# %% [markdown]
# The embedded model's count from its config agrees with the weights actually stored in its checkpoint:

# %%
# claim: stored-count
from course_lib.checkpoints import embedded_model_dir, read_state_dict

stored = sum(t.numel() for k, t in read_state_dict(embedded_model_dir()).items() if not k.endswith("position_ids"))
stored, model.num_parameters(), parameter_count(model.config)

# %% [markdown] slideshow={"slide_type": "subslide"}
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

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Why 512 tokens?
#
# BERT and XLM-R read at most 512 subword tokens (§11.1). You predicted what sets that limit at the start of §4
# (`limit_512`); the cells below take the model apart.

# %% [markdown]
# **The position table.** Each input vector is the layer-normalised sum of a word embedding, a segment embedding
# and a learned **position embedding** (§4): row *i* of a table with one row per position, trained with the rest
# of the model. The table has `config.max_position_embeddings` rows:

# %%
# claim: position-table
table = model.embeddings.position_embeddings.weight
print("max_position_embeddings:", model.config.max_position_embeddings)
print("position table:", tuple(table.shape), "(one row per position, d =", model.config.hidden_size, "columns)")

# %% [markdown] slideshow={"slide_type": "fragment"}
# There is no row for a 513th position, so the model refuses the input with a clear error, however much
# memory the machine has:

# %%
# claim: position-error
too_long = torch.full((1, model.config.max_position_embeddings + 1), tokenizer.token_to_id("the"))
try:
    model(too_long)
except ValueError as err:
    print("ValueError:", err)

# %% [markdown] slideshow={"slide_type": "fragment"}
# The tokenizer checks the same limit before the model runs, and cuts the text (with a warning) only if asked
# with `truncation=True`. (Hugging Face's tokenizer only warns about a text that is too long, and its `BertModel`
# then fails inside the embedding layer, where its 512 position ids meet 513 tokens: `RuntimeError: The size of
# tensor a (513) must match the size of tensor b (512)` in transformers 5.23: the same limit, said less plainly.)

# %%
# claim: tokenizer-error
try:
    tokenizer("word " * 600)
except ValueError as err:
    print("ValueError:", err)

# %% [markdown] slideshow={"slide_type": "fragment"}
# A longer model needs a longer table, trained: a model cannot be given positions it never learnt. Long
# documents are read in windows of at most 512 tokens instead.
#
# **The quadratic cost** is why the designers fixed a length in the first place (§11.1). Self-attention
# compares every token with every other: the score matrix has $N^2$ entries per head, so doubling the input
# makes it four times larger. For one layer's 12 heads (d_h = 64, as in BERT-base), the exact sizes (the score
# matrices, and the floating-point operations of $\mathbf{QK}^\mathsf{T}$ and of the weights times
# $\mathbf{V}$, 2·2·H·N²·d_h), then the peak memory and the time measured here (the fastest of 20 calls, on one
# thread):

# %%
# claim: quadratic-exact
from course_lib.model.cost import attention_cost, growth_exponents

points = attention_cost(lengths=(32, 64, 128, 256, 512), repeats=20, threads=1)
ns = [p.n for p in points]
for p in points:
    print(f"N = {p.n:4d}: score matrices {p.matrix_bytes / 2**20:6.2f} MiB, {p.matmul_flops / 1e6:7.1f}M FLOPs (exact); "
          f"peak memory {p.peak_bytes / 2**20:5.1f} MiB, time {p.seconds * 1e3:6.2f} ms (measured here)")
print("FLOPs exponent between successive lengths:",
      ", ".join(f"{e:.2f}" for e in growth_exponents(ns, [p.matmul_flops for p in points])))
print("doubling N multiplies the FLOPs by:",
      ", ".join(f"{b.matmul_flops / a.matmul_flops:g}" for a, b in zip(points, points[1:])))

# %%
fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
panels = [("exact: FLOPs of QKᵀ and weights·V", [p.matmul_flops / 1e6 for p in points], "million FLOPs", "#009E73"),
          ("measured: peak memory", [p.peak_bytes / 2**20 for p in points], "peak memory (MiB)", "#D55E00"),
          ("measured here, noisy: time\n(fastest of 20 calls, one thread)", [p.seconds * 1e3 for p in points],
           "time per attention call (ms)", "#0072B2")]
for ax, (title, values, ylabel, colour) in zip(axes, panels):
    ax.loglog(ns, values, "o-", color=colour, label="computed" if title.startswith("exact") else "measured")
    # the N² line through the geometric mean of all the points, not through one (possibly noisy) point
    scale = math.exp(sum(math.log(v / n**2) for v, n in zip(values, ns)) / len(ns))
    ax.loglog(ns, [scale * n**2 for n in ns], "--", color="grey", label="∝ N² (slope 2)")
    ax.set_xlabel("sequence length N (tokens)")
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.xaxis.set_minor_locator(plt.NullLocator())  # only the measured lengths on the x axis
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
fig.tight_layout()

# %% [markdown] slideshow={"slide_type": "fragment"}
# The FLOPs are counted, not measured: doubling N multiplies them by exactly 4 (exponent 2.00 at every step), on
# every machine. Memory is counted from the allocations, so read it next. The exponent *p* in memory ∝ N^p between
# successive lengths climbs towards 2: at small N the inputs and fixed costs weigh as much as the N × N matrices,
# at large N the matrices (the scores and the weights) are nearly all of it. The times are measured here, on a
# machine shared with other work: even as the fastest of 20 calls on one thread they are noisy, and they differ
# from machine to machine, so the right-hand panel only shows them; no claim rests on them.

# %%
# claim: quadratic-memory
exps = growth_exponents(ns, [p.peak_bytes for p in points])
print("memory exponent between successive lengths:", ", ".join(f"{e:.2f}" for e in exps))
print(f"at N = 512 the peak is {points[-1].peak_bytes / points[-1].matrix_bytes:.2f} × one (12, N, N) float32 matrix")
print(f"one token more than 512 costs (513/512)² = {(513 / 512) ** 2:.4f} times as much")
n_bert, d_bert = 512, 768  # a whole BERT-base layer: the N² part of attention (QKᵀ and weights·V) against the linear ones
square = 4 * n_bert * n_bert * d_bert   # 2·N²·d twice
linear = 24 * n_bert * d_bert * d_bert  # Q, K, V, W^O (8·N·d²) and the feed-forward (16·N·d²)
print(f"a whole BERT-base layer at N = {n_bert}: the N² part {square / 1e9:.2f} GFLOPs, the linear layers "
      f"{linear / 1e9:.2f} GFLOPs: {square / (square + linear):.0%} of the layer; equal at N = 6d = {6 * d_bert}")

# %% [markdown] slideshow={"slide_type": "fragment"}
# Nothing about the cost changes at 512: one token more costs 0.4% more. And in a whole layer the N² part is
# only about a tenth of the work at 512 tokens (printed above): the linear layers, which grow with N alone, do
# the rest, and attention's share would match theirs only at N = 6d = 4,608. Still, the cost made 512 a sensible
# choice when BERT was designed, and Devlin et al. (2019, App. A.2) trained 90% of their steps on 128-token
# inputs to save it, using 512 tokens only for the last 10%, to learn the remaining position embeddings. The
# position table is what turns the choice into a hard limit.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. The attention explorer
#
# Heads specialise. `strongest_heads` looks through every layer and head of the model for four patterns found
# in BERT (Clark et al., 2019): attending to the previous token, to the next token, and parking attention on
# `[CLS]` or on `[SEP]`. For each, the head that does it most, on a sentence pair:

# %%
# claim: head-patterns
from course_lib.model.head_patterns import strongest_heads

pair_text = "The bank raised its interest rates. [SEP] Savers were pleased."
pair_maps = attention_maps(model, tokenizer, pair_text)
found = {h.pattern: h for h in strongest_heads(pair_maps.weights, pair_maps.tokens)}
for h in found.values():
    print(h)

# %% [markdown] slideshow={"slide_type": "fragment"}
# In this model one head attends almost only to the previous token and another parks most of its attention on
# `[CLS]`; no head leans on `[SEP]` as much (the numbers above). Clark et al. studied bert-base, trained with
# MLM; this model's heads were shaped by distillation (MiniLM-L12, whose every second layer this model keeps,
# was trained to copy a larger model's last-layer attention) and by sentence-pair training, and the patterns are from one sentence pair, so read them as examples,
# not as a census.
#
# Two questions a careful reader asks of those heads. First, how can attention, which compares contents, find
# *the token before*? Run the pair through the copy of the model whose position table was zeroed (§4). Second,
# does a head that puts most of its weight on `[CLS]` take most of its *output* from it? What a key adds to
# query *i*'s output is its weight times its value vector carried through the head's share of $\mathbf{W}^O$,
# $\alpha_{ij}\,\mathbf{v}_j\mathbf{W}^O_h$, and the length of that vector is the key's real share (Kobayashi et
# al., 2020):

# %%
# claim: head-checks
from course_lib.model.head_patterns import pattern_shares
from course_lib.views.attention import parse_input

previous = found["previous token"]
without_positions = attention_maps(orderless, tokenizer, pair_text)
prev_share = pattern_shares(without_positions.weights, without_positions.tokens)["previous token"]
print(f"previous-token head (block {previous.layer + 1}, head {previous.head}): {previous.share:.2f} of its attention "
      f"on the token before with the learned positions, {float(prev_share[previous.layer, previous.head]):.2f} with "
      "the position table zeroed")
sink = found["[CLS]"]
dh = model.config.hidden_size // model.config.num_attention_heads
cols = slice(sink.head * dh, (sink.head + 1) * dh)
sink_block = model.encoder.layer[sink.layer]
with torch.no_grad():
    # the pair as attention_maps encoded it: two segments (token_type_ids 0 then 1), not the text with "[SEP]" in it
    x_sink = model(**tokenizer(*parse_input(pair_text)).to(model.device),
                   output_hidden_states=True).hidden_states[sink.layer][0]  # block index sink.layer's input
    added = sink_block.attention.self.value(x_sink)[:, cols] @ sink_block.attention.output.dense.weight[:, cols].T
lengths = added.norm(dim=-1).float().cpu()                  # (T,): the length of v_j W^O_h, what key j adds at weight 1
alpha_sink = pair_maps.weights[sink.layer, sink.head]            # (T, T)
carried = alpha_sink * lengths[None, :]                          # ‖α_ij v_j W^O_h‖
print(f"[CLS] head (block {sink.layer + 1}, head {sink.head}): mean weight on [CLS] {float(alpha_sink[:, 0].mean()):.2f}; "
      f"length of [CLS]'s v W^O {float(lengths[0]):.2f}, of the other tokens' {float(lengths[1:].min()):.1f} to "
      f"{float(lengths[1:].max()):.1f}; [CLS]'s share of the weighted lengths "
      f"{float((carried[:, 0] / carried.sum(-1)).mean()):.2f}; [CLS] is the top key of "
      f"{int((alpha_sink.argmax(-1) == 0).sum())} of its {alpha_sink.size(0)} queries")

# %% [markdown] slideshow={"slide_type": "fragment"}
# With the positions zeroed, the previous-token head loses its pattern (the numbers above): it finds the token
# before by its position code, not by its content. And the `[CLS]` head's weight is not what it adds: `[CLS]`'s
# value vector, through $\mathbf{W}^O$, is many times shorter than the other tokens', so the head takes far
# less from `[CLS]` than its weights say; most of what it adds comes from the other tokens it looks at a
# little. Clark et al. (2019) read such heads, which park on `[SEP]` in bert-base, as a "no-op": a place to put
# attention when a head has nothing to do. A heat map of attention weights shows where a head looks, not what
# it passes on, nor why the model decides what it decides: whether attention weights explain predictions is
# disputed (Jain & Wallace, 2019; Wiegreffe & Pinter, 2019).
#
# The explorer, drawn in the manner of bertviz (Vig, 2019), opens on the previous-token head.
#
# Type a sentence, or two separated by `[SEP]`; pick a block (1-6) and a head ("all" shows every head of the
# block; block "all" shows the head in every block, and with head "all" every one of the 72 heads at once);
# switch between the raw scores $\mathbf{QK}^\mathsf{T}/\sqrt{d_k}$ and the softmax
# weights; add a causal mask. Choose a query and a key token to read one cell. Look for the heads above (a
# diagonal just below or above the main one, a bright first or last column), and, in sentence pairs, for
# heads that connect the two sentences across the dashed boundary. The third choice of *show* opens one
# head's query and key vectors: the next section.

# %% slideshow={"slide_type": "subslide"}
from course_lib.widgets import AttentionExplorer

previous = found["previous token"]
AttentionExplorer(model, tokenizer, text=pair_text, layer=previous.layer, head=previous.head)


# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8. How one score is made
#
# Every cell of a heat map is one dot product. Head $h$ of a block projects each token into a query and a key
# of $d_h = 32$ dimensions, and query $i$ scores key $j$ as
# $\text{score}_{ij} = \mathbf{q}_i\cdot\mathbf{k}_j/\sqrt{d_h} = \sum_{m=0}^{31} q_i[m]\,k_j[m]/\sqrt{d_h}$
# (eq. 11.4 with the scaling of eq. 11.6): a sum of 32 products, one per dimension m (counted from 0, as the
# table below prints them). The explorer keeps every
# head's queries and keys, so `score_parts` takes one query apart without running the model again.
#
# In the previous-token head above (block 1, head 2), the query *raised* gives the key *bank* a weight of
# 1.000. Its score is the sum of 32 products, each divided by $\sqrt{32}$: below, the largest of them, and how far
# *bank* leads the runner-up.

# %%
# claim: score-parts
from IPython.display import Image, display

from course_lib.views.score_parts import parts_png, random_rotation, rotation_onto, score_parts

raised = pair_maps.tokens.index("raised")
parts = score_parts(pair_maps, previous.layer, previous.head, query=raised)
best, second = parts.scores.topk(2).indices.tolist()
print(parts.describe(best))
(dim, part), = parts.top_dimensions(best, n=1)
print(f"largest part: dimension {dim}, {part:+.2f} of {float(parts.scores[best]):+.2f} = {part / float(parts.scores[best]):.0%}")
lead = float(parts.scores[best] - parts.scores[second])
print(f"runner-up {parts.tokens[second]!r}: score {float(parts.scores[second]):+.2f}, {lead:.1f} lower: "
      f"e^{lead:.1f} = {math.exp(lead):,.0f} times less weight, {float(parts.weights[second]):.5f}")
shares, leads, won, previous_wins = [], [], [], 0
for i in range(1, len(pair_maps.tokens)):                # every query but [CLS]: its winner, and the winner's parts
    p = score_parts(pair_maps, previous.layer, previous.head, query=i)
    top2 = p.scores.topk(2)
    winner = int(top2.indices[0])
    shares.append(p.top_dimensions(winner, n=1)[0][1] / float(top2.values[0]))
    leads.append(float(top2.values[0] - top2.values[1]))
    won.append((float(p.weights[winner]), pair_maps.tokens[i], leads[-1]))
    previous_wins += winner == i - 1
print(f"over all {len(shares)} queries: the winner is the token before the query for {previous_wins}; its largest "
      f"part gives {min(shares):.0%} to {max(shares):.0%} of its score; it leads by {min(leads):.1f} to {max(leads):.1f}")
(low, low_query, low_lead), (rest, _, _) = sorted(won)[:2]
print(f"the winner's weight: lowest {low:.3f}, for query {low_query!r} (a lead of {low_lead:.1f}); every other "
      f"query's winner takes at least {rest:.3f}, with a lead of {min(lead for w, _, lead in won if w >= rest):.1f} or more")
display(Image(parts_png(parts, key=best)))

# %% [markdown] slideshow={"slide_type": "fragment"}
# In the head's own 32 axes, the largest part of *bank*'s score is under a fifth of it (the numbers above), and it
# takes more than three dimensions to reach half; their sum puts *bank* more than nine points ahead of the
# runner-up. The softmax does the rest: a lead in the score is a factor in the weight, $e^{\text{lead}}$, here
# more than ten thousand, so the runner-up's weight is below a ten-thousandth and *bank* takes practically all
# of it. Every query of the pair picks the token before it, though not always so overwhelmingly: for *save*, the
# first token after `[SEP]`, the winner (that `[SEP]`) leads by only 2.8 and gets 0.94 of the weight; every other
# query's winner leads by 7.8 or more and takes at least 0.999 (the numbers above).

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Prediction `rotated_parts`
# The 32 parts above are read along the head's axes as its weights lay them out. Turn every query and every key
# of this head by one and the same rotation $R$
# ($\mathbf{q} \to \mathbf{q}R$, $\mathbf{k} \to \mathbf{k}R$). What happens to *bank*'s 32 parts and to the
# attention weights: `"both change"`, `"the parts change, the weights do not"` or `"neither changes"`?

# %% tags=["exercise"]
### BEGIN SOLUTION
rotated_parts = "the parts change, the weights do not"
### END SOLUTION

# %%
check("rotated_parts")

# %%
# claim: score-rotation
for name, R in (("the head's own axes", torch.eye(parts.d_h)), ("a random rotation", random_rotation(parts.d_h)),
                ("the rotation that turns q onto axis 0", rotation_onto(parts.q))):
    turned = parts.rotated(R)
    (dim, part), = turned.top_dimensions(best, n=1)
    print(f"{name:38s} largest part of bank's score: dimension {dim:2d}, {part / float(turned.scores[best]):4.0%}; "
          f"scores the same: {torch.allclose(turned.scores, parts.scores, atol=1e-4)}, "
          f"weights the same: {torch.allclose(turned.weights, parts.weights, atol=1e-5)}")

# %% [markdown] slideshow={"slide_type": "fragment"}
# A dot product depends only on the two vectors' lengths and the angle between them, and a rotation keeps both:
# every score and every weight stays the same. The parts do not: turn the query onto one axis and that axis
# carries all of every key's score. A model whose $\mathbf{W}^Q$ and $\mathbf{W}^K$, and their biases, were all
# multiplied by $R$ would compute exactly the same function, so nothing in training fixes the axes of a head's query–key space:
# "dimension 17 decides" is a statement about one choice of axes, not about the model. (A split that does not
# depend on the axes exists: along the singular directions of $\mathbf{W}^Q{\mathbf{W}^K}^\mathsf{T}$.) What
# the table shows in any axes is the sum, and how the softmax turns its lead into nearly all the weight.
#
# In the explorer, choose *show: q·k part by part* and move the query: each row of the picture is a key, its
# vector on the left, its products with the query in the middle (orange where a dimension adds to the score,
# purple where it takes away), then the score and the weight. Try the `[CLS]` head of block 5 (head 5), where
# every query's winner is `[CLS]`.
