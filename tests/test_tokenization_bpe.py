"""BPE and byte-level BPE from scratch, proven equal to the ``tokenizers`` library's BpeTrainer and BPE model."""
from __future__ import annotations

import pytest

from course_lib.tokenization import corpora
from course_lib.tokenization.bpe import BPE, learn_bpe, pair_counts
from course_lib.tokenization.reference import bpe_trainer, merges_of
from course_lib.tokenization.byte_level import (ByteLevelBPE, bytes_to_unicode, from_byte_string, gpt2_words,
                                                learn_byte_bpe, to_byte_string)

MERGES = 2000


def train_reference(texts, merges: int, end_of_word: str | None = None, byte_level: bool = False):
    return bpe_trainer(texts, merges, end_of_word=end_of_word, byte_level=byte_level)


@pytest.fixture(scope="module")
def train_texts():
    return corpora.lee("train")


@pytest.fixture(scope="module")
def heldout_texts():
    texts = [*corpora.lee("test"), *corpora.wordnet_glosses(), *corpora.written_for_the_project("german"),
             *corpora.written_for_the_project("numbers"), "Björk café ☃ 中文\n\n  x", "   ", "", "aaaa abab"]
    assert len(texts) >= 2000
    return texts


@pytest.fixture(scope="module")
def reference_with_marker(train_texts):
    return train_reference(train_texts, MERGES, end_of_word="</w>")


def test_the_incremental_pair_counts_equal_a_full_recount_after_every_merge():
    words = corpora.word_counts(corpora.lee("test"))
    words.update({"aaaa": 3, "abab": 2, "aaa": 1})  # overlapping pairs: a a a a merges to aa aa
    pc = pair_counts(words)
    learning = learn_bpe(words, 40)
    for m in learning.merges:
        pair = (pc.ids[m.left], pc.ids[m.right])
        assert pc.pairs[pair] == m.count == max(pc.recount().values())
        pc.merge(pair, pc.add_symbol(m.token))
        assert {p: c for p, c in pc.pairs.items() if c} == pc.recount()


def test_learner_equals_bpe_trainer_merge_for_merge_without_a_marker(train_texts):
    learning = learn_bpe(corpora.word_counts(train_texts), MERGES, end_of_word=None)
    reference = train_reference(train_texts, MERGES)
    assert [(m.left, m.right) for m in learning.merges] == merges_of(reference)
    assert learning.tokenizer().vocab == reference.get_vocab()  # the same vocabulary, id for id


def test_learner_with_end_of_word_marker_equals_bpe_trainer_where_no_tie(train_texts, reference_with_marker):
    learning = learn_bpe(corpora.word_counts(train_texts), MERGES)
    ours = [(m.left, m.right) for m in learning.merges]
    theirs = merges_of(reference_with_marker)
    first_difference = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), None)
    # BpeTrainer numbers end-of-word symbols in hash order, so a tie may be broken the other way; nothing else may differ
    assert first_difference is None or first_difference >= 200 or learning.merges[first_difference].tied > 1
    ties = [i for i, m in enumerate(learning.merges[:200]) if m.tied > 1]
    assert ties, "the Lee corpus has ties among its first 200 merges (documented in the notebook)"


def test_every_bpe_trainer_merge_is_one_of_our_most_frequent_pairs(train_texts, reference_with_marker):
    """Replay BpeTrainer's merges on our counts: each is a most frequent pair; where that pair is unique, ours too."""
    words = corpora.word_counts(train_texts)
    pc = pair_counts(words)
    ours = learn_bpe(words, 400).merges
    for step, (a, b) in enumerate(merges_of(reference_with_marker)[:400]):
        top = max(pc.pairs.values())
        best = {p for p, c in pc.pairs.items() if c == top}
        pair = (pc.ids[a], pc.ids[b])
        assert pair in best, f"merge {step}: ({a}, {b}) occurs {pc.pairs.get(pair, 0)} times, the most is {top}"
        if len(best) == 1:
            assert (ours[step].left, ours[step].right) == (a, b) or ours[step - 1].tied > 1
        pc.merge(pair, pc.add_symbol(a + b))


@pytest.mark.parametrize("marker", ["</w>", None])
def test_encoder_with_bpe_trainers_merges_equals_tokenizers_on_heldout_text(train_texts, heldout_texts, marker,
                                                                              reference_with_marker):
    reference = reference_with_marker if marker else train_reference(train_texts, MERGES)
    ours = BPE.from_tokenizers(reference)
    for text in heldout_texts + ["x" * 10_000]:
        assert ours.tokenize(text) == reference.encode(text, add_special_tokens=False).tokens, text[:80]


