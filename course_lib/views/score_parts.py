"""How one head's attention score is made, dimension by dimension (SLP3 eq. 11.4-11.6; bertviz's "neuron view").

A head compares its query vector q_i with every key vector k_j: score_ij = q_i · k_j / √d_h = Σ_d q_i[d] k_j[d] / √d_h,
and a softmax over j turns the scores into weights. :func:`score_parts` takes those pieces from the maps the
explorer already computed (no new forward pass); :func:`parts_png` draws them as one table, a row per key:

    parts = score_parts(maps, layer=2, head=3, query=5)      # block 3, head 3, query token 5
    parts.scores, parts.weights                              # the row of the heat map, as scores and weights
    parts.top_dimensions(key=4)                              # the dimensions whose products add most to the score
    png = parts_png(parts, key=4)

The products q[d]·k_j[d] show how the sum is made *in the head's own axes*, and those axes are not the model's: turn
every query and key by one rotation R (``parts.rotated(R)``) and every score and weight stays the same while the
parts change (:func:`rotation_onto` turns q onto one axis, which then carries the whole score). The model fixes
the sum, not its split over dimensions.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..model.bert import check_index
from .attention_draw import RING, SCORE_CMAP


@dataclass
class ScoreParts:
    """One query of one head: its vector, every key's vector, their products, scores and weights.

    q: (d_h,)   keys, products: (T, d_h) (products[j] = q * keys[j])   scores, weights: (T,)   visible: (T,) bool
    """

    tokens: list[str]
    layer: int
    head: int
    query: int
    q: torch.Tensor
    keys: torch.Tensor
    products: torch.Tensor
    scores: torch.Tensor
    weights: torch.Tensor
    visible: torch.Tensor

    @property
    def d_h(self) -> int:
        return self.q.numel()

    def top_dimensions(self, key: int, n: int = 3) -> list[tuple[int, float]]:
        """The ``n`` dimensions whose products q[d]·k[d] move this key's score most (largest |product| first), with
        their share of the score: product / √d_h, so the shares of all d_h dimensions add up to the score."""
        key = check_index("key token", key, len(self.tokens))
        row = self.products[key]
        order = row.abs().argsort(descending=True)[:n]
        return [(int(d), float(row[d]) / math.sqrt(self.d_h)) for d in order]

    def rotated(self, R: torch.Tensor) -> "ScoreParts":
        """The same query and keys in other axes: q → qR, k → kR for an orthogonal (d_h, d_h) ``R``. Dot products,
        so scores and weights, are unchanged (a model with W_Q R and W_K R computes the same function); the
        products, dimension by dimension, are not."""
        R = torch.as_tensor(R, dtype=self.q.dtype)
        if tuple(R.shape) != (self.d_h, self.d_h):
            raise ValueError(f"R must be a ({self.d_h}, {self.d_h}) rotation for this head, got shape {tuple(R.shape)}")
        eye = torch.eye(self.d_h, dtype=torch.float64)
        if not torch.allclose(R.double() @ R.double().T, eye, atol=1e-4):
            raise ValueError("R is not orthogonal (R Rᵀ ≠ I): it would change the scores, not only the axes")
        q, keys = self.q @ R, self.keys @ R
        products = q * keys
        scores = products.sum(-1) / math.sqrt(self.d_h)
        weights = scores.masked_fill(~self.visible, float("-inf")).softmax(-1)
        return ScoreParts(self.tokens, self.layer, self.head, self.query, q, keys, products, scores, weights,
                          self.visible.clone())

    def describe(self, key: int) -> str:
        """One key's sum, as the explorer's readout writes it."""
        key = check_index("key token", key, len(self.tokens))
        name = f"block {self.layer + 1}, head {self.head}, query {self.tokens[self.query]!r} ({self.query}) → key " \
               f"{self.tokens[key]!r} ({key})"
        if not bool(self.visible[key]):
            return f"{name}: masked (a causal model cannot look ahead), so its weight is 0 whatever q·k is"
        total = float(self.products[key].sum())
        top = ", ".join(f"dim {d} {s:+.2f}" for d, s in self.top_dimensions(key))
        return (f"{name}: q·k = Σ of {self.d_h} products = {total:+.2f}; ÷ √{self.d_h} = score "
                f"{float(self.scores[key]):+.2f}; softmax over the row → weight {float(self.weights[key]):.3f}. "
                f"Largest parts of the score: {top}")


def rotation_onto(v: torch.Tensor, axis: int = 0) -> torch.Tensor:
    """An orthogonal (d, d) matrix R (a Householder reflection) with v R along ``axis``: in those axes all of
    q·k is in one product, for every key."""
    v = torch.as_tensor(v, dtype=torch.float64).flatten()
    e = torch.zeros_like(v)
    e[check_index("axis", axis, v.numel())] = v.norm()
    u = v - e
    if float(u.norm()) < 1e-12 * max(float(v.norm()), 1.0):
        return torch.eye(v.numel(), dtype=torch.float32)
    u = u / u.norm()
    return (torch.eye(v.numel(), dtype=torch.float64) - 2 * torch.outer(u, u)).float()


def random_rotation(d: int, seed: int = 0) -> torch.Tensor:
    """A random orthogonal (d, d) matrix, seeded (the Q of a Gaussian matrix's QR decomposition)."""
    g = torch.Generator().manual_seed(seed)
    Q, R = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))
    return (Q * torch.sign(torch.diagonal(R))).float()


