"""WordNet 3.0 senses of a word, with their sense keys and glosses (from Debian's ``wordnet-base``).

    python tools/wordnet_lookup.py bank            # every noun and verb sense of "bank"
    python tools/wordnet_lookup.py bank --pos n

Used to map each sense of the project's sense-labelled data (course_lib/data/wsd) to
its WordNet sense key; tests/test_wsd_data.py checks the mapping with it when WordNet is
installed. Sense keys are built as WordNet does (``lemma%ss_type:lex_filenum:lex_id::``);
adjective satellites (which need a head word) are not listed.
"""
from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

WORDNET_DIR = Path(os.environ.get("WNSEARCHDIR", "/usr/share/wordnet"))
POS_NAMES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
SS_TYPE = {"n": 1, "v": 2, "a": 3, "r": 4, "s": 5}


@dataclass(frozen=True)
class Sense:
    lemma: str
    pos: str
    number: int       # 1 = the most frequent sense in WordNet's counts
    offset: str
    sense_key: str
    synonyms: tuple[str, ...]
    gloss: str


def available(wordnet_dir: Path = WORDNET_DIR) -> bool:
    return (wordnet_dir / "index.noun").exists() and (wordnet_dir / "data.noun").exists()


def _index_offsets(lemma: str, pos: str, wordnet_dir: Path) -> list[str]:
    key = lemma.lower().replace(" ", "_") + " "
    with open(wordnet_dir / f"index.{POS_NAMES[pos]}", encoding="latin-1") as f:
        for line in f:
            if line.startswith(key):
                fields = line.split()
                synset_cnt = int(fields[2])
                return fields[-synset_cnt:]
    return []


def _data_line(offset: str, pos: str, wordnet_dir: Path) -> str:
    with open(wordnet_dir / f"data.{POS_NAMES[pos]}", "rb") as f:
        f.seek(int(offset))
        return f.readline().decode("latin-1")


def senses(lemma: str, pos: str | None = None, wordnet_dir: Path = WORDNET_DIR) -> list[Sense]:
    """Every sense of ``lemma`` (nouns, then verbs, adjectives, adverbs unless ``pos`` is given)."""
    out = []
    for p in [pos] if pos else ["n", "v", "a", "r"]:
        for number, offset in enumerate(_index_offsets(lemma, p, wordnet_dir), start=1):
            line = _data_line(offset, p, wordnet_dir)
            head, _, gloss = line.partition("|")
            fields = head.split()
            lex_filenum, ss_type, w_cnt = int(fields[1]), fields[2], int(fields[3], 16)
            words = [(fields[4 + 2 * i], int(fields[5 + 2 * i], 16)) for i in range(w_cnt)]
            if ss_type == "s":
                continue
            lex_id = next((lid for w, lid in words if w.lower().split("(")[0] == lemma.lower().replace(" ", "_")), 0)
            key = f"{lemma.lower().replace(' ', '_')}%{SS_TYPE[ss_type]}:{lex_filenum:02d}:{lex_id:02d}::"
            out.append(Sense(lemma, p, number, offset, key, tuple(w.split("(")[0] for w, _ in words), gloss.strip()))
    return out


def sense_by_key(sense_key: str, wordnet_dir: Path = WORDNET_DIR) -> Sense | None:
    lemma, _, rest = sense_key.partition("%")
    pos = {v: k for k, v in SS_TYPE.items()}[int(rest[0])]
    return next((s for s in senses(lemma.replace("_", " "), pos, wordnet_dir) if s.sense_key == sense_key), None)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("lemma")
    ap.add_argument("--pos", choices=sorted(POS_NAMES))
    args = ap.parse_args(argv)
    if not available():
        raise SystemExit(f"WordNet 3.0 is not in {WORDNET_DIR}: `apt install wordnet-base` (or set WNSEARCHDIR)")
    for s in senses(args.lemma, args.pos):
        print(f"{s.sense_key:24s} {s.pos}{s.number:<3d} [{', '.join(s.synonyms)}] {s.gloss}")


if __name__ == "__main__":
    main()
