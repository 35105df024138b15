"""course_lib.embeddings and course_lib.embeddings.senses: word vectors, 1-NN WSD, anisotropy, z-scoring, similarity, UMAP cache."""
from __future__ import annotations


import numpy as np
import pytest
import torch

from course_lib.embeddings import (DimensionReport, NearestSenseWSD, ScalarMix, ZScorer, accuracy, anisotropy,
                                   combine_layers, cosine_matrix, dimension_report, sense_centroids, similarity_pairs,
                                   target_states, umap_project, word_states)
from course_lib.embeddings.senses import SenseExample, parse_marked, sense_examples


def ex(lemma, sense, split="train"):
    return SenseExample(f"a {lemma} here", 2, 2 + len(lemma), lemma, sense, split)


# ----------------------------------------------------------------------------- toy 1-NN with known answers

def test_sense_centroids_are_means_per_sense():
    X = torch.tensor([[1.0, 0], [3, 0], [0, 2], [0, 4]])
    senses, C = sense_centroids(X, ["a", "a", "b", "b"])
    assert senses == ["a", "b"]
    assert torch.equal(C, torch.tensor([[2.0, 0], [0, 3]]))


def test_nearest_sense_uses_cosine_and_only_the_lemmas_own_senses():
    train = [ex("bank", "bank (river)"), ex("bank", "bank (finance)"), ex("bat", "bat (animal)"), ex("bat", "bat (club)")]
    X = torch.tensor([[1.0, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0]])
    wsd = NearestSenseWSD().fit(X, train)
    # [10, 1, 0] is far from [1,0,0] in distance but has cosine ~1 with it: cosine decides
    assert wsd.predict(torch.tensor([[10.0, 1, 0], [0.1, 1, 0]]), ["bank", "bank"]) == ["bank (river)", "bank (finance)"]
    # for "bat", [1, 0, 0] is nearest to bat (club) = [1, 1, 0]; bank's senses are not candidates
    assert wsd.predict(torch.tensor([[1.0, 0, 0]]), ["bat"]) == ["bat (club)"]
    scores = wsd.scores(torch.tensor([1.0, 0, 0]), "bank")
    assert [s.sense for s in scores] == ["bank (river)", "bank (finance)"] and scores[0].cosine == pytest.approx(1)


def test_most_frequent_sense_baseline_and_fallback():
    train = [ex("bank", "bank (finance)"), ex("bank", "bank (finance)"), ex("bank", "bank (river)")]
    wsd = NearestSenseWSD(fallback={"mouse": "mouse (animal)"}).fit(torch.eye(3), train)
    assert wsd.predict_mfs(["bank", "mouse"]) == ["bank (finance)", "mouse (animal)"]
    assert wsd.predict(torch.zeros(1, 3), ["mouse"]) == ["mouse (animal)"]
    with pytest.raises(KeyError, match="no training examples and no fallback sense for 'crane'"):
        wsd.predict(torch.zeros(1, 3), ["crane"])
    assert accuracy(["a", "b", "b"], ["a", "b", "c"]) == pytest.approx(2 / 3)


def test_cosine_matrix_of_a_zero_vector_is_zero_not_nan():
    assert torch.equal(cosine_matrix(torch.zeros(1, 3), torch.eye(3)), torch.zeros(1, 3))


# ----------------------------------------------------------------------------- layers and pooling

def test_combine_layers_choices_and_errors():
    S = torch.arange(2 * 7 * 3, dtype=torch.float).view(2, 7, 3)
    assert torch.equal(combine_layers(S, 0), S[:, 0])
    assert torch.equal(combine_layers(S, "last"), S[:, 6])
    assert torch.equal(combine_layers(S, -2), S[:, 5])
    assert torch.allclose(combine_layers(S, "last4_mean"), S[:, 3:].mean(1))
    assert torch.allclose(combine_layers(S, "last4_sum"), S[:, 3:].sum(1))
    with pytest.raises(IndexError, match=r"^layer 7 is out of range: this model has layers 0 \(embeddings\) to 6$"):
        combine_layers(S, 7)
    with pytest.raises(ValueError, match="layers must be a layer number 0..6"):
        combine_layers(S, "last3")


