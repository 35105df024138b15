"""The shipped nested-NER data (course_lib/data/gum_spans): counts match the card, spans are well-formed."""
from __future__ import annotations

import json
import sys
from collections import Counter

import pytest

from conftest import ROOT
from course_lib.paths import data_dir
from course_lib.spans import load_gum_spans, nesting_depths

sys.path.insert(0, str(ROOT / "tools"))
import make_span_data  # noqa: E402

STATS = json.loads(data_dir("gum_spans", "stats.json").read_text())


@pytest.mark.parametrize("split", ["train", "test"])
def test_counts_match_stats_json(split):
    sents = load_gum_spans(split)
    st = STATS["splits"][split]
    assert len(sents) == st["sentences"]
    assert sum(len(s) for s in sents) == st["words"]
    types = Counter(t for s in sents for _, _, t in s.entities)
    assert dict(types) == st["by_type"]
    depths = Counter(d for s in sents for d in nesting_depths(s.entities))
    assert {str(k): v for k, v in depths.items()} == st["by_depth"]
    assert sum(v for k, v in depths.items() if k > 1) == st["inner_entities"]
    assert len({s.doc for s in sents}) == st["documents"]
    assert max(len(s) for s in sents) <= STATS["max_words"]


def test_splits_share_no_document_and_only_licensed_genres():
    train, test = load_gum_spans("train"), load_gum_spans("test")
    assert not {s.doc for s in train} & {s.doc for s in test}
    genres = {s.doc.split("_")[1] for s in train + test}
    assert genres <= set(make_span_data.GENRES)


def test_entities_are_names_of_three_types_and_never_cross():
    for s in load_gum_spans("train") + load_gum_spans("test"):
        for a, b, t in s.entities:
            assert t in ("LOC", "ORG", "PER")
            assert s.words[a][0].isupper() or s.words[a][0].isdigit(), s.text((a, b))
            assert s.words[b] not in ("'s", "'")
        spans = [(a, b) for a, b, _ in s.entities]
        assert len(spans) == len(set(spans)), "two entities on the same words"
        assert not any(a < c <= b < d for a, b in spans for c, d in spans), "crossing entities"


def test_there_are_nested_entities_in_both_splits():
    for split in ("train", "test"):
        assert STATS["splits"][split]["inner_entities"] >= 100


def test_card_is_generated_from_the_stats_and_licence_is_shipped():
    card = data_dir("gum_spans", "DATA_CARD.md").read_text()
    assert card == make_span_data.card(STATS)
    licence = data_dir("gum_spans", "LICENSE").read_text()
    assert "Creative Commons Attribution" in licence and "Zeldes" in licence


def test_parser_matches_brackets_per_label(tmp_path):
    doc = tmp_path / "GUM_news_x.conll"
    doc.write_text("# begin document GUM_news_x\n"
                   "0\tThe\t(place-1-DAR_Hall\n"
                   "1\tDaughters\t(organization-2-DAR\n"
                   "2\tof\t_\n"
                   "3\tthe\t(event-3\n"
                   "4\tRevolution\torganization-2-DAR)event-3)\n"
                   "5\tHall\tplace-1-DAR_Hall)\n"
                   "6\t.\t_\n# end document\n")
    tokens, mentions = make_span_data.parse_document(doc)
    assert tokens[1] == "Daughters"
    assert sorted(mentions) == [(0, 5, "place-1-DAR_Hall"), (1, 4, "organization-2-DAR"), (3, 4, "event-3")]


def test_name_filter_and_sentence_breaks():
    words = "the University of Michigan 's staff".split()
    assert make_span_data.name_span(words, 0, 4) == (1, 3)
    assert make_span_data.name_span("he said".split(), 0, 0) is None
    assert make_span_data.name_span("a Swiss mathematician".split(), 0, 2) is None
    toks = "It rained . Then we left ! Fine , he said .".split()
    assert make_span_data.sentence_breaks(toks, []) == [(0, 2), (3, 6), (7, 11)]
    toks = "He said \" go . \" Then he left .".split()  # a closing quote stays with its sentence
    assert make_span_data.sentence_breaks(toks, []) == [(0, 5), (6, 9)]
    assert make_span_data.sentence_breaks("See p. 4 . Then".split(), []) == [(0, 3), (4, 4)]
    # no cut inside a mention
    assert make_span_data.sentence_breaks("Washington D.C . Is big .".split(), [(0, 2, "place-1")]) == [(0, 2), (3, 5)]
