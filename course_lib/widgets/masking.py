"""Widgets for §11.2: the MLM mask sampler, the fill-mask explorer and the α slider of eq. 11.7.

Thin views: the numbers come from course_lib.pretraining.masking, course_lib.pretraining.fill_mask and
course_lib.views.masking; these classes wire controls and show SVG charts and HTML (drawn in about a
millisecond, so that every interaction stays well under 100 ms). The fill-mask explorer runs the model once
per sentence, for the largest k the slider offers; moving the slider only cuts that list.
"""
from __future__ import annotations

import ipywidgets as W
import torch

from ..views.common import error_html, note_html
from ..views.masking import fates_html, language_sampling_svg, legend_html, rates_svg, token_fates, top_k_svg
from ..pretraining.masking import mlm_mask
from ..pretraining.fill_mask import MaskPrediction, fill_mask, input_notes


class MaskSampler(W.VBox):
    """Type a sentence, resample the MLM corruption, and watch the running rates converge to 15% and 80/10/10.
    "whole words" selects words rather than tokens: every piece of a selected word, with one fate for all."""

    def __init__(self, tokenizer, unigram: torch.Tensor, text: str = "Please turn your homework in before the lecture starts on Monday.",
                 seed: int = 0):
        self.tokenizer, self.unigram = tokenizer, unigram
        self.totals: dict[str, int] = {}
        self.draws = 0
        self.text = W.Text(value=text, description="text", continuous_update=False, layout=W.Layout(width="95%"))
        self.seed = W.IntText(value=seed, description="seed", layout=W.Layout(width="160px"))
        slider = dict(min=0.0, max=1.0, step=0.05, continuous_update=False, readout_format=".0%",
                      style={"description_width": "170px"}, layout=W.Layout(width="440px"))
        self.select_prob = W.FloatSlider(value=0.15, description="select (of tokens)", **slider)
        self.mask_prob = W.FloatSlider(value=0.8, description="→ [MASK] (of selected)", **slider)
        self.random_prob = W.FloatSlider(value=0.1, description="→ random (of selected)", **slider)
        self.whole_word = W.Checkbox(value=False, description="whole words", indent=False,
                                     tooltip="select whole words: every WordPiece of a selected word, one fate for all")
        self.resample = W.Button(description="resample", icon="refresh", tooltip="next seed, one more draw")
        self.many = W.Button(description="draw 100 more", tooltip="add 100 draws to the running histogram")
        self.tokens = W.HTML()
        self.message = W.HTML()
        self.histogram = W.Image(format="svg+xml", layout=W.Layout(align_self="flex-start"))  # native size
        for w, cls in [(self.text, "sampler-text"), (self.resample, "sampler-resample"), (self.many, "sampler-many"),
                       (self.tokens, "sampler-tokens"), (self.message, "sampler-message"),
                       (self.histogram, "sampler-histogram"), (self.select_prob, "sampler-select"),
                       (self.seed, "sampler-seed"), (self.whole_word, "sampler-whole-word")]:
            w.add_class(cls)
        super().__init__([self.text, W.HBox([self.seed, self.resample, self.many, self.whole_word]), self.select_prob, self.mask_prob,
                          self.random_prob, W.HTML(legend_html()), self.tokens, self.message, self.histogram])
        self.add_class("mask-sampler")
        for w in (self.text, self.select_prob, self.mask_prob, self.random_prob, self.whole_word):
            w.observe(self._reset, "value")
        self.seed.observe(lambda _: self._draw(1), "value")
        self.resample.on_click(lambda _: setattr(self.seed, "value", self.seed.value + 1))
        self.many.on_click(lambda _: self._draw(100, show_last=False))
        self._reset()

    def _reset(self, _change=None):
        self.totals, self.draws = {}, 0
        self._draw(1)

    def _draw(self, n: int, show_last: bool = True):
        try:
            enc = self.tokenizer(self.text.value)
            g = torch.Generator().manual_seed(int(self.seed.value) * 1_000_003 + self.draws)
            batch = None
            for _ in range(n):
                batch = mlm_mask(enc.input_ids, special_ids=self.tokenizer.special_ids,
                                 mask_token_id=self.tokenizer.mask_token_id, unigram=self.unigram,
                                 select_prob=self.select_prob.value, mask_prob=self.mask_prob.value,
                                 random_prob=self.random_prob.value, generator=g,
                                 whole_word=self.whole_word.value, word_ids=enc.word_ids)
                for k, v in batch.counts().items():
                    self.totals[k] = self.totals.get(k, 0) + v
                self.draws += 1
            if not self.totals.get("eligible"):
                raise ValueError("this text has no token that can be selected: [CLS], [SEP], [MASK] and [UNK] are "
                                 "special tokens, never selected (an emoji is [UNK] to this tokenizer); type some words")
        except ValueError as err:
            self.message.value = error_html(str(err))
            self.tokens.value = ""  # nothing left from the previous text
            self.histogram.layout.display = "none"
            self.totals, self.draws = {}, 0
            return
        self.message.value = ""
        self.last = batch  # the last draw (its selection, fates and labels)
        if show_last:
            self.tokens.value = fates_html(token_fates(batch, self.tokenizer))
        self.histogram.layout.display = ""
        self.histogram.value = rates_svg(self.totals, self.draws)


