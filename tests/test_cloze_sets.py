"""The everyday cloze sentences (course_lib/data/cloze): one [MASK] each, every answer one WordPiece token of the
course's vocabulary, no sentence in both the dev and the test set."""
from __future__ import annotations

import json

import pytest

from course_lib import load_pretrained
from course_lib.paths import data_dir

TOPICS = {"home", "food", "animals", "body", "weather", "school", "work", "travel", "shopping", "time", "sports",
          "clothes", "feelings", "nature", "places", "facts", "idioms", "function-words"}


def _read(name):
    return [json.loads(line) for line in data_dir("cloze", f"{name}.jsonl").read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def tokenizer():
    return load_pretrained()[1]


@pytest.mark.parametrize("name, at_least", [("everyday_dev", 100), ("everyday_test", 60)])
def test_every_sentence_has_one_mask_and_single_token_answers(tokenizer, name, at_least):
    items = _read(name)
    assert len(items) >= at_least
    for it in items:
        assert it["text"].count("[MASK]") == 1, it
        assert 5 <= len(it["text"].split()) <= 14 and it["topic"] in TOPICS, it
        assert it["answers"] and len(set(it["answers"])) == len(it["answers"]), it
        for a in it["answers"]:
            assert a == a.lower() and tokenizer.token_to_id(a) is not None, (it["text"], a)


def test_the_test_set_shares_no_sentence_with_the_dev_set():
    dev = {it["text"].lower() for it in _read("everyday_dev")}
    assert not dev & {it["text"].lower() for it in _read("everyday_test")}
