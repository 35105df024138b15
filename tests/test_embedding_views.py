"""What the 11.3 widgets draw (pure functions) and the widgets themselves, driven from Python."""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from course_lib.embeddings import NearestSenseWSD, anisotropy, pair_cosines
from course_lib.views.embeddings import (draw_anisotropy, draw_sense_scores, find_lemma, marked_html,
                                       sense_scatter_svg, sentence_words, wsd_readout)
from course_lib.embeddings.senses import SenseExample, load_sense_data


def test_scatter_svg_has_a_point_with_its_sentence_per_example_and_a_legend_with_counts():
    coords = np.array([[0, 0], [1, 1], [2, 0.5]])
    svg = sense_scatter_svg(coords, ["a (x)", "b (y)", "a (x)"], ["one <b>", "two", "three"], highlight=1, title="t")
    assert svg.count('class="point"') == 3
    assert "<title>a (x): one &lt;b&gt;</title>" in svg          # sentences escaped
    assert "a (x) (2)" in svg and "b (y) (1)" in svg               # legend with counts
    assert svg.count('class="highlight"') == 1
    assert "UMAP dimension 1" in svg and "UMAP dimension 2" in svg
    colours = set(re.findall(r'fill="(#[0-9A-F]{6})"', svg))
    assert {"#0072B2", "#E69F00"} <= colours                       # Okabe-Ito
    with pytest.raises(ValueError, match="3 points, 2 senses and 3 texts"):
        sense_scatter_svg(coords, ["a", "b"], ["1", "2", "3"])
    with pytest.raises(IndexError, match="point 7 does not exist: there are 3 points"):
        sense_scatter_svg(coords, ["a"] * 3, ["1", "2", "3"], highlight=7)


def test_find_lemma_knows_inflected_forms():
    lemmas = ["bank", "mouse", "die", "bass", "match"]
    assert [find_lemma(w, lemmas) for w in ["Banks", "bank's", "BANK.", "mice", "matches", "river", ""]] == [
        "bank", "bank", "bank", "mouse", "match", None, None]
    labels = lambda text: [c.label for c in sentence_words(text)]  # noqa: E731
    assert labels("The bank's bank, and the bank!") == ["The", "bank's", "bank", "and", "the (2nd)", "bank (2nd)"]


def test_the_word_chooser_lists_every_occurrence_and_splits_where_the_tokenizer_does(embedded):
    text = "I went to the bank to deposit money, then sat on the river bank."
    choices = sentence_words(text)
    assert [c.label for c in choices] == ["I", "went", "to", "the", "bank", "to (2nd)", "deposit", "money", "then",
                                          "sat", "on", "the (2nd)", "river", "bank (2nd)"]
    assert [text[c.start:c.end] for c in choices] == [c.word for c in choices]
    assert choices[-1].start == text.rindex("bank")
    assert [c.label for c in sentence_words("BANK bank Bank")] == ["BANK", "bank (2nd)", "Bank (3rd)"]
    assert [c.label for c in sentence_words(" ".join(["bank"] * 12))][10:] == ["bank (11th)", "bank (12th)"]
    # the tokenizer's words (its word_ids): every choice covers the tokens of whole words, and every word of
    # letters is a choice; at a hyphen both do split, an inner apostrophe (bank's) is kept by the choice only
    _, tok = embedded
    for sentence in ["She sat by the river-bank.", "A well-known bank's vault, then the bank.", text]:
        enc = tok(sentence)
        spans: dict[int, list] = {}
        for (s, e), w in zip(enc.offsets[0], enc.word_ids[0]):
            if w is not None:
                spans.setdefault(w, []).append((s, e))
        words = [(ts[0][0], ts[-1][1]) for ts in spans.values()]
        lettered = [(s, e) for s, e in words if sentence[s:e].isalpha()]
        chosen = [(c.start, c.end) for c in sentence_words(sentence)]
        assert all(s in {a for a, _ in words} and e in {b for _, b in words} for s, e in chosen), sentence
        assert all(any(s <= a and b <= e for s, e in chosen) for a, b in lettered), sentence
    assert [c.label for c in sentence_words("She sat by the river-bank.")] == ["She", "sat", "by", "the", "river",
                                                                              "bank"]


