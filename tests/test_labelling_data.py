"""The shipped data of notebook 11.4b: wikigold (BIO, split by document) and the SQuAD 2.0 sample.

Counts are recomputed from the files and compared with stats.json and the data cards (which are generated
from stats.json); the BIO files must be exactly the IOB1 release converted by iob1_to_bio.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from course_lib.finetuning.labelling import (ENTITY_TYPES, bio_violations, iob1_to_bio, load_wikigold, read_conll,
                                             tag_counts, write_conll)
from course_lib.finetuning.ner_eval import get_entities
from course_lib.finetuning.qa import load_squad
from course_lib.paths import data_dir


@pytest.fixture(scope="module")
def wikigold():
    return {s: load_wikigold(s) for s in ("original", "train", "test")}


def stats(name):
    return json.loads(data_dir(name, "stats.json").read_text())


def test_wikigold_bio_files_are_the_release_converted_and_split_by_document(wikigold):
    original, train, test = wikigold["original"], wikigold["train"], wikigold["test"]
    assert len(original) == len(train) + len(test) == 1696
    test_docs = sorted(stats("wikigold")["test_documents"])
    train_docs = sorted({s.doc for s in original} - set(test_docs))
    assert len(test_docs) == 29 and len({s.doc for s in test}) == 29 and len({s.doc for s in train}) == 116
    # each split keeps the release's document order, numbered from 0: map back to the release's numbers
    by_doc = {}
    for sents, ids in ((train, train_docs), (test, test_docs)):
        for s in sents:
            by_doc.setdefault(ids[s.doc], []).append(s)
    converted = [s for d in sorted(by_doc) for s in by_doc[d]]
    assert [s.words for s in converted] == [s.words for s in original]
    assert [list(s.tags) for s in converted] == [iob1_to_bio(s.tags) for s in original]
    assert [len(by_doc[d]) for d in sorted(by_doc)] == [sum(s.doc == d for s in original) for d in sorted(by_doc)]


def test_wikigold_release_is_iob1_and_the_conversion_keeps_every_entity(wikigold):
    original = wikigold["original"]
    assert not any(t.startswith("B-") for s in original for t in s.tags)
    # every entity starts with I- in the release; none does after conversion
    assert sum(len(bio_violations(s.tags)) for s in original) == 3558
    assert not any(bio_violations(s.tags) for s in wikigold["train"] + wikigold["test"])
    for s in original:  # same spans, read leniently before and strictly after
        assert get_entities(s.tags) == get_entities(iob1_to_bio(s.tags), mode="strict")


def test_wikigold_counts_match_stats_and_data_card(wikigold):
    st = stats("wikigold")
    card = data_dir("wikigold", "DATA_CARD.md").read_text()
    for split in ("train", "test"):
        sents = wikigold[split]
        counts = tag_counts(sents)
        assert st[split]["sentences"] == len(sents)
        assert st[split]["tokens"] == sum(len(s) for s in sents)
        assert st[split]["per_type"] == {t: counts[t] for t in ENTITY_TYPES}
        row = (f"| {split} | {len({s.doc for s in sents})} | {len(sents):,} | {sum(len(s) for s in sents):,} | "
               + " | ".join(f"{counts[t]:,}" for t in ENTITY_TYPES) + f" | {sum(counts.values()):,} |")
        assert row in card, f"the data card's {split} row is stale; rerun tools/make_labelling_data.py"
    assert st["all"]["entities"] == 3558 and st["all"]["per_type"] == {"LOC": 1014, "MISC": 712, "ORG": 898, "PER": 934}
    assert data_dir("wikigold", "LICENSE").read_text().startswith("wikigold.conll.txt is licensed under CC-BY 4.0")


def test_conll_round_trip(wikigold):
    test = wikigold["test"]
    assert read_conll(write_conll(test), text=True) == [type(s)(s.words, s.tags, i) for s, i in
                                                        zip(test, _renumber([s.doc for s in test]))]


def _renumber(docs):
    order = {d: i for i, d in enumerate(dict.fromkeys(docs))}
    return [order[d] for d in docs]


def test_read_conll_reports_bad_lines():
    with pytest.raises(ValueError, match="line 2: 'X-PER' is not a BIO tag"):
        read_conll("Jane B-PER\nDoe X-PER\n", text=True)
    with pytest.raises(ValueError, match="line 1 has no tag"):
        read_conll("Jane\n", text=True)


def test_squad_sample_counts_offsets_and_split():
    st = stats("squad")
    train, test = load_squad("train"), load_squad("test")  # read_squad checks every answer offset
    for split, exs in (("train", train), ("test", test)):
        assert st[split]["questions"] == len(exs)
        assert st[split]["answerable"] == sum(not e.is_impossible for e in exs)
        assert {e.title for e in exs} == set(st[split]["articles"])
    assert len(train) + len(test) == 1407 and sum(not e.is_impossible for e in train + test) == 705
    assert not {e.context for e in train} & {e.context for e in test}
    card = data_dir("squad", "DATA_CARD.md").read_text()
    assert f"| {st['test']['questions']:,} | {st['test']['answerable']:,} | {st['test']['unanswerable']:,} |" in card
    assert "CC BY-SA 4.0" in data_dir("squad", "LICENSE.txt").read_text()


def test_data_is_declared_as_package_data():
    import fnmatch
    import tomllib

    with open(Path(__file__).resolve().parents[1] / "pyproject.toml", "rb") as f:
        globs = tomllib.load(f)["tool"]["setuptools"]["package-data"]["course_lib"]
    for path in ("data/wikigold/train.bio.conll", "data/wikigold/LICENSE", "data/squad/test.json",
                 "data/squad/DATA_CARD.md"):
        assert any(fnmatch.fnmatch(path, g) for g in globs), f"pyproject.toml's package-data does not ship {path}"
