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
# # 11.1b Subword tokenization: BPE, WordPiece and Unigram LM, from scratch
#
# A BERT never sees words. Before its first layer, text is cut into **subwords** from a fixed
# vocabulary (30,522 of them for the embedded model): frequent words stay whole, rare words are split
# into pieces the model has met before, so almost no word is out of vocabulary (only a word with a character the
# vocabulary lacks becomes `[UNK]`, the whole word; byte-level BPE, below, has no `[UNK]` at all). The chapter's example (§11.4.3): *Mt. Sanitas
# is in Sunshine Canyon.* becomes 'Mt', '.', 'San', '##itas', … (a cased BERT; the embedded model is uncased and
# gives mt . san ##itas), and every label given per word must then be mapped onto these pieces.
#
# The lecture's three ways of making such a vocabulary, each written from scratch in
# `course_lib.tokenization`:
# 1. **BPE** (Gage 1994 for compression; Sennrich et al. 2016 for words; GPT, and GPT-2 and RoBERTa in its
#    byte-level form): merge the most frequent pair of symbols, again and again;
# 2. **WordPiece** (Schuster & Nakajima 2012; Google's translation system, Wu et al. 2016; BERT): greedy
#    longest-match-first with `##` continuations; trained with a likelihood score instead of a raw count;
# 3. **Unigram LM** (Kudo 2018; SentencePiece, XLM-R): a probability per piece, the most probable
#    segmentation by Viterbi, and *sampled* segmentations (subword regularization).
#
# What is proven equal to the libraries people use (`tests/test_tokenization_*.py`, on thousands of sentences):
# the **encoders**, token for token: BPE and byte-level BPE against `tokenizers`, WordPiece against the embedded
# model's own tokenizer, Unigram's Viterbi against `sentencepiece`. The **learners** only in part: the byte-level
# BPE learner, and the BPE learner without an end-of-word marker, make `tokenizers`' merges, merge for merge; with
# the `</w>` marker the BPE learner agrees with `tokenizers`' BpeTrainer until the first tie the two break
# differently (printed below); the WordPiece trainer differs from `tokenizers`' WordPieceTrainer by design (§3: that
# one merges by count) and is checked against a brute-force recount instead; the Unigram trainer is compared with
# no library.
#
# Four functions and two predictions are graded with `check("…")`.

# %% tags=["setup"]
import random
import time
from collections import Counter

from IPython.display import HTML, Image

from course_lib.checkpoints import embedded_model_dir
from course_lib.exercises import check
from course_lib.tokenization import BertTokenizer, compare, corpora, reference
from course_lib.tokenization.bpe import initial_symbols, learn_bpe
from course_lib.tokenization.byte_level import ByteLevelBPE, learn_byte_bpe, to_byte_string
from course_lib.tokenization.pretokenize import basic_tokenize, normalize, split_words
from course_lib.tokenization.unigram import Unigram
from course_lib.tokenization.unigram_training import train_unigram
from course_lib.tokenization.wordpiece import WordPiece, first_merge_scores, train_wordpiece, wordpiece_vocabulary
from course_lib.views.common import figure_png
from course_lib.views.tokenization import draw_fertility, draw_fragmentation, draw_segmentation_probs, merges_html

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. Before subwords: words
#
# Every subword tokenizer starts from *words*. BERT's pre-tokenizer first normalises the text
# (control characters out, accents stripped, lower case: the embedded model is *uncased*), then splits
# at white space and around every punctuation mark, which becomes a word of its own:

# %%
text = "Mt. Sanitas is in Sunshine Canyon."
normalize(text), split_words(normalize(text))

# %%
basic_tokenize("Björk's café isn't in Zürich, 2,000 km away!")

# %% [markdown] slideshow={"slide_type": "fragment"}
# The accents are gone, and the apostrophe and both commas, even the one inside *2,000*, are words of
# their own.
#
# ## 2. Byte-pair encoding (Sennrich et al. 2016)
#
# BPE learns its vocabulary from a corpus. Start from characters, with an end-of-word marker `</w>`
# glued to the last character of each word (so that a piece knows whether it ends a word). Then
# repeat: count every pair of adjacent symbols, each word weighted by how often it occurs, and merge
# the most frequent pair into a new symbol, which joins the vocabulary.
#
# The corpus: 300 stories of Australian news (the Lee corpus, which ships with `gensim`), split into
# words with their case kept.

# %%
train = corpora.lee("train")
counts = corpora.word_counts(train)
len(train), len(counts), sum(counts.values()), counts.most_common(6)

