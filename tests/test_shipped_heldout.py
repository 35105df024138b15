"""course_lib.checkpoints.shipped_heldout: the held-out texts that ship with a model, by split."""
from __future__ import annotations

import pytest

from course_lib.checkpoints import shipped_heldout, shipped_model_dir


def test_course_bert_gives_scored_and_fitted_pieces_of_every_source_interleaved():
    folder = shipped_model_dir("course-bert")
    rows = [line.split("\t") for line in (folder / "heldout.tsv").read_text().splitlines()[1:]]
    score, fit = shipped_heldout("course-bert"), shipped_heldout("course-bert", "fit")
    assert len(score) == sum(r[2] == "eval" for r in rows) and len(fit) == sum(r[2] == "fit" for r in rows)
    assert not set(score) & set(fit)
    source_of = {r[3]: r[0] for r in rows}
    sources = sorted({r[0] for r in rows})
    assert [source_of[t] for t in score[:len(sources)]] == sources  # the first pieces: one of each source


def test_a_model_with_a_plain_list_gives_it_for_eval_and_refuses_fit():
    lines = shipped_heldout("minilm-wordnet-mlm")
    assert len(lines) == 2000
    with pytest.raises(ValueError, match="without a 'fit' part"):
        shipped_heldout("minilm-wordnet-mlm", "fit")


def test_unknown_names_and_splits_are_refused_in_words():
    with pytest.raises(FileNotFoundError, match="'nosuch' is not a shipped model; shipped: "):
        shipped_heldout("nosuch")
    with pytest.raises(ValueError, match="split must be 'eval' or 'fit', not 'train'"):
        shipped_heldout("course-bert", "train")