def score_parts(maps, layer: int, head: int, query: int) -> ScoreParts:
    """The pieces behind row ``query`` of block ``layer + 1``'s head ``head`` (``maps`` from ``attention_maps``)."""
    if maps.queries is None:
        raise ValueError("these maps hold no query and key vectors: make them with attention_maps(model, tokenizer, "
                         "text)")
    layer = check_index("layer", layer, maps.num_layers)
    head = check_index("head", head, maps.num_heads)
    query = check_index("query token", query, len(maps.tokens))
    q, keys = maps.queries[layer, head, query], maps.keys[layer, head]
    products = q * keys                                            # (T, d_h)
    scores = products.sum(-1) / math.sqrt(q.numel())               # eq. 11.4 with the √d_h of eq. 11.6
    return ScoreParts(maps.tokens, layer, head, query, q, keys, products, scores,
                      maps.weights[layer, head, query].clone(), maps.mask[query].clone())


# the products are drawn as they are summed, before the sum is divided by √d_h (the printed parts are after it)
PRODUCTS_LABEL = "q[m]·k[m] (before ÷√d_h)"


def _symmetric(*tensors: torch.Tensor) -> float:
    m = max(float(t.abs().max()) for t in tensors if t.numel())
    return m if m > 0 else 1.0


def _horizontal_bar(width: int, lo: float, hi: float, label: str, f):
    """A small horizontal colour bar of the diverging map, with its two ends and 0 marked, and a label."""
    from PIL import Image, ImageDraw

    from . import raster

    h = raster.text_height(f)
    img = Image.new("RGB", (width, 10 + 2 + 2 * h), raster.BACKGROUND)
    grad = raster.colour_table(SCORE_CMAP)[np.linspace(0, 255, width).round().astype(np.intp)]
    img.paste(Image.fromarray(np.repeat(grad[None, :, :], 10, axis=0)), (0, 0))
    d = ImageDraw.Draw(img)
    d.rectangle((0, 0, width - 1, 9), outline=raster.INK)
    for x, s in ((0, f"{lo:+.1f}"), ((width - raster.text_width("0", f)) // 2, "0"),
                 (width - raster.text_width(f"{hi:+.1f}", f), f"{hi:+.1f}")):
        d.text((x, 12), s, font=f, fill=raster.INK)
    d.text(((width - raster.text_width(label, f)) // 2, 12 + h), label, font=f, fill=raster.INK)
    return img


def parts_png(parts: ScoreParts, key: int | None = None) -> bytes:
    """The table of :class:`ScoreParts` as PNG bytes: the query vector on top; a row per key with its vector, its
    products with the query (same colours: purple negative, orange positive), its score and weight; ``key``'s row
    ringed. Masked keys (causal) are grey."""
    from PIL import Image, ImageDraw

    from . import raster

    T, d_h = len(parts.tokens), parts.d_h
    r = int(min(18, max(9, 520 // max(T, 1))))                   # row height
    c = int(min(12, max(4, 280 // d_h)))                         # cell width of one dimension
    f, small, title_font = raster.font(int(min(12, max(8, r - 4)))), raster.font(11), raster.font(13)
    h = raster.text_height(f)
    label_w = max(raster.text_width(t, f) for t in parts.tokens + ["query q"]) + 8
    block = d_h * c
    num_w = raster.text_width("+00.00", f) + 10
    bar_w = 90
    x_keys = 6 + label_w
    x_prod = x_keys + block + 18
    x_score = x_prod + block + 14
    x_weight = x_score + num_w + 6
    width = x_weight + bar_w + raster.text_width("0.000", f) + 14
    title = (f"block {parts.layer + 1}, head {parts.head}: how query {parts.tokens[parts.query]!r} scores each key "
             f"(d_h = {d_h})")
    width = max(width, raster.text_width(title, title_font) + 12)
    top = raster.text_height(title_font) + 12
    head_h = raster.text_height(small) * 2 + 6
    y_q = top + head_h
    y_rows = y_q + r + 10
    legend_y = y_rows + T * r + 10
    m_vec, m_prod = _symmetric(parts.q, parts.keys), _symmetric(parts.products)
    legend = [_horizontal_bar(block, -m, m, label, small) for m, label in ((m_vec, "vector entries"),
                                                                            (m_prod, PRODUCTS_LABEL))]
    height = legend_y + legend[0].height + 8
    img = Image.new("RGB", (width, height), raster.BACKGROUND)
    d = ImageDraw.Draw(img)
    d.text(((width - raster.text_width(title, title_font)) // 2, 6), title, font=title_font, fill=raster.INK)
    for x, w, lines in ((x_keys, block, ("key vectors k_j", f"{d_h} dimensions")),
                        (x_prod, block, ("q × k_j, dimension by dimension", "(their sum is q·k_j)")),
                        (x_score, num_w, ("score", "q·k/√d_h")), (x_weight, bar_w, ("weight", "softmax"))):
        for i, s in enumerate(lines):
            d.text((x + (w - raster.text_width(s, small)) // 2, top + i * raster.text_height(small)), s, font=small,
                   fill=raster.INK)

    vec_colours = raster.colour_cells(torch.cat([parts.q[None], parts.keys]).numpy(), SCORE_CMAP, -m_vec, m_vec)
    products = parts.products.numpy().copy()
    products[~parts.visible.numpy()] = np.nan                      # masked keys: grey, as in the heat map
    prod_colours = raster.colour_cells(products, SCORE_CMAP, -m_prod, m_prod)

    def strip(colours: np.ndarray) -> Image.Image:                  # (n, d_h, 3) -> n rows of d_h cells
        return Image.fromarray(np.repeat(np.repeat(colours, r - 2, axis=0), c, axis=1))

    d.text((x_keys - 6 - raster.text_width("query q", f), y_q + (r - h) // 2), "query q", font=f, fill=raster.INK)
    img.paste(strip(vec_colours[:1]), (x_keys, y_q + 1))
    d.rectangle((x_keys - 1, y_q, x_keys + block, y_q + r - 1), outline=raster.INK)
    for j, tok in enumerate(parts.tokens):
        y = y_rows + j * r
        ink = raster.INK if bool(parts.visible[j]) else (140, 140, 140)
        d.text((x_keys - 6 - raster.text_width(tok, f), y + (r - h) // 2), tok, font=f, fill=ink)
        img.paste(strip(vec_colours[1 + j:2 + j]), (x_keys, y + 1))
        img.paste(strip(prod_colours[j:j + 1]), (x_prod, y + 1))
        score = f"{float(parts.scores[j]):+.2f}" if bool(parts.visible[j]) else "masked"
        d.text((x_score + num_w - 6 - raster.text_width(score, f), y + (r - h) // 2), score, font=f, fill=ink)
        w = float(parts.weights[j])
        d.rectangle((x_weight, y + 2, x_weight + max(1, round(w * bar_w)), y + r - 3),
                    fill=raster.hex_rgb("#5e3c99"))
        d.text((x_weight + bar_w + 4, y + (r - h) // 2), f"{w:.3f}", font=f, fill=ink)
    for x in (x_keys, x_prod):
        d.rectangle((x - 1, y_rows - 1, x + block, y_rows + T * r), outline=raster.INK)
    if key is not None:
        key = check_index("key token", key, T)
        y = y_rows + key * r
        d.rectangle((6, y - 1, width - 4, y + r - 1), outline=RING, width=2)
    img.paste(legend[0], (x_keys, legend_y))
    img.paste(legend[1], (x_prod, legend_y))
    return raster.png_bytes(img)
