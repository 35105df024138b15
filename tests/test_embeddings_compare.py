"""The pieces notebook 11.3 adds to course_lib.embeddings for comparing models: layer_geometry (z-scoring fitted on
other tokens), similarity_by_layer, cached_states, the *die* sentences, silhouette and the sense cosine table,
and the anisotropy widget switching between models."""
import re

import numpy as np
import pytest
import torch

from course_lib.embeddings import (DIE_SENTENCES, ZScorer, anisotropy, cached_states, die_examples, dimension_report,
                                   layer_geometry,
                                   model_fingerprint, sense_cosine_table, silhouette, similarity_by_layer,
                                   similarity_correlation)


def shifted_states(seed=0):
    """(N, 2, d) scored and fitted states: L0 isotropic; L1 scored tokens offset, fitted ones centred."""
    g = torch.Generator().manual_seed(seed)
    d = 16
    u = 4 * torch.nn.functional.normalize(torch.randn(d, generator=g), dim=0)
    scored = torch.stack([torch.randn(500, d, generator=g), torch.randn(500, d, generator=g) + u], 1)
    fitted = torch.stack([torch.randn(400, d, generator=g), torch.randn(400, d, generator=g)], 1)
    return scored, fitted, u


def test_layer_geometry_fits_z_scoring_on_the_other_tokens():
    scored, fitted, u = shifted_states()
    g = layer_geometry(scored, fitted, n_pairs=5000)
    assert g.anisotropy == [anisotropy(scored[:, l], 5000) for l in range(2)]
    assert abs(g.anisotropy[0]) < 0.05 and g.anisotropy[1] > 0.4
    # fitted on the other (centred) tokens the offset survives z-scoring; fitted on itself it would vanish
    assert g.zscored[1] == pytest.approx(anisotropy(ZScorer().fit(fitted[:, 1])(scored[:, 1]), 5000))
    assert g.zscored[1] > 0.4 and abs(anisotropy(ZScorer().fit(scored[:, 1])(scored[:, 1]), 5000)) < 0.05
    assert g.most_anisotropic() == 1
    for l in range(2):
        rep = dimension_report(scored[:, l])
        assert g.top_share[l] == rep.top_share() and g.rogue[l] == rep.rogue and len(rep.rogue) == 3
    torch.testing.assert_close(g.zscorers[1].mu, fitted[:, 1].double().mean(0))


def test_layer_geometry_shape_errors():
    with pytest.raises(ValueError, match="same L\\+1 and d"):
        layer_geometry(torch.zeros(5, 3, 4), torch.zeros(5, 2, 4))


def test_similarity_by_layer_equals_the_pairwise_function():
    g = torch.Generator().manual_seed(3)
    words = ["cat", "dog", "car", "tiger", "bus"]
    W = torch.randn(5, 3, 8, generator=g)
    pairs = [("cat", "dog", 7.0), ("cat", "tiger", 8.0), ("car", "bus", 6.0), ("dog", "car", 1.0), ("tiger", "bus", 0.5)]
    zs = [ZScorer().fit(torch.randn(50, 8, generator=g)) for _ in range(3)]
    for l in range(3):
        vecs = dict(zip(words, W[:, l]))
        assert similarity_by_layer(W, words, pairs)[l] == pytest.approx(similarity_correlation(vecs, pairs))
        assert similarity_by_layer(W, words, pairs, zs)[l] == pytest.approx(similarity_correlation(vecs, pairs, zs[l]))
    with pytest.raises(KeyError, match="no vectors for 1 word"):
        similarity_by_layer(W, words, pairs + [("cat", "lion", 5.0)])


