"""MLM domain adaptation (lecture supplement 003, "Adapting BERT to particular domains using MLM fine-tuning").

A pretrained MLM has domain-general weights. Training it further with the *same* objective -- predict
the [MASK]ed tokens -- on text of one domain orients it towards that domain: its held-out loss on
in-domain text falls and its fill-mask guesses become the domain's words, usually at some cost on
general text. Here the domain is the Python reference manual (``course_lib/data/python_reference``, PSF
licence), split by document exactly as the live pretraining splits it (:func:`.training.split_documents`), so
the held-out documents are never trained on.

To keep a run within a minute or two of CPU, only the top ``train_layers`` encoder layers and the MLM
head's transform and bias are trained; the embeddings (and with them the tied output matrix) and the
lower layers stay as they were. Runs are cached in ``cache_dir("pretraining")`` by recipe, corpus and
the base model's weights.

    model, tok = course_lib.load_pretrained("course-bert")
    run = adapt_to_domain(model, tok, "course-bert")
    run.before["in-domain"], run.after["in-domain"]          # held-out MLM loss, before and after
"""
from __future__ import annotations

import copy
import hashlib
import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F

from ..model.device import seed_everything
from ..paths import cache_dir, finished_run, is_shipped, written_whole
from .masking import mlm_mask, pack_sequences, unigram_distribution
from .training import corpus_hash, cpu_threads, python_reference_documents, split_documents

CODE_VERSION = 2


@dataclass(frozen=True)
class AdaptationRecipe:
    """What fixes an adaptation run (its hash, with the corpus and the base weights, is the cache key)."""

    steps: int = 60
    batch_size: int = 16
    block_size: int = 64            # in-domain text packed into blocks of this many tokens (RoBERTa style)
    lr: float = 2e-4                # peak, after a linear warm-up; then linear decay to 0
    warmup: int = 6
    train_layers: int = 2           # the top encoder layers trained (with the MLM head's transform and bias)
    seed: int = 0
    held_out_every: int = 10        # the documents the live pretraining holds out are held out here too

    def __post_init__(self):
        if self.steps < 1 or self.batch_size < 1 or self.train_layers < 0:
            raise ValueError("steps and batch_size must be positive and train_layers at least 0")
        if not 0 <= self.warmup < self.steps:
            raise ValueError(f"warmup ({self.warmup}) must be between 0 and steps ({self.steps})")

    def lr_at(self, step: int) -> float:
        if step < self.warmup:
            return self.lr * (step + 1) / self.warmup
        return self.lr * max(0.0, (self.steps - step) / (self.steps - self.warmup))


def in_domain_texts(held_out_every: int = 10) -> tuple[list[str], list[str]]:
    """(training sentences, held-out sentences) of the Python reference manual."""
    train, held = split_documents(python_reference_documents(), held_out_every)
    return [s for d in train for s in d], [s for d in held for s in d]


@dataclass
class AdaptationRun:
    """An adapted copy of a model, and the held-out MLM losses before and after.

    before / after: {text set name: held-out cloze loss (every selected token [MASK]ed, the same masks
                     before and after)}, for the in-domain held-out text and any other text given
    losses:         the training loss of every step
    """

    model: torch.nn.Module
    recipe: AdaptationRecipe
    before: dict[str, float]
    after: dict[str, float]
    losses: list[float] = field(default_factory=list)
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    cached: bool = False
    trained_parameters: int = 0
    path: Path | None = None

    @property
    def shipped(self) -> bool:
        """Loaded from the run shipped with the course (not trained here, not from this machine's cache)."""
        return is_shipped(self.path)

    @property
    def origin(self) -> str:
        """Where this run came from, in words: 'just now', 'loaded from the cache' or 'shipped with the course'."""
        return "shipped with the course" if self.shipped else "loaded from the cache" if self.cached else "just now"


def _trainable(model, train_layers: int) -> dict[str, torch.nn.Parameter]:
    """The parameters adaptation trains: the top layers, the head's transform and its output bias."""
    n = model.config.num_hidden_layers
    if train_layers > n:
        raise ValueError(f"train_layers={train_layers}, but the model has only {n} layers")
    prefixes = [f"bert.encoder.layer.{i}." for i in range(n - train_layers, n)]
    prefixes += ["cls.predictions.transform.", "cls.predictions.bias"]
    return {k: p for k, p in model.named_parameters() if any(k.startswith(pre) for pre in prefixes)}


