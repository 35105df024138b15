"""The 11.4b views (pure HTML/SVG) and widgets: the alignment viewer and the QA span viewer, without a browser."""
from __future__ import annotations

import re

import pytest
import torch

from course_lib.finetuning.labelling import LabelSet, split_words
from course_lib.views.labelling import (alignment_html, alignment_table, decoded_entities, qa_answer_html, qa_strips,
                                        qa_svg)

WORDS = ["Mt.", "Sanitas", "is", "in", "Sunshine", "Canyon", "."]
TAGS = ["B-LOC", "I-LOC", "O", "O", "B-LOC", "I-LOC", "O"]
TOKENS = ["[CLS]", "mt", ".", "san", "##itas", "is", "in", "sunshine", "canyon", ".", "[SEP]"]
WIDS = [None, 0, 0, 1, 1, 2, 3, 4, 5, 6, None]


def test_split_words_keeps_abbreviations_and_splits_the_final_stop():
    assert split_words("Mt. Sanitas is in Sunshine Canyon.") == WORDS
    assert split_words('"Hi," said Jane (of U.S. Steel).') == ['"', "Hi", ",", '"', "said", "Jane", "(", "of", "U.S.",
                                                               "Steel", ")", "."]
    assert split_words("  ") == []


def test_the_widgets_split_words_with_one_function():
    """The alignment viewer refused 'Ulaanbaatar \u180b is' ("words [1] have no subword") while the span widgets
    kept the selector with the word before it: they had two splitters. Now there is one."""
    from course_lib.finetuning import conll
    from course_lib.widgets import labelling, spans

    assert labelling.split_words is spans.split_words is conll.split_words
    assert split_words("Ulaanbaatar \u180b is") == ["Ulaanbaatar\u180b", "is"]
    assert split_words("\ufe0f") == [] and split_words("\u200b Paris \ufe0f .") == ["Paris\ufe0f", "."]
    assert split_words("I ❤️ New York") == ["I", "❤️", "New", "York"]


def test_every_word_the_splitter_makes_has_a_subword(embedded):
    """Every character on its own, between two words: the splitter never makes a word the tokenizer drops (a word
    without a subword cannot be tagged or spanned)."""
    tokenizer = embedded[1]
    chars = [chr(c) for c in range(0x20, 0x30000) if not 0xD800 <= c < 0xE000 and not chr(c).isspace()]
    words = sorted({w for c in chars for w in split_words(f"a {c} b")} - {"a", "b"})
    encs = tokenizer.backend.encode_batch(words, add_special_tokens=False)
    empty = [hex(ord(w[0])) for w, e in zip(words, encs) if not e.ids]
    assert not empty, f"words the tokenizer makes no token of: {empty[:20]}"


def test_alignment_table_rows_and_errors():
    pred = ["O", "B-LOC", "B-LOC", "O", "I-LOC", "O", "O", "B-LOC", "I-LOC", "O", "O"]
    cols = alignment_table(WORDS, TOKENS, WIDS, pred, TAGS)
    assert [c.token for c in cols] == TOKENS
    assert [c.gold_every for c in cols][1:5] == ["B-LOC", "B-LOC", "I-LOC", "I-LOC"]
    assert [c.gold_first for c in cols][1:5] == ["B-LOC", -100, "I-LOC", -100]
    # decoded at first subwords only; 'Sanitas' decoded from 'san' (O) is wrong, '##itas' is ignored
    assert [c.decoded for c in cols] == [None, "B-LOC", None, "O", None, "O", "O", "B-LOC", "I-LOC", "O", None]
    assert [i for i, c in enumerate(cols) if c.wrong] == [3]
    assert decoded_entities(WORDS, cols) == [("Mt.", "LOC"), ("Sunshine Canyon", "LOC")]
    html = alignment_html(WORDS, cols)
    assert html.count("class='wrong'") == 1 and "1 of 7 words tagged wrong (✗)" in html
    assert html.count("-100") == 2 + 2 + 2  # first-subword row: '.', '##itas'; [CLS] and [SEP] in both gold rows
    with pytest.raises(ValueError, match="2 gold tags for 7 words"):
        alignment_table(WORDS, TOKENS, WIDS, pred, ["O", "O"])