def test_scalar_mix_starts_as_the_mean_of_all_layers():
    S = torch.randn(4, 7, 5)
    mix = ScalarMix(7)
    assert torch.allclose(mix(S), S.mean(1), atol=1e-6)
    assert torch.allclose(mix.weights.sum(), torch.tensor(1.0))


def test_target_states_pool_the_subwords_of_the_target(embedded):
    model, tok = embedded
    text = "The unaffordable rent shocked us."
    enc = tok(text)
    start = text.index("unaffordable")
    idx = [t for t, (s, e) in enumerate(enc.offsets[0]) if e > s and s < start + 12 and e > start]
    assert len(idx) >= 2, "the test needs a word split into subwords"
    with torch.no_grad():
        hs = torch.stack(model(**enc, output_hidden_states=True).hidden_states, 1)[0]  # (L+1, T, d)
    got = {p: target_states(model, tok, texts=[text], spans=[(start, start + 12)], pooling=p)[0] for p in
           ("mean", "first", "sum")}
    assert torch.allclose(got["mean"], hs[:, idx].mean(1), atol=1e-5)
    assert torch.allclose(got["first"], hs[:, idx[0]], atol=1e-5)
    assert torch.allclose(got["sum"], hs[:, idx].sum(1), atol=1e-5)
    # the same vector in a batch with a longer, padded neighbour
    batch = target_states(model, tok, texts=[text, "A much longer sentence " * 5], spans=[(start, start + 12), (2, 6)])
    assert torch.allclose(batch[0], got["mean"], atol=1e-4)


def test_word_states_errors_in_the_users_words(embedded):
    model, tok = embedded
    with pytest.raises(ValueError, match=r"^the target word 'bank' does not occur in the sentence 'We sat by the river\.'$"):
        word_states(model, tok, "We sat by the river.", "bank")
    with pytest.raises(ValueError, match="^the sentence is empty"):
        word_states(model, tok, "  ", "bank")
    with pytest.raises(ValueError, match="^no target word given"):
        word_states(model, tok, "The bank.", "")
    assert word_states(model, tok, "Banks and a bank.", "bank").shape == (7, 384)


def test_sense_examples_from_outside_data():
    recs = [
        {"sentence": "He sat on the bank.", "span": (14, 18), "sense": "bank%1:17:01::"},
        ("The bank, she said, was closed.", 1, "bank%1:14:00::"),
        {"sentence": "Mice ran.", "word": "Mice", "sense": "mouse (animal)", "lemma": "mouse"},
    ]
    out = sense_examples(recs)
    assert [e.word for e in out] == ["bank", "bank", "Mice"]
    assert [e.lemma for e in out] == ["bank", "bank", "mouse"]
    with pytest.raises(ValueError, match=r"^record 0: the target word 'bat' does not occur in 'No bats\.'$"):
        sense_examples([{"sentence": "No bats.", "word": "bat", "sense": "bat (animal)"}])
    with pytest.raises(ValueError, match="record 0: word_index 5, but the sentence has 2 words"):
        sense_examples([("No bats.", 5, "x")])
    assert parse_marked("They sat on the [[bank]].") == ("They sat on the bank.", 16, 20)
    with pytest.raises(ValueError, match="found 2"):
        parse_marked("[[a]] [[b]]")


# ----------------------------------------------------------------------------- anisotropy, rogue dimensions, z-scoring

def test_anisotropy_of_identical_and_of_isotropic_vectors():
    assert anisotropy(torch.ones(10, 4)) == pytest.approx(1.0)
    g = torch.Generator().manual_seed(0)
    assert abs(anisotropy(torch.randn(5000, 256, generator=g))) < 0.01
    # orthogonal vectors: distinct pairs only, so exactly 0 (a self-pair would add 1/N)
    assert anisotropy(torch.eye(4), n_pairs=5000) == pytest.approx(0.0)


