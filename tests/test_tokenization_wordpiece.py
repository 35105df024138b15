"""BERT's pre-tokenizer and WordPiece from scratch, proven equal to the embedded model's own tokenizer."""
from __future__ import annotations

import doctest

import pytest
from tokenizers import Tokenizer, normalizers, pre_tokenizers

from course_lib.checkpoints import embedded_model_dir
from course_lib.tokenization import corpora, pretokenize, wordpiece
from course_lib.tokenization.wordpiece import WordPiece, train_wordpiece

# edge cases beside the real sentences: accents, ligatures, full-width letters, CJK, controls, special tokens,
# a word of exactly 100 characters (kept) and of 101 (unknown), characters outside the vocabulary
EDGE_CASES = [
    "Mt. Sanitas is in Sunshine Canyon.",
    "Björk's café in Zürich costs €4.50 — naïve, isn't it?",
    "x" * 100, "y" * 101, "antidisestablishmentarianism " + "pneumonoultramicroscopicsilicovolcanoconiosis",
    "Ｆｕｌｌｗｉｄｔｈ ｌｅｔｔｅｒｓ and the ﬁ ligature", "中文字符 and 日本語のテキスト", "İstanbul ǅ ß ẞ Σίσυφος",
    "\x00\ufffd\u200b zero-width and\tcontrol\x07 characters\r\n", "a\u0301e\u0308 combining marks",
    "[MASK] [SEP]x[UNK]y [CLS]", "snowman ☃ and 🙂 emoji", "1,204,317 people; 55.6% on 2023-11-07 at 06:45",
    "", "   \t\n ",
]


@pytest.fixture(scope="module")
def reference() -> Tokenizer:
    tok = Tokenizer.from_file(str(embedded_model_dir() / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


@pytest.fixture(scope="module")
def ours() -> WordPiece:
    return WordPiece.from_tokenizer_json(embedded_model_dir() / "tokenizer.json")


def real_sentences() -> list[str]:
    return [*corpora.lee("train"), *corpora.lee("test"), *corpora.wordnet_glosses(), *corpora.wikipedia(),
            *corpora.written_for_the_project("german"), *corpora.written_for_the_project("numbers")]


def test_docstring_examples_hold():
    for module in (pretokenize, wordpiece):
        assert doctest.testmod(module).failed == 0


def test_normalizer_and_splitter_equal_tokenizers_character_by_character():
    norm = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True)
    split = pre_tokenizers.BertPreTokenizer()
    # everything below U+0600 (Latin, Greek, Cyrillic, Armenian, Hebrew, controls), general punctuation,
    # symbols, CJK punctuation and kana, the CJK ideographs and their edges, compatibility forms
    code_points = [*range(0x600), *range(0x2000, 0x2E40), *range(0x3000, 0x3100), *range(0x4DB0, 0x4E10),
                   *range(0x9FF0, 0xA010), *range(0xF8F0, 0xFB10), *range(0xFE30, 0xFFFE),
                   0x2A6DF, 0x2A6E0, 0x2B73F, 0x2B740, 0x2B81F, 0x2B920, 0x2CEAF, 0x2F800, 0x2FA1F, 0x2FA20]
    for cp in code_points:
        text = f"a{chr(cp)}B c"
        assert pretokenize.normalize(text) == norm.normalize_str(text), f"U+{cp:04X}"
        assert pretokenize.split_words(text) == [w for w, _ in split.pre_tokenize_str(text)], f"U+{cp:04X}"


def test_lowercasing_is_per_character_as_in_tokenizers():
    """Python's str.lower() applies Unicode's final-sigma rule to a whole string; tokenizers lower-cases each
    character, so a word-final capital sigma becomes σ, not ς."""
    norm = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True)
    for text in ("ΟΔΟΣ", "ΟΔΟΣ ΚΑΙ ΣΟΦΙΑ.", "Σ", "ΑΣ, ΒΣ!", "İstanbul", "ǅemal", "STRAẞE"):
        assert pretokenize.normalize(text) == norm.normalize_str(text), text
    assert pretokenize.normalize("ΟΔΟΣ") == "οδοσ"


