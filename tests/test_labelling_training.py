"""Training only the top layers on cached frozen states (course_lib.finetuning.frozen) gives the model's own
outputs; the NER tagger and QA reader train with the shared loop (loss falls, cache hit); the baselines."""
from __future__ import annotations

import pytest
import torch

from course_lib.finetuning.frozen import FromLayer, freeze_below, frozen_states, num_layers, pad_states
from course_lib.finetuning.labelling import LabelSet, TaggedSentence, encode_words, load_wikigold
from course_lib.finetuning.ner import NerTagger, dictionary_baseline, entity_dictionary, word_majority_baseline
from course_lib.finetuning.qa import load_squad, make_features
from course_lib.finetuning.qa_reader import QAReader
from course_lib.finetuning.training import TrainConfig
from course_lib.model.bert import BertConfig, BertModel
from course_lib.model.qa import BertForQuestionAnswering
from course_lib.model.tagging import BertForTokenClassification

TINY = BertConfig(hidden_size=64, num_hidden_layers=3, num_attention_heads=4, intermediate_size=128)


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_LIB_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def tokenizer():
    import course_lib

    return course_lib.load_pretrained()[1]


@pytest.mark.parametrize("start", [0, 1, 3])
def test_from_layer_on_frozen_states_equals_the_full_model(tokenizer, start):
    torch.manual_seed(0)
    tagger = BertForTokenClassification(BertModel(TINY), 9).eval()
    sents = [["Mt.", "Sanitas", "is", "in", "Sunshine", "Canyon", "."], ["Jane", "Villanueva", "flew"]]
    enc = encode_words(tokenizer, sents)
    n = enc.attention_mask.sum(1).tolist()
    states = frozen_states(tagger.bert, [enc.input_ids[b, :k].tolist() for b, k in enumerate(n)], start=start)
    assert [s.shape for s in states] == [(k, 64) for k in n]
    hidden, mask = pad_states(states)
    assert torch.equal(mask, enc.attention_mask)
    with torch.no_grad():
        full = tagger(enc.input_ids, enc.attention_mask).logits
        part = FromLayer(tagger, start)(hidden, mask).logits
    keep = mask.bool()
    torch.testing.assert_close(part[keep], full[keep], atol=1e-5, rtol=0)
    # the cache returns the very same states
    again = frozen_states(tagger.bert, [enc.input_ids[b, :k].tolist() for b, k in enumerate(n)], start=start)
    assert all(torch.equal(a, b) for a, b in zip(states, again))


def test_from_layer_qa_equals_the_full_model(tokenizer):
    torch.manual_seed(1)
    qa = BertForQuestionAnswering(BertModel(TINY)).eval()
    feats = make_features(tokenizer, load_squad("test")[:5])
    n = feats.attention_mask.sum(1).tolist()
    states = frozen_states(qa.bert, [feats.input_ids[i, :k].tolist() for i, k in enumerate(n)],
                           [feats.token_type_ids[i, :k].tolist() for i, k in enumerate(n)], start=2)
    hidden, mask = pad_states(states)
    with torch.no_grad():
        full = qa(**feats.inputs())
        part = FromLayer(qa, 2)(hidden, mask)
    keep = mask.bool()
    torch.testing.assert_close(part.start_logits[keep], full.start_logits[keep], atol=1e-5, rtol=0)
    torch.testing.assert_close(part.end_logits[keep], full.end_logits[keep], atol=1e-5, rtol=0)


def test_freeze_below_leaves_only_the_top_layers_trainable():
    enc = BertModel(TINY)
    freeze_below(enc, 1)
    trainable = {n.split(".")[2] for n, p in enc.named_parameters() if p.requires_grad}
    assert trainable == {"2"}
    freeze_below(enc, 0)
    assert not any(p.requires_grad for p in enc.parameters())
    with pytest.raises(ValueError, match="train_layers must be between 0 and 3"):
        freeze_below(enc, 4)


