"""The copy of the Python reference manual that notebook 11.2 pretrains on (course_lib/data/python_reference)."""
from __future__ import annotations

import json
import platform
import re

import pytest

from course_lib.paths import data_dir
from course_lib.pretraining.corpus import corpus_hash, python_reference_documents, python_reference_topics

FOLDER = data_dir("python_reference")


def test_the_copy_is_python_3_11_7_s_manual_and_keeps_its_licence():
    data = json.loads((FOLDER / "topics.json").read_text(encoding="utf-8"))
    assert data["python"] == "3.11.7" and data["source"] == "pydoc_data.topics"
    assert list(data["topics"]) == sorted(data["topics"]) and len(data["topics"]) == 79
    licence = (FOLDER / "LICENSE.txt").read_text()
    assert "PYTHON SOFTWARE FOUNDATION LICENSE VERSION 2" in licence
    if platform.python_version() != data["python"]:
        pytest.skip(f"Python {platform.python_version()} ships another manual: the copy is compared on 3.11.7 only")
    from pydoc_data.topics import topics

    assert python_reference_topics() == topics


def test_the_shipped_tiny_bert_was_trained_on_this_text_and_the_card_counts_it():
    (made,) = [json.loads(p.read_text()) for p in data_dir("runs", "pretraining").glob("tiny-bert-*/shipped.json")]
    docs = python_reference_documents()
    assert corpus_hash(docs) == made["corpus_hash"]
    card = (FOLDER / "DATA_CARD.md").read_text()
    counts = re.search(r"(\d+) documents, ([\d,]+) sentences, ([\d,]+) words", card)
    assert counts, "the card states the documents, sentences and words"
    assert [int(g.replace(",", "")) for g in counts.groups()] == [
        len(docs), sum(len(d) for d in docs), sum(len(s.split()) for d in docs for s in d)]
