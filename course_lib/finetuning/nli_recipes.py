"""Which recipe should the NLI models train with? Chosen on development pairs, never on the test pairs.

    dev = development_pairs(nli_train)                          # 300 training-file pairs, no premise shared
    choice = choose_nli_recipe(nli_train, dev, config, tokenizer)   # trains each recipe, cross and bi (or loads them)
    choice.chosen, choice.dev_accuracy                          # "mean, last 3, 2e-4, 6 epochs", {...}

SNLI's training file holds 3,000 pairs and the notebook trains on 600 of them; :func:`development_pairs` draws a
class-balanced sample of the others whose premise is none of the 600's (SNLI gives each premise three
hypotheses, one per label, so a shared premise would put half a training example in the development set).
:func:`choose_nli_recipe` trains the cross-encoder and the bi-encoder with each recipe of :data:`RECIPES` on the
600 pairs and scores them on the development pairs; the recipe with the best mean accuracy of the two models is
the one the notebook then trains once more and scores on the test pairs.
"""
from __future__ import annotations

from dataclasses import dataclass

from .data import NLI_LABELS, development_sample, load_nli


@dataclass(frozen=True)
class NliRecipe:
    """How both NLI models are trained: the pooling, the layers trained, the encoder's rate and the epochs."""

    pooling: str      # "cls" or "mean"
    layers: str       # a freezing strategy: "last-2", "last-3", ...
    lr: float         # the encoder's learning rate (the head has its own)
    epochs: int

    def __str__(self) -> str:
        pooled = "[CLS]" if self.pooling == "cls" else self.pooling
        rate = f"{self.lr:.0e}".replace("e-0", "e-")  # 2e-4, as the lecture writes rates
        return f"{pooled}, {self.layers.replace('-', ' ')}, {rate}, {self.epochs} epochs"

    @property
    def slug(self) -> str:
        return f"{self.pooling}-{self.layers}-{self.lr:g}-{self.epochs}"


# the two recipes that were tried, in the order they were tried: the lecture's recipe with [CLS], then a bolder one
RECIPES = (NliRecipe("cls", "last-2", 5e-5, 3), NliRecipe("mean", "last-3", 2e-4, 6))
KINDS = ("cross-encoder", "bi-encoder")


@dataclass(frozen=True)
class RecipeChoice:
    """The recipe with the best mean development accuracy of the two models (ties: the one tried first)."""

    chosen: NliRecipe
    dev_accuracy: dict[NliRecipe, dict[str, float]]   # recipe -> "cross-encoder" / "bi-encoder" -> accuracy
    train_pairs: int
    dev_pairs: int
    curves: dict[NliRecipe, dict[str, list[float]]]   # the development accuracy after each epoch
    runs: dict                                         # run name (dev_run_name) -> its TrainRun

    def mean(self, recipe: NliRecipe) -> float:
        return sum(self.dev_accuracy[recipe].values()) / len(self.dev_accuracy[recipe])

    def __str__(self) -> str:
        rows = [f"  {str(r):32s} " + ", ".join(f"{k} {a:.1%}" for k, a in self.dev_accuracy[r].items())
                + f" (mean {self.mean(r):.1%})" for r in self.dev_accuracy]
        return (f"on {self.dev_pairs} development pairs (trained on the {self.train_pairs} training pairs):\n"
                + "\n".join(rows) + f"\nchosen: {self.chosen}")


def development_pairs(train: list, n: int = 300, seed: int = 0) -> list:
    """``n`` class-balanced pairs of SNLI's training file that are not in ``train`` and share no premise with it."""
    return development_sample(load_nli("train"), train, lambda e: e.premise, n, NLI_LABELS, seed,
                              "share no premise with", "pairs")


def best_recipe(dev_accuracy: dict) -> NliRecipe:
    """The recipe whose models have the best mean development accuracy; of equals, the first (tried first)."""
    if not dev_accuracy:
        raise ValueError("no recipes to choose from")
    means = {r: sum(a.values()) / len(a) for r, a in dev_accuracy.items()}
    return max(means, key=lambda r: (means[r], -list(means).index(r)))


def nli_models(recipe: NliRecipe, tokenizer, max_length: int = 64):
    """The two models a recipe trains, each with its collator: {kind: (model, collate)} (heads seeded alike)."""
    import torch

    from .classify import pretrained_classifier, pretrained_encoder
    from .data import BiEncoderCollator, PairCollator
    from .sbert import SiameseClassifier

    cross = pretrained_classifier(NLI_LABELS, pooling=recipe.pooling)
    torch.manual_seed(0)
    bi = SiameseClassifier(pretrained_encoder()[0], NLI_LABELS, pooling=recipe.pooling)
    return {"cross-encoder": (cross, PairCollator(tokenizer, NLI_LABELS, max_length=max_length)),
            "bi-encoder": (bi, BiEncoderCollator(tokenizer, NLI_LABELS, max_length))}


def dev_run_name(recipe: NliRecipe, kind: str) -> str:
    return f"nli-dev-{kind.split('-')[0]}-{recipe.slug}"


def dev_runs(recipe: NliRecipe, train: list, dev: list, config, tokenizer, max_length: int = 64,
             progress: bool = True) -> dict:
    """{kind: the run of that model with ``recipe``, trained on ``train`` and scored on ``dev`` after every epoch}
    (named by :func:`dev_run_name`; shipped as their histories, else trained here and cached).
    ``config(lr, epochs)`` makes the notebook's TrainConfig."""
    from .classify import classifier_history

    cfg = config(recipe.lr, epochs=recipe.epochs)
    return {kind: classifier_history(model, train, dev, collate, recipe.layers, cfg,
                                     name=dev_run_name(recipe, kind), progress=progress)
            for kind, (model, collate) in nli_models(recipe, tokenizer, max_length).items()}


def choose_nli_recipe(train: list, dev: list, config, tokenizer, recipes=RECIPES, max_length: int = 64,
                      progress: bool = True) -> RecipeChoice:
    """Train both models with each recipe on ``train``, score them on ``dev`` (:func:`dev_runs`) and choose."""
    accuracy, curves, runs = {}, {}, {}
    for recipe in recipes:
        by_kind = dev_runs(recipe, train, dev, config, tokenizer, max_length, progress)
        accuracy[recipe] = {kind: run.final() for kind, run in by_kind.items()}
        curves[recipe] = {kind: run.curve() for kind, run in by_kind.items()}
        runs.update({run.name: run for run in by_kind.values()})
    return RecipeChoice(best_recipe(accuracy), accuracy, len(train), len(dev), curves, runs)
