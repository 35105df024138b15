"""The live pretraining of notebook 11.2 (course_lib.pretraining.training), domain adaptation (.adaptation),
what the MLM head predicts per fate and on cloze sentences (.fill_mask), the pretraining model's parameter count
(course_lib.model.heads) and the drawings (course_lib.views.pretraining)."""
import math

import pytest
import torch
from matplotlib.figure import Figure

from course_lib.model.bert import BertConfig
from course_lib.model.heads import BertForPreTraining, pretraining_parameter_breakdown
from course_lib.pretraining.adaptation import AdaptationRecipe, adapt_to_domain, heldout_mlm_loss, in_domain_texts
from course_lib.pretraining.fill_mask import FATES, cloze_table, predictions_by_fate
from course_lib.pretraining.masking import IS_NEXT, NOT_NEXT, unigram_distribution
from course_lib.pretraining.training import (PretrainingRecipe, collate_pairs, corpus_hash, load_run,
                                             pretrain_tiny_bert, python_reference_documents, run_folder,
                                             split_documents, training_text_contains)
from course_lib.views.pretraining import draw_adaptation, draw_pretraining

SHORT = PretrainingRecipe(steps=40, batch_size=16, warmup=5, eval_every=20, seed=3)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    path = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COURSE_LIB_CACHE", str(path))
        yield path


@pytest.fixture(scope="module")
def short_run(cache):
    return pretrain_tiny_bert(SHORT, progress=False)


# ----------------------------------------------------------------------------- the corpus and the batches

def test_split_holds_out_every_tenth_document_and_nothing_else():
    docs = python_reference_documents()
    train, held = split_documents(docs, 10)
    assert len(train) + len(held) == len(docs) and len(held) == math.ceil(len(docs) / 10)
    assert held[0] == docs[0] and held[1] == docs[10]
    with pytest.raises(ValueError, match="at least 2"):
        split_documents(docs, 1)


def test_corpus_hash_changes_with_the_text():
    docs = [["A b c.", "D e f."], ["G h i."]]
    assert corpus_hash(docs) == corpus_hash([list(d) for d in docs])
    assert corpus_hash(docs) != corpus_hash([["A b c.", "D e f!"], ["G h i."]])


def test_collate_pairs_cuts_the_longer_sentence_first_and_sets_segments():
    pairs = [([1, 2, 3, 4, 5, 6], [7, 8], True), ([9], [10, 11], False)]
    ids, att, types, labels = collate_pairs(pairs, cls_id=101, sep_id=102, pad_id=0, max_length=8)
    assert ids.tolist() == [[101, 1, 2, 3, 102, 7, 8, 102], [101, 9, 102, 10, 11, 102, 0, 0]]
    assert types.tolist() == [[0, 0, 0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 1, 0, 0]]
    assert att.tolist() == [[1] * 8, [1] * 6 + [0, 0]]
    assert labels.tolist() == [IS_NEXT, NOT_NEXT]
    with pytest.raises(ValueError, match="no room"):
        collate_pairs(pairs, cls_id=101, sep_id=102, pad_id=0, max_length=4)


def test_training_text_contains_sees_the_manual_but_not_invented_sentences():
    assert training_text_contains('The "if" statement is used for conditional execution')
    assert training_text_contains('the " if " statement is used for conditional execution.'), "spacing aside"
    assert not training_text_contains("an exception is raised if the key is not found")


# ----------------------------------------------------------------------------- the recipe and the run

def test_recipe_defaults_are_what_the_notebook_says():
    r = PretrainingRecipe()
    assert (r.num_hidden_layers, r.hidden_size, r.num_attention_heads, r.vocab_size) == (2, 64, 4, 1000)
    assert (r.max_length, r.batch_size, r.dropout, r.nsp) == (32, 32, 0.0, True)


def test_learning_rate_warms_up_then_decays_to_zero():
    r = PretrainingRecipe(steps=100, warmup=10, lr=1e-2)
    assert r.lr_at(0) == pytest.approx(1e-3) and r.lr_at(9) == pytest.approx(1e-2)
    assert r.lr_at(10) == pytest.approx(1e-2) and r.lr_at(55) == pytest.approx(5e-3)
    assert r.lr_at(100) == 0.0
    with pytest.raises(ValueError, match="warmup"):
        PretrainingRecipe(steps=10, warmup=10)


