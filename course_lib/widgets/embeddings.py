"""Widgets for §11.3: UMAP sense clusters, nearest-neighbour WSD, anisotropy and z-scoring.

Thin views: the numbers come from course_lib.embeddings and course_lib.views.embeddings;
these classes wire controls and show SVG and HTML.

Compute once, draw cheaply: the WSD explorer encodes a sentence once (every word of it is then a lookup) and
fits its sense centroids for every layer choice when it is built; the sense clusters derive another subword
pooling from the mean states they are given (encoding only the few targets split into several tokens) and cache
every projection; the anisotropy explorer computes every layer's statistics when it is built; the charts are
SVG, written in about a millisecond. A setting shown for the first time may take longer: the widget says
"computing…" meanwhile.
"""
from __future__ import annotations

import html

import ipywidgets as W
import torch

from ..embeddings import (POOLINGS, NearestSenseWSD, ZScorer, combine_layers, dimension_report, layer_name, pair_cosines,
                          umap_project)
from ..embeddings.geometry import top_dimensions_label
from ..embeddings.wsd import typical_floor
from ..embeddings.states import PoolingCache, find_word, pool, sentence_states, span_tokens
from ..views.embeddings import (anisotropy_svg, find_lemma, marked_html, neighbours_html, sense_scatter_svg,
                                sense_scores_svg, sentence_words, wsd_readout)
from ..views.common import error_html
from ..embeddings.senses import SenseData


def _layer_options(n_layers: int) -> list[tuple[str, object]]:
    return [(layer_name(l), l) for l in range(n_layers)] + [("mean of last 4", "last4_mean"),
                                                             ("sum of last 4", "last4_sum")]


BUSY = "<span class='busy' style='color:#555'>computing…</span>"


class SenseClusters(W.VBox):
    """Fig. 11.7 live: every sentence of one word, projected to 2-D with UMAP, coloured and shaped by sense.

    Hover a point to read its sentence, or pick a sentence below to ring its point.
    """

    def __init__(self, model, tokenizer, data: SenseData, *, states: dict[str, torch.Tensor] | None = None,
                 word: str = "bank", layer="last4_mean", pooling: str = "mean", n_neighbors: int = 15):
        self.data = data
        self.examples = data.examples
        self.states = PoolingCache(model, tokenizer, self.examples, states)
        n_layers = model.config.num_hidden_layers + 1
        self.word = W.Dropdown(options=data.lemmas, value=word, description="word")
        self.layer = W.Dropdown(options=_layer_options(n_layers), value=layer, description="layer")
        self.pooling = W.Dropdown(options=list(POOLINGS), value=pooling, description="subwords",
                                  tooltip="how the subword tokens of a word are pooled")
        self.n_neighbors = W.IntSlider(value=n_neighbors, min=2, max=50, description="n_neighbors",
                                       continuous_update=False)
        self.point = W.Dropdown(description="sentence", layout=W.Layout(width="95%"))
        self.plot = W.HTML()
        self.sentence = W.HTML()
        self.message = W.HTML()
        for w, cls in [(self.word, "clusters-word"), (self.layer, "clusters-layer"), (self.pooling, "clusters-pooling"),
                       (self.n_neighbors, "clusters-neighbors"), (self.point, "clusters-point"),
                       (self.plot, "clusters-plot"), (self.sentence, "clusters-sentence"),
                       (self.message, "clusters-message")]:
            w.add_class(cls)
        # the controls in a column beside the plot, the sentence below: stacked, the widget and its cell were taller
        # than a 1280x720 slide
        controls = W.VBox([self.word, self.layer, self.pooling, self.n_neighbors, self.message],
                          layout=W.Layout(flex="0 0 auto", width="330px"))
        super().__init__([W.HBox([controls, self.plot], layout=W.Layout(align_items="flex-start")), self.point,
                          self.sentence])
        self.add_class("sense-clusters")
        self._shown: set[tuple] = set()  # the settings projected so far (then only read from caches)
        for w in (self.word, self.layer, self.pooling, self.n_neighbors):
            w.observe(self._project, "value")
        self.point.observe(self._show_point, "value")
        self._project()

    def _setting(self) -> tuple:
        return self.word.value, self.layer.value, self.pooling.value, self.n_neighbors.value

    def _project(self, _change=None):
        idx = [i for i, e in enumerate(self.examples) if e.lemma == self.word.value]
        self.idx = idx
        if self._setting() not in self._shown or not self.states.ready(self.pooling.value, idx):
            self.message.value = BUSY  # a projection (and maybe a pooling) not computed yet: 0.1-1 s
        try:
            X = combine_layers(self.states(self.pooling.value, idx), self.layer.value)
            self.projection = umap_project(X, n_neighbors=self.n_neighbors.value)
        except (ValueError, IndexError) as err:
            self.message.value = error_html(str(err))
            return
        self._shown.add(self._setting())
        self.message.value = ("" if not self.projection.cached else
                              "<span style='color:#555'>(projection from the cache)</span>")
        self.point.unobserve(self._show_point, "value")
        self.point.options = [(f"{k + 1}. {self.examples[i].sense}: {self.examples[i].text}", k)
                              for k, i in enumerate(idx)]
        self.point.value = 0
        self.point.observe(self._show_point, "value")
        self._show_point()

    def _show_point(self, _change=None):
        k = self.point.value or 0
        ex = [self.examples[i] for i in self.idx]
        title = f"'{self.word.value}', {layer_name(self.layer.value)}, {self.pooling.value} of subwords"
        self.plot.value = sense_scatter_svg(self.projection.coords, [e.sense for e in ex], [e.text for e in ex],
                                            highlight=k, title=title)
        e = ex[k]
        self.sentence.value = (f"<div class='clusters-readout'><b>{html.escape(e.sense)}</b> ({e.split}): "
                               f"{marked_html(e)}<br><i>{html.escape(self.data.senses[e.sense].gloss)}</i></div>")


