"""How the geometry of the layers changes while a model learns MLM (SLP3 §11.3; the training log of course-bert).

A training log (``losses.json`` of a model folder) holds ``{"evaluations": [{"step", "loss", "anisotropy",
...}, ...], "chosen_step"}``: at each evaluation the held-out MLM loss and, per layer, the anisotropy (mean
cosine of random pairs of token vectors, Ethayarajh 2019). Layers are counted as everywhere in the course:
L0 = the embedding output, Lℓ = the output of block ℓ (``hidden_states[ℓ]``).

Pure functions: numbers in, a matplotlib Figure or a dict out. Steps are coloured with cividis, a
colour-blind-safe sequential colormap, and the series of the second panel also differ by line style and marker.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from matplotlib import colormaps
from matplotlib.cm import ScalarMappable
from matplotlib.colors import ListedColormap, Normalize
from matplotlib.figure import Figure

from .embeddings import OKABE_ITO

LOSS_COLOUR, LAST_COLOUR, MAX_COLOUR = OKABE_ITO[5], OKABE_ITO[0], OKABE_ITO[2]
# cividis without its palest end, so that the latest step still stands out on white
STEP_CMAP = ListedColormap(colormaps["cividis"](np.linspace(0.0, 0.88, 256)), name="cividis_dark")

ETHAYARAJH_BERT_BASE = {
    "label": "bert-base (Ethayarajh 2019; schematic)",
    "anisotropy": [0.10, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60, 0.65],
    "source": "Ethayarajh (2019), EMNLP, Figure 1 (bert-base); schematic, not digitised: see the docstring",
}
"""The reference drawn beside the course model: bert-base, 12 blocks, layers L0 (the embedding output) to L12;
the average cosine between randomly sampled words at each layer, from Ethayarajh (2019, "How Contextual are
Contextualized Word Representations?", EMNLP), Figure 1.

How precise: NOT a digitisation of the figure. The paper gives these values only as a plot; no per-layer numbers
were found stated in the paper's text, the author's blog post or public notes on it. The values are a schematic
reading of the paper's Figure 1, as the course-bert model card words it -- "about 0.1 in the lowest layers,
rising to about 0.6-0.7 in the upper ones": 0.10 at L0 and L1, then a straight rise of 0.05 per block to 0.65 at
L12. Read them as the shape and the rough level (about ±0.1), never as measurements to compare to two decimals.
"""


def _values(rec: Mapping, key: str, where: str) -> list[float]:
    try:
        vals = [float(v) for v in rec[key]]
    except KeyError:
        raise ValueError(f"{where} has no '{key}'") from None
    except TypeError:
        raise ValueError(f"{where}: '{key}' must be a list of numbers, one per layer") from None
    if len(vals) < 2:
        raise ValueError(f"{where}: '{key}' has {len(vals)} layer(s); it needs L0 and at least one block")
    return vals


def _evaluations(curve: Mapping) -> list[dict]:
    """The evaluations of a training log, checked and sorted by step (a ValueError says what is wrong)."""
    evals = curve.get("evaluations") if isinstance(curve, Mapping) else None
    if not evals:
        raise ValueError("the curve has no evaluations: expected {'evaluations': [{'step', 'loss', "
                         "'anisotropy'}, ...]}")
    out = []
    for i, rec in enumerate(evals):
        where = f"evaluation {i}" + (f" (step {rec['step']})" if isinstance(rec, Mapping) and "step" in rec else "")
        if not isinstance(rec, Mapping) or "step" not in rec or "loss" not in rec:
            raise ValueError(f"{where} needs a 'step' and a 'loss'")
        out.append({"step": int(rec["step"]), "loss": float(rec["loss"]),
                    "anisotropy": _values(rec, "anisotropy", where)})
    n = len(out[0]["anisotropy"])
    for rec in out:
        if len(rec["anisotropy"]) != n:
            raise ValueError(f"the evaluation at step {rec['step']} has {len(rec['anisotropy'])} layers, the one at "
                             f"step {out[0]['step']} has {n}: every evaluation must measure the same layers")
    steps = [r["step"] for r in out]
    if len(set(steps)) != len(steps):
        raise ValueError(f"the evaluations repeat a step: {sorted(steps)}")
    chosen = curve.get("chosen_step")
    if chosen is not None and int(chosen) not in steps:
        raise ValueError(f"chosen_step {chosen} is not one of the evaluated steps {sorted(steps)}")
    return sorted(out, key=lambda r: r["step"])


def geometry_summary(curve: Mapping) -> dict:
    """The numbers behind :func:`draw_geometry_during_training`, for a notebook's claims.

    Keys: ``steps``; ``n_blocks`` (layers L0..L{n_blocks}); ``first_loss``; ``last_layer_peak_step`` and
    ``last_layer_peak`` (the evaluation with the most anisotropic last layer, the earliest on a tie) and
    ``loss_at_last_layer_peak``; ``max_peak_step``, ``max_peak`` and ``max_peak_layer`` (the same for the most
    anisotropic layer of any evaluation); ``final_step``, ``final_loss``, ``final_anisotropy`` (per layer) and
    ``final_last_layer``; ``chosen_step``, ``chosen_loss`` and ``chosen_anisotropy`` (None without a
    ``chosen_step``).
    """
    evals = _evaluations(curve)
    last = [r["anisotropy"][-1] for r in evals]
    k = int(np.argmax(last))
    peaks = [max(r["anisotropy"]) for r in evals]
    m = int(np.argmax(peaks))
    final = evals[-1]
    chosen_step = curve.get("chosen_step")
    chosen = next((r for r in evals if r["step"] == chosen_step), None) if chosen_step is not None else None
    return {
        "steps": [r["step"] for r in evals],
        "n_blocks": len(final["anisotropy"]) - 1,
        "first_loss": evals[0]["loss"],
        "last_layer_peak_step": evals[k]["step"], "last_layer_peak": last[k],
        "loss_at_last_layer_peak": evals[k]["loss"],
        "max_peak_step": evals[m]["step"], "max_peak": peaks[m],
        "max_peak_layer": int(np.argmax(evals[m]["anisotropy"])),
        "final_step": final["step"], "final_loss": final["loss"], "final_anisotropy": list(final["anisotropy"]),
        "final_last_layer": final["anisotropy"][-1],
        "chosen_step": None if chosen is None else chosen["step"],
        "chosen_loss": None if chosen is None else chosen["loss"],
        "chosen_anisotropy": None if chosen is None else list(chosen["anisotropy"]),
    }


def draw_geometry_during_training(curve: Mapping, *, reference: Mapping | None = None) -> Figure:
    """Two panels of a training log (see the module docstring for its format).

    1. Anisotropy per layer, one line per evaluation coloured from early (dark) to late (light) with a colorbar
       "training step"; the chosen (shipped) step drawn thick with markers. ``reference`` (e.g.
       :data:`ETHAYARAJH_BERT_BASE`: ``{"label", "anisotropy": [L0, ..., Ln]}``) is a dashed black line placed
       at the same *relative depth* (its layer ℓ at ℓ/n of the course model's depth), with its own layer numbers
       on the top axis. None: no reference.
    2. Against the training step: the held-out MLM loss (left axis) and the anisotropy of the last layer and of
       the most anisotropic layer (right axis), the chosen step marked by a dotted vertical line.
    """
    evals = _evaluations(curve)
    n = len(evals[0]["anisotropy"]) - 1
    steps = [r["step"] for r in evals]
    chosen = curve.get("chosen_step")
    ref = None
    if reference is not None:
        ref = _values(reference, "anisotropy", "the reference")

    fig = Figure(figsize=(12.5, 4.8), dpi=100)
    ax1, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.1, 1]})
    norm = Normalize(min(steps), max(steps) if max(steps) > min(steps) else min(steps) + 1)
    layers = np.arange(n + 1)
    chosen_line = None
    for r in evals:
        shipped = r["step"] == chosen
        line, = ax1.plot(layers, r["anisotropy"], color=STEP_CMAP(norm(r["step"])), lw=3.2 if shipped else 1.4,
                         marker="o" if shipped else ".", ms=7 if shipped else 5, mec="black" if shipped else None,
                         zorder=3 if shipped else 2, label=f"step {r['step']}" + (" (shipped)" if shipped else ""))
        chosen_line = line if shipped else chosen_line
    handles = [chosen_line] if chosen_line is not None else []
    if ref is not None:
        m = len(ref) - 1
        ref_line, = ax1.plot(np.arange(m + 1) * n / m, ref, ls="--", color="black", lw=1.8, zorder=4,
                             label=str(reference.get("label", "reference")))
        handles.append(ref_line)
        top = ax1.secondary_xaxis("top", functions=(lambda x: x * m / n, lambda x: x * n / m))
        top.set_xlabel(f"{reference.get('label', 'reference')}: layer (dashed; same relative depth)", fontsize=9)
        top.set_xticks(list(range(0, m + 1, max(1, m // 6))))
    ax1.set_xticks(layers, ["L0\n(embeddings)"] + [f"L{i}" for i in range(1, n + 1)])
    ax1.set_xlim(-0.2, n + 0.2)
    ax1.set_xlabel("layer of the course model (Lℓ = output of block ℓ)")
    ax1.set_ylabel("anisotropy\n(mean cosine of random token pairs)")
    ax1.set_title("anisotropy per layer, at each evaluation", fontsize=11, pad=8)
    ax1.grid(alpha=0.3)
    if handles:
        ax1.legend(handles=handles, fontsize=9, loc="upper left")
    cbar = fig.colorbar(ScalarMappable(norm=norm, cmap=STEP_CMAP), ax=ax1, pad=0.02)
    cbar.set_label("training step")
    if chosen is not None:
        cbar.ax.axhline(chosen, color="black", lw=2.5)

    twin = ax2.twinx()
    lines = [ax2.plot(steps, [r["loss"] for r in evals], "o-", color=LOSS_COLOUR, lw=1.8, ms=5,
                      label="held-out MLM loss (left)")[0],
             twin.plot(steps, [r["anisotropy"][-1] for r in evals], "s--", color=LAST_COLOUR, lw=1.8, ms=5,
                       label=f"anisotropy of the last layer, L{n} (right)")[0],
             twin.plot(steps, [max(r["anisotropy"]) for r in evals], "^:", color=MAX_COLOUR, lw=1.8, ms=6,
                       label="anisotropy of the most anisotropic layer (right)")[0]]
    if chosen is not None:
        lines.append(ax2.axvline(chosen, color="black", ls=":", lw=1.2, label=f"shipped step {chosen}"))
    ax2.set_xlabel("training step")
    ax2.set_ylabel("held-out MLM loss (nats)", color=LOSS_COLOUR)
    twin.set_ylabel("anisotropy (mean cosine)", color=LAST_COLOUR)
    hi = max(max(r["anisotropy"]) for r in evals)
    twin.set_ylim(min(0.0, min(min(r["anisotropy"]) for r in evals)), hi * 1.15 if hi > 0 else 1.0)
    ax2.set_title("held-out loss and anisotropy during training", fontsize=11)
    ax2.grid(alpha=0.3)
    ax2.legend(handles=lines, fontsize=8.5, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    fig.tight_layout()
    return fig


__all__ = ["ETHAYARAJH_BERT_BASE", "STEP_CMAP", "draw_geometry_during_training", "geometry_summary"]
