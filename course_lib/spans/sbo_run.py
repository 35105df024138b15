"""SpanBERT live (SLP3 §11.5, eq. 11.17-11.20): :func:`train_spanbert` continues an MLM model (``course-bert``
when it is installed, else ``minilm-wordnet-mlm``) with L = L_MLM + L_SBO on span-masked sentences for a few
steps (:mod:`.sbo_eval`, re-exported here, scores it on held-out sentences)."""
from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from ..finetuning.labelling import encode_words
from ..finetuning.runs import model_fingerprint, origin_words
from ..finetuning.training import fingerprint
from ..model.device import seed_everything
from ..paths import cache_root, finished_run, is_shipped, written_whole
from ..pretraining.masking import unigram_distribution
from .masking import MAX_SPAN_WORDS, P_GEOMETRIC, span_mask
from .ner import (SpanSentence)
from .sbo import SpanBertForPreTraining, sbo_targets
from .sbo_eval import PositionAccuracy, _unigram_loss, position_gap, sbo_position_accuracy  # noqa: F401 (re-exported)

CACHE_VERSION = 1  # part of the cache key of a SpanBERT run


def sbo_base_model_name() -> str:
    """'course-bert' once it is installed, else 'minilm-wordnet-mlm' (the course's MLM models)."""
    from ..checkpoints.registry import shipped_model_dir

    return "course-bert" if shipped_model_dir("course-bert") is not None else "minilm-wordnet-mlm"


@dataclass
class SpanBertRun:
    """A short SpanBERT run: per step L_MLM, L_SBO and the unigram loss of the same masked tokens (``unigram``:
    -mean log P(x_i), the loss of a head that ignores the context)."""

    base: str
    steps: int
    train_layers: int
    losses: list = field(default_factory=list)   # dicts: step, mlm, sbo, unigram
    seconds: float = 0.0
    cached: bool = False     # loaded, not trained: from the cache or shipped with the course
    shipped: bool = False    # shipped with the course (course_lib/data/runs/spans)

    @property
    def origin(self) -> str:
        return origin_words(self.shipped, self.cached)

    def smoothed(self, key: str, window: int = 10) -> list[float]:
        """The running mean of ``key`` over full windows only: its first value is the mean of steps 1..window (it
        belongs to step ``window``), so no point is the mean of fewer steps than the label says."""
        vals = [r[key] for r in self.losses]
        window = max(1, min(window, len(vals)))
        return [sum(vals[k - window + 1:k + 1]) / window for k in range(window - 1, len(vals))]

    def gap_by_pass(self, pool: int) -> list[float]:
        """The mean of L_SBO minus the unigram loss over each pass through a ``pool`` of batches (steps 1..pool,
        pool+1..2·pool, ...): on the first pass every batch is new to the head, on later ones it has seen them."""
        if pool < 1:
            raise ValueError(f"the pool holds at least one batch, not {pool}")
        rows = [self.losses[k:k + pool] for k in range(0, len(self.losses), pool)]
        return [sum(r["sbo"] - r["unigram"] for r in part) / len(part) for part in rows]

    def mean(self, key: str, first: int | None = None, last: int | None = None) -> float:
        """The mean of ``key`` over the first or the last so many steps."""
        rows = self.losses[:first] if first is not None else self.losses[-last:] if last is not None else self.losses
        return sum(r[key] for r in rows) / len(rows)


def _sbo_batches(tokenizer, sentences: Sequence[SpanSentence], unigram, batch_size, seed, max_len, p):
    """Endless span-masked batches of the sentences (a new mask each time: dynamic masking)."""
    g = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(sentences), generator=g).tolist()
    k = 0
    while True:
        if k + batch_size > len(order):
            order, k = torch.randperm(len(sentences), generator=g).tolist(), 0
        chunk = [list(sentences[i].words) for i in order[k:k + batch_size]]
        k += batch_size
        enc = encode_words(tokenizer, chunk, truncation=True, max_length=128)
        masking = span_mask(enc.input_ids, enc.word_ids, special_ids=tokenizer.special_ids,
                            mask_token_id=tokenizer.mask_token_id, unigram=unigram, p=p, max_len=max_len,
                            attention_mask=enc.attention_mask, generator=g)
        yield enc, masking


UNIGRAM_SMOOTHING = 0.1


def sbo_cache_key(config: dict, texts, mlm_model: nn.Module) -> str:
    """The cache folder's key: the run's configuration, its text, and the base model's weights themselves (a
    model retrained under the same name must not find the runs of its predecessor)."""
    return fingerprint([config, texts, model_fingerprint(mlm_model)])[:24]


