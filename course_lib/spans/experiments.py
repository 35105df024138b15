"""The runs of notebook 11.5: span NER vs a BIO tagger on nested entities, and a short SpanBERT (MLM + SBO) run.

Both NER models read the same frozen states -- the output of the first :data:`FEATURE_LAYER` blocks of the
embedded all-MiniLM-L6-v2 (:func:`truncated_encoder`), computed once per sentence and cached on disk by
:func:`course_lib.finetuning.frozen.frozen_states` -- and only their heads train, with
:func:`course_lib.finetuning.training.fit` (cached by config + model + data): the span classifier of eq. 11.27
(:class:`SpanNERModel`) and notebook 11.4b's BIO tagger (:class:`~course_lib.finetuning.ner.NerTagger`, W_K of
eq. 11.14 on every token), trained on the outermost entities because BIO holds one layer (:func:`tagged`).
:func:`compare` scores both at the span level, nested and flat.
The short SpanBERT run (MLM + SBO) is in :mod:`course_lib.spans.sbo_run`, re-exported here.
"""
from __future__ import annotations

import contextlib
import copy
import functools
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from ..finetuning.conll import TaggedSentence
from ..finetuning.frozen import FromLayer, frozen_states, num_layers, pad_states
from ..finetuning.labelling import LabelSet, encode_words
from ..finetuning.ner import NerTagger
from ..finetuning.ner_eval import get_entities
from ..finetuning.training import TrainConfig, fit
from ..model.tagging import BertForTokenClassification
from .ner import (GUM_TYPES, enumerate_spans, SpanLabels, SpanNERClassifier, SpanNEROutput, SpanSentence, bio_tags, decode_flat,
                  decode_spans, nesting_depths, outermost, span_labels, span_scores, word_token_spans)

CACHE_VERSION = 1


# ----------------------------------------------------------------------------- a frozen encoder, cut at a layer

FEATURE_LAYER = 4  # the heads read the states after block 4 of the embedded encoder's 6


def truncated_encoder(encoder, layers: int = FEATURE_LAYER):
    """The first ``layers`` blocks of ``encoder`` as an encoder of its own (parameters shared, not copied).

    Both NER models read frozen states of a middle layer: all-MiniLM-L6-v2 was fine-tuned for sentence similarity
    as a whole, not only in its last layer (notebook 11.3 shows how its layers differ), and stopping early saves
    the time of the blocks above.
    """
    encoder = getattr(encoder, "bert", encoder)
    n = len(encoder.encoder.layer)
    if not 1 <= layers <= n:
        raise ValueError(f"layers must be between 1 and {n}, not {layers}")
    cut = copy.copy(encoder)  # a new module object over the same submodules
    cut._modules = dict(encoder._modules)
    inner = copy.copy(encoder.encoder)
    inner._modules = dict(encoder.encoder._modules)
    inner.layer = nn.ModuleList(list(encoder.encoder.layer)[:layers])
    cut.encoder = inner
    return cut


def tagged(sentences: Sequence[SpanSentence]) -> tuple[list[TaggedSentence], int]:
    """BIO versions of nested sentences for a tagger: the outermost entities only (BIO holds one layer); returns
    them and how many entities had to be left out."""
    out, lost = [], 0
    for s in sentences:
        keep, dropped = outermost(s.entities)
        lost += len(dropped)
        out.append(TaggedSentence(s.words, tuple(bio_tags(len(s), keep))))
    return out, lost


# ----------------------------------------------------------------------------- span NER on frozen states

class SpanNERModel(nn.Module):
    """An encoder (``bert``) and the span classifier (``head``, eq. 11.27): the shape
    :class:`~course_lib.finetuning.frozen.FromLayer` trains from cached states."""

    def __init__(self, encoder, labels: SpanLabels, representation: str = "learned", **kw):
        super().__init__()
        self.bert = encoder
        self.classifier = SpanNERClassifier(encoder.config.hidden_size, labels, representation, **kw)
        self.labels = labels

    def head(self, z: torch.Tensor, spans: torch.Tensor, labels: torch.Tensor | None = None) -> SpanNEROutput:
        return self.classifier(z, spans, labels)


