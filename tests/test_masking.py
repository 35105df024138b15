"""Masking and the other corruptions of SLP3 §11.2: MLM (80/10/10), NSP, RoBERTa packing and dynamic masking,
BART-style noise, and the multilingual sampling of eq. 11.7."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from scipy.stats import chisquare

from course_lib.pretraining.masking import (
    IGNORE_INDEX, IS_NEXT, NOT_NEXT, DynamicMasker, StaticMasker, encode_nsp, masked_lm_loss, mlm_mask, nsp_pairs,
    pack_sequences, unigram_distribution,
)
from course_lib.pretraining.multilingual import language_sampling_probs
from course_lib.pretraining.noising import (document_rotate, sample_infill_spans, sentence_permute, text_infill, token_delete,
                                token_mask)

# A toy vocabulary: 0-3 special, 4-9 words with a skewed unigram distribution (id 9 never seen).
PAD, CLS, SEP, MASK = 0, 1, 2, 3
SPECIAL = {PAD, CLS, SEP, MASK}
V = 10
UNIGRAM = torch.tensor([0, 0, 0, 0, 0.5, 0.25, 0.15, 0.07, 0.03, 0.0])


def toy_batch(B=1500, T=128, seed=0):
    """(B, T) ids: [CLS] words … [SEP] then padding; rows have random lengths. Returns (input_ids, attention_mask)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(4, 9, (B, T), generator=g)
    lengths = torch.randint(T // 2, T + 1, (B,), generator=g)
    pos = torch.arange(T).expand(B, T)
    ids[:, 0] = CLS
    ids[pos == (lengths - 1)[:, None]] = SEP
    ids[pos >= lengths[:, None]] = PAD
    return ids, (pos < lengths[:, None]).long()


def mask_toy(ids, att=None, **kw):
    kw = {"special_ids": SPECIAL, "mask_token_id": MASK, "unigram": UNIGRAM, **kw}
    return mlm_mask(ids, attention_mask=att, **kw)


@pytest.fixture(scope="module")
def toy():
    ids, att = toy_batch()
    return ids, att, mask_toy(ids, att, generator=0)


@pytest.fixture(scope="module")
def tok(embedded):
    return embedded[1]


# ----------------------------------------------------------------------------- unigram distribution

def test_unigram_distribution_is_relative_frequency_without_special_tokens():
    corpus = [[CLS, 4, 4, 5, SEP], [CLS, 4, 6, SEP, PAD]]
    p = unigram_distribution(corpus, V, exclude=SPECIAL)
    expected = torch.zeros(V)
    expected[[4, 5, 6]] = torch.tensor([3, 1, 1]) / 5
    torch.testing.assert_close(p, expected)


def test_unigram_distribution_smoothing_gives_unseen_words_mass_but_not_special_tokens():
    p = unigram_distribution(torch.tensor([4, 4, 5]), V, exclude=SPECIAL, smoothing=1.0)
    assert p[9] > 0 and p[list(SPECIAL)].sum() == 0
    torch.testing.assert_close(p.sum(), torch.tensor(1.0))


def test_unigram_distribution_from_texts_uses_the_tokenizer(tok):
    p = unigram_distribution(["the cat sat on the mat", "the dog"], tokenizer=tok)
    assert p.shape == (tok.vocab_size,)
    the, cat = tok.token_to_id("the"), tok.token_to_id("cat")
    assert p[the] == pytest.approx(3 / 8) and p[cat] == pytest.approx(1 / 8)
    assert p[sorted(tok.special_ids)].sum() == 0


def test_unigram_distribution_refuses_ids_outside_the_vocabulary():
    with pytest.raises(ValueError, match="token id 12, outside the vocabulary of 10"):
        unigram_distribution([[4, 12]], V)


# ----------------------------------------------------------------------------- mlm_mask: rates

def test_fifteen_percent_of_eligible_tokens_are_selected(toy):
    ids, att, mb = toy
    assert mb.eligible.sum() >= 100_000
    share = mb.selected.sum() / mb.eligible.sum()
    assert share.item() == pytest.approx(0.15, abs=0.005)


def test_selected_tokens_split_80_10_10(toy):
    _, _, mb = toy
    n = mb.selected.sum()
    for fate, target in (("masked", 0.8), ("randomized", 0.1), ("kept", 0.1)):
        assert (getattr(mb, fate).sum() / n).item() == pytest.approx(target, abs=0.01), fate


def test_every_selected_token_has_exactly_one_fate(toy):
    _, _, mb = toy
    fates = mb.masked.long() + mb.randomized.long() + mb.kept.long()
    assert torch.equal(fates, mb.selected.long())


def test_rates_are_configurable(toy):
    ids, att, _ = toy
    mb = mask_toy(ids, att, select_prob=0.4, mask_prob=0.5, random_prob=0.3, generator=1)
    n = mb.selected.sum()
    assert (n / mb.eligible.sum()).item() == pytest.approx(0.4, abs=0.005)
    assert (mb.masked.sum() / n).item() == pytest.approx(0.5, abs=0.01)
    assert (mb.randomized.sum() / n).item() == pytest.approx(0.3, abs=0.01)


def test_masked_positions_hold_mask_and_kept_positions_the_original(toy):
    ids, _, mb = toy
    assert (mb.input_ids[mb.masked] == MASK).all()
    assert torch.equal(mb.input_ids[~mb.masked & ~mb.randomized], ids[~mb.masked & ~mb.randomized])


# ----------------------------------------------------------------------------- mlm_mask: random replacements

def test_random_replacements_follow_the_unigram_distribution():
    ids, att = toy_batch(B=200, T=128, seed=3)
    mb = mask_toy(ids, att, select_prob=1.0, mask_prob=0.0, random_prob=1.0, generator=7)
    drawn = mb.input_ids[mb.randomized]
    assert drawn.numel() > 10_000
    observed = torch.bincount(drawn, minlength=V)
    support = UNIGRAM > 0
    p = UNIGRAM[support].double()
    expected = p / p.sum() * drawn.numel()  # the smallest expected count is over 300
    result = chisquare(observed[support].double().numpy(), expected.numpy())
    assert result.pvalue > 0.001, f"replacement counts {observed.tolist()} do not fit the unigram distribution"


def test_a_token_with_unigram_probability_zero_is_never_drawn():
    ids, att = toy_batch(B=200, T=128, seed=4)
    mb = mask_toy(ids, att, select_prob=1.0, mask_prob=0.0, random_prob=1.0, generator=8)
    assert not (mb.input_ids[mb.randomized] == 9).any()


def test_special_tokens_are_never_drawn_as_replacements_even_with_unigram_mass():
    ids, att = toy_batch(B=50, T=64, seed=5)
    uniform = torch.full((V,), 1 / V)  # puts mass on [PAD], [CLS], [SEP], [MASK] too
    mb = mask_toy(ids, att, unigram=uniform, select_prob=1.0, mask_prob=0.0, random_prob=1.0, generator=9)
    assert not torch.isin(mb.input_ids[mb.randomized], torch.tensor(sorted(SPECIAL))).any()


# ----------------------------------------------------------------------------- mlm_mask: invariants

def test_special_tokens_and_padding_are_never_selected(toy):
    ids, att, mb = toy
    special = torch.isin(ids, torch.tensor(sorted(SPECIAL)))
    assert not (mb.selected & special).any()
    assert not (mb.selected & (att == 0)).any()


def test_padding_is_not_selected_even_when_pad_is_not_listed_as_special():
    ids = torch.tensor([[CLS, 4, 5, SEP, 7, 7, 7]])  # the tail is padding of a non-special id
    att = torch.tensor([[1, 1, 1, 1, 0, 0, 0]])
    mb = mlm_mask(ids, special_ids={CLS, SEP}, mask_token_id=MASK, unigram=UNIGRAM, select_prob=1.0,
                  attention_mask=att, generator=0)
    assert mb.selected.tolist() == [[False, True, True, False, False, False, False]]


def test_an_existing_mask_token_is_not_selected_again():
    ids = torch.tensor([[CLS, MASK, 4, SEP]])
    mb = mlm_mask(ids, special_ids={CLS, SEP}, mask_token_id=MASK, unigram=UNIGRAM, select_prob=1.0, generator=0)
    assert mb.selected.tolist() == [[False, False, True, False]]


def test_labels_are_minus_100_exactly_where_not_selected(toy):
    ids, _, mb = toy
    assert torch.equal(mb.labels == IGNORE_INDEX, ~mb.selected)
    assert torch.equal(mb.labels[mb.selected], ids[mb.selected])


def test_input_is_not_modified_in_place():
    ids, att = toy_batch(B=20, T=32)
    before = ids.clone()
    mb = mask_toy(ids, att, select_prob=0.5, generator=0)
    assert torch.equal(ids, before)
    assert mb.masked.any() and not torch.equal(mb.input_ids, ids)


def test_same_seed_gives_the_same_mask_and_another_seed_another():
    ids, att = toy_batch(B=20, T=32)
    a, b, c = (mask_toy(ids, att, generator=s) for s in (1, 1, 2))
    assert torch.equal(a.input_ids, b.input_ids) and torch.equal(a.selected, b.selected)
    assert not torch.equal(a.selected, c.selected)
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    assert torch.equal(mask_toy(ids, att, generator=g1).input_ids, mask_toy(ids, att, generator=g2).input_ids)


@pytest.mark.parametrize("kwargs, message", [
    (dict(select_prob=1.5), "select_prob must be a probability between 0 and 1, not 1.5"),
    (dict(mask_prob=-0.1), "mask_prob must be a probability"),
    (dict(random_prob=2), "random_prob must be a probability"),
    (dict(mask_prob=0.8, random_prob=0.3), r"mask_prob \+ random_prob = 0.8 \+ 0.3 = 1.1 is more than 1"),
    (dict(unigram=torch.ones(5) / 5), "covers only 5 ids"),
    (dict(whole_word=True), "whole_word=True needs word_ids"),
])
def test_bad_masking_arguments_are_refused_with_a_clear_message(kwargs, message):
    ids, _ = toy_batch(B=2, T=8)
    with pytest.raises(ValueError, match=message):
        mask_toy(ids, **kwargs)


def test_masked_batch_rows_slice_every_tensor(toy):
    _, _, mb = toy
    part = mb[10:20]
    assert part.input_ids.shape == part.labels.shape == part.kept.shape == (10, mb.labels.size(1))
    assert torch.equal(part.selected, mb.selected[10:20])
    assert mb.counts()["selected"] == int(mb.selected.sum())


# ----------------------------------------------------------------------------- whole-word masking

def test_whole_word_masking_gives_all_subwords_of_a_word_one_fate(tok):
    text = "Mt. Sanitas is in Sunshine Canyon, where hikers photograph unbelievably wonderful wildflowers."
    enc = tok([text] * 200)  # 200 copies: many draws of the same sentence
    u = unigram_distribution([text], tokenizer=tok, smoothing=0.0)
    mb = mlm_mask(enc.input_ids, special_ids=tok.special_ids, mask_token_id=tok.mask_token_id, unigram=u,
                  select_prob=0.3, generator=0, attention_mask=enc.attention_mask, whole_word=True,
                  word_ids=enc.word_ids)
    words = enc.word_ids[0]
    multi = [w for w in set(words) - {None} if words.count(w) > 1]
    assert multi, "the sentence should contain words split into several subwords"
    fates = torch.stack([mb.masked, mb.randomized, mb.kept, ~mb.selected], dim=-1).long().argmax(-1)  # (B, T)
    for w in set(words) - {None}:
        cols = [t for t, x in enumerate(words) if x == w]
        assert (fates[:, cols] == fates[:, cols[:1]]).all(), f"subwords of word {w} got different fates"
    selected_multi = mb.selected[:, [words.index(w) for w in multi]]
    assert selected_multi.any(), "some multi-subword word should have been selected"
    n_words = len(set(words) - {None})
    assert (mb.selected[:, [words.index(w) for w in set(words) - {None}]].sum() / (200 * n_words)).item() \
        == pytest.approx(0.3, abs=0.05)


def test_whole_word_masking_separates_the_words_of_a_sentence_pair(tok):
    enc = tok("cats", "cats")  # both sentences' words have word id 0
    assert enc.word_ids[0].count(0) == 2
    u = unigram_distribution(["cats"], tokenizer=tok)
    seen = set()
    for seed in range(40):
        mb = mlm_mask(enc.input_ids, special_ids=tok.special_ids, mask_token_id=tok.mask_token_id, unigram=u,
                      select_prob=0.5, generator=seed, whole_word=True, word_ids=enc.word_ids)
        seen.add(tuple(mb.selected[0, [1, 3]].tolist()))
    assert (True, False) in seen and (False, True) in seen


# ----------------------------------------------------------------------------- L_MLM

def test_loss_ignores_logits_at_unselected_positions():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 7, V, generator=g)
    labels = torch.full((3, 7), IGNORE_INDEX)
    labels[0, 2], labels[1, 5], labels[2, 0] = 4, 6, 8
    loss = masked_lm_loss(logits, labels)
    changed = logits.clone()
    changed[labels == IGNORE_INDEX] = torch.randn(18, V, generator=g) * 100
    assert torch.equal(masked_lm_loss(changed, labels), loss)
    changed[labels == IGNORE_INDEX] = float("nan")
    assert torch.equal(masked_lm_loss(changed, labels), loss)
    changed[0, 2, 0] += 1.0  # a selected position does change it
    assert masked_lm_loss(changed, labels) != loss