def test_cache_key_depends_on_the_recipe_and_the_corpus():
    r = PretrainingRecipe()
    assert r.key("a") == PretrainingRecipe().key("a")
    assert r.key("a") != r.key("b") != PretrainingRecipe(steps=2999).key("b")


def test_short_run_logs_every_step_and_evaluates(short_run):
    run = short_run
    assert [r["step"] for r in run.losses] == list(range(1, SHORT.steps + 1))
    assert [e["step"] for e in run.evals] == [0, 20, 40]
    assert run.evals[0]["train_mlm"] == pytest.approx(math.log(run.tokenizer.vocab_size), abs=0.3), \
        "an untrained model is near ln |V|"
    assert len(run.evals[-1]["probes"]) == len(SHORT.probes) and len(run.evals[-1]["probes"][0]) == 3
    assert 0 < run.unigram_entropy < math.log(run.tokenizer.vocab_size)
    assert run.heldout_unigram_loss > run.unigram_entropy, "held-out documents use words the training text lacks"
    assert not run.model.training and not run.cached


def test_the_second_call_loads_the_same_model_from_the_cache(short_run, cache):
    again = pretrain_tiny_bert(SHORT, progress=False)
    assert again.cached and again.path == short_run.path == run_folder(SHORT)
    assert str(cache) in str(again.path)
    assert again.losses == short_run.losses and again.evals == short_run.evals
    assert again.seconds == pytest.approx(short_run.seconds, abs=0.1)
    m = again.model
    assert m.cls.predictions.decoder.weight is m.bert.embeddings.word_embeddings.weight, "tying survives loading"
    for (k, a), b in zip(short_run.model.state_dict().items(), m.state_dict().values()):
        assert torch.equal(a, b), k
    assert again.tokenizer.backend.to_str() == short_run.tokenizer.backend.to_str()


def test_a_run_folder_without_run_json_is_trained_again(short_run):
    (short_run.path / "run.json").rename(short_run.path / "run.json.bak")
    try:
        assert not pretrain_tiny_bert(SHORT, progress=False).cached
    finally:
        if not (short_run.path / "run.json").exists():
            (short_run.path / "run.json.bak").rename(short_run.path / "run.json")
    assert load_run(short_run.path).cached


def test_mlm_only_run_has_no_nsp_head(cache):
    run = pretrain_tiny_bert(PretrainingRecipe(steps=6, batch_size=4, warmup=1, eval_every=3, nsp=False),
                             progress=False)
    assert run.model.cls.seq_relationship is None and all(r["nsp"] == 0.0 for r in run.losses)
    assert math.isnan(run.evals[-1]["heldout_nsp_acc"])


# ----------------------------------------------------------------------------- what the head predicts

def test_predictions_by_fate_partition_the_eligible_positions(short_run):
    tok, model = short_run.tokenizer, short_run.model
    texts = [s for d in python_reference_documents()[:6] for s in d if len(tok.tokenize(s)) <= 30][:40]
    uni = unigram_distribution(texts, tokenizer=tok)
    stats = predictions_by_fate(model, tok, texts, uni, seed=0)
    assert list(stats) == list(FATES)
    enc = tok(texts)
    eligible = int((enc.attention_mask.bool() & ~torch.isin(enc.input_ids, torch.tensor(sorted(tok.special_ids))))
                   .sum())
    assert sum(s.n for s in stats.values()) == eligible
    assert stats["[MASK]"].top1_shown == 0.0
    for s in stats.values():
        assert 0 <= s.top1_original <= 1 and 0 <= s.p_original <= 1
    for fate in ("unchanged", "not selected"):  # there the token shown is the original
        assert stats[fate].top1_shown == stats[fate].top1_original
    assert predictions_by_fate(model, tok, texts, uni, seed=0) == stats, "seeded"


