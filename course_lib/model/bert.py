"""A BERT encoder written to be read (SLP3 §11.1, Fig. 11.3).

Module and parameter names are those of Hugging Face's ``modeling_bert.py``
(``embeddings.word_embeddings.weight``, ``encoder.layer.0.attention.self.query.weight``,
…), so a Hugging Face BERT checkpoint loads with ``load_state_dict(strict=True)``
and no table of renamed keys.

One block (post-LN, as in the original BERT):

    h = LayerNorm(x + W^O · MultiHeadAttention(x))       # attention sub-layer
    y = LayerNorm(h + W_2 · GELU(W_1 · h))               # feed-forward sub-layer
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch
from torch import nn

from .attention import additive_mask, attention, attention_scores, causal_mask, combine_masks, merge_heads, padding_mask, split_heads


# ----------------------------------------------------------------------------- config

@dataclass(frozen=True)
class BertConfig:
    """The numbers that fix a BERT's shape (the fields of a Hugging Face ``config.json``)."""

    vocab_size: int = 30522            # |V|, WordPiece vocabulary
    hidden_size: int = 768             # d, model dimension
    num_hidden_layers: int = 12        # L, transformer blocks
    num_attention_heads: int = 12      # H, heads per block (d_h = d / H)
    intermediate_size: int = 3072      # d_ff, feed-forward inner size (4d)
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512  # the 512-token limit
    type_vocab_size: int = 2           # segments A and B
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    initializer_range: float = 0.02

    def __post_init__(self):
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size {self.hidden_size} is not divisible by num_attention_heads {self.num_attention_heads}"
            )
        if self.hidden_act not in ACTIVATIONS:
            raise ValueError(f"hidden_act {self.hidden_act!r} is not supported; use one of {sorted(ACTIVATIONS)}")

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @classmethod
    def from_dict(cls, d: dict) -> "BertConfig":
        """Build from a Hugging Face config dict; keys this encoder does not use are ignored."""
        pos = d.get("position_embedding_type", "absolute")
        if pos != "absolute":
            raise ValueError(f"position_embedding_type {pos!r} is not supported; course_lib's BERT uses absolute positions")
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names and v is not None})

    @classmethod
    def from_json(cls, path: str | Path) -> "BertConfig":
        return cls.from_dict(json.loads(Path(path).read_text()))

    def to_dict(self) -> dict:
        return {"model_type": "bert", "architectures": ["BertModel"], **asdict(self)}


def _gelu_tanh(x):
    return nn.functional.gelu(x, approximate="tanh")


ACTIVATIONS = {"gelu": nn.functional.gelu, "relu": torch.relu, "gelu_new": _gelu_tanh, "gelu_pytorch_tanh": _gelu_tanh}


# ----------------------------------------------------------------------------- output

