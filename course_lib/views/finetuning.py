"""What notebook 11.4a draws, as pure functions: training curves, confusion matrix, comparison and cost tables.

Runs are told apart by colour (Okabe-Ito, safe for the common colour-vision deficiencies) *and* by marker and
line style, so colour is never the only cue.
"""
from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", "-.", ":")


def style(i: int) -> dict:
    """Colour, marker and line style of the i-th run."""
    return {"color": OKABE_ITO[i % len(OKABE_ITO)], "marker": MARKERS[i % len(MARKERS)],
            "linestyle": LINESTYLES[(i // len(OKABE_ITO)) % len(LINESTYLES)]}


def head_only(run) -> bool:
    """Did the run train the head alone (the encoder frozen, so its learning rate unused)?"""
    return (run.info or {}).get("strategy") == "head"


def head_lr(run) -> float:
    """The learning rate the run's head (``classifier.``) trained at: its own override, else the run's rate."""
    return run.config.lr_for("classifier.weight")


def run_label(run) -> str:
    """A short legend label: the run's name and the learning rate it trained at (a head-only run's: the head's)."""
    return f"{run.name} (head lr {head_lr(run):g})" if head_only(run) else f"{run.name} (lr {run.config.lr:g})"


def smooth(values: Sequence[float], window: int) -> np.ndarray:
    """Running mean over ``window`` steps (shorter at the start), for readable step-loss curves."""
    v = np.asarray(values, dtype=float)
    if window <= 1 or len(v) == 0:
        return v
    c = np.cumsum(np.insert(v, 0, 0.0))
    idx = np.arange(1, len(v) + 1)
    lo = np.maximum(0, idx - window)
    return (c[idx] - c[lo]) / (idx - lo)


def curves_figure(runs: Sequence, baseline: float | None = None, baseline_label: str = "majority class",
                  title: str | None = None, window: int = 5) -> Figure:
    """Left: training loss per step (running mean); right: held-out accuracy per epoch (train accuracy dashed)."""
    fig = Figure(figsize=(10, 3.6), dpi=100, layout="constrained")
    ax_loss, ax_acc = fig.subplots(1, 2)
    max_epochs = 1
    for i, run in enumerate(runs):
        st = style(i)
        if run.step_losses:
            x = np.arange(1, len(run.step_losses) + 1) / max(run.steps_per_epoch, 1)
            ax_loss.plot(x, smooth(run.step_losses, window), color=st["color"], linestyle=st["linestyle"],
                         label=run_label(run))
        if run.epochs:
            ep = [e.epoch for e in run.epochs]
            max_epochs = max(max_epochs, ep[-1])
            ax_acc.plot(ep, run.curve("accuracy"), color=st["color"], marker=st["marker"], linestyle=st["linestyle"],
                        label=run_label(run))
            train_acc = run.curve("accuracy", split="train")
            if all(a is not None for a in train_acc):
                ax_acc.plot(ep, train_acc, color=st["color"], marker=st["marker"], linestyle=":", alpha=0.5,
                            markerfacecolor="none")
    if baseline is not None:
        ax_acc.axhline(baseline, color="#555555", linewidth=1, linestyle=(0, (4, 3)))
        ax_acc.annotate(baseline_label, (0.99, baseline), xycoords=("axes fraction", "data"), ha="right",
                        va="bottom", fontsize=8, color="#555555")
    ax_loss.set(xlabel="epoch (training steps)", ylabel="training loss (cross-entropy)", title="training loss")
    ax_acc.set(xlabel="epoch", ylabel="accuracy", title="held-out accuracy (dotted: training batches)",
               ylim=(0, 1.02), xticks=range(1, max_epochs + 1))
    ax_acc.grid(alpha=0.3)
    ax_loss.grid(alpha=0.3)
    if any(run.epochs for run in runs):
        ax_acc.legend(fontsize=8, loc="lower right")
    if title:
        fig.suptitle(title)
    return fig


def confusion_matrix(pred, gold, n_labels: int) -> np.ndarray:
    """Counts (C, C): row = true label, column = predicted label."""
    pred, gold = np.asarray(pred, dtype=int), np.asarray(gold, dtype=int)
    if pred.shape != gold.shape:
        raise ValueError(f"{len(pred)} predictions but {len(gold)} labels")
    cm = np.zeros((n_labels, n_labels), dtype=int)
    np.add.at(cm, (gold, pred), 1)
    return cm


def confusion_figure(cm: np.ndarray, labels: Sequence[str], title: str = "confusion matrix (held out)") -> Figure:
    """The matrix as a heatmap with the count and the row share in every cell."""
    n = len(labels)
    fig = Figure(figsize=(1.3 * n + 2.2, 1.1 * n + 1.4), dpi=100, layout="constrained")
    ax = fig.subplots()
    share = cm / np.maximum(cm.sum(1, keepdims=True), 1)
    im = ax.imshow(share, cmap="Blues", vmin=0, vmax=1)
    for i in range(n):
        for j in range(n):
            ax.text(j, i, f"{cm[i, j]}\n{share[i, j]:.0%}", ha="center", va="center", fontsize=9,
                    color="white" if share[i, j] > 0.6 else "black")
    ax.set_xticks(range(n), labels, rotation=20)
    ax.set_yticks(range(n), labels)
    ax.set(xlabel="predicted label", ylabel="true label", title=title)
    fig.colorbar(im, ax=ax, label="share of the true label's examples", shrink=0.8)
    return fig


def comparison_rows(runs: Sequence) -> list[dict]:
    """One row per run: what was trained, how (the encoder's learning rate, none when only the head trained, and the
    head's), how long it took, how well it did."""
    rows = []
    for run in runs:
        info = run.info or {}
        rows.append({
            "run": run.name, "strategy": info.get("strategy", "?"), "pooling": info.get("pooling") or "-",
            "lr": None if head_only(run) else run.config.lr, "head lr": head_lr(run), "epochs": len(run.epochs), "trainable": run.trainable_parameters,
            "share": run.trainable_parameters / max(run.total_parameters, 1), "s/epoch": run.seconds_per_epoch,
            "one-off frozen pass (s)": info.get("frozen_pass_seconds"), "held-out accuracy": run.final(),
            "source": "shipped" if getattr(run, "shipped", False) else "cache" if run.cached else "trained now",
        })
    return rows


def _fmt(key: str, v) -> str:
    if v is None:
        return "–"
    if key == "trainable":
        return f"{v:,}"
    if key in ("share", "held-out accuracy"):
        return f"{v:.1%}"
    if isinstance(v, float):
        return f"{v:.1f}" if key not in ("lr", "head lr") else f"{v:g}"
    return html.escape(str(v))


def table_html(rows: Sequence[dict], highlight: str | None = "held-out accuracy") -> str:
    """A plain HTML table of dict rows (same keys); the best value of ``highlight`` in bold."""
    if not rows:
        return "<i>no runs yet</i>"
    keys = list(rows[0])
    best = max((r[highlight] for r in rows if r.get(highlight) is not None), default=None) if highlight else None
    head = "".join(f"<th style='padding:2px 8px'>{html.escape(k)}</th>" for k in keys)
    body = []
    for r in rows:
        cells = []
        for k in keys:
            text = _fmt(k, r[k])
            if k == highlight and best is not None and r[k] == best:
                text = f"<b>{text}</b>"
            cells.append(f"<td style='padding:2px 8px;text-align:right'>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table style='border-collapse:collapse'><tr>{head}</tr>{''.join(body)}</table>"


def cost_rows(cost, sizes=(1_000, 10_000)) -> list[dict]:
    """The all-pairs cost (``finetuning.cost.AllPairsCost``) as table rows with readable times."""
    return [{"sentences": f"{r['n']:,}", "model": r["kind"], "encoder passes": f"{r['passes']:,}",
             "time": readable_seconds(r["seconds"]), "how": r["how"]} for r in cost.rows(sizes)]


def readable_seconds(s: float) -> str:
    """3.2 s, 4.1 min, 2.3 h, 5.0 days."""
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{s / size:.1f} {unit}"
    return f"{s:.2f} s" if s < 10 else f"{s:.1f} s"


def cosine_by_label_figure(cosines: dict[str, Sequence[float]], labels: Sequence[str], title: str) -> Figure:
    """Box plots of cos(u, v) per gold label, one group per model (e.g. before / after fine-tuning)."""
    fig = Figure(figsize=(7, 3.4), dpi=100, layout="constrained")
    ax = fig.subplots()
    models = list(cosines)
    width = 0.8 / max(len(models), 1)
    for i, name in enumerate(models):
        per_label = [np.asarray(cosines[name][lab]) for lab in labels]
        pos = np.arange(len(labels)) + (i - (len(models) - 1) / 2) * width
        bp = ax.boxplot(per_label, positions=pos, widths=width * 0.9, patch_artist=True, showfliers=False,
                        medianprops=dict(color="black", linewidth=1.5))    # not orange on an orange box
        for box in bp["boxes"]:
            box.set(facecolor=OKABE_ITO[i], alpha=0.6, hatch=("", "//", "..", "xx")[i % 4])
        ax.plot([], [], color=OKABE_ITO[i], linewidth=8, alpha=0.6, label=name)
    ax.set_xticks(range(len(labels)), labels)
    ax.set(xlabel="gold label of the pair", ylabel="cos(u, v)", title=title)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    return fig


def students_figure(students: dict, teacher=None, baseline: float | None = None,
                    title: str | None = None) -> Figure:
    """Distilled students against training steps, so that runs with other epoch lengths line up: left, held-out
    accuracy (the teacher's as a line); right, held-out cross-entropy on a log scale (how sure the students are
    when they are wrong). ``students``: label -> run."""
    fig = Figure(figsize=(10, 3.6), dpi=100, layout="constrained")
    ax_acc, ax_loss = fig.subplots(1, 2)
    for i, (label, run) in enumerate(students.items()):
        st = style(i)
        steps = [e.epoch * run.steps_per_epoch for e in run.epochs]
        for ax, metric in ((ax_acc, "accuracy"), (ax_loss, "loss")):
            ax.plot(steps, run.curve(metric), color=st["color"], marker=st["marker"], linestyle=st["linestyle"],
                    label=label)
    for ax, value, text in ((ax_acc, None if teacher is None else teacher.final(), "teacher"),
                            (ax_acc, baseline, "majority class"),
                            (ax_loss, None if teacher is None else teacher.final("loss"), "teacher")):
        if value is not None:
            ax.axhline(value, color="#555555", linewidth=1, linestyle=(0, (4, 3)))
            ax.annotate(text, (0.01, value), xycoords=("axes fraction", "data"), ha="left", va="bottom", fontsize=8,
                        color="#555555")
    sizes = sorted({run.config.batch_size for run in students.values()})
    xlabel = f"training steps (batches of {', '.join(map(str, sizes))})"
    ax_acc.set(xlabel=xlabel, ylabel="held-out accuracy", title="held-out accuracy")
    ax_loss.set(xlabel=xlabel, ylabel="held-out cross-entropy (log scale)",
                title="held-out loss (confident mistakes cost most)", yscale="log")
    for fmt in (ax_loss.yaxis.set_major_formatter, ax_loss.yaxis.set_minor_formatter):
        fmt(FuncFormatter(lambda v, _: f"{v:g}"))  # 0.6, 2, 3 rather than 6 x 10^-1
    for ax in (ax_acc, ax_loss):
        ax.grid(alpha=0.3)
    ax_acc.legend(fontsize=8, loc="lower right")
    if title:
        fig.suptitle(title)
    return fig


def labelled_data_figure(curves: dict[str, dict[int, float]], baseline: float | None = None,
                         title: str | None = None) -> Figure:
    """Held-out accuracy against the number of labelled training examples (log scale), one line per way of
    learning: ``curves`` maps a label to {examples: accuracy}. Each point is labelled with its accuracy."""
    fig = Figure(figsize=(9, 4.2), dpi=100, layout="constrained")
    ax = fig.subplots()
    sizes = sorted({n for points in curves.values() for n in points})
    for i, (label, points) in enumerate(curves.items()):
        st = style(i)
        xs = sorted(points)
        ys = [points[n] for n in xs]
        ax.plot(xs, ys, color=st["color"], marker=st["marker"], linestyle=st["linestyle"], label=label, markersize=7)
        for x, y in zip(xs, ys):
            ax.annotate(f"{y:.0%}", (x, y), textcoords="offset points", xytext=(6, -4 if i % 2 else 6), fontsize=8,
                        color=st["color"])
    if baseline is not None:
        ax.axhline(baseline, color="#555555", linewidth=1, linestyle=(0, (4, 3)))
        ax.annotate("majority class", (0.01, baseline), xycoords=("axes fraction", "data"), ha="left", va="bottom",
                    fontsize=8, color="#555555")
    ax.set_xscale("log")
    ax.set_xticks(sizes, [f"{n:,}" for n in sizes])
    ax.minorticks_off()
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.0%}"))
    ax.set(xlabel="labelled training sentences (log scale)", ylabel="held-out accuracy",
           xlim=(sizes[0] / 1.4, sizes[-1] * 1.6) if sizes else None)
    low, high = ax.get_ylim()
    ax.set_ylim(low, high + 0.05 * (high - low))   # room for the labels of the top points, inside the frame
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    if title:
        ax.set_title(title)
    return fig


def forgetting_figure(runs: dict, baseline: float | None = None) -> Figure:
    """Catastrophic forgetting (:func:`course_lib.finetuning.transfer.forgetting_run`): left, the new task's
    held-out accuracy by epoch; right, the MLM head's held-out masked-word top-1 through the changed encoder,
    from before fine-tuning (epoch 0). ``runs``: label -> run."""
    fig = Figure(figsize=(10, 3.6), dpi=100, layout="constrained")
    ax_task, ax_mlm = fig.subplots(1, 2)
    for i, (label, run) in enumerate(runs.items()):
        st = style(i)
        epochs = [e.epoch for e in run.epochs]
        ax_task.plot(epochs, run.curve("accuracy"), color=st["color"], marker=st["marker"],
                     linestyle=st["linestyle"], label=label)
        ax_mlm.plot([0] + epochs, [run.info["mlm_before"]["mlm_top1"]] + run.curve("mlm_top1"), color=st["color"],
                    marker=st["marker"], linestyle=st["linestyle"], label=label)
    if baseline is not None:
        ax_task.axhline(baseline, color="#555555", linewidth=1, linestyle=(0, (4, 3)))
        ax_task.annotate("majority class", (0.99, baseline), xycoords=("axes fraction", "data"), ha="right",
                         va="bottom", fontsize=8, color="#555555")
    for ax in (ax_task, ax_mlm):
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.0%}"))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower left")
    ax_task.set(xlabel="epoch of fine-tuning", ylabel="held-out accuracy", ylim=(0.4, 1.0))
    top = max(max([r.info["mlm_before"]["mlm_top1"]] + r.curve("mlm_top1")) for r in runs.values()) if runs else 0.5
    ax_mlm.set(xlabel="epoch of fine-tuning (0: before)", ylabel="masked-word top-1 (held out)",
               title="the old task: masked words\n(the untouched MLM head on the changed encoder)", ylim=(0, top + 0.12))
    ax_task.set_title("the new task: sentiment\n(held out)")
    return fig