def test_loss_is_mean_cross_entropy_over_selected_positions():
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(2, 5, V, generator=g)
    labels = torch.full((2, 5), IGNORE_INDEX)
    picks = [(0, 1, 4), (0, 3, 9), (1, 4, 5)]
    for b, t, y in picks:
        labels[b, t] = y
    manual = -sum(F.log_softmax(logits[b, t], -1)[y] for b, t, y in picks) / len(picks)
    torch.testing.assert_close(masked_lm_loss(logits, labels), manual, rtol=1e-6, atol=1e-6)


def test_loss_without_selected_positions_is_a_clear_error():
    with pytest.raises(ValueError, match="no position is selected"):
        masked_lm_loss(torch.randn(1, 4, V), torch.full((1, 4), IGNORE_INDEX))
    with pytest.raises(ValueError, match="expected logits"):
        masked_lm_loss(torch.randn(1, 4, V), torch.zeros(1, 5, dtype=torch.long))


def test_loss_with_mlm_mask_labels_matches_cross_entropy_with_ignore_index(toy):
    _, _, mb = toy
    logits = torch.randn(*mb.labels[:50].shape, V, generator=torch.Generator().manual_seed(2))
    ref = F.cross_entropy(logits.view(-1, V), mb.labels[:50].reshape(-1), ignore_index=IGNORE_INDEX)
    torch.testing.assert_close(masked_lm_loss(logits, mb.labels[:50]), ref)


