"""The 11.5 views (HTML/SVG) and widgets, without a browser."""
from __future__ import annotations

import re

import pytest
import torch

import course_lib
from course_lib.spans import count_spans, enumerate_spans, span_length_distribution
from course_lib.views.spans import (bracket_levels, length_histogram_svg, nested_spans_svg, span_mask_html,
                                    span_table_html)
from course_lib.widgets.spans import SpanEnumerator, SpanMaskSampler, split_words


@pytest.fixture(scope="module")
def tokenizer():
    return course_lib.load_pretrained()[1]


def test_span_mask_html_groups_each_span_with_its_fate():
    orig = ["[CLS]", "so", "long", "and", "thanks", "for", "[SEP]"]
    shown = ["[CLS]", "so", "[MASK]", "[MASK]", "thanks", "cat", "[SEP]"]
    out = span_mask_html(orig, shown, [(2, 3), (5, 5)], ["masked", "randomized"])
    assert out.count("class='span-unit'") == 2
    assert "data-fate='masked'" in out and "long → [MASK]" in out and "for → cat" in out
    with pytest.raises(ValueError, match="unknown fate"):
        span_mask_html(orig, shown, [(2, 3)], ["hidden"])


def test_histogram_has_a_bar_and_a_dot_per_length_and_labelled_axes():
    probs = span_length_distribution().tolist()
    svg = length_histogram_svg([5, 4, 3, 2, 1, 1, 0, 0, 0, 1], probs, title="t")
    assert svg.count("class='bar'") == 10 and svg.count("class='exact'") == 10
    assert "span length ℓ" in svg and ">share<" in svg and "17 drawn" in svg
    with pytest.raises(ValueError, match="one entry per length"):
        length_histogram_svg([1, 2], probs)


def test_nested_brackets_stack_inner_spans_above_outer_ones():
    assert bracket_levels([(3, 5), (3, 4), (0, 1)]) == [1, 0, 0]
    assert bracket_levels([(0, 6), (1, 4), (2, 3), (5, 6)]) == [2, 1, 0, 0]
    words = "Jane Villanueva of United Airlines Holding discussed".split()
    svg = nested_spans_svg(words, [(0, 1, "PER"), (3, 4, "ORG"), (3, 5, "ORG")], probs=[0.9, 0.8, 0.7])
    assert svg.count("class='bracket'") == 3 and "ORG 0.80" in svg
    ys = sorted(set(int(float(y)) for y in re.findall(r"L[\d.]+,([\d.]+) L", svg)))
    assert len(ys) == 2  # two rows of brackets
    with pytest.raises(ValueError, match="outside"):
        nested_spans_svg(words, [(5, 9, "ORG")])


def test_span_table_lists_rows_and_says_how_many_are_left_out():
    words = ["a", "b", "c"]
    rows = [(i, j, "NULL", 0.9) for i, j in enumerate_spans(3)]
    out = span_table_html(words, rows, max_rows=4)
    assert out.count("class='span-row'") == 4 and "and 2 more" in out
    # every cell keeps a gap to the next column (a long span ran into its label in the browser)
    assert out.count("<td style='padding:1px 12px") == 4 * 4 and out.count("<th style='padding:1px 12px") == 4


def test_split_words_keeps_abbreviations_and_hyphens():
    assert split_words("Mt. Sanitas is pro-Beijing, isn't it?") == ["Mt.", "Sanitas", "is", "pro-Beijing", ",",
                                                                   "isn't", "it", "?"]


def test_span_mask_sampler_resamples_and_resets_on_new_bound(tokenizer):
    u = torch.full((tokenizer.vocab_size,), 1.0 / tokenizer.vocab_size)
    w = SpanMaskSampler(tokenizer, u)
    first = w.tokens.value
    assert "span-unit" in first and "target 15%" in w.message.value and sum(w.counts) == 1000
    w.resample.click()
    assert w.seed.value == 1
    w.more.click()
    assert sum(w.counts) == 2000
    w.max_len.value = 4
    assert len(w.counts) == 4 and sum(w.counts) == 1000
    assert w.histogram.value.count("class='bar'") == 4
    w.text.value = "   "
    assert "⚠" in w.message.value


def test_span_enumerator_counts_filters_and_explains_empty_input():
    def scorer(words):
        spans = enumerate_spans(len(words), 10)
        probs = torch.zeros(len(spans), 3)
        probs[:, 0] = 1.0
        for k, (i, j) in enumerate(spans):
            if (i, j) in ((3, 4), (3, 5)):
                probs[k] = torch.tensor([0.1, 0.9, 0.0])
        return spans, probs, ("NULL", "ORG", "PER")

    w = SpanEnumerator(scorer, max_len=8)
    assert f"<b>{count_spans(10):,}</b>" in w.counts.value  # 10 words with the full stop: 55 spans
    assert w.brackets.value.count("class='bracket'") == 2
    w.limit.value = 2
    assert f"<b>{count_spans(10, 2):,}</b>" in w.counts.value
    assert w.brackets.value.count("class='bracket'") == 1  # (3, 5) has 3 words: over the limit
    assert w.table.value.count("class='span-row'") == count_spans(10, 2)
    w.text.value = ""
    assert "type a sentence" in w.message.value


