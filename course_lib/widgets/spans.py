"""Widgets for §11.5: the span mask sampler and the span enumerator.

Thin wiring: the numbers come from :mod:`course_lib.spans` (masking, enumeration) and a span scorer
(:func:`course_lib.spans.experiments.span_scorer`), the drawings from :mod:`course_lib.views.spans`.
"""
from __future__ import annotations

import ipywidgets as W
import torch

from ..finetuning.conll import split_words  # the one word splitter of the widgets (the alignment viewer's too)
from ..spans.masking import sample_span_lengths, span_length_distribution, span_mask
from ..spans.ner import count_spans
from ..views.common import error_html
from ..views.masking import legend_html
from ..views.spans import length_histogram_svg, nested_spans_svg, span_mask_html, span_table_html


MAX_SEED = 2**31 - 1  # the seed box takes 0 … MAX_SEED


class SpanMaskSampler(W.VBox):
    """Type a sentence, resample SpanBERT's masking, change p and the bound; the histogram compares the span
    lengths drawn so far with the exact distribution."""

    def __init__(self, tokenizer, unigram: torch.Tensor,
                 text: str = "So long and thanks for all the fish, said the dolphins as they left the Earth for good.",
                 seed: int = 0):
        self.tokenizer, self.unigram = tokenizer, unigram
        self.counts: list[int] = []
        self.text = W.Text(value=text, description="text", continuous_update=False, layout=W.Layout(width="95%"))
        self.seed = W.BoundedIntText(value=seed, min=0, max=MAX_SEED, description="seed",  # out of range: clamped
                                     layout=W.Layout(width="160px"))
        self.p = W.FloatSlider(value=0.2, min=0.05, max=0.9, step=0.05, description="p (geometric)",
                               continuous_update=False, style={"description_width": "110px"})
        self.max_len = W.IntSlider(value=10, min=1, max=20, description="bound ℓ_max", continuous_update=False,
                                   style={"description_width": "110px"})
        self.resample = W.Button(description="resample", icon="refresh", tooltip="next seed")
        self.more = W.Button(description="draw 1,000 lengths", tooltip="add 1,000 span lengths to the histogram")
        self.tokens = W.HTML()
        self.message = W.HTML()
        self.histogram = W.HTML()
        for w, cls in [(self.text, "spansampler-text"), (self.seed, "spansampler-seed"),
                       (self.resample, "spansampler-resample"), (self.more, "spansampler-more"),
                       (self.p, "spansampler-p"), (self.max_len, "spansampler-max"),
                       (self.tokens, "spansampler-tokens"), (self.message, "spansampler-message"),
                       (self.histogram, "spansampler-histogram")]:
            w.add_class(cls)
        super().__init__([self.text, W.HBox([self.seed, self.resample, self.more]), self.p, self.max_len,
                          W.HTML(legend_html()), self.tokens, self.message, self.histogram])
        self.add_class("span-mask-sampler")
        self.text.observe(lambda _: self._mask(), "value")
        self.seed.observe(lambda _: self._mask(), "value")
        for w in (self.p, self.max_len):
            w.observe(self._reset, "value")
        self.resample.on_click(lambda _: setattr(self.seed, "value", (self.seed.value + 1) % (MAX_SEED + 1)))
        self.more.on_click(lambda _: self._draw(1000))
        self._reset()

    def _reset(self, _change=None):
        self.counts = [0] * self.max_len.value
        self._draws = 0
        self._mask()
        self._draw(1000)

    def _draw(self, n: int):
        try:
            g = torch.Generator().manual_seed((int(self.seed.value) * 7919 + self._draws) % 2**63)
            lengths = sample_span_lengths(n, self.p.value, self.max_len.value, generator=g)
        except (ValueError, RuntimeError, OverflowError) as err:  # never raise: say it in the widget
            self.histogram.value = error_html(f"no lengths drawn: {err}")
            return
        for k, c in enumerate(torch.bincount(lengths, minlength=self.max_len.value + 1)[1:].tolist()):
            self.counts[k] += c
        self._draws += 1
        probs = span_length_distribution(self.p.value, self.max_len.value).tolist()
        mean = sum((k + 1) * q for k, q in enumerate(probs))
        self.histogram.value = length_histogram_svg(
            self.counts, probs, title=f"p = {self.p.value:.2f}, ℓ_max = {self.max_len.value}: exact mean {mean:.2f} words")

    def _mask(self):
        try:
            limit = self.tokenizer.model_max_length
            n = len(self.tokenizer.backend.encode(self.text.value).ids)  # with [CLS] and [SEP]
            if n > limit:  # advice for the widget's user, who cannot pass truncation=True
                raise ValueError(f"the text has {n} tokens (counting [CLS] and [SEP]) and the model reads at most "
                                 f"{limit}: shorten the text to at most {limit} tokens, by deleting {n - limit} or more "
                                 "(a word is one token or more)")
            enc = self.tokenizer(self.text.value)
            m = span_mask(enc.input_ids, enc.word_ids, special_ids=self.tokenizer.special_ids,
                          mask_token_id=self.tokenizer.mask_token_id, unigram=self.unigram, p=self.p.value,
                          max_len=self.max_len.value, generator=int(self.seed.value))
        except (ValueError, TypeError, RuntimeError, OverflowError) as err:
            self.message.value = error_html(str(err))
            self.tokens.value = ""
            return
        original = enc.tokens[0]
        shown = self.tokenizer.convert_ids_to_tokens(m.input_ids[0])
        n_spans = len(m.spans[0])
        covered = int(m.batch.selected.sum())
        eligible = int(m.batch.eligible.sum())
        if n_spans:
            advice = ""
        elif not eligible and any(w is not None for w in enc.word_ids[0]):  # words, but each became [UNK]
            advice = (": every token is [UNK] (emoji, unknown characters, words over 100 characters), and [UNK] is "
                      "never masked: type ordinary words")
        else:
            advice = f": 15% of {eligible} token(s) rounds to no span; type a longer text to see spans"
        self.message.value = (f"{n_spans} span(s), {covered} of {eligible} tokens ({covered / max(eligible, 1):.0%}; "
                              "target 15%)" + advice)
        self.tokens.value = span_mask_html(original, shown, m.spans[0], m.fates[0])


