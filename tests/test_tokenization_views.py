"""The views and the widget of notebook 11.1b, the corpora and the fertility comparison."""
from __future__ import annotations

import html
import re

import pytest

from course_lib.checkpoints import embedded_model_dir
from course_lib.tokenization import compare, corpora
from course_lib.tokenization.bpe import learn_bpe
from course_lib.tokenization.byte_level import learn_byte_bpe
from course_lib.tokenization.compare import CourseTokenizers
from course_lib.tokenization.segmentation import Segmentation
from course_lib.tokenization.unigram_training import train_unigram
from course_lib.tokenization.wordpiece import WordPiece
from course_lib.views.tokenization import (comparison_html, draw_fertility, draw_fragmentation,
                                           draw_segmentation_probs, merges_html, pieces_html)


@pytest.fixture(scope="module")
def small() -> CourseTokenizers:
    """Small versions of the notebook's tokenizers, learnt from the 50 held-out stories (fast)."""
    texts = corpora.lee("test")
    return CourseTokenizers(
        bpe=learn_bpe(corpora.word_counts(texts), 150),
        byte_bpe=learn_byte_bpe(texts, 150),
        unigram=train_unigram(corpora.word_counts(texts, split=str.split), 300),
        wordpiece=WordPiece.from_tokenizer_json(embedded_model_dir() / "tokenizer.json"),
    )


# Texts on which the rows disagreed when each counted the words of its own segmentation ("(hello)": 3/3/4 for
# BPE/WordPiece/Unigram, "東京は日本の首都です" 1/9/1, "[UNK] [CLS]" "2 tokens, 6 words" for WordPiece)
WORD_COUNT_TEXTS = {"(hello)": 1, "x [y] z": 3, "«quoted»": 1, "東京は日本の首都です": 1, "[UNK] [CLS]": 2,
                    "The dog barked, didn't it? Yes.": 6, "Mt. Sanitas is in Sunshine Canyon.": 6}


def _row_counts(rows_html: str) -> list[tuple[int, int]]:
    return [(int(t), int(w)) for t, w in re.findall(r"(\d+) tokens?, (\d+) words?</span>", rows_html)]


@pytest.mark.parametrize("text", list(WORD_COUNT_TEXTS))
def test_every_row_counts_the_same_words_for_the_same_text(small, text):
    """One word count, from the typed text (split at white space, compare.count_words), on every row; the boxes
    still group the pieces by each tokenizer's own words."""
    from course_lib.widgets import SubwordExplorer

    assert compare.count_words(text) == WORD_COUNT_TEXTS[text]
    w = SubwordExplorer(small, text=text)
    counts = _row_counts(w.rows.value)
    assert len(counts) == 5 == w.rows.value.count("class='pieces-row'"), w.rows.value
    assert [n for _, n in counts] == [WORD_COUNT_TEXTS[text]] * 5, (text, counts)
    assert [t for t, _ in counts] == [len(seg) for _, seg, _, _ in w.segmentations()]
    assert "words: the text split at white space" in w.rows.value
    if text == "[UNK] [CLS]":
        assert counts[2] == (2, 2)  # WordPiece keeps both as special tokens: 2 tokens, 2 words (it said 6 words)


def test_fertility_counts_the_words_the_explorer_counts():
    assert compare.fertility(lambda t: list(t.replace(" ", "")), ["(hello) x", "東京は日本の首都です"]) == len(
        "(hello)x東京は日本の首都です") / 3


