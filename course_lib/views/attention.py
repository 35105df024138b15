"""What the attention explorer shows, computed without any widget (SLP3 §11.1, Fig. 11.1-11.2).

The widget in :mod:`course_lib.widgets` only draws these objects and wires the
controls; everything here is a plain function with a unit test.

    maps = attention_maps(model, tokenizer, "The bank raised its rates. [SEP] It was expected.")
    view = select_view(maps, layer=2, head=3, kind="weights")
    fig = draw_view(view)                       # a matplotlib Figure
    readout(maps, layer=2, head=3, query=1, key=2)
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from matplotlib.figure import Figure

from ..model.bert import check_index

PAIR_SEPARATOR = "[SEP]"
MAX_EXPLORER_TOKENS = 64  # beyond this the labels of a T×T heatmap stop being readable
KINDS = ("weights", "scores")


class ExplorerInputError(ValueError):
    """Input the explorer cannot show; the message is meant for the person who typed it."""


def parse_input(text: str) -> tuple[str, str | None]:
    """Split 'sentence A [SEP] sentence B' into a pair; plain text is one sentence."""
    if not isinstance(text, str) or not text.strip():
        raise ExplorerInputError("Type a sentence (or two sentences separated by [SEP]).")
    parts = text.split(PAIR_SEPARATOR)
    if len(parts) == 1:
        return text.strip(), None
    if len(parts) > 2:
        raise ExplorerInputError(
            f"Use [SEP] once, between two sentences: found it {len(parts) - 1} times. "
            "The model adds the [CLS] and final [SEP] itself."
        )
    a, b = (p.strip() for p in parts)
    if not a or not b:
        side = "before" if not a else "after"
        raise ExplorerInputError(f"A sentence pair needs text on both sides of [SEP]; there is nothing {side} it.")
    return a, b


@dataclass
class AttentionMaps:
    """Every layer's attention for one input.

    tokens:  T subword strings, with [CLS] and [SEP]
    weights: (L, H, T, T) softmax weights
    scores:  (L, H, T, T) raw scores QKᵀ/√d_k, before masking
    mask:    (T, T) bool, True where a query may attend to a key
    boundary: index of the first [SEP] in a sentence pair, else None
    causal:  whether a causal mask was applied
    """

    tokens: list[str]
    weights: torch.Tensor
    scores: torch.Tensor
    mask: torch.Tensor
    boundary: int | None
    causal: bool

    @property
    def num_layers(self) -> int:
        return self.weights.size(0)

    @property
    def num_heads(self) -> int:
        return self.weights.size(1)


@torch.no_grad()
def attention_maps(model, tokenizer, text: str, causal: bool = False,
                   max_tokens: int = MAX_EXPLORER_TOKENS) -> AttentionMaps:
    """Run the model once on ``text`` (one sentence, or 'A [SEP] B') and keep all attention maps."""
    a, b = parse_input(text)
    try:
        enc = tokenizer(a, b) if b is not None else tokenizer(a)
    except ValueError as err:  # longer than the model's 512-token limit
        limit = tokenizer.model_max_length
        raise ExplorerInputError(f"The text is longer than the model's limit of {limit} tokens; shorten it.") from err
    T = enc.input_ids.size(1)
    if T > max_tokens:
        raise ExplorerInputError(
            f"The text has {T} tokens; the explorer shows at most {max_tokens} so that every token stays readable. "
            "Shorten it."
        )
    out = model(**enc.to(model.device), output_attentions=True, causal=causal)
    weights = torch.stack([w[0] for w in out.attentions]).float().cpu()  # (L, H, T, T)
    scores = torch.stack([s[0] for s in out.scores]).float().cpu()
    mask = torch.ones(T, T, dtype=torch.bool).tril() if causal else torch.ones(T, T, dtype=torch.bool)
    boundary = enc.tokens[0].index("[SEP]") if b is not None else None
    return AttentionMaps(enc.tokens[0], weights, scores, mask, boundary, causal)


@dataclass
class View:
    """One picture: a single head's (T, T) matrix, or all heads of a layer as (H, T, T)."""

    matrices: torch.Tensor  # (H, T, T); H = 1 for a single head
    heads: list[int]
    tokens: list[str]
    layer: int
    kind: str
    mask: torch.Tensor
    boundary: int | None
    title: str

    @property
    def value_range(self) -> tuple[float, float]:
        """Colour scale: weights on [0, 1]; scores symmetric around 0 over the allowed cells."""
        if self.kind == "weights":
            return 0.0, 1.0
        allowed = self.matrices[:, self.mask]
        m = float(allowed.abs().max()) if allowed.numel() else 1.0
        return -m, m