def test_asking_at_every_kth_not_selected_position_leaves_the_other_fates_as_they_were(short_run):
    tok, model = short_run.tokenizer, short_run.model
    texts = [s for d in python_reference_documents()[:6] for s in d if len(tok.tokenize(s)) <= 30][:40]
    uni = unigram_distribution(texts, tokenizer=tok)
    full = predictions_by_fate(model, tok, texts, uni, seed=0, batch_size=16)
    some = predictions_by_fate(model, tok, texts, uni, seed=0, batch_size=16, unselected_every=3)
    for fate in ("[MASK]", "random token", "unchanged"):
        assert some[fate] == full[fate], fate
    # every 3rd not-selected position of each batch, in reading order: ceil(n / 3) per batch
    from course_lib.pretraining.masking import mlm_mask

    g, want = torch.Generator().manual_seed(0), 0
    for i in range(0, len(texts), 16):
        enc = tok(texts[i:i + 16])
        b = mlm_mask(enc.input_ids, special_ids=tok.special_ids, mask_token_id=tok.mask_token_id, unigram=uni,
                     generator=g, attention_mask=enc.attention_mask)
        want += -(-int((b.eligible & ~b.selected).sum()) // 3)
    assert some["not selected"].n == want < full["not selected"].n
    assert predictions_by_fate(model, tok, texts, uni, seed=0, batch_size=16, unselected_every=1) == full
    for bad in (0, -2, 1.5):
        with pytest.raises(ValueError, match="unselected_every must be a whole number >= 1"):
            predictions_by_fate(model, tok, texts, uni, unselected_every=bad)


def test_predictions_by_fate_score_a_few_rows_at_a_time_with_the_same_result(short_run, monkeypatch):
    """The head's |V| scores are held for HEAD_ROWS positions at a time (3,000 rows of a batch took 0.7 GB of
    notebook 11.2's peak): any chunk size gives the softmax's own numbers."""
    import importlib

    fill_mask = importlib.import_module("course_lib.pretraining.fill_mask")
    tok, model = short_run.tokenizer, short_run.model
    texts = [s for d in python_reference_documents()[:6] for s in d if len(tok.tokenize(s)) <= 30][:40]
    uni = unigram_distribution(texts, tokenizer=tok)
    whole = predictions_by_fate(model, tok, texts, uni, seed=0, batch_size=8)
    monkeypatch.setattr(fill_mask, "HEAD_ROWS", 3)
    chunked = predictions_by_fate(model, tok, texts, uni, seed=0, batch_size=8)
    for fate in FATES:
        a, b = whole[fate], chunked[fate]
        assert (a.n, a.top1_original, a.top1_shown) == (b.n, b.top1_original, b.top1_shown)
        assert a.p_original == pytest.approx(b.p_original, abs=1e-6)
    # and both are the softmax's: P(original) at the [MASK]ed positions, recomputed here from the full softmax
    from course_lib.pretraining.masking import mlm_mask

    one = predictions_by_fate(model, tok, texts, uni, seed=0, batch_size=len(texts))["[MASK]"]
    enc = tok(texts)
    b = mlm_mask(enc.input_ids, special_ids=tok.special_ids, mask_token_id=tok.mask_token_id, unigram=uni,
                 generator=torch.Generator().manual_seed(0), attention_mask=enc.attention_mask)
    dev = next(model.parameters()).device  # the run trains where course_lib's device is (cuda when there)
    with torch.no_grad():
        hidden = model.bert.last_hidden_by_length(b.input_ids.to(dev), enc.attention_mask.to(dev),
                                                  enc.token_type_ids.to(dev))
        probs = model.cls.predictions(hidden[b.masked.to(dev)]).softmax(-1).cpu()
    p_orig = probs.gather(1, enc.input_ids[b.masked][:, None])[:, 0]
    assert one.n == int(b.masked.sum()) and one.p_original == pytest.approx(float(p_orig.double().mean()), abs=1e-6)
    assert one.top1_original == pytest.approx(float((probs.argmax(-1) == enc.input_ids[b.masked]).double().mean()))


def test_cloze_table_ranks_the_word_as_the_softmax_does(short_run):
    tok, model = short_run.tokenizer, short_run.model
    rows = cloze_table(model, tok, [("the [MASK] statement is [MASK].", ["if", "zzzz"])], top_k=4)
    assert len(rows) == 2 and rows[0].mask == 0 and rows[1].mask == 1
    with torch.no_grad():
        enc = tok("the [MASK] statement is [MASK].").to(next(model.parameters()).device)
        p = model(**enc).logits[0, 2].softmax(-1).cpu()
    order = p.argsort(descending=True).tolist()
    wid = tok.token_to_id("if")
    assert rows[0].word_rank == order.index(wid) + 1 and rows[0].word_prob == pytest.approx(float(p[wid]))
    assert rows[0].tokens == tok.convert_ids_to_tokens(order[:4])
    assert rows[1].word_rank is None and "not a single token" in str(rows[1])
    with pytest.raises(ValueError, match="2 \\[MASK\\]s but 1 words"):
        cloze_table(model, tok, [("the [MASK] statement is [MASK].", ["if"])])


# ----------------------------------------------------------------------------- parameters

def test_bert_base_pretraining_model_has_110_1m_parameters_with_the_decoder_tied():
    parts = pretraining_parameter_breakdown(BertConfig())
    assert sum(parts.values()) == 110_106_428
    assert parts["MLM head: output matrix (tied: the word embeddings)"] == 0
    assert parts["embeddings (word, position, segment, LayerNorm)"] == (30522 + 512 + 2) * 768 + 2 * 768
    assert parts["transformer blocks"] == 12 * (4 * (768 * 768 + 768) + 2 * 768 * 3072 + 3072 + 768 + 4 * 768)
    assert parts["MLM head: output bias b"] == 30522 and parts["NSP head W_NSP"] == 2 * 768 + 2


def test_breakdown_sums_to_the_model_count_for_a_small_config():
    cfg = BertConfig(vocab_size=500, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    for nsp in (True, False):
        parts = pretraining_parameter_breakdown(cfg, nsp=nsp)
        assert sum(parts.values()) == BertForPreTraining(cfg, nsp=nsp).num_parameters()
        assert ("NSP head W_NSP" in parts) == nsp


def test_mlm_head_transform_names_its_activation():
    head = BertForPreTraining(BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                         intermediate_size=16)).cls.predictions
    assert "dense -> GELU -> LayerNorm" in repr(head)


# ----------------------------------------------------------------------------- domain adaptation

def test_in_domain_texts_hold_out_the_pretraining_documents():
    train, held = in_domain_texts()
    tr_docs, held_docs = split_documents(python_reference_documents(), 10)
    assert train == [s for d in tr_docs for s in d] and held == [s for d in held_docs for s in d]


def test_adaptation_trains_a_copy_only_in_its_top_layers_and_caches_it(short_run):
    model, tok = short_run.model, short_run.tokenizer
    before = {k: v.clone() for k, v in model.state_dict().items()}
    recipe = AdaptationRecipe(steps=4, batch_size=4, block_size=32, warmup=1, train_layers=1, lr=1e-3)
    other = {"a few sentences": ["the value of the object is returned.", "a statement is executed."]}
    run = adapt_to_domain(model, tok, "tiny", recipe, other_texts=other, progress=False)
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), f"the base model changed: {k}"
    changed = {k for k, v in run.model.state_dict().items() if not torch.equal(v, before[k])}
    assert changed and all(k.startswith(("bert.encoder.layer.1.", "cls.predictions.transform.",
                                         "cls.predictions.bias", "cls.predictions.decoder.bias")) for k in changed)
    assert len(run.losses) == 4 and set(run.before) == set(run.after) == {"in-domain (held-out Python manual)",
                                                                       "a few sentences"}
    assert run.trained_parameters == sum(p.numel() for k, p in model.named_parameters()
                                         if k.startswith(("bert.encoder.layer.1.", "cls.predictions.transform.",
                                                          "cls.predictions.bias")))
    again = adapt_to_domain(model, tok, "tiny", recipe, other_texts=other, progress=False)
    assert again.cached and again.before == run.before and again.after == pytest.approx(run.after)
    for (k, a), b in zip(run.model.state_dict().items(), again.model.state_dict().values()):
        assert torch.equal(a, b), k


