"""Where a BERT's parameters are (SLP3 §11.1: "about 100M" for BERT-base, about 550M for XLM-R large).

:func:`parameter_breakdown` builds ``BertModel(config)`` on PyTorch's ``meta`` device (nothing is allocated)
and sums its parameters by component, so the parts always add up to the model's own count.
"""
from __future__ import annotations

import torch

from .bert import BertConfig, BertModel

# component -> what the parameter names of that component contain (Hugging Face names, see bert.py)
COMPONENTS = {
    "word embeddings": ("embeddings.word_embeddings.",),
    "position embeddings": ("embeddings.position_embeddings.",),
    "segment embeddings": ("embeddings.token_type_embeddings.",),
    "embedding LayerNorm": ("embeddings.LayerNorm.",),
    "attention (Q, K, V, W^O)": (".attention.self.", ".attention.output.dense."),
    "feed-forward (W_1, W_2)": (".intermediate.dense.", ".output.dense."),
    "layer norms of the blocks": (".attention.output.LayerNorm.", ".output.LayerNorm."),
    "pooler": ("pooler.",),
}


def _component(name: str) -> str:
    for component, parts in COMPONENTS.items():  # in order: the attention's W^O is found before the FFN's W_2
        if any(p in name for p in parts):
            return component
    raise ValueError(f"parameter {name!r} belongs to no component of {list(COMPONENTS)}")


def parameter_breakdown(config: BertConfig, add_pooling_layer: bool = True) -> dict[str, int]:
    """Component -> number of parameters of ``BertModel(config)``; the values sum to the model's count.

    The per-block components ("attention", "feed-forward", "layer norms of the blocks") are summed over all
    ``config.num_hidden_layers`` blocks.
    """
    with torch.device("meta"):
        model = BertModel(config, add_pooling_layer=add_pooling_layer)
    counts = dict.fromkeys(COMPONENTS, 0)
    for name, p in model.named_parameters():
        counts[_component(name)] += p.numel()
    if not add_pooling_layer:
        del counts["pooler"]
    return counts