# %%
initial_symbols("lowest")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise `bpe_merge_step`
# Write `bpe_merge_step(words)`. `words` maps each word, spelt as a tuple of symbols, to its count:
# `{('l', 'o', 'w</w>'): 5, ('n', 'e', 'w', 'e', 's', 't</w>'): 6, …}`, as `initial_symbols` spells them; a
# symbol may be several characters (`'t</w>'`, and after some merges `'es'`). Count every pair of
# adjacent symbols inside each word (an occurrence counts as many times as its word occurs), take the most
# frequent pair (on a tie the smallest, `min` of the tied pairs: a simpler rule than the library's learner below,
# which prefers the pair whose symbols come first in its vocabulary), and return `(best_pair, new_words)`, where
# `new_words` spells every word with that pair merged into one symbol (left to right, without
# overlaps: `a a a` → `aa a`); should two words come out spelt alike, their counts add up. Do not change `words`.

# %% tags=["exercise"]
def bpe_merge_step(words):
    """One BPE learning step: the most frequent adjacent pair, and the words with it merged."""
    ### BEGIN SOLUTION
    pairs = Counter()
    for word, n in words.items():
        for pair in zip(word, word[1:]):
            pairs[pair] += n
    best = min(pairs, key=lambda p: (-pairs[p], p))
    new_words = {}
    for word, n in words.items():
        merged, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                merged.append(word[i] + word[i + 1])
                i += 2
            else:
                merged.append(word[i])
                i += 1
        new_words[tuple(merged)] = new_words.get(tuple(merged), 0) + n
    return best, new_words
    ### END SOLUTION


# %%
check("bpe_merge_step")

# %% [markdown] slideshow={"slide_type": "fragment"}
# The library's learner does this step thousands of times, but it never recounts the corpus: it
# keeps the count of every pair and, per merge, updates only the words that contain the pair
# (`course_lib/tokenization/merges.py`). The first merges on the news corpus, with their counts:

# %%
start = time.perf_counter()
learning = learn_bpe(counts, 2000)
print(f"2,000 merges in {time.perf_counter() - start:.1f} s")
[(m.left, m.right, m.token, m.count) for m in learning.merges[:8]]

# %% [markdown] slideshow={"slide_type": "fragment"}
# **Ties.** Two pairs often occur equally often. The rule here is the one of `tokenizers`' BpeTrainer:
# the pair whose symbols come first in the vocabulary wins (characters in code-point order, then the
# characters with `</w>`, then the merged symbols in the order they were made). BpeTrainer numbers the
# `</w>` symbols in the order it meets them in a hash table, which changes from run to run, so on a tie
# between such symbols the two learners may go different ways. Trained on the same words, the two agree
# merge for merge at least until such a tie (and, without the marker, on all 2,000: a test proves it):

# %%
# claim: bpe-trainer
theirs = reference.merges_of(reference.bpe_trainer(train, 2000))
ours = [(m.left, m.right) for m in learning.merges]
first = reference.first_difference(ours, theirs)
bpe_facts = {"ties among the first 200 merges": sum(m.tied > 1 for m in learning.merges[:200]),
             "first merge that differs": first,
             "pairs tied at that merge": learning.merges[first].tied if first is not None else None}
bpe_facts

# %% [markdown] slideshow={"slide_type": "fragment"}
# **Encoding** a new word: split it into characters and apply the learnt merges in the order they were
# learnt (the earliest-learnt pair present first), until none applies. The vocabulary grows with every
# merge; move through the merges and watch *Sunshine*'s pieces grow (still three after 2,000 merges):

# %%
bpe = learning.tokenizer()
for steps in (0, 20, 200, 2000):
    print(f"{steps:5d} merges:", learning.tokenizer(steps).encode_word("Sunshine"))
HTML(merges_html(learning, 2000, last=5))

# %%
# claim: encode
encode_facts = {"Mt. Sanitas …": bpe.tokenize(text), "times 'Sanitas' occurs in the corpus": counts["Sanitas"],
                **{w: bpe.encode_word(w) for w in ("Sydney", "bushfires", "unaffable", "Sunshine")}}
encode_facts

# %% [markdown] slideshow={"slide_type": "fragment"}
# *Sydney*, frequent in the news, is a single piece. *bushfires* is not: after 2,000 merges it is built from
# pieces of other words, and not along its morphemes (*bus h fires*, not *bush fires*: merges follow counts, not
# meaning). *Sanitas*, never seen, falls apart into pieces that were learnt for other words.
#
# ### Byte-level BPE (GPT-2, RoBERTa)
#
# A character the corpus never showed has no symbol at all, so it becomes the unknown token:

