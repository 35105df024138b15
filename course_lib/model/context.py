"""What a causal mask takes away from a bidirectional encoder (SLP3 §11.1, Fig. 11.1).

Under a causal mask query i may attend to keys 0..i only (:func:`~course_lib.model.attention.causal_mask`):

* :func:`causal_reach` -- the share of the T keys each position can still reach, (i+1)/T: the first token
  keeps only itself, the last keeps everything;
* :func:`compare_causal` -- the same sentence through the same encoder twice, bidirectionally (how it was
  trained) and with a causal mask in every layer: how far each position's vector moves, layer by layer;
* :func:`first_token_spread` -- under the mask the first token sees nothing but itself, so its vector no longer
  depends on the sentence at all;
* :func:`sublayer_changes` -- for one position, block by block: what the mask changes in the attention
  sublayer's output, how large the feed-forward sublayer's output is, and how far the block's output moves.

Masking a bidirectionally *trained* model at inference is an experiment, not a causal language model: the
model never saw the mask during training and has no next-token head (a causal LM is trained with the mask,
Chapter 10).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .bert import check_index


def causal_reach(T: int) -> torch.Tensor:
    """(T,) share of the T keys that query position i may attend to under a causal mask: (i + 1) / T."""
    if not isinstance(T, int) or isinstance(T, bool) or T < 1:
        raise ValueError(f"T must be a positive number of tokens, not {T!r}")
    return torch.arange(1, T + 1, dtype=torch.float64) / T


@dataclass
class CausalComparison:
    """One sentence, encoded bidirectionally and with a causal mask.

    tokens: T subword strings
    reach:  (T,) share of the keys each position may attend to under the causal mask
    change: (L+1, T) ‖h_causal − h_bidirectional‖ / ‖h_bidirectional‖ per layer (row 0: the embeddings,
            row ℓ: layer Lℓ, the output of block ℓ) and position
    cosine: (L+1, T) cosine between the two vectors, same layout
    """

    tokens: list[str]
    reach: torch.Tensor
    change: torch.Tensor
    cosine: torch.Tensor

    @property
    def num_layers(self) -> int:
        return self.change.size(0) - 1

    def layer_change(self, layer: int) -> torch.Tensor:
        """(T,) relative change at the output of block ``layer + 1``: ``layer`` is 0-based over the blocks
        (0 = block 1, whose output is layer L1, row 1 of ``change``)."""
        return self.change[1:][check_index("layer", layer, self.num_layers)]


def _one_text(encoding) -> None:
    if encoding.input_ids.dim() != 2 or encoding.input_ids.size(0) != 1:
        raise ValueError(f"compare one sentence at a time: the encoding holds {encoding.input_ids.size(0)} texts")


@torch.no_grad()
def compare_causal(model, encoding) -> CausalComparison:
    """Encode one tokenized sentence with and without a causal mask and compare every layer's vectors."""
    _one_text(encoding)
    bi = model(**encoding.to(model.device), output_hidden_states=True).hidden_states
    causal = model(**encoding, output_hidden_states=True, causal=True).hidden_states
    b = torch.stack([h[0] for h in bi]).double().cpu()      # (L+1, T, d)
    c = torch.stack([h[0] for h in causal]).double().cpu()
    change = (c - b).norm(dim=-1) / b.norm(dim=-1)            # (L+1, T)
    cosine = torch.nn.functional.cosine_similarity(b, c, dim=-1)
    tokens = encoding.tokens[0] if encoding.tokens else [str(int(i)) for i in encoding.input_ids[0]]
    return CausalComparison(list(tokens), causal_reach(b.size(1)), change, cosine)


@torch.no_grad()
def first_token_spread(model, tokenizer, sentences: list[str], causal: bool) -> float:
    """Largest distance between the last-layer vectors of the first token ([CLS]) of ``sentences``.

    With ``causal=True`` the first token attends only to itself in every layer, so the result is 0 (up to
    rounding) whatever the sentences: it has lost all of its context.
    """
    if len(sentences) < 2:
        raise ValueError("give at least two sentences to compare their first tokens")
    firsts = []
    for s in sentences:
        enc = tokenizer(s)
        out = model(**enc.to(model.device), causal=causal)
        firsts.append(out.last_hidden_state[0, 0].double().cpu())
    v = torch.stack(firsts)                                   # (S, d)
    return float(torch.cdist(v, v).max())


@dataclass
class SublayerChange:
    """One block, one position, bidirectional vs causal (x: the block's input, a: W^O MultiHead(x), the
    attention sublayer's output added to x, h = LayerNorm(x + a), f = FFN(h), the block's output LayerNorm(h + f)).

    reads_others:     the position's bidirectional attention weight on the other tokens (mean over the heads)
    attention_change: ‖a_bidirectional − a_causal‖ / ‖x_bidirectional‖, what the mask changes in the attention
                      sublayer's output, relative to the residual stream it is added to
    ffn_size:         ‖f‖ / ‖h‖ in the bidirectional run: how much the feed-forward sublayer adds
    ffn_change:       ‖f_bidirectional − f_causal‖ / ‖f_bidirectional‖
    output_change:    ‖y_causal − y_bidirectional‖ / ‖y_bidirectional‖ at the block's output (``change[block]``)
    """

    block: int
    reads_others: float
    attention_change: float
    ffn_size: float
    ffn_change: float
    output_change: float


@torch.no_grad()
def sublayer_changes(model, encoding, position: int = 0) -> list[SublayerChange]:
    """Block by block (1 … L), where the causal mask's change to ``position`` comes from."""
    _one_text(encoding)
    runs = []
    for causal in (False, True):
        seen: dict[int, dict[str, torch.Tensor]] = {}
        hooks = []
        for i, layer in enumerate(model.encoder.layer):
            def attn_hook(module, args, out, i=i):
                seen.setdefault(i, {}).update(a=module.dense(args[0])[0, position], x=args[1][0, position])

            def ffn_hook(module, args, out, i=i):
                seen.setdefault(i, {}).update(f=module.dense(args[0])[0, position], h=args[1][0, position],
                                              y=out[0, position])
            hooks += [layer.attention.output.register_forward_hook(attn_hook),
                      layer.output.register_forward_hook(ffn_hook)]
        try:
            out = model(**encoding.to(model.device), causal=causal, output_attentions=not causal)
        finally:
            for hook in hooks:
                hook.remove()
        runs.append(({i: {k: v.double().cpu() for k, v in d.items()} for i, d in seen.items()}, out))
    (bi, out), (ca, _) = runs
    rows = []
    for i in sorted(bi):
        b, c = bi[i], ca[i]
        to_self = float(out.attentions[i][0, :, position, position].double().mean())
        rows.append(SublayerChange(
            i + 1, 1 - to_self, float((b["a"] - c["a"]).norm() / b["x"].norm()), float(b["f"].norm() / b["h"].norm()),
            float((b["f"] - c["f"]).norm() / b["f"].norm()), float((c["y"] - b["y"]).norm() / b["y"].norm())))
    return rows