def tiny_tagger(tokenizer, policy="first"):
    torch.manual_seed(0)
    return NerTagger(BertForTokenClassification(BertModel(TINY), len(LabelSet())), tokenizer, LabelSet(), policy,
                     train_layers=1)


@pytest.mark.slow  # training: `make test`, not the fast loop
@pytest.mark.parametrize("policy", ["first", "every"])
def test_tagger_learns_and_is_cached(tokenizer, policy):
    train = load_wikigold("train")[:48]
    tagger = tiny_tagger(tokenizer, policy)
    cfg = TrainConfig(lr=1e-3, epochs=4, batch_size=8, lr_overrides=(("model.classifier.", 1e-2),))
    run = tagger.fit(train, cfg, eval_sentences=train[:16], progress=False)
    assert run.finished and not run.cached
    assert run.epochs[-1].train_loss < run.epochs[0].train_loss
    assert set(run.epochs[-1].eval) == {"f1", "precision", "recall"}
    pred = tagger.predict(train[:16])
    assert [len(p) for p in pred] == [len(s) for s in train[:16]]
    again = tiny_tagger(tokenizer, policy).fit(train, cfg, eval_sentences=train[:16], progress=False)
    assert again.cached and again.epochs[-1].eval == run.epochs[-1].eval


def test_a_finished_run_is_found_without_computing_the_frozen_states(tokenizer, monkeypatch):
    """fit() keys a run by placeholders of the frozen states (same shape, type and source, no numbers): a run found
    finished (or shipped) loads without the frozen pass over the training and held-out sentences (11.4b's probes:
    ~30 s in an empty cache), and a run that has to train computes them, keyed as before."""
    from course_lib.finetuning import ner
    from course_lib.finetuning.runs import fingerprint

    train = load_wikigold("train")[:24]
    tagger = tiny_tagger(tokenizer)
    stand_ins, real = tagger.examples(train, placeholders=True), tagger.examples(train)
    assert all(e["hidden"].is_meta and e["hidden"].shape == r["hidden"].shape for e, r in zip(stand_ins, real))
    assert fingerprint(stand_ins) == fingerprint(real)
    reader = QAReader(BertForQuestionAnswering(BertModel(TINY)), tokenizer, train_layers=1, max_length=128, stride=32)
    feats = reader.features(load_squad("train")[:6])
    assert fingerprint(reader.examples(feats, placeholders=True)) == fingerprint(reader.examples(feats))

    computed = []  # the number of sentences of each frozen pass (not placeholders)
    frozen_states = ner.frozen_states

    def counted(encoder, ids, *args, placeholders=False, **kw):
        if not placeholders:
            computed.append(len(ids))
        return frozen_states(encoder, ids, *args, placeholders=placeholders, **kw)

    monkeypatch.setattr(ner, "frozen_states", counted)
    cfg = TrainConfig(lr=1e-3, epochs=1, batch_size=8)
    run = tiny_tagger(tokenizer).fit(train, cfg, eval_sentences=train[:8], progress=False)
    assert run.finished and not run.cached and computed == [24, 8]  # trained: the training states, then held-out
    computed.clear()
    again = tiny_tagger(tokenizer).fit(train, cfg, eval_sentences=train[:8], progress=False)
    assert again.cached and again.key == run.key and again.epochs[-1].eval == run.epochs[-1].eval
    assert computed == []


def test_tagger_tag_shows_subwords_and_both_decodings(tokenizer):
    tagger = tiny_tagger(tokenizer)
    out = tagger.tag(["Mt.", "Sanitas", "is", "in", "Sunshine", "Canyon", "."])
    assert out["tokens"][:5] == ["[CLS]", "mt", ".", "san", "##itas"]
    assert out["probs"].shape == (11, 9) and len(out["word_tags"]) == 7
    assert torch.allclose(out["probs"].sum(-1), torch.ones(11))
    for d in ("first", "mean", "product"):
        assert len(tagger.predict([["Jane", "flew"]], d)[0]) == 2
    with pytest.raises(ValueError, match="decoding must be one of"):
        tagger.predict([["Jane"]], "last")
    with pytest.raises(ValueError, match="no words to tag"):
        tagger.tag([])


