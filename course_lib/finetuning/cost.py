"""What scoring all pairs costs: cross-encoder vs SentenceBERT bi-encoder (§11.4.2; L004).

To find the most similar pair among n sentences a cross-encoder must read every pair, ``[CLS] A [SEP] B [SEP]``:
n(n−1)/2 encoder passes. A bi-encoder encodes each sentence once (n passes) and compares the vectors with one
n × n matrix of cosines. Both are measured here on the same machine, the bi-encoder on all n sentences and the
cross-encoder on a random sample of pairs (all n(n−1)/2 would take hours on a CPU); the totals for other n are
extrapolated from the measured rates: passes scale as n and n², the cosine matrix as n².
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass

from .classify import classify_texts
from .sbert import cosine_matrix, encode_sentences


@dataclass
class AllPairsCost:
    """Measured times; ``seconds(kind, n)`` extrapolates to n sentences."""

    n_sentences: int            # sentences the bi-encoder encoded
    bi_encode_seconds: float    # encoding them (n passes)
    bi_matrix_seconds: float    # the n × n cosine matrix
    cross_pairs: int            # pairs the cross-encoder scored
    cross_seconds: float        # scoring them
    device: str

    @staticmethod
    def pairs(n: int) -> int:
        return n * (n - 1) // 2

    def passes(self, kind: str, n: int) -> int:
        """Encoder passes needed to score all pairs among n sentences."""
        return n if kind == "bi-encoder" else self.pairs(n)

    def seconds(self, kind: str, n: int) -> float:
        """Time to score all pairs among n sentences, from the measured rates."""
        if kind == "bi-encoder":
            return self.bi_encode_seconds * n / self.n_sentences + self.bi_matrix_seconds * (n / self.n_sentences) ** 2
        if kind == "cross-encoder":
            return self.cross_seconds / self.cross_pairs * self.pairs(n)
        raise ValueError(f"kind must be 'bi-encoder' or 'cross-encoder', not {kind!r}")

    def rows(self, sizes=(1_000, 10_000)) -> list[dict]:
        """One row per (n, kind): passes, seconds, and whether the time was measured or extrapolated."""
        out = []
        for n in sizes:
            for kind in ("cross-encoder", "bi-encoder"):
                measured = kind == "bi-encoder" and n == self.n_sentences
                out.append({"n": n, "kind": kind, "passes": self.passes(kind, n), "seconds": self.seconds(kind, n),
                            "how": "measured" if measured else "extrapolated from the measured rate"})
        return out


def measure_all_pairs_cost(bi_bert, cross_model, tokenizer, sentences: list[str], cross_pairs: int = 256,
                           batch_size: int = 64, seed: int = 0, pooling: str = "mean") -> AllPairsCost:
    """Time the bi-encoder on all ``sentences`` and the cross-encoder on ``cross_pairs`` random pairs of them."""
    if len(sentences) < 2:
        raise ValueError("need at least two sentences to form a pair")
    rng = random.Random(seed)
    pairs = [tuple(rng.sample(range(len(sentences)), 2)) for _ in range(cross_pairs)]
    encode_sentences(bi_bert, tokenizer, sentences[:batch_size], pooling, batch_size)  # warm-up
    t0 = time.perf_counter()
    vecs = encode_sentences(bi_bert, tokenizer, sentences, pooling, batch_size)
    t1 = time.perf_counter()
    sims = cosine_matrix(vecs)  # (n, n)
    t2 = time.perf_counter()
    assert sims.shape == (len(sentences), len(sentences))
    a, b = [sentences[i] for i, _ in pairs], [sentences[j] for _, j in pairs]
    classify_texts(cross_model, tokenizer, a[:8], b[:8], batch_size)  # warm-up
    t3 = time.perf_counter()
    classify_texts(cross_model, tokenizer, a, b, batch_size)
    t4 = time.perf_counter()
    return AllPairsCost(len(sentences), t1 - t0, t2 - t1, cross_pairs, t4 - t3, str(next(bi_bert.parameters()).device))

