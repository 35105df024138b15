"""Fine-tuning a BIO tagger on wikigold, and the baselines it must beat (SLP3 §11.4.3).

    tagger = NerTagger.build()                                   # the embedded encoder + W_K (9 tags)
    run = tagger.fit(load_wikigold("train"), TrainConfig(...))   # course_lib.finetuning.training.fit, cached
    pred = tagger.predict(test_sentences)                        # word-level BIO tags (first-subword decoding)

Training uses :mod:`.frozen`: only the top ``train_layers`` blocks and W_K learn, and the frozen layers'
states are computed once. Labels are aligned with :func:`.labelling.align_labels` (``policy``: "first" or
the chapter's "every"); predictions are decoded per word (first subword, or combined distributions).

Baselines: :func:`word_majority_baseline` (each word gets its most frequent training tag) and
:func:`dictionary_baseline` (entity strings seen in training, matched longest first, with their most frequent
type). Tagging every word O, the majority tag, finds no entity: entity F1 0.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

import torch

from ..model.tagging import BertForTokenClassification
from .frozen import FromLayer, freeze_below, frozen_states, num_layers, pad_states
from .labelling import (IGNORE_INDEX, LabelSet, TaggedSentence, align_labels, decode_combined,
                        decode_first_subword, encode_words, first_subword_positions)
from .ner_eval import get_entities

DECODINGS = ("first", "mean", "product")


# ----------------------------------------------------------------------------- baselines

def word_majority_baseline(train, sentences) -> list[list[str]]:
    """Each word gets the tag it had most often in training (exact word form); unseen words get O."""
    counts: dict[str, Counter] = defaultdict(Counter)
    for s in train:
        for w, t in zip(s.words, s.tags):
            counts[w][t] += 1
    return [[counts[w].most_common(1)[0][0] if w in counts else "O" for w in _words(s)] for s in sentences]


def entity_dictionary(train) -> dict[tuple[str, ...], str]:
    """Every entity string of the training data (a tuple of words) -> its most frequent type."""
    seen: dict[tuple[str, ...], Counter] = defaultdict(Counter)
    for s in train:
        for typ, a, b in get_entities(s.tags):
            seen[tuple(s.words[a:b + 1])][typ] += 1
    return {k: c.most_common(1)[0][0] for k, c in seen.items()}


def dictionary_baseline(train, sentences) -> list[list[str]]:
    """Tag every occurrence of a training entity string, longest match first, left to right."""
    lexicon = entity_dictionary(train)
    longest = max((len(k) for k in lexicon), default=0)
    out = []
    for s in sentences:
        words, tags, i = _words(s), [], 0
        while i < len(words):
            for n in range(min(longest, len(words) - i), 0, -1):
                typ = lexicon.get(tuple(words[i:i + n]))
                if typ is not None:
                    tags += [f"B-{typ}"] + [f"I-{typ}"] * (n - 1)
                    i += n
                    break
            else:
                tags.append("O")
                i += 1
        out.append(tags)
    return out


def _words(s) -> list[str]:
    return list(s.words) if isinstance(s, TaggedSentence) else list(s)


# ----------------------------------------------------------------------------- the tagger

@dataclass
class NerTagger:
    """A :class:`BertForTokenClassification` with its tokenizer and label set, and how it is trained."""

    model: BertForTokenClassification
    tokenizer: object
    labels: LabelSet
    policy: str = "first"       # training alignment: "first" (-100 on later pieces) or "every" (the chapter's)
    train_layers: int = 2       # blocks fine-tuned on top of the frozen ones (0 = only W_K)
    max_length: int = 128       # subwords per sentence (longer ones are cut, with a note in the run)

    @classmethod
    def build(cls, encoder: str | None = None, policy: str = "first", train_layers: int = 2, seed: int = 0,
              labels: LabelSet | None = None, device: str = "cpu", read_layer: int | None = None) -> "NerTagger":
        """A fresh head (seeded) on a pretrained encoder (``load_pretrained(encoder)``; None = the embedded one).

        read_layer: cut the encoder after this block, so that the head reads layer L<read_layer> (None: the last).
        """
        from ..checkpoints import load_pretrained

        bert, tokenizer = load_pretrained(encoder, device=device)
        bert = getattr(bert, "bert", bert)  # a model with an MLM head: take its encoder
        if read_layer is not None:
            L = num_layers(bert)
            if not 1 <= read_layer <= L:
                raise ValueError(f"read_layer must be between 1 and {L} (this encoder has {L} layers), not {read_layer}")
            if train_layers > read_layer:
                raise ValueError(f"train_layers ({train_layers}) cannot exceed read_layer ({read_layer})")
            bert.encoder.layer = bert.encoder.layer[:read_layer]  # a fresh model: nothing shared is cut
        labels = labels or LabelSet()
        torch.manual_seed(seed)
        model = BertForTokenClassification(bert, len(labels)).to(bert.device)
        return cls(model, tokenizer, labels, policy, train_layers)

    @property
    def start(self) -> int:
        return num_layers(self.model.bert) - self.train_layers

    def trained_parameters(self) -> tuple[int, str]:
        """How many parameters :meth:`fit` trains -- the head W_K and the top ``train_layers`` blocks -- and
        which, in words: ``(3465, "the head alone, on a frozen encoder")`` for ``train_layers=0``."""
        head = sum(p.numel() for p in self.model.classifier.parameters())
        top = list(self.model.bert.encoder.layer)[self.start:]
        blocks = sum(p.numel() for block in top for p in block.parameters())
        if not top:
            return head, "the head alone, on a frozen encoder"
        if self.start == 0:
            return head + blocks, (f"the head ({head:,}) and all {len(top)} encoder blocks ({blocks:,}), on the "
                                   "frozen embeddings")
        which = "the top encoder block" if len(top) == 1 else f"the top {len(top)} encoder blocks"
        return head + blocks, f"the head ({head:,}) and {which} ({blocks:,}), on the frozen layers below"

    # -- data
    def encode(self, sentences):
        """Subword encodings of the sentences (pre-split words), cut to ``max_length``."""
        return encode_words(self.tokenizer, [_words(s) for s in sentences], max_length=self.max_length,
                            truncation=True)

    def examples(self, sentences, policy: str | None = None, placeholders: bool = False) -> list[dict]:
        """One training example per sentence: frozen states (T, d) and subword label ids (T,); with
        ``placeholders``, states that only key a run (``frozen_states(placeholders=True)``)."""
        enc = self.encode(sentences)
        lengths = enc.attention_mask.sum(1).tolist()
        ids = [enc.input_ids[b, :n].tolist() for b, n in enumerate(lengths)]
        states = frozen_states(self.model.bert, ids, start=self.start, placeholders=placeholders)
        out = []
        for b, (s, n) in enumerate(zip(sentences, lengths)):
            wids = enc.word_ids[b][:n]
            tags = self.labels.encode(s.tags)
            out.append({"hidden": states[b], "labels": torch.tensor(align_labels(tags, wids, policy or self.policy)),
                        "n": len(s.words), "word_ids": wids})
        return out

    @staticmethod
    def collate(examples: list[dict]) -> dict:
        hidden, mask = pad_states([e["hidden"] for e in examples])
        labels = torch.full(mask.shape, IGNORE_INDEX, dtype=torch.long)
        for b, e in enumerate(examples):
            labels[b, :len(e["labels"])] = e["labels"]
        return {"hidden": hidden, "attention_mask": mask, "labels": labels}

    # -- training
    def fit(self, train, config=None, eval_sentences=None, name: str = "ner", **kw):
        """Fine-tune with :func:`course_lib.finetuning.training.fit` (cached by config, model and data).

        eval_sentences: held-out sentences scored by entity F1 after every epoch (``eval["f1"]``).
        """
        from .ner_eval import entity_scores
        from .training import TrainConfig, fit

        freeze_below(self.model.bert, self.train_layers)
        for p in self.model.classifier.parameters():
            p.requires_grad_(True)
        eval_ex = []  # the held-out states, computed at the first evaluation (none if the run is found finished)

        def evaluate_fn(wrapped) -> dict:
            if not eval_ex:
                eval_ex.extend(self.examples(eval_sentences))
            pred = self._predict_examples(eval_ex, "first")
            rep = entity_scores([list(s.tags) for s in eval_sentences], pred)
            return {"f1": rep.micro.f1, "precision": rep.micro.precision, "recall": rep.micro.recall}

        wrapped = FromLayer(self.model, self.start)
        return fit(wrapped, self.examples(train, placeholders=True), self.collate, config or TrainConfig(), name=name,
                   realise=lambda: self.examples(train), evaluate_fn=evaluate_fn if eval_sentences else None,
                   cache_extra={"policy": self.policy, "train_layers": self.train_layers,
                                "max_length": self.max_length},
                   length=lambda e: len(e["labels"]), **kw)  # batches of similar length: little padding

    # -- prediction
    @torch.no_grad()
    def _logits(self, examples, batch_size: int = 64) -> list[torch.Tensor]:
        wrapped = FromLayer(self.model, self.start).eval()
        out = []
        for s in range(0, len(examples), batch_size):
            chunk = examples[s:s + batch_size]
            batch = self.collate(chunk)
            logits = wrapped(batch["hidden"].to(self.model.device), batch["attention_mask"].to(self.model.device)).logits
            out += [logits[b, :len(e["labels"])].float().cpu() for b, e in enumerate(chunk)]
        return out

    def _predict_examples(self, examples, decoding: str) -> list[list[str]]:
        if decoding not in DECODINGS:
            raise ValueError(f"decoding must be one of {DECODINGS}, not {decoding!r}")
        tags = []
        for e, logits in zip(examples, self._logits(examples)):
            if decoding == "first":
                ids = decode_first_subword(logits.argmax(-1), e["word_ids"])
            else:
                ids = decode_combined(logits, e["word_ids"], decoding)
            words = self.labels.decode(ids)
            tags.append(words + ["O"] * (e["n"] - len(words)))  # words cut off by max_length: O
        return tags

    def word_log_probs(self, sentences) -> list[torch.Tensor]:
        """Per sentence, (n_words, k) log-probabilities of the tags at each word's first subword (for a CRF)."""
        sentences = [s if isinstance(s, TaggedSentence) else TaggedSentence(tuple(s), ("O",) * len(s))
                     for s in sentences]
        examples = self.examples(sentences)
        out = []
        for e, logits in zip(examples, self._logits(examples)):
            out.append(torch.log_softmax(logits[first_subword_positions(e["word_ids"])], -1))
        return out

    def predict_crf(self, sentences, crf) -> list[list[str]]:
        """Word tags by Viterbi over the first-subword log-probabilities with a :class:`~.crf.LinearChainCRF`."""
        out = []
        for s, lp in zip(sentences, self.word_log_probs(sentences)):
            tags = self.labels.decode(crf.viterbi(lp[None])[0])
            out.append(tags + ["O"] * (len(_words(s)) - len(tags)))
        return out

    def predict(self, sentences, decoding: str = "first") -> list[list[str]]:
        """Word-level BIO tags: each word takes its first subword's argmax ("first", the chapter's), or the argmax
        of its subwords' mean ("mean") or product ("product") of tag distributions."""
        sentences = [s if isinstance(s, TaggedSentence) else TaggedSentence(tuple(s), ("O",) * len(s))
                     for s in sentences]
        return self._predict_examples(self.examples(sentences), decoding)

    @torch.no_grad()
    def tag(self, words) -> dict:
        """Everything the alignment viewer shows for one sentence: subwords, word ids, per-subword
        probabilities (T, k) and predicted tags, and the decoded word tags."""
        words = _words(words)
        if not words:
            raise ValueError("no words to tag: type a sentence")
        enc = encode_words(self.tokenizer, words, max_length=self.max_length, truncation=True)
        self.model.eval()
        logits = self.model(enc.input_ids.to(self.model.device), enc.attention_mask.to(self.model.device)).logits[0]
        probs = torch.softmax(logits.float().cpu(), -1)
        wids = enc.word_ids[0]
        first = self.labels.decode(decode_first_subword(probs.argmax(-1), wids))
        return {"words": words, "tokens": enc.tokens[0], "word_ids": wids, "probs": probs,
                "subword_tags": self.labels.decode(probs.argmax(-1)), "word_tags": first + ["O"] * (len(words) - len(first))}