def select_view(maps: AttentionMaps, layer: int, head: int | str = "all", kind: str = "weights") -> View:
    """Pick what to draw: one head ('head=3') or the grid of all heads ('head="all"')."""
    if kind not in KINDS:
        raise ValueError(f"kind must be 'weights' or 'scores', not {kind!r}")
    layer = check_index("layer", layer, maps.num_layers)
    source = maps.weights if kind == "weights" else maps.scores
    if head == "all":
        heads = list(range(maps.num_heads))
    else:
        heads = [check_index("head", head, maps.num_heads)]
    what = "softmax weights" if kind == "weights" else "raw scores QKᵀ/√d_k"
    direction = "causal" if maps.causal else "bidirectional"
    where = f"layer {layer}, head {heads[0]}" if len(heads) == 1 else f"layer {layer}, all {len(heads)} heads"
    return View(source[layer, heads].clone(), heads, maps.tokens, layer, kind, maps.mask, maps.boundary,
                f"{where}: {what} ({direction})")


def readout(maps: AttentionMaps, layer: int, head: int | str, query: int, key: int) -> str:
    """One line about one cell: how much token `query` attends to token `key`."""
    layer = check_index("layer", layer, maps.num_layers)
    T = len(maps.tokens)
    query, key = check_index("query token", query, T), check_index("key token", key, T)
    q, k = maps.tokens[query], maps.tokens[key]
    head_list = range(maps.num_heads) if head == "all" else [check_index("head", head, maps.num_heads)]
    masked = not bool(maps.mask[query, key])
    parts = []
    for h in head_list:
        w, s = float(maps.weights[layer, h, query, key]), float(maps.scores[layer, h, query, key])
        parts.append(f"head {h}: weight {w:.3f}, score {s:+.2f}")
    note = " (masked: a causal model cannot look ahead, so the weight is 0)" if masked else ""
    return f"layer {layer}, query {q!r} ({query}) → key {k!r} ({key}){note}: " + "; ".join(parts)


# ----------------------------------------------------------------------------- drawing

WEIGHT_CMAP = "viridis"   # sequential, colour-blind safe
SCORE_CMAP = "PuOr_r"     # diverging, colour-blind safe, centred on 0


def draw_view(view: View, cell: tuple[int, int] | None = None) -> Figure:
    """Draw a View as a heatmap (one head) or a grid of heatmaps (all heads); return the Figure."""
    import matplotlib

    T = len(view.tokens)
    n = len(view.heads)
    cols = 1 if n == 1 else min(4, n)
    rows = -(-n // cols)
    size = 0.22 * T + 2.2 if n == 1 else 0.12 * T + 1.4
    fig = Figure(figsize=(min(size * cols + 1.2, 16), min(size * rows, 16) + 0.4), dpi=96, layout="constrained")
    # masked cells (scores view) in light grey
    cmap = matplotlib.colormaps[WEIGHT_CMAP if view.kind == "weights" else SCORE_CMAP].with_extremes(bad="#d9d9d9")
    lo, hi = view.value_range
    font = max(5, min(10, 260 // max(T, 1))) if n == 1 else max(4, min(7, 120 // max(T, 1)))
    axes = fig.subplots(rows, cols, squeeze=False)
    im = None
    for idx, ax in enumerate(axes.flat):
        if idx >= n:
            ax.set_visible(False)
            continue
        m = view.matrices[idx].clone()
        if view.kind == "scores":
            m[~view.mask] = float("nan")
        im = ax.imshow(m.numpy(), cmap=cmap, vmin=lo, vmax=hi, interpolation="nearest")
        first_col, last_row = idx % cols == 0, idx // cols == rows - 1 or idx + cols >= n
        ax.set_xticks(range(T), view.tokens if (n == 1 or last_row) else [], rotation=90, fontsize=font)
        ax.set_yticks(range(T), view.tokens if (n == 1 or first_col) else [], fontsize=font)
        if view.boundary is not None:
            for line in (ax.axhline, ax.axvline):
                line(view.boundary + 0.5, color="white", lw=1.2, ls="--")
        if n > 1:
            ax.set_title(f"head {view.heads[idx]}", fontsize=8)
        if cell is not None and n == 1:
            q, k = cell
            ax.add_patch(matplotlib.patches.Rectangle((k - 0.5, q - 0.5), 1, 1, fill=False, ec="#e66100", lw=2))
    if n == 1:
        axes[0, 0].set_xlabel("key: the token attended to")
        axes[0, 0].set_ylabel("query: the token attending")
    else:
        fig.supxlabel("key: the token attended to", fontsize=9)
        fig.supylabel("query: the token attending", fontsize=9)
    fig.suptitle(view.title, fontsize=10)
    fig.colorbar(im, ax=axes, shrink=0.8, label="weight" if view.kind == "weights" else "score")
    return fig