def _fingerprint(params: dict[str, torch.Tensor]) -> str:
    h = hashlib.sha256()
    for k in sorted(params):
        h.update(k.encode())
        h.update(params[k].detach().float().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def _blocks(tokenizer, texts: list[str], block_size: int, keep_last: bool = False) -> torch.Tensor:
    """The texts packed into (N, block_size) blocks; ``keep_last`` pads the last, partial block instead of
    dropping it (for scoring, where every text should count)."""
    ids = [e.ids for e in tokenizer.backend.encode_batch(list(texts), add_special_tokens=False)]
    return pack_sequences(ids, block_size, sep_id=tokenizer.sep_token_id, cls_id=tokenizer.cls_token_id,
                          pad_id=tokenizer.pad_token_id if keep_last else None)


@torch.no_grad()
def heldout_mlm_loss(model, tokenizer, texts: list[str], unigram: torch.Tensor, *, block_size: int = 64,
                     seed: int = 0, batch_size: int = 64) -> float:
    """Cloze loss on ``texts``: packed into blocks, 15% of the tokens [MASK]ed (all of them, no 80/10/10),
    the mean cross-entropy of the originals. The same texts and seed give the same masks."""
    if not texts:
        raise ValueError("no texts to score")
    blocks = _blocks(tokenizer, texts, block_size, keep_last=True)
    att = (blocks != tokenizer.pad_token_id).long()
    b = mlm_mask(blocks, special_ids=tokenizer.special_ids, mask_token_id=tokenizer.mask_token_id, unigram=unigram,
                 mask_prob=1.0, random_prob=0.0, generator=seed, attention_mask=att)
    was = model.training
    model.eval()
    total, n, dev = 0.0, 0, model.device
    for i in range(0, len(blocks), batch_size):
        ids, labels = b.input_ids[i:i + batch_size].to(dev), b.labels[i:i + batch_size].to(dev)
        out = model.bert(ids, att[i:i + batch_size].to(dev), torch.zeros_like(ids))
        sel = labels != -100
        logits = model.cls.predictions(out.last_hidden_state[sel])
        total += F.cross_entropy(logits, labels[sel], reduction="sum").item()
        n += int(sel.sum())
    model.train(was)
    return total / n


def adapt_to_domain(model, tokenizer, name: str, recipe: AdaptationRecipe | None = None, *,
                    other_texts: dict[str, list[str]] | None = None, cache: bool = True,
                    progress: bool = True, threads: int | None = 1, stop_after: int | None = None) -> AdaptationRun:
    """Continue MLM training of a copy of ``model`` on the Python reference manual; ``model`` is not changed.

    name:        the base model's name (part of the cache key, with a hash of the weights that get trained)
    other_texts: {name: texts} also scored before and after, e.g. general English, to see what adapting costs
    threads:     CPU threads (None: torch's setting); one by default, which on a busy machine is many times
                 faster than two threads waiting for each other, and on an idle one costs little
    cache:       load the run with the same key (recipe, name, the trained weights' start, the text, the code) --
                 the one shipped with the course (``course_lib/data/runs/pretraining``, tools/ship_runs.py) or
                 this machine's (``cache_dir("pretraining")``) -- or store this one there; False: train live
    stop_after:  end after this many steps, score nothing, store nothing (to check that a stored run is this
                 recipe's: its first steps' losses must be these)
    """
    recipe = recipe or AdaptationRecipe()
    if stop_after is not None and not 0 < stop_after <= recipe.steps:
        raise ValueError(f"stop_after must be between 1 and the recipe's {recipe.steps} steps, not {stop_after}")
    with cpu_threads(threads):
        return _adapt(model, tokenizer, name, recipe, other_texts, cache and stop_after is None, progress, stop_after)


def adaptation_run_name(model, name: str, recipe: AdaptationRecipe | None = None) -> str:
    """The folder name of the run of ``recipe`` on ``model`` (called ``name``): ``adapt-<name>-<key>``, the key a
    hash of the recipe, the name, the code version, the in-domain text and the weights that will be trained."""
    recipe = recipe or AdaptationRecipe()
    train_texts, held_texts = in_domain_texts(recipe.held_out_every)
    key = hashlib.sha256(json.dumps({"recipe": asdict(recipe), "name": name, "code": CODE_VERSION,
                                     "corpus": corpus_hash([train_texts, held_texts]),
                                     "base": _fingerprint(_trainable(model, recipe.train_layers))},
                                    sort_keys=True).encode()).hexdigest()[:16]
    safe_name = re.sub(r"[^\w.-]", "_", name)
    return f"adapt-{safe_name}-{key}"


def _adapt(model, tokenizer, name, recipe, other_texts, cache, progress, stop_after=None) -> AdaptationRun:
    if not getattr(model, "has_mlm_head", False):
        raise ValueError(f"{getattr(model, 'name_or_path', 'this model')} has no MLM head: there is nothing to "
                         "continue MLM training with")
    train_texts, held_texts = in_domain_texts(recipe.held_out_every)
    unigram = unigram_distribution(train_texts, tokenizer=tokenizer)
    texts = {"in-domain (held-out Python manual)": held_texts, **(other_texts or {})}
    run_name = adaptation_run_name(model, name, recipe)
    folder = cache_dir("pretraining") / run_name
    adapted = copy.deepcopy(model)
    params = _trainable(adapted, recipe.train_layers)
    score = dict(texts) if stop_after is None else {}
    stored = finished_run("pretraining", folder) if cache else None

    if stored is not None:
        folder = stored
        from safetensors.torch import load_file

        meta = json.loads((folder / "run.json").read_text())
        trained = load_file(str(folder / "trained.safetensors"))
        with torch.no_grad():
            for k, p in params.items():
                p.copy_(trained[k].to(p.dtype))
        adapted.eval()
        before = meta["before"]
        after = {k: heldout_mlm_loss(adapted, tokenizer, v, unigram, block_size=recipe.block_size)
                 if k not in meta["after"] else meta["after"][k] for k, v in score.items()}
        before.update({k: heldout_mlm_loss(model, tokenizer, v, unigram, block_size=recipe.block_size)
                       for k, v in score.items() if k not in before})
        return AdaptationRun(adapted, recipe, before, after, meta["losses"], meta["seconds"],
                             cpu_seconds=meta.get("cpu_seconds", 0.0), cached=True,
                             trained_parameters=sum(p.numel() for p in params.values()), path=folder)

    before = {k: heldout_mlm_loss(model, tokenizer, v, unigram, block_size=recipe.block_size)
              for k, v in score.items()}
    for p in adapted.parameters():
        p.requires_grad_(False)
    for p in params.values():
        p.requires_grad_(True)
    g = seed_everything(recipe.seed)
    opt = torch.optim.AdamW(list(params.values()), lr=recipe.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: recipe.lr_at(s) / recipe.lr)
    blocks = _blocks(tokenizer, train_texts, recipe.block_size)  # (N, block_size)
    dev = adapted.device
    adapted.train()
    losses, order = [], torch.zeros(0, dtype=torch.long)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=recipe.steps, desc=f"adapting {name} to the Python manual", unit="step")
    start, cpu_start = time.perf_counter(), time.process_time()
    for step in range(recipe.steps):
        if len(order) < recipe.batch_size:  # a new epoch of blocks, each with a fresh mask (dynamic masking)
            order = torch.cat([order, torch.randperm(len(blocks), generator=g)])
        idx, order = order[:recipe.batch_size], order[recipe.batch_size:]
        b = mlm_mask(blocks[idx], special_ids=tokenizer.special_ids, mask_token_id=tokenizer.mask_token_id,
                     unigram=unigram, generator=g)
        ids = b.input_ids.to(dev)
        out = adapted.bert(ids, torch.ones_like(ids), torch.zeros_like(ids))
        sel = (b.labels != -100).to(dev)
        loss = F.cross_entropy(adapted.cls.predictions(out.last_hidden_state[sel]), b.labels.to(dev)[sel])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(params.values()), 1.0)
        opt.step()
        sched.step()
        losses.append(round(loss.item(), 5))
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{sum(losses[-10:]) / len(losses[-10:]):.2f}")
        if stop_after is not None and step + 1 == stop_after:
            break
    if bar is not None:
        bar.close()
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    for p in adapted.parameters():
        p.requires_grad_(True)
    adapted.eval()
    after = {k: heldout_mlm_loss(adapted, tokenizer, v, unigram, block_size=recipe.block_size)
             for k, v in score.items()}
    run = AdaptationRun(adapted, recipe, before, after, losses, seconds, cpu_seconds,
                        trained_parameters=sum(p.numel() for p in params.values()))
    if cache:
        from safetensors.torch import save_file

        folder.mkdir(parents=True, exist_ok=True)
        with written_whole(folder / "trained.safetensors") as tmp:
            save_file({k: p.detach().cpu().contiguous() for k, p in params.items()}, str(tmp))
        meta = {"recipe": asdict(recipe), "name": name, "before": before, "after": after, "losses": losses,
                "seconds": round(seconds, 1), "cpu_seconds": round(cpu_seconds, 1), "torch": torch.__version__}
        with written_whole(folder / "run.json") as tmp:
            tmp.write_text(json.dumps(meta))
        run.path = folder
    return run


__all__ = ["AdaptationRecipe", "AdaptationRun", "adapt_to_domain", "adaptation_run_name", "heldout_mlm_loss", "in_domain_texts"]
