"""The shipped fine-tuning data (sentiment, SNLI): sizes, balance, splits, cards, baselines, collate functions."""
from __future__ import annotations

import json

import pytest
import torch

from course_lib.finetuning.data import (COUNTS_BEGIN, COUNTS_END, NLI_LABELS, SENTIMENT_LABELS, BiEncoderCollator,
                                        PairCollator, PairExample, SentenceCollator, SentenceExample, class_balance,
                                        counts_section, load_nli, load_sentiment, majority_baseline,
                                        one_side_baseline)
from course_lib.paths import data_dir


def test_sentiment_splits_have_the_stated_sizes_and_balance():
    train, test = load_sentiment("train"), load_sentiment("test")
    assert (len(train), len(test)) == (3000, 1000)
    assert class_balance(train) == {"negative": 1500, "positive": 1500}
    assert class_balance(test) == {"negative": 500, "positive": 500}
    assert not {e.text for e in train} & {e.text for e in test}
    assert all(e.text.strip() and len(e.text.split()) <= 40 for e in train + test)


def test_sentiment_labels_are_the_sign_of_a_clear_rating():
    for split in ("train", "test"):
        for line in data_dir("sentiment", f"{split}.jsonl").read_text().splitlines():
            r = json.loads(line)
            assert abs(r["rating"]) >= 0.5
            assert r["label"] == ("positive" if r["rating"] > 0 else "negative")


def test_nli_splits_are_balanced_premise_groups_without_overlap():
    train, test = load_nli("train"), load_nli("test")
    assert (len(train), len(test)) == (3000, 900)
    assert class_balance(train) == {"contradiction": 1000, "entailment": 1000, "neutral": 1000}
    assert class_balance(test) == {"contradiction": 300, "entailment": 300, "neutral": 300}
    assert not {e.premise for e in train} & {e.premise for e in test}
    groups = {}
    for e in train:
        groups.setdefault(e.premise, []).append(e.label)
    assert all(sorted(v) == sorted(NLI_LABELS) for v in groups.values())


def test_balanced_samples_are_seeded_and_balanced():
    a = load_sentiment("train", n=201, seed=1)
    assert len(a) == 201 and sorted(class_balance(a).values()) == [100, 101]
    assert a == load_sentiment("train", n=201, seed=1) != load_sentiment("train", n=201, seed=2)
    b = load_nli("test", n=90)
    assert class_balance(b) == {"contradiction": 30, "entailment": 30, "neutral": 30}


