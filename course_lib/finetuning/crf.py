"""A linear-chain CRF on top of the tag scores (SLP3 §11.4.3: "the distribution over labels ... can be passed to
a conditional random field (CRF) layer which can take global tag-level transitions into account").

The score of a tag sequence y_1..y_T given emission scores e_t(k) (the tagger's logits) is

    s(y) = start[y_1] + Σ_t e_t(y_t) + Σ_{t>1} A[y_{t-1}, y_t] + end[y_T],      P(y | x) = exp s(y) / Z

* :meth:`LinearChainCRF.log_partition` -- log Z by the forward algorithm, O(T K²) instead of K^T;
* :meth:`LinearChainCRF.viterbi` -- the best sequence by dynamic programming;
* :meth:`LinearChainCRF.nll` -- -log P(gold | x), the training loss;
* :func:`bio_allowed` -- BIO's hard constraints: I-X only after B-X or I-X, never first. With
  ``constrained=True`` forbidden transitions get a score of -10⁴, so Viterbi never outputs I-X after O.
"""
from __future__ import annotations

import torch
from torch import nn

FORBIDDEN = -1e4


def bio_allowed(tags) -> tuple[torch.Tensor, torch.Tensor]:
    """(K, K) allowed transitions prev -> next, and (K,) allowed first tags, for BIO tags."""
    K = len(tags)
    trans = torch.ones((K, K), dtype=torch.bool)
    start = torch.ones(K, dtype=torch.bool)
    for j, t in enumerate(tags):
        if t.startswith("I-"):
            start[j] = False
            for i, p in enumerate(tags):
                trans[i, j] = p in (f"B-{t[2:]}", t)
    return trans, start


def invalid_transitions(tags) -> int:
    """How many I-X in a word-tag sequence follow neither B-X nor I-X (counted per position)."""
    prev, bad = "O", 0
    for t in tags:
        if t.startswith("I-") and prev not in (f"B-{t[2:]}", t):
            bad += 1
        prev = t
    return bad


class LinearChainCRF(nn.Module):
    """Transition scores A (K, K), start and end scores (K,); optional hard BIO constraints."""

    def __init__(self, tags, constrained: bool = True):
        super().__init__()
        self.tags = tuple(tags)
        K = len(self.tags)
        self.transitions = nn.Parameter(torch.zeros(K, K))  # A[prev, next]
        self.start = nn.Parameter(torch.zeros(K))
        self.end = nn.Parameter(torch.zeros(K))
        trans_ok, start_ok = bio_allowed(self.tags) if constrained else (torch.ones(K, K, dtype=torch.bool),
                                                                          torch.ones(K, dtype=torch.bool))
        self.register_buffer("trans_penalty", torch.where(trans_ok, 0.0, FORBIDDEN))
        self.register_buffer("start_penalty", torch.where(start_ok, 0.0, FORBIDDEN))

    def _A(self):
        return self.transitions + self.trans_penalty, self.start + self.start_penalty, self.end

    def _check(self, emissions, mask):
        if emissions.dim() != 3 or emissions.size(-1) != len(self.tags):
            raise ValueError(f"emissions must be (B, T, {len(self.tags)}), got {tuple(emissions.shape)}")
        if mask is None:
            mask = torch.ones(emissions.shape[:2], dtype=torch.bool, device=emissions.device)
        mask = mask.bool()
        if not mask[:, 0].all():
            raise ValueError("every sequence needs at least its first position (mask[:, 0] must be 1)")
        return mask

    def score(self, emissions, tags, mask=None) -> torch.Tensor:
        """s(y) of given tag sequences: (B,)."""
        mask = self._check(emissions, mask)
        A, start, end = self._A()
        B, T, _ = emissions.shape
        s = start[tags[:, 0]] + emissions[:, 0].gather(1, tags[:, :1]).squeeze(1)
        for t in range(1, T):
            step = A[tags[:, t - 1], tags[:, t]] + emissions[:, t].gather(1, tags[:, t:t + 1]).squeeze(1)
            s = s + step * mask[:, t]
        last = mask.sum(1) - 1
        return s + end[tags.gather(1, last[:, None]).squeeze(1)]

    def log_partition(self, emissions, mask=None) -> torch.Tensor:
        """log Z by the forward algorithm: alpha_t(k) = e_t(k) + logsumexp_j(alpha_{t-1}(j) + A[j, k]). (B,)"""
        mask = self._check(emissions, mask)
        A, start, end = self._A()
        alpha = start + emissions[:, 0]  # (B, K)
        for t in range(1, emissions.size(1)):
            nxt = torch.logsumexp(alpha[:, :, None] + A[None], dim=1) + emissions[:, t]  # (B, K)
            alpha = torch.where(mask[:, t, None], nxt, alpha)
        return torch.logsumexp(alpha + end, dim=1)

    def nll(self, emissions, tags, mask=None, reduction: str = "mean") -> torch.Tensor:
        """-log P(tags | x) = log Z - s(tags)."""
        out = self.log_partition(emissions, mask) - self.score(emissions, tags, mask)
        return out.mean() if reduction == "mean" else out

    @torch.no_grad()
    def viterbi(self, emissions, mask=None) -> list[list[int]]:
        """The highest-scoring tag sequence of each item (as many tags as its mask has ones)."""
        mask = self._check(emissions, mask)
        A, start, end = self._A()
        delta = start + emissions[:, 0]  # (B, K) best score of a path ending in k
        back = []
        for t in range(1, emissions.size(1)):
            cand = delta[:, :, None] + A[None]  # (B, K_prev, K)
            best, arg = cand.max(dim=1)
            nxt = best + emissions[:, t]
            keep = mask[:, t, None]
            delta = torch.where(keep, nxt, delta)
            back.append(torch.where(keep, arg, torch.arange(A.size(0), device=A.device).expand_as(arg)))
        delta = delta + end
        paths = []
        for b in range(emissions.size(0)):
            n = int(mask[b].sum())
            k = int(delta[b].argmax())
            path = [k]
            for t in range(n - 1, 0, -1):
                k = int(back[t - 1][b, k])
                path.append(k)
            paths.append(path[::-1])
        return paths
