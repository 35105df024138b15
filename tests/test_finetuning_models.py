"""Sentence/pair classification heads (eq. 11.13), freezing strategies, SentenceBERT, cached frozen states, cost."""
from __future__ import annotations

import pytest
import torch

from course_lib.finetuning.classify import FromLayerWithMask, collate_states, state_examples, train_classifier
from course_lib.finetuning.cost import AllPairsCost, measure_all_pairs_cost
from course_lib.finetuning.data import (NLI_LABELS, SENTIMENT_LABELS, BiEncoderCollator, PairExample, SentenceCollator,
                                        SentenceExample)
from course_lib.finetuning.freezing import count_parameters, freeze, parse_strategy
from course_lib.finetuning.runs import TrainConfig
from course_lib.finetuning.sbert import (SiameseClassifier, cosine_matrix, encode_sentences, pair_cosines,
                                         sbert_features)
from course_lib.model.bert import BertConfig, BertModel
from course_lib.model.classification import BertForSequenceClassification, pool

TINY = BertConfig(hidden_size=32, num_hidden_layers=3, num_attention_heads=4, intermediate_size=64,
                  max_position_embeddings=128, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_LIB_CACHE", str(tmp_path / "cache"))


def tiny_classifier(pooling="cls", labels=SENTIMENT_LABELS, seed=0):
    torch.manual_seed(seed)
    return BertForSequenceClassification(BertModel(TINY), labels=labels, pooling=pooling)


SENTENCES = [SentenceExample("a gorgeous, witty film", "positive"), SentenceExample("dull and far too long", "negative"),
             SentenceExample("i loved every minute of it", "positive"), SentenceExample("a mess", "negative")]


# ----------------------------------------------------------------------------- eq. 11.13

def test_cls_head_is_softmax_of_w_c_times_z_cls(embedded):
    _, tok = embedded
    model = tiny_classifier().eval()
    enc = tok(["a gorgeous film", "dull"])
    out = model(**enc)
    z = model.bert(enc.input_ids, enc.attention_mask).last_hidden_state[:, 0]  # z_CLS (B, d)
    torch.testing.assert_close(out.logits, z @ model.classifier.weight.T + model.classifier.bias)
    torch.testing.assert_close(out.pooled, z)
    assert out.logits.shape == (2, 2) and out.loss is None


def test_mean_pooling_ignores_padding():
    z = torch.arange(24.0).reshape(2, 3, 4)
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    torch.testing.assert_close(pool(z, mask, "mean"), torch.stack([z[0, :2].mean(0), z[1].mean(0)]))
    torch.testing.assert_close(pool(z, mask, "cls"), z[:, 0])
    with pytest.raises(ValueError, match="unknown pooling 'max'"):
        pool(z, mask, "max")


def test_padding_does_not_change_a_sentence_logits(embedded):
    _, tok = embedded
    for pooling in ("cls", "mean"):
        model = tiny_classifier(pooling).eval()
        alone = model(**tok("a gorgeous film")).logits
        padded = model(**tok(["a gorgeous film", "one two three four five six seven eight"])).logits[:1]
        torch.testing.assert_close(alone, padded, atol=1e-5, rtol=0)


def test_loss_is_cross_entropy_of_the_labels(embedded):
    _, tok = embedded
    model = tiny_classifier().eval()
    batch = SentenceCollator(tok, SENTIMENT_LABELS)(SENTENCES)
    out = model(**batch)
    torch.testing.assert_close(out.loss, torch.nn.functional.cross_entropy(out.logits, batch["labels"]))


def test_pooler_head_matches_transformers_bert_for_sequence_classification(embedded):
    transformers = pytest.importorskip("transformers")
    _, tok = embedded
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=64, num_labels=3)
    ref = transformers.BertForSequenceClassification(cfg).eval()
    ours = BertForSequenceClassification(BertModel(BertConfig.from_dict(cfg.to_dict())), labels=NLI_LABELS,
                                         pooling="pooler").eval()
    ours.load_state_dict(ref.state_dict(), strict=True)  # the same names: bert.*, classifier.*
    enc = tok(["I'm confused.", "Tourist Information offices can be very helpful."],
              ["Not all of it is very clear to me.", "Tourist Information offices are never of any help."])
    labels = torch.tensor([0, 2])
    want = ref(input_ids=enc.input_ids, attention_mask=enc.attention_mask, token_type_ids=enc.token_type_ids,
               labels=labels)
    got = ours(**enc, labels=labels)
    torch.testing.assert_close(got.logits, want.logits, atol=1e-5, rtol=0)
    torch.testing.assert_close(got.loss, want.loss, atol=1e-5, rtol=0)


def test_bad_heads_are_refused_in_plain_words():
    with pytest.raises(ValueError, match="at least 2 classes"):
        BertForSequenceClassification(BertModel(TINY), labels=["only"])
    with pytest.raises(ValueError, match="unknown pooling"):
        BertForSequenceClassification(BertModel(TINY), 2, pooling="max")
    with pytest.raises(ValueError, match="unknown label 'neutral'"):
        tiny_classifier().label_id("neutral")


# ----------------------------------------------------------------------------- freezing