def test_heldout_loss_is_seeded_and_refuses_models_without_a_head(short_run):
    model, tok = short_run.model, short_run.tokenizer
    _, held = in_domain_texts()
    uni = unigram_distribution(held, tokenizer=tok)
    assert heldout_mlm_loss(model, tok, held[:30], uni, block_size=32) == \
        heldout_mlm_loss(model, tok, held[:30], uni, block_size=32)
    with pytest.raises(ValueError, match="no MLM head"):
        adapt_to_domain(model.bert, tok, "encoder only")


# ----------------------------------------------------------------------------- drawings

def test_pretraining_drawing_has_three_labelled_panels_and_the_reference_lines(short_run):
    fig = draw_pretraining(short_run, window=5)
    assert isinstance(fig, Figure) and len(fig.axes) == 3
    for ax in fig.axes:
        assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title()
    levels = {round(line.get_ydata()[0], 4) for line in fig.axes[0].lines if len(set(line.get_ydata())) == 1}
    assert round(short_run.unigram_entropy, 4) in levels
    assert round(math.log(short_run.tokenizer.vocab_size), 4) in levels
    assert round(math.log(2), 4) in {round(line.get_ydata()[0], 4) for line in fig.axes[1].lines}


def test_adaptation_drawing_shows_before_and_after_bars(short_run):
    class Run:
        losses = [5.0, 4.0, 3.5, 3.0]
        before = {"in-domain (held-out Python manual)": 6.0, "general": 4.0}
        after = {"in-domain (held-out Python manual)": 5.0, "general": 4.2}
    fig = draw_adaptation(Run(), window=2)
    bars = fig.axes[1].patches
    assert sorted(round(b.get_height(), 3) for b in bars) == [4.0, 4.2, 5.0, 6.0]
    assert fig.axes[1].get_ylabel() and fig.axes[0].get_xlabel()
    mean = fig.axes[0].lines[1]  # full windows only: its first point is the mean of steps 1-2, drawn at step 2
    assert list(mean.get_xdata()) == [2, 3, 4] and list(mean.get_ydata()) == [4.5, 3.75, 3.25]


