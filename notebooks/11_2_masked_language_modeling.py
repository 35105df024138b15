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
# # 11.2 Training bidirectional encoders: masked language modelling
#
# A causal language model learns by predicting the next word. With bidirectional attention that
# task is trivial (the next word is in plain view), so BERT learns a **cloze task** instead:
# some tokens are hidden and the model must recover them from the context on *both* sides —
# *Please turn ___ homework in*.
#
# In this notebook:
# 1. fill-mask predictions from a model with an MLM head;
# 2. the MLM corruption: 15% of tokens, of which 80% [MASK], 10% a random token, 10% unchanged;
# 3. the loss, computed on the selected tokens only;
# 4. next sentence prediction (NSP) and segment embeddings;
# 5. pretraining a tiny BERT live, with MLM + NSP;
# 6. RoBERTa's and BART's changes to the recipe;
# 7. sampling languages for multilingual models (eq. 11.7).
#
# Four exercises are graded with `check("…")`.

# %% tags=["setup"]
import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

import course_lib
from course_lib.exercises import check

torch.set_printoptions(precision=3, sci_mode=False)

# %% [markdown]
# ## 1. The cloze task with a real MLM head
#
# The embedded all-MiniLM-L6-v2 was trained for sentence embeddings and has no MLM head. The project
# therefore made one (see `course_lib/data/models/minilm-wordnet-mlm/MODEL_CARD.md`): a new head, trained together
# with the last encoder layers by continued MLM on English WordNet glosses — the *domain adaptation*
# of the lecture. It is shipped as a small difference from the packaged weights.

# %%
from course_lib.checkpoints import shipped_model_dir

mlm_model, tokenizer = course_lib.load_pretrained("minilm-wordnet-mlm")
mlm_dir = shipped_model_dir("minilm-wordnet-mlm")
for p in course_lib.fill_mask(mlm_model, tokenizer, "Please turn your [MASK] in by Friday.", top_k=5):
    print([f"{t} {pr:.2f}" for t, pr in zip(p.tokens, p.probs)])

# %% [markdown]
# The model outputs a distribution over the whole vocabulary at every position; the head is
# $\mathbf{y}_i = \text{softmax}(\mathbf{E}\,\mathbf{h}_i + \mathbf{b})$, with the *input* embedding
# matrix $\mathbf{E}$ reused as output weights. Type your own sentences (several `[MASK]`s work too):

# %%
from course_lib.widgets import FillMaskExplorer

FillMaskExplorer(mlm_model, tokenizer, "The capital of France is [MASK].")

# %% [markdown]
# How good is it? On glosses held out from its training, mask 15% of the tokens and count how often
# the original token is the top guess (top-1) or among the top five — beside a baseline that ignores
# the context and always guesses the most frequent tokens of the training text:

# %%
from safetensors.torch import load_file

from course_lib.pretraining.fill_mask import masked_token_accuracy

heldout = (mlm_dir / "heldout.txt").read_text().splitlines()[:400]
train_unigram = load_file(str(mlm_dir / "unigram.safetensors"))["unigram"]
print(masked_token_accuracy(mlm_model, tokenizer, heldout, train_unigram, seed=0))

# %% [markdown]
# ## 2. Corrupting the input (§11.2.1)
#
# BERT selects 15% of the input tokens for the loss. Of the selected tokens, 80% are replaced by
# `[MASK]`, 10% by a random token, and 10% are left unchanged — so that the model cannot assume
# that every unmasked token is correct, and sees real tokens at the positions it must predict.
# Random tokens are drawn from the **unigram** distribution of a corpus. `[CLS]`, `[SEP]` and
# padding are never selected. Here the corpus is the prose of the Python reference manual, which
# ships with every Python:

# %%
from course_lib.pretraining.masking import mlm_mask, unigram_distribution
from course_lib.pretraining.training import python_reference_documents

docs = python_reference_documents()
unigram = unigram_distribution([s for d in docs for s in d], tokenizer=tokenizer)   # (|V|,)
enc = tokenizer("Please turn your homework in before the lecture starts on Monday.")
batch = mlm_mask(enc.input_ids, special_ids=tokenizer.special_ids, mask_token_id=tokenizer.mask_token_id,
                 unigram=unigram, generator=3)