# ----------------------------------------------------------------------------- NSP

DOCS = [[f"document {d} sentence {i}." for i in range(60)] for d in range(12)]
WHERE = {s: (d, i) for d, doc in enumerate(DOCS) for i, s in enumerate(doc)}


def test_nsp_is_next_pairs_are_adjacent_and_not_next_pairs_come_from_another_document():
    pairs = nsp_pairs(DOCS, generator=0)
    assert len(pairs) == sum(len(d) - 1 for d in DOCS)
    for a, b, is_next in pairs:
        (da, ia), (db, ib) = WHERE[a], WHERE[b]
        if is_next:
            assert (db, ib) == (da, ia + 1)
        else:
            assert db != da, f"NotNext partner of {a!r} is from the same document"


def test_nsp_pairs_are_about_half_is_next():
    pairs = nsp_pairs(DOCS * 4, generator=1)  # 2832 pairs
    share = sum(p.is_next for p in pairs) / len(pairs)
    assert share == pytest.approx(0.5, abs=0.03)
    share_70 = sum(p.is_next for p in nsp_pairs(DOCS * 4, p_next=0.7, generator=1)) / len(pairs)
    assert share_70 == pytest.approx(0.7, abs=0.03)


def test_nsp_pairs_are_seeded_and_need_two_documents():
    assert nsp_pairs(DOCS, generator=3) == nsp_pairs(DOCS, generator=3)
    assert nsp_pairs(DOCS, generator=3) != nsp_pairs(DOCS, generator=4)
    with pytest.raises(ValueError, match="at least two documents"):
        nsp_pairs([["one.", "two."]])


