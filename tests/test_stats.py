"""The paired bootstrap (course_lib.stats): its draws, its interval against a direct computation, groups, Spearman
against scipy, and its messages."""
import numpy as np
import pytest
from scipy.stats import spearmanr

from course_lib.stats import Gap, bootstrap_indices, mean_gap, paired_bootstrap, spearman


def test_indices_draw_n_items_with_replacement_reproducibly():
    draws = bootstrap_indices(50, resamples=300, seed=4)
    assert len(draws) == 300 and all(d.shape == (50,) and d.min() >= 0 and d.max() < 50 for d in draws)
    assert any(len(set(d.tolist())) < 50 for d in draws)  # with replacement: repeats
    assert all((a == b).all() for a, b in zip(draws, bootstrap_indices(50, resamples=300, seed=4)))
    assert not all((a == b).all() for a, b in zip(draws, bootstrap_indices(50, resamples=300, seed=5)))
    share = np.bincount(np.concatenate(draws), minlength=50) / (300 * 50)
    assert abs(share - 1 / 50).max() < 0.01  # every item equally likely


def test_group_draws_take_whole_groups():
    groups = ["a"] * 3 + ["b"] * 5 + ["c"] * 2
    for idx in bootstrap_indices(10, resamples=100, seed=0, groups=groups):
        drawn = [groups[i] for i in idx]
        for g, size in (("a", 3), ("b", 5), ("c", 2)):
            assert drawn.count(g) % size == 0   # a group comes whole, or not at all, or several times
        assert sum(drawn.count(g) // s for g, s in (("a", 3), ("b", 5), ("c", 2))) == 3  # three groups drawn


def test_interval_is_the_percentiles_of_the_resampled_differences():
    rng = np.random.default_rng(0)
    a, b = rng.random(200) < 0.7, rng.random(200) < 0.6
    gap = paired_bootstrap(lambda idx: a[idx].mean() - b[idx].mean(), 200, resamples=500, seed=2)
    diffs = [a[i].mean() - b[i].mean() for i in bootstrap_indices(200, 500, seed=2)]
    assert (gap.low, gap.high) == pytest.approx(tuple(np.percentile(diffs, [2.5, 97.5])), abs=1e-15)
    assert gap.difference == pytest.approx(a.mean() - b.mean()) and gap.a_better == np.mean(np.array(diffs) > 0)
    # the paired interval is about +-2 standard errors of the paired difference
    se = (a.astype(float) - b).std(ddof=1) / np.sqrt(200)
    assert gap.high - gap.low == pytest.approx(4 * se, rel=0.15)
    assert str(gap) == f"{gap.difference:+.3f}, 95% interval [{gap.low:+.3f}, {gap.high:+.3f}]"


def test_clear_means_the_interval_leaves_out_zero():
    assert Gap(0.03, 0.01, 0.05, 1.0, 10, 100).clear and Gap(-0.03, -0.05, -0.01, 0.0, 10, 100).clear
    assert not Gap(0.01, -0.01, 0.03, 0.8, 10, 100).clear
    same = np.arange(30.0)
    gap = paired_bootstrap(lambda idx: same[idx].mean() - same[idx].mean(), 30, resamples=100)
    assert (gap.difference, gap.low, gap.high, gap.a_better, gap.clear) == (0, 0, 0, 0, False)


def test_spearman_equals_scipys_with_ties():
    rng = np.random.default_rng(1)
    x, y = rng.integers(0, 10, 100), rng.random(100)
    assert spearman(x, y) == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
    idx = bootstrap_indices(100, 1, seed=0)[0]   # a resample's repeated items are ties
    assert spearman(x[idx], y[idx]) == pytest.approx(spearmanr(x[idx], y[idx]).statistic, abs=1e-12)


def test_messages():
    with pytest.raises(ValueError, match=r"^a bootstrap needs at least 2 items, not 1$"):
        bootstrap_indices(1)
    with pytest.raises(ValueError, match=r"^resamples must be at least 1, not 0$"):
        bootstrap_indices(5, resamples=0)
    with pytest.raises(ValueError, match=r"^3 group labels for 4 items$"):
        bootstrap_indices(4, groups=[0, 0, 1])
    with pytest.raises(ValueError, match=r"^a bootstrap over groups needs at least 2 groups$"):
        bootstrap_indices(3, groups=[0, 0, 0])
    x = np.array([1.0, 1.0, 1.0, 2.0])
    with pytest.raises(ValueError, match="not finite on some resamples"):
        paired_bootstrap(lambda idx: spearman(x[idx], x[idx]), 4, resamples=200)


def test_batched_resamples_give_the_same_gap_as_one_call_per_resample():
    rng = np.random.default_rng(3)
    x, y, h = rng.random(120), rng.random(120), rng.random(120)
    one = paired_bootstrap(lambda i: spearman(x[i], h[i]) - spearman(y[i], h[i]), 120, resamples=300, seed=1)
    batched = paired_bootstrap(lambda i: spearman(x[i], h[i]) - spearman(y[i], h[i]), 120, resamples=300, seed=1,
                               batched=True)
    assert (batched.low, batched.high, batched.a_better, batched.n, batched.resamples) == pytest.approx(
        (one.low, one.high, one.a_better, one.n, one.resamples), abs=1e-12)
    assert batched.difference == pytest.approx(one.difference, abs=1e-12)
    rows = np.stack(bootstrap_indices(120, 5, seed=0))
    assert spearman(x[rows], h[rows]) == pytest.approx([spearman(x[r], h[r]) for r in rows], abs=1e-12)
    with pytest.raises(ValueError, match=r"^batched resamples need items, not groups \(a group draw's size varies\)$"):
        paired_bootstrap(lambda i: 0.0, 4, groups=[0, 0, 1, 1], batched=True)


def test_average_ranks_equal_scipys_rankdata_row_by_row():
    from scipy.stats import rankdata

    from course_lib.stats import average_ranks

    rng = np.random.default_rng(5)
    a = rng.integers(0, 6, size=(40, 25)).astype(float)   # many ties
    assert np.array_equal(average_ranks(a), np.stack([rankdata(r) for r in a]))
    assert np.array_equal(average_ranks(np.array([3.0, 1.0, 3.0, 2.0])), [3.5, 1.0, 3.5, 2.0])



def test_ranks_of_draws_are_the_ranks_of_each_resample_exactly():
    from course_lib.stats import average_ranks, bootstrap_indices, ranks_of_draws

    rng = np.random.default_rng(7)
    for x in (rng.integers(0, 5, 60).astype(float),          # many ties (human scores)
              rng.normal(size=60),                             # none (cosines)
              np.r_[rng.normal(size=58), 0.25, 0.25]):         # one
        draws = bootstrap_indices(len(x), 300, seed=1)
        assert np.array_equal(ranks_of_draws(x, draws), average_ranks(x[draws]))
        assert np.array_equal(ranks_of_draws(x, np.arange(len(x))[None]), average_ranks(x)[None])
    assert np.array_equal(ranks_of_draws([2.0, 1.0, 2.0], [[0, 0, 1], [2, 1, 1]]), [[2.5, 2.5, 1.0], [3.0, 1.5, 1.5]])
    x = np.array([1.0, np.nan, 0.5, np.nan])  # NaN is not a tie: the sort ranks it
    draws = np.array([[0, 1, 3, 2], [1, 1, 0, 2]])
    assert np.array_equal(ranks_of_draws(x, draws), average_ranks(x[draws]))

def test_auc_equals_sklearns_roc_auc_with_ties_and_says_what_it_needs():
    from sklearn.metrics import roc_auc_score

    from course_lib.stats import auc

    rng = np.random.default_rng(3)
    for scores in (rng.normal(size=200), rng.integers(0, 4, 200).astype(float)):  # no ties; many
        labels = rng.random(200) < 0.3
        assert auc(labels, scores) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    assert auc([True, False], [0.2, 0.2]) == 0.5 and auc([True, False, False], [1, 0, 2]) == 0.5
    with pytest.raises(ValueError, match="both positive and negative"):
        auc([True, True], [0.1, 0.2])
    with pytest.raises(ValueError, match="one label per score: 2 labels, 3 scores"):
        auc([True, False], [0.1, 0.2, 0.3])


def test_mean_gap_is_the_paired_bootstrap_of_the_per_item_difference():
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 2, 150), rng.integers(0, 2, 150)
    gap = mean_gap(a, b)
    loop = paired_bootstrap(lambda i: a[i].mean() - b[i].mean(), 150)
    assert gap.difference == pytest.approx(a.mean() - b.mean())
    assert (gap.low, gap.high, gap.a_better) == pytest.approx((loop.low, loop.high, loop.a_better), abs=1e-12)
    assert str(mean_gap(a - b)) == str(gap)   # one array: the mean of its items
    groups = np.repeat(np.arange(30), 5)
    assert mean_gap(a, b, groups=groups).n == 30
    with pytest.raises(ValueError, match="one score per item"):
        mean_gap(np.ones((3, 4)))
    with pytest.raises(ValueError, match="the same items"):
        mean_gap(a, b[:1])   # would broadcast
