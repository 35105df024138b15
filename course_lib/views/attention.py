"""What the attention explorer shows, computed without any widget (SLP3 §11.1, Fig. 11.1-11.2).

The widget in :mod:`course_lib.widgets` only draws these objects and wires the
controls; everything here is a plain function with a unit test.

    maps = attention_maps(model, tokenizer, "The bank raised its rates. [SEP] It was expected.")
    view = select_view(maps, layer=2, head=3, kind="weights")   # block 3 (index 2), head 3
    fig = draw_view(view)                       # a matplotlib Figure
    readout(maps, layer=2, head=3, query=1, key=2)
    select_view(maps, layer="all", head="all")  # every block's every head, one small map each (the "model view")

How one score is made from a query and a key, dimension by dimension, is in :mod:`course_lib.views.score_parts`;
the drawings are in :mod:`course_lib.views.attention_draw` (re-exported here).

``layer`` is the 0-based index of a transformer *block*, as in ``attentions[layer]``: index 0 is block 1, whose
output is layer L1 (``hidden_states[1]``; L0 is the embedding output). Titles and readouts name the block,
"block 3", never "layer 2". Heads count from 0.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import torch
from ..model.bert import check_index
from .attention_draw import SCORE_CMAP, WEIGHT_CMAP, draw_view, heatmap_png  # noqa: F401 (re-exported)

PAIR_SEPARATOR = "[SEP]"  # matched in any case: "[sep]" separates a pair too
TYPED_SPECIAL = "[MASK]"  # a special token the tokenizer reads as one, which fill_mask.input_notes leaves to its caller
MAX_EXPLORER_TOKENS = 64  # beyond this the labels of a T×T heatmap stop being readable
KINDS = ("weights", "scores")


class ExplorerInputError(ValueError):
    """Input the explorer cannot show; the message is meant for the person who typed it."""


def blank(text: str) -> bool:
    """True if ``text`` shows nothing: only white space and invisible format characters (Unicode category Cf:
    zero-width space and joiners, the byte-order mark, …), which ``str.strip`` keeps."""
    return all(c.isspace() or unicodedata.category(c) == "Cf" for c in text)


def parse_input(text: str) -> tuple[str, str | None]:
    """Split 'sentence A [SEP] sentence B' into a pair ([SEP] in any case); plain text is one sentence. A side that
    is :func:`blank` counts as empty."""
    if not isinstance(text, str) or blank(text):
        raise ExplorerInputError("Type a sentence (or two sentences separated by [SEP]).")
    parts = re.split(re.escape(PAIR_SEPARATOR), text, flags=re.IGNORECASE)
    if len(parts) == 1:
        return text.strip(), None
    if len(parts) > 2:
        raise ExplorerInputError(
            f"Use [SEP] once, between two sentences: found it {len(parts) - 1} times. "
            "The model adds the [CLS] and final [SEP] itself."
        )
    a, b = (p.strip() for p in parts)
    if blank(a) or blank(b):
        raise _nothing_on_one_side("before" if blank(a) else "after")
    return a, b


def input_notes(tokenizer, text: str) -> list[str]:
    """What the explorer reads otherwise than typed, for a note beside the maps: special tokens typed inside a
    sentence ([CLS], [PAD], [MASK], …: read as those tokens) and pieces outside the vocabulary ([UNK]), as
    :func:`course_lib.pretraining.fill_mask.input_notes` says them, side by side of a pair. [] for text the explorer
    refuses (its error says why)."""
    from ..pretraining.fill_mask import input_notes as fill_mask_notes

    try:
        sides = [s for s in parse_input(text) if s is not None]
    except ExplorerInputError:
        return []
    notes = list(dict.fromkeys(n for side in sides for n in fill_mask_notes(tokenizer, side)))
    if any(TYPED_SPECIAL in tokenizer.backend.encode(side, add_special_tokens=False).tokens for side in sides):
        notes.append(f"{TYPED_SPECIAL} typed in the text is a special token of the tokenizer: the model reads it as "
                     "that token, not as a word")
    return notes


def _nothing_on_one_side(side: str) -> ExplorerInputError:
    return ExplorerInputError(f"A sentence pair needs text on both sides of [SEP]; there is nothing {side} it.")


@dataclass
class AttentionMaps:
    """Every layer's attention for one input.

    tokens:  T subword strings, with [CLS] and [SEP]
    weights: (L, H, T, T) softmax weights
    scores:  (L, H, T, T) raw scores QKᵀ/√d_k, before masking
    mask:    (T, T) bool, True where a query may attend to a key
    boundary: index of the first [SEP] in a sentence pair, else None
    causal:  whether a causal mask was applied
    queries, keys: (L, H, T, d_h) each head's query and key vectors (scores = queries @ keysᵀ / √d_h)
    """

    tokens: list[str]
    weights: torch.Tensor
    scores: torch.Tensor
    mask: torch.Tensor
    boundary: int | None
    causal: bool
    queries: torch.Tensor | None = None
    keys: torch.Tensor | None = None

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
    # characters the tokenizer drops (control characters, a lone variation selector, …) leave a side without tokens
    if b is not None and not (tokenizer.tokenize(a) and tokenizer.tokenize(b)):
        raise _nothing_on_one_side("before" if not tokenizer.tokenize(a) else "after")
    if b is None and not tokenizer.tokenize(a):
        raise ExplorerInputError("Type a sentence (or two sentences separated by [SEP]): the tokenizer finds no "
                                 "token in this text.")
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
    qk = [out.scores.queries_keys(i) for i in range(len(out.scores))]
    queries, keys = (torch.stack([pair[j][0] for pair in qk]).float().cpu() for j in (0, 1))  # (L, H, T, d_h)
    mask = torch.ones(T, T, dtype=torch.bool).tril() if causal else torch.ones(T, T, dtype=torch.bool)
    boundary = enc.tokens[0].index("[SEP]") if b is not None else None
    return AttentionMaps(enc.tokens[0], weights, scores, mask, boundary, causal, queries, keys)


@dataclass
class View:
    """One picture: a single head's (T, T) matrix, all heads of a block, one head in every block, or every head of
    every block (the "model view": a row per block, a column per head)."""

    matrices: torch.Tensor  # (n, T, T); n = 1 for a single head
    heads: list[int]        # the head of each map
    tokens: list[str]
    layer: int | str        # the block's index, or "all"
    kind: str
    mask: torch.Tensor
    boundary: int | None
    title: str
    blocks: list[int] | None = None  # the block of each map (0-based); None: every map is block `layer`

    @property
    def names(self) -> list[str]:
        """What each small map is called in a grid: the part that changes from map to map."""
        if self.layer == "all" and len(set(self.heads)) == 1:
            return [f"block {b + 1}" for b in self.blocks]
        if self.layer == "all":
            return [f"block {b + 1}, head {h}" for b, h in zip(self.blocks, self.heads)]
        return [f"head {h}" for h in self.heads]

    @property
    def model_view(self) -> bool:
        """Every head of every block: too many maps for token labels; rows are blocks, columns heads."""
        return self.layer == "all" and len(set(self.heads)) > 1

    @property
    def value_range(self) -> tuple[float, float]:
        """Colour scale: weights on [0, 1]; scores symmetric around 0 over the allowed cells."""
        if self.kind == "weights":
            return 0.0, 1.0
        allowed = self.matrices[:, self.mask]
        m = float(allowed.abs().max()) if allowed.numel() else 1.0
        return -m, m


def select_view(maps: AttentionMaps, layer: int | str, head: int | str = "all", kind: str = "weights") -> View:
    """Pick what to draw: one head ('head=3') or the grid of all heads ('head="all"') of block ``layer + 1``;
    ``layer="all"``: that head in every block, or with ``head="all"`` every head of every block."""
    if kind not in KINDS:
        raise ValueError(f"kind must be 'weights' or 'scores', not {kind!r}")
    source = maps.weights if kind == "weights" else maps.scores
    heads = list(range(maps.num_heads)) if head == "all" else [check_index("head", head, maps.num_heads)]
    what = "softmax weights" if kind == "weights" else "raw scores QKᵀ/√d_k"
    direction = "causal" if maps.causal else "bidirectional"
    if layer == "all":
        blocks = [b for b in range(maps.num_layers) for _ in heads]
        heads = heads * maps.num_layers
        where = (f"head {heads[0]} in every block" if head != "all"
                 else f"every head of every block ({maps.num_layers} × {maps.num_heads})")
        return View(source[blocks, heads].clone(), heads, maps.tokens, "all", kind, maps.mask, maps.boundary,
                    f"{where}: {what} ({direction})", blocks)
    layer = check_index("layer", layer, maps.num_layers)
    where = f"block {layer + 1}, head {heads[0]}" if len(heads) == 1 else f"block {layer + 1}, all {len(heads)} heads"
    return View(source[layer, heads].clone(), heads, maps.tokens, layer, kind, maps.mask, maps.boundary,
                f"{where}: {what} ({direction})")


def readout_cell(maps: AttentionMaps, layer: int | str, head: int | str, query: int,
                 key: int) -> tuple[str, list[tuple[str, float, float]]]:
    """One cell, as :func:`readout` writes it: the line that names it, and (name, weight, score) for each map shown
    ("head 3" in one block; "block 2" for one head in every block; none for every head of every block, too many)."""
    T = len(maps.tokens)
    query, key = check_index("query token", query, T), check_index("key token", key, T)
    head_list = range(maps.num_heads) if head == "all" else [check_index("head", head, maps.num_heads)]
    if layer == "all":
        where = "every block"
        cells = [] if head == "all" else [(f"block {b + 1}", b, head_list[0]) for b in range(maps.num_layers)]
    else:
        layer = check_index("layer", layer, maps.num_layers)
        where = f"block {layer + 1}"
        cells = [(f"head {h}", layer, h) for h in head_list]
    q, k = maps.tokens[query], maps.tokens[key]
    masked = not bool(maps.mask[query, key])
    rows = [(name, float(maps.weights[b, h, query, key]), float(maps.scores[b, h, query, key])) for name, b, h in cells]
    note = " (masked: a causal model cannot look ahead, so the weight is 0)" if masked else ""
    if layer == "all" and head == "all":
        note += " (pick a block or a head to read its numbers)"
    return f"{where}, query {q!r} ({query}) → key {k!r} ({key}){note}", rows


def weight_and_score(weight: float, score: float) -> tuple[str, str]:
    """A cell's softmax weight and raw score as the readouts write them."""
    return f"{weight:.3f}", f"{score:+.2f}"


def head_numbers(name: str, weight: float, score: float) -> str:
    """One map's numbers for a cell: ``name`` is what :func:`readout_cell` calls the map ("head 3", "block 2")."""
    w, s = weight_and_score(weight, score)
    return f"{name}: weight {w}, score {s}"


def readout(maps: AttentionMaps, layer: int, head: int | str, query: int, key: int) -> str:
    """One line about one cell: how much token `query` attends to token `key`."""
    cell, rows = readout_cell(maps, layer, head, query, key)
    return f"{cell}: " + "; ".join(head_numbers(*r) for r in rows) if rows else cell