def test_alignment_html_without_gold_or_predictions():
    html = alignment_html(WORDS, alignment_table(WORDS, TOKENS, WIDS, gold=TAGS))
    assert "gold, every subword" in html and "predicted" not in html and "entities" not in html


def fake_view(T=12, ctx=range(5, 11), span=(6, 8), null=False):
    s, e = torch.zeros(T), torch.zeros(T)
    s[span[0]], e[span[1]] = 5.0, 5.0
    if null:
        s[0], e[0] = 9.0, 9.0
    mask = torch.zeros(T, dtype=torch.bool)
    mask[list(ctx)] = True
    return {"tokens": [f"t{i}" for i in range(T)], "context_mask": mask, "p_start": torch.softmax(s, 0),
            "p_end": torch.softmax(e, 0), "span": span, "text": "t6 t7 t8", "span_score": 10.0,
            "null_score": 18.0 if null else 0.0, "no_answer": null}


def test_qa_strips_show_cls_and_context_only():
    strips = qa_strips(fake_view())
    assert strips.positions == [0, 5, 6, 7, 8, 9, 10] and strips.tokens[0] == "t0"
    assert max(strips.p_start) == strips.p_start[2]  # position 6
    svg = qa_svg(strips)
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert svg.count("class='p-start'") == 7 and svg.count("class='p-end'") == 7
    m = re.search(r"<rect x='(\d+)' y='\d+' width='(\d+)'[^>]*class='best-span'", svg)
    assert m and int(m.group(2)) == 3 * 22  # tokens 6..8 shaded
    assert "no-answer" not in svg and "answer:" in qa_answer_html(fake_view())
    null = fake_view(null=True)
    assert "no-answer" in qa_svg(qa_strips(null)) and "no answer" in qa_answer_html(null)
    # a reader with a no-answer threshold says so: [CLS] 18 > span 10 + 5 means no answer, 18 < 10 + 9 an answer
    assert "&gt; best span 10.00 + threshold 5.00" in qa_answer_html({**null, "null_threshold": 5.0})
    assert "[CLS] 18.00, threshold 9.00)" in qa_answer_html({**null, "no_answer": False, "null_threshold": 9.0})


class FakeTagger:
    labels = LabelSet()

    def tag(self, words):
        T = len(TOKENS) if words == WORDS else len(words) + 2
        wids = WIDS if words == WORDS else [None] + list(range(len(words))) + [None]
        toks = TOKENS if words == WORDS else ["[CLS]"] + [w.lower() for w in words] + ["[SEP]"]
        return {"tokens": toks, "word_ids": wids, "subword_tags": ["O"] * T, "probs": torch.full((T, 9), 1 / 9)}


def test_alignment_viewer_widget_updates_and_shows_messages():
    from course_lib.widgets.labelling import AlignmentViewer

    w = AlignmentViewer(FakeTagger())
    assert "gold, first subword only" in w.table.value and w.message.value == ""
    assert "4 of 7 words tagged wrong" in w.table.value  # all-O prediction misses the four LOC words
    w.gold.value = "O O"
    assert "2 gold tags for 7 words" in w.message.value and w.table.layout.display == "none"
    w.gold.value = ""
    w.text.value = "Jane flew"
    assert w.message.value == "" and "jane" in w.table.value and "gold" not in w.table.value
    w.text.value = "   "
    assert "type a sentence" in w.message.value
    w.gold.value = "B-FOO"
    w.text.value = "Jane"
    assert "unknown tag &#x27;B-FOO&#x27;" in w.message.value  # the message is HTML-escaped


