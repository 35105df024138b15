"""course_lib.pretraining.everyday: the everyday cloze sentences and how a model is scored on them."""
from __future__ import annotations

import pytest

from course_lib import load_pretrained
from course_lib.pretraining import NoMLMHeadError, everyday_cloze, everyday_cloze_scores


@pytest.fixture(scope="module")
def mlm():
    return load_pretrained("minilm-wordnet-mlm", device="cpu")


def test_the_splits_load_and_an_unknown_split_is_named():
    assert len(everyday_cloze("dev")) >= 100 and len(everyday_cloze("test")) >= 60
    with pytest.raises(ValueError, match="split must be one of dev, test, not 'train'"):
        everyday_cloze("train")


def test_scores_count_a_sentence_when_an_acceptable_word_is_first_or_in_the_top_k(mlm):
    model, tok = mlm
    items = everyday_cloze("dev")[:20]
    s = everyday_cloze_scores(model, tok, items, top_k=5)
    assert s.n == 20 and s.k == 5 and len(s.rows) == 20
    for row, it in zip(s.rows, items):
        assert len(row["top"]) == 5 and row["answers"] == it["answers"]
        assert row["top1_ok"] == (row["top"][0] in it["answers"])
        assert row["topk_ok"] == bool(set(row["top"]) & set(it["answers"]))
    assert s.top1 == sum(r["top1_ok"] for r in s.rows) / 20 <= s.topk == sum(r["topk_ok"] for r in s.rows) / 20
    # an item whose answers are exactly the model's first guess is always counted
    first = s.rows[0]["top"][0]
    forced = everyday_cloze_scores(model, tok, [{"text": items[0]["text"], "answers": [first]}])
    assert forced.top1 == forced.topk == 1.0
    assert "1 everyday sentences: an acceptable word first in 100%, in the top 5 in 100%" == str(forced)
    # a first guess that is a word of the sentence is counted as copied, and only that
    copying = everyday_cloze_scores(model, tok, [{"text": f"{first} and the [MASK] again", "answers": ["x"]},
                                                 {"text": f"The [MASK] is not {first}x.", "answers": ["x"]}])
    assert [r["copied"] for r in copying.rows] == [copying.rows[0]["top"][0] == first or
                                                   copying.rows[0]["top"][0] in ("and", "the", "again"),
                                                   copying.rows[1]["top"][0] in ("the", "is", "not", first + "x")]
    assert copying.copied == sum(r["copied"] for r in copying.rows)


def test_bad_input_is_refused_in_words(mlm):
    model, tok = mlm
    with pytest.raises(ValueError, match="exactly one \\[MASK\\], it has 2"):
        everyday_cloze_scores(model, tok, [{"text": "The [MASK] sat on the [MASK].", "answers": ["cat"]}])
    with pytest.raises(ValueError, match="no sentences"):
        everyday_cloze_scores(model, tok, [])
    encoder, etok = load_pretrained(device="cpu")
    with pytest.raises(NoMLMHeadError):
        everyday_cloze_scores(encoder, etok, everyday_cloze("dev")[:1])
