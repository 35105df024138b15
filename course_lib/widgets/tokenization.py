"""Widget for notebook 11.1b: one text, every subword tokenizer of the notebook side by side (lecture 004, subwords):
BPE, byte-level BPE, BERT's WordPiece and Unigram (its Viterbi segmentation and a sampled one).

Thin wiring: the pieces come from course_lib.tokenization, the HTML from course_lib.views.tokenization.
"""
from __future__ import annotations

import random

import ipywidgets as W

from ..tokenization.byte_level import ByteLevelBPE
from ..tokenization.compare import CourseTokenizers
from ..views.common import error_html
from ..views.tokenization import comparison_html, merges_html

MAX_CHARS = 1000  # keeps every interaction well under 100 ms
MERGES_SHOWN = 5  # the last merges the table lists (beside the sliders: the explorer fits a 1280x720 slide)


class SubwordExplorer(W.VBox):
    """Type text → BPE / byte-level BPE / WordPiece / Unigram pieces with ids and counts; a slider over BPE's
    merges; "sample again" draws a new Unigram segmentation (subword regularization, with smoothing α).

    Byte-level BPE's pieces are shown as GPT-2 writes them: each byte as one printable character, a space as
    ``Ġ`` (so ``Ġis`` is " is"), and a character of several bytes as several characters (``ü`` is ``Ã¼``).
    The slider moves the character-level BPE only; byte-level BPE keeps all its merges."""

    def __init__(self, course: CourseTokenizers, text: str = "Mt. Sanitas is in Sunshine Canyon.",
                 alpha: float = 0.2, seed: int = 0):
        self.course = course
        self._bpe_at: dict[int, object] = {}
        self.byte_bpe = ByteLevelBPE.from_learning(course.byte_bpe)
        self.draws = 0
        self.seed = seed
        n = len(course.bpe.merges)
        self.text = W.Text(value=text, description="text", continuous_update=False, layout=W.Layout(width="95%"))
        self.merges = W.IntSlider(value=n, min=0, max=n, step=1, description="BPE merges", continuous_update=False,
                                  style={"description_width": "90px"}, layout=W.Layout(width="560px"))
        self.alpha = W.FloatSlider(value=alpha, min=0.0, max=1.0, step=0.05, description="Unigram α",
                                   continuous_update=False, readout_format=".2f",
                                   style={"description_width": "90px"}, layout=W.Layout(width="400px"))
        self.sample = W.Button(description="sample again", icon="refresh",
                               tooltip="draw another Unigram segmentation (subword regularization)")
        self.message, self.rows, self.vocab = W.HTML(), W.HTML(), W.HTML()
        for w, cls in [(self.text, "subword-text"), (self.merges, "subword-merges"), (self.alpha, "subword-alpha"),
                       (self.sample, "subword-sample"), (self.message, "subword-message"),
                       (self.rows, "subword-rows"), (self.vocab, "subword-vocab")]:
            w.add_class(cls)
        # the sliders on the left and the merges they reach on the right, above the rows: stacked, the explorer was
        # taller than a 1280x720 slide
        self.vocab.layout = W.Layout(flex="1 1 auto", min_width="0")
        controls = W.VBox([self.merges, W.HBox([self.alpha, self.sample])], layout=W.Layout(flex="0 0 auto"))
        super().__init__([self.text, W.HBox([controls, self.vocab], layout=W.Layout(align_items="flex-start",
                                                                                    width="100%")),
                          self.message, self.rows])
        self.add_class("subword-explorer")
        self.text.observe(self._update, "value")
        self.merges.observe(self._update, "value")
        self.alpha.observe(self._update, "value")
        self.sample.on_click(self._sample_again)
        self._update()

    def _bpe(self, steps: int):
        if steps not in self._bpe_at:
            if len(self._bpe_at) > 64:
                self._bpe_at.clear()
            self._bpe_at[steps] = self.course.bpe.tokenizer(steps)
        return self._bpe_at[steps]

    def _sample_again(self, _button=None):
        self.draws += 1
        self._update()

    def segmentations(self) -> list[tuple[str, object, str, int | None]]:
        """The rows shown: (name, segmentation, note, id of the unknown token)."""
        text, steps = self.text.value, self.merges.value
        bpe = self._bpe(steps)
        uni, wp = self.course.unigram.model, self.course.wordpiece
        rng = random.Random(self.seed * 1_000_003 + self.draws)
        return [
            (f"BPE ({steps:,} merges)", bpe.encode(text), "learnt from Lee news", bpe.vocab.get(bpe.unk_token)),
            (f"byte-level BPE ({len(self.course.byte_bpe.merges):,} merges)", self.byte_bpe.encode(text),
             "GPT-2's byte characters: Ġ = a space", None),
            ("WordPiece (BERT)", wp.encode(text), f"{len(wp.vocab):,} pieces", wp.vocab[wp.unk_token]),
            ("Unigram, Viterbi", uni.encode(text), f"{len(uni):,} pieces", uni.ids[uni.unk_token]),
            (f"Unigram, sample {self.draws + 1}", uni.encode(text, alpha=self.alpha.value, rng=rng),
             f"α = {self.alpha.value:.2f}", uni.ids[uni.unk_token]),
        ]

    def _update(self, _change=None):
        text = self.text.value
        if not text.strip():
            self.message.value = error_html("no text: type a sentence or a word")
            self.rows.value = ""
        elif _lone_surrogate(text) is not None:  # no UTF-8 bytes for byte-level BPE to start from
            self.message.value = error_html(f"the text holds U+{ord(_lone_surrogate(text)):04X}, half of a surrogate "
                                            "pair and no character on its own: it has no UTF-8 bytes; remove it")
            self.rows.value = ""
        elif len(text) > MAX_CHARS:
            self.message.value = error_html(f"the text has {len(text):,} characters; this explorer takes at most "
                                            f"{MAX_CHARS:,} (use the tokenizers directly for longer text)")
            self.rows.value = ""
        else:
            self.message.value = ""
            self.rows.value = comparison_html(self.segmentations(), text)
        self.vocab.value = merges_html(self.course.bpe, self.merges.value, last=MERGES_SHOWN)


def _lone_surrogate(text: str) -> str | None:
    """The first code point of ``text`` that UTF-8 cannot encode (U+D800 … U+DFFF on its own), else None."""
    return next((c for c in text if 0xD800 <= ord(c) <= 0xDFFF), None)