class FillMaskExplorer(W.VBox):
    """Type a sentence with one or more [MASK]; see the model's top-k tokens and their probabilities (and a note when
    a piece of the text is outside the vocabulary, or a special token is typed: the model does not read those as
    typed)."""

    def __init__(self, model, tokenizer, text: str = "She opened the [MASK] and walked in.", top_k: int = 5):
        self.model, self.tokenizer = model, tokenizer
        self.text = W.Text(value=text, description="text", continuous_update=False, layout=W.Layout(width="95%"))
        self.top_k = W.IntSlider(value=top_k, min=1, max=15, description="top k", continuous_update=False)
        self._top: dict[str, list] = {}  # text -> predictions for the slider's largest k (the last few texts)
        self.message = W.HTML()
        self.chart = W.Image(format="svg+xml", layout=W.Layout(align_self="flex-start"))  # native size
        for w, cls in [(self.text, "fillmask-text"), (self.top_k, "fillmask-k"), (self.message, "fillmask-message"),
                       (self.chart, "fillmask-chart")]:
            w.add_class(cls)
        super().__init__([self.text, self.top_k, self.message, self.chart])
        self.add_class("fill-mask-explorer")
        self.text.observe(self._update, "value")
        self.top_k.observe(self._update, "value")
        self._update()

    def _update(self, _change=None):
        try:
            top = self._predictions(self.text.value)
        except ValueError as err:  # no [MASK], empty or over-long text, no MLM head
            self.message.value = error_html(str(err))
            self.chart.layout.display = "none"
            return
        k = self.top_k.value
        self.predictions = [MaskPrediction(p.position, p.tokens[:k], p.probs[:k]) for p in top]
        self.message.value = "<br>".join(note_html(n) for n in input_notes(self.tokenizer, self.text.value))
        self.chart.layout.display = ""
        self.chart.value = top_k_svg(self.predictions)

    def _predictions(self, text: str):
        """fill_mask for the slider's largest k, once per text (the first k of them are fill_mask's top k)."""
        if text not in self._top:
            if len(self._top) >= 16:
                self._top.pop(next(iter(self._top)))
            self._top[text] = fill_mask(self.model, self.tokenizer, text, top_k=self.top_k.max)
        return self._top[text]


class LanguageSampler(W.VBox):
    """Eq. 11.7 with a slider for α: how much more often small languages are sampled than their data share."""

    def __init__(self, names: list[str], counts: list[float], alpha: float = 0.3):
        from ..pretraining.multilingual import language_sampling_probs

        names, counts = list(names), list(counts)
        if len(names) != len(counts) or not names:
            raise ValueError(f"LanguageSampler needs one count per language: got {len(names)} name(s) and "
                             f"{len(counts)} count(s)")
        language_sampling_probs(counts, alpha)  # counts that eq. 11.7 cannot use are refused here, with why
        self.names, self.counts = names, counts
        self.alpha = W.FloatSlider(value=alpha, min=0.05, max=1.0, step=0.05, description="α",
                                   continuous_update=False, readout_format=".2f")
        self.chart = W.Image(format="svg+xml", layout=W.Layout(align_self="flex-start"))  # native size
        self.alpha.add_class("sampler-alpha")
        self.chart.add_class("sampler-alpha-chart")
        super().__init__([self.alpha, self.chart])
        self.add_class("language-sampler")
        self.alpha.observe(self._update, "value")
        self._update()

    def _update(self, _change=None):
        self.chart.value = language_sampling_svg(self.names, self.counts, self.alpha.value)
