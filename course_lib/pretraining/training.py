"""Pretraining a tiny BERT from scratch with MLM + NSP, live on a CPU (SLP3 §11.2).

The corpus is the prose of the Python language reference that ships with every
Python (``pydoc_data.topics``, PSF licence): 79 documents, ~450k characters,
split into sentences so that NSP has true next sentences. A small WordPiece
vocabulary is learned from it in a second (``tokenizers``), so that the output
softmax stays small and a 2-layer model learns something visible in ~2 minutes.

    tok, docs = corpus_tokenizer()
    run = pretrain_tiny_bert(tok, docs, steps=300, log_path=cache_dir("pretraining") / "tiny_bert_losses.json")
    run.losses  # falls
"""
from __future__ import annotations

import json
import re
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from ..model.bert import BertConfig
from ..model.device import get_device, seed_everything
from ..model.heads import BertForPreTraining
from .masking import encode_nsp, masked_lm_loss, mlm_mask, nsp_pairs, unigram_distribution
from ..tokenization.bert_tokenizer import SPECIAL_TOKENS, BertTokenizer

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")


def python_reference_documents(min_words: int = 4) -> list[list[str]]:
    """Documents (lists of sentences) from the Python reference manual's prose.

    Code blocks (indented lines), headings and underlines are dropped; paragraphs
    are joined and split into sentences at '.', '!' or '?' followed by a capital.
    """
    from pydoc_data.topics import topics

    docs = []
    for name in sorted(topics):
        paragraphs, current = [], []
        for line in topics[name].splitlines():
            if not line.strip() or line.startswith((" ", "\t")) or set(line.strip()) <= set("*=-~^"):
                if current:
                    paragraphs.append(" ".join(current))
                    current = []
                continue
            current.append(line.strip())
        if current:
            paragraphs.append(" ".join(current))
        sentences = [s.strip() for p in paragraphs for s in _SENTENCE_END.split(p)]
        sentences = [s for s in sentences if len(s.split()) >= min_words]
        if len(sentences) >= 2:
            docs.append(sentences)
    return docs


def train_wordpiece(texts: list[str], vocab_size: int = 2000, model_max_length: int = 512) -> BertTokenizer:
    """Learn a lower-cased WordPiece vocabulary of ``vocab_size`` from ``texts`` (takes about a second)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.train_from_iterator(texts, trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS)))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))],
    )
    return BertTokenizer(tok, model_max_length, name=f"WordPiece-{vocab_size} (Python reference)")


def corpus_tokenizer(vocab_size: int = 2000) -> tuple[BertTokenizer, list[list[str]]]:
    """The demo's documents and a WordPiece tokenizer learned on them."""
    docs = python_reference_documents()
    return train_wordpiece([s for d in docs for s in d], vocab_size), docs


def tiny_config(vocab_size: int, **overrides) -> BertConfig:
    """2 layers, d = 64, 4 heads, d_ff = 256, at most 64 positions: ~0.3M parameters + embeddings."""
    cfg = dict(vocab_size=vocab_size, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=256, max_position_embeddings=64, hidden_dropout_prob=0.1,
               attention_probs_dropout_prob=0.1)
    cfg.update(overrides)
    return BertConfig(**cfg)


@dataclass
class PretrainingRun:
    model: BertForPreTraining
    losses: list[dict] = field(default_factory=list)  # one entry per step: step, mlm, nsp, total, nsp_acc
    seconds: float = 0.0

    def smoothed(self, key: str = "total", window: int = 20) -> list[float]:
        """Running mean over ``window`` steps, for a readable loss curve."""
        vals = [r[key] for r in self.losses]
        return [sum(vals[max(0, i - window + 1): i + 1]) / (i + 1 - max(0, i - window + 1)) for i in range(len(vals))]


def pretrain_tiny_bert(tokenizer: BertTokenizer, docs: list[list[str]], *, steps: int = 300, batch_size: int = 32,
                       max_length: int = 64, lr: float = 1e-3, seed: int = 0, device=None, config: BertConfig | None = None,
                       log_path: str | Path | None = None, progress: bool = True) -> PretrainingRun:
    """Train BERT's two objectives together, L = L_MLM + L_NSP (§11.2.1-11.2.2), from random weights.

    Every step draws fresh NSP pairs (50% true next sentence) and a fresh MLM mask
    (15% of tokens; 80/10/10 with random tokens from the corpus's unigram
    distribution): dynamic masking, as in RoBERTa. Losses go to ``run.losses`` and,
    if ``log_path`` is given, to that JSON file after every 10 steps and at the end.
    """
    dev = get_device(device)
    g = seed_everything(seed)
    config = config or tiny_config(tokenizer.vocab_size, max_position_embeddings=max_length)
    model = BertForPreTraining(config, nsp=True).to(dev).train()
    unigram = unigram_distribution([s for d in docs for s in d], tokenizer=tokenizer)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 20))  # short warm-up
    run = PretrainingRun(model)
    bar = _progress(steps, progress)
    start = time.perf_counter()
    pool: list = []
    for step in range(steps):
        if len(pool) < batch_size:  # a new epoch: fresh NSP pairs in a fresh order
            epoch = nsp_pairs(docs, generator=g)
            pool += [epoch[i] for i in torch.randperm(len(epoch), generator=g).tolist()]
        pairs, pool = pool[:batch_size], pool[batch_size:]
        with warnings.catch_warnings():  # long sentence pairs are cut to max_length on purpose
            warnings.filterwarnings("ignore", message="truncated")
            enc, nsp_labels = encode_nsp(tokenizer, pairs, truncation=True, max_length=max_length)
        batch = mlm_mask(enc.input_ids, special_ids=tokenizer.special_ids, mask_token_id=tokenizer.mask_token_id,
                         unigram=unigram, attention_mask=enc.attention_mask, generator=g)
        out = model(batch.input_ids.to(dev), enc.attention_mask.to(dev), enc.token_type_ids.to(dev))
        mlm = masked_lm_loss(out.logits, batch.labels.to(dev))
        nsp = torch.nn.functional.cross_entropy(out.seq_relationship_logits, nsp_labels.to(dev))
        loss = mlm + nsp
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        acc = (out.seq_relationship_logits.argmax(-1).cpu() == nsp_labels).float().mean().item()
        run.losses.append({"step": step + 1, "mlm": mlm.item(), "nsp": nsp.item(), "total": loss.item(), "nsp_acc": acc})
        if bar is not None:
            bar.update(1)
            bar.set_postfix(mlm=f"{mlm.item():.2f}", nsp=f"{nsp.item():.2f}")
        if log_path and ((step + 1) % 10 == 0 or step + 1 == steps):
            _write_log(run, log_path, time.perf_counter() - start, config, steps, batch_size)
    if bar is not None:
        bar.close()
    run.seconds = time.perf_counter() - start
    if log_path:
        _write_log(run, log_path, run.seconds, config, steps, batch_size)
    model.eval()
    return run


def _progress(total: int, show: bool):
    if not show:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="pretraining tiny BERT", unit="step")


def _write_log(run, path, seconds, config, steps, batch_size):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"seconds": round(seconds, 1), "steps": steps, "batch_size": batch_size,
                                "config": asdict(config), "losses": run.losses}, indent=1))


__all__ = ["python_reference_documents", "train_wordpiece", "corpus_tokenizer", "tiny_config", "pretrain_tiny_bert",
           "PretrainingRun"]
