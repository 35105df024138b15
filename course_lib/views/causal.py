"""What a causal mask takes away, drawn (SLP3 §11.1, Fig. 11.1): the share of keys each position keeps, and how
far each position's vector moves in every layer (the numbers of :func:`course_lib.model.context.compare_causal`).
"""
from __future__ import annotations

from matplotlib.figure import Figure

from ..model.context import CausalComparison

BAR_COLOUR = "#0072B2"  # Okabe-Ito blue
CHANGE_CMAP = "viridis"  # sequential, colour-blind safe


def layer_labels(num_layers: int) -> list[str]:
    """Row labels of a (L+1)-row table of hidden states: L0 (the embedding output), then L1..LL, the outputs of
    blocks 1..L (row ℓ is hidden_states[ℓ]), named as :func:`course_lib.embeddings.layer_name` names them."""
    return ["L0 (embeddings)"] + [f"L{i}" for i in range(1, num_layers + 1)]


def draw_causal_change(cmp: CausalComparison) -> Figure:
    """Top: share of the keys each position may attend to under the causal mask. Bottom: relative change of every
    position's vector (columns) at every layer (rows), bidirectional vs causal, each cell labelled."""
    T, rows = len(cmp.tokens), cmp.change.size(0)
    fig = Figure(figsize=(max(6.0, 0.62 * T + 2.2), 1.9 + 0.42 * rows), dpi=110, layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[1.1, rows * 0.42])
    top.bar(range(T), cmp.reach.numpy(), color=BAR_COLOUR)
    top.set_ylim(0, 1.05)
    top.set_ylabel("share of keys\nit may attend to")  # a share of the T keys, 0 to 1
    top.set_title("under a causal mask: what each position keeps (top) and how far its vector moves (bottom)")
    change = cmp.change.numpy()
    hi = max(float(change.max()), 1e-9)
    im = bottom.imshow(change, cmap=CHANGE_CMAP, vmin=0, vmax=hi, aspect="auto", interpolation="nearest")
    for r in range(rows):
        for c in range(T):
            v = change[r, c]
            bottom.text(c, r, "0" if v == 0 else f"{v:.2f}", ha="center", va="center", fontsize=7,
                        color="black" if v > 0.6 * hi else "white")
    bottom.set_xticks(range(T), cmp.tokens, rotation=90)
    bottom.set_yticks(range(rows), layer_labels(rows - 1))
    bottom.set_xlabel("position (token)")
    bottom.set_ylabel("layer (Lℓ = output of block ℓ)")
    fig.colorbar(im, ax=bottom, label="‖h_causal − h_bidir‖ / ‖h_bidir‖", shrink=0.9)
    return fig