class NearestSenseExplorer(W.VBox):
    """Nearest-neighbour WSD (eq. 11.8-11.9): type a sentence, choose the target word, see its cosine to each sense.

    The chooser lists every occurrence of every word ("bank", then "bank (2nd)"), split as the tokenizer splits
    words (at hyphens too: *river-bank* offers *river* and *bank*).
    """

    def __init__(self, model, tokenizer, data: SenseData, *, states: dict[str, torch.Tensor] | None = None,
                 sentence: str = "The fisherman pulled his boat onto the bank before the storm.", word: str = "bank",
                 layer="last4_mean"):
        self.model, self.tokenizer, self.data = model, tokenizer, data
        self.train = data.train
        train_idx = [i for i, e in enumerate(data.examples) if e.split == "train"]
        self.train_states = PoolingCache(model, tokenizer, data.examples, states)("mean", train_idx)
        n_layers = model.config.num_hidden_layers + 1
        self.sentence = W.Text(value=sentence, description="sentence", continuous_update=False,
                               layout=W.Layout(width="95%"))
        self.word = W.Dropdown(description="target word")
        self.layer = W.Dropdown(options=_layer_options(n_layers), value=layer, description="layer")
        self.message = W.HTML()
        self.note = W.HTML()  # when even the best cosine is below what nearly every training sentence reaches
        self.chart = W.Image(format="svg+xml", layout=W.Layout(align_self="flex-start"))  # native size
        self.neighbours = W.HTML()
        for w, cls in [(self.sentence, "wsd-sentence"), (self.word, "wsd-word"), (self.layer, "wsd-layer"),
                       (self.message, "wsd-message"), (self.note, "wsd-note"), (self.chart, "wsd-chart"),
                       (self.neighbours, "wsd-neighbours")]:
            w.add_class(cls)
        super().__init__([self.sentence, W.HBox([self.word, self.layer]), self.message, self.note, self.chart,
                          self.neighbours])
        self.add_class("nearest-sense")
        self._busy = False
        self._encoded: tuple[str, object] | None = None  # (sentence, its states and offsets)
        # every layer choice's training vectors and sense centroids, fitted once
        self._fitted = {value: self._fit_layer(value) for _, value in self.layer.options}
        self._fit()
        self.sentence.observe(lambda _: self._words(), "value")
        self.word.observe(self._update, "value")
        self.layer.observe(self._refit, "value")
        self._words(preferred=word)

    def _fit_layer(self, layer):
        """The training vectors, their centroids, and the reference: the cosine to their own sense's centroid that
        all but 5% of the training sentences reach (each left out of its centroid)."""
        vectors = combine_layers(self.train_states, layer)
        return vectors, NearestSenseWSD().fit(vectors, self.train), typical_floor(vectors, self.train)

    def _fit(self):
        if self.layer.value not in self._fitted:
            self._fitted[self.layer.value] = self._fit_layer(self.layer.value)
        self.train_vectors, self.wsd, self.floor = self._fitted[self.layer.value]

    def _span(self, sentence: str, word: str) -> tuple[int, int]:
        """The characters of ``word``: a label of the chooser ("bank (2nd)"), else a word's first occurrence."""
        for c in sentence_words(sentence):
            if c.label == word:
                return c.start, c.end
        return find_word(sentence, word)

    def _word_states(self, sentence: str, word: str):
        """(L+1, d) states of ``word`` (a label of the chooser, "bank (2nd)", or a word, its first occurrence):
        the sentence is encoded once, then looked up."""
        span = self._span(sentence, word)
        if self._encoded is None or self._encoded[0] != sentence:
            self._encoded = (sentence, sentence_states(self.model, self.tokenizer, [sentence])[0])
        H, offsets = self._encoded[1]
        idx = span_tokens(offsets, *span)
        if not idx:
            raise ValueError(f"no token covers characters {span[0]}-{span[1]} of {sentence!r}")
        return pool(H[idx], "mean")

    def _refit(self, _change=None):
        self._fit()
        self._update()

    def _words(self, preferred: str | None = None):
        choices = sentence_words(self.sentence.value)
        self._choices = {c.label: c for c in choices}
        labels = list(self._choices)
        known = [c.label for c in choices if find_lemma(c.word, self.data.lemmas)]
        self._busy = True  # no update while the options change
        try:
            self.word.options = labels
            self.word.value = (preferred if preferred in labels else
                               known[0] if known else labels[0] if labels else None)
        finally:
            self._busy = False
        self._update()

    def _fail(self, text: str):
        self.message.value = error_html(text)
        self.note.value = ""
        self.chart.layout.display = "none"
        self.neighbours.value = ""

    def _update(self, _change=None):
        if self._busy:
            return
        sentence, word = self.sentence.value, self.word.value
        if not sentence.strip():
            return self._fail("the sentence is empty: type a sentence with one of the ambiguous words, e.g. "
                              "'She keeps her savings in the bank.'")
        if not word:
            return self._fail("the sentence has no words to choose from")
        choice = self._choices.get(word)
        lemma = find_lemma(choice.word if choice else word, self.data.lemmas)
        if lemma is None:
            return self._fail(f"'{choice.word if choice else word}' has no sense data; choose one of the "
                              f"{len(self.data.lemmas)} words: {', '.join(self.data.lemmas)}")
        try:
            v = combine_layers(self._word_states(sentence, word), self.layer.value)
        except ValueError as err:  # over-long text: the library's advice (truncation=True) is not the widget user's
            n, limit = len(self.tokenizer.backend.encode(sentence).ids), self.tokenizer.model_max_length
            return self._fail(f"the sentence has {n} tokens; the model takes at most {limit}: shorten it"
                              if n > limit else str(err))
        self.readout = wsd_readout(self.wsd, self.data, self.train, self.train_vectors, v, lemma, floor=self.floor)
        self.message.value = ""
        note = self.readout.note()
        self.note.value = f"<div class='wsd-note' style='color:#8a3b00'><b>{html.escape(note)}</b></div>" if note else ""
        self.chart.layout.display = ""
        self.chart.value = sense_scores_svg(self.readout)
        self.neighbours.value = neighbours_html(self.readout)


