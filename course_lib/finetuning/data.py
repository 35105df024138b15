"""The labelled data of notebook 11.4a, and turning examples into model inputs.

* :func:`load_sentiment` -- movie-review sentences labelled negative / positive (Pang & Lee's Rotten Tomatoes
  snippets, labelled by the sign of Hutto & Gilbert's (2014) mean human rating), for §11.4.1;
* :func:`load_nli` -- SNLI premise/hypothesis pairs labelled entailment / neutral / contradiction, for §11.4.2.

Both ship with course_lib (``course_lib/data/sentiment``, ``course_lib/data/nli``), were cut from packages on
PyPI by ``tools/make_finetuning_data.py``, and are described in their DATA_CARD.md, whose counts section is
written by ``python -m course_lib.finetuning.data`` (a test checks it is current).

Collate functions (:class:`SentenceCollator`, :class:`PairCollator`, :class:`BiEncoderCollator`) tokenize a
list of examples into the keyword arguments of a model, labels included, padded to the longest in the batch.
"""
from __future__ import annotations

import json
import random
import warnings
from collections import Counter
from dataclasses import dataclass
from functools import cache

import torch

from ..paths import data_dir

SENTIMENT_LABELS = ("negative", "positive")
NLI_LABELS = ("entailment", "neutral", "contradiction")
SPLITS = ("train", "test")


@dataclass(frozen=True)
class SentenceExample:
    """One labelled sentence (§11.4.1)."""

    text: str
    label: str


@dataclass(frozen=True)
class PairExample:
    """One labelled sentence pair (§11.4.2): does the premise entail the hypothesis?"""

    premise: str
    hypothesis: str
    label: str


@cache
def _read(name: str, split: str) -> tuple[dict, ...]:
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}: use 'train' or 'test'")
    path = data_dir(name, f"{split}.jsonl")
    if not path.exists():
        raise FileNotFoundError(f"the {name} data is missing at {path}; rebuild it with tools/make_finetuning_data.py")
    with open(path, encoding="utf-8") as f:
        return tuple(json.loads(line) for line in f if line.strip())


def balanced_sample(examples: list, n: int | None, labels: tuple[str, ...], seed: int = 0) -> list:
    """``n`` examples with the labels as equal as possible (all of them when n is None), in a seeded order."""
    if n is None:
        return list(examples)
    if not isinstance(n, int) or n < len(labels):
        raise ValueError(f"n must be a whole number of at least {len(labels)} (one per class), not {n!r}")
    if n > len(examples):
        raise ValueError(f"asked for {n} examples but this split has only {len(examples)}")
    rng = random.Random(seed)
    by_label = {lab: [e for e in examples if e.label == lab] for lab in labels}
    out = []
    for i, lab in enumerate(labels):
        want = n // len(labels) + (1 if i < n % len(labels) else 0)
        pool = by_label[lab]
        out += rng.sample(pool, min(want, len(pool)))
    rng.shuffle(out)
    return out


def development_sample(pool: list, train: list, key, n: int, labels: tuple[str, ...], seed: int, apart: str,
                       unit: str) -> list:
    """``n`` class-balanced examples of ``pool`` (a training file) whose ``key`` (a sentence, a premise) is none of
    ``train``'s: a development set to choose a recipe on, never the test set. ``apart`` and ``unit`` word the error
    ("share no premise with", "pairs")."""
    taken = {key(e) for e in train}
    rest = [e for e in pool if key(e) not in taken]
    if len(rest) < n:
        raise ValueError(f"only {len(rest)} training-file {unit} {apart} the {len(train)} given; {n} development "
                         f"{unit} were asked for")
    return balanced_sample(rest, n, labels, seed)


def load_sentiment(split: str = "train", n: int | None = None, seed: int = 0) -> list[SentenceExample]:
    """Movie-review sentences, ``n`` of them class-balanced (all 3,000 train / 1,000 test when n is None)."""
    rows = [SentenceExample(r["text"], r["label"]) for r in _read("sentiment", split)]
    return balanced_sample(rows, n, SENTIMENT_LABELS, seed)


def load_nli(split: str = "train", n: int | None = None, seed: int = 0) -> list[PairExample]:
    """SNLI pairs, ``n`` of them class-balanced (all 3,000 train / 900 test when n is None)."""
    rows = [PairExample(r["premise"], r["hypothesis"], r["label"]) for r in _read("nli", split)]
    return balanced_sample(rows, n, NLI_LABELS, seed)


def class_balance(examples) -> dict[str, int]:
    """How many examples each label has, in label order."""
    return dict(sorted(Counter(e.label for e in examples).items()))


