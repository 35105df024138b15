"""Fine-tuning only the top k layers, fast on a CPU: the frozen layers below compute the same states in every
epoch, so they are computed once (and cached on disk) and training runs the top k layers and the head only.

    freeze_below(model.bert, k)                          # embeddings and layers 0..L-k-1 frozen
    states = frozen_states(model.bert, ids, start=L - k)  # one (T_i, d) tensor per example, cached
    wrapped = FromLayer(model, start=L - k)               # wrapped(hidden=..., attention_mask=..., labels=...)

The result is the same model as training ``model`` with those layers frozen (same parameters, same loss, up to
dropout in the frozen layers, which a frozen layer should not use anyway); ``tests/test_labelling_training.py``
checks that the two give the same logits.

Each state carries where it came from (:data:`SOURCE`: the hash of the frozen weights and of all the ids, and its
row), and a training run keys such a tensor by that instead of its bytes (``runs.fingerprint``): the bytes are
floats that another CPU may round differently, while the weights and ids are the same everywhere, so a run trained
on frozen states has the same key on every machine and can ship with the course.
"""
from __future__ import annotations

import hashlib

import torch
from torch import nn

from ..model.attention import additive_mask, padding_mask
from ..model.bert import BertModel
from ..paths import cache_dir, written_whole
from .runs import SOURCE


def num_layers(encoder: BertModel) -> int:
    return len(encoder.encoder.layer)


def freeze_below(encoder: BertModel, train_layers: int) -> None:
    """Freeze the embeddings and all but the top ``train_layers`` blocks (0: only a head on top trains)."""
    L = num_layers(encoder)
    if not 0 <= train_layers <= L:
        raise ValueError(f"train_layers must be between 0 and {L} (this encoder has {L} layers), not {train_layers}")
    for p in encoder.embeddings.parameters():
        p.requires_grad_(False)
    for i, block in enumerate(encoder.encoder.layer):
        for p in block.parameters():
            p.requires_grad_(i >= L - train_layers)
    if encoder.pooler is not None:
        for p in encoder.pooler.parameters():
            p.requires_grad_(False)


def run_layers(encoder: BertModel, hidden: torch.Tensor, attention_mask: torch.Tensor, start: int,
               stop: int | None = None) -> torch.Tensor:
    """The blocks ``start..stop-1`` of the encoder on hidden states (B, T, d) -> (B, T, d)."""
    mask = additive_mask(padding_mask(attention_mask), hidden.dtype)  # (B, 1, 1, T)
    for block in encoder.encoder.layer[start:stop]:
        hidden, _, _ = block(hidden, mask, need_weights=False)
    return hidden


def _fingerprint(encoder: BertModel, start: int, rows) -> str:
    h = hashlib.sha256(f"frozen-states-v1 start={start}".encode())
    frozen = [encoder.embeddings] + list(encoder.encoder.layer[:start])
    for module in frozen:
        for name, t in module.state_dict().items():
            h.update(name.encode())
            h.update(t.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    for ids, types in rows:
        h.update(repr((list(ids), list(types))).encode())
    return h.hexdigest()


@torch.no_grad()
def frozen_states(encoder: BertModel, input_ids, token_type_ids=None, start: int | None = None,
                  batch_size: int = 32, cache: bool = True, progress: bool = False,
                  placeholders: bool = False) -> list[torch.Tensor]:
    """The hidden states entering block ``start`` (= output of the frozen part), one (T_i, d) tensor per example.

    input_ids: one list of token ids per example (no padding); token_type_ids likewise (default zeros).
    Examples are run in batches of similar length (little padding). With ``cache=True`` the states are
    stored in ``cache_dir("frozen_states")`` under a hash of the frozen weights and the ids.
    placeholders: run nothing; give tensors of the same shape, type and source that hold no numbers (on the
    ``meta`` device): they key a training run as the states would, to find a finished one without computing them.
    """
    if start is None:
        start = num_layers(encoder)
    rows = [(list(ids), list(tt) if tt is not None else [0] * len(ids))
            for ids, tt in zip(input_ids, token_type_ids if token_type_ids is not None else [None] * len(input_ids))]
    if not rows:
        raise ValueError("no examples given")
    path = None
    key = _fingerprint(encoder, start, rows)
    if placeholders:
        d = encoder.config.hidden_size  # float32, as the states come (run below, or from the cache)
        return _sourced([torch.empty((len(r[0]), d), dtype=torch.float32, device="meta") for r in rows], key)
    if cache:
        path = cache_dir("frozen_states") / f"{key[:32]}.safetensors"
        if path.exists():
            from safetensors.torch import load_file

            flat = load_file(str(path))["states"]
            return _sourced(list(torch.split(flat, [len(r[0]) for r in rows])), key)
    was_training = encoder.training
    encoder.eval()
    device = encoder.device
    order = sorted(range(len(rows)), key=lambda i: len(rows[i][0]))
    out: list[torch.Tensor | None] = [None] * len(rows)
    chunks = [order[s:s + batch_size] for s in range(0, len(order), batch_size)]
    if progress:
        from tqdm.auto import tqdm

        chunks = tqdm(chunks, desc=f"frozen layers 0-{start - 1}", leave=False)
    try:
        for chunk in chunks:
            T = max(len(rows[i][0]) for i in chunk)
            ids = torch.zeros((len(chunk), T), dtype=torch.long)
            types = torch.zeros_like(ids)
            mask = torch.zeros_like(ids)
            for b, i in enumerate(chunk):
                n = len(rows[i][0])
                ids[b, :n], types[b, :n], mask[b, :n] = torch.tensor(rows[i][0]), torch.tensor(rows[i][1]), 1
            ids, types, mask = ids.to(device), types.to(device), mask.to(device)
            h = run_layers(encoder, encoder.embeddings(ids, types), mask, 0, start).float().cpu()  # (B, T, d)
            for b, i in enumerate(chunk):
                out[i] = h[b, :len(rows[i][0])].clone()
    finally:
        encoder.train(was_training)
    if path is not None:
        from safetensors.torch import save_file

        with written_whole(path) as tmp:
            save_file({"states": torch.cat(out)}, str(tmp))
    return _sourced(out, key)


def _sourced(states: list[torch.Tensor], key: str) -> list[torch.Tensor]:
    for i, t in enumerate(states):
        setattr(t, SOURCE, f"frozen-states {key} row {i}")
    return states


def pad_states(states: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """(T_i, d) tensors -> padded (B, T, d) and the attention mask (B, T)."""
    T = max(s.size(0) for s in states)
    hidden = torch.zeros((len(states), T, states[0].size(1)), dtype=states[0].dtype)
    mask = torch.zeros((len(states), T), dtype=torch.long)
    for b, s in enumerate(states):
        hidden[b, :s.size(0)] = s
        mask[b, :s.size(0)] = 1
    return hidden, mask


class FromLayer(nn.Module):
    """A head model (anything with ``.bert`` and ``.head(z, **labels)``) run from block ``start`` on cached states.

    ``wrapped(hidden=(B, T, d), attention_mask=(B, T), **labels)`` returns what ``model(...)`` would, from the
    same parameters: ``fit`` can train it like the model itself.
    """

    def __init__(self, model: nn.Module, start: int):
        super().__init__()
        L = num_layers(model.bert)
        if not 0 <= start <= L:
            raise ValueError(f"start must be a layer between 0 and {L}, not {start}")
        self.model = model
        self.start = start

    def forward(self, hidden, attention_mask, **labels):
        z = run_layers(self.model.bert, hidden, attention_mask, self.start)  # (B, T, d)
        return self.model.head(z, **labels)