def test_strategies_train_what_they_say():
    L = TINY.num_hidden_layers
    model = tiny_classifier()
    d, head = TINY.hidden_size, TINY.hidden_size * 2 + 2
    block = sum(p.numel() for p in model.bert.encoder.layer[0].parameters())
    pooler = d * d + d
    freeze(model, "head")
    assert count_parameters(model)["trainable"] == head
    freeze(model, "last-2")
    assert count_parameters(model)["trainable"] == head + 2 * block
    freeze(model, 1)
    assert count_parameters(model)["trainable"] == head + block
    freeze(model, "full")
    counts = count_parameters(model)
    assert counts["trainable"] == counts["total"] - pooler  # the pooler is unused by a [CLS] head
    assert parse_strategy(L, L).name == f"last-{L}"


@pytest.mark.parametrize("strategy, message", [("last-9", "has 3"), ("top", "unknown strategy"), (-1, "last -1")])
def test_bad_strategies_are_refused(strategy, message):
    with pytest.raises(ValueError, match=message):
        freeze(tiny_classifier(), strategy)


# ----------------------------------------------------------------------------- cached frozen states

@pytest.mark.parametrize("pooling", ["cls", "mean"])
@pytest.mark.parametrize("strategy", ["head", "last-1"])
def test_top_layers_on_cached_states_give_the_model_own_outputs(embedded, pooling, strategy):
    _, tok = embedded
    model = tiny_classifier(pooling).eval()
    s = freeze(model, strategy)
    collate = SentenceCollator(tok, SENTIMENT_LABELS)
    start = s.first_trained_layer(TINY.num_hidden_layers)
    states = state_examples(model, SENTENCES, collate, start)
    wrapped = FromLayerWithMask(model, start).eval()
    got = wrapped(**collate_states(states))
    want = model(**collate(SENTENCES))
    torch.testing.assert_close(got.logits, want.logits, atol=1e-5, rtol=0)
    torch.testing.assert_close(got.loss, want.loss, atol=1e-5, rtol=0)


@pytest.mark.slow  # training: `make test`, not the fast loop
def test_train_classifier_trains_the_model_itself_and_is_cached(embedded):
    _, tok = embedded
    collate = SentenceCollator(tok, SENTIMENT_LABELS)
    data = SENTENCES * 4
    cfg = TrainConfig(lr=1e-2, epochs=3, batch_size=4, warmup_ratio=0.0)
    for strategy in ("head", "last-1", "full"):
        model = tiny_classifier()
        before = [p.clone() for p in model.parameters()]
        run = train_classifier(model, data, SENTENCES, collate, strategy, cfg, progress=False)
        assert run.finished and run.info["strategy"] == strategy
        assert run.epochs[-1].train_loss < run.epochs[0].train_loss
        changed = {n for (n, p), b in zip(model.named_parameters(), before) if not torch.equal(p.detach().cpu(), b)}
        assert any(n.startswith("classifier.") for n in changed)
        assert any(n.startswith("bert.embeddings.") for n in changed) == (strategy == "full")
        assert any(n.startswith("bert.encoder.layer.2.") for n in changed) == (strategy != "head")
        assert ("frozen_pass_seconds" in run.info) == (strategy != "full")
        again_model = tiny_classifier()
        again = train_classifier(again_model, data, SENTENCES, collate, strategy, cfg, progress=False)
        assert again.cached and again.final() == run.final()
        for a, b in zip(model.parameters(), again_model.parameters()):
            assert torch.equal(a.detach().cpu(), b.detach().cpu())  # training may have moved them to cuda
        # and the trained model itself finds its run
        assert train_classifier(model, data, SENTENCES, collate, strategy, cfg, progress=False).cached


# ----------------------------------------------------------------------------- SentenceBERT

PAIRS = [PairExample("A man is sleeping.", "Nobody is sleeping.", "contradiction"),
         PairExample("A man is sleeping.", "A person rests.", "entailment"),
         PairExample("Kids play football.", "The kids are on a team.", "neutral")]


def test_sbert_features_are_u_v_and_absolute_difference():
    u, v = torch.tensor([[1.0, -2.0]]), torch.tensor([[3.0, 1.0]])
    assert sbert_features(u, v).tolist() == [[1.0, -2.0, 3.0, 1.0, 2.0, 3.0]]
    with pytest.raises(ValueError, match="same shape"):
        sbert_features(u, v[:, :1])


def test_siamese_classifier_encodes_each_sentence_alone(embedded):
    _, tok = embedded
    torch.manual_seed(0)
    model = SiameseClassifier(BertModel(TINY), NLI_LABELS).eval()
    batch = BiEncoderCollator(tok, NLI_LABELS)(PAIRS)
    out = model(**batch)
    assert out.logits.shape == (3, 3) and out.u.shape == (3, TINY.hidden_size)
    u0 = encode_sentences(model.bert, tok, ["A man is sleeping."])
    torch.testing.assert_close(out.u[0], u0[0], atol=1e-5, rtol=0)
    torch.testing.assert_close(out.logits, sbert_features(out.u, out.v) @ model.classifier.weight.T
                               + model.classifier.bias)