class FakeReader:
    max_answer_len = 30

    def answer(self, question, context):
        if not question.strip():
            raise ValueError("type a question")
        v = fake_view()
        v["windows"] = 1
        v["span"] = (6, 6 + min(2, self.max_answer_len - 1))  # at most max_answer_len tokens
        return v


def test_qa_span_viewer_widget():
    from course_lib.widgets.labelling import QASpanViewer

    w = QASpanViewer(FakeReader())
    assert "<svg" in w.strips.value and "answer:" in w.answer.value
    assert w.max_len.min == 1 and "max tokens" in w.max_len.description  # L counts tokens: a span holds 1 … L
    w.max_len.value = 0  # clamped to 1: one-token spans
    assert w.max_len.value == 1
    assert w.view["span"] == (6, 6) and FakeReader.max_answer_len == 30  # the slider does not leak
    w.question.value = " "
    assert "type a question" in w.message.value and w.strips.layout.display == "none"


def test_picking_an_example_redraws_once_with_its_gold_tags():
    """The browser sees every intermediate value: a pick must not show the new sentence without its gold rows."""
    from course_lib.widgets.labelling import AlignmentViewer

    w = AlignmentViewer(FakeTagger(), examples=[("Jane flew", "B-PER O")])
    w.gold.value = "B-PER"  # a bad state first: one tag for seven words
    assert w.message.value
    seen = []
    w.table.observe(lambda change: seen.append(change["new"]), "value")
    w.pick.value = 1
    assert len(seen) == 1 and "gold, first subword only" in seen[0] and "jane" in seen[0]
    assert w.message.value == "" and w.text.value == "Jane flew" and w.gold.value == "B-PER O"


def test_picking_a_question_redraws_once():
    from course_lib.widgets.labelling import QASpanViewer

    w = QASpanViewer(FakeReader(), examples=[("Who?", "Jane flew to Chicago.")])
    seen = []
    w.strips.observe(lambda change: seen.append(change["new"]), "value")
    w.pick.value = 1
    assert len(seen) <= 1 and w.question.value == "Who?" and w.context.value == "Jane flew to Chicago."


def test_qa_caption_sits_below_the_span_and_the_cls_box():
    svg = qa_svg(qa_strips(fake_view(null=True)))
    height = int(re.search(r"<svg [^>]*height='(\d+)'", svg).group(1))
    boxes = re.findall(r"<rect x='\d+' y='(\d+)' width='\d+' height='(\d+)'[^>]*class='(?:best-span|no-answer)'", svg)
    assert len(boxes) == 2
    bottom = max(int(y) + int(h) for y, h in boxes)
    caption_y = float(re.findall(r"<text x='\d+' y='([\d.]+)'>bars scaled", svg)[0])
    assert caption_y - 11 >= bottom and caption_y <= height  # 11 px font: its top clears the boxes, it stays inside


def test_value_bars_label_every_bar_a_zero_included():
    """The per-type F1 chart of 11.4b: the dictionary's PER F1 is 0, and an unlabelled bar of height 0 looked like
    a bar left out (an expert reader's finding); every bar now carries its value."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from course_lib.views.labelling import value_bars

    fig, ax = plt.subplots()
    try:
        series = {"entity dictionary": [0.31, 0.0, 0.23], "probe": [0.47, 0.42, 0.35]}
        labels = value_bars(ax, ["LOC", "PER", "micro avg"], series, ("#009E73", "#D55E00"))
        assert [t.get_text() for t in labels] == ["0.31", "0.00", "0.23", "0.47", "0.42", "0.35"]
        assert [t.get_text() for t in ax.texts] == [t.get_text() for t in labels]  # drawn on the axis
        assert [t.get_text() for t in ax.get_xticklabels()] == ["LOC", "PER", "micro avg"]
        assert [p.get_height() for p in ax.patches][1] == 0.0 and len(ax.patches) == 6
        assert ax.get_legend_handles_labels()[1] == list(series)
    finally:
        plt.close(fig)
