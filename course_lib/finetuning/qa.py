"""Extractive QA as span extraction: data, features, the best span (the BERT lectures).

* :func:`load_squad` -- the shipped SQuAD 2.0 sample (see ``course_lib/data/squad/DATA_CARD.md``).
* :func:`make_features` -- ``[CLS] question [SEP] context window [SEP]`` with the character offsets of
  every context token, long contexts cut into overlapping windows, gold start/end token positions
  (0, the [CLS] token, when the answer is not in the window or there is none).
* :func:`best_span` -- argmax of start_i + end_j over i ≤ j < i + L (spans of at most L tokens, the length limit L).
* :func:`predict_answers` -- from the logits of all windows of a question to its answer text, or "" when
  [CLS] scores higher than every span ("no answer").

Scoring (SQuAD's EM and F1), the no-answer threshold and a baseline without learning are in
:mod:`course_lib.finetuning.qa_eval`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import torch

from .qa_eval import NO_ANSWER


# ----------------------------------------------------------------------------- data

@dataclass(frozen=True)
class QAExample:
    """One question about one context; ``answers`` are (text, character start) pairs, empty if unanswerable."""

    id: str
    title: str
    question: str
    context: str
    answers: tuple[tuple[str, int], ...] = ()

    @property
    def is_impossible(self) -> bool:
        return not self.answers


def read_squad(data: dict) -> list[QAExample]:
    """SQuAD-format json (``{"data": [{"title", "paragraphs": [{"context", "qas"}]}]}``) -> examples."""
    out = []
    for article in data["data"]:
        for para in article["paragraphs"]:
            ctx = para["context"]
            for qa in para["qas"]:
                answers = tuple((a["text"], int(a["answer_start"])) for a in qa.get("answers", []))
                for text, start in answers:
                    if ctx[start:start + len(text)] != text:
                        raise ValueError(f"question {qa['id']}: the answer {text!r} is not at character {start}")
                out.append(QAExample(qa["id"], article["title"], qa["question"], ctx, answers))
    return out


def load_squad(split: str = "train") -> list[QAExample]:
    """The shipped SQuAD 2.0 dev sample: "train" (4 articles) or "test" (the held-out article)."""
    from ..paths import data_dir

    if split not in ("train", "test"):
        raise ValueError(f"unknown split {split!r}: choose 'train' or 'test'")
    return read_squad(json.loads(data_dir("squad", f"{split}.json").read_text(encoding="utf-8")))


# ----------------------------------------------------------------------------- features

@dataclass
class QAFeatures:
    """Model inputs for N windows (tensors (N, T)), and how to map them back.

    offsets: N lists of T (start, end) character spans in the context, None for question/special/padding
    tokens; example_index: (N,) the example each window came from; start_positions / end_positions:
    (N,) gold token positions, 0 ([CLS]) when the window holds no answer.
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    token_type_ids: torch.Tensor
    start_positions: torch.Tensor
    end_positions: torch.Tensor
    example_index: torch.Tensor
    offsets: list[list[tuple[int, int] | None]] = field(default_factory=list)
    tokens: list[list[str]] = field(default_factory=list)

    def __len__(self) -> int:
        return self.input_ids.size(0)

    def inputs(self, rows=slice(None)) -> dict:
        """The model inputs of some windows, trimmed to their longest real length."""
        mask = self.attention_mask[rows]
        T = int(mask.sum(1).max())
        return {"input_ids": self.input_ids[rows, :T], "attention_mask": mask[:, :T],
                "token_type_ids": self.token_type_ids[rows, :T]}


def _answer_tokens(offsets, answer: tuple[str, int]) -> tuple[int, int] | None:
    """Token positions (first, last) of an answer's characters, if the window contains all of it."""
    text, a = answer
    b = a + len(text)
    first = next((i for i, o in enumerate(offsets) if o is not None and o[1] > a), None)
    last = next((i for i in range(len(offsets) - 1, -1, -1) if offsets[i] is not None and offsets[i][0] < b), None)
    inside = [o for o in offsets if o is not None]
    if first is None or last is None or not inside or inside[0][0] > a or inside[-1][1] < b or first > last:
        return None
    return first, last


