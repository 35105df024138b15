"""Pretraining a tiny BERT from scratch with MLM + NSP, live on a CPU (SLP3 §11.2).

The corpus is the prose of the Python language reference as Python 3.11.7 ships it
(``pydoc_data.topics``, PSF licence; a copy in ``course_lib/data/python_reference``, so that the text does not
change with the Python that runs it): 77 documents, ~2,000 sentences, ~36k words, split into
sentences so that NSP has true next sentences. One document in ten is held out. A WordPiece
vocabulary of 1,000 is learned from the training documents in a second (``tokenizers``).

What makes a run this small learn something visible in two minutes (measured, see
``tests/test_pretraining_run.py`` and the notebook): many small steps rather than few large
ones -- pairs cut to 32 tokens, batches of 32, 3,000 steps -- a high learning rate (5e-3) with a
short warm-up and a linear decay, no dropout, and the MLM head applied to the selected positions
only. With pairs of 64 tokens and 1,200 steps at 1e-3 the same model stays on the unigram plateau
(loss ≈ the unigram entropy, every probe answered with "the").

    run = pretrain_tiny_bert()               # PretrainingRecipe() by default; cached after the first run
    run.losses[-1], run.evals[-1], run.probes[-1]

Runs are cached in ``course_lib.paths.cache_dir("pretraining")``, keyed by the recipe and a hash
of the corpus, so that re-running the notebook loads the trained model in a second.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F

from ..model.bert import BertConfig
from ..model.device import get_device, seed_everything
from ..model.heads import BertForPreTraining
from ..paths import cache_dir, finished_run, is_shipped, written_whole
from ..tokenization.bert_tokenizer import BertTokenizer
from .masking import mlm_mask, nsp_pairs, unigram_distribution

CODE_VERSION = 3  # part of the cache key: bump when the training loop changes what a recipe produces

PROBES = (  # fill-mask probes watched during training (training_text_contains says which the corpus has verbatim)
    'the " [MASK] " statement is used for conditional execution.',
    "an [MASK] is raised if the key is not found.",
    "this method returns the [MASK] of the object.",
)


from .corpus import (collate_pairs, corpus_hash, corpus_tokenizer, python_reference_documents,  # noqa: F401
                     split_documents, train_wordpiece)


# ----------------------------------------------------------------------------- the recipe

@dataclass(frozen=True)
class PretrainingRecipe:
    """Everything that fixes the live run's result (its hash is the cache key)."""

    vocab_size: int = 1000           # WordPiece vocabulary learned from the training documents
    hidden_size: int = 64            # d
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    intermediate_size: int = 256     # d_ff
    max_length: int = 32             # [CLS] A [SEP] B [SEP] cut to this many tokens
    batch_size: int = 32             # sentence pairs per step
    steps: int = 3000
    lr: float = 5e-3                 # peak learning rate, after a linear warm-up; then linear decay to 0
    warmup: int = 100
    weight_decay: float = 0.01
    dropout: float = 0.0             # no dropout: a 2-minute run cannot overfit much, and learns faster without
    nsp: bool = True                 # L = L_MLM + L_NSP (False: MLM only, as RoBERTa)
    seed: int = 0
    held_out_every: int = 10         # one document in ten is held out
    eval_every: int = 150            # held-out loss, NSP accuracy and probes every this many steps
    probes: tuple[str, ...] = PROBES

    def __post_init__(self):
        for name in ("vocab_size", "hidden_size", "steps", "batch_size", "eval_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, not {getattr(self, name)}")
        if not 0 <= self.warmup < self.steps:
            raise ValueError(f"warmup ({self.warmup}) must be between 0 and steps ({self.steps})")

    def config(self, vocab_size: int | None = None) -> BertConfig:
        return BertConfig(vocab_size=vocab_size or self.vocab_size, hidden_size=self.hidden_size,
                          num_hidden_layers=self.num_hidden_layers, num_attention_heads=self.num_attention_heads,
                          intermediate_size=self.intermediate_size, max_position_embeddings=self.max_length,
                          hidden_dropout_prob=self.dropout, attention_probs_dropout_prob=self.dropout)

    def lr_at(self, step: int) -> float:
        """The learning rate of step ``step`` (0-based): linear warm-up, then linear decay to 0."""
        if step < self.warmup:
            return self.lr * (step + 1) / self.warmup
        return self.lr * max(0.0, (self.steps - step) / (self.steps - self.warmup))

    def key(self, corpus_sha: str) -> str:
        blob = json.dumps({"recipe": asdict(self), "corpus": corpus_sha, "code": CODE_VERSION}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def tiny_config(vocab_size: int, **overrides) -> BertConfig:
    """The recipe's BERT: 2 layers, d = 64, 4 heads, d_ff = 256, 32 positions (~0.1M parameters + embeddings)."""
    return BertConfig(**{**asdict(PretrainingRecipe().config(vocab_size)), **overrides})


# ----------------------------------------------------------------------------- the run

@dataclass
class PretrainingRun:
    """A finished run: the model and everything measured along the way.

    losses: one entry per step: step, mlm, nsp, lr (training batch; MLM on 80/10/10-corrupted input)
    evals:  every ``eval_every`` steps (and step 0): held-out cloze loss (every selected token [MASK]ed),
            top-1 accuracy and NSP accuracy on held-out pairs, the same cloze loss on a fixed sample of
            training pairs, and each probe's top-3
    """

    model: BertForPreTraining
    tokenizer: BertTokenizer
    recipe: PretrainingRecipe
    losses: list[dict] = field(default_factory=list)
    evals: list[dict] = field(default_factory=list)
    seconds: float = 0.0             # training time of the run that made it (also when loaded from the cache)
    cpu_seconds: float = 0.0         # its CPU time (= the wall time of a one-thread run on an idle machine)
    cached: bool = False             # True when loaded from the cache
    unigram_entropy: float = 0.0     # H of the training text's unigram distribution: a context-free guesser's loss
    heldout_unigram_loss: float = 0.0  # that guesser's cross-entropy on the held-out masked tokens
    path: Path | None = None

    @property
    def shipped(self) -> bool:
        """Loaded from the run shipped with the course (not trained here, not from this machine's cache)."""
        return is_shipped(self.path)

    @property
    def origin(self) -> str:
        """Where this run came from, in words: 'just now', 'loaded from the cache' or 'shipped with the course'."""
        return "shipped with the course" if self.shipped else "loaded from the cache" if self.cached else "just now"

    def smoothed(self, key: str = "mlm", window: int = 50) -> list[float]:
        """Running mean over ``window`` steps, for a readable loss curve."""
        vals = [r[key] for r in self.losses]
        out, total = [], 0.0
        for i, v in enumerate(vals):
            total += v - (vals[i - window] if i >= window else 0.0)
            out.append(total / min(i + 1, window))
        return out

    def probe_table(self) -> list[tuple[int, list[str]]]:
        """(step, top-1 prediction of each probe) at every evaluation."""
        return [(e["step"], [p[0] for p in e["probes"]]) for e in self.evals]


def _entropy(p: torch.Tensor) -> float:
    p = p[p > 0].double()
    return float(-(p * p.log()).sum())


class _Data:
    """The tokenized corpus: training and held-out documents as token-id lists, the unigram distribution."""

    def __init__(self, recipe: PretrainingRecipe, docs: list[list[str]]):
        self.train_docs, self.held_docs = split_documents(docs, recipe.held_out_every)
        self.tokenizer = train_wordpiece([s for d in self.train_docs for s in d], recipe.vocab_size)
        tok = self.tokenizer

        def ids(documents):
            return [[e.ids for e in tok.backend.encode_batch(d, add_special_tokens=False)] for d in documents]

        self.train, self.held = ids(self.train_docs), ids(self.held_docs)
        self.unigram = unigram_distribution([s for d in self.train for s in d], vocab_size=tok.vocab_size,
                                            exclude=tok.special_ids)
        self.ids = dict(cls_id=tok.cls_token_id, sep_id=tok.sep_token_id, pad_id=tok.pad_token_id)
        self.mask_args = dict(special_ids=tok.special_ids, mask_token_id=tok.mask_token_id, unigram=self.unigram)

    def eval_batch(self, docs, seed: int, max_length: int, limit: int | None = None):
        """Fixed pairs of ``docs`` with every selected token [MASK]ed: the cloze test of the evaluations."""
        pairs = nsp_pairs(docs, generator=seed)[:limit]
        ids, att, types, nsp = collate_pairs(pairs, max_length=max_length, **self.ids)
        b = mlm_mask(ids, attention_mask=att, generator=seed + 1, mask_prob=1.0, random_prob=0.0, **self.mask_args)
        return b, att, types, nsp


@torch.no_grad()
def _cloze(model, batch, dev) -> tuple[float, float, float]:
    """(MLM loss on the selected tokens, their top-1 accuracy, NSP accuracy) of one fixed evaluation batch."""
    b, att, types, nsp = batch
    was = model.training
    model.eval()
    out = model.bert(b.input_ids.to(dev), att.to(dev), types.to(dev))
    sel = (b.labels != -100).to(dev)
    logits = model.cls.predictions(out.last_hidden_state[sel])
    gold = b.labels.to(dev)[sel]
    loss = F.cross_entropy(logits, gold).item()
    top1 = (logits.argmax(-1) == gold).float().mean().item()
    acc = float("nan")
    if model.cls.seq_relationship is not None:
        acc = (model.cls.seq_relationship(out.pooler_output).argmax(-1).cpu() == nsp).float().mean().item()
    model.train(was)
    return loss, top1, acc


def _probe(model, tokenizer, probes) -> list[list[str]]:
    from .fill_mask import fill_mask

    was = model.training
    model.eval()
    out = [fill_mask(model, tokenizer, p, top_k=3)[0].tokens for p in probes]
    model.train(was)
    return out


def pretrain_tiny_bert(recipe: PretrainingRecipe | None = None, *, cache: bool = True, progress: bool = True,
                       device=None, threads: int | None = 1, stop_after: int | None = None) -> PretrainingRun:
    """Train BERT's two objectives together, L = L_MLM + L_NSP (§11.2.1-11.2.2), from random weights.

    Every step draws a batch of NSP pairs (50% true next sentence; a new set of pairs each epoch)
    and a fresh MLM mask (15% of the tokens; 80/10/10 with random tokens from the training text's
    unigram distribution): dynamic masking, as in RoBERTa. With ``cache`` a run with the same recipe
    and corpus is loaded instead of trained again: the run shipped with the course
    (``course_lib/data/runs/pretraining``, made by tools/ship_runs.py) or the one in ``cache_dir("pretraining")``.
    ``cache=False`` trains it live (about 80 CPU-seconds), whatever is stored.

    threads: CPU threads for the run (None: torch's setting). One by default: the matrices of a d = 64
    model are too small to share between threads, and on a busy machine a second thread that has to be
    waited for made each step 30 times slower (measured).
    stop_after: end after this many steps and store nothing (to check that a stored run is this recipe's:
    its first steps' losses must be these).
    """
    recipe = recipe or PretrainingRecipe()
    docs = python_reference_documents()
    folder = run_folder(recipe, docs)
    dev = get_device(device)
    if stop_after is not None:
        if not 0 < stop_after <= recipe.steps:
            raise ValueError(f"stop_after must be between 1 and the recipe's {recipe.steps} steps, not {stop_after}")
        cache = False
    if cache and (stored := finished_run("pretraining", folder)) is not None:
        return load_run(stored, device=dev)
    with cpu_threads(threads):
        return _pretrain(recipe, docs, folder, dev, cache, progress, stop_after)


@contextlib.contextmanager
def cpu_threads(n: int | None):
    """Run the block with ``n`` CPU threads (None: leave torch's setting), then restore the setting."""
    before = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _pretrain(recipe, docs, folder, dev, cache, progress, stop_after=None) -> PretrainingRun:
    data = _Data(recipe, docs)
    g = seed_everything(recipe.seed)
    tok = data.tokenizer
    model = BertForPreTraining(recipe.config(tok.vocab_size), nsp=recipe.nsp).to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=recipe.lr, betas=(0.9, 0.98), weight_decay=recipe.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: recipe.lr_at(s) / recipe.lr)
    held = data.eval_batch(data.held, seed=123, max_length=recipe.max_length)
    seen = data.eval_batch(data.train, seed=321, max_length=recipe.max_length, limit=len(held[0].input_ids))
    sel = held[0].labels != -100
    run = PretrainingRun(model, tok, recipe, unigram_entropy=_entropy(data.unigram),
                         heldout_unigram_loss=float(-data.unigram.clamp_min(1e-12).log()[held[0].labels[sel]].mean()))

    def evaluate(step):
        loss, top1, acc = _cloze(model, held, dev)
        train_loss, _, train_acc = _cloze(model, seen, dev)
        run.evals.append({"step": step, "heldout_mlm": loss, "heldout_top1": top1, "heldout_nsp_acc": acc,
                          "train_mlm": train_loss, "train_nsp_acc": train_acc,
                          "probes": _probe(model, tok, recipe.probes)})

    bar = _progress(recipe.steps, progress)
    start, cpu_start = time.perf_counter(), time.process_time()
    evaluate(0)
    pool: list = []
    for step in range(recipe.steps):
        if len(pool) < recipe.batch_size:  # a new epoch: fresh NSP pairs in a fresh order
            epoch = nsp_pairs(data.train, generator=g)
            pool += [epoch[i] for i in torch.randperm(len(epoch), generator=g).tolist()]
        pairs, pool = pool[:recipe.batch_size], pool[recipe.batch_size:]
        ids, att, types, nsp_labels = collate_pairs(pairs, max_length=recipe.max_length, **data.ids)
        batch = mlm_mask(ids, attention_mask=att, generator=g, **data.mask_args)
        out = model.bert(batch.input_ids.to(dev), att.to(dev), types.to(dev))
        selected = (batch.labels != -100).to(dev)
        logits = model.cls.predictions(out.last_hidden_state[selected])  # (|M|, |V|): the head on M only
        mlm = F.cross_entropy(logits, batch.labels.to(dev)[selected])
        loss = mlm
        nsp = torch.zeros(())
        if recipe.nsp:
            nsp = F.cross_entropy(model.cls.seq_relationship(out.pooler_output), nsp_labels.to(dev))
            loss = mlm + nsp
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        run.losses.append({"step": step + 1, "mlm": round(mlm.item(), 5), "nsp": round(nsp.item(), 5),
                           "lr": recipe.lr_at(step)})
        if (step + 1) % recipe.eval_every == 0 or step + 1 == recipe.steps:
            evaluate(step + 1)
        if bar is not None:
            bar.update(1)
            if (step + 1) % 10 == 0:
                bar.set_postfix(mlm=f"{run.smoothed('mlm', 10)[-1]:.2f}", nsp=f"{run.smoothed('nsp', 10)[-1]:.2f}")
        if stop_after is not None and step + 1 == stop_after:
            break
    if bar is not None:
        bar.close()
    run.seconds, run.cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    model.eval()
    if cache:
        save_run(run, folder)
    return run