@pytest.mark.parametrize("call, message", [
    (lambda: load_sentiment("dev"), "unknown split 'dev'"),
    (lambda: load_sentiment("train", n=1), "at least 2"),
    (lambda: load_nli("test", n=5000), "only 900"),
])
def test_bad_requests_get_plain_messages(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_data_cards_are_current():
    for name in ("sentiment", "nli"):
        card = data_dir(name, "DATA_CARD.md").read_text()
        section = card[card.index(COUNTS_BEGIN):card.index(COUNTS_END) + len(COUNTS_END)]
        assert section == counts_section(name), f"{name}/DATA_CARD.md is stale: run python -m course_lib.finetuning.data"


def test_licences_and_attribution_ship_with_the_data():
    assert "MIT License" in data_dir("sentiment", "LICENSE").read_text()
    assert "CC BY-SA 4.0" in data_dir("nli", "LICENSE.md").read_text()
    assert "Hutto" in data_dir("sentiment", "DATA_CARD.md").read_text()
    assert "Bowman" in data_dir("nli", "DATA_CARD.md").read_text()


@pytest.mark.slow  # training: `make test`, not the fast loop
def test_hypothesis_only_baseline_beats_chance_and_premise_only_does_not():
    train, test = load_nli("train"), load_nli("test")
    metrics = json.loads(data_dir("nli", "metrics.json").read_text())["baselines"]
    hyp = one_side_baseline(train, test)
    assert hyp == pytest.approx(metrics["hypothesis_only"], abs=1e-4)
    assert hyp > 0.45 > majority_baseline(train, test) + 0.1
    # every premise comes with one hypothesis of each label, so it tells nothing about the label
    assert one_side_baseline(train, test, "premise") == pytest.approx(1 / 3, abs=0.01)


def test_majority_baseline_counts_the_training_majority():
    train = [SentenceExample("a", "positive")] * 3 + [SentenceExample("b", "negative")]
    test = [SentenceExample("c", "positive"), SentenceExample("d", "negative")] * 2 + [SentenceExample("e", "negative")]
    assert majority_baseline(train, test) == pytest.approx(2 / 5)


def test_sentence_collator_builds_cls_sentence_sep_with_labels(embedded):
    _, tok = embedded
    batch = SentenceCollator(tok, SENTIMENT_LABELS, max_length=64)(
        [SentenceExample("A gorgeous film.", "positive"), SentenceExample("Dull.", "negative")])
    assert batch["input_ids"].shape == batch["attention_mask"].shape == (2, 6)
    assert batch["labels"].tolist() == [1, 0]
    assert tok.convert_ids_to_tokens(batch["input_ids"][1].tolist()) == ["[CLS]", "dull", ".", "[SEP]", "[PAD]", "[PAD]"]
    assert batch["token_type_ids"].sum() == 0


def test_pair_collator_marks_the_hypothesis_with_segment_1(embedded):
    _, tok = embedded
    batch = PairCollator(tok, NLI_LABELS)([PairExample("I'm confused.", "Not all of it is very clear to me.", "entailment")])
    tokens = tok.convert_ids_to_tokens(batch["input_ids"][0].tolist())
    first_sep = tokens.index("[SEP]")
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
    assert batch["token_type_ids"][0, :first_sep + 1].sum() == 0
    assert batch["token_type_ids"][0, first_sep + 1:].eq(1).all()


def test_bi_encoder_collator_keeps_the_two_sentences_apart(embedded):
    _, tok = embedded
    batch = BiEncoderCollator(tok, NLI_LABELS)([PairExample("A man sleeps.", "Nobody sleeps.", "contradiction")])
    assert set(batch) == {"a_input_ids", "a_attention_mask", "b_input_ids", "b_attention_mask", "labels"}
    assert tok.decode(batch["b_input_ids"][0]) == "nobody sleeps."
    assert batch["labels"].tolist() == [2]


def test_long_sentences_are_cut_to_max_length_and_unknown_labels_refused(embedded):
    _, tok = embedded
    collate = SentenceCollator(tok, SENTIMENT_LABELS, max_length=16)
    batch = collate([SentenceExample("word " * 40, "positive")])
    assert batch["input_ids"].shape == (1, 16) and batch["input_ids"][0, -1] == tok.token_to_id("[SEP]")
    with pytest.raises(ValueError, match="unknown label 'neutral'"):
        collate([SentenceExample("fine", "neutral")])
    assert torch.is_tensor(batch["labels"])


def test_the_cache_key_names_the_tokenizer_by_its_content_not_its_folder(embedded, tmp_path):
    """A run cached in one clone is found in another: the key must not hold the folder the tokenizer came from
    (every fresh clone has its own virtual environment, so the embedded model's path differs)."""
    import shutil

    from course_lib.checkpoints import embedded_model_dir
    from course_lib.tokenization import BertTokenizer

    _, tok = embedded
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(embedded_model_dir() / name, tmp_path / name)
    moved = BertTokenizer.from_dir(tmp_path)
    assert moved.name != tok.name
    assert SentenceCollator(moved, SENTIMENT_LABELS).cache_key() == SentenceCollator(tok, SENTIMENT_LABELS).cache_key()
    assert str(tmp_path) not in json.dumps(SentenceCollator(moved, SENTIMENT_LABELS).cache_key())
    # another vocabulary is another tokenizer
    data = json.loads((tmp_path / "tokenizer.json").read_text())
    data["model"]["vocab"]["zzzz"] = len(data["model"]["vocab"])
    (tmp_path / "tokenizer.json").write_text(json.dumps(data))
    other = BertTokenizer.from_dir(tmp_path)
    assert other.fingerprint != tok.fingerprint
    assert SentenceCollator(other, SENTIMENT_LABELS).cache_key() != SentenceCollator(tok, SENTIMENT_LABELS).cache_key()
