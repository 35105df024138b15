"""Everyday cloze sentences (``course_lib/data/cloze``): short modern sentences with one [MASK] and every word a
speaker would accept there ("He brushed his [MASK] before going to bed." -> teeth, hair). What a student types
first to try a BERT; a model passes a sentence when an acceptable word is its first guess (top-1) or among its
first k (top-k)."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import torch

from ..paths import data_dir
from .fill_mask import NoMLMHeadError

SPLITS = ("dev", "test")


def everyday_cloze(split: str = "dev") -> list[dict]:
    """The sentences of one split: [{"text", "answers", "topic"}]; "dev" (165) to look at, "test" (60) to report."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, not {split!r}")
    path = data_dir("cloze", f"everyday_{split}.jsonl")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@dataclass
class EverydayScores:
    n: int
    top1: float                # share of sentences whose first guess is acceptable
    topk: float                # share with an acceptable word among the first k
    k: int
    rows: list[dict] = field(repr=False)   # per sentence: text, answers, top (k tokens), top1_ok, topk_ok, copied

    @property
    def copied(self) -> int:
        """Sentences whose first guess is a word the sentence already holds (\"close the [MASK] when you leave the
        room\" -> *room*): a model leaning on the context's words instead of the slot."""
        return sum(r["copied"] for r in self.rows)

    def __str__(self) -> str:
        return (f"{self.n} everyday sentences: an acceptable word first in {self.top1:.0%}, "
                f"in the top {self.k} in {self.topk:.0%}")


@torch.no_grad()
def everyday_cloze_scores(model, tokenizer, items: list[dict], top_k: int = 5) -> EverydayScores:
    """Fill the one [MASK] of each item and check the first ``top_k`` guesses against its acceptable answers."""
    if not getattr(model, "has_mlm_head", False):
        raise NoMLMHeadError(f"{getattr(model, 'name_or_path', 'this model')} has no MLM head to fill a [MASK]")
    if not items:
        raise ValueError("no sentences to score")
    enc = tokenizer([it["text"] for it in items], device=model.device)
    where = enc.input_ids == tokenizer.mask_token_id  # (B, T)
    for it, count in zip(items, where.sum(1).tolist()):
        if count != 1:
            raise ValueError(f"{it['text']!r} must hold exactly one [MASK], it has {count}")
    # all sentences at once, in groups of similar length, and the MLM head only where the [MASK] is
    hidden = model.bert.last_hidden_by_length(enc.input_ids, enc.attention_mask, enc.token_type_ids)
    tops = model.cls.predictions(hidden[where]).float().topk(top_k).indices  # (B, k), in the items' order
    rows = []
    for it, ids in zip(items, tops.tolist()):
        top = tokenizer.convert_ids_to_tokens(ids)
        ok = set(it["answers"])
        words = set(re.findall(r"\w+", it["text"].lower().replace("[mask]", " ")))
        rows.append({"text": it["text"], "answers": list(it["answers"]), "top": top, "top1_ok": top[0] in ok,
                     "topk_ok": bool(ok & set(top)), "copied": top[0] in words})
    n = len(rows)
    return EverydayScores(n, sum(r["top1_ok"] for r in rows) / n, sum(r["topk_ok"] for r in rows) / n, top_k, rows)