@dataclass
class SpanExample:
    """One sentence ready for the span classifier: frozen states (T, d), its word spans up to the length limit,
    their token spans and gold class ids."""

    hidden: torch.Tensor
    word_spans: list
    token_spans: list
    labels: list


def encode_for_spans(encoder, tokenizer, sentences: Sequence[SpanSentence], max_length: int = 128):
    """Token ids and word ids of pre-split sentences, as :class:`~course_lib.finetuning.ner.NerTagger` makes them
    (so both models share the cached frozen states)."""
    enc = encode_words(tokenizer, [list(s.words) for s in sentences], max_length=max_length, truncation=True)
    lengths = enc.attention_mask.sum(1).tolist()
    return [enc.input_ids[b, :n].tolist() for b, n in enumerate(lengths)], [enc.word_ids[b][:n]
                                                                            for b, n in enumerate(lengths)]


def span_examples(model: SpanNERModel, tokenizer, sentences: Sequence[SpanSentence], max_len: int,
                  progress: bool = False) -> list[SpanExample]:
    """Frozen states (cached, :func:`~course_lib.finetuning.frozen.frozen_states`) and every span up to ``max_len``
    words with its gold label. Words cut off by the 128-token limit take no part."""
    ids, word_ids = encode_for_spans(model.bert, tokenizer, sentences)
    states = frozen_states(model.bert, ids, start=num_layers(model.bert), progress=progress)
    out = []
    for s, h, wids in zip(sentences, states, word_ids):
        n_words = len({w for w in wids if w is not None})
        if n_words < len(s):
            s = SpanSentence(s.words[:n_words], [e for e in s.entities if e[1] < n_words], s.doc)
        spans, y = span_labels(s, model.labels, max_len)
        out.append(SpanExample(h, spans, word_token_spans(wids, spans), y))
    return out


def collate_spans(batch: Sequence[SpanExample], null_share: float = 1.0) -> dict:
    """hidden (B, T, d), attention_mask (B, T), spans (N, 3) rows (b, first_token, last_token), labels (N,).

    ``null_share`` < 1 keeps only that share of the NULL spans (drawn with torch's generator, which ``fit``
    seeds every epoch): most spans are NULL, and a sample of them teaches the same at a fraction of the cost.
    """
    hidden, mask = pad_states([ex.hidden for ex in batch])
    rows, ys = [], []
    for b, ex in enumerate(batch):
        keep = torch.rand(len(ex.labels)) < null_share if null_share < 1 else None
        for k, ((i, j), y) in enumerate(zip(ex.token_spans, ex.labels)):
            if y or keep is None or keep[k]:
                rows.append((b, i, j))
                ys.append(y)
    return {"hidden": hidden, "attention_mask": mask, "spans": torch.tensor(rows, dtype=torch.long).view(-1, 3),
            "labels": torch.tensor(ys, dtype=torch.long)}


def training_collate(null_share: float):
    return functools.partial(collate_spans, null_share=null_share)


def _head_device(model: SpanNERModel) -> torch.device:
    return next(model.classifier.parameters()).device


def predict_spans(model: SpanNERModel, examples: Sequence[SpanExample], batch_size: int = 64) -> list[torch.Tensor]:
    """The (N_s, K) class probabilities of every span of every sentence."""
    wrapped = FromLayer(model, num_layers(model.bert)).eval()
    dev = _head_device(model)  # no encoder block runs: the cached states go where the classifier is
    out = []
    with torch.no_grad(), one_thread():
        for k in range(0, len(examples), batch_size):
            chunk = examples[k:k + batch_size]
            batch = collate_spans(chunk)
            probs = wrapped(batch["hidden"].to(dev), batch["attention_mask"].to(dev),
                            spans=batch["spans"].to(dev)).logits.softmax(-1).cpu()
            out += list(probs.split([len(ex.token_spans) for ex in chunk]))
    return out


SPAN_CONFIG = TrainConfig(lr=2e-3, epochs=6, batch_size=16, warmup_ratio=0.05, seed=0)
NULL_SHARE = 0.3


