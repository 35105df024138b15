"""The optional CRF layer: Viterbi equals brute force, the forward algorithm's log Z equals the brute-force sum,
BIO constraints keep I-X after O out of every decoded sequence, and the NLL trains."""
from __future__ import annotations

import itertools

import pytest
import torch

from course_lib.finetuning.crf import LinearChainCRF, bio_allowed, invalid_transitions
from course_lib.finetuning.labelling import LabelSet

TAGS = ("O", "B-PER", "I-PER", "B-LOC", "I-LOC")


def random_crf(seed, constrained):
    torch.manual_seed(seed)
    crf = LinearChainCRF(TAGS, constrained=constrained)
    with torch.no_grad():
        for p in crf.parameters():
            p.normal_()
    return crf


def brute_force(crf, emissions):
    T, K = emissions.shape
    paths = list(itertools.product(range(K), repeat=T))
    tags = torch.tensor(paths)
    scores = crf.score(emissions.expand(len(paths), T, K), tags)
    return paths[int(scores.argmax())], torch.logsumexp(scores, 0)


@pytest.mark.parametrize("constrained", [False, True])
@pytest.mark.parametrize("T", [1, 2, 3, 4])
def test_viterbi_and_forward_equal_brute_force(T, constrained):
    for seed in range(5):
        crf = random_crf(seed, constrained)
        em = torch.randn(1, T, len(TAGS), generator=torch.Generator().manual_seed(100 + seed))
        best, logz = brute_force(crf, em[0])
        assert crf.viterbi(em)[0] == list(best)
        torch.testing.assert_close(crf.log_partition(em)[0], logz, atol=1e-4, rtol=1e-5)


def test_padding_is_ignored():
    crf = random_crf(3, True)
    em = torch.randn(2, 5, len(TAGS))
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    paths = crf.viterbi(em, mask)
    assert len(paths[0]) == 3 and paths[0] == crf.viterbi(em[:1, :3])[0]
    torch.testing.assert_close(crf.log_partition(em, mask)[0], crf.log_partition(em[:1, :3])[0])


def test_constrained_viterbi_never_outputs_i_after_o():
    crf = LinearChainCRF(LabelSet().tags, constrained=True)
    g = torch.Generator().manual_seed(0)
    em = torch.randn(300, 8, 9, generator=g) * 3
    for path in crf.viterbi(em):
        tags = [crf.tags[k] for k in path]
        assert invalid_transitions(tags) == 0, tags
    # the greedy argmax of the same scores breaks BIO often
    greedy = [[crf.tags[k] for k in row] for row in em.argmax(-1).tolist()]
    assert sum(invalid_transitions(t) for t in greedy) > 100


def test_bio_allowed_and_invalid_transitions():
    trans, start = bio_allowed(TAGS)
    assert not start[2] and start[1] and start[0]
    assert trans[1, 2] and trans[2, 2] and not trans[0, 2] and not trans[3, 2] and trans[2, 3]
    assert invalid_transitions(["O", "I-PER", "B-LOC", "I-PER", "I-PER"]) == 2


def test_nll_trains_towards_the_gold_sequence():
    torch.manual_seed(0)
    crf = LinearChainCRF(TAGS)
    em = torch.zeros(1, 4, len(TAGS))
    gold = torch.tensor([[1, 2, 0, 3]])
    opt = torch.optim.Adam(crf.parameters(), lr=0.1)
    first = crf.nll(em, gold).item()
    for _ in range(100):
        opt.zero_grad()
        crf.nll(em, gold).backward()
        opt.step()
    assert crf.nll(em, gold).item() < first / 4
    assert crf.viterbi(em)[0] == gold[0].tolist()
    with pytest.raises(ValueError, match=r"emissions must be \(B, T, 5\)"):
        crf.viterbi(torch.zeros(1, 3, 4))
