"""Semantic search, what a bi-encoder is for: every document encoded once, each query compared by cosine.

The task is built from NLI data (:func:`nli_search_task`): each premise is a query, every hypothesis of the split
is a document, and the right document is the hypothesis its writer wrote as *entailed* by that premise. A query
is scored by the rank of its right document (:func:`retrieval_scores`: recall@k and the mean reciprocal rank).

    task = nli_search_task(load_nli("test"))
    scores = dense_scores(encoder, tokenizer, task.queries, task.docs)       # (Q, D) cosines
    print(retrieval_scores(scores, task.gold, "MiniLM"))
    print(retrieval_scores(tfidf_scores(task.queries, task.docs), task.gold, "TF-IDF"))
    reranked = rerank_top_k(scores, 5, task.queries, task.docs, pair_score)  # a cross-encoder on the top 5
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from .sbert import cosine_matrix, encode_sentences

RECALL_AT = (1, 5, 10)


@dataclass
class SearchTask:
    queries: list[str]
    docs: list[str]
    gold: list[int]  # per query, the index in ``docs`` of its right document


def nli_search_task(examples, label: str = "entailment") -> SearchTask:
    """Premises as queries (those with a hypothesis of ``label``), every distinct hypothesis as a document, in
    the order first seen; the right document of a premise is its hypothesis of ``label``."""
    docs, index, right = [], {}, {}
    for e in examples:
        if e.hypothesis not in index:
            index[e.hypothesis] = len(docs)
            docs.append(e.hypothesis)
        if e.label == label:
            right.setdefault(e.premise, e.hypothesis)
    if not right:
        raise ValueError(f"no premise has a hypothesis labelled {label!r}: there is nothing to search for")
    queries = list(right)
    return SearchTask(queries, docs, [index[right[q]] for q in queries])


@dataclass
class RetrievalScores:
    name: str
    recall: dict[int, float]  # k -> share of queries whose right document is among the k best
    mrr: float                # mean of 1 / rank
    ranks: torch.Tensor       # (Q,) rank of each query's right document, 1 = first

    def __str__(self) -> str:
        recall = "  ".join(f"recall@{k} {r:5.1%}" for k, r in self.recall.items())
        return f"{self.name:28s} {recall}  MRR {self.mrr:.3f}"


def retrieval_scores(scores: torch.Tensor, gold: Sequence[int], name: str = "") -> RetrievalScores:
    """Rank of the right document among all documents for each query, from a (Q, D) score matrix (higher =
    better). A document scored exactly as high as the right one counts against it (ties are not won)."""
    scores = torch.as_tensor(scores, dtype=torch.float64)
    gold = torch.as_tensor(list(gold), dtype=torch.long)
    if scores.dim() != 2 or len(gold) != scores.size(0):
        raise ValueError(f"scores must be (queries, documents) with one row per gold index: {tuple(scores.shape)} "
                         f"and {len(gold)} gold indices")
    right = scores[torch.arange(len(gold)), gold]
    ranks = (scores >= right[:, None]).sum(1)  # the right document itself, and every document at least as high
    recall = {k: float((ranks <= k).double().mean()) for k in RECALL_AT}
    return RetrievalScores(name, recall, float((1 / ranks.double()).mean()), ranks)


def dense_scores(bert, tokenizer, queries: list[str], docs: list[str], pooling: str | tuple[str, ...] = "mean",
                 cache: bool = False):
    """(Q, D) cosines of the encoder's pooled vectors: the documents encoded once, as a bi-encoder does. With
    several poolings (``("mean", "cls")``), ``{pooling: (Q, D) cosines}`` from one pass over the sentences.
    ``cache``: the vectors kept on disk (:func:`.sbert.encode_sentences`)."""
    q, d = (encode_sentences(bert, tokenizer, texts, pooling, cache=cache) for texts in (queries, docs))
    if isinstance(pooling, str):
        return cosine_matrix(q, d).cpu()
    return {p: cosine_matrix(q[p], d[p]).cpu() for p in q}


def tfidf_scores(queries: list[str], docs: list[str]) -> torch.Tensor:
    """(Q, D) cosines of TF-IDF word vectors (scikit-learn, fitted on the queries and the documents): a search
    that matches words, and knows nothing of their meaning."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer().fit(list(queries) + list(docs))
    return torch.tensor((vectorizer.transform(queries) @ vectorizer.transform(docs).T).toarray())


def rerank_top_k(scores: torch.Tensor, k: int, queries: list[str], docs: list[str],
                 pair_score: Callable[[list[str], list[str]], torch.Tensor]) -> torch.Tensor:
    """Re-rank each query's k best documents by ``pair_score(queries, docs)`` (e.g. a cross-encoder's probability
    of entailment, one pair per element): a new (Q, D) score matrix in which those k come first, in the order of
    their pair scores, and every other document keeps its place behind them."""
    if not 1 <= k <= scores.size(1):
        raise ValueError(f"k must be between 1 and the {scores.size(1)} documents, not {k}")
    top = scores.topk(k, dim=1).indices  # (Q, k)
    pairs = [(q, docs[j]) for q, row in zip(queries, top.tolist()) for j in row]
    second = torch.as_tensor(pair_score([a for a, _ in pairs], [b for _, b in pairs]), dtype=torch.float64)
    if second.shape != (len(pairs),):
        raise ValueError(f"pair_score must give one number per pair ({len(pairs)}), not shape {tuple(second.shape)}")
    out = scores.to(torch.float64) - scores.max() - 1  # every document below ...
    rank = second.reshape(top.shape).argsort(dim=1, descending=True).argsort(dim=1)  # 0 = the best pair score
    out.scatter_(1, top, (k - rank).to(torch.float64))  # ... the k re-ranked ones, k down to 1
    return out