@contextlib.contextmanager
def one_thread():
    """Run the small matrix products of a head in one CPU thread: for matrices this size a second thread costs
    more in synchronisation than it saves (measured: 3x the CPU time on 2 cores)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def train_span_ner(model: SpanNERModel, train: Sequence[SpanExample], config: TrainConfig = SPAN_CONFIG,
                   null_share: float = NULL_SHARE, progress: bool = True, cache: bool = True, **kw):
    """Train the span classifier on the frozen states with ``fit`` (cached; on the CPU, in one thread); returns
    the run."""
    for p in model.bert.parameters():
        p.requires_grad_(False)
    wrapped = FromLayer(model, num_layers(model.bert))
    where = model.bert.device  # fit trains on the CPU and moves the encoder with it: give it back afterwards
    with one_thread():
        run = fit(wrapped, list(train), training_collate(null_share), config, name=f"span-ner-{model.classifier.span_rep.kind}",
                  device="cpu", cache=cache, progress=progress, cache_extra={"null_share": null_share},
                  length=lambda ex: ex.hidden.size(0), **kw)
    model.bert.to(where)  # the encoder is shared with the caller's model: leave it on its device (the head stays)
    model.eval()
    return run


def span_predictions(model: SpanNERModel, examples: Sequence[SpanExample], threshold: float | None = None):
    """Decoded entities (i, j, type, probability) of each sentence, nested ones included."""
    probs = predict_spans(model, examples)
    return [decode_spans(p, ex.word_spans, model.labels, threshold) for p, ex in zip(probs, examples)]


def span_scorer(model: SpanNERModel, tokenizer, max_len: int = 10):
    """A function words -> (spans, probs, names) for the span enumerator widget: every word span up to
    ``max_len`` words, its (N, K) class probabilities from the trained classifier, and the class names."""
    def score(words):
        enc = encode_words(tokenizer, list(words), max_length=128, truncation=True)
        covered = 1 + max((w for w in enc.word_ids[0] if w is not None), default=-1)
        if enc.input_ids.shape[-1] >= 128 and covered < len(words):  # cut at the limit: say so
            n = len(tokenizer.backend.encode(" ".join(words), add_special_tokens=False).ids)
            raise ValueError(f"the sentence has {n} subword tokens, and the span model reads at most 126 "
                             "(128 with [CLS] and [SEP]): type a shorter sentence")
        spans = enumerate_spans(len(words), max_len)
        rows = torch.tensor([(0, i, j) for i, j in word_token_spans(enc.word_ids[0], spans)], dtype=torch.long)
        with torch.no_grad():
            # the encoder and the head may sit apart: train_span_ner trains the head on the CPU, and a tagger's
            # fit on the same encoder moves it to the GPU
            dev = model.bert.device
            z = model.bert(enc.input_ids.to(dev), enc.attention_mask.to(dev),
                           output_hidden_states=False).last_hidden_state
            probs = model.classifier(z.to(_head_device(model)), rows).logits.softmax(-1).cpu()  # (N, K)
        return spans, probs, model.labels.names
    model.eval()
    return score


def bio_predictions(tagger, sentences: Sequence[SpanSentence]) -> list[list[tuple[int, int, str]]]:
    """Entities (first_word, last_word, type) that a BIO tagger (NerTagger) finds, read from its word tags."""
    tags = tagger.predict([TaggedSentence(s.words, ("O",) * len(s)) for s in sentences])
    return [[(a, b, t) for t, a, b in get_entities(ts)] for ts in tags]


def build_bio_tagger(encoder, tokenizer, types=GUM_TYPES, seed: int = 0):
    """A :class:`~course_lib.finetuning.ner.NerTagger` (11.4b's BIO tagger: W_K on every token, first-subword
    training labels and decoding) over ``encoder`` with its head alone trained (``train_layers=0``)."""
    torch.manual_seed(seed)
    labels = LabelSet(types)
    return NerTagger(BertForTokenClassification(encoder, len(labels)), tokenizer, labels, "first", 0)


BIO_CONFIG = TrainConfig(lr=1e-4, epochs=6, batch_size=16, warmup_ratio=0.05, seed=0,
                         lr_overrides=(("model.classifier.", 1e-2),))


# ----------------------------------------------------------------------------- the comparison

@dataclass
class Comparison:
    """Span-level scores of the span model and the BIO tagger on held-out sentences."""

    nested: dict          # all gold entities: {"span": Scores, "bio": Scores}
    flat: dict            # outermost gold only; the span model decoded greedily without overlaps
    inner_recall: dict    # recall on entities inside another entity (depth ≥ 2)
    outer_recall: dict    # recall on depth-1 entities
    n_inner: int          # held-out entities that a BIO tagger cannot represent
    n_gold: int
    unreachable: int      # held-out entities longer than the span model's length limit
    inner_found: dict     # how many of the n_inner entities each model finds
    inner_with_outer: dict  # ... found together with a gold entity around them (BIO cannot: its spans never nest)

    def table(self) -> str:
        rows = [("all entities (nested)", self.nested), ("outermost only (flat)", self.flat)]
        lines = [f"{'':24s} {'span model':^30s} | {'BIO tagger':^30s}"]
        for name, d in rows:
            lines.append(f"{name:24s} " + " | ".join(
                f"P {d[m].precision:6.1%} R {d[m].recall:6.1%} F1 {d[m].f1:6.1%}" for m in ("span", "bio")))
        for name, d in (("recall, depth 1", self.outer_recall), ("recall, depth ≥ 2", self.inner_recall)):
            lines.append(f"{name:24s} {'R ' + format(d['span'], '6.1%'):^30s} | {'R ' + format(d['bio'], '6.1%'):^30s}")
        lines.append(f"{'inner entities found':24s} " + " | ".join(
            f"{f'{self.inner_found[m]} of {self.n_inner}, {self.inner_with_outer[m]} with their enclosing one':^30s}"
            for m in ("span", "bio")))
        lines.append(f"{self.n_inner} of {self.n_gold} held-out entities sit inside another one: a BIO tagger "
                     f"cannot represent them; {self.unreachable} are longer than the span model's limit")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.table()


def inner_hits(sentences: Sequence[SpanSentence], pred) -> list[tuple[int, tuple, list, bool]]:
    """Every gold entity inside another gold entity that ``pred`` (the predicted entities of each sentence) finds:
    (sentence index, the entity, the gold entities around it, whether one of those is predicted too). A BIO
    tagger's entities never nest, so for it the last field is always False."""
    out = []
    for n, (s, p) in enumerate(zip(sentences, pred)):
        found = {tuple(x[:3]) for x in p}
        gold = [tuple(x[:3]) for x in s.entities]
        for g in gold:
            around = [o for o in gold if o[0] <= g[0] and g[1] <= o[1] and o[:2] != g[:2]]
            if around and g in found:
                out.append((n, g, around, any(o in found for o in around)))
    return out


