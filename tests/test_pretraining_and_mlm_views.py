"""Live pretraining of a tiny BERT (MLM + NSP), and the 11.2 views and widgets."""
import json
import statistics

import pytest
import torch

from course_lib.views.masking import draw_rates, fates_html, rates, token_fates
from course_lib.pretraining.masking import mlm_mask, unigram_distribution
from course_lib.pretraining.multilingual import language_sampling_probs
from course_lib.pretraining.training import (PretrainingRecipe, corpus_tokenizer, pretrain_tiny_bert,
                                             python_reference_documents)
from course_lib.widgets import LanguageSampler, MaskSampler


@pytest.fixture(scope="module")
def corpus():
    return corpus_tokenizer(vocab_size=1000)


def test_reference_manual_corpus_has_documents_of_sentences():
    docs = python_reference_documents()
    assert len(docs) > 50 and sum(map(len, docs)) > 1500
    assert all(len(d) >= 2 for d in docs), "NSP needs at least two sentences per document"
    assert not any(s.startswith(" ") or "::=" in s for d in docs for s in d[:5]), "code blocks must be dropped"


def test_tiny_bert_loss_falls_and_is_logged(monkeypatch, tmp_path):
    monkeypatch.setenv("COURSE_LIB_CACHE", str(tmp_path))
    recipe = PretrainingRecipe(steps=200, batch_size=16, warmup=10, eval_every=100, seed=1)
    run = pretrain_tiny_bert(recipe, progress=False)
    first = statistics.mean(r["mlm"] for r in run.losses[:15])
    last = statistics.mean(r["mlm"] for r in run.losses[-15:])
    assert first > 6.0, "an untrained model is near ln |V| = 6.9"
    assert last < first - 0.5 and last < 6.0, f"MLM loss did not fall enough: {first:.2f} -> {last:.2f}"
    saved = json.loads((run.path / "run.json").read_text())
    assert len(saved["losses"]) == 200 and saved["losses"][-1]["mlm"] == pytest.approx(run.losses[-1]["mlm"])
    assert not run.model.training


def test_token_fates_agree_with_the_masked_batch(embedded):
    _, tok = embedded
    enc = tok("Please turn your homework in before the lecture starts on Monday morning.")
    uni = unigram_distribution(["please turn your homework in"], tokenizer=tok)
    batch = mlm_mask(enc.input_ids, special_ids=tok.special_ids, mask_token_id=tok.mask_token_id, unigram=uni,
                     select_prob=0.5, generator=7)
    fates = token_fates(batch, tok)
    assert [f.original for f in fates] == enc.tokens[0]
    for f, m, r, k, shown in zip(fates, batch.masked[0], batch.randomized[0], batch.kept[0], batch.input_ids[0]):
        assert f.shown == tok.id_to_token(int(shown))
        assert f.fate == ("[MASK]" if m else "random token" if r else "unchanged, predicted" if k else "not selected")
    assert fates[0].fate == "not selected" and fates[-1].fate == "not selected"  # [CLS], [SEP]
    html = fates_html(fates)
    assert html.count("class='fate'") == len(fates)


def test_rates_and_the_histogram():
    r = rates({"eligible": 1000, "selected": 150, "masked": 120, "randomized": 15, "kept": 15})
    assert r == {"selected": 0.15, "[MASK]": 0.8, "random token": 0.1, "unchanged, predicted": 0.1}
    fig = draw_rates({"eligible": 1000, "selected": 150, "masked": 120, "randomized": 15, "kept": 15}, draws=10)
    assert fig.axes[0].get_ylabel() == "share"


def test_mask_sampler_converges_and_reports_bad_rates(embedded):
    _, tok = embedded
    uni = unigram_distribution([s for d in python_reference_documents()[:10] for s in d], tokenizer=tok)
    w = MaskSampler(tok, uni)
    for _ in range(10):
        w.many.click()
    r = rates(w.totals)
    assert w.draws == 1001 and w.totals["eligible"] > 10_000
    assert abs(r["selected"] - 0.15) < 0.01 and abs(r["[MASK]"] - 0.8) < 0.03
    before = w.tokens.value
    w.resample.click()
    assert w.seed.value == 1 and w.tokens.value != before
    w.mask_prob.value = 0.95
    assert "is more than 1" in w.message.value
    w.mask_prob.value = 0.8
    assert w.message.value == "" and w.draws == 1, "changing a rate starts a new histogram"


def test_language_sampler_redraws_with_alpha():
    w = LanguageSampler(["en", "sw"], [1e9, 1e6], alpha=1.0)
    a = w.chart.value
    w.alpha.value = 0.3
    assert w.chart.value != a
    q = language_sampling_probs([1e9, 1e6], 0.3)
    assert q[1] > 1e6 / (1e9 + 1e6) * 50  # the small language is sampled far above its share


@pytest.mark.parametrize("names, counts, message", [
    (["en", "sw"], [0, 0], "not all 0"),
    (["en", "sw"], [1e9], "one count per language: got 2 name\\(s\\) and 1 count\\(s\\)"),
    ([], [], "one count per language"),
    (["en", "sw"], [1e9, -3], "non-negative"),
])
def test_language_sampler_refuses_counts_it_cannot_draw(names, counts, message):
    with pytest.raises(ValueError, match=message):
        LanguageSampler(names, counts)