# %%
bpe.tokenize("Zürich ☃")

# %% [markdown] slideshow={"slide_type": "fragment"}
# Byte-level BPE starts from the 256 possible *bytes* of UTF-8 instead, so its alphabet is complete: no
# string ever needs an unknown token. To reuse string code, GPT-2 maps every byte to a printable
# character; a space becomes `Ġ`, and `ü`, two bytes, becomes two characters:

# %%
to_byte_string(" Zürich ☃")

# %%
byte_learning = learn_byte_bpe(train, 2000)
byte_bpe = ByteLevelBPE.from_learning(byte_learning)
pieces = byte_bpe.tokenize("Zürich ☃ is at 4°C.")
pieces, byte_bpe.decode(pieces)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. WordPiece (Schuster & Nakajima 2012; Wu et al. 2016; BERT)
#
# BERT's WordPiece *encodes* greedily: from the start of a word, take the longest vocabulary entry that
# matches, then the longest entry that continues it, written with `##` in front, and so on. If at some
# point nothing matches, the *whole word* becomes `[UNK]`; so does any word over 100 characters. (The
# convention is BERT's: Wu et al. 2016, the lecture's example *\_J et makers*, mark the *start* of a word
# instead, as SentencePiece's `▁` does; BERT's code marks the *continuations*, *j ##et*. Same pieces, the
# mark on the other side.)
# Here is the embedded model's vocabulary, read from its `tokenizer.json`:

# %%
wp = WordPiece.from_tokenizer_json(embedded_model_dir() / "tokenizer.json")
len(wp.vocab), [wp.encode_word(w) for w in ("sanitas", "tokenization", "unaffable", "snow☃man")]

# %% [markdown] slideshow={"slide_type": "fragment"}
# Greedy is not morphology. Take *unaided*: its morphemes *un*, *aid* and *ed* are all in the vocabulary:

# %%
# claim: greedy
greedy_facts = {"unaided": wp.encode_word("unaided"),
                "in the vocabulary": {piece: piece in wp.vocab for piece in ("un", "##aid", "##ed", "una", "##ided")},
                "'unaided' itself in the vocabulary": "unaided" in wp.vocab}
greedy_facts

# %% [markdown] slideshow={"slide_type": "fragment"}
# Yet greedy gives *una ##ided*, not *un ##aid ##ed*: `una` is the longest entry that starts the word, and greedy
# never goes back on a piece once taken.
#
# ### Exercise `wordpiece_encode`
# Write `wordpiece_tokenize(word, vocab)` for one normalised word (lower case, no punctuation);
# `vocab` holds the vocabulary's strings (`piece in vocab` is all you need). Greedy longest match
# first, `##` before every piece but the first, `[unk]` for the whole word when some position has
# no match or when the word is longer than `max_chars` characters (the arguments `unk` and `max_chars`, by default
# `'[UNK]'` and 100, as BERT's). It is graded against the embedded model's
# real tokenizer on 259 words, most of which this notebook never shows.

# %% tags=["exercise"]
def wordpiece_tokenize(word, vocab, unk="[UNK]", max_chars=100):
    """Greedy longest-match-first WordPiece of one normalised word."""
    ### BEGIN SOLUTION
    if len(word) > max_chars:
        return [unk]
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start and (word[start:end] if start == 0 else "##" + word[start:end]) not in vocab:
            end -= 1
        if end == start:
            return [unk]
        pieces.append(word[start:end] if start == 0 else "##" + word[start:end])
        start = end
    return pieces
    ### END SOLUTION


# %%
check("wordpiece_encode")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Pieces back to words (§11.4.3)
# Labels are given per word, the model works per piece. The real tokenizer returns, for each piece,
# the index of the word it came from (`word_ids`; `None` for `[CLS]` and `[SEP]`). For training, the
# chapter copies each word's label to all its pieces; for decoding, it reads the label of a word from
# its first piece (so *Sanitas* gets the tag predicted for *san*). One difference: the chapter treats *Mt.* as one
# word, while BERT's pre-tokenizer makes the full stop a word of its own, so word labels must come with words
# split the same way (notebook 11.4b gives the tokenizer words already split):

# %%
bert_tokenizer = BertTokenizer.from_dir(embedded_model_dir())
enc = bert_tokenizer(text)
list(zip(enc.tokens[0], enc.word_ids[0]))

