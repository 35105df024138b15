"""Fine-tuning a classifier for sentences (§11.4.1) or sentence pairs (§11.4.2) with a freezing strategy.

    model = pretrained_classifier(SENTIMENT_LABELS, pooling="cls")
    run = train_classifier(model, train, test, SentenceCollator(tok, SENTIMENT_LABELS), "last-2",
                           TrainConfig(lr=5e-5, epochs=2))

"full" trains the model as it is. "head" and "last-k" train on **cached frozen states**: the frozen lower
blocks compute the same vectors in every epoch (they are frozen and run without dropout), so they run once
over the data (``frozen.frozen_states``) and each epoch runs only the top k blocks and the head. The trained
parameters are the model's own, so afterwards ``model`` classifies raw text as usual. The time of that one
pass is kept in ``run.info["frozen_pass_seconds"]``; ``run.seconds_per_epoch`` is the time of the epochs.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import torch

from ..model.classification import BertForSequenceClassification
from ..model.device import get_device
from .freezing import freeze
from .frozen import FromLayer, frozen_states, num_layers, pad_states, run_layers
from .runs import TrainConfig, TrainRun, _remember_run, _remember_start, initial_fingerprint, run_key
from .shipped import find_finished
from .sbert import SiameseClassifier, SiameseFromLayer, collate_pair_states, pair_state_examples
from .training import fit


@cache
def _embedded_tokenizer_and_config():
    from ..checkpoints import load_pretrained

    model, tokenizer = load_pretrained(device="cpu")
    return tokenizer, model.config


def pretrained_encoder(device=None):
    """A fresh copy of the embedded all-MiniLM-L6-v2 and its tokenizer. The weights are read from disk on each call
    (about 0.05 s) rather than copied from one kept in memory: a notebook holds only the models it uses; the
    tokenizer is read once."""
    from ..checkpoints.loading import load_model, resolve_model_dir

    return load_model(resolve_model_dir(None), device=device), _embedded_tokenizer_and_config()[0]


def pretrained_classifier(labels: Sequence[str], pooling: str = "cls", seed: int = 0,
                          device=None) -> BertForSequenceClassification:
    """A new classifier head (initialised with ``seed``) on a fresh copy of the embedded encoder."""
    encoder, _ = pretrained_encoder(device)
    torch.manual_seed(seed)
    return BertForSequenceClassification(encoder, labels=labels, pooling=pooling).to(encoder.device)


def scratch_classifier(labels: Sequence[str], pooling: str = "cls", seed: int = 0,
                       device=None) -> BertForSequenceClassification:
    """The same network as :func:`pretrained_classifier` -- the embedded encoder's configuration and a new head --
    with seeded random weights everywhere: no pretraining (the tokenizer is still the pretrained one's)."""
    from ..model import BertModel, seed_everything

    config = _embedded_tokenizer_and_config()[1]
    seed_everything(seed)
    model = BertForSequenceClassification(BertModel(config), labels=labels, pooling=pooling)
    return model.to(get_device(device))


class FromLayerWithMask(FromLayer):
    """:class:`frozen.FromLayer` that also hands the attention mask to the head (mean pooling needs it)."""

    def forward(self, hidden, attention_mask, labels=None):
        z = run_layers(self.model.bert, hidden, attention_mask, self.start)  # (B, T, d)
        return self.model.head(z, labels=labels, attention_mask=attention_mask)


@dataclass(frozen=True)
class StateExample:
    """An example as the frozen layers left it: (T, d) hidden states and the label's index."""

    state: torch.Tensor
    label: int


def collate_states(examples: list[StateExample]) -> dict[str, torch.Tensor]:
    hidden, mask = pad_states([e.state for e in examples])
    return {"hidden": hidden, "attention_mask": mask, "labels": torch.tensor([e.label for e in examples])}


def state_examples(model, examples, collate, start: int) -> list[StateExample]:
    """Run the frozen blocks below ``start`` once over ``examples``."""
    ids, types = collate.unpadded(examples)
    labels = collate.label_ids(examples).tolist()
    states = frozen_states(model.bert, ids, types, start=start)
    return [StateExample(s, y) for s, y in zip(states, labels)]


def _length(e: StateExample) -> int:
    return e.state.size(0)


def _pair_length(e) -> int:
    return e.a.size(0) + e.b.size(0)


def classifier_run_key(model, train: Sequence, test: Sequence, collate, strategy: str | int, config: TrainConfig):
    """Freeze ``model`` for ``strategy``; return the strategy and the key :func:`train_classifier` files the run
    under (the model before training, the data, the collate settings, the strategy and ``config``)."""
    s = freeze(model, strategy)
    return s, run_key(model, train, config, test, extra={"collate": collate.cache_key(), "strategy": s.name,
                                                         "method": "classify-v1"})


def train_classifier(model, train: Sequence, test: Sequence, collate, strategy: str | int = "full",
                     config: TrainConfig | None = None, *, name: str | None = None, progress: bool = True,
                     callback=None, stop=None, cache: bool = True, device=None) -> TrainRun:
    """Freeze ``model`` for ``strategy``, train it on ``train`` and score ``test`` after every epoch.

    The run is cached under a key of the model (before training), the data, the collate settings, the strategy
    and ``config``: calling again with the same arguments -- also on the model it trained -- loads it.
    """
    config = config or TrainConfig()
    s, key = classifier_run_key(model, train, test, collate, strategy, config)
    name = name or f"{getattr(model, 'pooling', 'model')}-{s.name}"
    start_fp = initial_fingerprint(model)
    info = {"strategy": s.name, "pooling": getattr(model, "pooling", None), "train_examples": len(train),
            "test_examples": len(test)}
    common = dict(name=name, key=key, progress=progress, callback=callback, stop=stop, cache=cache, device=device)
    if s.top is None:
        run = fit(model, train, collate, config, eval_data=test, length=collate.length, info=info, **common)
    else:
        start, wrapped = _trained_module(model, s)
        if isinstance(model, SiameseClassifier):  # two sentences, each through the encoder on its own
            collate_fn, states_of, length = collate_pair_states, pair_state_examples, _pair_length
        else:
            collate_fn, states_of, length = collate_states, state_examples, _length
        if cache and find_finished(name, key) is not None:
            run = fit(wrapped, train, collate_fn, config, **common)  # found in the cache: no data needed
        else:
            model.to(get_device(device))
            t0 = time.perf_counter()
            train_states, test_states = states_of(model, train, collate, start), states_of(model, test, collate, start)
            info["frozen_pass_seconds"] = time.perf_counter() - t0
            run = fit(wrapped, train_states, collate_fn, config, eval_data=test_states, info=info, length=length,
                      **common)
    if cache:
        _remember_start(model, start_fp)
    if run.finished:
        _remember_run(model, run.key)
    return run


def _trained_module(model, s) -> tuple[int | None, torch.nn.Module]:
    """(the first layer trained, the module :func:`train_classifier` trains) for the parsed strategy ``s``: the model
    itself when every layer trains, else its top layers and head wrapped to read the frozen layers' states."""
    if s.top is None:
        return None, model
    start = s.first_trained_layer(num_layers(model.bert))
    return start, (SiameseFromLayer(model, start) if isinstance(model, SiameseClassifier)
                   else FromLayerWithMask(model, start))


def classifier_history(model, train: Sequence, test: Sequence, collate, strategy: str | int, config: TrainConfig,
                       *, name: str, cache: bool = True, progress: bool = True, device=None) -> TrainRun:
    """A run of which a notebook needs only the history (its numbers, not its weights): shipped as that alone
    (tools/ship_runs.py), if it started from ``model``'s weights; else trained here by :func:`train_classifier`."""
    from .shipped import find_history, load_history, trainable_fingerprint

    s, key = classifier_run_key(model, train, test, collate, strategy, config)
    shipped = find_history(name, key) if cache else None
    if shipped is not None:  # its fingerprint is of the module the training saw, as its weights were at the start
        return load_history(shipped, trainable_fingerprint(_trained_module(model, s)[1]))
    return train_classifier(model, train, test, collate, strategy, config, name=name, progress=progress, cache=cache,
                            device=device)


def classify_texts(model: BertForSequenceClassification, tokenizer, texts: Sequence[str],
                   pairs: Sequence[str] | None = None, batch_size: int = 64, max_length: int = 64,
                   cache: bool = False) -> torch.Tensor:
    """Class probabilities softmax(W_C z) (N, C) for sentences, or for pairs ``[CLS] text [SEP] pair [SEP]``.
    ``cache=True``: computed once per (the whole model's weights, texts, pairs, max_length) and kept on disk as
    float32 (:func:`course_lib.embeddings.cache.cached_states`), the same numbers read or computed."""
    texts = [texts] if isinstance(texts, str) else list(texts)
    pairs = [pairs] if isinstance(pairs, str) else (list(pairs) if pairs is not None else None)
    if not texts:
        raise ValueError("no texts to classify: pass a list of at least one sentence (or premise)")
    if pairs is not None and len(pairs) != len(texts):
        raise ValueError(f"{len(texts)} texts but {len(pairs)} pairs: give one second sentence (hypothesis) per text")
    if not cache:
        return _class_probs(model, tokenizer, texts, pairs, batch_size, max_length)
    from ..embeddings.cache import cached_states
    from .runs import model_fingerprint

    return cached_states(model, "class-probs", [texts, pairs, max_length],
                         lambda: _class_probs(model, tokenizer, texts, pairs, batch_size, max_length),
                         fingerprint=model_fingerprint(model)[:16], keep=torch.float32)


@torch.no_grad()
def _class_probs(model, tokenizer, texts: list[str], pairs: list[str] | None, batch_size: int, max_length: int):
    was_training = model.training
    model.eval()
    out = []
    try:
        for s in range(0, len(texts), batch_size):
            enc = tokenizer(texts[s:s + batch_size], pairs[s:s + batch_size] if pairs is not None else None,
                            max_length=max_length, truncation=True).to(model.device)
            out.append(model(**enc).logits.softmax(-1).float().cpu())
    finally:
        model.train(was_training)
    return torch.cat(out)