def test_wordpiece_equals_the_embedded_tokenizer_on_real_sentences(reference, ours):
    texts = real_sentences() + EDGE_CASES
    accented = sum(any(ord(c) > 127 for c in t) for t in texts)
    with_digits = sum(any(c.isdigit() for c in t) for t in texts)
    long_words = sum(any(len(w) > 15 for w in t.split()) for t in texts)
    assert len(texts) >= 2000 and accented >= 100 and with_digits >= 500 and long_words >= 50, \
        (len(texts), accented, with_digits, long_words)
    for text in texts:
        expected = reference.encode(text, add_special_tokens=False)
        got = ours.encode(text)
        assert got.tokens == expected.tokens, text
        assert got.ids == expected.ids, text
        assert got.word_ids == expected.word_ids, text


def test_the_chapters_example_and_its_word_ids(ours):
    seg = ours.encode("Mt. Sanitas is in Sunshine Canyon.")
    assert seg.tokens == ["mt", ".", "san", "##itas", "is", "in", "sunshine", "canyon", "."]
    assert seg.word_ids == [0, 1, 2, 2, 3, 4, 5, 6, 7]
    assert seg.pieces_per_word()[2] == ["san", "##itas"]


def test_greedy_longest_match_first_on_a_toy_vocabulary():
    wp = WordPiece(["[UNK]", "un", "##aff", "##able", "u", "##n", "##a", "##ff", "##ab", "##le"], special_tokens=())
    assert wp.encode_word("unaffable") == ["un", "##aff", "##able"]   # longest first, not ["u", "##n", ...]
    assert wp.encode_word("unaffablez") == ["[UNK]"]                  # one piece fails: the whole word is unknown
    assert wp.encode_word("affable") == ["[UNK]"]                     # "aff" only exists as a continuation


def test_bad_input_gives_clear_results_or_errors(ours, reference):
    assert ours.tokenize("") == [] and ours.tokenize(" \t\n ") == []
    assert ours.tokenize("a" * 10_000) == ["[UNK]"] == reference.encode("a" * 10_000, add_special_tokens=False).tokens
    assert ours.tokenize("☃") == ["[UNK]"]
    with pytest.raises(ValueError, match=r"no '\[UNK\]' entry"):
        WordPiece(["a", "##b"])
    with pytest.raises(TypeError, match="expected a string"):
        ours.tokenize(None)
    with pytest.raises(ValueError, match="max_chars_per_word"):
        WordPiece(["[UNK]"], max_chars_per_word=0)