def run_folder(recipe: PretrainingRecipe, docs: list[list[str]] | None = None) -> Path:
    """Where the run of ``recipe`` is cached: ``cache_dir("pretraining")/tiny-bert-<key>``."""
    docs = python_reference_documents() if docs is None else docs
    return cache_dir("pretraining") / f"tiny-bert-{recipe.key(corpus_hash(docs))}"


def _words(text: str) -> str:
    """Lower-cased words and punctuation marks separated by single spaces, as BERT's pre-tokenizer splits them
    ('The "if" statement' -> 'the " if " statement')."""
    from tokenizers.pre_tokenizers import BertPreTokenizer

    return " ".join(w for w, _ in BertPreTokenizer().pre_tokenize_str(text.lower()))


def training_text_contains(phrase: str, recipe: PretrainingRecipe | None = None) -> bool:
    """Does the run's training text contain ``phrase``, word for word (case, spacing and the phrase's final
    punctuation mark aside)? For probes: a probe the model could have memorised, or one it must complete
    from what it generalised."""
    train, _ = split_documents(python_reference_documents(), (recipe or PretrainingRecipe()).held_out_every)
    words = _words(phrase.strip().rstrip(".:;!?"))
    return any(words in _words(s) for d in train for s in d)


def _progress(total: int, show: bool):
    if not show:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="pretraining tiny BERT", unit="step")


