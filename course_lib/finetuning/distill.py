"""Compact models and knowledge distillation (the lecture slides, L004: "More compact BERT models", Turc et al. 2019).

A large fine-tuned model (the *teacher*) labels sentences; a small model (the *student*) learns to give the same
class distribution. Hinton et al. (2015): soften both distributions with a temperature T and minimise

    L_KD = T² · KL( softmax(t / T) ‖ softmax(s / T) )      (mean over the batch)

with t the teacher's scores (logits) and s the student's; the T² keeps the gradients' size independent of T.
The teacher needs no gold label, so the student can learn from every *unlabelled* sentence the teacher reads
(the "transfer set"): that is where the slides' recipe gets its data.

    student = compact_classifier(SENTIMENT_LABELS, layers=2)
    run = train_student(student, transfer, test, tokenizer, SENTIMENT_LABELS, teacher=teacher, temperature=2.0,
                        config=TrainConfig(lr=1e-4, epochs=3), name="student-soft")

The student here is the embedded model's bottom ``layers`` blocks and a new head: initialised from a pretrained
model's lower layers (as Sun et al. 2019 initialised theirs), a stand-in for the compact models Turc et al.
pretrained at their own size. Its word embeddings stay frozen: they are
most of its parameters, and freezing them keeps each shipped run small. The teacher's scores are computed batch by
batch during training (as most distillation code does), so a cached or shipped run needs no teacher pass at all;
the run is keyed by the run that trained the teacher (:func:`runs.trained_by`), or else by the teacher's weights.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ..model.classification import BertForSequenceClassification, SequenceClassifierOutput
from ..model.device import get_device
from .classify import pretrained_classifier
from .data import SentenceCollator
from .runs import TrainConfig, TrainRun, _remember_start, initial_fingerprint, model_fingerprint, run_key, trained_by
from .training import evaluate, fit


def distillation_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor,
                      temperature: float = 2.0) -> torch.Tensor:
    """T² · KL(softmax(t/T) ‖ softmax(s/T)), averaged over the batch: (B, C) scores x 2 -> a number."""
    if student_logits.shape != teacher_logits.shape or student_logits.dim() != 2:
        raise ValueError(f"the student's and the teacher's scores must both be (batch, classes), got "
                         f"{tuple(student_logits.shape)} and {tuple(teacher_logits.shape)}")
    T = _temperature(temperature)
    log_p_student = F.log_softmax(student_logits / T, dim=-1)
    return F.kl_div(log_p_student, soften(teacher_logits.detach(), T), reduction="batchmean") * T * T


def soften(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """softmax(logits / T): T > 1 flattens a distribution, T < 1 sharpens it, T = 1 leaves it."""
    return (logits / _temperature(temperature)).softmax(-1)


def _temperature(temperature: float) -> float:
    if not temperature > 0:
        raise ValueError(f"the temperature must be positive, not {temperature}")
    return float(temperature)


def compact_classifier(labels: Sequence[str], layers: int = 2, pooling: str = "cls", seed: int = 0,
                       device=None) -> BertForSequenceClassification:
    """A new classifier head on the bottom ``layers`` blocks of a fresh copy of the embedded encoder; its word
    embeddings are frozen (every other parameter trains)."""
    model = pretrained_classifier(labels, pooling=pooling, seed=seed, device=device)
    total = len(model.bert.encoder.layer)
    if isinstance(layers, bool) or not isinstance(layers, int) or not 1 <= layers <= total:
        raise ValueError(f"layers={layers!r}: a compact student keeps 1 to {total} of the encoder's {total} blocks")
    model.bert.encoder.layer = model.bert.encoder.layer[:layers]
    config = dataclasses.replace(model.bert.config, num_hidden_layers=layers)
    model.bert.config = model.config = config
    model.requires_grad_(True)
    if model.bert.pooler is not None:
        model.bert.pooler.requires_grad_(False)  # the head reads z_CLS; no gradient reaches the pooler
    model.bert.embeddings.word_embeddings.weight.requires_grad_(False)
    return model


class Student(nn.Module):
    """A classifier trained on the teacher's scores: ``labels`` of shape (B, C) (floats) are the teacher's logits
    and the loss is :func:`distillation_loss`; class indices (B,) give the usual cross-entropy."""

    def __init__(self, model: BertForSequenceClassification, temperature: float = 2.0):
        super().__init__()
        self.model, self.temperature = model, _temperature(temperature)

    def extra_repr(self) -> str:
        return f"temperature={self.temperature}"

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, labels=None) -> SequenceClassifierOutput:
        scores = labels is not None and labels.is_floating_point()  # else class indices: the model's own loss
        out = self.model(input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                         labels=None if scores else labels)
        if scores:
            out.loss = distillation_loss(out.logits, labels, self.temperature)
        return out


class TeacherCollator(SentenceCollator):
    """Sentences -> the student's inputs, and as ``labels`` the teacher's scores (B, C) for them -- or, with
    ``hard=True``, the teacher's top class (B,). The examples' own labels are never read."""

    def __init__(self, tokenizer, labels: tuple[str, ...], teacher: nn.Module, max_length: int = 64,
                 hard: bool = False):
        super().__init__(tokenizer, labels, max_length)
        self.teacher, self.hard = teacher, bool(hard)

    @torch.no_grad()
    def __call__(self, examples) -> dict[str, torch.Tensor]:
        batch = self.encode([getattr(e, "text", e) for e in examples])
        was_training = self.teacher.training
        self.teacher.eval()
        try:
            device = next(self.teacher.parameters()).device
            logits = self.teacher(**{k: v.to(device) for k, v in batch.items()}).logits.float().cpu()
        finally:
            self.teacher.train(was_training)
        return batch | {"labels": logits.argmax(-1) if self.hard else logits}

    @staticmethod
    def length(example) -> int:
        return len(getattr(example, "text", example))

    def cache_key(self) -> dict:
        # the teacher by the run that trained it, if one did: the same key whether that run was trained here or
        # loaded from a shipped delta (whose weights differ in their last bits); else by its weights
        teacher = trained_by(self.teacher)
        return super().cache_key() | {"teacher": teacher or model_fingerprint(self.teacher), "hard": self.hard}


def train_student(student: BertForSequenceClassification, train: Sequence, test: Sequence, tokenizer,
                  labels: tuple[str, ...], *, teacher: nn.Module | None = None, hard: bool = False,
                  temperature: float = 2.0, config: TrainConfig | None = None, max_length: int = 64,
                  name: str = "student", progress: bool = True, callback=None, stop=None, cache: bool = True,
                  device=None) -> TrainRun:
    """Train ``student`` on ``train``: on the gold labels without a ``teacher``; with one, on the teacher's scores
    (``hard=True``: on its top class). Held-out accuracy on ``test`` (gold labels) after every epoch. Cached and
    shipped like every fine-tuning run, keyed by the student's starting weights, the data, the settings and the
    teacher (the run that trained it, else its weights)."""
    if len(train) == 0:
        raise ValueError("no training sentences: train is empty")
    if hard and teacher is None:
        raise ValueError("hard=True trains on the teacher's top class: pass the teacher")
    config = config or TrainConfig()
    gold = SentenceCollator(tokenizer, labels, max_length)
    collate = gold if teacher is None else TeacherCollator(tokenizer, labels, teacher, max_length, hard)
    if teacher is not None:
        teacher.to(get_device(device))
    wrapped = Student(student, temperature)
    start_fp = initial_fingerprint(student)
    # a student this function trained (or stopped) remembers the wrapper it started as: called again, it finds
    # its run (loaded, or resumed) instead of keying a new one by its trained weights
    started = getattr(student, "_distill_started_from", {}).get(model_fingerprint(wrapped))
    if started is not None:
        _remember_start(wrapped, started)
    wrapped_start = initial_fingerprint(wrapped)
    key = run_key(wrapped, train, config, test, extra={"collate": collate.cache_key(), "method": "distill-v1"})
    info = {"teacher": None if teacher is None else ("top class" if hard else f"scores at T = {temperature:g}"),
            "temperature": float(temperature), "layers": len(student.bert.encoder.layer), "train_examples": len(train),
            "test_examples": len(test)}
    run = fit(wrapped, train, collate, config, evaluate_fn=lambda m: evaluate(m, test, gold, config.eval_batch_size),
              name=name, key=key, info=info, progress=progress, callback=callback, stop=stop, cache=cache,
              device=device, length=collate.length)
    if cache:
        _remember_start(student, start_fp)
        object.__setattr__(student, "_distill_started_from", getattr(student, "_distill_started_from", {}) |
                           {model_fingerprint(Student(student, temperature)): wrapped_start})
    return run


def paired_difference(pred_a: torch.Tensor, pred_b: torch.Tensor, gold: torch.Tensor) -> dict:
    """Accuracy of a minus accuracy of b on the same examples, with its standard error: the sample standard
    deviation of (a right) − (b right) over the examples, over √n. Only examples where one is right and the other
    wrong move it, so it is about √d / n for d such examples (paired, unlike two separate errors)."""
    pred_a, pred_b, gold = (torch.as_tensor(x).reshape(-1) for x in (pred_a, pred_b, gold))
    if not len(gold) == len(pred_a) == len(pred_b) or len(gold) < 2:
        raise ValueError(f"need two predictions per example and at least 2 examples: got {len(pred_a)}, "
                         f"{len(pred_b)} predictions for {len(gold)} labels")
    x = (pred_a == gold).double() - (pred_b == gold).double()
    n = len(x)
    return {"difference": float(x.mean()), "se": float(x.std(unbiased=True) / math.sqrt(n)), "n": n,
            "disagree": int((pred_a != pred_b).sum())}