def test_training_by_the_ratio_differs_from_bpe_count_and_is_not_the_default():
    corpus = {"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}
    merges = train_wordpiece(corpus, 3, score="ratio")
    # the default is WordPiece's own criterion, the likelihood gain; the ratio is asked for by name
    assert train_wordpiece(corpus, 3) == train_wordpiece(corpus, 3, score="gain") != merges
    # ##g ##s: 5 / (20 · 5) = 0.05 beats every pair with the frequent ##u (at most 17 / (17 · 36))
    assert (merges[0].left, merges[0].right, merges[0].token) == ("##g", "##s", "##gs")
    assert merges[0].score == pytest.approx(5 / (20 * 5))
    # the three pairs with ##u tie at 1/36; the larger count (pu: 17) wins, then hu's score rises to 15/(15·19)
    assert [m.token for m in merges[1:]] == ["pu", "hu"]
    assert merges[2].score == pytest.approx(15 / (15 * 19))


def test_training_scores_are_those_of_a_full_recount():
    counts = corpora.word_counts(corpora.lee("test"), split=pretokenize.basic_tokenize)
    merges = train_wordpiece(counts, 40, score="ratio")
    words = {w: wordpiece.wordpiece_symbols(w) for w in counts}
    for m in merges:  # replay each merge and recompute its score from scratch
        pairs, symbols = {}, {}
        for w, syms in words.items():
            for s in syms:
                symbols[s] = symbols.get(s, 0) + counts[w]
            for p in zip(syms, syms[1:]):
                pairs[p] = pairs.get(p, 0) + counts[w]
        scores = {p: c / (symbols[p[0]] * symbols[p[1]]) for p, c in pairs.items()}
        assert scores[(m.left, m.right)] == pytest.approx(max(scores.values()), rel=1e-12)
        assert m.count == pairs[(m.left, m.right)]
        for w, syms in words.items():
            out, i = [], 0
            while i < len(syms):
                if i + 1 < len(syms) and (syms[i], syms[i + 1]) == (m.left, m.right):
                    out.append(m.token)
                    i += 2
                else:
                    out.append(syms[i])
                    i += 1
            words[w] = out


def _log_likelihood(seqs_counts):
    import math
    from collections import Counter

    c = Counter()
    for seq, n in seqs_counts:
        for x in seq:
            c[x] += n
    total = sum(c.values())
    return sum(v * math.log(v / total) for v in c.values())


def _merge(seq, a, b):
    out, i = [], 0
    while i < len(seq):
        if i + 1 < len(seq) and seq[i] == a and seq[i + 1] == b:
            out.append(a + b[2:] if b.startswith("##") else a + b)
            i += 2
        else:
            out.append(seq[i])
            i += 1
    return out


def test_likelihood_gain_is_the_change_in_the_unigram_log_likelihood_of_the_merged_corpus():
    """Parity with the definition: merge the pair everywhere, recompute the corpus log-likelihood."""
    from course_lib.tokenization.wordpiece import first_merge_scores, wordpiece_symbols

    words = {"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5, "sss": 3, "ssss": 2, "a1999": 1}
    seqs = [(wordpiece_symbols(w), n) for w, n in words.items()]
    base = _log_likelihood(seqs)
    scores = first_merge_scores(words)
    assert any(s.left == s.right for s in scores), "a same-symbol pair (##s ##s) is among them"
    for s in scores:
        merged = [(_merge(seq, s.left, s.right), n) for seq, n in seqs]
        assert s.gain == pytest.approx(_log_likelihood(merged) - base, abs=1e-9), s


def test_the_ratio_and_the_gain_rank_pairs_differently():
    from course_lib.tokenization.wordpiece import first_merge_scores

    scores = first_merge_scores({"the": 50, "then": 20, "other": 10, "q7": 1})
    by_gain = max(scores, key=lambda s: s.gain)
    by_ratio = max(scores, key=lambda s: (s.ratio, s.count))
    assert by_gain.token in {"th", "##he"} and by_ratio.token == "q7", (by_gain, by_ratio)  # frequent vs never apart
    assert by_ratio.gain < by_gain.gain / 10


def _greedy_gain_recount(word_counts: dict[str, int], num_merges: int) -> list[tuple[str, str, str, int]]:
    """WordPiece training by the likelihood gain, brute force: before every merge, recount every pair, every
    symbol and the total from scratch and score every pair (ties: the larger count, then vocabulary order)."""
    from collections import Counter

    from course_lib.tokenization.wordpiece import likelihood_gain, wordpiece_symbols

    words = [(wordpiece_symbols(w), n) for w, n in word_counts.items()]
    vocab = sorted({s for seq, _ in words for s in seq}, key=lambda s: (s.startswith("##"), s))
    merges = []
    for _ in range(num_merges):
        symbols, pairs = Counter(), Counter()
        for seq, n in words:
            for x in seq:
                symbols[x] += n
            for p in zip(seq, seq[1:]):  # a pair of two different symbols: at every position
                if p[0] != p[1]:
                    pairs[p] += n
            i = 0
            while i < len(seq) - 1:  # one symbol twice: left to right without overlap, as the merge replaces them
                if seq[i] == seq[i + 1]:
                    pairs[(seq[i], seq[i])] += n
                    i += 2
                else:
                    i += 1
        if not pairs:
            break
        total = sum(symbols.values())

        def key(p):
            token = p[0] + p[1].removeprefix("##")
            gain = likelihood_gain(pairs[p], symbols[p[0]], symbols[p[1]], total, p[0] == p[1], symbols.get(token, 0))
            return (-gain, -pairs[p], vocab.index(p[0]), vocab.index(p[1]))

        a, b = min(pairs, key=key)
        token = a + b.removeprefix("##")
        merges.append((a, b, token, pairs[(a, b)]))
        if token not in vocab:
            vocab.append(token)
        words = [(_merge(seq, a, b), n) for seq, n in words]
    return merges


@pytest.mark.parametrize("seed", range(6))
def test_training_by_the_gain_equals_a_brute_force_greedy_recount(seed):
    """Small random corpora over a few letters: runs of one letter (##s ##s ##s), and merges that make a string
    an earlier merge made already (##a ##bc and ##ab ##c), are common."""
    import random

    rng = random.Random(seed)
    corpus = {"".join(rng.choice("abcs") for _ in range(rng.randint(1, 7))): rng.randint(1, 9) for _ in range(40)}
    ours = [(m.left, m.right, m.token, m.count) for m in train_wordpiece(corpus, 30, score="gain")]
    assert ours == _greedy_gain_recount(corpus, 30)


def test_training_by_the_gain_on_real_words_equals_the_recount_and_raises_the_likelihood_most():
    counts = corpora.word_counts(corpora.lee("test"), split=pretokenize.basic_tokenize)
    counts = dict(sorted(counts.items(), key=lambda wc: -wc[1])[:400])
    merges = train_wordpiece(counts, 25, score="gain")
    assert [(m.left, m.right, m.token, m.count) for m in merges] == _greedy_gain_recount(counts, 25)
    seqs = [(wordpiece.wordpiece_symbols(w), n) for w, n in counts.items()]
    for m in merges:  # each merge's score is the change of the corpus log-likelihood it brings
        merged = [(_merge(seq, m.left, m.right), n) for seq, n in seqs]
        assert m.score == pytest.approx(_log_likelihood(merged) - _log_likelihood(seqs), rel=1e-9, abs=1e-6)
        seqs = merged


def test_training_by_the_gain_is_fast_enough_for_a_notebook_cell():
    import time

    counts = corpora.word_counts(corpora.lee("train"), split=pretokenize.basic_tokenize)
    start = time.perf_counter()
    merges = train_wordpiece(counts, 1000, score="gain")
    assert time.perf_counter() - start < 20 and len(merges) == 1000
    assert [m.token for m in merges[:7]] == ["th", "the", "of", "to", "in", "##ng", "##ing"]
    with pytest.raises(ValueError, match="score must be 'ratio' or 'gain'"):
        train_wordpiece(counts, 3, score="likelihood")


def test_likelihood_gain_when_the_merged_string_is_already_a_symbol():
    """Two merges can make one string (##ab ##c and ##a ##bc): the gain then counts the symbol's earlier
    occurrences too (``existing``)."""
    from course_lib.tokenization.wordpiece import likelihood_gain

    seqs = [(["x", "##abc"], 3), (["y", "##ab", "##c"], 2), (["##ab", "##c", "##c"], 4), (["z", "##c"], 1)]
    merged = [(_merge(seq, "##ab", "##c"), n) for seq, n in seqs]
    gain = likelihood_gain(6, 6, 11, 26, existing=3)  # ##ab ##c 6 times, ##ab 6, ##c 11, 26 symbols, ##abc 3
    assert gain == pytest.approx(_log_likelihood(merged) - _log_likelihood(seqs), abs=1e-9)
    assert gain != pytest.approx(likelihood_gain(6, 6, 11, 26))
