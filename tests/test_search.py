"""course_lib.finetuning.search: the NLI search task, ranks and recall, TF-IDF, re-ranking the top k."""
import pytest
import torch

from course_lib.finetuning.data import PairExample, load_nli
from course_lib.finetuning.search import (nli_search_task, rerank_top_k, retrieval_scores, tfidf_scores)


def pair(premise, hypothesis, label):
    return PairExample(premise, hypothesis, label)


def test_premises_are_queries_and_their_entailed_hypothesis_is_the_right_document():
    examples = [pair("A dog runs.", "An animal moves.", "entailment"), pair("A dog runs.", "A cat sleeps.", "contradiction"),
                pair("Two men cook.", "People make food.", "entailment"), pair("A girl sings.", "She is loud.", "neutral")]
    task = nli_search_task(examples)
    assert task.queries == ["A dog runs.", "Two men cook."]  # the girl has no entailed hypothesis
    assert task.docs == ["An animal moves.", "A cat sleeps.", "People make food.", "She is loud."]
    assert [task.docs[g] for g in task.gold] == ["An animal moves.", "People make food."]
    with pytest.raises(ValueError, match="no premise has a hypothesis labelled 'entailment'"):
        nli_search_task(examples[3:])


def test_the_shipped_test_split_gives_300_queries_among_897_hypotheses():
    task = nli_search_task(load_nli("test"))
    assert (len(task.queries), len(task.docs)) == (300, 897)
    assert len(set(task.gold)) == 299  # two premises have the same entailed hypothesis (hence 897, not 900)


def test_ranks_recall_and_mrr_by_hand_and_ties_are_not_won():
    scores = torch.tensor([[0.9, 0.1, 0.5], [0.2, 0.2, 0.1], [0.3, 0.8, 0.7]])
    r = retrieval_scores(scores, [0, 1, 2], "toy")
    assert r.ranks.tolist() == [1, 2, 2]  # query 1's right document ties with another: rank 2
    assert r.recall[1] == pytest.approx(1 / 3) and r.recall[5] == 1.0
    assert r.mrr == pytest.approx((1 + 1 / 2 + 1 / 2) / 3)
    assert str(r).startswith("toy") and "recall@1 33.3%" in str(r)
    with pytest.raises(ValueError, match="one row per gold index"):
        retrieval_scores(scores, [0, 1])


def test_tfidf_prefers_the_document_that_shares_the_rarer_words():
    s = tfidf_scores(["a dog chases a ball"], ["a cat sleeps", "the dog chases the ball", "a a a"])
    assert s.shape == (1, 3) and int(s.argmax()) == 1
    assert torch.all((s >= 0) & (s <= 1 + 1e-9))


def test_reranking_puts_the_top_k_first_in_the_order_of_the_pair_scores():
    scores = torch.tensor([[0.9, 0.8, 0.7, 0.1], [0.1, 0.2, 0.3, 0.4]])
    queries, docs = ["q0", "q1"], ["d0", "d1", "d2", "d3"]
    second = {("q0", "d0"): 0.1, ("q0", "d1"): 0.9, ("q1", "d3"): 0.2, ("q1", "d2"): 0.6}
    asked = []

    def pair_score(a, b):
        asked.extend(zip(a, b))
        return torch.tensor([second[p] for p in zip(a, b)])

    out = rerank_top_k(scores, 2, queries, docs, pair_score)
    assert sorted(asked) == sorted(second)  # only the top 2 of each query are read by the second model
    assert out[0].argsort(descending=True).tolist() == [1, 0, 2, 3]  # d1 then d0, then the rest in their order
    assert out[1].argsort(descending=True).tolist() == [2, 3, 1, 0]
    assert retrieval_scores(out, [1, 3]).ranks.tolist() == [1, 2]
    with pytest.raises(ValueError, match="k must be between 1 and the 4 documents"):
        rerank_top_k(scores, 5, queries, docs, pair_score)
    with pytest.raises(ValueError, match="one number per pair"):
        rerank_top_k(scores, 2, queries, docs, lambda a, b: torch.zeros(len(a), 3))


def test_dense_scores_are_the_cosines_of_the_pooled_vectors_and_several_poolings_share_one_pass(embedded):
    from course_lib.finetuning.sbert import cosine_matrix, encode_sentences
    from course_lib.finetuning.search import dense_scores

    model, tok = embedded
    queries, docs = ["A dog runs in the park.", "Nobody is cooking."], ["An animal is outside.", "A man cooks.", "Rain."]
    one = dense_scores(model, tok, queries, docs, pooling="cls")
    assert one.shape == (2, 3)
    torch.testing.assert_close(one, cosine_matrix(encode_sentences(model, tok, queries, "cls"),
                                                  encode_sentences(model, tok, docs, "cls")), atol=1e-6, rtol=0)
    both = dense_scores(model, tok, queries, docs, pooling=("mean", "cls"))
    assert list(both) == ["mean", "cls"]
    assert torch.equal(both["cls"], one) and torch.equal(both["mean"], dense_scores(model, tok, queries, docs))


def test_cached_vectors_and_class_probabilities_are_the_computed_ones_read_back(embedded, tmp_path, monkeypatch):
    """cache=True (notebook 11.4a's encodings and re-ranking): float32 on disk, so a warm run gives exactly the numbers
    a cold one computed; another model's weights or other texts are another file."""
    import copy

    from course_lib.finetuning import sbert
    from course_lib.finetuning.classify import classify_texts
    from course_lib.finetuning.search import dense_scores
    from course_lib.model.classification import BertForSequenceClassification

    monkeypatch.setenv("COURSE_LIB_CACHE", str(tmp_path))
    model, tok = embedded
    queries, docs = ["A dog runs in the park.", "Nobody is cooking."], ["An animal is outside.", "A man cooks.", "Rain."]
    cold = dense_scores(model, tok, queries, docs, pooling=("mean", "cls"), cache=True)
    files = sorted((tmp_path / "states").glob("sentence-vectors-f32-*.pt"))
    assert len(files) == 2  # the queries, the documents
    assert all(torch.equal(cold[p], v) for p, v in dense_scores(model, tok, queries, docs, ("mean", "cls")).items())
    calls = []
    real = sbert._encode
    monkeypatch.setattr(sbert, "_encode", lambda *a, **k: calls.append(1) or real(*a, **k))
    warm = dense_scores(model, tok, queries, docs, pooling=("mean", "cls"), cache=True)
    assert calls == [] and all(torch.equal(cold[p], warm[p]) for p in cold)
    other = copy.deepcopy(model)
    with torch.no_grad():
        other.embeddings.word_embeddings.weight.mul_(1.01)
    dense_scores(other, tok, queries, docs, cache=True)
    assert calls == [1, 1] and len(list((tmp_path / "states").glob("sentence-vectors-f32-*.pt"))) == 4

    torch.manual_seed(0)
    clf = BertForSequenceClassification(copy.deepcopy(model), labels=["no", "yes"], pooling="mean")
    probs = classify_texts(clf, tok, queries, docs[:2], cache=True)
    assert torch.equal(probs, classify_texts(clf, tok, queries, docs[:2]))
    assert torch.equal(classify_texts(clf, tok, queries, docs[:2], cache=True), probs)
    with torch.no_grad():
        clf.classifier.bias += 1.0  # the head is part of the key, not only the encoder
    assert not torch.equal(classify_texts(clf, tok, queries, docs[:2], cache=True), probs)
    assert len(list((tmp_path / "states").glob("class-probs-f32-*.pt"))) == 2