def test_pieces_html_shows_every_piece_its_id_the_counts_and_marks_unknowns():
    seg = Segmentation(["mt", ".", "san", "##itas", "[UNK]"], [11047, 1012, 2624, 24317, 100], [0, 1, 2, 2, 3],
                       ["mt", ".", "sanitas", "☃"])
    out = pieces_html(seg, "WordPiece", unk_id=100, words=4)
    for t, i in zip(seg.tokens, seg.ids):
        assert f">{html.escape(t)}<br><small" in out or f"⚠ {t}" in out
        assert f">{i}</small>" in out
    assert "5 tokens, 4 words" in out and out.count("class='word'") == 4
    assert "⚠ [UNK]" in out and "dashed" in out  # not by colour alone
    assert "no tokens" in pieces_html(Segmentation([], [], [], []), "empty")
    assert "1 token, 1 word" in pieces_html(Segmentation(["a"], [1], [0], ["a"]), words=1)
    assert ">1 token</span>" in pieces_html(Segmentation(["a"], [1], [0], ["a"]))  # no word count unless given
    both = comparison_html([("WordPiece", seg, "", 100), ("chars", Segmentation(["a"], [1], [0], ["a"]), "note", None)],
                           "Mt. Sanitas ☃")
    assert both.count("class='pieces-row'") == 2 and "note" in both and both.count("⚠") == 1
    assert _row_counts(both) == [(5, 3), (1, 3)]  # the text's 3 words on both rows, whatever each segmentation says


def test_merges_html_counts_the_vocabulary(small):
    out = merges_html(small.bpe, 10)
    assert f"{len(small.bpe.alphabet)} initial symbols + 10 merges = {len(small.bpe.vocabulary(10))} symbols" in out
    assert html.escape(small.bpe.merges[9].token) in out and out.count("<tr>") == 9  # header + the last 8 merges
    assert "characters only" in merges_html(small.bpe, 0)


def test_figures_have_labelled_axes():
    table = {"news": {"a": 1.2, "b": 1.5}, "code": {"a": 2.0, "b": 3.1}}
    bins = compare.pieces_by_frequency(lambda w: list(w), corpora.word_counts(["a bb a ccc a bb"]))
    for fig in (draw_fertility(table), draw_fragmentation({"chars": bins}),
                draw_segmentation_probs({("▁un", "related"): 0.6, ("▁unrelated",): 0.4}, {("▁un", "related"): 0.55})):
        ax = fig.axes[0]
        assert ax.get_xlabel() and ax.get_ylabel()


def test_fertility_and_fragmentation():
    def chars(t):
        return [c for c in t if not c.isspace()]

    assert compare.fertility(str.split, ["a b c", "d e"]) == 1.0
    assert compare.fertility(chars, ["ab cd"]) == 2.0 and compare.fertility(chars, []) == 0.0
    assert compare.unknown_share(lambda t: ["[UNK]", "x"], ["t"], "[UNK]") == 0.5
    bins = compare.pieces_by_frequency(lambda w: list(w), corpora.word_counts(["a bb a ccc a bb dddd"]),
                                       bins=((1, 1), (2, 2), (3, None)))
    assert [(b.label, b.words, b.mean_pieces) for b in bins] == [("1", 2, 3.5), ("2", 1, 2.0), ("≥ 3", 1, 1.0)]
    assert bins[0].example == "dddd" and bins[0].example_pieces == ("d", "d", "d", "d")


def test_the_passages_written_for_the_project_match_their_data_card():
    from course_lib.paths import data_dir

    text = data_dir("tokenization", "DATA_CARD.md").read_text()
    for name in ("german", "numbers"):
        lines = corpora.written_for_the_project(name)
        row = re.search(rf"`{name}.txt` \| .*? \| (\d+) \| (\d+) \|", text)
        assert row, f"{name}.txt has no row in the data card"
        assert (len(lines), sum(len(line.split()) for line in lines)) == (int(row.group(1)), int(row.group(2)))
    with pytest.raises(ValueError, match="there is no passage"):
        corpora.written_for_the_project("klingon")
    samples = corpora.text_samples()
    assert set(samples) == {"news (held out)", "WordNet glosses", "Wikipedia", "Python code", "numbers & dates",
                            "German"}
    assert all(len(v) >= 10 for v in samples.values())
    assert not set(corpora.lee("test")) & set(corpora.lee("train"))