def test_cached_states_computes_once_per_model_and_data(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_LIB_CACHE", str(tmp_path))
    model = torch.nn.Linear(3, 2)
    calls = []

    def compute():
        calls.append(1)
        return torch.tensor([[1.0001, 2.0], [3.0, 4.0]])

    a = cached_states(model, "corpus", ["some text"], compute)
    b = cached_states(model, "corpus", ["some text"], compute)
    assert len(calls) == 1 and torch.equal(a, b) and a.dtype == torch.float32
    assert a[0, 0] == torch.tensor(1.0001).half().float()  # always rounded through float16, cold or warm
    cached_states(model, "corpus", ["other text"], compute)
    with torch.no_grad():
        model.weight += 1  # other weights: another fingerprint, another file
    cached_states(model, "corpus", ["some text"], compute)
    assert len(calls) == 3 and len(list((tmp_path / "states").glob("*.pt"))) == 3
    (next((tmp_path / "states").glob("*.pt"))).write_bytes(b"broken")
    cached_states(model, "corpus", ["some text"], compute)  # a broken file is recomputed, not an error
    with pytest.raises(ValueError, match="kind names a file"):
        cached_states(model, "../x", [], compute)


def test_model_fingerprint_depends_on_the_weights_only():
    a, b = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    b.load_state_dict(a.state_dict())
    assert model_fingerprint(a) == model_fingerprint(b) and len(model_fingerprint(a)) == 16
    with torch.no_grad():
        b.bias[0] += 1e-3
    assert model_fingerprint(a) != model_fingerprint(b)


def test_die_examples_mark_die_in_three_senses():
    ex = die_examples()
    assert [e.sense for e in ex] == [s for s, sents in DIE_SENTENCES.items() for _ in sents]
    assert len(DIE_SENTENCES) == 3 and all(len(v) == 8 for v in DIE_SENTENCES.values())
    assert all(e.word.lower() == "die" for e in ex)
    assert all(len(re.findall(r"\bdie\b", e.text.lower())) == 1 for e in ex)  # no second *die* in a sentence


def test_silhouette_and_cosine_table():
    g = torch.Generator().manual_seed(0)
    centres = torch.eye(4)[:2] * 10
    X = torch.cat([centres[0] + torch.randn(6, 4, generator=g), centres[1] + torch.randn(6, 4, generator=g)])
    labels = ["a"] * 6 + ["b"] * 6
    assert silhouette(X, labels) > 0.7
    assert abs(silhouette(torch.randn(12, 4, generator=g), labels)) < 0.3
    senses, T = sense_cosine_table(X, labels)
    assert senses == ["a", "b"] and T.shape == (2, 2)
    Xn = torch.nn.functional.normalize(X.double(), dim=-1)
    C = Xn @ Xn.T
    assert T[0, 0] == pytest.approx(float(C[:6, :6][~torch.eye(6, dtype=torch.bool)].mean()))
    assert T[0, 1] == pytest.approx(float(C[:6, 6:].mean())) and T[0, 1] == pytest.approx(float(T[1, 0]))
    with pytest.raises(ValueError, match="at least two senses"):
        silhouette(X, ["a"] * 12)


def test_anisotropy_explorer_switches_models_with_fitted_statistics():
    from course_lib.embeddings import dimension_report, pair_cosines
    from course_lib.widgets import AnisotropyExplorer

    scored, fitted, _ = shifted_states(1)
    other = torch.randn(300, 2, 16, generator=torch.Generator().manual_seed(5))
    w = AnisotropyExplorer({"shifted": scored, "plain": other}, fit_states={"shifted": fitted, "plain": other},
                           layer=1, n_pairs=1000, corpus_name="toy text")
    assert w.model.options == ("shifted", "plain") and w.model.layout.display == ""
    X = scored[:, 1]
    assert w.values == (float(pair_cosines(X, 1000).mean()),
                        float(pair_cosines(ZScorer().fit(fitted[:, 1])(X), 1000).mean()), dimension_report(X).rogue)
    assert w.values[1] > 0.4  # fitted on the other tokens: the offset stays
    assert w.readout.value.startswith("<b>L1</b>: shifted, ")
    svg = bytes(w.chart.value)
    w.model.value = "plain"
    assert w.readout.value.startswith("<b>L1</b>: plain, ") and bytes(w.chart.value) != svg
    assert b"toy text" in bytes(w.chart.value)
    single = AnisotropyExplorer(other, layer=0, n_pairs=1000)
    assert single.model.layout.display == "none" and single.readout.value.startswith("<b>L0 (embeddings)</b>: anisotropy")


def test_zscoring_words_are_the_most_frequent_other_words():
    from course_lib.embeddings import zscoring_words

    texts = ["The cat sat on the mat.", "THE dog and the cat; a cat!", "Dogs, mats and 42 x-rays."]
    # the 4, cat 3, and 2; then alphabetically: dog dogs mat mats rays sat ("on", "a", "x" too short)
    assert zscoring_words(texts, n=5) == ["the", "cat", "and", "dog", "dogs"]
    assert zscoring_words(texts, exclude=["CAT", "the"], n=3) == ["and", "dog", "dogs"]
    with pytest.raises(ValueError, match="fewer than the 20 asked for"):
        zscoring_words(texts, n=20)
    with pytest.raises(ValueError, match="at least 2 words"):
        zscoring_words(texts, n=1)


def test_word_zscorers_fit_each_layer_on_the_words_embedded_on_their_own(tmp_path, monkeypatch):
    from course_lib import load_pretrained
    from course_lib.embeddings import isolated_word_states, word_zscorers

    monkeypatch.setenv("COURSE_LIB_CACHE", str(tmp_path))
    model, tok = load_pretrained()
    words = ["river", "money", "table", "green", "run"]
    zs = word_zscorers(model, tok, words)
    W = isolated_word_states(model, tok, words).half().float()  # the cache keeps states as float16
    assert len(zs) == W.size(1) == model.config.num_hidden_layers + 1
    for layer, z in enumerate(zs):
        torch.testing.assert_close(z.mu, W[:, layer].double().mean(0), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(z.sigma, W[:, layer].double().std(0, unbiased=False), rtol=1e-5, atol=1e-6)


def test_same_word_pairs_pair_each_lemma_s_examples_once():
    from course_lib.embeddings import SenseExample, same_word_pairs

    ex = [SenseExample("a bank", 2, 6, "bank", s) for s in ("bank.1", "bank.2", "bank.1")]
    ex.insert(1, SenseExample("a mouse", 2, 7, "mouse", "mouse.1"))
    i, j, same = same_word_pairs(ex)  # bank at rows 0, 2, 3; mouse alone at 1 pairs with no one
    assert list(zip(i.tolist(), j.tolist(), same.tolist())) == [(0, 2, False), (0, 3, True), (2, 3, False)]
    with pytest.raises(ValueError, match="at least 2 examples"):
        same_word_pairs(ex[:1])


def test_in_context_similarity_is_the_cosine_and_the_auc_of_the_pairs():
    from sklearn.metrics import roc_auc_score

    from course_lib.embeddings import SenseExample, ZScorer, auc_change, in_context_similarity

    g = torch.Generator().manual_seed(5)
    senses = ["b1", "b1", "b2", "b2", "b1", "m1", "m2", "m1"]
    ex = [SenseExample("x", 0, 1, s[0], s) for s in senses]
    centre = {"b1": torch.randn(8, generator=g), "b2": torch.randn(8, generator=g),
              "m1": torch.randn(8, generator=g), "m2": torch.randn(8, generator=g)}
    states = torch.stack([torch.stack([torch.randn(8, generator=g), centre[s] + 0.3 * torch.randn(8, generator=g)])
                          for s in senses])  # L0 noise, L1 sense clusters
    res = in_context_similarity(states, ex)
    assert len(res) == 2 and res[1].auc == 1.0 and res[1].same > res[1].different
    pairs = [(a, b) for a in range(8) for b in range(a + 1, 8) if senses[a][0] == senses[b][0]]
    cos = [float(torch.nn.functional.cosine_similarity(states[a, 0], states[b, 0], dim=0)) for a, b in pairs]
    same = [senses[a] == senses[b] for a, b in pairs]
    assert res[0].auc_pooled == pytest.approx(roc_auc_score(same, cos))
    # within a word: each same-sense pair of a word against each different-sense pair of that word, ties half
    wins = [(c1 > c2) + 0.5 * (c1 == c2) for (a, b), c1, s1 in zip(pairs, cos, same) if s1
            for (x, y), c2, s2 in zip(pairs, cos, same) if not s2 and senses[a][0] == senses[x][0]]
    assert res[0].auc == pytest.approx(np.mean(wins)) and res[0].auc != pytest.approx(res[0].auc_pooled)
    assert res[0].same == pytest.approx(np.mean([c for c, s in zip(cos, same) if s]))
    assert res[0].different == pytest.approx(np.mean([c for c, s in zip(cos, same) if not s]))
    zs = [ZScorer().fit(torch.randn(50, 8, generator=g)) for _ in range(2)]
    z = in_context_similarity(states, ex, zs)
    zc = [float(torch.nn.functional.cosine_similarity(zs[0](states[a, 0][None])[0], zs[0](states[b, 0][None])[0], dim=0))
          for a, b in pairs]
    assert z[0].auc_pooled == pytest.approx(roc_auc_score(same, zc))
    # z-scoring's move, with a bootstrap over the words (here 2): the move on all of them, and none from itself
    move = auc_change(res[0], z[0])
    assert move.difference == pytest.approx(z[0].auc - res[0].auc) and move.n == 2
    still = auc_change(res[0], res[0])
    assert (still.difference, still.low, still.high) == (0, 0, 0)
    with pytest.raises(ValueError, match="the same pairs"):
        auc_change(res[0], in_context_similarity(states[:5], ex[:5])[0])
    with pytest.raises(ValueError, match="both same-sense and different-sense"):
        in_context_similarity(states[:2], ex[:2])
    with pytest.raises(ValueError, match="no word has both"):  # b: one same-sense pair; m: one different-sense pair
        in_context_similarity(states[[0, 1, 5, 6]], [ex[i] for i in (0, 1, 5, 6)])