class LayerScores(Sequence):
    """Per-layer raw scores QKᵀ/√d_k (B, H, T, T), computed when you index them.

    The encoder keeps each layer's queries and keys (B, H, T, d_h) rather than
    the (B, H, T, T) score matrices, which for long inputs are many times larger.
    ``scores[l]`` recomputes layer l's matrix exactly as the forward pass did.
    """

    def __init__(self, queries_keys: list[tuple[torch.Tensor, torch.Tensor]]):
        self._qk = queries_keys

    def __len__(self) -> int:
        return len(self._qk)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(len(self))[i]]
        q, k = self._qk[i]
        return attention_scores(q, k)

    def queries_keys(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Layer i's queries and keys (B, H, T, d_h), as its attention used them: ``self[i]`` is q·kᵀ/√d_h."""
        return self._qk[i]


@dataclass
class EncoderOutput:
    """What a forward pass returns (field names as in transformers' ``BaseModelOutputWithPooling``).

    last_hidden_state: (B, T, d)      the contextual embeddings z_1..z_T of the last layer
    pooler_output:     (B, d) or None  tanh(W · z_[CLS]), the pooler's [CLS] summary
    hidden_states:     L+1 × (B, T, d) the embedding layer, then the output of every block
                                        (only with output_hidden_states=True)
    attentions:        L × (B, H, T, T) softmax attention weights (only with output_attentions=True)
    scores:            L × (B, H, T, T) raw scores QKᵀ/√d_k before masking (only with output_attentions=True;
                                        not in transformers: the course shows them beside the weights)
    """

    last_hidden_state: torch.Tensor
    pooler_output: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None
    scores: LayerScores | None = None

    def attention(self, layer: int, head: int | None = None, kind: str = "weights") -> torch.Tensor:
        """Attention of one layer (B, H, T, T), or of one head (B, T, T).

        ``kind`` is ``"weights"`` (softmax) or ``"scores"`` (QKᵀ/√d_k). Layers and
        heads count from 0; negative indices count from the end, as in Python.
        """
        if kind not in ("weights", "scores"):
            raise ValueError(f"kind must be 'weights' or 'scores', not {kind!r}")
        maps = self.attentions if kind == "weights" else self.scores
        if maps is None:
            raise ValueError("attention was not recorded: call the model with output_attentions=True")
        layer = check_index("layer", layer, len(maps))
        out = maps[layer]
        if head is None:
            return out
        return out[:, check_index("head", head, out.size(1))]


def check_index(what: str, i: int, n: int) -> int:
    """Validate a layer/head index against a count n; return it as a non-negative index."""
    if not isinstance(i, int) or isinstance(i, bool):
        raise TypeError(f"{what} must be an integer, not {type(i).__name__}")
    if not -n <= i < n:
        if what == "layer":  # the notebooks' vocabulary: L0 is the embedding output, block ℓ's output is layer Lℓ
            raise IndexError(f"layer {i} is out of range: this model has {n} blocks (1-{n}), indexed 0-{n - 1}: index 0 "
                             f"is block 1, whose output is layer L1 (L0 is the embedding output, before any block)")
        plural = {"head": "heads"}.get(what, what + "s")
        raise IndexError(f"{what} {i} is out of range: this model has {n} {plural} (0-{n - 1})")
    return i % n


# ----------------------------------------------------------------------------- modules

class BertEmbeddings(nn.Module):
    """x_i = LayerNorm(E[w_i] + P[i] + S[segment_i]): token + position + segment embeddings."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        B, T = input_ids.shape
        positions = torch.arange(T, device=input_ids.device)  # (T,)
        x = self.word_embeddings(input_ids) + self.position_embeddings(positions) + self.token_type_embeddings(token_type_ids)
        return self.dropout(self.LayerNorm(x))  # (B, T, d)


class BertSelfAttention(nn.Module):
    """Multi-head self-attention: project to q, k, v, split into heads, attend (eq. 11.1-11.6)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None, need_weights: bool):
        """Returns the attention output (B, T, d) with its weights, and the (q, k) it used."""
        q = split_heads(self.query(x), self.num_heads)  # (B, H, T, d_h)
        k = split_heads(self.key(x), self.num_heads)
        v = split_heads(self.value(x), self.num_heads)
        p = self.dropout.p if self.training else 0.0
        out = attention(q, k, v, mask, need_weights=need_weights, dropout_p=p)
        out.output = merge_heads(out.output)  # (B, T, d)
        out.scores = None  # recomputed on demand from (q, k): see LayerScores
        return out, (q, k)


class BertSelfOutput(nn.Module):
    """W^O, then the residual connection and layer norm of the attention sub-layer."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, attended: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(residual + self.dropout(self.dense(attended)))


class BertAttention(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.self = BertSelfAttention(config)
        self.output = BertSelfOutput(config)

    def forward(self, x, mask, need_weights):
        att, qk = self.self(x, mask, need_weights)
        return self.output(att.output, x), att, qk


class BertIntermediate(nn.Module):
    """First feed-forward layer and its non-linearity: GELU(W_1 h + b_1), (B, T, d_ff)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.act = ACTIVATIONS[config.hidden_act]

    def forward(self, h):
        return self.act(self.dense(h))


class BertOutput(nn.Module):
    """Second feed-forward layer, then the residual connection and layer norm."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, inner, residual):
        return self.LayerNorm(residual + self.dropout(self.dense(inner)))


class BertLayer(nn.Module):
    """One transformer block (Fig. 11.3): attention sub-layer, then feed-forward sub-layer."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def forward(self, x, mask, need_weights):
        h, att, qk = self.attention(x, mask, need_weights)
        return self.output(self.intermediate(h), h), att, qk


class BertEncoder(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.layer = nn.ModuleList(BertLayer(config) for _ in range(config.num_hidden_layers))


class BertPooler(nn.Module):
    """tanh(W z_[CLS] + b): the summary vector used by NSP and sentence classification."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden):
        return torch.tanh(self.dense(hidden[:, 0]))


def init_weights(module: nn.Module, std: float = 0.02) -> None:
    """BERT's initialisation: N(0, 0.02) for weights, zeros for biases, LayerNorm = identity."""
    for m in module.modules():
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, std=std)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, std=std)
            if m.padding_idx is not None:
                with torch.no_grad():
                    m.weight[m.padding_idx].zero_()
        elif isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)


