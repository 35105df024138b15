"""Fine-tuning the start and end vectors S, E (and the top layers) for extractive QA on the SQuAD sample.

    reader = QAReader.build()                              # the embedded encoder + S, E
    run = reader.fit(load_squad("train"), TrainConfig())   # course_lib.finetuning.training.fit, cached
    preds = reader.predict(test_examples)                  # one Prediction per question ("" = no answer)
    view = reader.answer(question, context)                # P(start), P(end) over the tokens, the best span

Like :mod:`.ner`, only the top ``train_layers`` blocks and the head learn, on states of the frozen layers
computed once (:mod:`.frozen`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..model.qa import BertForQuestionAnswering
from .frozen import FromLayer, freeze_below, frozen_states, num_layers, pad_states
from .qa import QAExample, QAFeatures, make_features, predict_answers

SHIPPED_QA_MODEL = "minilm-squad-qa"  # course_lib/data/models/<this>: made by tools/train_qa_model.py
HEAD_FILE = "qa_outputs.safetensors"


@dataclass
class QAReader:
    """A :class:`BertForQuestionAnswering` with its tokenizer and feature settings."""

    model: BertForQuestionAnswering
    tokenizer: object
    train_layers: int = 2
    max_length: int = 192
    stride: int = 64
    max_answer_len: int = 30  # an answer holds at most this many tokens (j - i < it: the chapter's limit L)
    null_threshold: float = 0.0  # "no answer" when s_0 + e_0 > best span score + this (0 unless tuned: the shipped reader's was chosen on training questions)
    _seen: dict = field(default_factory=dict, init=False, repr=False, compare=False)  # answer()'s forward passes

    SEEN = 16  # answer() keeps the scores of this many (question, context) pairs: a new L or a pair seen again
    #            is decided without running the model again

    @classmethod
    def build(cls, encoder: str | None = None, train_layers: int = 2, seed: int = 0, device: str = "cpu",
              **settings) -> "QAReader":
        from ..checkpoints import load_pretrained

        bert, tokenizer = load_pretrained(encoder, device=device)
        bert = getattr(bert, "bert", bert)
        torch.manual_seed(seed)
        return cls(BertForQuestionAnswering(bert).to(bert.device), tokenizer, train_layers, **settings)

    @classmethod
    def shipped(cls, name: str = SHIPPED_QA_MODEL, device: str = "cpu", folder=None) -> "QAReader":
        """The QA reader made by ``tools/train_qa_model.py`` (its MODEL_CARD.md says how), from
        ``course_lib/data/models/<name>`` (or ``folder``): the encoder as a delta of the embedded model
        (:mod:`course_lib.checkpoints.delta`), S and E in ``qa_outputs.safetensors``, the no-answer threshold in
        ``metrics.json``. A missing, incomplete or damaged folder raises an error that names it."""
        from pathlib import Path

        import json

        from safetensors.torch import load_file

        from ..checkpoints import read_delta_state_dict
        from ..model.bert import BertConfig, BertModel
        from ..paths import data_dir
        from ..tokenization import BertTokenizer

        folder = data_dir("models", name) if folder is None else Path(folder)
        rebuild = "make it again with `python tools/train_qa_model.py` (or restore the folder from git)"
        if not folder.is_dir():
            raise FileNotFoundError(f"no QA model at {folder}: {rebuild}")
        missing = [f for f in ("metrics.json", "config.json", HEAD_FILE, "vocab.txt") if not (folder / f).exists()]
        if missing:
            raise FileNotFoundError(f"the QA model at {folder} is incomplete (no {', '.join(missing)}): {rebuild}")
        try:
            meta = json.loads((folder / "metrics.json").read_text())
            settings = [meta[k] for k in ("train_layers", "max_length", "stride", "max_answer_len", "null_threshold")]
            bert = BertModel(BertConfig.from_json(folder / "config.json"))
            state = read_delta_state_dict(folder)
            legacy = ("bert.embeddings.position_ids", "bert.embeddings.token_type_ids")  # buffers old checkpoints keep
            bert.load_state_dict({k.removeprefix("bert."): v for k, v in state.items()
                                  if k.startswith("bert.") and k not in legacy})
            model = BertForQuestionAnswering(bert)
            model.qa_outputs.load_state_dict(load_file(str(folder / HEAD_FILE)))
        except FileNotFoundError:
            raise
        except Exception as err:  # a truncated or edited file: say which folder, and how to get it back
            raise RuntimeError(f"the QA model at {folder} could not be loaded ({type(err).__name__}: {err}): "
                               f"{rebuild}") from err
        model.to(device).eval()
        return cls(model, BertTokenizer.from_dir(folder), *settings)

    @property
    def start(self) -> int:
        return num_layers(self.model.bert) - self.train_layers

    def features(self, examples) -> QAFeatures:
        return make_features(self.tokenizer, examples, self.max_length, self.stride)

    def examples(self, feats: QAFeatures, placeholders: bool = False) -> list[dict]:
        """One training example per window: frozen states (T, d) and the gold start/end positions; with
        ``placeholders``, states that only key a run (``frozen_states(placeholders=True)``)."""
        lengths = feats.attention_mask.sum(1).tolist()
        ids = [feats.input_ids[i, :n].tolist() for i, n in enumerate(lengths)]
        types = [feats.token_type_ids[i, :n].tolist() for i, n in enumerate(lengths)]
        states = frozen_states(self.model.bert, ids, types, start=self.start, placeholders=placeholders)
        return [{"hidden": h, "start_positions": int(feats.start_positions[i]),
                 "end_positions": int(feats.end_positions[i])} for i, h in enumerate(states)]

    @staticmethod
    def collate(examples: list[dict]) -> dict:
        hidden, mask = pad_states([e["hidden"] for e in examples])
        return {"hidden": hidden, "attention_mask": mask,
                "start_positions": torch.tensor([e["start_positions"] for e in examples]),
                "end_positions": torch.tensor([e["end_positions"] for e in examples])}

    def fit(self, train, config=None, name: str = "qa", **kw):
        """Fine-tune on QA examples with :func:`course_lib.finetuning.training.fit` (cached)."""
        from .training import TrainConfig, fit

        freeze_below(self.model.bert, self.train_layers)
        for p in self.model.qa_outputs.parameters():
            p.requires_grad_(True)
        feats = self.features(train)
        return fit(FromLayer(self.model, self.start), self.examples(feats, placeholders=True), self.collate,
                   config or TrainConfig(), name=name, realise=lambda: self.examples(feats),
                   cache_extra={"train_layers": self.train_layers, "max_length": self.max_length,
                                "stride": self.stride},
                   length=lambda e: e["hidden"].size(0), **kw)  # batches of similar length: little padding

    @torch.no_grad()
    def logits(self, feats: QAFeatures, batch_size: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
        """Start and end scores (N, T) of every window: the whole model, windows of similar length batched
        together (nothing is cached: at prediction time the frozen layers run once anyway)."""
        was_training = self.model.training
        self.model.eval()
        N, T = feats.input_ids.shape
        start, end = torch.full((N, T), -1e4), torch.full((N, T), -1e4)
        order = sorted(range(N), key=lambda i: int(feats.attention_mask[i].sum()))
        try:
            for s in range(0, N, batch_size):
                rows = torch.tensor(order[s:s + batch_size])
                inputs = {k: v.to(self.model.device) for k, v in feats.inputs(rows).items()}
                out = self.model(**inputs)
                t = out.start_logits.size(1)
                start[rows, :t], end[rows, :t] = out.start_logits.float().cpu(), out.end_logits.float().cpu()
        finally:
            self.model.train(was_training)
        return start, end

    def predict(self, examples, null_threshold: float | None = None):
        """One :class:`~course_lib.finetuning.qa.Prediction` per example ("" = no answer, when s_0 + e_0 beats
        the best span by more than ``null_threshold``, by default the reader's own)."""
        feats = self.features(examples)
        s, e = self.logits(feats)
        t = self.null_threshold if null_threshold is None else null_threshold
        return predict_answers(examples, feats, s, e, self.max_answer_len, t)

    def _scored(self, ex: QAExample):
        """Features and start/end scores of one example, kept for the last SEEN examples. The key holds the
        weights' in-place version counters, so any training step or loaded state (both change the weights in
        place) makes the scores be computed again."""
        key = (ex.question, ex.context, self.max_length, self.stride,
               sum(p._version for p in self.model.parameters()), str(self.model.device))
        if key not in self._seen:
            feats = self.features([ex])
            self._seen[key] = (feats, *self.logits(feats))
            while len(self._seen) > self.SEEN:
                self._seen.pop(next(iter(self._seen)))
        return self._seen[key]

    @torch.no_grad()
    def answer(self, question: str, context: str) -> dict:
        """What the QA span viewer shows, decided as :meth:`predict` decides: the best span of at most
        ``max_answer_len`` tokens over *all* windows of the context, and "no answer" when the smallest [CLS] score
        of the windows beats it by more than the threshold. Tokens, offsets and P(start = i), P(end = j) (softmax
        over all the window's tokens, [CLS] included) are those of the window that holds that span: ``window``
        (counted from 0) of ``windows``."""
        if not question.strip():
            raise ValueError("type a question")
        if not context.strip():
            raise ValueError("type a context (the passage the answer comes from)")
        for what, text in (("question", question), ("context", context)):  # e.g. only zero-width spaces
            if not self.tokenizer.backend.encode(text, add_special_tokens=False).ids:
                raise ValueError(f"the {what} has no tokens: the tokenizer drops every character of {text!r} "
                                 f"(invisible or control characters); type words")
        ex = QAExample("typed", "", question, context)
        feats, start, end = self._scored(ex)
        p = predict_answers([ex], feats, start, end, self.max_answer_len, self.null_threshold)[0]
        f = p.feature
        T = int(feats.attention_mask[f].sum())
        s, e = start[f, :T], end[f, :T]
        offsets = feats.offsets[f][:T]
        ctx = torch.tensor([o is not None for o in offsets])
        i, j = p.start, p.end
        toks = feats.tokens[f]
        return {"question_tokens": len(self.tokenizer.backend.encode(question, add_special_tokens=False).ids),
                "question_kept": toks.index("[SEP]") - 1, "tokens": toks[:T], "offsets": offsets, "context_mask": ctx,
                "p_start": torch.softmax(s, -1), "p_end": torch.softmax(e, -1), "span": (i, j),
                "text": context[offsets[i][0]:offsets[j][1]], "span_score": p.span_score, "null_score": p.null_score,
                "no_answer": p.null_score > p.span_score + self.null_threshold, "null_threshold": self.null_threshold,
                "window": f, "windows": len(feats)}
