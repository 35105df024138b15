"""SpanBERT masking (§11.5.1): the span-length distribution, and what span_mask does to real sentences."""
from __future__ import annotations

import math

import pytest
import torch
from scipy import stats

import course_lib
from course_lib.spans import (choose_spans, clipped_mean_span_length, load_gum_spans, mean_span_length,
                              sample_span_lengths, span_length_distribution, span_mask, word_units)
from course_lib.spans.masking import _valid_starts


@pytest.fixture(scope="module")
def tokenizer():
    return course_lib.load_pretrained()[1]


# ----------------------------------------------------------------------------- lengths

def test_exact_distribution_is_the_renormalised_geometric():
    probs = span_length_distribution(0.2, 10)
    assert probs.shape == (10,) and math.isclose(float(probs.sum()), 1.0, abs_tol=1e-12)
    z = 1 - 0.8 ** 10
    for ell in range(1, 11):
        assert math.isclose(float(probs[ell - 1]), 0.2 * 0.8 ** (ell - 1) / z, rel_tol=1e-12)
    assert (probs[1:] < probs[:-1]).all()  # biased towards short spans


def test_mean_span_length_is_spanberts_3_8_and_cutting_would_give_4_46():
    assert mean_span_length() == pytest.approx(3.797, abs=5e-4)
    # closed form of the truncated mean: (1 - (n+1) q^n + n q^(n+1)) / (1-q)^2 * p / (1 - q^n)
    q, n = 0.8, 10
    closed = (1 - (n + 1) * q ** n + n * q ** (n + 1)) / (1 - q) ** 2 * 0.2 / (1 - q ** n)
    assert mean_span_length() == pytest.approx(closed, rel=1e-12)
    assert clipped_mean_span_length() == pytest.approx(4.4631, abs=1e-4)
    geo = torch.distributions.Geometric(probs=torch.tensor(0.2))  # failures before the first success: 0, 1, ...
    torch.manual_seed(0)
    raw = geo.sample((200_000,)) + 1
    assert float(raw.clamp(max=10).mean()) == pytest.approx(clipped_mean_span_length(), abs=0.03)


@pytest.mark.parametrize("p, max_len, seed", [(0.2, 10, 0), (0.5, 4, 1), (0.1, 7, 2)])
def test_sampled_lengths_follow_the_exact_distribution_chi_square(p, max_len, seed):
    n = 100_000
    lengths = sample_span_lengths(n, p, max_len, generator=seed)
    assert lengths.dtype == torch.long and int(lengths.min()) >= 1 and int(lengths.max()) <= max_len
    observed = torch.bincount(lengths, minlength=max_len + 1)[1:].double()
    expected = span_length_distribution(p, max_len) * n
    chi2 = float(((observed - expected) ** 2 / expected).sum())
    assert chi2 < stats.chi2.ppf(0.999, df=max_len - 1), f"chi-square {chi2:.1f}"
    assert float(lengths.double().mean()) == pytest.approx(mean_span_length(p, max_len), abs=0.03)


def test_a_wrong_sampler_fails_the_same_chi_square_test():
    """The test has power: lengths piled at 10 (cut instead of redrawn) are rejected."""
    torch.manual_seed(0)
    cut = (torch.distributions.Geometric(probs=torch.tensor(0.2)).sample((100_000,)) + 1).clamp(max=10).long()
    observed = torch.bincount(cut, minlength=11)[1:].double()
    expected = span_length_distribution() * 100_000
    assert float(((observed - expected) ** 2 / expected).sum()) > stats.chi2.ppf(0.999, df=9)


def test_same_seed_same_lengths_and_bad_arguments_are_refused():
    assert torch.equal(sample_span_lengths(50, generator=3), sample_span_lengths(50, generator=3))
    with pytest.raises(ValueError, match="success probability"):
        span_length_distribution(0.0)
    with pytest.raises(ValueError, match="longest span"):
        span_length_distribution(0.2, 0)
    with pytest.raises(ValueError, match="number of lengths"):
        sample_span_lengths(-1)


# ----------------------------------------------------------------------------- spans over words

def test_word_units_group_subwords_and_skip_special_tokens():
    assert word_units([None, 0, 1, 1, 1, 2, None, None]) == [(1, 1), (2, 4), (5, 5)]
    assert word_units([None, 0, 0, 1, None], eligible=[False, True, False, True, False]) == [(3, 3)]


def test_valid_starts_keep_a_free_word_on_each_side():
    free = [True, True, False, True, True, True]
    assert _valid_starts(free, 1) == [0, 4, 5]  # word 1 and 3 touch the masked word 2
    assert _valid_starts(free, 2) == [4]
    assert _valid_starts(free, 3) == []


