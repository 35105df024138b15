"""target_states encodes each distinct sentence once (batched by length) and gathers its targets: the same vectors
as the per-instance path (one forward per target instance, its sentence alone), at every layer, for every pooling."""
from __future__ import annotations

import re

import pytest
import torch

from course_lib.embeddings import load_sense_data, target_states
from course_lib.embeddings.states import pool, sentence_states, span_tokens


_ALONE: dict = {}


@torch.no_grad()
def per_instance(model, tok, texts, spans, pooling):
    """Today's reference: each target instance from a forward of its sentence alone (no padding, no batch).
    The forward of a sentence is remembered: the same sentence alone always gives the same states."""
    out = []
    for text, (start, end) in zip(texts, spans):
        if text not in _ALONE:
            enc = tok(text)
            H = torch.stack(model(**enc, output_hidden_states=True).hidden_states, 1)[0]  # (L+1, T, d)
            _ALONE[text] = (H, enc.offsets[0])
        H, offsets = _ALONE[text]
        v = H[:, span_tokens(offsets, start, end)]
        out.append(v[:, 0] if pooling == "first" else v.sum(1) if pooling == "sum" else v.mean(1))
    return torch.stack(out)


def every_word(sentences):
    """Several targets per sentence: every word of each sentence is a target."""
    texts, spans = [], []
    for s in sentences:
        for m in re.finditer(r"[A-Za-z]+", s):
            texts.append(s)
            spans.append(m.span())
    return texts, spans


@pytest.fixture(scope="module")
def corpus():
    data = load_sense_data()
    by_lemma = {}
    for e in data.examples:  # a few sentences of each word, of very different lengths
        by_lemma.setdefault(e.lemma, []).append(e.text)
    sentences = [ts[0] for ts in by_lemma.values()]
    sentences.append("The unaffordable, unbelievably overpriced rent near the riverbank shocked everyone who saw it.")
    return every_word(sentences)


@pytest.mark.parametrize("pooling", ["mean", "first", "sum"])
def test_same_vectors_as_one_forward_per_instance(embedded, corpus, pooling):
    model, tok = embedded
    texts, spans = corpus
    assert len(texts) > 3 * len(set(texts)), "the corpus must have several targets per sentence"
    got = target_states(model, tok, texts=texts, spans=spans, pooling=pooling, batch_size=8)
    want = per_instance(model, tok, texts, spans, pooling)
    assert got.shape == want.shape == (len(texts), model.config.num_hidden_layers + 1, model.config.hidden_size)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, want, atol=1e-5, rtol=0)


def test_order_duplicates_and_sense_examples(embedded):
    model, tok = embedded
    data = load_sense_data()
    ex = data.examples[:5] + data.examples[:2]  # repeated examples come back in place, identical
    got = target_states(model, tok, ex)
    torch.testing.assert_close(got[5:], got[:2], atol=0, rtol=0)
    want = per_instance(model, tok, [e.text for e in ex], [(e.start, e.end) for e in ex], "mean")
    torch.testing.assert_close(got, want, atol=1e-5, rtol=0)


def test_sentence_states_drop_the_padding_and_keep_the_order(embedded):
    model, tok = embedded
    texts = ["A rather longer sentence than the other one, with a comma.", "Short.", "Short."]
    out = sentence_states(model, tok, texts, batch_size=2)
    assert [H.size(0) for H, _ in out] == [tok(t).input_ids.size(1) for t in texts]
    assert [offs for _, offs in out][1] == tok("Short.").offsets[0]
    torch.testing.assert_close(out[1][0], out[2][0], atol=1e-5, rtol=0)
    v = out[0][0][1:4]  # (3 tokens, L+1, d)
    torch.testing.assert_close(pool(v, "mean"), v.mean(0))
    assert torch.equal(pool(v, "first"), v[0]) and torch.equal(pool(v, "sum"), v.sum(0))


def test_a_span_outside_the_sentence_fails_before_any_forward(embedded):
    model, tok = embedded
    calls = []
    hook = model.register_forward_hook(lambda *a: calls.append(1))
    try:
        with pytest.raises(ValueError, match=r"^no token covers characters 40-44 of 'A bank\.': is the span inside"):
            target_states(model, tok, texts=["A bank.", "A bank."], spans=[(2, 6), (40, 44)])
    finally:
        hook.remove()
    assert not calls
    with pytest.raises(ValueError, match="pooling must be one of mean, first, sum"):
        target_states(model, tok, texts=["A bank."], spans=[(2, 6)], pooling="max")
