"""tools/build_english_text.py: cleaning, cutting, filtering, deduplication across sources, caps, the held-out
rule and the data card, on fake sources (no download: a fetched root that is already unpacked is reused)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import build_english_text as B  # noqa: E402
from english_text.base import REGISTERS, Source  # noqa: E402
from english_text.fetch import Package, fetch  # noqa: E402


def test_a_long_paragraph_is_cut_at_sentence_ends_and_a_too_long_sentence_at_the_limit():
    text = "One two three four five six. Seven eight nine ten eleven twelve! Thirteen fourteen fifteen sixteen?"
    assert B.pieces(text, max_words=12) == ["One two three four five six. Seven eight nine ten eleven twelve!",
                                            "Thirteen fourteen fifteen sixteen?"]
    long = " ".join(f"w{i}" for i in range(25)) + ". Short one here."
    got = B.pieces(long, max_words=10)
    assert got[0] == " ".join(f"w{i}" for i in range(10)) and got[1] == " ".join(f"w{i}" for i in range(10, 20))
    assert got[2] == "w20 w21 w22 w23 w24. Short one here."
    assert all(len(p.split()) <= 10 for p in got)
    assert B.pieces("He said \"Stop.\" Then he\tleft.\x07", 3) == ['He said "Stop."', "Then he left."]


@pytest.mark.parametrize("piece, why", [
    ("Too short to keep.", "short"),
    ("A line with {markup} left in it here.", "markup"),
    ("12 34 56 78 90 11 22 word", "symbols"),
    ("The dog barked at the mailman all morning.", None),
])
def test_a_piece_is_kept_only_with_enough_words_letters_and_no_markup(piece, why):
    assert B.keep(piece) == why


def test_the_held_out_rule_depends_only_on_the_normalised_text():
    texts = [f"Sentence number {i} of a held-out test, with words." for i in range(500)]
    held = [t for t in texts if B.is_heldout(t)]
    assert 0 < len(held) < 30  # about one in HOLDOUT_MOD = 50
    for t in held:
        assert B.is_heldout(t.upper().replace(",", " ;"))


def _fake_source(work: Path, name: str, paragraphs: list[str], cap=None, attribution=None) -> Source:
    pkg = Package("npm", f"fake-{name}", "1.0")
    root = work / "npm" / f"fake-{name}-1.0"
    root.mkdir(parents=True)
    (root / "LICENSE").write_text(f"licence of {name}\n")
    (root / "text.json").write_text(json.dumps(paragraphs))
    (root / ".unpacked").write_text("ok\n")
    assert fetch(pkg, work) == root  # already unpacked: no download
    return Source(name, f"Fake {name}", (pkg,), "CC0-1.0", "fiction",
                  lambda roots: iter(json.loads((roots[0] / "text.json").read_text())),
                  licence_files=("LICENSE",), cap_words=cap, attribution=attribution)


def test_build_deduplicates_across_sources_caps_holds_out_and_writes_the_card(tmp_path):
    shared = "This sentence appears in both of the sources word for word."
    a = [shared] + [f"The first source says thing number {i} in seven words." for i in range(200)]
    b = [shared.upper(), "Too short.", "A {markup} line that the filter must drop here."] + [
        f"The second source has its own sentence number {i} too." for i in range(200)]
    credit = lambda roots: f"beta's authors, from {roots[0].name}\n"  # noqa: E731
    sources = [_fake_source(tmp_path / "pkgs", "alpha", a),
               _fake_source(tmp_path / "pkgs", "beta", b, cap=500, attribution=credit)]
    stats = B.build(sources, tmp_path / "pkgs", tmp_path / "out", log=lambda *_: None)
    train = B_rows(tmp_path / "out" / "train.tsv")
    held = B_rows(tmp_path / "out" / "heldout.tsv")
    alpha, beta = stats["sources"]["alpha"], stats["sources"]["beta"]
    assert (alpha["duplicates"], beta["duplicates"]) == (0, 1)   # the first source keeps the shared sentence
    assert beta["dropped"] == {"short": 1, "markup": 1, "symbols": 0, "cloze": 0}
    assert 500 <= beta["words"] < 500 + 11 and beta["dropped_by_cap"] > 0     # capped at 500 words
    assert alpha["pieces"] == 201 and alpha["train_pieces"] + alpha["heldout_pieces"] == 201
    assert all(B.is_heldout(t) for _, t in held) and not any(B.is_heldout(t) for _, t in train)
    assert len({B.normalise(t) for _, t in train + held}) == len(train) + len(held)
    assert (tmp_path / "out" / "licences" / "beta" / "LICENSE").read_text() == "licence of beta\n"
    credited = (tmp_path / "out" / "licences" / "beta" / "ATTRIBUTION.txt").read_text()
    assert credited == "beta's authors, from fake-beta-1.0\n"
    assert beta["licence_files"] == ["LICENSE", "ATTRIBUTION.txt"] and alpha["licence_files"] == ["LICENSE"]
    card = (tmp_path / "out" / "DATA_CARD.md").read_text()
    assert "Fake alpha" in card and "CC0-1.0" in card and f"{stats['train_words']:,} training words" in card
    assert stats["train_words"] == sum(len(t.split()) for _, t in train)


def B_rows(path: Path) -> list[tuple[str, str]]:
    return [tuple(line.split("\t", 1)) for line in path.read_text().splitlines()]


def test_every_source_names_a_register_a_licence_and_its_licence_files():
    sources = B.all_sources()
    names = [s.name for s in sources]
    assert len(names) == len(set(names)) >= 20
    for s in sources:
        assert s.register in REGISTERS and s.licence and s.licence_files and s.packages, s.name
    assert sum(s.modern for s in sources) >= 14


def test_an_unknown_source_is_named_with_the_known_ones():
    with pytest.raises(SystemExit, match="unknown source.*nosuch.*known: brown"):
        B.main(["--only", "nosuch", "--out", "/nonexistent"])