class AnisotropyExplorer(W.VBox):
    """Anisotropy per layer, raw vs z-scored (eq. 11.10-11.12), and the top dimensions behind it (rogue from ROGUE_SHARE).

    ``corpus_states``: (N, L+1, d) token vectors, or {model name: such states} to switch between models (a
    dropdown). ``fit_states`` (same form): vectors of *other* tokens to fit the z-scoring on; without them each
    layer is z-scored with its own statistics. Every model's and layer's numbers are computed when the widget is
    built, so moving a control only redraws.
    """

    def __init__(self, corpus_states, *, layer: int = 4, n_pairs: int = 5000, n_rogue: int = 3, fit_states=None,
                 corpus_name: str = "the Lee news corpus", model: str | None = None):
        many = isinstance(corpus_states, dict)
        self.all_states = dict(corpus_states) if many else {"": corpus_states}
        fits = fit_states if isinstance(fit_states, dict) else {k: fit_states for k in self.all_states}
        self.n_pairs, self.n_rogue, self.corpus_name = n_pairs, n_rogue, corpus_name
        n_layers = next(iter(self.all_states.values())).size(1)
        self.all_stats = {name: [self._statistics(S[:, l], None if fits.get(name) is None else fits[name][:, l])
                                 for l in range(n_layers)] for name, S in self.all_states.items()}
        self.model = W.Dropdown(options=list(self.all_states), value=model or next(iter(self.all_states)),
                                description="model", layout=W.Layout(display="" if many else "none"))
        self.layer = W.IntSlider(value=layer, min=0, max=n_layers - 1, description="layer", continuous_update=False)
        self.readout = W.HTML()
        self.chart = W.Image(format="svg+xml", layout=W.Layout(align_self="flex-start"))  # native size
        for w, cls in [(self.model, "aniso-model"), (self.layer, "aniso-layer"), (self.readout, "aniso-readout"),
                       (self.chart, "aniso-chart")]:
            w.add_class(cls)
        super().__init__([self.model, self.layer, self.readout, self.chart])
        self.add_class("anisotropy-explorer")
        self.layer.observe(self._update, "value")
        self.model.observe(self._update, "value")
        self._update()

    @property
    def states(self) -> torch.Tensor:
        return self.all_states[self.model.value]

    @property
    def stats(self) -> list:
        return self.all_stats[self.model.value]

    def _statistics(self, X: torch.Tensor, fit: torch.Tensor | None):
        """Pair cosines raw and z-scored (μ, σ from ``fit``, else from X itself), and the per-dimension report."""
        Z = ZScorer().fit(X if fit is None else fit)(X)
        return pair_cosines(X, self.n_pairs), pair_cosines(Z, self.n_pairs), dimension_report(X, self.n_rogue)

    def _update(self, _change=None):
        l = self.layer.value
        raw, z, rep = self.stats[l]
        n = len(self.states)
        self.values = (float(raw.mean()), float(z.mean()), rep.rogue)  # rep.rogue: the top dimensions
        name = layer_name(l)
        who = f"{self.model.value}, " if self.model.value else ""
        top = top_dimensions_label(rep.rogue, rep.top_share())
        self.readout.value = (f"<b>{name}</b>: {html.escape(who)}anisotropy {raw.mean():.3f} raw, {z.mean():.3f} "
                              f"z-scored; {top} ({n:,} tokens)")
        self.chart.value = anisotropy_svg(raw, z, rep.cosine_share, rep.rogue,
                                          f"{who}{name}: {n:,} tokens of {self.corpus_name}", top_share=rep.top_share())