def test_byte_level_learner_and_encoder_equal_tokenizers(train_texts, heldout_texts):
    reference = train_reference(train_texts, MERGES, byte_level=True)
    learning = learn_byte_bpe(train_texts, MERGES)
    assert [(m.left, m.right) for m in learning.merges] == merges_of(reference)
    ours = ByteLevelBPE.from_learning(learning)
    for text in heldout_texts + ["y" * 10_000]:
        expected = reference.encode(text).tokens
        assert ours.tokenize(text) == expected, text[:80]
        assert ours.decode(ours.tokenize(text)) == text


def test_byte_map_is_a_bijection_onto_printable_characters():
    table = bytes_to_unicode()
    assert sorted(table) == list(range(256)) and len(set(table.values())) == 256
    assert all(c.isprintable() and not c.isspace() for c in table.values())
    assert table[ord(" ")] == "Ġ" and table[ord("\n")] == "Ċ" and table[ord("A")] == "A"
    assert to_byte_string(" café") == "ĠcafÃ©" and from_byte_string("ĠcafÃ©") == " café"
    assert gpt2_words("It's 2024!") == ["It", "'s", "Ġ2024", "!"]


def test_bpe_learner_and_encoder_on_the_classic_example():
    learning = learn_bpe({"low": 5, "lower": 2, "newest": 6, "widest": 3}, 10)
    assert [(m.left, m.right, m.count) for m in learning.merges[:3]] == [("e", "s", 9), ("es", "t</w>", 9), ("l", "o", 7)]
    assert learning.merges[0].tied == 2  # (e, s) and (s, t</w>) both occur 9 times; 'e' comes first
    bpe = learning.tokenizer()
    assert bpe.encode_word("newest") == ["newest</w>"]
    assert bpe.encode_word("lowest") == ["lo", "w", "est</w>"]  # 'low</w>' ends a word: no merge made 'low' inside one
    assert learning.tokenizer(steps=0).encode_word("low") == ["l", "o", "w</w>"]
    assert len(learning.vocabulary(3)) == len(learning.alphabet) + 3


def test_special_tokens_typed_in_the_text_stay_whole_as_in_tokenizers():
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    ref = Tokenizer(models.BPE(unk_token="[UNK]"))
    ref.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    ref.train_from_iterator(["the cat sat on the mat."] * 20, trainers.BpeTrainer(
        vocab_size=60, special_tokens=["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"], show_progress=False))
    ours = BPE.from_tokenizers(ref)
    for text in ("the [UNK] cat", "the[MASK]mat [SEP].", "a [unk] [UNK][UNK] [CLS", "[PAD]"):
        assert ours.tokenize(text) == ref.encode(text).tokens, text
    own = learn_bpe({"low": 5, "lower": 2}, 5).tokenizer()   # learnt here: the unknown token stays whole too
    assert own.tokenize("low [UNK] low") == ["low</w>", "[UNK]", "low</w>"]
    assert own.tokenize("[UN") == ["[UNK]", "[UNK]", "[UNK]"]


def test_bad_input_gives_clear_results_or_errors():
    bpe = learn_bpe({"low": 5, "lower": 2}, 5).tokenizer()
    assert bpe.tokenize("") == [] and bpe.tokenize("  \t ") == []
    assert bpe.tokenize("low☃") == ["lo", "w", "[UNK]"]  # an unknown character, not a crash (and w is not final)
    assert len(bpe.tokenize("l" * 10_000)) == 10_000
    with pytest.raises(ValueError, match="not in the vocabulary and there is no unknown token"):
        learn_bpe({"low": 5}, 2).tokenizer(unk_token=None).tokenize("lox")
    with pytest.raises(ValueError, match="the corpus is empty"):
        learn_bpe({}, 10)
    with pytest.raises(ValueError, match="0 or more"):
        learn_bpe({"low": 1}, -1)
    with pytest.raises(TypeError, match="expected a string"):
        bpe.tokenize(42)
    with pytest.raises(ValueError, match="needs all 256 byte characters"):
        ByteLevelBPE([], ["a", "b"])
    assert ByteLevelBPE.from_learning(learn_byte_bpe(["low lower"], 3)).tokenize("☃") == ["â", "ĺ", "ĥ"]
