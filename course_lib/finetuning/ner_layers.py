"""Which layer should a probe read? Chosen on held-out training documents, never on the test set.

    choice = choose_read_layer(load_wikigold("train"), config)     # trains one probe per layer, cached
    choice.chosen, choice.dev_f1                                    # "L4", {"L2": 0.43, "L4": 0.49, "L6": 0.37}

:func:`development_split` holds out whole documents of the training sentences (every fifth by default), so that
no document is on both sides; :func:`choose_read_layer` trains the same probe (:class:`~.ner.NerTagger`, the head
alone, ``read_layer=k``) on the other documents for each layer, and picks the layer with the best entity F1 on
the held-out ones. The test sentences are then scored once, with the layer already chosen.
"""
from __future__ import annotations

from dataclasses import dataclass

from .labelling import TaggedSentence


@dataclass(frozen=True)
class LayerChoice:
    """The layer with the best entity F1 on the development documents (ties: the lower layer)."""

    chosen: str                      # "L4"
    dev_f1: dict[str, float]         # "L2" -> micro entity F1 on the development documents
    fit_sentences: int
    dev_sentences: int
    dev_documents: int
    runs: tuple[str, ...] = ()       # each probe's run, as it prints (trained, cached or shipped)

    def __str__(self) -> str:
        scores = ", ".join(f"{layer} {f1:.2f}" for layer, f1 in self.dev_f1.items())
        return (f"chosen on {self.dev_documents} held-out training documents ({self.dev_sentences} sentences; "
                f"probes trained on the other {self.fit_sentences}): {scores} -> {self.chosen}")


def development_split(sentences: list[TaggedSentence], every: int = 5) -> tuple[list, list]:
    """(fit, dev): every ``every``-th document (by ``doc`` number: 0, 5, 10, ... held out when every=5) goes to dev,
    whole; the rest to fit. Order is kept within each side."""
    if every < 2:
        raise ValueError(f"every must be 2 or more (one document in `every` is held out), got {every}")
    docs = sorted({s.doc for s in sentences})
    if len(docs) < every:
        raise ValueError(f"{len(docs)} document(s) cannot be split one in {every}: the sentences need their `doc` "
                         "numbers (load_wikigold keeps them)")
    held = set(docs[::every])
    return [s for s in sentences if s.doc not in held], [s for s in sentences if s.doc in held]


def choose_read_layer(train: list[TaggedSentence], config, layers=(2, 4, 6), every: int = 5,
                      name: str = "wikigold-ner-dev", encoder: str | None = None) -> LayerChoice:
    """Train the probe on each layer of ``layers`` on the fit documents (runs named ``<name>-L<k>``, cached and
    found like any run) and score each on the development documents by micro entity F1 (first-subword
    decoding)."""
    from .ner import NerTagger
    from .ner_eval import entity_scores

    if not layers:
        raise ValueError("no layers to choose from")
    fit_part, dev_part = development_split(train, every)
    gold = [list(s.tags) for s in dev_part]
    dev_f1, runs = {}, []
    for k in layers:
        probe = NerTagger.build(encoder, train_layers=0, read_layer=k)
        runs.append(str(probe.fit(fit_part, config, name=f"{name}-L{k}")))
        dev_f1[f"L{k}"] = entity_scores(gold, probe.predict(dev_part, "first")).micro.f1
    chosen = max(dev_f1, key=lambda layer: (dev_f1[layer], -int(layer[1:])))
    return LayerChoice(chosen, dev_f1, len(fit_part), len(dev_part), len({s.doc for s in dev_part}), tuple(runs))