@pytest.mark.slow  # training: `make test`, not the fast loop
def test_siamese_training_on_cached_states_and_in_full(embedded):
    _, tok = embedded
    collate = BiEncoderCollator(tok, NLI_LABELS)
    cfg = TrainConfig(lr=1e-2, epochs=3, batch_size=3, warmup_ratio=0.0)
    for strategy in ("last-1", "full"):
        torch.manual_seed(0)
        model = SiameseClassifier(BertModel(TINY), NLI_LABELS)
        run = train_classifier(model, PAIRS * 3, PAIRS, collate, strategy, cfg, progress=False)
        assert run.finished and run.epochs[-1].train_loss < run.epochs[0].train_loss


def test_encode_sentences_keeps_the_order_and_cosines_are_right(embedded):
    model, tok = embedded
    sents = ["A much longer sentence about the bank of the river.", "Short.", "A dog."]
    vecs = encode_sentences(model, tok, sents)
    one = encode_sentences(model, tok, [sents[1]])
    torch.testing.assert_close(vecs[1], one[0], atol=1e-5, rtol=0)
    sims = cosine_matrix(vecs)
    torch.testing.assert_close(sims.diagonal(), torch.ones(3), atol=1e-5, rtol=0)
    cos = pair_cosines(model, tok, PAIRS[:1])
    torch.testing.assert_close(cos[0], torch.nn.functional.cosine_similarity(
        encode_sentences(model, tok, [PAIRS[0].premise]), encode_sentences(model, tok, [PAIRS[0].hypothesis]))[0],
        atol=1e-5, rtol=0)
    both = encode_sentences(model, tok, sents, pooling=("mean", "cls"), normalize=True)  # one pass, two poolings
    assert list(both) == ["mean", "cls"]
    for pooling, v in both.items():
        assert torch.equal(v, encode_sentences(model, tok, sents, pooling=pooling, normalize=True)), pooling
    assert not torch.allclose(both["mean"], both["cls"])


# ----------------------------------------------------------------------------- cost

def test_all_pairs_cost_counts_passes_and_extrapolates():
    cost = AllPairsCost(n_sentences=100, bi_encode_seconds=1.0, bi_matrix_seconds=0.01, cross_pairs=50,
                        cross_seconds=2.0, device="cpu")
    assert cost.passes("cross-encoder", 1000) == 499_500 and cost.passes("bi-encoder", 1000) == 1000
    assert cost.seconds("cross-encoder", 1000) == pytest.approx(2.0 / 50 * 499_500)
    assert cost.seconds("bi-encoder", 1000) == pytest.approx(10.0 + 0.01 * 100)
    rows = cost.rows((100, 1000))
    assert [r["how"] for r in rows][:2] == ["extrapolated from the measured rate", "measured"]
    with pytest.raises(ValueError, match="kind must be"):
        cost.seconds("poly-encoder", 10)


def test_measure_all_pairs_cost_runs_both_models(embedded):
    _, tok = embedded
    torch.manual_seed(0)
    cross = BertForSequenceClassification(BertModel(TINY), labels=NLI_LABELS)
    cost = measure_all_pairs_cost(BertModel(TINY), cross, tok, [f"sentence number {i}" for i in range(20)],
                                  cross_pairs=16)
    assert cost.n_sentences == 20 and cost.cross_pairs == 16
    assert cost.bi_encode_seconds > 0 and cost.cross_seconds > 0


@pytest.mark.gpu
def test_classifier_and_bi_encoder_train_on_cuda(embedded):
    _, tok = embedded
    cfg = TrainConfig(lr=1e-2, epochs=2, batch_size=4, warmup_ratio=0.0)
    model = tiny_classifier()
    run = train_classifier(model, SENTENCES * 4, SENTENCES, SentenceCollator(tok, SENTIMENT_LABELS), "last-1", cfg,
                           progress=False, device="cuda")
    assert run.device.startswith("cuda") and model.classifier.weight.is_cuda and run.finished
    torch.manual_seed(0)
    bi = SiameseClassifier(BertModel(TINY), NLI_LABELS)
    run = train_classifier(bi, PAIRS * 2, PAIRS, BiEncoderCollator(tok, NLI_LABELS), "full", cfg, progress=False,
                           device="cuda")
    assert run.device.startswith("cuda") and run.finished
    vecs = encode_sentences(bi.bert, tok, ["A man sleeps.", "Nobody sleeps."])
    assert vecs.shape == (2, TINY.hidden_size)


def test_classify_texts_refuses_an_empty_list_and_unmatched_pairs_in_plain_words(embedded):
    """classify_texts(model, tok, []) once failed inside torch.cat ("expected a non-empty list of Tensors")."""
    from course_lib.finetuning.classify import classify_texts

    _, tok = embedded
    model = tiny_classifier()
    with pytest.raises(ValueError, match="no texts to classify"):
        classify_texts(model, tok, [])
    with pytest.raises(ValueError, match="2 texts but 1 pairs"):
        classify_texts(model, tok, ["a", "b"], ["c"])
    assert classify_texts(model, tok, "a gorgeous film").shape == (1, 2)