def majority_baseline(train, test) -> float:
    """Accuracy on ``test`` of always answering the most frequent label of ``train``."""
    if not train or not test:
        raise ValueError("the majority baseline needs training and test examples")
    label = Counter(e.label for e in train).most_common(1)[0][0]
    return sum(e.label == label for e in test) / len(test)


def one_side_baseline(train: list[PairExample], test: list[PairExample], side: str = "hypothesis") -> float:
    """Accuracy of a bag-of-words (1-2 grams) logistic regression that reads only one sentence of each pair.

    side="hypothesis": annotation artefacts -- words like "not", "nobody", "sleeping" that crowd-workers used
    when writing contradictions -- let it beat chance without ever seeing the premise (Gururangan et al. 2018,
    Poliak et al. 2018). side="premise" is the sanity check: a premise was given one hypothesis of each label,
    so it says nothing about the label and should score near chance.
    """
    return _accuracy(one_side_predictions(train, test, side), test)


def one_side_predictions(train: list[PairExample], test: list[PairExample], side: str = "hypothesis") -> list[str]:
    """The label :func:`one_side_baseline`'s classifier gives each test pair (for paired comparisons)."""
    if side not in ("premise", "hypothesis"):
        raise ValueError(f"side must be 'premise' or 'hypothesis', not {side!r}")
    return _bag_of_words([getattr(e, side) for e in train], [e.label for e in train], [getattr(e, side) for e in test])


def word_count_baseline(train: list[SentenceExample], test: list[SentenceExample]) -> float:
    """Held-out accuracy of the same bag-of-words logistic regression on sentences: which words (and word
    pairs) a sentence contains, and nothing of their order or meaning -- what labelled data alone can give
    without pretraining."""
    return _accuracy(word_count_predictions(train, test), test)


def word_count_predictions(train: list[SentenceExample], test: list[SentenceExample]) -> list[str]:
    """The label :func:`word_count_baseline`'s classifier gives each test sentence (for paired comparisons)."""
    return _bag_of_words([e.text for e in train], [e.label for e in train], [e.text for e in test])


def _accuracy(predicted: list, test: list) -> float:
    return float(sum(p == e.label for p, e in zip(predicted, test)) / len(test))


def _bag_of_words(train_texts, train_labels, test_texts) -> list:
    """Predictions of logistic regression on binary 1-2-gram counts, fitted on the training texts."""
    if not train_texts or not test_texts:
        raise ValueError("a bag-of-words baseline needs training and test examples")
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    vec = CountVectorizer(ngram_range=(1, 2), lowercase=True, binary=True)
    clf = LogisticRegression(max_iter=2000, C=1.0).fit(vec.fit_transform(train_texts), train_labels)
    return list(clf.predict(vec.transform(test_texts)))


# ----------------------------------------------------------------------------- collate functions

class _Collator:
    def __init__(self, tokenizer, labels: tuple[str, ...], max_length: int = 64):
        if max_length < 8:
            raise ValueError(f"max_length={max_length} is too short for a sentence: use at least 8 tokens")
        self.tokenizer, self.labels, self.max_length = tokenizer, tuple(labels), max_length

    def label_ids(self, examples) -> torch.Tensor:
        unknown = sorted({e.label for e in examples} - set(self.labels))
        if unknown:
            raise ValueError(f"unknown label {unknown[0]!r}: the labels are {', '.join(map(repr, self.labels))}")
        return torch.tensor([self.labels.index(e.label) for e in examples])

    def encode(self, texts, pairs=None) -> dict[str, torch.Tensor]:
        with warnings.catch_warnings():  # long texts are cut to max_length on purpose
            warnings.simplefilter("ignore")
            enc = self.tokenizer(list(texts), list(pairs) if pairs is not None else None,
                                 max_length=self.max_length, truncation=True)
        return {"input_ids": enc.input_ids, "attention_mask": enc.attention_mask, "token_type_ids": enc.token_type_ids}

    def unpadded(self, examples) -> tuple[list[list[int]], list[list[int]]]:
        """Token ids and segment ids of each example, without padding (for computing frozen states once)."""
        batch = self(examples)
        n = batch["attention_mask"].sum(1).tolist()
        return ([row[:k] for row, k in zip(batch["input_ids"].tolist(), n)],
                [row[:k] for row, k in zip(batch["token_type_ids"].tolist(), n)])

    @staticmethod
    def length(example) -> int:
        """A cheap stand-in for the token count (characters), to batch examples of similar length."""
        return sum(len(getattr(example, f, "")) for f in ("text", "premise", "hypothesis"))

    def cache_key(self) -> dict:
        """What the cache key of a training run needs to know about this collator."""
        return {"collator": type(self).__name__, "labels": self.labels, "max_length": self.max_length,
                # what the tokenizer is, never where it was loaded from: a path would differ in every clone
                "tokenizer": getattr(self.tokenizer, "fingerprint", type(self.tokenizer).__name__),
                "vocab_size": getattr(self.tokenizer, "vocab_size", None)}


