"""Transfer learning, measured: the pretrained network against the same network trained from random weights, and
against less labelled data.

    scratch = scratch_run(train, test, collate, TrainConfig(lr=1e-4, epochs=10), name="scratch-cls")
    small = pretrained_run(train[:100], test, collate, TrainConfig(lr=5e-5, epochs=3), name="full-cls-100")

Both fine-tune every parameter of a classifier -- :func:`~course_lib.finetuning.classify.scratch_classifier` (the
embedded encoder's configuration with seeded random weights, and a new head) or
:func:`~course_lib.finetuning.classify.pretrained_classifier` -- and return the **run**, never the model: what a
notebook draws of them is their held-out curve. A full fine-tuning changes every weight (the random network's
45 MB as a float16 delta, the pretrained one's 23 MB) for one point on a figure, so these runs are shipped as their
history only (:mod:`course_lib.finetuning.shipped`), and a run loaded from its history has no weights to hand out.
``cache=False``, or a run nobody shipped, trains it here (cached with its weights, as any run). To use such a
model, build it and call :func:`~course_lib.finetuning.classify.train_classifier` yourself.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch

from .classify import classifier_history, pretrained_classifier, scratch_classifier
from .runs import TrainConfig, TrainRun
from .shipped import find_history, load_history, trainable_fingerprint


def scratch_run(train: Sequence, test: Sequence, collate, config: TrainConfig, *, name: str, pooling: str = "cls",
                seed: int = 0, cache: bool = True, progress: bool = True, device=None) -> TrainRun:
    """Fine-tune all of :func:`scratch_classifier` (random weights from ``seed``) on ``train``, scoring ``test``
    after every epoch: the run shipped as its history if there is one (and ``cache``), else trained here."""
    model = scratch_classifier(collate.labels, pooling=pooling, seed=seed, device="cpu")
    return classifier_history(model, train, test, collate, "full", config, name=name, cache=cache, progress=progress,
                              device=device)


def pretrained_run(train: Sequence, test: Sequence, collate, config: TrainConfig, *, name: str, pooling: str = "cls",
                   seed: int = 0, cache: bool = True, progress: bool = True, device=None) -> TrainRun:
    """The same for :func:`pretrained_classifier` (the embedded encoder, a head from ``seed``)."""
    model = pretrained_classifier(collate.labels, pooling=pooling, seed=seed, device="cpu")
    return classifier_history(model, train, test, collate, "full", config, name=name, cache=cache, progress=progress,
                              device=device)


def forgetting_run(mlm_model, tokenizer, train: Sequence, test: Sequence, collate, config: TrainConfig, *,
                   mlm_texts: Sequence[str], unigram, name: str, seed: int = 0, cache: bool = True,
                   progress: bool = True, device=None) -> TrainRun:
    """Fine-tune a classifier on a copy of ``mlm_model``'s encoder (every parameter, a new head from ``seed``) and
    measure after every epoch both what it learns and what it forgets: the held-out accuracy on ``test`` and the
    masked-token accuracy of the model's own MLM head, left untouched, reading the changed encoder on
    ``mlm_texts`` (the same masks every epoch; ``mlm_top1``, ``mlm_top5`` in each epoch's ``eval``; before
    training in ``info["mlm_before"]``). Catastrophic forgetting, measured. Shipped as its history only."""
    import copy

    from ..model.classification import BertForSequenceClassification
    from ..model.device import get_device
    from ..pretraining.fill_mask import masked_token_accuracy
    from .runs import fingerprint, run_key
    from .shipped import find_finished
    from .training import evaluate, fit

    if not getattr(mlm_model, "has_mlm_head", False):
        raise ValueError("forgetting is measured with the model's MLM head: pass a model that has one "
                         "(course-bert), not the embedded MiniLM")
    texts = list(mlm_texts)
    mlm = copy.deepcopy(mlm_model).to(get_device(device)).eval()
    torch.manual_seed(seed)
    model = BertForSequenceClassification(mlm.bert, labels=collate.labels).to(mlm.device)  # shares the encoder
    model.requires_grad_(True)
    key = run_key(model, train, config, test, extra={
        "collate": collate.cache_key(), "method": "forgetting-v1", "mlm_texts": fingerprint(texts),
        "unigram": fingerprint(unigram.float().cpu()),
        "mlm_head": fingerprint({n: p.detach().float().cpu() for n, p in mlm.cls.named_parameters()})})
    shipped = find_history(name, key) if cache else None
    if shipped is not None:
        return load_history(shipped, trainable_fingerprint(model))

    def mlm_scores() -> dict[str, float]:
        acc = masked_token_accuracy(mlm.eval(), tokenizer, texts, unigram, seed=0)
        return {"mlm_top1": acc.top1, "mlm_top5": acc.top5}

    def both(m) -> dict[str, float]:
        return {**evaluate(m, test, collate, config.eval_batch_size, mlm.device, length=collate.length),
                **mlm_scores()}

    info = {"strategy": "full", "pooling": model.pooling, "train_examples": len(train), "test_examples": len(test)}
    if not (cache and find_finished(name, key)):
        info["mlm_before"] = mlm_scores()
    return fit(model, train, collate, config, evaluate_fn=both, name=name, key=key, cache=cache, progress=progress,
               device=device, length=collate.length, info=info)


# the settings tried for the network from random weights, (encoder rate, epochs): the pretrained model's recipe,
# and ten epochs at two rates
SCRATCH_RECIPES = ((5e-5, 3), (5e-5, 10), (1e-4, 10))


def development_sentences(train: Sequence, n: int = 400, seed: int = 0) -> list:
    """``n`` class-balanced sentences of the sentiment training file that are not in ``train`` (by their text)."""
    from .data import SENTIMENT_LABELS, development_sample, load_sentiment

    return development_sample(load_sentiment("train"), train, lambda e: e.text, n, SENTIMENT_LABELS, seed,
                              "are not among", "sentences")


def scratch_dev_name(lr: float, epochs: int) -> str:
    return f"scratch-dev-{lr:g}-{epochs}"


def choose_scratch_recipe(train: Sequence, dev: Sequence, collate, config, recipes=SCRATCH_RECIPES,
                          progress: bool = True) -> tuple[tuple[float, int], dict]:
    """Train the network from random weights with each (lr, epochs) of ``recipes`` on ``train`` and score it on
    ``dev`` (runs named by :func:`scratch_dev_name`, shipped as their histories); return the setting with the best
    development accuracy (of equals, the one listed first) and {setting: its run}. ``config(lr, epochs)`` makes the
    notebook's TrainConfig."""
    from .nli_recipes import best_recipe

    runs = {(lr, epochs): scratch_run(train, dev, collate, config(lr, epochs=epochs),
                                      name=scratch_dev_name(lr, epochs), progress=progress)
            for lr, epochs in recipes}
    return best_recipe({setting: {"random weights": run.final()} for setting, run in runs.items()}), runs
