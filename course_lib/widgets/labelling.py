"""Widgets for §11.4.3 and QA: the alignment viewer and the QA span viewer.

Thin views: the numbers come from :class:`course_lib.finetuning.ner.NerTagger` and
:class:`course_lib.finetuning.qa_reader.QAReader`, the drawing from :mod:`course_lib.views.labelling`.
"""
from __future__ import annotations

from contextlib import contextmanager

import ipywidgets as W

from ..finetuning.labelling import split_words
from ..views.common import error_html
from ..views.labelling import alignment_html, alignment_table, qa_answer_html, qa_strips, qa_svg

MT_SANITAS = ("Mt. Sanitas is in Sunshine Canyon.", "B-LOC I-LOC O O B-LOC I-LOC O")  # eq. 11.16


class _OneRedraw:
    """For a viewer whose fields each redraw it: set several of them, then redraw once, so that no view shows
    a half-changed input (a new sentence with the old gold tags, a new question with the old context)."""

    _quiet = False  # while set, _update returns at once

    @contextmanager
    def _one_redraw(self):
        self._quiet = True
        try:
            yield
        finally:
            self._quiet = False
        self._update()


class AlignmentViewer(_OneRedraw, W.VBox):
    """Type a sentence (and, optionally, its gold tags): words ↔ subwords ↔ gold labels under both alignments
    (-100 shown) ↔ predicted tags ↔ decoded entities, wrong words marked ✗.

    examples: optional (sentence, gold tags) pairs offered in a drop-down (e.g. held-out wikigold sentences).
    """

    def __init__(self, tagger, text: str = MT_SANITAS[0], gold: str = MT_SANITAS[1], examples=()):
        self.tagger = tagger
        self.examples = [MT_SANITAS] + [(" ".join(s.words), " ".join(s.tags)) if hasattr(s, "words") else s
                                        for s in examples]
        self.pick = W.Dropdown(options=[(t if len(t) < 70 else t[:67] + "…", i) for i, (t, _) in enumerate(self.examples)],
                               value=None, description="example", layout=W.Layout(width="95%"))
        self.text = W.Text(value=text, description="sentence", continuous_update=False, layout=W.Layout(width="95%"))
        self.gold = W.Text(value=gold, description="gold tags", continuous_update=False,
                           placeholder="optional: one BIO tag per word, e.g. B-LOC I-LOC O", layout=W.Layout(width="95%"))
        self.words = W.HTML()
        self.message = W.HTML()
        self.table = W.HTML()
        for w, cls in [(self.text, "align-text"), (self.gold, "align-gold"), (self.pick, "align-pick"),
                       (self.words, "align-words"), (self.message, "align-message"), (self.table, "align-table")]:
            w.add_class(cls)
        super().__init__([self.pick, self.text, self.gold, self.words, self.message, self.table])
        self.add_class("alignment-viewer")
        self.pick.observe(self._pick, "value")
        self.text.observe(self._update, "value")
        self.gold.observe(self._update, "value")
        self._update()

    def _pick(self, change):
        if change["new"] is None:
            return
        text, gold = self.examples[change["new"]]
        with self._one_redraw():
            self.text.value, self.gold.value = text, gold

    def _update(self, _change=None):
        if self._quiet:
            return
        try:
            words = split_words(self.text.value)
            if not words:
                raise ValueError("type a sentence to tag")
            gold = self.gold.value.split() or None
            if gold is not None:
                if len(gold) != len(words):
                    raise ValueError(f"{len(gold)} gold tags for {len(words)} words ({' | '.join(words)}): "
                                     "give one tag per word, or clear the gold tags")
                self.tagger.labels.encode(gold)  # unknown tags get a message
            out = self.tagger.tag(words)
            cols = alignment_table(words, out["tokens"], out["word_ids"], out["subword_tags"], gold)
        except ValueError as err:
            self.message.value = error_html(str(err))
            self.table.layout.display = "none"
            self.words.value = ""
            return
        tagged = 1 + max((i for i in out["word_ids"] if i is not None), default=-1)
        self.message.value = ("" if tagged >= len(words) else
                              f"<i>the tagger reads {len(out['tokens'])} tokens: the first {tagged} of {len(words)} "
                              "words are tagged, the rest are not shown</i>")
        self.words.value = "<span style='font-family:monospace'>words: " + " | ".join(words) + "</span>"
        self.table.layout.display = ""
        self.table.value = alignment_html(words, cols)