class BertModel(nn.Module):
    """The BERT encoder: embeddings, L transformer blocks, and (optionally) the pooler.

    >>> model = BertModel(BertConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=128))
    >>> out = model(torch.tensor([[101, 7592, 102]]))
    >>> out.last_hidden_state.shape
    torch.Size([1, 3, 64])
    """

    has_mlm_head = False

    def __init__(self, config: BertConfig, add_pooling_layer: bool = True):
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if add_pooling_layer else None
        self.name_or_path = "randomly initialised BERT"
        init_weights(self, config.initializer_range)

    @property
    def device(self) -> torch.device:
        return self.embeddings.word_embeddings.weight.device

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        output_attentions: bool = False,
        causal: bool = False,
        output_hidden_states: bool = False,
    ) -> EncoderOutput:
        """Encode a batch.

        input_ids, attention_mask, token_type_ids: (B, T) as a tokenizer returns them.
        output_attentions: also return every layer's attention weights (``attentions``) and ``scores``
            (B, H, T, T); this takes the explicit attention path (slower).
        causal: additionally hide future tokens, turning the encoder's bidirectional
            attention into a left-to-right one (for comparing the two, Fig. 11.1).
        output_hidden_states: also return every layer's output in ``hidden_states`` (embedding layer
            first); off by default, as in transformers, which saves memory.
        """
        if input_ids.dim() == 1:
            input_ids = input_ids[None]
        B, T = input_ids.shape
        if T > self.config.max_position_embeddings:
            raise ValueError(
                f"the input has {T} tokens, but this model has position embeddings for at most "
                f"{self.config.max_position_embeddings}; shorten the text or tokenize with truncation=True"
            )
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        mask = combine_masks(
            padding_mask(attention_mask.reshape(B, T)) if attention_mask is not None else None,
            causal_mask(T, device=input_ids.device) if causal else None,
        )  # (B, 1, 1, T), (T, T) or (B, 1, T, T); True = may attend
        if mask is not None:
            mask = additive_mask(mask, self.embeddings.word_embeddings.weight.dtype)  # once, shared by all layers

        x = self.embeddings(input_ids, token_type_ids.reshape(B, T))  # (B, T, d)
        hidden, weights, queries_keys = [x], [], []
        for block in self.encoder.layer:
            x, att, qk = block(x, mask, need_weights=output_attentions)
            if output_hidden_states:
                hidden.append(x)
            if output_attentions:
                weights.append(att.weights)
                queries_keys.append(qk)
        return EncoderOutput(
            last_hidden_state=x,
            hidden_states=tuple(hidden) if output_hidden_states else None,
            pooler_output=self.pooler(x) if self.pooler is not None else None,
            attentions=tuple(weights) if output_attentions else None,
            scores=LayerScores(queries_keys) if output_attentions else None,
        )

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    @torch.no_grad()
    def last_hidden_by_length(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                              token_type_ids: torch.Tensor | None = None, *, rows: int = 8) -> torch.Tensor:
        """The last layer's states (B, T, d) of a right-padded batch, computed ``rows`` sequences at a time in
        order of length, each group cut to its own longest sequence: the same states at every real token
        (padding never reaches them), with much less padding to compute. Padding positions hold zeros.

        For evaluating many texts of mixed length (a batch of 64 held-out texts is more than half padding)."""
        if input_ids.dim() != 2 or attention_mask.shape != input_ids.shape:
            raise ValueError(f"input_ids and attention_mask must both be (B, T), not {tuple(input_ids.shape)} "
                             f"and {tuple(attention_mask.shape)}")
        B, T = input_ids.shape
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        lengths = attention_mask.sum(1)
        if not bool((attention_mask == (torch.arange(T, device=lengths.device) < lengths[:, None])).all()):
            raise ValueError("the batch must be right-padded: each row's real tokens first, then its padding")
        out = torch.zeros(B, T, self.config.hidden_size, device=input_ids.device,
                          dtype=self.embeddings.word_embeddings.weight.dtype)
        for group in torch.argsort(lengths, descending=True, stable=True).split(rows):
            n = max(int(lengths[group].max()), 1)
            out[group, :n] = self(input_ids[group, :n], attention_mask[group, :n], token_type_ids[group, :n]
                                  ).last_hidden_state
        out[attention_mask == 0] = 0  # the padding the groups still had
        return out


def parameter_count(config: BertConfig, add_pooling_layer: bool = True) -> int:
    """Number of parameters of ``BertModel(config)``, found by building it on the meta device.

    Nothing is allocated, so this is instant even for XLM-R large's 560M parameters.
    """
    with torch.device("meta"):
        return BertModel(config, add_pooling_layer=add_pooling_layer).num_parameters()