def compare(sentences: Sequence[SpanSentence], span_pred, bio_pred, max_len: int) -> Comparison:
    """Score both models' entities against the gold entities: nested (all), flat (outermost only; the span
    model decoded with :func:`~course_lib.spans.ner.decode_flat`), and recall by nesting depth."""
    gold = [list(s.entities) for s in sentences]
    outer = [outermost(g)[0] for g in gold]
    inner = [outermost(g)[1] for g in gold]
    flat_span = [decode_flat(p) for p in span_pred]
    depths = [d for g in gold for d in nesting_depths(g)]
    return Comparison(
        nested={"span": span_scores(gold, span_pred), "bio": span_scores(gold, bio_pred)},
        flat={"span": span_scores(outer, flat_span), "bio": span_scores(outer, bio_pred)},
        inner_recall={"span": span_scores(inner, span_pred).recall, "bio": span_scores(inner, bio_pred).recall},
        outer_recall={"span": span_scores(outer, span_pred).recall, "bio": span_scores(outer, bio_pred).recall},
        n_inner=sum(1 for d in depths if d > 1), n_gold=len(depths),
        unreachable=sum(1 for g in gold for a, b, _ in g if b - a >= max_len),
        inner_found={m: len(inner_hits(sentences, p)) for m, p in (("span", span_pred), ("bio", bio_pred))},
        inner_with_outer={m: sum(h[3] for h in inner_hits(sentences, p)) for m, p in (("span", span_pred),
                                                                                    ("bio", bio_pred))},
    )


from .sbo_run import (PositionAccuracy, SpanBertRun, position_gap, sbo_base_model_name, sbo_position_accuracy,  # noqa: E402,F401
                      train_spanbert)