@pytest.mark.parametrize("train_layers", [0, 1, 2, 3])
def test_the_tagger_says_how_many_parameters_train_and_which(tokenizer, train_layers):
    """11.4b printed "(the head alone, on a frozen encoder)" whatever TRAIN_LAYERS was: with 1, 1,777,929
    parameters train. The count and its words come from the tagger, and equal what fit() unfreezes."""
    torch.manual_seed(0)
    tagger = NerTagger(BertForTokenClassification(BertModel(TINY), 9), tokenizer, LabelSet(), "first", train_layers)
    n, words = tagger.trained_parameters()
    freeze_below(tagger.model.bert, train_layers)  # what fit() does first
    assert n == sum(p.numel() for p in tagger.model.parameters() if p.requires_grad)
    head = 64 * 9 + 9
    if train_layers == 0:
        assert (n, words) == (head, "the head alone, on a frozen encoder")
    else:
        block = sum(p.numel() for p in tagger.model.bert.encoder.layer[-1].parameters())
        which = {1: "the top encoder block", 2: "the top 2 encoder blocks", 3: "all 3 encoder blocks"}[train_layers]
        below = "the frozen embeddings" if train_layers == 3 else "the frozen layers below"  # TINY has 3 blocks
        assert n == head + train_layers * block and "head alone" not in words
        assert words == f"the head ({head:,}) and {which} ({train_layers * block:,}), on {below}"


def test_the_embedded_tagger_with_one_block_trains_1_777_929_parameters():
    tagger = NerTagger.build(train_layers=1)
    assert tagger.trained_parameters() == (1_777_929, "the head (3,465) and the top encoder block (1,774,464), on the "
                                                      "frozen layers below")


@pytest.mark.slow  # training: `make test`, not the fast loop
def test_qa_reader_learns_and_answers(tokenizer):
    torch.manual_seed(0)
    reader = QAReader(BertForQuestionAnswering(BertModel(TINY)), tokenizer, train_layers=1, max_length=128, stride=32)
    train = [e for e in load_squad("train")[:40]]
    run = reader.fit(train, TrainConfig(lr=1e-3, epochs=3, batch_size=8), progress=False)
    assert run.epochs[-1].train_loss < run.epochs[0].train_loss
    preds = reader.predict(train[:10])
    assert len(preds) == 10 and all(p.text == "" or p.text in e.context for p, e in zip(preds, train))
    view = reader.answer("Where is Mt. Sanitas?", "Mt. Sanitas is in Sunshine Canyon near Boulder.")
    i, j = view["span"]
    assert 0 < i <= j and view["context_mask"][i] and view["context_mask"][j]
    assert view["text"] in "Mt. Sanitas is in Sunshine Canyon near Boulder."
    assert torch.allclose(view["p_start"].sum(), torch.tensor(1.0)) and torch.allclose(view["p_end"].sum(), torch.tensor(1.0))
    with pytest.raises(ValueError, match="type a question"):
        reader.answer(" ", "context")


def test_baselines_by_hand():
    train = [TaggedSentence(("Jane", "Villanueva", "of", "United", "Airlines"), ("B-PER", "I-PER", "O", "B-ORG", "I-ORG")),
             TaggedSentence(("United", "Airlines", "flies"), ("B-ORG", "I-ORG", "O")),
             TaggedSentence(("United", "States"), ("B-LOC", "I-LOC"))]
    assert entity_dictionary(train) == {("Jane", "Villanueva"): "PER", ("United", "Airlines"): "ORG",
                                        ("United", "States"): "LOC"}
    assert dictionary_baseline(train, [["Ask", "United", "Airlines", "and", "Jane", "Villanueva"]]) == [
        ["O", "B-ORG", "I-ORG", "O", "B-PER", "I-PER"]]
    # word by word, 'United' is B-ORG twice and B-LOC once: the majority tag
    assert word_majority_baseline(train, [["United", "States", "rain"]]) == [["B-ORG", "I-LOC", "O"]]


