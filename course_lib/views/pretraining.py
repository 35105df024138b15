"""Drawings of the live pretraining and of domain adaptation (SLP3 §11.2; lecture supplement 003).

Pure functions: numbers in, matplotlib Figure out (no widgets). Colours from the Okabe-Ito palette,
and every series also differs by line style, so the charts read without colour.
"""
from __future__ import annotations

import math

from matplotlib.figure import Figure

BLUE, SKY, VERMILLION, ORANGE, GREEN, PURPLE = "#0072B2", "#56B4E9", "#D55E00", "#E69F00", "#009E73", "#CC79A7"


def draw_pretraining(run, window: int = 50) -> Figure:
    """Three panels of a :class:`~course_lib.pretraining.training.PretrainingRun`.

    1. MLM loss: each step's training loss (pale; 80/10/10-corrupted input), its running mean over
       ``window`` steps, and at every evaluation the cloze loss (every selected token [MASK]ed) on a fixed
       sample of training pairs and on the held-out pairs; the lines a model must get below: ln|V| (a
       uniform guess), the unigram entropy of the training text (the best guess without context), and the
       unigram guesser's loss on the held-out text.
    2. NSP loss (running mean) against ln 2, the loss of a coin flip.
    3. NSP accuracy on held-out pairs and on a sample of training pairs, against 50%.
    """
    fig = Figure(figsize=(12, 3.6), dpi=110)
    ax1, ax2, ax3 = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.6, 1, 1]})
    steps = [r["step"] for r in run.losses]
    ev = [e["step"] for e in run.evals]

    ax1.plot(steps, [r["mlm"] for r in run.losses], color=SKY, alpha=0.35, lw=0.6, label="MLM loss, each step")
    ax1.plot(steps, run.smoothed("mlm", window), color=BLUE, lw=1.8, label=f"running mean of {window} steps")
    ax1.plot(ev, [e["train_mlm"] for e in run.evals], "s--", color=PURPLE, ms=3, lw=1,
             label="cloze loss, training pairs (all selected [MASK]ed)")
    ax1.plot(ev, [e["heldout_mlm"] for e in run.evals], "o-", color=VERMILLION, ms=3, lw=1,
             label="cloze loss, held-out pairs")
    ln_v = math.log(run.tokenizer.vocab_size)
    ax1.axhline(ln_v, color="grey", ls=":", lw=1)
    ax1.text(steps[-1], ln_v, f"ln|V| = {ln_v:.2f}  ", ha="right", va="bottom", fontsize=8, color="grey")
    ax1.axhline(run.unigram_entropy, color="black", ls="--", lw=1.2)
    ax1.text(steps[-1], run.unigram_entropy, f"unigram entropy of the training text = {run.unigram_entropy:.2f}  ",
             ha="right", va="bottom", fontsize=8)
    ax1.axhline(run.heldout_unigram_loss, color=VERMILLION, ls="-.", lw=0.9)
    ax1.text(steps[-1], run.heldout_unigram_loss, f"unigram guess on held-out text = {run.heldout_unigram_loss:.2f}  ",
             ha="right", va="bottom", fontsize=8, color=VERMILLION)
    ax1.set_xlabel("training step")
    ax1.set_ylabel("cross-entropy (nats)")
    ax1.set_title("MLM: predicting the selected tokens", fontsize=10)
    ax1.set_ylim(0, ln_v + 0.8)
    ax1.legend(fontsize=7, loc="lower left")

    if run.recipe.nsp:
        ax2.plot(steps, [r["nsp"] for r in run.losses], color=ORANGE, alpha=0.3, lw=0.6)
        ax2.plot(steps, run.smoothed("nsp", window), color=VERMILLION, lw=1.8, ls="--",
                 label=f"NSP loss (running mean of {window})")
        ax2.axhline(math.log(2), color="grey", ls=":", lw=1)
        ax2.text(steps[-1], math.log(2), "ln 2: a coin flip  ", ha="right", va="bottom", fontsize=8, color="grey")
        ax2.set_ylim(0, 1.0)
        ax2.legend(fontsize=7, loc="lower left")
        ax3.plot(ev, [e["heldout_nsp_acc"] for e in run.evals], "o-", color=GREEN, ms=3, label="held-out pairs")
        ax3.plot(ev, [e["train_nsp_acc"] for e in run.evals], "s--", color=PURPLE, ms=3, label="training pairs")
        ax3.axhline(0.5, color="grey", ls=":", lw=1)
        ax3.set_ylim(0.3, 1.0)
        ax3.legend(fontsize=7, loc="upper left")
    else:
        for ax in (ax2, ax3):
            ax.text(0.5, 0.5, "trained without NSP", ha="center", va="center", transform=ax.transAxes)
    ax2.set_xlabel("training step")
    ax2.set_ylabel("cross-entropy (nats)")
    ax2.set_title("NSP: is B the next sentence?", fontsize=10)
    ax3.set_xlabel("training step")
    ax3.set_ylabel("accuracy")
    ax3.set_title("NSP accuracy (chance: 50%)", fontsize=10)
    fig.tight_layout()
    return fig


def draw_adaptation(run, window: int = 10) -> Figure:
    """Domain adaptation: the training loss, and each text set's held-out loss before and after."""
    fig = Figure(figsize=(10, 3.4), dpi=110)
    ax1, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.3, 1]})
    losses = run.losses
    window = max(1, min(window, len(losses)))
    # full windows only: a "mean" of the first step alone looks like a level the run started from
    mean = [sum(losses[i - window + 1: i + 1]) / window for i in range(window - 1, len(losses))]
    steps = list(range(1, len(losses) + 1))
    ax1.plot(steps, losses, color=SKY, alpha=0.4, lw=0.7, label="MLM loss, each step (one batch: noisy)")
    ax1.plot(steps[window - 1:], mean, color=BLUE, lw=1.8, label=f"mean of the last {window} steps")
    ax1.set_xlabel("adaptation step")
    ax1.set_ylabel("cross-entropy (nats)")
    ax1.set_title("continued MLM on the Python manual", fontsize=10)
    ax1.legend(fontsize=8)
    names = list(run.before)
    x = range(len(names))
    ax2.bar([i - 0.2 for i in x], [run.before[n] for n in names], width=0.4, color="#999999", edgecolor="black",
            label="before")
    ax2.bar([i + 0.2 for i in x], [run.after[n] for n in names], width=0.4, color=BLUE, edgecolor="black",
            hatch="//", label="after")
    for i, n in enumerate(names):
        ax2.text(i - 0.2, run.before[n], f"{run.before[n]:.2f}", ha="center", va="bottom", fontsize=8)
        ax2.text(i + 0.2, run.after[n], f"{run.after[n]:.2f}", ha="center", va="bottom", fontsize=8)
    ax2.set_xticks(list(x), [n.replace(" (", "\n(") for n in names], fontsize=8)
    ax2.set_ylabel("held-out cloze loss (nats)")
    ax2.set_title("held-out loss before and after", fontsize=10)
    ax2.legend(fontsize=8)
    fig.tight_layout()
    return fig


__all__ = ["draw_pretraining", "draw_adaptation"]