# ----------------------------------------------------------------------------- the cache

def save_run(run: PretrainingRun, folder: str | Path) -> Path:
    """Write the model (safetensors, the tied matrix once), its tokenizer and the measurements to ``folder``."""
    from safetensors.torch import save_model

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with written_whole(folder / "model.safetensors") as tmp:
        save_model(run.model, str(tmp))
    with written_whole(folder / "tokenizer.json") as tmp:
        run.tokenizer.backend.save(str(tmp))
    meta = {"recipe": asdict(run.recipe), "config": asdict(run.model.config), "seconds": round(run.seconds, 1),
            "cpu_seconds": round(run.cpu_seconds, 1),
            "torch": torch.__version__, "threads": torch.get_num_threads(),
            "unigram_entropy": run.unigram_entropy, "heldout_unigram_loss": run.heldout_unigram_loss,
            "losses": run.losses, "evals": run.evals}
    with written_whole(folder / "run.json") as tmp:  # written last: a folder with run.json is complete
        tmp.write_text(json.dumps(meta))
    run.path = folder
    return folder


def load_run(folder: str | Path, device=None) -> PretrainingRun:
    """A run saved by :func:`save_run` (what :func:`pretrain_tiny_bert` returns on a cache hit)."""
    from safetensors.torch import load_model
    from tokenizers import Tokenizer

    folder = Path(folder)
    meta = json.loads((folder / "run.json").read_text())
    recipe = PretrainingRecipe(**{**meta["recipe"], "probes": tuple(meta["recipe"]["probes"])})
    model = BertForPreTraining(BertConfig(**meta["config"]), nsp=recipe.nsp)
    load_model(model, str(folder / "model.safetensors"))
    model.tie_weights()
    model.to(get_device(device)).eval()
    model.name_or_path = f"tiny BERT pretrained live ({folder.name})"
    tok = BertTokenizer(Tokenizer.from_file(str(folder / "tokenizer.json")), name=f"WordPiece-{recipe.vocab_size}")
    return PretrainingRun(model, tok, recipe, meta["losses"], meta["evals"], meta["seconds"],
                          cpu_seconds=meta.get("cpu_seconds", 0.0), cached=True,
                          unigram_entropy=meta["unigram_entropy"], heldout_unigram_loss=meta["heldout_unigram_loss"],
                          path=folder)


def log_vocab(run: PretrainingRun) -> float:
    """ln |V|: the loss of a uniform guess over the vocabulary, where an untrained model starts."""
    return math.log(run.tokenizer.vocab_size)


__all__ = ["python_reference_documents", "split_documents", "corpus_hash", "train_wordpiece", "corpus_tokenizer",
           "collate_pairs", "PretrainingRecipe", "tiny_config", "PretrainingRun", "pretrain_tiny_bert", "run_folder",
           "training_text_contains", "cpu_threads", "save_run", "load_run", "log_vocab", "PROBES"]