class SpanEnumerator(W.VBox):
    """Type a sentence; every span up to the length limit L is listed with the classifier's best label and its
    probability, the predicted entities are drawn as stacked brackets, and the span counts are given.

    scorer(words) -> (spans, probs, names): all word spans up to ``max_limit`` words, their (N, K) class
    probabilities and the class names (NULL first); see :func:`course_lib.spans.experiments.span_scorer`.
    """

    def __init__(self, scorer, text: str = "Jane Villanueva of United Airlines Holding discussed the merger .",
                 max_len: int = 8, max_limit: int = 10):
        self.scorer, self.max_limit = scorer, max_limit
        self._cache: tuple | None = None
        self.text = W.Text(value=text, description="sentence", continuous_update=False, layout=W.Layout(width="95%"))
        self.limit = W.IntSlider(value=max_len, min=1, max=max_limit, description="length limit L",
                                 continuous_update=False, style={"description_width": "110px"})
        self.counts = W.HTML()
        self.message = W.HTML()
        self.brackets = W.HTML()
        self.table = W.HTML()
        for w, cls in [(self.text, "enumerator-text"), (self.limit, "enumerator-limit"), (self.counts, "enumerator-counts"),
                       (self.message, "enumerator-message"), (self.brackets, "enumerator-brackets"),
                       (self.table, "enumerator-table")]:
            w.add_class(cls)
        super().__init__([self.text, self.limit, self.counts, self.message, self.brackets, self.table])
        self.add_class("span-enumerator")
        self.text.observe(self._update, "value")
        self.limit.observe(self._update, "value")
        self._update()

    def _scores(self, words):
        key = tuple(words)
        if self._cache is None or self._cache[0] != key:
            self._cache = (key, *self.scorer(words))
        return self._cache[1:]

    def _update(self, _change=None):
        words = split_words(self.text.value)
        if not words:
            self.message.value = error_html("type a sentence: there are no words to make spans from")
            self.brackets.value = self.table.value = self.counts.value = ""
            return
        try:
            spans, probs, names = self._scores(words)
        except ValueError as err:
            self.message.value = error_html(str(err))
            self.brackets.value = self.table.value = self.counts.value = ""
            return
        self.message.value = ""
        L = self.limit.value
        T = len(words)
        self.counts.value = (f"<b>T = {T}</b> words: T(T+1)/2 = <b>{count_spans(T):,}</b> spans in all; with L = {L}: "
                             f"<b>{count_spans(T, L):,}</b>")
        rows, entities, eprobs = [], [], []
        for (i, j), p in zip(spans, probs):
            if j - i >= L:
                continue
            k = int(p.argmax())
            rows.append((i, j, names[k], float(p[k])))
            if k != 0:
                entities.append((i, j, names[k]))
                eprobs.append(float(p[k]))
        rows.sort(key=lambda r: (r[2] == "NULL", -r[3] if r[2] != "NULL" else r[3]))
        self.brackets.value = nested_spans_svg(words, entities, probs=eprobs) if entities else \
            "<i>no span is labelled as an entity</i>"
        self.table.value = span_table_html(words, rows)