def test_choose_spans_covers_the_budget_without_touching_spans():
    g = torch.Generator().manual_seed(0)
    for _ in range(300):
        sizes = torch.randint(1, 4, (int(torch.randint(5, 60, (1,), generator=g)),), generator=g).tolist()
        spans = choose_spans(sizes, generator=g)
        for (a, b), (c, d) in zip(spans, spans[1:]):
            assert b + 1 < c, "spans overlap or touch"
        for a, b in spans:
            assert b - a + 1 <= 10
        covered = sum(sum(sizes[a:b + 1]) for a, b in spans)
        assert covered <= 0.15 * sum(sizes) + max(sizes) / 2 + 1e-9


# ----------------------------------------------------------------------------- span_mask on real sentences

@pytest.fixture(scope="module")
def masked_corpus(tokenizer):
    """Every training sentence of the GUM span data, span-masked twice with fixed seeds (> 100,000 tokens)."""
    sentences = [" ".join(s.words) for s in load_gum_spans("train")]
    unigram = course_lib.unigram_distribution(sentences[:500], tokenizer=tokenizer)
    g = torch.Generator().manual_seed(0)
    out = []
    for _ in range(2):
        for k in range(0, len(sentences), 64):
            enc = tokenizer(sentences[k:k + 64], truncation=True)
            out.append((enc, span_mask(enc.input_ids, enc.word_ids, special_ids=tokenizer.special_ids,
                                       mask_token_id=tokenizer.mask_token_id, unigram=unigram,
                                       attention_mask=enc.attention_mask, generator=g)))
    return out, unigram


def test_masked_share_is_15_percent(masked_corpus):
    runs, _ = masked_corpus
    eligible = sum(int(m.batch.eligible.sum()) for _, m in runs)
    selected = sum(int(m.batch.selected.sum()) for _, m in runs)
    assert eligible >= 100_000
    assert abs(selected / eligible - 0.15) <= 0.005, f"{selected / eligible:.4f}"


def test_no_span_splits_a_word_and_spans_never_touch(masked_corpus):
    runs, _ = masked_corpus
    for enc, m in runs:
        for b, spans in enumerate(m.spans):
            wid = enc.word_ids[b]
            for s, e in spans:
                assert wid[s] is not None and wid[e] is not None
                assert s == 0 or wid[s - 1] != wid[s], "a span starts inside a word"
                assert e + 1 >= len(wid) or wid[e + 1] != wid[e], "a span ends inside a word"
            for (s, e), (s2, _e2) in zip(spans, spans[1:]):
                assert e + 1 < s2
            sel = m.batch.selected[b].nonzero().flatten().tolist()
            assert sel == [t for s, e in spans for t in range(s, e + 1)]


def test_no_special_token_is_masked_or_drawn(masked_corpus, tokenizer):
    runs, _ = masked_corpus
    special = torch.tensor(sorted(tokenizer.special_ids))
    for enc, m in runs:
        is_special = torch.isin(enc.input_ids, special)
        assert not m.batch.selected[is_special].any()
        assert torch.equal(m.input_ids[is_special], enc.input_ids[is_special])
        assert (m.labels[is_special] == -100).all()
        drawn = m.input_ids[m.batch.randomized]
        assert not torch.isin(drawn, special[special != tokenizer.mask_token_id]).any()


def test_one_fate_per_span_and_80_10_10_across_spans(masked_corpus):
    runs, _ = masked_corpus
    fates = {"masked": 0, "randomized": 0, "kept": 0}
    multi = 0
    for _, m in runs:
        for b, spans in enumerate(m.spans):
            for (s, e), fate in zip(spans, m.fates[b]):
                per_token = getattr(m.batch, fate)[b, s:e + 1]
                assert per_token.all(), "the tokens of one span got different fates"
                fates[fate] += 1
                multi += e > s
    n = sum(fates.values())
    assert multi > 1000
    for fate, target in (("masked", 0.8), ("randomized", 0.1), ("kept", 0.1)):
        assert abs(fates[fate] / n - target) <= 6 * math.sqrt(target * (1 - target) / n), (fate, fates[fate] / n)


def test_span_lengths_stay_within_the_bound_and_average_near_the_sampler(masked_corpus):
    runs, _ = masked_corpus
    lengths = [ell for _, m in runs for ell in m.span_lengths()]
    assert max(lengths) <= 10 and min(lengths) >= 1
    # the budget cuts the last span of a sentence and short sentences have no room for long spans: shorter on average
    assert 2.0 < sum(lengths) / len(lengths) < mean_span_length()


def test_span_mask_explains_bad_input(tokenizer):
    enc = tokenizer("So long and thanks for all the fish.")
    u = torch.full((tokenizer.vocab_size,), 1.0 / tokenizer.vocab_size)
    with pytest.raises(ValueError, match="word_ids must be 1 lists"):
        span_mask(enc.input_ids, [], special_ids=tokenizer.special_ids, mask_token_id=tokenizer.mask_token_id, unigram=u)
    with pytest.raises(ValueError, match=r"\(B, T\)"):
        span_mask(enc.input_ids[0], enc.word_ids, special_ids=tokenizer.special_ids,
                  mask_token_id=tokenizer.mask_token_id, unigram=u)