def _sbo_run(steps=96):
    from course_lib.spans.sbo_run import SpanBertRun

    return SpanBertRun(base="x", steps=steps, train_layers=0, losses=[
        {"step": k + 1, "mlm": 5.2, "sbo": 7.0 - 0.01 * k, "unigram": 7.0} for k in range(steps)])


def test_the_sbo_training_figure_marks_the_pool_repeats_and_draws_full_windows_only():
    """The training curve cycles through 32 fixed batches: the figure marks where they repeat (an expert reader:
    most of the gap below the unigram loss came after step 32), and each curve, a mean of 10 steps, starts at
    step 10 (the first 9 points once averaged fewer steps)."""
    from course_lib.views.spans import POOL_COLOUR, draw_sbo_training

    fig = draw_sbo_training(_sbo_run(), pool=32)
    ax = fig.axes[0]
    pool_lines = [ln for ln in ax.lines if ln.get_color() == POOL_COLOUR]
    assert sorted(ln.get_xdata()[0] for ln in pool_lines) == [32, 64]       # not at 96, the end of the run
    assert [t.get_text() for t in ax.texts] == ["pool repeats", "pool repeats"]
    assert "pool repeats (every 32 steps)" in [t.get_text() for t in ax.get_legend().get_texts()]
    curves = [ln for ln in ax.lines if ln.get_color() != POOL_COLOUR]
    assert len(curves) == 3
    for ln in curves:
        assert list(ln.get_xdata()) == list(range(10, 97))                  # full windows only
    sbo = next(ln for ln in curves if ln.get_label() == "L_SBO")
    assert sbo.get_ydata()[0] == pytest.approx(sum(7.0 - 0.01 * k for k in range(10)) / 10)
    assert ax.get_xlabel() == "training step" and "mean of the last 10 steps" in ax.get_ylabel()
    assert "running mean of 10" not in ax.get_ylabel()
    assert not [ln for ln in draw_sbo_training(_sbo_run()).axes[0].lines if ln.get_color() == POOL_COLOUR]


def test_the_position_figure_shows_always_guessing_the_most_frequent_token():
    """An expert reader: without a context-free baseline, SBO bars of 6-8% looked like something learned."""
    from course_lib.spans.sbo_eval import PositionAccuracy
    from course_lib.views.spans import BASELINE_COLOUR, draw_position_accuracy

    acc = PositionAccuracy([1, 2, 3], [], [], [], mlm_long=[0.23, 0.11, 0.08], sbo_long=[0.08, 0.06, 0.06],
                           unigram_long=[0.06, 0.05, 0.05])
    ax = draw_position_accuracy(acc, top_token="'the'").axes[0]
    assert [round(p.get_height(), 2) for p in ax.patches] == [0.23, 0.11, 0.08, 0.08, 0.06, 0.06]
    base = [c for c in ax.collections if c.get_label() == "always guessing 'the' (no context)"]
    assert len(base) == 1 and tuple(base[0].get_color()[0][:3]) == (0.0, 0.0, 0.0) and BASELINE_COLOUR == "#000000"
    ys = sorted(round(float(seg[0][1]), 2) for seg in base[0].get_segments())
    assert ys == [0.05, 0.05, 0.06]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1 (edge)", "2", "3+ (middle)"]
    assert ax.get_xlabel() and ax.get_ylabel() == "top-1 accuracy"
    with pytest.raises(ValueError, match="for every distance"):
        draw_position_accuracy(PositionAccuracy([1, 2, 3], [], [], [], mlm_long=[0.1] * 3, sbo_long=[0.1] * 3))


@pytest.mark.parametrize("text", ["😀 😀 😀", "x" * 3000, "🦜"])
def test_span_mask_sampler_says_why_a_text_of_unknown_tokens_has_no_span(tokenizer, text):
    """Emoji or one 3,000-character word: every token is [UNK], never masked. The sampler said "type a longer text",
    which would not help."""
    u = torch.full((tokenizer.vocab_size,), 1.0 / tokenizer.vocab_size)
    w = SpanMaskSampler(tokenizer, u)
    w.text.value = text
    msg = w.message.value
    assert msg.startswith("0 span(s), 0 of 0 tokens"), msg
    assert ("every token is [UNK] (emoji, unknown characters, words over 100 characters), and [UNK] is never "
            "masked: type ordinary words") in msg
    assert "longer text" not in msg
    w.text.value = "thanks"  # a short text of ordinary words still gets the advice to type more
    assert "rounds to no span" in w.message.value and "[UNK]" not in w.message.value