def test_a_rogue_dimension_is_found_and_dominates_cosine():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(2000, 64, generator=g)
    X[:, 17] += 20.0  # a large shared offset in one dimension
    rep = dimension_report(X, n_rogue=1)
    assert isinstance(rep, DimensionReport) and rep.rogue == [17]
    assert rep.top_share() > 0.9
    assert float(rep.cosine_share.sum()) == pytest.approx(anisotropy(X, 50000), abs=0.02)


def test_z_scored_vectors_have_mean_0_and_std_1_and_constant_dimensions_become_0():
    g = torch.Generator().manual_seed(1)
    C = torch.randn(500, 8, generator=g) * torch.arange(1, 9) + 5
    C[:, 3] = 2.5  # zero variance
    z = ZScorer().fit(C)
    Z = z(C)
    ok = torch.arange(8) != 3
    assert torch.allclose(Z[:, ok].mean(0), torch.zeros(7), atol=1e-5)
    assert torch.allclose(Z[:, ok].std(0, unbiased=False), torch.ones(7), atol=1e-5)
    assert torch.equal(Z[:, 3], torch.zeros(500)) and torch.isfinite(Z).all()
    with pytest.raises(RuntimeError, match="not fitted yet"):
        ZScorer()(C)
    with pytest.raises(ValueError, match="fitted on 8-dimensional vectors, got 3 dimensions"):
        z(torch.zeros(2, 3))


def test_similarity_sets_come_from_gensim():
    ws, sl = similarity_pairs("wordsim353"), similarity_pairs("simlex999")
    assert len(ws) == 353 and len(sl) == 999
    assert ("tiger", "cat", 7.35) in ws
    with pytest.raises(ValueError, match="unknown similarity set 'men'"):
        similarity_pairs("men")


# ----------------------------------------------------------------------------- UMAP cache

def test_umap_projection_is_cached_in_memory_and_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_LIB_CACHE", str(tmp_path))
    import course_lib.embeddings as C

    X = np.random.default_rng(0).normal(size=(60, 16)).astype(np.float32)
    first = umap_project(X, n_neighbors=10)
    assert not first.cached and first.coords.shape == (60, 2) and np.isfinite(first.coords).all()
    assert (tmp_path / "umap" / f"{first.key}.npy").exists()
    again = umap_project(X, n_neighbors=10)
    assert again.cached and np.array_equal(again.coords, first.coords)
    C.UMAP_CACHE.clear()  # a new kernel: the disk cache answers
    disk = umap_project(X, n_neighbors=10)
    assert disk.cached and np.array_equal(disk.coords, first.coords)
    other = umap_project(X, n_neighbors=5)  # other parameters: another key
    assert not other.cached and other.key != first.key
    C.UMAP_CACHE.clear(disk=True)
    assert not list((tmp_path / "umap").glob("*.npy")) and not umap_project(X, n_neighbors=10).cached


# ----------------------------------------------------------------------------- the numbers notebook 11.3 shows

@pytest.fixture(scope="module")
def wsd_states(embedded):
    from course_lib.embeddings import load_sense_data, sense_states

    model, tok = embedded
    data = load_sense_data()
    states = sense_states(model, tok, data.examples)  # 11.3's (the same cache file): rounded through float16
    train = torch.tensor([e.split == "train" for e in data.examples])
    assert [e for e, t in zip(data.examples, train) if t] == data.train
    return data, states[train], states[~train]