tokenizer.convert_ids_to_tokens(batch.input_ids[0]), batch.labels[0]

# %% [markdown]
# **Mask sampler.** Resample to see a new corruption of the same sentence; *draw 100 more* adds
# draws to the running histogram, which converges to the target rates (15%; 80/10/10).

# %%
from course_lib.widgets import MaskSampler

MaskSampler(tokenizer, unigram)

# %% [markdown]
# ### Exercise `mlm_masking`
# Write `mask_tokens(input_ids, special_ids, mask_token_id, unigram, select_prob=0.15, generator=None)`
# returning `(corrupted_ids, labels)`. Select each token that is not in `special_ids` with probability
# `select_prob`; of the selected, 80% become `mask_token_id`, 10% become a token drawn from `unigram`
# (`torch.multinomial`), 10% stay. `labels` holds the original id at selected positions and -100
# elsewhere. Do not modify `input_ids` in place. Pass `generator` to every random call.

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
# ## 3. The MLM loss (§11.2.1)
#
# The loss is the cross-entropy of the original token, averaged over the selected set M only:
# $L_{MLM} = -\frac{1}{|M|}\sum_{i \in M}\log P(x_i \mid \mathbf{z}_i)$. The other 85% of the
# positions teach nothing directly — one reason why MLM needs a lot of data (ELECTRA's replaced-token
# detection learns from every position instead).

# %% [markdown]
# ### Exercise `mlm_loss`
# Write `masked_lm_loss(logits, labels)`: logits (B, T, |V|), labels (B, T) with -100 at unselected
# positions; return the mean cross-entropy over the selected positions only.

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
# On the real model: the loss of the sentence above, with its corruption.

# %%
with torch.no_grad():
    out = mlm_model(batch.input_ids, enc.attention_mask, enc.token_type_ids)
course_lib.masked_lm_loss(out.logits, batch.labels)

# %% [markdown]
# ## 4. Next sentence prediction (§11.2.2)
#
# BERT's second objective: given two sentences, did B follow A in the text (50% of the pairs) or
# was it drawn from elsewhere (50%)? The pair is one input, `[CLS] A [SEP] B [SEP]`, and a **segment
# embedding** (token type 0 for A, 1 for B) is added to every token. A linear layer $\mathbf{W}_{NSP}$
# on the `[CLS]` output makes the two-way decision.

# %%
from course_lib.pretraining.masking import encode_nsp, nsp_pairs

pairs = nsp_pairs(docs, generator=0)[:4]
for a, b, is_next in pairs:
    print(("IsNext   " if is_next else "NotNext  ") + a[:60] + " ||| " + b[:60])
nsp_enc, nsp_labels = encode_nsp(tokenizer, pairs[:1])
list(zip(nsp_enc.tokens[0], nsp_enc.token_type_ids[0].tolist()))[:12]

# %% [markdown]
# ### Exercise `nsp_input`
# Write `build_nsp_input(ids_a, ids_b, cls_id, sep_id)` that takes two lists of token ids (without
# special tokens) and returns `(input_ids, token_type_ids)` as lists: `[CLS] A [SEP] B [SEP]`, with
# token type 0 for `[CLS] A [SEP]` and 1 for `B [SEP]`.

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
# ## 5. Pretraining a tiny BERT, live
#
# Everything together: a 2-layer BERT (d = 64, 4 heads) starts from random weights and learns
# $L = L_{MLM} + L_{NSP}$ on the Python reference manual, with a WordPiece vocabulary of 2,000
# learned from the same text. Every step draws new NSP pairs and a new mask. This takes about two
# minutes on two CPU cores; the losses are also written to `tiny_bert_losses.json` in the course's cache folder (`course_lib.paths.cache_dir()`).

# %%
from course_lib.paths import cache_dir
from course_lib.pretraining.training import pretrain_tiny_bert, train_wordpiece

tiny_tok = train_wordpiece([s for d in docs for s in d], vocab_size=2000)
run = pretrain_tiny_bert(tiny_tok, docs, steps=1200, batch_size=32, log_path=cache_dir("pretraining") / "tiny_bert_losses.json")
f"{run.seconds:.0f} s, {run.model.num_parameters():,} parameters"