def test_wsd_readout_orders_senses_by_cosine_and_finds_the_nearest_sentences():
    data = load_sense_data(lemmas=["bank"])
    train = data.train
    X = torch.zeros(len(train), 2)
    for i, e in enumerate(train):
        X[i] = torch.tensor([1.0, 0.1 * i]) if e.sense == "bank (river)" else torch.tensor([0.0, 1.0])
    wsd = NearestSenseWSD().fit(X, train)
    r = wsd_readout(wsd, data, train, X, torch.tensor([1.0, 0.0]), "bank", k=2)
    assert r.predicted == "bank (river)" == r.senses[0]
    assert r.cosines == sorted(r.cosines, reverse=True)
    assert r.glosses[0] == data.senses["bank (river)"].gloss
    assert [nb.example.sense for nb in r.neighbours] == ["bank (river)"] * 2
    assert r.neighbours[0].cosine >= r.neighbours[1].cosine
    fig = draw_sense_scores(r)
    assert fig.axes[0].get_xlabel().startswith("cosine")
    assert "<b>bank</b>" in marked_html(SenseExample("a bank here", 2, 6, "bank", "x"))


def test_pair_cosines_average_to_the_anisotropy_and_the_plot_marks_rogue_dimensions():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(3000, 32, generator=g)
    X[:, 5] += 10
    c = pair_cosines(X, 20000)
    assert float(c.mean()) == pytest.approx(anisotropy(X, 20000), abs=0.02)
    from course_lib.embeddings.geometry import dimension_report

    rep = dimension_report(X)
    # the parts (E[û_i])² add up to the expected cosine of two independent tokens, and dimension 5 carries it
    assert float(rep.cosine_share.sum()) == pytest.approx(float(c.mean()), abs=0.02) and rep.rogue[0] == 5
    fig = draw_anisotropy(c, pair_cosines(X - X.mean(0)), rep.cosine_share, [5], "test")
    hist_ax, share_ax = fig.axes
    assert hist_ax.get_xlabel() == "cosine of a random token pair" and share_ax.get_xlabel() == "dimension"
    assert share_ax.get_title() == "each dimension's part of the mean cosine"
    assert any(t.get_text() == "dim 5" for t in share_ax.texts)


# ----------------------------------------------------------------------------- the widgets, driven from Python

@pytest.fixture(scope="module")
def small(embedded):
    from course_lib.embeddings import target_states

    model, tok = embedded
    data = load_sense_data(lemmas=["bank", "mouse"])
    return model, tok, data, {"mean": target_states(model, tok, data.examples)}