def make_features(tokenizer, examples, max_length: int = 256, stride: int = 96,
                  max_question_tokens: int = 64) -> QAFeatures:
    """Encode examples as ``[CLS] question [SEP] context-window [SEP]``.

    A context too long for ``max_length`` is cut into windows that overlap by ``stride`` tokens.
    The first gold answer gives the training target of each window.
    """
    if not examples:
        raise ValueError("no examples given")
    if max_length < max_question_tokens + 8:
        raise ValueError(f"max_length={max_length} leaves no room for the context after a question of "
                         f"up to {max_question_tokens} tokens")
    if not 0 <= stride < max_length - max_question_tokens - 3:
        raise ValueError(f"stride={stride} must be smaller than the context window")
    cls_id, sep_id, pad_id = tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id
    rows = []
    q_encs = tokenizer.backend.encode_batch([e.question for e in examples], add_special_tokens=False)
    c_encs = tokenizer.backend.encode_batch([e.context for e in examples], add_special_tokens=False)
    for n, (ex, q, c) in enumerate(zip(examples, q_encs, c_encs)):
        q_ids = list(q.ids)[:max_question_tokens]
        room = max_length - len(q_ids) - 3
        start = 0
        while True:
            ids = list(c.ids[start:start + room])
            offs = [tuple(o) for o in c.offsets[start:start + room]]
            toks = list(c.tokens[start:start + room])
            head = [cls_id] + q_ids + [sep_id]
            full_offsets = [None] * len(head) + offs + [None]
            target = (0, 0)
            if ex.answers:
                span = _answer_tokens(full_offsets, ex.answers[0])
                if span is not None:
                    target = span
            rows.append((head + ids + [sep_id], len(head), full_offsets, target, n,
                         ["[CLS]"] + list(q.tokens[:max_question_tokens]) + ["[SEP]"] + toks + ["[SEP]"]))
            if start + room >= len(c.ids):
                break
            start += room - stride
    T = max(len(r[0]) for r in rows)
    N = len(rows)
    feats = QAFeatures(
        input_ids=torch.full((N, T), pad_id, dtype=torch.long),
        attention_mask=torch.zeros((N, T), dtype=torch.long),
        token_type_ids=torch.zeros((N, T), dtype=torch.long),
        start_positions=torch.tensor([r[3][0] for r in rows]),
        end_positions=torch.tensor([r[3][1] for r in rows]),
        example_index=torch.tensor([r[4] for r in rows]),
    )
    for i, (ids, n_head, offs, _, _, toks) in enumerate(rows):
        feats.input_ids[i, :len(ids)] = torch.tensor(ids)
        feats.attention_mask[i, :len(ids)] = 1
        feats.token_type_ids[i, n_head:len(ids)] = 1
        feats.offsets.append(offs + [None] * (T - len(ids)))
        feats.tokens.append(toks + ["[PAD]"] * (T - len(ids)))
    return feats


# ----------------------------------------------------------------------------- decoding

def best_span(start_logits: torch.Tensor, end_logits: torch.Tensor, max_answer_len: int = 30,
              allowed: torch.Tensor | None = None) -> tuple[int, int, float]:
    """The span (i, j) of at most ``max_answer_len`` tokens (i ≤ j, j - i < max_answer_len: the chapter's length
    limit L of §11.5.2) that maximises start_logits[i] + end_logits[j].

    start_logits, end_logits: (T,); allowed: optional (T,) bool, the positions a span may use (e.g. the
    context tokens). Returns (i, j, score); of tied spans, the first in (i, j) order.
    """
    s, e = start_logits.float().reshape(-1), end_logits.float().reshape(-1)
    if s.shape != e.shape or s.numel() == 0:
        raise ValueError(f"start and end scores must be two non-empty vectors of one length, got "
                         f"{tuple(start_logits.shape)} and {tuple(end_logits.shape)}")
    if max_answer_len < 1:
        raise ValueError(f"max_answer_len must be ≥ 1 (a span has at least one token), got {max_answer_len}")
    T = s.numel()
    scores = s[:, None] + e[None, :]  # (T, T): row i = start, column j = end
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    ok = (j >= i) & (j - i < max_answer_len)
    if allowed is not None:
        allowed = allowed.reshape(-1).bool()
        ok &= allowed[:, None] & allowed[None, :]
    if not ok.any():
        raise ValueError("no span is allowed: no position may start or end an answer")
    scores = scores.masked_fill(~ok, float("-inf"))
    flat = int(scores.argmax())
    return flat // T, flat % T, float(scores.view(-1)[flat])


@dataclass(frozen=True)
class Prediction:
    """The answer to one question: its text ("" = no answer), the window and tokens it came from, scores."""

    text: str
    feature: int
    start: int
    end: int
    span_score: float
    null_score: float


def predict_answers(examples, features: QAFeatures, start_logits, end_logits, max_answer_len: int = 30,
                    null_threshold: float = 0.0) -> list[Prediction]:
    """One prediction per example: the best span of at most ``max_answer_len`` tokens over all its windows (the
    first window's on a tie), or "" when the smallest [CLS] score s_0 + e_0 of its windows beats the best span's
    score by more than ``null_threshold``."""
    best: dict[int, Prediction] = {}
    for f in range(len(features)):
        n = int(features.example_index[f])
        ctx = torch.tensor([o is not None for o in features.offsets[f]])
        i, j, score = best_span(start_logits[f], end_logits[f], max_answer_len, allowed=ctx)
        null = float(start_logits[f][0] + end_logits[f][0])
        a, b = features.offsets[f][i][0], features.offsets[f][j][1]
        old = best.get(n)
        null_min = null if old is None else min(old.null_score, null)
        if old is None or score > old.span_score:
            best[n] = Prediction(examples[n].context[a:b], f, i, j, score, null_min)
        else:
            best[n] = Prediction(old.text, old.feature, old.start, old.end, old.span_score, null_min)
    out = []
    for n in range(len(examples)):
        p = best[n]
        text = NO_ANSWER if p.null_score > p.span_score + null_threshold else p.text
        out.append(Prediction(text, p.feature, p.start, p.end, p.span_score, p.null_score))
    return out