# %%
fig, ax = plt.subplots(figsize=(7, 3.5))
steps = [r["step"] for r in run.losses]
ax.plot(steps, [r["mlm"] for r in run.losses], color="#56B4E9", alpha=0.35, lw=0.8)
ax.plot(steps, run.smoothed("mlm"), color="#0072B2", label="MLM loss (running mean of 20 steps)")
ax.plot(steps, run.smoothed("nsp"), color="#D55E00", ls="--", label="NSP loss (running mean)")
ax.axhline(torch.log(torch.tensor(2.0)).item(), color="grey", lw=0.8, ls=":", label="NSP at chance: ln 2")
ax.set_xlabel("training step")
ax.set_ylabel("cross-entropy (nats)")
ax.set_title("tiny BERT pretraining on the Python reference manual")
ax.legend()
fig.tight_layout()

# %% [markdown]
# The MLM loss starts near $\ln 2000 \approx 7.6$ (a uniform guess over the vocabulary) and falls
# as the model first learns word frequencies, then context. NSP is harder for a model this small;
# RoBERTa later found that dropping NSP does not hurt.
# What does the tiny model predict already?

# %%
course_lib.fill_mask(run.model, tiny_tok, "The [MASK] statement is used for conditional execution.", top_k=5)[0].tokens

# %% [markdown]
# ## 6. RoBERTa and BART: other ways to corrupt and train
#
# **RoBERTa** (lecture) keeps MLM but drops NSP, trains longer on more data, and uses **dynamic
# masking**: a new mask every epoch instead of one fixed mask computed once during preprocessing.
# Inputs are **packed**: consecutive documents fill every 512-token block, separated by `[SEP]`.

# %%
from course_lib.pretraining.masking import DynamicMasker, StaticMasker, pack_sequences

ids = [tokenizer(s).input_ids[0, 1:-1].tolist() for d in docs[:3] for s in d[:5]]
blocks = pack_sequences(ids, block_size=32, sep_id=tokenizer.sep_token_id, cls_id=tokenizer.cls_token_id)
mask_args = dict(special_ids=tokenizer.special_ids, mask_token_id=tokenizer.mask_token_id, unigram=unigram)
dynamic, static = DynamicMasker(blocks, generator=0, **mask_args), StaticMasker(blocks, generator=0, **mask_args)
same = lambda m: torch.equal(m().selected, m().selected)  # noqa: E731
f"{tuple(blocks.shape)} blocks; static masks repeat: {same(static)}; dynamic masks repeat: {same(dynamic)}"

# %% [markdown]
# **BART** is an encoder-decoder trained to repair many kinds of corruption:

# %%
from course_lib.pretraining.noising import document_rotate, sentence_permute, text_infill, token_delete, token_mask

text = "so long and thanks for all the fish"
for f in (token_mask, token_delete, text_infill, document_rotate):
    print(f"{f.__name__:15s} {f(text, generator=4)}")
print(f"{'sentence_permute':15s} {sentence_permute(['It rained.', 'We stayed in.', 'The end.'], generator=1)}")

# %% [markdown]
# ## 7. Multilingual models: which language to sample (eq. 11.7)
#
# Training data is very unevenly spread over languages. Sampling sentences in proportion to their
# share $p_i$ would starve the small languages; XLM-R samples language *i* with probability
# $q_i = \frac{p_i^\alpha}{\sum_j p_j^\alpha}$, with α = 0.3. α = 1 keeps the data proportions;
# α → 0 samples every language equally often. The sizes below are illustrative.

# %% [markdown]
# ### Exercise `language_sampling`
# Write `language_probs(p, alpha)`: `p` is a 1-D tensor of probabilities or counts per language;
# return $q$ of eq. 11.7 as a tensor.

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

# %%
from course_lib.widgets import LanguageSampler

languages = ["English", "Russian", "German", "Hindi", "Swahili", "Yoruba"]
sentences = [3.0e9, 1.2e9, 8.0e8, 9.0e7, 1.5e7, 8.0e5]
LanguageSampler(languages, sentences, alpha=0.3)