def train_spanbert(sentences: Sequence[SpanSentence], *, base: str | None = None, steps: int = 96,
                   batch_size: int = 16, pool: int = 32, lr: float = 1e-4, head_lr: float = 2e-3,
                   train_layers: int = 0, seed: int = 0, start_from_unigram: bool = True, cache: bool = True,
                   progress: bool = True, callback=None):
    """Continue an MLM model with L = L_MLM + L_SBO for ``steps`` steps. Returns
    (SpanBertForPreTraining, tokenizer, unigram, SpanBertRun).

    ``train_layers=0`` (the default, fast on a CPU): the MLM model stays as it is and only the new SBO head
    learns. Its encoder outputs for a masked batch then never change, so they are computed once for a ``pool``
    of span-masked batches and the head trains for ``steps`` steps over that pool (L_MLM is then a fixed
    reference). ``train_layers`` > 0: the top encoder layers and the MLM head's transform and bias train too,
    with a fresh mask every step (dynamic masking). ``start_from_unigram``: the head starts as the unigram
    distribution of the text (:meth:`SpanBertForPreTraining.start_from_unigram`).

    Cached in ``cache_dir("spans")`` by configuration and data: a second call loads the trained weights. The run
    the notebook asks for ships with the course (``course_lib/data/runs/spans``, named as the cache names it), and
    is loaded from there first; ``cache=False`` trains it all the same.
    """
    from ..checkpoints import load_pretrained

    base = base or sbo_base_model_name()
    mlm_model, tokenizer = load_pretrained(base, device="cpu")
    texts = [list(s.words) for s in sentences]
    # (|V|,): token frequencies of the text, add-0.1 smoothed so that no held-out token gets probability 0
    unigram = unigram_distribution([" ".join(w) for w in texts], tokenizer=tokenizer, smoothing=UNIGRAM_SMOOTHING)
    config = dict(base=base, steps=steps, smoothing=UNIGRAM_SMOOTHING, batch_size=batch_size, pool=pool, lr=lr, head_lr=head_lr,
                  train_layers=train_layers, seed=seed, start_from_unigram=start_from_unigram, p=P_GEOMETRIC,
                  max_len=MAX_SPAN_WORDS, version=CACHE_VERSION)
    key = sbo_cache_key(config, texts, mlm_model)
    folder = cache_root() / "spans" / f"spanbert-{key}"
    seed_everything(seed)
    model = SpanBertForPreTraining(mlm_model)
    if start_from_unigram:
        model.start_from_unigram(unigram)
    finished = finished_run("spans", folder) if cache else None
    if finished is not None:
        model.load_state_dict(_read_trainable(finished), strict=False)
        run = SpanBertRun(**json.loads((finished / "run.json").read_text()))
        run.cached, run.shipped = True, is_shipped(finished)
        model.eval()
        return model, tokenizer, unigram, run

    for prm in model.parameters():
        prm.requires_grad_(False)
    layers = model.mlm.bert.encoder.layer
    if not 0 <= train_layers <= len(layers):
        raise ValueError(f"train_layers must be between 0 and {len(layers)}, not {train_layers}")
    trainable = [] if train_layers == 0 else [*layers[len(layers) - train_layers:].parameters(),
                                              *model.mlm.cls.predictions.transform.parameters(),
                                              model.mlm.cls.predictions.bias]
    head = [prm for n, prm in model.sbo.named_parameters() if n != "decoder.weight"]  # W_V stays the shared matrix
    for prm in trainable + head:
        prm.requires_grad_(True)
    groups = [{"params": head, "lr": head_lr}] + ([{"params": trainable, "lr": lr}] if trainable else [])
    opt = torch.optim.AdamW(groups, weight_decay=0.01)
    batches = _sbo_batches(tokenizer, sentences, unigram, batch_size, seed, MAX_SPAN_WORDS, P_GEOMETRIC)
    run = SpanBertRun(base=base, steps=steps, train_layers=train_layers)
    t0 = time.perf_counter()

    frozen_pool = []
    if train_layers == 0:  # the encoder's outputs and L_MLM of each pooled batch, computed once
        model.mlm.eval()
        with torch.no_grad():
            for _ in range(pool):
                enc, masking = next(batches)
                targets = sbo_targets(masking.spans, masking.labels)
                z = model.mlm.bert(masking.input_ids, enc.attention_mask, output_hidden_states=False).last_hidden_state
                mlm_loss = nn.functional.cross_entropy(model.mlm.cls.predictions(z[targets.row, targets.position]),
                                                       targets.labels)
                frozen_pool.append((z, targets, float(mlm_loss)))
    it = range(steps)
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(it, desc="SpanBERT (MLM + SBO)", leave=False)
    model.sbo.train()
    if train_layers:
        model.train()
    for step in it:
        if frozen_pool:
            z, targets, mlm_loss = frozen_pool[step % len(frozen_pool)]
            sbo_loss = nn.functional.cross_entropy(model.sbo(z, targets), targets.labels)
            loss = sbo_loss  # + L_MLM, a constant here
        else:
            enc, masking = next(batches)
            targets = sbo_targets(masking.spans, masking.labels)
            out = model(masking.input_ids, enc.attention_mask, targets=targets)
            loss, sbo_loss, mlm_loss = out.loss, out.sbo_loss, float(out.mlm_loss)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable + head, 1.0)
        opt.step()
        run.losses.append({"step": step + 1, "mlm": mlm_loss, "sbo": sbo_loss.item(),
                           "unigram": _unigram_loss(unigram, targets.labels)})
        if callback is not None:
            callback(run)
    model.eval()
    run.seconds = time.perf_counter() - t0
    if cache:
        from safetensors.torch import save_file

        names = {n for n, prm in model.named_parameters() if prm.requires_grad}
        names.add("sbo.decoder.bias")
        folder.mkdir(parents=True, exist_ok=True)
        with written_whole(folder / TRAINABLE_FILE) as tmp:
            save_file({n: t.detach().contiguous() for n, t in model.state_dict().items() if n in names}, str(tmp))
        with written_whole(folder / "run.json") as tmp:  # written last: a folder with run.json is complete
            tmp.write_text(json.dumps({k: v for k, v in run.__dict__.items() if k not in ("cached", "shipped")}))
    return model, tokenizer, unigram, run


TRAINABLE_FILE = "trainable.safetensors"  # what a SpanBERT run trained (a cache of an older version: trainable.pt)


def _read_trainable(folder) -> dict:
    from safetensors.torch import load_file

    if (folder / TRAINABLE_FILE).exists():
        return load_file(str(folder / TRAINABLE_FILE))
    return torch.load(folder / "trainable.pt", weights_only=True)