def test_encode_nsp_builds_segments_and_labels(tok):
    pairs = nsp_pairs(DOCS[:3], generator=5)[:8]
    pairs[0] = ("Short one.", "A second sentence that is much longer than the first.", True)
    enc, labels = encode_nsp(tok, pairs)
    assert labels.tolist() == [IS_NEXT if is_next else NOT_NEXT for _, _, is_next in pairs]
    assert (IS_NEXT, NOT_NEXT) == (0, 1)
    for row, (a, b, _) in enumerate(pairs):
        na, nb = len(tok.tokenize(a)), len(tok.tokenize(b))
        ids, tt = enc.input_ids[row], enc.token_type_ids[row]
        assert ids[0] == tok.cls_token_id and ids[na + 1] == tok.sep_token_id and ids[na + nb + 2] == tok.sep_token_id
        assert (tt[: na + 2] == 0).all(), "[CLS] A [SEP] is segment 0"
        assert (tt[na + 2: na + nb + 3] == 1).all(), "B [SEP] is segment 1"
        assert (tt[na + nb + 3:] == 0).all() and (enc.attention_mask[row, na + nb + 3:] == 0).all()


# ----------------------------------------------------------------------------- RoBERTa: packing, dynamic masking

def random_documents(n=30, seed=0):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, 40, (n,), generator=g).tolist()
    return [torch.randint(4, 9, (L,), generator=g).tolist() for L in lengths]