def test_sense_clusters_redraw_for_another_word_and_ring_the_chosen_sentence(small, tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_LIB_CACHE", str(tmp_path))
    from course_lib.widgets import SenseClusters

    model, tok, data, states = small
    w = SenseClusters(model, tok, data, states=states, word="bank", n_neighbors=10)
    svg_bank = w.plot.value
    assert "bank (river)" in svg_bank and w.message.value == ""
    w.word.value = "mouse"
    assert "mouse (computer)" in w.plot.value and "bank (river)" not in w.plot.value
    ring = re.search(r'class="highlight" cx="([\d.]+)" cy="([\d.]+)"', w.plot.value).groups()
    w.point.value = 3
    assert re.search(r'class="highlight" cx="([\d.]+)" cy="([\d.]+)"', w.plot.value).groups() != ring
    mouse = [e for e in data.examples if e.lemma == "mouse"]
    assert mouse[3].word in w.sentence.value and data.senses[mouse[3].sense].gloss in w.sentence.value
    w.word.value = "bank"
    assert w.projection.cached and w.plot.value.count('class="point"') == svg_bank.count('class="point"')


def test_sense_clusters_switch_pooling_without_encoding_the_sentences_again(small, tmp_path, monkeypatch):
    """Another pooling comes from the mean states: 'sum' = k × mean, 'first' = mean for a one-token word; only the
    targets split into several tokens are encoded, once. A setting computed for the first time says so."""
    monkeypatch.setenv("COURSE_LIB_CACHE", str(tmp_path))
    import course_lib.embeddings.states as states_module
    import course_lib.widgets.embeddings as widgets
    from course_lib.embeddings import target_states
    from course_lib.embeddings.states import span_tokens

    model, tok, data, states = small
    encoded = []  # (number of targets, pooling) of every forward pass the widget asks for
    monkeypatch.setattr(states_module, "target_states", lambda m, t, examples, **kw: (
        encoded.append((len(examples), kw.get("pooling"))), target_states(m, t, examples, **kw))[1])
    w = widgets.SenseClusters(model, tok, data, states=states, word="bank", n_neighbors=10)
    messages = []
    w.message.observe(lambda change: messages.append(change["new"]), "value")
    bank = [i for i, e in enumerate(data.examples) if e.lemma == "bank"]
    split = [i for i in bank if len(span_tokens(tok(data.examples[i].text).offsets[0], data.examples[i].start,
                                                data.examples[i].end)) > 1]
    assert 0 < len(split) < len(bank) / 10, split  # a few targets of several tokens

    w.pooling.value = "sum"
    assert encoded == [] and messages[0] == widgets.BUSY and w.message.value == ""
    ref = target_states(model, tok, [data.examples[i] for i in bank], pooling="sum")
    torch.testing.assert_close(w.states("sum", bank), ref, rtol=1e-5, atol=1e-4)
    w.pooling.value = "first"
    assert encoded == [(len(split), "first")]
    ref = target_states(model, tok, [data.examples[i] for i in bank], pooling="first")
    torch.testing.assert_close(w.states("first", bank), ref, rtol=1e-5, atol=1e-4)
    assert "mean of last 4, first of subwords" in w.plot.value

    messages.clear()
    w.pooling.value = "mean"
    w.pooling.value = "first"  # the second time: from the caches, no encoding, no busy message
    assert encoded == [(len(split), "first")] and widgets.BUSY not in messages
    assert w.projection.cached and "from the cache" in w.message.value
    w.word.value = "mouse"  # a new word: only its own split targets are encoded
    mouse = [i for i, e in enumerate(data.examples) if e.lemma == "mouse"]
    assert len(encoded) == 2 and encoded[1][1] == "first" and encoded[1][0] < len(mouse) / 10
    assert messages[-2] == widgets.BUSY and w.message.value == ""


def test_nearest_sense_explorer_tells_apart_two_occurrences_and_the_words_of_a_hyphenated_one(small):
    from course_lib.embeddings import word_states
    from course_lib.widgets import NearestSenseExplorer

    model, tok, data, states = small
    text = "I went to the bank to deposit money, then sat on the river bank."
    w = NearestSenseExplorer(model, tok, data, states=states, sentence=text, word="bank")
    assert w.word.value == "bank" and "bank (2nd)" in w.word.options and w.message.value == ""
    money = w.readout
    w.word.value = "bank (2nd)"
    river = w.readout
    assert river.lemma == "bank" and w.message.value == "" and river.cosines != money.cosines
    for label, k in (("bank", 0), ("bank (2nd)", 1)):
        torch.testing.assert_close(w._word_states(text, label), word_states(model, tok, text, "bank", occurrence=k),
                                   atol=1e-5, rtol=0)
    assert not torch.allclose(w._word_states(text, "bank"), w._word_states(text, "bank (2nd)"), atol=1e-3)

    w.sentence.value = "She sat by the river-bank."
    assert list(w.word.options) == ["She", "sat", "by", "the", "river", "bank"]
    assert w.word.value == "bank" and w.message.value == "" and w.readout.lemma == "bank"
    assert w.chart.layout.display == ""
    w.word.value = "river"
    assert "&#x27;river&#x27; has no sense data" in w.message.value


def test_nearest_sense_explorer_picks_the_known_word_and_explains_bad_input(small):
    from course_lib.widgets import NearestSenseExplorer

    model, tok, data, states = small
    w = NearestSenseExplorer(model, tok, data, states=states, sentence="The bank raised its rates.", word="bank")
    assert w.readout.predicted == "bank (finance)" and w.message.value == ""
    w.sentence.value = "I plugged a new wireless mouse into my laptop."
    assert w.word.value == "mouse" and w.readout.lemma == "mouse"
    assert w.readout.predicted == "mouse (computer)"
    assert "mouse (" in w.neighbours.value
    w.word.value = "laptop"
    assert "&#x27;laptop&#x27; has no sense data; choose one of the 2 words: bank, mouse" in w.message.value
    assert w.chart.layout.display == "none"
    w.sentence.value = "   "
    assert "the sentence is empty" in w.message.value
    w.sentence.value = "They fished from the bank. " * 120
    assert "512" in w.message.value
    # what a widget user can act on (an expert review: the library's "text 0 has 722 tokens …; or pass
    # truncation=True" was shown, which names an internal index and an argument the widget has no control for)
    n = len(tok.backend.encode(w.sentence.value).ids)
    assert n > 512 and f"the sentence has {n} tokens; the model takes at most 512: shorten it" in w.message.value
    assert "truncation" not in w.message.value and "text 0" not in w.message.value
    assert w.chart.layout.display == "none" and w.note.value == ""


@pytest.fixture(scope="module")
def dice(embedded):
    from course_lib.embeddings import target_states

    model, tok = embedded
    data = load_sense_data(lemmas=["bank", "die"])  # the senses of *die*: a game cube, a metal tool; no verb
    return model, tok, data, {"mean": target_states(model, tok, data.examples)}


def test_nearest_sense_explorer_flags_a_use_no_sense_fits_by_the_height_of_the_best_bar(dice):
    """An expert review: the notebook told students to read the margin between the bars to see that no sense fits;
    the best cosine tells, against the cosine nearly every training sentence reaches with its own sense."""
    from course_lib.embeddings import combine_layers, leave_one_out
    from course_lib.widgets import NearestSenseExplorer

    model, tok, data, states = dice
    w = NearestSenseExplorer(model, tok, data, states=states, sentence="Roll the die again.", word="die")
    # the reference is computed from the data: the 5th percentile of the training sentences' leave-one-out cosine
    own = leave_one_out(combine_layers(w.train_states, "last4_mean"), data.train)[0]
    assert w.floor == pytest.approx(float(torch.quantile(own[~own.isnan()], 0.05)))
    assert w.readout.cosines[0] > w.floor + 0.05 and w.note.value == ""      # a real die: far above, no note
    assert 'class="wsd-floor"' in bytes(w.chart.value).decode() and f"{w.floor:.3f}" in bytes(w.chart.value).decode()
    for sentence, word in [("Many trees will die.", "die"), ("Die Bank ist geschlossen.", "Die")]:
        w.sentence.value = sentence
        w.word.value = word
        assert w.readout.lemma == "die" and w.readout.cosines[0] < w.floor, (sentence, w.readout.cosines, w.floor)
        assert "no sense may fit: the best cosine" in w.note.value and f"{w.floor:.3f}" in w.note.value, w.note.value
    w.sentence.value = "The bank raised its rates."
    assert w.readout.predicted == "bank (finance)" and w.note.value == ""
    w.layer.value = 0  # another layer choice: its own reference
    assert w.floor == pytest.approx(float(torch.quantile(
        leave_one_out(combine_layers(w.train_states, 0), data.train)[0], 0.05))) and w.floor < 0.85


def test_anisotropy_explorer_redraws_for_another_layer():
    from course_lib.widgets import AnisotropyExplorer

    g = torch.Generator().manual_seed(0)
    states = torch.randn(400, 3, 16, generator=g)
    states[:, 2, 4] += 8  # layer 2 has a rogue dimension
    w = AnisotropyExplorer(states, layer=0, n_pairs=2000)
    raw0, _, _ = w.values
    png0 = w.chart.value
    w.layer.value = 2
    raw2, z2, rogue2 = w.values
    assert raw2 > raw0 + 0.3 and abs(z2) < 0.05 and rogue2[0] == 4
    assert w.chart.value != png0 and w.readout.value.startswith("<b>L2</b>")


def test_anisotropy_explorer_calls_the_top_dimensions_rogue_only_above_the_threshold():
    """An expert review: the random encoder's top three dimensions, 6% of the expected cosine, were marked
    "rogue" in the readout and the chart."""
    from course_lib.embeddings import dimension_report
    from course_lib.embeddings.geometry import ROGUE_SHARE
    from course_lib.widgets import AnisotropyExplorer

    g = torch.Generator().manual_seed(0)
    states = torch.randn(400, 3, 256, generator=g) + torch.randn(256, generator=g)  # a shared direction, no rogue dims
    states[:, 2, 4] += 30  # layer 2 has one
    w = AnisotropyExplorer(states, layer=0, n_pairs=2000)
    share0 = dimension_report(states[:, 0]).top_share()
    assert share0 < ROGUE_SHARE
    svg = bytes(w.chart.value).decode()
    assert "top-3 dimensions" in w.readout.value and "not rogue (below 30%)" in w.readout.value
    assert "rogue dimensions" not in w.readout.value and "rogue (largest share" not in svg
    assert f"top 3: {share0:.0%} of it, not rogue (&lt; 30%)" in svg
    w.layer.value = 2
    assert dimension_report(states[:, 2]).top_share() >= ROGUE_SHARE
    assert "rogue dimensions 4, " in w.readout.value and "not rogue" not in w.readout.value
    assert "rogue (largest share of the mean cosine)" in bytes(w.chart.value).decode()


def test_leave_one_out_leaves_each_sentence_out_of_its_own_centroid():
    from course_lib.embeddings import choose_layer, leave_one_out

    def ex(sense):
        return SenseExample(text="a w b", start=2, end=3, lemma="w", sense=sense, split="train")

    train = [ex("w (x)"), ex("w (x)"), ex("w (x)"), ex("w (y)"), ex("w (y)"), ex("w (z)")]
    X = torch.tensor([[1.0, 0.0], [1.0, 0.2], [0.2, 1.0], [0.0, 1.0], [0.1, 1.0], [-1.0, 0.5]])
    own, right = leave_one_out(X, train)
    # row 2 lies among the y's: without it, the x centroid is (1, 0.1), far from it; a sense seen once has no centroid
    assert right.tolist() == [True, True, False, True, True, False]
    assert own[0] == pytest.approx(float(torch.nn.functional.cosine_similarity(X[0], X[1:3].mean(0), dim=0)))
    assert torch.isnan(own[5]) and not torch.isnan(own[:5]).any()
    states = torch.stack([torch.ones(6, 2), X], dim=1)  # layer 0 says nothing, layer 1 separates
    assert list(choose_layer(states, train)) == [1, 0]