class QASpanViewer(_OneRedraw, W.VBox):
    """Question + context in: P(start = i) and P(end = j) over the context tokens as two aligned strips, the best
    span of at most L tokens (i ≤ j, j - i < L) shaded, and "no answer" when [CLS] wins. The decision is the
    reader's ``predict``: over every window of a long context, the window holding the chosen span is shown."""

    def __init__(self, reader, question: str = "Which canyon is Mt. Sanitas in?",
                 context: str = "Mt. Sanitas is in Sunshine Canyon, a short drive west of Boulder, Colorado.",
                 examples=()):
        self.reader = reader
        self.examples = [(question, context)] + [(e.question, e.context) if hasattr(e, "question") else e
                                                 for e in examples]
        self.pick = W.Dropdown(options=[(q if len(q) < 70 else q[:67] + "…", i) for i, (q, _) in enumerate(self.examples)],
                               value=None, description="example", layout=W.Layout(width="95%"))
        self.question = W.Text(value=question, description="question", continuous_update=False,
                               layout=W.Layout(width="95%"))
        self.context = W.Textarea(value=context, description="context", continuous_update=False,
                                  layout=W.Layout(width="95%", height="90px"))
        self.max_len = W.IntSlider(value=reader.max_answer_len, min=1, max=40, description="L (max tokens)",
                                   continuous_update=False, style={"description_width": "110px"})
        self.message = W.HTML()
        self.answer = W.HTML()
        self.strips = W.HTML(layout=W.Layout(overflow="auto"))
        for w, cls in [(self.question, "qa-question"), (self.context, "qa-context"), (self.max_len, "qa-maxlen"),
                       (self.pick, "qa-pick"), (self.message, "qa-message"), (self.answer, "qa-answer-line"),
                       (self.strips, "qa-strips-box")]:
            w.add_class(cls)
        super().__init__([self.pick, self.question, self.context, self.max_len, self.message, self.answer, self.strips])
        self.add_class("qa-span-viewer")
        self.pick.observe(self._pick, "value")
        for w in (self.question, self.context, self.max_len):
            w.observe(self._update, "value")
        self._update()

    def _pick(self, change):
        if change["new"] is None:
            return
        q, c = self.examples[change["new"]]
        with self._one_redraw():
            self.context.value, self.question.value = c, q

    def _update(self, _change=None):
        if self._quiet:
            return
        old = self.reader.max_answer_len
        try:
            self.reader.max_answer_len = int(self.max_len.value)
            view = self.reader.answer(self.question.value, self.context.value)
        except ValueError as err:
            self.message.value = error_html(str(err))
            self.strips.layout.display = "none"
            self.answer.value = ""
            return
        finally:
            self.reader.max_answer_len = old
        self.view = view
        note = (f" <i>(the context is longer than one window: the answer is chosen over all {view['windows']} "
                f"windows, and window {view.get('window', 0) + 1}, which holds the best span, is shown)</i>"
                if view["windows"] > 1 else "")
        if view.get("question_tokens", 0) > view.get("question_kept", 0):
            note += (f" <i>(the question has {view['question_tokens']} tokens: the reader reads its first "
                     f"{view['question_kept']})</i>")
        self.message.value = ""
        self.answer.value = qa_answer_html(view) + note
        self.strips.layout.display = ""
        self.strips.value = qa_svg(qa_strips(view))