@pytest.mark.parametrize("pad_id", [None, PAD])
def test_packing_gives_full_blocks_that_keep_the_token_order(pad_id):
    docs = random_documents()
    blocks = pack_sequences(docs, 16, sep_id=SEP, cls_id=CLS, pad_id=pad_id)
    assert blocks.dim() == 2 and blocks.size(1) == 16
    assert (blocks[:, 0] == CLS).all()
    stream = [t for t in blocks.flatten().tolist() if t not in (CLS, SEP, PAD)]
    everything = [t for d in docs for t in d]
    if pad_id is None:  # the last, partial block is dropped: a prefix survives
        assert stream == everything[: len(stream)] and len(everything) - len(stream) < 16
    else:
        assert stream == everything


def test_packing_puts_a_separator_after_every_document():
    docs = [[4, 5, 6], [7, 8], [4, 4, 4, 4]]
    blocks = pack_sequences(docs, 4, sep_id=SEP, cls_id=CLS, pad_id=PAD)
    assert blocks.tolist() == [[CLS, 4, 5, 6], [CLS, SEP, 7, 8], [CLS, SEP, 4, 4], [CLS, 4, 4, SEP]]
    with pytest.raises(ValueError, match="fewer than one block of 64"):
        pack_sequences(docs, 64, sep_id=SEP, cls_id=CLS)


def test_dynamic_masks_differ_between_epochs_and_static_masks_do_not():
    blocks = pack_sequences(random_documents(), 32, sep_id=SEP, cls_id=CLS)
    kw = dict(special_ids=SPECIAL, mask_token_id=MASK, unigram=UNIGRAM)
    dynamic, static = DynamicMasker(blocks, generator=0, **kw), StaticMasker(blocks, generator=0, **kw)
    d = [dynamic() for _ in range(3)]
    s = [static() for _ in range(3)]
    assert not torch.equal(d[0].selected, d[1].selected) and not torch.equal(d[1].selected, d[2].selected)
    assert all(torch.equal(x.input_ids, s[0].input_ids) and torch.equal(x.labels, s[0].labels) for x in s)
    again = DynamicMasker(blocks, generator=0, **kw)
    assert all(torch.equal(again().selected, x.selected) for x in d), "the same seed replays the same epochs"


# ----------------------------------------------------------------------------- BART-style corruptions

WORDS = "the quick brown fox jumps over the lazy dog while seven tired otters watch from the river bank".split()


def test_token_mask_keeps_length_and_only_replaces_tokens_by_mask():
    out = token_mask(WORDS * 50, p=0.3, generator=0)
    assert len(out) == len(WORDS) * 50
    assert all(o == w or o == "[MASK]" for o, w in zip(out, WORDS * 50))
    assert out.count("[MASK]") / len(out) == pytest.approx(0.3, abs=0.05)
    assert token_mask(" ".join(WORDS), p=0.3, generator=1) == " ".join(token_mask(WORDS, p=0.3, generator=1))


