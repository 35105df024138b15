"""The span boundary objective (eq. 11.17-11.20) on a tiny BERT: the loss is L_MLM + L_SBO, W_V is shared, the
SBO reads only the boundaries and the position, and a few steps of training lower L_SBO below the unigram loss."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from course_lib.model.bert import BertConfig
from course_lib.model.heads import BertForPreTraining
from course_lib.pretraining.masking import masked_lm_loss
from course_lib.spans import SpanBertForPreTraining, sbo_targets
from course_lib.spans.masking import span_mask

CFG = BertConfig(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                 hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, max_position_embeddings=64)
CLS, SEP, MASK = 1, 2, 3


def tiny():
    torch.manual_seed(0)
    return SpanBertForPreTraining(BertForPreTraining(CFG, nsp=False), max_span_len=12).eval()


def batch(seed=0, B=8, T=24):
    """Sentences of 'words' 10..59 (one token each) between [CLS] and [SEP], span-masked."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(10, 60, (B, T), generator=g)
    ids[:, 0], ids[:, -1] = CLS, SEP
    word_ids = [[None] + list(range(T - 2)) + [None] for _ in range(B)]
    unigram = torch.zeros(60)
    unigram[10:] = 1 / 50
    return ids, span_mask(ids, word_ids, special_ids={0, CLS, SEP, MASK}, mask_token_id=MASK, unigram=unigram,
                          generator=g)


def test_loss_is_mlm_plus_sbo_and_w_v_is_the_mlm_output_matrix():
    model = tiny()
    ids, m = batch()
    out = model(m.input_ids, torch.ones_like(ids), labels=m.labels, spans=m.spans)
    assert torch.allclose(out.loss, out.mlm_loss + out.sbo_loss)
    targets = sbo_targets(m.spans, m.labels)
    assert out.sbo_logits.shape == (len(targets), 60)
    assert torch.allclose(out.sbo_loss, F.cross_entropy(out.sbo_logits, targets.labels))
    full = model.mlm(m.input_ids, torch.ones_like(ids)).logits  # the MLM head at every position
    assert torch.allclose(out.mlm_loss, masked_lm_loss(full, m.labels), atol=1e-6)  # L_MLM of §11.2, same tokens
    assert model.sbo.decoder.weight is model.mlm.cls.predictions.decoder.weight
    assert model.sbo.decoder.weight is model.mlm.bert.embeddings.word_embeddings.weight


def test_sbo_prediction_depends_only_on_boundaries_and_relative_position():
    model = tiny()
    ids, m = batch()
    t = sbo_targets(m.spans, m.labels)
    z = model.mlm(m.input_ids, output_hidden_states=False).last_hidden_state
    z2 = z.clone()
    inside = torch.zeros_like(z2[..., 0], dtype=torch.bool)
    for b, row in enumerate(m.spans):
        for s, e in row:
            inside[b, s:e + 1] = True
    z2[inside] = torch.randn_like(z2[inside])  # change everything inside the spans
    assert torch.allclose(model.sbo(z, t), model.sbo(z2, t), atol=1e-6)


def test_a_model_without_an_mlm_head_is_refused():
    from course_lib.model.bert import BertModel

    with pytest.raises(TypeError, match="needs a model with an MLM head"):
        SpanBertForPreTraining(BertModel(CFG))


@pytest.mark.slow  # training: `make test`, not the fast loop
def test_a_few_steps_bring_l_sbo_below_the_unigram_baseline():
    model = tiny().train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    baseline = torch.log(torch.tensor(50.0))  # uniform unigram over the 50 word ids
    losses = []
    for step in range(60):
        ids, m = batch(seed=step)
        # a learnable pattern: every token equals its left neighbour + 1 (mod 50), so the boundaries predict the span
        start = torch.randint(10, 60, (ids.size(0), 1), generator=torch.Generator().manual_seed(step))
        ids[:, 1:-1] = 10 + (start - 10 + torch.arange(ids.size(1) - 2)) % 50
        masked = ids.clone()
        masked[m.batch.selected] = MASK
        labels = torch.where(m.batch.selected, ids, torch.full_like(ids, -100))
        out = model(masked, torch.ones_like(ids), labels=labels, spans=m.spans)
        opt.zero_grad()
        out.loss.backward()
        opt.step()
        losses.append(out.sbo_loss.item())
    assert sum(losses[-10:]) / 10 < float(baseline) - 0.5


def test_position_gap_resamples_whole_sentences_and_measures_the_drop():
    """position_gap: a head's top-1 at one distance bucket minus another, over the tokens of long spans, with a
    bootstrap that draws whole sentences."""
    import pytest

    from course_lib.spans.sbo_run import PositionAccuracy, position_gap
    from course_lib.stats import bootstrap_indices

    # 40 sentences; the MLM head right at every edge token and never in the middle, the SBO head right at a
    # random half of the tokens wherever they are
    import random

    rng = random.Random(0)
    tokens = [(s, b, b == 0, rng.random() < 0.5) for s in range(40) for b in (0, 1, 2)]
    acc = PositionAccuracy([1, 2, 3], [], [], [], long_tokens=tokens)
    mlm = position_gap(acc, "mlm", resamples=300)
    assert (mlm.difference, mlm.low, mlm.high, mlm.n) == (1.0, 1.0, 1.0, 40)
    sbo = position_gap(acc, "sbo", resamples=300)
    assert sbo.low < 0 < sbo.high and not sbo.clear and abs(sbo.difference) < 0.3
    # each resample holds whole sentences: three tokens of each sentence drawn, or none
    sentences = [t[0] for t in tokens]
    for idx in bootstrap_indices(len(tokens), 20, seed=0, groups=sentences):
        drawn = [sentences[i] for i in idx]
        assert all(drawn.count(s) % 3 == 0 for s in set(drawn)) and len(drawn) == len(tokens)
    with pytest.raises(ValueError, match=r"^head must be 'mlm' or 'sbo', not 'nsp'$"):
        position_gap(acc, "nsp")
    with pytest.raises(ValueError, match=r"^no tokens of long spans to resample$"):
        position_gap(PositionAccuracy([1, 2, 3], [], [], []), "mlm")


def _run(sbo, unigram, mlm=5.0):
    from course_lib.spans.sbo_run import SpanBertRun

    return SpanBertRun(base="x", steps=len(sbo), train_layers=0,
                       losses=[{"step": k + 1, "mlm": mlm, "sbo": s, "unigram": u} for k, (s, u) in
                               enumerate(zip(sbo, unigram))])


def test_the_running_mean_averages_full_windows_only():
    """SpanBertRun.smoothed once averaged 1, 2, ... 9 steps for its first points, under a label saying 10: a curve
    that started from single-batch values outside the range of the smoothed data."""
    run = _run([float(k) for k in range(1, 26)], [0.0] * 25)
    got = run.smoothed("sbo", 10)
    assert len(got) == 16                       # steps 10..25
    assert got[0] == pytest.approx(5.5)         # the mean of steps 1..10, not step 1 alone
    assert got[-1] == pytest.approx(20.5)       # steps 16..25
    assert run.smoothed("sbo", 100) == [pytest.approx(13.0)]  # a window longer than the run: one full mean


def test_the_gap_below_the_unigram_loss_is_given_per_pass_through_the_pool():
    run = _run([7.0] * 4 + [6.5] * 4 + [6.0] * 2, [7.0] * 10)
    assert run.gap_by_pass(4) == [pytest.approx(0.0), pytest.approx(-0.5), pytest.approx(-1.0)]  # the last pass: 2
    with pytest.raises(ValueError, match="at least one batch"):
        run.gap_by_pass(0)