def test_fill_mask_explorer_shows_top_k_and_errors(tiny_mlm_dir, embedded):
    import course_lib
    from course_lib.widgets import FillMaskExplorer

    model, tok = course_lib.load_pretrained(tiny_mlm_dir[0], device="cpu")
    w = FillMaskExplorer(model, tok, "The capital of [MASK] is [MASK].", top_k=3)
    assert len(w.predictions) == 2 and len(w.predictions[0].tokens) == 3 and w.chart.value
    first = w.chart.value
    w.top_k.value = 6
    assert len(w.predictions[0].tokens) == 6 and w.chart.value != first
    w.text.value = "no mask in this one"
    assert "there is no [MASK]" in w.message.value and w.chart.layout.display == "none"
    w.text.value = "The capital of France is [mask]."
    assert "in capitals, with square brackets: &#x27;[mask]&#x27; is read as ordinary text" in w.message.value
    w.text.value = ""
    assert "empty" in w.message.value
    no_head = FillMaskExplorer(*embedded, "The capital of France is [MASK].")
    assert "has no MLM head" in no_head.message.value


@pytest.mark.parametrize("text, note", [
    ("I love 😀 [MASK].", "&#x27;😀&#x27; is not in the tokenizer&#x27;s vocabulary: the model sees [UNK] there"),
    ("😀 and 🎉 [MASK].", "&#x27;😀&#x27;, &#x27;🎉&#x27; are not in the tokenizer&#x27;s vocabulary"),
    ("[PAD] [MASK] is here.", "[PAD] typed in the text is a special token of the tokenizer: the model reads it as that"),
    ("[CLS] [MASK] [SEP]", "[CLS], [SEP] typed in the text are special tokens of the tokenizer: the model reads each"),
    ("[UNK] [MASK] is here.", "[UNK] typed in the text is a special token"),
])
def test_fill_mask_explorer_notes_what_the_model_does_not_read_as_typed(tiny_mlm_dir, text, note):
    """An emoji silently became [UNK] and a typed [PAD] a real padding token (a reviewer's finding): the chart
    still shows, with a note."""
    import course_lib
    from course_lib.widgets import FillMaskExplorer

    model, tok = course_lib.load_pretrained(tiny_mlm_dir[0], device="cpu")
    w = FillMaskExplorer(model, tok, text, top_k=3)
    assert note in w.message.value and w.chart.layout.display == "" and w.predictions
    assert "⚠" not in w.message.value  # a note, not an error
    w.text.value = "She opened the [MASK] and walked in."
    assert w.message.value == "" and w.chart.layout.display == ""


@pytest.mark.parametrize("text", ["[MASK] [MASK]", "🙂🙂🙂", "[CLS] [SEP]"])
def test_mask_sampler_says_when_no_token_can_be_selected(embedded, text):
    """Only special tokens (typed, or [UNK] for emoji): a message, not a histogram of 0% bars."""
    _, tok = embedded
    w = MaskSampler(tok, torch.full((tok.vocab_size,), 1.0 / tok.vocab_size))
    w.text.value = text
    assert "no token that can be selected" in w.message.value
    assert w.tokens.value == "" and w.histogram.layout.display == "none" and w.draws == 0
    w.many.click()
    assert "no token that can be selected" in w.message.value and w.histogram.layout.display == "none"
    w.text.value = "The cat sat on the mat."
    assert w.message.value == "" and w.histogram.layout.display == "" and w.totals["eligible"] == 7  # the six words and the full stop


def test_mask_sampler_whole_words_selects_every_piece_of_a_word_with_one_fate(embedded):
    """The "whole words" switch: the pieces of a selected word are selected together and share their fate, the
    running rates start again, and the selected share of tokens stays near 15%."""
    _, tok = embedded
    text = "Unsurprisingly, the mountaineers acclimatised before the ascent."
    w = MaskSampler(tok, torch.full((tok.vocab_size,), 1.0 / tok.vocab_size), text)
    w.many.click()
    enc = tok(text)
    word_ids = list(enc.word_ids[0] if isinstance(enc.word_ids[0], list) else enc.word_ids)
    words = {i: [k for k, j in enumerate(word_ids) if j == i] for i in set(word_ids) - {None}}
    split = [pieces for pieces in words.values() if len(pieces) > 1]
    assert split, "the sentence has words of several pieces"

    def fate(batch, k):
        return "mask" if batch.masked[0, k] else "random" if batch.randomized[0, k] else \
            "kept" if batch.kept[0, k] else "unselected"

    def split_selections(n):
        seen = []
        for _ in range(n):
            w.resample.click()
            seen += [{fate(w.last, k) for k in pieces} for pieces in split]
        return seen

    assert any(len(f) > 1 for f in split_selections(30)), "token masking splits words"
    w.whole_word.value = True
    assert w.draws == 1, "switching starts a new histogram"
    seen = split_selections(30)
    assert all(len(f) == 1 for f in seen) and any(f != {"unselected"} for f in seen)
    for _ in range(5):
        w.many.click()
    assert abs(rates(w.totals)["selected"] - 0.15) < 0.03