def test_token_delete_keeps_the_order_of_the_surviving_tokens():
    tokens = list(range(1000))
    out = token_delete(tokens, p=0.2, generator=0)
    assert out == sorted(out) and set(out) <= set(tokens)
    assert len(out) / 1000 == pytest.approx(0.8, abs=0.05)
    assert token_delete(tokens, generator=3) == token_delete(tokens, generator=3)


def test_text_infill_replaces_each_span_by_one_mask():
    tokens = list(range(200))
    for seed in range(20):
        spans = sample_infill_spans(len(tokens), mask_ratio=0.3, generator=seed)
        out = text_infill(tokens, mask_ratio=0.3, mask_token=-1, generator=seed)
        assert out.count(-1) == len(spans), "one mask per span"
        assert len(out) == len(tokens) - sum(L for _, L in spans) + len(spans)
        assert sum(L for _, L in spans) == 60, "mask_ratio 0.3 of 200 tokens"
        assert [t for t in out if t != -1] == [t for t in tokens if not any(s <= t < s + L for s, L in spans)]
        assert all(s1 + L1 < s2 for (s1, L1), (s2, _) in zip(spans, spans[1:])), "spans do not touch"


def test_text_infill_span_lengths_are_poisson_with_zero_length_insertions():
    lengths = [L for seed in range(200) for _, L in sample_infill_spans(100, mask_ratio=0.3, lam=3.0,
                                                                       generator=seed)]
    assert 0 in lengths, "0-length spans (insertions) should occur"
    assert sum(lengths) / len(lengths) == pytest.approx(3.0, abs=0.3)
    out = text_infill("a b c d e f g h i j", mask_ratio=0.0, generator=0)
    assert out == "a b c d e f g h i j"


def test_sentence_permutation_keeps_the_multiset_of_sentences():
    sentences = [f"sentence {i}." for i in range(8)]
    outs = [sentence_permute(sentences, generator=s) for s in range(5)]
    assert all(sorted(o) == sorted(sentences) for o in outs)
    assert any(o != sentences for o in outs)
    assert sentence_permute(sentences, generator=2) == sentence_permute(sentences, generator=2)


def test_document_rotation_is_a_rotation():
    outs = [document_rotate(WORDS, generator=s) for s in range(10)]
    rotations = [WORDS[k:] + WORDS[:k] for k in range(len(WORDS))]
    assert all(o in rotations for o in outs)
    assert len({tuple(o) for o in outs}) > 1
    assert document_rotate(WORDS, generator=4) == document_rotate(WORDS, generator=4)


# ----------------------------------------------------------------------------- eq. 11.7

def test_alpha_one_keeps_p():
    torch.testing.assert_close(language_sampling_probs([900, 90, 10], alpha=1.0),
                               torch.tensor([0.9, 0.09, 0.01], dtype=torch.float64))


def test_alpha_near_zero_tends_to_uniform():
    torch.testing.assert_close(language_sampling_probs([0.9, 0.09, 0.01], alpha=1e-6),
                               torch.full((3,), 1 / 3, dtype=torch.float64), atol=1e-5, rtol=0)


def test_alpha_0_3_raises_the_share_of_the_smallest_language():
    # by hand: 0.9^0.3 = 0.968886, 0.09^0.3 = 0.485593, 0.01^0.3 = 0.251189; sum 1.705668
    q = language_sampling_probs([0.9, 0.09, 0.01], alpha=0.3)
    torch.testing.assert_close(q, torch.tensor([0.568039, 0.284694, 0.147267], dtype=torch.float64),
                               atol=1e-5, rtol=0)
    assert q[2] > 0.01 * 14
    assert language_sampling_probs({"en": 900, "sw": 90, "yo": 10})["yo"] == pytest.approx(0.147267, abs=1e-5)


@pytest.mark.parametrize("alpha", [0, -0.5])
def test_alpha_must_be_positive(alpha):
    with pytest.raises(ValueError, match="alpha must be > 0"):
        language_sampling_probs([0.5, 0.5], alpha=alpha)
