"""The project's sense-labelled data (course_lib/data/wsd): size, format, split, WordNet mapping, data card."""
from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

from course_lib.embeddings.senses import DATA_DIR, counts_table, load_sense_data, parse_marked

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import wordnet_lookup  # noqa: E402

DATA = load_sense_data()
FILES = sorted(DATA_DIR.glob("*.json"))
# forms that do not start with the lemma's first three letters
IRREGULAR = {"mouse": {"mice"}}


def test_at_least_25_words_with_2_to_4_senses_and_20_sentences_per_sense():
    assert len(DATA.lemmas) >= 25
    for lemma in DATA.lemmas:
        assert 2 <= len(DATA.senses_of(lemma)) <= 4, lemma
    per_sense = Counter(e.sense for e in DATA.examples)
    assert min(per_sense.values()) >= 20, per_sense.most_common()[-1]
    assert set(per_sense) == set(DATA.senses)


@pytest.mark.parametrize("f", FILES, ids=lambda f: f.stem)
def test_each_sentence_marks_one_form_of_its_word_and_nothing_else(f):
    d = json.loads(f.read_text(encoding="utf-8"))
    assert d["lemma"] == f.stem
    for s in d["senses"]:
        assert s["label"].startswith(d["lemma"] + " ("), s["label"]
        for sentence in s["sentences"]:
            text, start, end = parse_marked(sentence)
            word = text[start:end].lower()
            assert word.startswith(d["lemma"][:3]) or word in IRREGULAR.get(d["lemma"], ()), sentence
            others = [m for m in re.finditer(rf"\b{re.escape(d['lemma'][:4])}", text.lower()) if m.start() != start]
            assert not others, f"a second occurrence of {d['lemma']!r} in {sentence!r}"


def test_no_sentence_appears_twice():
    texts = Counter(e.text for e in DATA.examples)
    assert texts.most_common(1)[0][1] == 1, texts.most_common(3)


def test_split_is_by_sentence_75_25_with_test_sentences_for_every_sense():
    assert not {e.text for e in DATA.train} & {e.text for e in DATA.test}
    assert abs(len(DATA.test) / len(DATA.examples) - 0.25) < 0.02
    c = DATA.counts()
    for label, sense in DATA.senses.items():
        assert c[(sense.lemma, label, "test")] >= 5


def test_senses_are_not_all_equally_frequent():
    """Otherwise the most-frequent-sense baseline would be a coin toss for every word."""
    unequal = [l for l in DATA.lemmas if len({len(DATA.for_lemma(l)) and sum(e.sense == s.label for e in DATA.for_lemma(l))
                                              for s in DATA.senses_of(l)}) > 1]
    assert len(unequal) >= 0.8 * len(DATA.lemmas)


def test_sense_keys_look_like_wordnet_keys_and_glosses_are_there():
    for s in DATA.senses.values():
        assert re.fullmatch(rf"{re.escape(s.lemma)}%[1-5]:\d\d:\d\d::", s.sense_key), s.sense_key
        assert len(s.gloss) > 10


@pytest.mark.skipif(not wordnet_lookup.available(), reason="WordNet 3.0 (Debian wordnet-base) is not installed")
def test_sense_keys_and_glosses_match_wordnet_3():
    for s in DATA.senses.values():
        wn = wordnet_lookup.sense_by_key(s.sense_key)
        assert wn is not None, f"{s.label}: {s.sense_key} is not a WordNet 3.0 sense key"
        assert s.gloss in wn.gloss, f"{s.label}: the gloss differs from WordNet's: {wn.gloss!r}"


def test_the_data_card_table_is_current():
    card = (DATA_DIR / "DATA_CARD.md").read_text(encoding="utf-8")
    assert counts_table(DATA) in card, "regenerate the table with `python -m course_lib.embeddings.senses`"
    total = len(DATA.examples)
    assert f"{total:,} sentences" in card