def test_explorer_responds_to_text_merges_alpha_and_sample_again(small):
    from course_lib.widgets import SubwordExplorer

    w = SubwordExplorer(small, text="Mt. Sanitas is in Sunshine Canyon.", alpha=0.5)
    assert w.rows.value.count("class='pieces-row'") == 5 and w.message.value == ""
    assert "BPE (150 merges)" in w.rows.value and ">san<" in w.rows.value and ">##itas<" in w.rows.value
    assert [name for name, *_ in w.segmentations()] == ["BPE (150 merges)", "byte-level BPE (150 merges)",
                                                        "WordPiece (BERT)", "Unigram, Viterbi", "Unigram, sample 1"]

    w.merges.value = 0  # characters only: every character of the text is a piece
    assert "BPE (0 merges)" in w.rows.value and "characters only" in w.vocab.value
    bpe_row = w.rows.value.split("class='pieces-row'")[1]
    assert re.search(r"(\d+) tokens", bpe_row).group(1) == str(len("Mt.SanitasisinSunshineCanyon."))

    first = w.segmentations()[4][1].tokens
    samples = {tuple(first)}
    for _ in range(20):
        w.sample.click()
        samples.add(tuple(w.segmentations()[4][1].tokens))
    assert len(samples) > 1, "sample again should draw other segmentations"
    assert all("".join(s).replace("▁", " ").strip() == "Mt. Sanitas is in Sunshine Canyon." for s in samples)
    assert f"sample {w.draws + 1}" in w.rows.value

    w.alpha.value = 1.0
    assert "α = 1.00" in w.rows.value

    w.text.value = "   "
    assert "no text" in w.message.value and w.rows.value == ""
    w.text.value = "x" * 5000
    assert "at most 1,000" in w.message.value
    w.text.value = "snow ☃ man"
    assert "⚠" in w.rows.value and w.message.value == ""
    w.text.value = "a\ud800b"  # a lone surrogate has no UTF-8 bytes: byte-level BPE raised UnicodeEncodeError
    assert "U+D800" in w.message.value and w.rows.value == ""


def test_explorer_shows_byte_level_bpe_with_gpt2_characters_and_no_unknown(small):
    """The notebook calls the explorer "all the tokenizers side by side" and passes byte_bpe in; it showed no
    byte-level row. The row spells bytes as GPT-2 does (Ġ = a space) and decodes back to the text."""
    from course_lib.tokenization.byte_level import from_byte_string
    from course_lib.widgets import SubwordExplorer

    text = "Zürich ☃ is at 4°C."
    w = SubwordExplorer(small, text=text)
    name, seg, note, unk = w.segmentations()[1]
    assert name == "byte-level BPE (150 merges)" and unk is None and "Ġ = a space" in note
    assert from_byte_string(seg.tokens) == text and any(t.startswith("Ġ") for t in seg.tokens)
    row = w.rows.value.split("class='pieces-row'")[2]
    assert "byte-level BPE" in row and "⚠" not in row and html.escape(seg.tokens[-1]) in row
    assert "⚠" in w.rows.value.split("class='pieces-row'")[1]  # character-level BPE: ☃ and ü are unknown there
    w.merges.value = 0  # the slider moves character-level BPE only
    assert w.segmentations()[1][1].tokens == seg.tokens


def test_explorer_reads_white_space_as_space_and_labels_invisible_unknowns(small):
    """A tab, a newline or a no-break space showed in the Unigram rows as an unlabelled ⚠ box: the Unigram reads
    them as spaces (as SentencePiece's nmt_nfkc does), and a character that prints as nothing and is still unknown
    (a control character) is labelled by its code point."""
    from course_lib.views.tokenization import visible
    from course_lib.widgets import SubwordExplorer

    w = SubwordExplorer(small, text="the\tgovernment\nsaid\u00a0so")
    rows = w.rows.value.split("class='pieces-row'")[1:]
    plain = SubwordExplorer(small, text="the government said so").segmentations()
    for (name, seg, _, _), (_, same, _, _), row in zip(w.segmentations()[3:], plain[3:], rows[3:]):
        assert seg.tokens == same.tokens and "⚠" not in row, name
    w.text.value = "bell\x07 here"
    assert "⚠ U+0007" in w.rows.value and "\x07" not in w.rows.value
    assert visible("a\tb\u200b") == "aU+0009bU+200B" and visible("##itas") == "##itas"