class SentenceCollator(_Collator):
    """Sentences -> ``[CLS] sentence [SEP]`` ids, attention mask, segment ids (all 0) and labels."""

    def __call__(self, examples: list[SentenceExample]) -> dict[str, torch.Tensor]:
        return self.encode([e.text for e in examples]) | {"labels": self.label_ids(examples)}


class PairCollator(_Collator):
    """Pairs -> ``[CLS] premise [SEP] hypothesis [SEP]`` with segment ids 0 / 1 (the cross-encoder's input)."""

    def __call__(self, examples: list[PairExample]) -> dict[str, torch.Tensor]:
        return self.encode([e.premise for e in examples], [e.hypothesis for e in examples]) | {
            "labels": self.label_ids(examples)}


class BiEncoderCollator(_Collator):
    """Pairs -> two separate inputs, ``a_*`` for the premises and ``b_*`` for the hypotheses (SentenceBERT)."""

    def __call__(self, examples: list[PairExample]) -> dict[str, torch.Tensor]:
        a = self.encode([e.premise for e in examples])
        b = self.encode([e.hypothesis for e in examples])
        return {f"a_{k}": v for k, v in a.items() if k != "token_type_ids"} | {
            f"b_{k}": v for k, v in b.items() if k != "token_type_ids"} | {"labels": self.label_ids(examples)}


# ----------------------------------------------------------------------------- data cards

COUNTS_BEGIN, COUNTS_END = "<!-- counts:begin -->", "<!-- counts:end -->"


def counts_section(name: str) -> str:
    """The generated part of a data card: sizes, class balance, lengths, baselines (from the shipped files)."""
    metrics = json.loads(data_dir(name, "metrics.json").read_text())
    labels = SENTIMENT_LABELS if name == "sentiment" else NLI_LABELS
    load = load_sentiment if name == "sentiment" else load_nli
    lines = [COUNTS_BEGIN, "Generated by `python -m course_lib.finetuning.data` from the shipped files "
             "(a test checks that it is current).", "",
             "| split | examples | " + " | ".join(labels) + " | median words | longest |",
             "|---|---|" + "---|" * len(labels) + "---|---|"]
    for split in SPLITS:
        ex = load(split)
        bal = class_balance(ex)
        field = "text" if name == "sentiment" else "hypothesis"
        words = sorted(len(getattr(e, field).split()) for e in ex)
        lines.append(f"| {split} | {len(ex):,} | " + " | ".join(f"{bal.get(lab, 0):,}" for lab in labels)
                     + f" | {words[len(words) // 2]} | {words[-1]} |")
    train, test = load("train"), load("test")
    lines += ["", f"Majority-class baseline on test: {majority_baseline(train, test):.1%}."]
    if name == "nli":
        lines += [
            "Lengths above are of the hypotheses; premises: median "
            f"{sorted(len(e.premise.split()) for e in train)[len(train) // 2]} words; "
            f"{len({e.premise for e in train}):,} distinct premises in train, {len({e.premise for e in test}):,} in test.",
            "",
            f"**Hypothesis-only baseline** (bag of 1-2 grams, logistic regression, trained on the shipped train split, "
            f"never shown the premise): **{one_side_baseline(train, test):.1%}** on test, against "
            f"{majority_baseline(train, test):.1%} for the majority class; the premise-only control scores "
            f"{one_side_baseline(train, test, 'premise'):.1%}. Trained on all "
            f"{metrics['source']['train_pairs'] - metrics['source']['train_no_gold_label']:,} labelled pairs of the "
            f"package's SNLI subset, the same hypothesis-only model scores "
            f"{metrics['baselines']['hypothesis_only_100k']:.1%} (from `metrics.json`; not recomputable from the "
            "shipped files).",
        ]
    lines.append(COUNTS_END)
    return "\n".join(lines)


def write_data_cards() -> None:
    """Replace the counts section of each DATA_CARD.md with a freshly computed one."""
    for name in ("sentiment", "nli"):
        path = data_dir(name, "DATA_CARD.md")
        text = path.read_text()
        head, rest = text.split(COUNTS_BEGIN, 1)
        _, tail = rest.split(COUNTS_END, 1)
        path.write_text(head + counts_section(name) + tail)


if __name__ == "__main__":
    write_data_cards()
    for name in ("sentiment", "nli"):
        print(counts_section(name), end="\n\n")