def test_wordpiece_ids_are_the_same_every_time_and_segment_as_the_learner_does():
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    from course_lib.pretraining.training import train_wordpiece
    from course_lib.tokenization.bert_tokenizer import SPECIAL_TOKENS

    texts = [s for d in python_reference_documents()[:20] for s in d]
    a, b = train_wordpiece(texts, 300), train_wordpiece(texts, 300)
    assert a.backend.get_vocab() == b.backend.get_vocab()
    assert [a.id_to_token(i) for i in range(5)] == list(SPECIAL_TOKENS)
    learner = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    learner.normalizer = normalizers.BertNormalizer(lowercase=True)
    learner.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    learner.train_from_iterator(texts, trainers.WordPieceTrainer(vocab_size=300, special_tokens=list(SPECIAL_TOKENS),
                                                                 show_progress=False))
    assert set(learner.get_vocab()) == set(a.backend.get_vocab())
    for text in texts[:50] + ["Unheard-of words like zyxwvut segment too."]:
        assert a.tokenize(text) == learner.encode(text).tokens
    assert a("a b", "c").token_type_ids.tolist() == [[0, 0, 0, 0, 1, 1]]


def test_the_same_recipe_gives_the_same_run_bit_for_bit(tmp_path, monkeypatch):
    recipe = PretrainingRecipe(steps=12, batch_size=8, warmup=2, eval_every=6, seed=5)
    runs = []
    for name in ("a", "b"):
        monkeypatch.setenv("COURSE_LIB_CACHE", str(tmp_path / name))
        runs.append(pretrain_tiny_bert(recipe, progress=False, device="cpu"))  # bit for bit: a CPU promise
    assert runs[0].losses == runs[1].losses and runs[0].evals == runs[1].evals
    for (k, x), y in zip(runs[0].model.state_dict().items(), runs[1].model.state_dict().values()):
        assert torch.equal(x, y), k