# %%
seg = wp.encode(text)
seg.tokens == enc.tokens[0][1:-1], seg.word_ids == enc.word_ids[0][1:-1], seg.pieces_per_word()

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise `wordpiece_word_ids` (puts it together)
# Write `wordpiece_word_ids(text, vocab)` returning `(tokens, word_ids)` for a whole text, as the
# embedded model's tokenizer does without `[CLS]`/`[SEP]`: BERT's pre-tokenizer (`basic_tokenize`),
# your `wordpiece_tokenize` for each word, and the word's index for each of its pieces. Graded on 15
# sentences, with accents, punctuation and numbers.

# %% tags=["exercise"]
def wordpiece_word_ids(text, vocab):
    """The pieces of a text and, for each piece, the index of its word."""
    ### BEGIN SOLUTION
    tokens, word_ids = [], []
    for i, word in enumerate(basic_tokenize(text)):
        word_pieces = wordpiece_tokenize(word, vocab)
        tokens += word_pieces
        word_ids += [i] * len(word_pieces)
    return tokens, word_ids
    ### END SOLUTION


# %%
check("wordpiece_word_ids")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Training WordPiece: a likelihood score instead of a count
# WordPiece *trains* like BPE, merging pairs, but it picks the pair whose merge raises the likelihood of the
# corpus most (Schuster & Nakajima 2012, who use a language model; the lecture says "improve log-likelihood"),
# here under the simplest such model, a unigram model of its pieces. From counts, that
# gain is exact: only the counts of *a*, *b*, the new *ab* and the total change
# (`course_lib.tokenization.wordpiece.likelihood_gain`). Hugging Face's course, and many explanations, use a
# shortcut instead, the ratio count(ab) / (count(a) · count(b)): it rewards a pair whose parts rarely occur
# apart. They are not the same score. Every pair of the first merge on the lower-cased Lee training words,
# ranked both ways:

# %%
# claim: wordpiece-gain
lower = corpora.word_counts(train, split=basic_tokenize)
pair_scores = first_merge_scores(lower)
by_gain = sorted(pair_scores, key=lambda p: -p.gain)
by_ratio = sorted(pair_scores, key=lambda p: (-p.ratio, -p.count))
gain_facts = {
    "first 5 by the likelihood gain (pair count)": [(p.token, p.count) for p in by_gain[:5]],
    "first 5 by the ratio (pair count)": [(p.token, p.count) for p in by_ratio[:5]],
    "the ratio's first pair, ranked by the gain": by_gain.index(by_ratio[0]) + 1,
    "the gain's first pair, ranked by the ratio": by_ratio.index(by_gain[0]) + 1,
    "pairs": len(pair_scores),
}
gain_facts

# %% [markdown] slideshow={"slide_type": "fragment"}
# The likelihood gain puts frequent pairs first (*th*, *of*, *##he*: each merge removes thousands of tokens
# from the corpus), much as BPE's count does; the ratio puts first pairs of digits seen a few times, and the
# two first choices are each far down the other's list.
#
# Which score does Hugging Face use? Its *course* illustrates WordPiece training with the ratio. Its
# `tokenizers` library, which trains the tokenizers of real models, uses neither: `WordPieceTrainer` runs the
# library's BPE trainer, with `##` in front of continuations, so it merges the most *frequent* pair, as BPE
# does. On the course's toy words:

# %%
# claim: wordpiece-trainer
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

