"""The tokenizer: parity with transformers' tokenizers of the same checkpoint, pairs, word ids, limits."""
import shutil
import warnings

import pytest
import torch

from course_lib.tokenization.bert_tokenizer import BertTokenizer
from conftest import DATA


def sentences():
    lines = (DATA / "tokenizer_sentences.txt").read_text(encoding="utf-8").splitlines()
    return [s.replace("\\t", "\t").replace("\\r", "\r").replace("\\n", "\n") for s in lines if s]


def test_sentence_set_is_large_and_varied():
    s = sentences()
    assert len(s) >= 200
    assert any(any(ord(c) > 0x1F000 for c in x) for x in s), "needs emoji"
    assert any("é" in x for x in s) and any(c.isdigit() for x in s for c in x)
    assert any(len(w) > 100 for x in s for w in x.split()), "needs a word longer than WordPiece's 100-char limit"


def _assert_same(ours, ref, texts, pairs=None):
    for i, t in enumerate(texts):
        args = (t, pairs[i]) if pairs else (t,)
        mine = ours(*args)
        theirs = ref(*args)
        assert mine.input_ids[0].tolist() == theirs["input_ids"], f"input_ids differ for {t!r}"
        assert mine.token_type_ids[0].tolist() == theirs["token_type_ids"], f"token_type_ids differ for {t!r}"
        assert mine.word_ids[0] == theirs.word_ids(), f"word_ids differ for {t!r}"


def test_tokenizer_matches_transformers_fast_tokenizer(embedded, embedded_dir):
    import transformers

    ref = transformers.AutoTokenizer.from_pretrained(embedded_dir)
    s = sentences()
    _assert_same(embedded[1], ref, s)
    _assert_same(embedded[1], ref, s[:100], pairs=s[100:200])


def test_tokenizer_built_from_vocab_txt_matches_transformers_python_tokenizer(tmp_path, embedded_dir):
    """A directory with only vocab.txt (no tokenizer.json): our WordPiece pipeline vs the reference."""
    import transformers

    for f in ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(embedded_dir / f, tmp_path / f)
    ours = BertTokenizer.from_dir(tmp_path)
    ref = transformers.BertTokenizer.from_pretrained(tmp_path)  # the pure-Python reference
    for t in sentences():
        want = ref(t)["input_ids"]
        assert ours(t).input_ids[0].tolist() == want, f"input_ids differ for {t!r}"


def test_chapter_example_splits_into_subwords_that_map_back_to_words(embedded):
    _, tok = embedded
    enc = tok("Mt. Sanitas is in Sunshine Canyon.")
    assert enc.tokens[0] == ["[CLS]", "mt", ".", "san", "##itas", "is", "in", "sunshine", "canyon", ".", "[SEP]"]
    assert enc.word_ids[0] == [None, 0, 1, 2, 2, 3, 4, 5, 6, 7, None]
    assert tok.tokenize("Sanitas") == ["san", "##itas"]


def test_sentence_pair_layout_and_segments(embedded):
    _, tok = embedded
    enc = tok("The cat sat.", "It was tired.")
    toks = enc.tokens[0]
    assert toks[0] == "[CLS]" and toks.count("[SEP]") == 2 and toks[-1] == "[SEP]"
    first_sep = toks.index("[SEP]")
    assert enc.token_type_ids[0].tolist() == [0] * (first_sep + 1) + [1] * (len(toks) - first_sep - 1)
    assert enc.sequence_ids[0][1] == 0 and enc.sequence_ids[0][-2] == 1


def test_batch_is_right_padded_with_attention_mask(embedded):
    _, tok = embedded
    enc = tok(["Short.", "A somewhat longer sentence than the first."])
    n_short = len(tok.tokenize("Short.")) + 2
    assert enc.input_ids.shape[0] == 2
    assert enc.attention_mask[0].tolist() == [1] * n_short + [0] * (enc.input_ids.size(1) - n_short)
    assert (enc.input_ids[0, n_short:] == tok.pad_token_id).all()
    assert enc.word_ids[0][n_short:] == [None] * (enc.input_ids.size(1) - n_short)
    assert set(enc.keys()) == {"input_ids", "attention_mask", "token_type_ids"}


def test_mask_token_in_text_is_recognised(embedded):
    _, tok = embedded
    enc = tok("Please turn [MASK] homework in.")
    assert (enc.input_ids[0] == tok.mask_token_id).sum() == 1


def test_over_long_text_is_refused_with_a_message(embedded):
    _, tok = embedded
    text = "word " * 600
    with pytest.raises(ValueError, match=r"too long: the text has 602 tokens \(counting \[CLS\] and \[SEP\]\); "
                                         r"the model takes at most 512\. Shorten the text, or pass truncation=True"):
        tok(text)


def test_over_long_text_is_truncated_when_asked_and_says_so(embedded):
    _, tok = embedded
    with pytest.warns(UserWarning, match=r"truncated: text 1 has 602 tokens; cut to the first 512 tokens"):
        enc = tok(["short one", "word " * 600], truncation=True)
    assert enc.input_ids.shape == (2, 512)
    assert enc.tokens[1][-1] == "[SEP]"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tok("word " * 100).input_ids.shape == (1, 102)  # no warning below the limit


@pytest.mark.parametrize("args, message", [
    (("",), "the text is empty: give at least one word to tokenize"),
    (("   \n",), "the text is empty: give at least one word to tokenize"),
    ((["fine", ""],), "text 1 of the batch is empty: give at least one word to tokenize"),
    (("A sentence.", ""), "the second sentence of the pair is empty: give at least one word to tokenize"),
    (([],), "no text given: pass a string or a non-empty list of strings"),
    ((["a", "b"], ["c"]), "got 2 first sentences but 1 second sentences"),
])
def test_empty_text_is_refused_with_a_message(embedded, args, message):
    _, tok = embedded
    with pytest.raises(ValueError) as err:
        tok(*args)
    assert str(err.value) == message


def test_non_string_input_is_refused(embedded):
    with pytest.raises(TypeError, match="the text must be a string or a list of strings, not int"):
        embedded[1](42)


def test_encoding_moves_to_device(embedded):
    _, tok = embedded
    enc = tok("hello", device="cpu")
    assert enc.input_ids.device.type == "cpu" and enc.input_ids.dtype == torch.long
