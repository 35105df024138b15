"""The training script's recipe options: source weights (a fixed share of each source's pieces) and the layers'
share of the learning rate (the fresh head at the full rate)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import train_course_bert as T  # noqa: E402

ROWS = [("a", f"piece {i} of a") for i in range(2000)] + [("b", f"piece {i} of b") for i in range(1000)]


def test_weights_keep_whole_copies_and_a_fixed_share_in_order():
    idx = T.reweight(ROWS, {"a": 0.3, "b": 2.5})
    from_a = [i for i in idx if ROWS[i][0] == "a"]
    from_b = [i for i in idx if ROWS[i][0] == "b"]
    assert 0.25 < len(from_a) / 2000 < 0.35 and len(set(from_a)) == len(from_a)
    assert 2.45 < len(from_b) / 1000 < 2.55 and set(from_b) == set(range(2000, 3000))
    assert idx == sorted(idx), "copies stay in the source's order: blocks hold running text"
    assert idx == T.reweight(ROWS, {"a": 0.3, "b": 2.5}), "a fixed choice, not a random one"
    assert T.reweight(ROWS, {}) == list(range(3000))


def test_unknown_sources_and_bad_weights_are_refused_in_the_users_words():
    with pytest.raises(SystemExit, match=r"names sources the text does not have: \['c'\]"):
        T.reweight(ROWS, {"c": 2})
    assert T.parse_weights("kjv=0.3, brown=2") == {"kjv": 0.3, "brown": 2.0}
    with pytest.raises(argparse.ArgumentTypeError, match="name=number pairs, got 'kjv'"):
        T.parse_weights("kjv")
    with pytest.raises(argparse.ArgumentTypeError, match="must be >= 0"):
        T.parse_weights("kjv=-1")


def test_the_recipe_names_only_the_options_that_were_changed():
    class Corpus:
        sha, weights = "x", {}

    args = T.parser().parse_args([])
    assert "encoder_lr_scale" not in T.recipe(args, Corpus()), "runs saved before the option still continue"
    args = T.parser().parse_args(["--encoder-lr-scale", "0.2", "--source-weights", "kjv=0.3"])
    Corpus.weights = args.source_weights
    r = T.recipe(args, Corpus())
    assert r["encoder_lr_scale"] == 0.2 and r["source_weights"] == {"kjv": 0.3}
    assert "--encoder-lr-scale 0.2 --source-weights kjv=0.3" in T.command_line(args, args.steps)
