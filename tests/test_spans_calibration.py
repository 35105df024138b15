"""correct_null_prior: undoing the share of NULL spans a span classifier was trained on (notebook 11.5, before the
calibrated threshold). It is Bayes' rule: p(NULL) × 1/s renormalised, the same as log(1/s) added to the NULL logit."""
from __future__ import annotations

import math

import pytest
import torch

from course_lib.spans import correct_null_prior, decode_spans, SpanLabels


def test_it_is_the_softmax_with_log_one_over_s_added_to_the_null_logit():
    logits = torch.randn(50, 4, generator=torch.Generator().manual_seed(0)) * 3
    shifted = logits.clone()
    shifted[:, 0] += math.log(1 / 0.3)
    got = correct_null_prior(logits.softmax(-1), 0.3)
    assert torch.allclose(got, shifted.softmax(-1), atol=1e-6)
    assert torch.allclose(got.sum(-1), torch.ones(50), atol=1e-6)


def test_by_hand_null_gains_and_every_other_class_loses_in_proportion():
    got = correct_null_prior(torch.tensor([[0.4, 0.3, 0.3]]), 0.5)  # 0.8 : 0.3 : 0.3 -> / 1.4
    assert torch.allclose(got, torch.tensor([[0.8, 0.3, 0.3]]) / 1.4)
    assert got[0, 0] > 0.4 and got[0, 1] < 0.3 and got[0, 1] == got[0, 2]
    # another NULL column
    assert torch.allclose(correct_null_prior(torch.tensor([[0.3, 0.4, 0.3]]), 0.5, null=1),
                          torch.tensor([[0.3, 0.8, 0.3]]) / 1.4)


def test_a_share_of_one_changes_nothing_and_a_smaller_share_removes_entities():
    probs = torch.tensor([[0.30, 0.60, 0.10],    # an entity that a correction for s = 0.3 turns into NULL (1.0 > 0.6)
                          [0.05, 0.90, 0.05],    # a confident one that stays (0.17 < 0.9)
                          [0.80, 0.10, 0.10]])   # NULL stays NULL
    assert torch.allclose(correct_null_prior(probs, 1.0), probs)
    labels = SpanLabels(["ORG", "PER"])
    spans = [(0, 0), (1, 1), (2, 2)]
    before = decode_spans(probs, spans, labels)
    after = decode_spans(correct_null_prior(probs, 0.3), spans, labels)
    assert [x[:3] for x in before] == [(0, 0, "ORG"), (1, 1, "ORG")]
    assert [x[:3] for x in after] == [(1, 1, "ORG")]
    assert after[0][3] < before[1][3]  # the entity that stays is less sure than before


@pytest.mark.parametrize("share", [0, -0.5, 1.5, True])
def test_a_share_outside_0_1_is_refused(share):
    with pytest.raises(ValueError, match=r"null_share is the share of the NULL spans kept in training, in \(0, 1\]"):
        correct_null_prior(torch.full((2, 3), 1 / 3), share)


def test_probabilities_must_be_one_row_per_span():
    with pytest.raises(ValueError, match=r"must be an \(N, K\) tensor"):
        correct_null_prior(torch.tensor([0.5, 0.5]), 0.3)
    with pytest.raises(ValueError, match="is not among the 3 classes"):
        correct_null_prior(torch.full((2, 3), 1 / 3), 0.3, null=3)