@pytest.mark.slow
def test_1nn_wsd_beats_the_most_frequent_sense_by_15_points_at_its_best_layer(wsd_states):
    from course_lib.embeddings import wsd_by_layer

    data, tr, te = wsd_states
    results = wsd_by_layer(tr, data.train, te, data.test)
    best = max(results, key=lambda r: r.accuracy)
    mfs = results[0].mfs_accuracy
    assert all(r.mfs_accuracy == mfs for r in results)
    assert best.accuracy >= mfs + 0.15, [(r.layers, round(r.accuracy, 3)) for r in results]
    # the embedding layer (no context) cannot tell the senses of one word apart much better than MFS
    assert results[0].accuracy < best.accuracy - 0.2
    for r in results:   # the per-example answers behind each accuracy, for paired comparisons
        assert len(r.correct) == len(r.mfs_correct) == len(data.test)
        assert (sum(r.correct) / len(data.test), sum(r.mfs_correct) / len(data.test)) == (r.accuracy, r.mfs_accuracy)


@pytest.fixture(scope="module")
def lee_states(embedded):
    from course_lib.embeddings import corpus_states, lee_corpus

    model, tok = embedded
    return corpus_states(model, tok, lee_corpus(), max_tokens=8000)


@pytest.mark.slow
def test_anisotropy_per_layer_raw_and_z_scored(lee_states):
    raw = [anisotropy(lee_states[:, l]) for l in range(lee_states.size(1))]
    zs = [anisotropy(ZScorer().fit(lee_states[:, l])(lee_states[:, l])) for l in range(lee_states.size(1))]
    assert max(abs(z) for z in zs) <= 0.02, zs
    # the middle layers are anisotropic; the last layer (trained for sentence embeddings) nearly isotropic
    assert max(raw[2:6]) > 0.1 and raw[-1] < 0.08 and raw[-1] < max(raw[2:6]) / 2, raw


@pytest.mark.slow
def test_word_similarity_spearman_raw_and_z_scored(embedded, lee_states):
    from course_lib.embeddings import isolated_word_states, similarity_correlation

    model, tok = embedded
    for name in ("wordsim353", "simlex999"):
        pairs = similarity_pairs(name)
        words = sorted({w for a, b, _ in pairs for w in (a, b)})
        W = isolated_word_states(model, tok, words)[:, -1]
        vecs = dict(zip(words, W))
        raw = similarity_correlation(vecs, pairs)
        z = similarity_correlation(vecs, pairs, ZScorer().fit(lee_states[:, -1]))
        assert 0.3 < raw < 1 and 0.3 < z < 1, (name, raw, z)


def test_umap_is_imported_with_numba_caching_so_the_compile_is_paid_once_per_machine():
    from numba.core.caching import NullCache

    from course_lib.embeddings import import_umap

    umap = import_umap()
    import umap.layouts  # noqa: F811 - the submodule, after import_umap()

    for f in (umap.layouts._nb_optimize_layout_euclidean_single_epoch, umap.umap_.smooth_knn_dist):
        assert not isinstance(f._cache, NullCache), f"{f.py_func.__name__} is compiled without a disk cache"
    import numba
    assert numba.njit.__module__.startswith("numba"), "numba.njit must be restored after the import"


def test_corpus_states_are_each_texts_tokens_in_order_up_to_the_limit(embedded):
    """Texts of very different lengths, the limit falling inside a text: the same vectors as running each text
    alone (the batching by length only saves padding), special tokens left out, and no more than max_tokens."""
    from course_lib.embeddings import corpus_states

    model, tok = embedded
    texts = ["A short one.", "", "This sentence is a good deal longer than the first, and it goes on for a while "
             "before it stops.", "Mid-sized text with some words.", "Tiny.", "One more at the end that is cut."]
    alone = []
    for t in (t for t in texts if t.strip()):
        enc = tok([t])
        with torch.no_grad():
            hs = model(**enc, output_hidden_states=True).hidden_states
        alone.append(torch.stack(hs, dim=2)[0, 1:-1])  # without [CLS] and [SEP]
    want = torch.cat(alone)
    for limit, size in ((10_000, 4), (len(want) - 3, 2), (7, 3)):
        got = corpus_states(model, tok, texts, max_tokens=limit, batch_size=size)
        assert got.shape == (min(limit, len(want)), *want.shape[1:])
        torch.testing.assert_close(got, want[:len(got)], atol=1e-4, rtol=1e-4)