toy_words = {"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}
hf_wordpiece = Tokenizer(models.WordPiece(unk_token="[UNK]"))
hf_wordpiece.pre_tokenizer = pre_tokenizers.Whitespace()
hf_wordpiece.train_from_iterator([w for w, n in toy_words.items() for _ in range(n)],
                                 trainers.WordPieceTrainer(vocab_size=100, special_tokens=["[UNK]"], show_progress=False))
hf_ids = hf_wordpiece.get_vocab()
toy_scores = first_merge_scores(toy_words)
trainer_facts = {
    "tokenizers' WordPieceTrainer, first 3 merged pieces": [t for t in sorted(hf_ids, key=hf_ids.get)
                                                            if len(t.removeprefix("##")) > 1 and t != "[UNK]"][:3],
    "the most frequent pair (count)": max(((p.token, p.count) for p in toy_scores), key=lambda tc: tc[1]),
    "the highest ratio (count)": max(((p.token, p.count, p.ratio) for p in toy_scores), key=lambda t: t[2])[:2],
    "train_wordpiece (the ratio), first 3 merges": [m.token for m in train_wordpiece(toy_words, 3, score="ratio")],
}
trainer_facts

# %% [markdown] slideshow={"slide_type": "fragment"}
# `tokenizers`' first merge is the most frequent pair, `##ug`; the ratio's is `##gs`, seen 5 times but made of
# a rare `##s`. The trainer here trains by the likelihood gain, as the heading says: `train_wordpiece(words, n)`;
# `score="ratio"` asks for the shortcut instead (the tiny BERT of notebook 11.2 uses neither: its vocabulary comes from `tokenizers`' trainer, by count). After each merge it rescores only the pairs that the merge changed (those containing
# a merged symbol; nearly every other pair's gain can only fall as the corpus shrinks, so a lazy heap rescores it
# when it reaches the top — a merge that makes a string another pair would also make is the rare exception), and
# `tests/test_tokenization_wordpiece.py` checks it merge for merge against a brute-force recount. BPE and both WordPiece
# scores on the same lower-cased words, their first merges side by side (new symbol, count):

# %%
wordpiece_merges = train_wordpiece(lower, 1000, score="gain")
ratio_merges = train_wordpiece(lower, 1000, score="ratio")
bpe_lower = learn_bpe(lower, 1000, end_of_word=None)
for b, g, r in zip(bpe_lower.merges[:10], wordpiece_merges[:10], ratio_merges[:10]):
    print(f"BPE {b.token:>5s} {b.count:5d}    WordPiece, gain {g.token:>5s} {g.count:5d}    "
          f"WordPiece, ratio {r.token:>6s} {r.count:3d}")

# %% [markdown] slideshow={"slide_type": "fragment"}
# The gain is, roughly, a pair's count times the log of how much more often its two parts meet than chance
# predicts: it wants pairs that are frequent, as BPE's count does, and whose parts belong together, as the ratio
# does. So it starts, like BPE, with frequent pairs, but not the same ones (whole words such as *of*, *to*, *and*
# and the ending *##ing*, where BPE takes letter pairs such as *an*, *er*, *re* that combine with many others);
# the ratio starts with pairs of rare symbols, digits above all. With 1,000 merges each:

# %%
# claim: wordpiece-training
wordpiece_1k = WordPiece(wordpiece_vocabulary(lower, wordpiece_merges))
ratio_1k = WordPiece(wordpiece_vocabulary(lower, ratio_merges))
bpe_lower_encoder = bpe_lower.tokenizer()
news = corpora.lee("test")
encoders = {"BPE": lambda w: bpe_lower_encoder.encode_words([w]).tokens, "WordPiece, gain": wordpiece_1k.encode_word,
            "WordPiece, ratio": ratio_1k.encode_word}
merged = {"BPE": bpe_lower.merges, "WordPiece, gain": wordpiece_merges, "WordPiece, ratio": ratio_merges}
frequent = sorted(lower, key=lambda w: -lower[w])[:100]
training_facts = {
    "pieces per word on held-out news": {name: round(compare.fertility(
        lambda t, e=encode: [p for w in basic_tokenize(t) for p in e(w)], news), 2) for name, encode in encoders.items()},
    "pieces per word on the training words": {name: round(sum(n * len(encode(w)) for w, n in lower.items())
                                                          / sum(lower.values()), 2) for name, encode in encoders.items()},
    "of the 100 most frequent words, whole": {name: sum(len(encode(w)) == 1 for w in frequent)
                                               for name, encode in encoders.items()},
    "mean count of the first 50 merged pairs": {name: round(sum(m.count for m in ms[:50]) / 50)
                                                for name, ms in merged.items()},
    "merges with a digit, of 1,000": {name: sum(any(c.isdigit() for c in m.token) for m in ms)
                                      for name, ms in merged.items()},
    "first 10 merges with a digit": {name: sum(any(c.isdigit() for c in m.token) for m in ms[:10])
                                     for name, ms in merged.items()},
    "in the gain's first 10, not in BPE's": [m.token for m in wordpiece_merges[:10]
                                             if m.token not in {b.token for b in bpe_lower.merges[:10]}],
    "in BPE's first 10, not in the gain's": [b.token for b in bpe_lower.merges[:10]
                                             if b.token not in {m.token for m in wordpiece_merges[:10]}],
    "merged symbols the gain and the ratio share, of 1,000": len({m.token for m in wordpiece_merges}
                                                                 & {m.token for m in ratio_merges}),
    "'government'": {name: encode("government") for name, encode in encoders.items()},
}
training_facts

# %% [markdown] slideshow={"slide_type": "fragment"}
# On held-out news BPE needs 2.06 pieces per word, WordPiece trained by the gain 2.27 and the ratio 4.43, more
# than twice as many; on the training words the order is the same. The two WordPiece scores share only 139 of
# their 1,000 merged symbols. The ratio spends 221 of its merges on pieces with digits (its first 50 merged pairs
# occur 5 times on average, against 1,451 for the gain) and leaves 74 of the 100 most frequent words in pieces:
# *government* stays ten single letters, where the gain and BPE make it one piece. Why does BPE still need fewer
# pieces than the gain? Partly the score: a BPE merge removes from the training words about one symbol for each
# time its pair occurs, so taking the most frequent pair is taking the merge that shortens the corpus most; the
# gain gives up some of that for pairs whose parts belong together. Partly WordPiece itself: its alphabet is
# doubled (*a* and *##a*), so a pair like *th* must be learnt twice, and it encodes greedily rather than by
# replaying merges. (The real BERT vocabulary was built from far more text,
# with 30,522 entries.)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Unigram language model (Kudo 2018)
#
# A unigram LM gives each piece $x_i$ a probability $p(x_i)$, and a segmentation $\mathbf{x} = x_1 \ldots x_m$ the
# product of its pieces' probabilities, $P(\mathbf{x}) = \prod_i p(x_i)$. Training (`course_lib/tokenization/unigram_training.py`): start from far too many
# pieces (every character and the most frequent substrings), then alternate EM (expected piece
# counts over *all* segmentations of every word, by forward-backward) and pruning (drop the pieces
# whose removal costs the corpus least likelihood) until 2,000 pieces are left. As SentencePiece does,
# the space belongs to the word that follows it, written `▁`. Each round runs two EM steps, then prunes. The
# history has one row per E-step: the vocabulary it starts from and the log-likelihood per word under the
# probabilities it starts from, before its update:

# %%
# claim: unigram-history
unigram_training = train_unigram(corpora.word_counts(train, split=str.split), 2000)
uni = unigram_training.model
history_facts = {
    "vocabulary size, log-likelihood per word, at each E-step": [(size, round(ll, 2))
                                                                   for size, ll in unigram_training.history],
    "first 10 pieces": list(uni.scores)[:10],
}
history_facts

# %% [markdown] slideshow={"slide_type": "fragment"}
# Read the history with three facts in mind. The log-likelihood printed is the one EM maximises, summed over
# every segmentation of each word. Each row scores the probabilities its E-step starts from, and the step's
# M-update also drops the pieces used less than half a time, so the next row can have fewer pieces. And two EM
# steps do not reach the best probabilities for a vocabulary: the first row scores the seed's raw substring
# counts and the second has had one EM step, so both show a larger vocabulary with a lower likelihood than the
# row after them. From there on, the likelihood rises within a round and falls when pruning removes pieces.
#
# To encode, take the most probable segmentation: **Viterbi**, dynamic programming over the word's
# lattice, best[i] = max over j of best[j] + log p(word[j:i]).

# %%
uni.tokenize(text), uni.viterbi("▁unrelated")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Exercise `viterbi`
# Write `viterbi_segment(word, log_probs)`: the segmentation of `word` into keys of `log_probs` whose
# log-probabilities have the largest sum. (Every character of the words graded is a key.) Careful:
# taking the longest piece first is not the same; on the toy table below it picks `▁unrelated`
# (log-probability −13.5) over `▁un` + `related` (−13.0).

# %%
toy_log_probs = {"▁": -3.0, "u": -4.0, "n": -3.5, "r": -3.8, "e": -3.0, "l": -3.9, "a": -3.2, "t": -3.3,
                 "d": -3.6, "▁un": -5.0, "un": -5.5, "re": -4.5, "rel": -6.0, "related": -8.0, "late": -6.5,
                 "ted": -5.8, "at": -4.2, "ed": -4.0, "▁unrelated": -13.5, "el": -5.2}
Unigram(toy_log_probs).viterbi("▁unrelated")

# %% tags=["exercise"]
def viterbi_segment(word, log_probs):
    """The most probable segmentation of word into pieces of log_probs."""
    ### BEGIN SOLUTION
    n = len(word)
    best, back = [0.0] + [float("-inf")] * n, [0] * (n + 1)
    for i in range(1, n + 1):
        for j in range(i):
            if word[j:i] in log_probs and best[j] + log_probs[word[j:i]] > best[i]:
                best[i], back[i] = best[j] + log_probs[word[j:i]], j
    segmentation, i = [], n
    while i > 0:
        segmentation.append(word[back[i]:i])
        i = back[i]
    return segmentation[::-1]
    ### END SOLUTION


# %%
check("viterbi")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Subword regularization: sampling segmentations
# Instead of always the best segmentation, a model in training can see a *sampled* one each time it
# meets a word, a segmentation $\mathbf{x}$ drawn with probability ∝ $P(\mathbf{x})^α$ (Kudo 2018). The sampler is exact: forward filtering
# sums over all segmentations (in log space), backward sampling then picks the last piece, the one
# before it, and so on. For a short word all segmentations can be listed, so the sampler's frequencies
# can be compared with the exact probabilities (the tests do it with a chi-square test):

# %%
word, alpha = "▁unrelated", 0.2
exact = uni.segmentations(word, alpha=alpha)
rng = random.Random(0)
draws = Counter(tuple(uni.sample(word, alpha=alpha, rng=rng)) for _ in range(2000))
len(exact), draws.most_common(3)

# %%
Image(figure_png(draw_segmentation_probs(exact, {k: v / 2000 for k, v in draws.items()}, top=8,
                                         title=f"segmentations of {word}, α = {alpha}: exact vs 2,000 samples")))

# %% [markdown] slideshow={"slide_type": "fragment"}
# **Predict.** If α is raised from 0.1 to 1.0, the share of samples that equal the Viterbi segmentation
# (`▁un related`)… goes up, goes down, or stays the same? Set `viterbi_share` to `"goes up"`,
# `"goes down"` or `"stays the same"`.

# %% tags=["exercise"]
### BEGIN SOLUTION
viterbi_share = "goes up"
### END SOLUTION

# %%
check("alpha_prediction")

# %%
# claim: alpha
viterbi_pieces = tuple(uni.viterbi(word))
alpha_facts = {"Viterbi": " ".join(viterbi_pieces),
               "its probability at α": {a: round(uni.segmentations(word, alpha=a)[viterbi_pieces], 3)
                                        for a in (0.1, 0.5, 1.0)}}
alpha_facts

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. On real text
#
# All the tokenizers side by side: BPE, byte-level BPE (its pieces in GPT-2's byte characters, `Ġ` for a
# space), BERT's WordPiece and Unigram. Type a sentence; move the BPE merges to see the vocabulary and the
# character-level segmentation grow; *sample again* draws another Unigram segmentation. Each tokenizer groups
# its pieces into words its own way, but the word count beside every row is the same: the text split at white
# space, as for fertility below.

# %% slideshow={"slide_type": "subslide"}
from course_lib.widgets import SubwordExplorer

course = compare.CourseTokenizers(bpe=learning, byte_bpe=byte_learning, unigram=unigram_training, wordpiece=wp)
SubwordExplorer(course)

# %% [markdown] slideshow={"slide_type": "fragment"}
# **Fertility** is the number of pieces per word: more pieces mean more of BERT's 512 positions and
# more compute for the same text. The texts shipped with the project: held-out news, WordNet glosses,
# Wikipedia sentences (wikigold) and Python code, up to 500 lines of each, and two small samples written for
# the project, numbers and dates and a German passage (10 lines each, 150 and 163 words: read their numbers as
# rough).
#
# **Predict.** For the BPE learnt from the news, which of these kinds of text needs the most pieces per
# word: `"news (held out)"`, `"Python code"`, `"numbers & dates"` or `"German"`? Set `most_pieces`.

# %% tags=["exercise"]
### BEGIN SOLUTION
most_pieces = "German"
### END SOLUTION

# %%
check("fertility_prediction")

# %%
# claim: fertility
samples = corpora.text_samples(max_lines=500)
table = compare.fertility_table(course.tokenizers(), samples)
bpe_name, bert_name = list(course.tokenizers())[0], list(course.tokenizers())[3]
byte_name = list(course.tokenizers())[1]
hard = ["Python code", "numbers & dates", "German"]
fertility_facts = {
    "BPE: most pieces per word": max(["news (held out)", *hard], key=lambda s: table[s][bpe_name]),
    "BERT WordPiece has the fewest pieces on every text": all(
        min(row, key=row.get) == bert_name for row in table.values()),
    "byte-level BPE needs the most on code": max(table["Python code"], key=table["Python code"].get) == byte_name,
    "code, numbers, German cost every tokenizer more than news": all(
        table[s][t] > table["news (held out)"][t] for s in hard for t in table[s]),
    "byte-level BPE needs more than BPE on code": table["Python code"][byte_name] > table["Python code"][bpe_name],
}
fertility_facts

# %%
Image(figure_png(draw_fertility(table)))

# %% [markdown] slideshow={"slide_type": "fragment"}
# The 30,522 pieces of BERT's WordPiece, about fourteen times as many (ours hold their alphabet and 2,000 merges)
# and learnt from far more text, beat the vocabularies learnt here on every kind of text; code,
# numbers and German cost every tokenizer more than news. Why does byte-level BPE need the most on code?
# Not for exotic characters: count them, and the pieces it spends.

# %%
# claim: fertility-why
tokenize = course.tokenizers()
code = samples["Python code"]
bpe_pieces = [p for line in code for p in tokenize[bpe_name](line)]
byte_pieces = [p for line in code for p in tokenize[byte_name](line)]
why_facts = {
    "lines and words of each text": {s: (len(t), sum(len(x.split()) for x in t)) for s, t in samples.items()},
    "non-ASCII characters in the Python code": sum(ord(c) > 127 for line in code for c in line),
    "byte-level BPE's extra pieces on the code (over BPE)": len(byte_pieces) - len(bpe_pieces),
    "byte-level BPE's pieces that are only spaces 'Ġ'": sum(set(p) == {"Ġ"} for p in byte_pieces),
    "BPE's pieces that are only spaces": sum(not p.strip() for p in bpe_pieces),
    "German, pieces per word: BPE, byte-level BPE": (round(table["German"][bpe_name], 2),
                                                     round(table["German"][byte_name], 2)),
    "BPE's unknown pieces per word": {s: round(sum(p == "[UNK]" for line in t for p in tokenize[bpe_name](line))
                                               / sum(len(x.split()) for x in t), 3) for s, t in samples.items()},
    "words that occur in the news BPE learnt from": {s: round(sum(w in counts for x in t for w in x.split())
                                                              / sum(len(x.split()) for x in t), 2)
                                                     for s, t in samples.items()},
}
why_facts

# %% [markdown] slideshow={"slide_type": "fragment"}
# The code has no non-ASCII character at all. Byte-level BPE's pre-tokenizer keeps spaces (`Ġ`), and this
# vocabulary, learnt from news, has no piece for a run of spaces, so nearly every space of the indentation
# becomes a piece of its own: 3,969 of its 4,170 extra pieces, where the other tokenizers split on white space
# and drop it (a byte-level BPE trained on indented code learns pieces for such runs). On German, where *ä*, *ö*,
# *ü* and *ß* are outside the news alphabet, byte-level BPE ends close to BPE (3.73 pieces per word against
# 3.69, a handful of pieces on 163 words: too close to call either way): where character-level BPE writes one
# unknown token it needs two pieces, one per byte, and elsewhere the two differ a little either way.
#
# And German costs BPE the most pieces of all, though not for its unknown characters: the code has more of them
# per word (its `_ = # { } \\ %` are not in the news either), and an unknown character costs one piece, as does
# a letter no merge joined. What sets German apart is how few of its words the news holds: about one in ten
# occurs in the news BPE learnt from, against about half of the code's (its keywords and names are English).
#
# **Rare words fragment.** Words of the training text grouped by how often they occur there, and the
# mean number of pieces each tokenizer gives them:

# %%
# claim: fragmentation
bins = {"BPE (news, 2,000 merges)": compare.pieces_by_frequency(bpe.encode_word, counts),
        "BERT WordPiece": compare.pieces_by_frequency(lambda w: wp.encode_word(normalize(w)), counts)}
fragment_facts = {name: [round(b.mean_pieces, 2) for b in bs] for name, bs in bins.items()}
fragment_facts["characters per word (one piece per character)"] = [
    round(b.mean_pieces, 2) for b in compare.pieces_by_frequency(list, counts)]
fragment_facts

# %%
Image(figure_png(draw_fragmentation(bins, title="rare words fragment (Lee news, words by frequency)")))

# %% [markdown] slideshow={"slide_type": "fragment"}
# For both, the rarer the word, the more pieces. BPE's merges were made for the words that occur often in
# its corpus, so these are whole pieces while words seen once are cut into several. BERT's WordPiece never saw
# this news, so its curve needs another reason: the words rare here are longer (7.35 characters on average for
# words seen once, against 3.38 for words seen 100 times or more), and the frequent ones are the short words of
# any English text, which a vocabulary learnt from far more text holds whole too. With fourteen times the
# pieces, it cuts rare words far less (1.41 pieces against BPE's 3.28 for words seen once); only the words seen
# 20 times or more, the ones BPE's merges were made for, does BPE keep whole more often. This is what subwords buy: almost no word is unknown (none in byte-level BPE), and frequent words cost one position.
#
# **Where next.** Notebook 11.4b uses `word_ids` to align word labels with pieces (named entities in
# BIO tags, §11.4.3).