def test_a_run_on_frozen_states_is_keyed_by_where_they_came_from_not_by_their_floats(tokenizer):
    """Another CPU may round the frozen states otherwise: the key (and so a shipped run) must not change with
    that, but must change with the weights or the ids the states come from."""
    from course_lib.finetuning.frozen import SOURCE
    from course_lib.finetuning.runs import fingerprint

    torch.manual_seed(0)
    enc = BertModel(TINY).eval()
    ids = [[101, 2023, 2003, 102], [101, 7592, 102]]
    states = frozen_states(enc, ids, start=2)
    assert all(getattr(s, SOURCE).endswith(f"row {i}") for i, s in enumerate(states))
    again = frozen_states(enc, ids, start=2)  # read back from the cache: the same sources
    assert [getattr(s, SOURCE) for s in again] == [getattr(s, SOURCE) for s in states]
    nudged = [s + 1e-6 for s in states]  # as another CPU's rounding might leave them
    for s, n in zip(states, nudged):
        setattr(n, SOURCE, getattr(s, SOURCE))
    assert fingerprint([{"hidden": s} for s in nudged]) == fingerprint([{"hidden": s} for s in states])
    assert fingerprint(nudged[0] + 0) != fingerprint(states[0] + 0)  # without a source: the floats themselves
    other_ids = frozen_states(enc, [[101, 2023, 2003, 102], [101, 7593, 102]], start=2)
    other_layer = frozen_states(enc, ids, start=1)
    with torch.no_grad():
        enc.embeddings.word_embeddings.weight[0, 0] += 1
    other_weights = frozen_states(enc, ids, start=2)
    keys = {fingerprint(x) for x in (states, other_ids, other_layer, other_weights)}
    assert len(keys) == 4


def test_a_tagger_run_on_frozen_states_is_found_again_when_the_states_round_otherwise(tokenizer, monkeypatch):
    import course_lib.finetuning.ner as ner

    train = load_wikigold("train")[:16]
    cfg = TrainConfig(lr=1e-3, epochs=1, batch_size=8)
    run = tiny_tagger(tokenizer).fit(train, cfg, progress=False)
    real = ner.frozen_states

    def rounded_otherwise(*args, **kwargs):
        out = real(*args, **kwargs)
        from course_lib.finetuning.frozen import SOURCE
        nudged = []
        for s in out:
            n = s + 1e-6
            setattr(n, SOURCE, getattr(s, SOURCE))
            nudged.append(n)
        return nudged

    monkeypatch.setattr(ner, "frozen_states", rounded_otherwise)
    again = tiny_tagger(tokenizer).fit(train, cfg, progress=False)
    assert again.cached and again.key == run.key


def test_a_probe_of_a_lower_layer_reads_that_layers_vectors():
    """NerTagger.build(read_layer=k) cuts the encoder after block k: its states are the full encoder's hidden_states[k],
    and a fresh build of the whole encoder is not cut (each build loads its own model)."""
    probe = NerTagger.build(train_layers=0, read_layer=2)
    whole = NerTagger.build(train_layers=0)
    assert num_layers(probe.model.bert) == 2 and num_layers(whole.model.bert) == 6
    enc = probe.encode([["Mt.", "Sanitas", "is", "in", "Sunshine", "Canyon", "."]])
    with torch.no_grad():
        cut = probe.model.bert(enc.input_ids, enc.attention_mask).last_hidden_state
        full = whole.model.bert(enc.input_ids, enc.attention_mask, output_hidden_states=True).hidden_states[2]
    assert torch.allclose(cut, full, atol=1e-6)
    with pytest.raises(ValueError, match="read_layer must be between 1 and 6"):
        NerTagger.build(read_layer=7)
    with pytest.raises(ValueError, match=r"train_layers \(2\) cannot exceed read_layer \(1\)"):
        NerTagger.build(train_layers=2, read_layer=1)
