"""Rebuild the nested-NER data of notebook 11.5 (``course_lib/data/gum_spans/``) from the GUM corpus.

    python tools/make_span_data.py --source /path/to/gum-entities     # the folder with conll/, LICENSE.txt, splits.md

The source is the coreference layer of GUM (Zeldes 2017; ``amir-zeldes/gum`` @ 72ce5ac, ``coref/gum/conll``):
one document per file, one token per line, every entity mention bracketed with its type and, for named entities,
a Wikipedia link, e.g. ``(organization-13-Daughters_of_the_American_Revolution`` ... ``...)``. Mentions nest.

What this script keeps, deterministically:

* documents of the six genres whose texts may be redistributed (academic, court: CC BY 4.0; news, interview:
  CC BY 2.5; bio, voyage: CC BY-SA 3.0; the annotations are CC BY 4.0) -- the others are skipped;
* **sentences**: the files have no sentence breaks, so a document is cut after a sentence-final token
  (``.``, ``!``, ``?``, or one ending in them, plus any closing quotes or brackets) when the next token starts
  with an upper-case letter, a digit or a quote and no mention is open across the cut; a "sentence" longer
  than ``MAX_WORDS`` words (headlines run into the first sentence) is dropped;
* **name mentions** of three types, mapped to the chapter's labels: person -> PER, place -> LOC,
  organization -> ORG. A mention is a *name* when, after a leading lower-case "the" and a trailing possessive
  "'s" are set aside (and dropped from the span), every word starts with an upper-case letter or a digit or
  is a connecting word ("of", "the", "and", "de", ...), the first word is not a pronoun, and either the
  mention is linked to Wikipedia or it does not start the sentence (so "Store" opening a sentence is not a
  name unless GUM linked it);
* nesting is kept: "Durham University" (ORG) contains "Durham" (LOC). Two kept mentions with exactly the same
  words keep the first one (GUM's outer bracket); the count of such duplicates goes to the card.

Splits: GUM's official ``train`` documents -> ``train.jsonl``; ``dev`` and ``test`` documents -> ``test.jsonl``
(held out). Each line: ``{"doc", "genre", "words", "entities": [[first_word, last_word, type], ...]}`` (word
indices, last inclusive, sorted). ``stats.json`` holds every count; DATA_CARD.md is written from it.
``tests/test_spans_data.py`` recounts the shipped files.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "course_lib" / "data" / "gum_spans"
DEFAULT_SOURCE = Path("/work/shared/data/gum-entities")

GENRES = {  # genre -> licence of its texts (GUM's LICENSE.txt)
    "academic": "CC BY 4.0", "court": "CC BY 4.0", "news": "CC BY 2.5", "interview": "CC BY 2.5",
    "bio": "CC BY-SA 3.0", "voyage": "CC BY-SA 3.0",
}
TYPES = {"person": "PER", "place": "LOC", "organization": "ORG"}
MAX_WORDS = 60
FINAL = re.compile(r"^(\.|!|\?|\.\.\.|.*[.!?])$")
CLOSERS = {'"', "'", ")", "]", "”", "’", "''"}
CONNECT = {"of", "the", "and", "de", "du", "des", "la", "le", "von", "van", "der", "for", "on", "in", "at", "-",
           "&", ".", ",", "y", "da", "del", "di", "to", "a", "an", "upon", "'s"}
PRONOUNS = {"He", "She", "It", "They", "We", "I", "You", "His", "Her", "Its", "Their", "Our", "My", "Your", "Him",
            "Them", "Me", "Us", "This", "That", "These", "Those", "Who", "Whose", "Which", "One"}


def parse_document(path: Path) -> tuple[list[str], list[tuple[int, int, str]]]:
    """The tokens of one GUM conll file and its mentions (first, last, label), brackets matched per label."""
    tokens, mentions, open_ = [], [], defaultdict(list)
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#"):
            continue
        idx, tok, ann = line.split("\t")
        i = int(idx)
        if i != len(tokens):
            raise ValueError(f"{path.name}: token {i} out of order")
        tokens.append(tok)
        p = 0
        while ann != "_" and p < len(ann):
            if ann[p] == "(":
                q = p + 1
                while q < len(ann) and ann[q] not in "()":
                    q += 1
                label = ann[p + 1:q]
                if q < len(ann) and ann[q] == ")":
                    mentions.append((i, i, label))
                    p = q + 1
                else:
                    open_[label].append(i)
                    p = q
            else:
                q = ann.index(")", p)
                label = ann[p:q]
                mentions.append((open_[label].pop(), i, label))
                p = q + 1
    if any(open_.values()):
        raise ValueError(f"{path.name}: unclosed mentions {[k for k, v in open_.items() if v]}")
    return tokens, mentions


def sentence_breaks(tokens: list[str], mentions) -> list[tuple[int, int]]:
    """(first, last) token of each sentence: cut after sentence-final punctuation, never inside a mention."""
    inside = [0] * (len(tokens) + 1)  # inside[k]: mentions open across the gap between token k-1 and k
    for s, e, _ in mentions:
        for k in range(s + 1, e + 1):
            inside[k] += 1
    out, start, i = [], 0, 0
    while i < len(tokens):
        if FINAL.match(tokens[i]) and not tokens[i][0].isalnum():
            end = i
            while end + 1 < len(tokens) and tokens[end + 1] in CLOSERS:
                end += 1
            nxt = tokens[end + 1] if end + 1 < len(tokens) else None
            if nxt is None or ((nxt[0].isupper() or nxt[0].isdigit() or nxt[0] in "\"'“(") and not inside[end + 1]):
                out.append((start, end))
                start, i = end + 1, end + 1
                continue
        i += 1
    if start < len(tokens):
        out.append((start, len(tokens) - 1))
    return out


def name_span(words: list[str], s: int, e: int) -> tuple[int, int] | None:
    """The span of a name mention words[s..e], trimmed of a leading 'the' and a trailing "'s"; None if no name."""
    if words[s] == "the" and s < e:
        s += 1
    if words[e] in ("'s", "'") and e > s:
        e -= 1
    w = words[s:e + 1]
    if not w or w[0] in PRONOUNS or not (w[0][0].isupper() or w[0][0].isdigit()):
        return None
    if not all(x[0].isupper() or x[0].isdigit() or x in CONNECT for x in w):
        return None
    return s, e


def depth_of(entities) -> list[int]:
    """Nesting depth of each (first, last, type): 1 + how many other entities strictly contain it."""
    return [1 + sum(1 for j, (s2, e2, _) in enumerate(entities)
                    if j != i and s2 <= s and e <= e2 and (s2, e2) != (s, e)) for i, (s, e, _) in enumerate(entities)]


def convert(source: Path):
    splits = {}
    for line in (source / "splits.md").read_text().splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
        elif line.strip().startswith("* "):
            splits[line.strip()[2:].strip()] = current
    records = {"train": [], "test": []}
    stats = Counter()
    for path in sorted((source / "conll").glob("*.conll")):
        doc = path.stem
        genre = doc.split("_")[1]
        if genre not in GENRES:
            stats["skipped documents (licence)"] += 1
            continue
        split = {"train": "train", "dev": "test", "test": "test"}[splits[doc]]
        tokens, mentions = parse_document(path)
        for s, e in sentence_breaks(tokens, mentions):
            words = tokens[s:e + 1]
            if len(words) > MAX_WORDS:
                stats["sentences dropped (over MAX_WORDS)"] += 1
                continue
            ents, seen = [], set()
            for ms, me, label in sorted((m for m in mentions if s <= m[0] and m[1] <= e), key=lambda m: (m[0], -m[1])):
                parts = label.split("-", 2)
                if parts[0] not in TYPES:
                    continue
                linked = len(parts) > 2
                span = name_span(words, ms - s, me - s)
                if span is None or (not linked and span[0] == 0):
                    continue
                if span in seen:
                    stats["duplicate spans dropped"] += 1
                    continue
                seen.add(span)
                ents.append([span[0], span[1], TYPES[parts[0]]])
            ents.sort()
            records[split].append({"doc": doc, "genre": genre, "words": words, "entities": ents})
    return records, stats


def crossing(entities) -> int:
    return sum(1 for a in entities for b in entities if a[0] < b[0] <= a[1] < b[1])


def summarize(records, stats) -> dict:
    out = {"source": "GUM (Zeldes 2017), amir-zeldes/gum @ 72ce5ac, coref/gum/conll", "max_words": MAX_WORDS,
           "genres": GENRES, "types": TYPES, "splits": {}, "conversion": dict(sorted(stats.items()))}
    for split, recs in records.items():
        types, depths, by_genre, lengths = Counter(), Counter(), Counter(), Counter()
        nested_sentences = inner = cross = 0
        for r in recs:
            ents = r["entities"]
            d = depth_of(ents)
            for (_, _, t), k in zip(ents, d):
                types[t] += 1
                depths[k] += 1
            for (s, e, _t) in ents:
                lengths[e - s + 1] += 1
            inner += sum(1 for k in d if k > 1)
            nested_sentences += any(k > 1 for k in d)
            cross += crossing(ents)
            by_genre[r["genre"]] += 1
        out["splits"][split] = {
            "documents": len({r["doc"] for r in recs}), "sentences": len(recs),
            "words": sum(len(r["words"]) for r in recs), "entities": sum(types.values()),
            "by_type": dict(sorted(types.items())), "by_depth": {str(k): v for k, v in sorted(depths.items())},
            "entity_length_words": {str(k): v for k, v in sorted(lengths.items())},
            "inner_entities": inner, "sentences_with_nesting": nested_sentences, "crossing_pairs": cross,
            "sentences_by_genre": dict(sorted(by_genre.items())),
        }
    return out


def card(stats: dict) -> str:
    tr, te = stats["splits"]["train"], stats["splits"]["test"]
    types = sorted(set(tr["by_type"]) | set(te["by_type"]))
    depths = sorted(set(tr["by_depth"]) | set(te["by_depth"]), key=int)
    lengths = sorted(set(tr["entity_length_words"]) | set(te["entity_length_words"]), key=int)
    rows = "\n".join(f"| {t} | {tr['by_type'].get(t, 0):,} | {te['by_type'].get(t, 0):,} |" for t in types)
    drows = "\n".join(f"| {d} | {tr['by_depth'].get(d, 0):,} | {te['by_depth'].get(d, 0):,} |" for d in depths)
    lrows = ", ".join(f"{k}: {tr['entity_length_words'].get(k, 0) + te['entity_length_words'].get(k, 0):,}"
                      for k in lengths)
    conv = "\n".join(f"* {k}: {v:,}" for k, v in stats["conversion"].items())
    genres = "\n".join(f"| {g} | {lic} | {tr['sentences_by_genre'].get(g, 0):,} | {te['sentences_by_genre'].get(g, 0):,} |"
                       for g, lic in stats["genres"].items())
    return f"""# Data card: gum_spans (nested named entities for notebook 11.5)

Generated by `tools/make_span_data.py` from `stats.json`; do not edit by hand. `tests/test_spans_data.py`
recounts the shipped files and compares them with this card.

## Source
{stats['source']}: the coreference layer of the GUM corpus, in which every entity mention is bracketed
with its type, nested mentions included. Zeldes, Amir (2017) "The GUM Corpus: Creating Multilayer Resources in
the Classroom". *Language Resources and Evaluation* 51(3), 581-612. Annotators: see `LICENSE` and
https://gucorpling.org/gum/.

## Licence
Annotations: CC BY 4.0. Texts: by genre, as GUM's `LICENSE.txt` (copied here as `LICENSE`) states; only the
genres whose licence allows redistribution were kept (essays, fiction, letters, podcasts, wikiHow, reddit and
the other non-commercial or reddit-owned genres are not in GUM's entity release we copied, or were skipped):

| genre | licence of the texts | train sentences | test sentences |
|---|---|---|---|
{genres}

The files of this folder are an adaptation (sentences cut, mentions filtered, types renamed) and are shared
under the same terms: CC BY-SA 3.0 for the bio and voyage sentences, CC BY 4.0 / 2.5 for the others, with
attribution to GUM and its annotators. The course code around them is MIT.

## What was kept and how it was converted
* Types: GUM `person` -> PER, `place` -> LOC, `organization` -> ORG; other types (event, abstract, time, ...)
  are left out.
* Only **name** mentions: after setting aside a leading lower-case "the" and a trailing possessive "'s" (both
  dropped from the span), every word starts with a capital letter or digit or is a connecting word
  ("of", "the", "and", "de", ...), the first word is not a pronoun, and the mention is linked to Wikipedia or
  does not open the sentence. So "the University of Michigan" gives ORG "University of Michigan"; "he",
  "the college", "a Swiss mathematician" are not names. This filter is a heuristic: a few titles
  ("Chairman of the Australian Centre for ...") pass as PER, as GUM annotates them.
* Sentences: GUM's files have no sentence breaks; a document is cut after `.`, `!` or `?` (and closing quotes
  or brackets) when the next token starts with a capital, digit or quote and no mention is open across the
  cut. Headlines without a full stop stay attached to the next sentence; sentences of more than
  {stats['max_words']} words are dropped.
* Nesting is kept, e.g. LOC "Durham" inside ORG "Durham University". Depth 1 = an entity inside no other;
  depth 2 = inside one; and so on. No two entities cross (overlap without nesting): crossing pairs =
  {tr['crossing_pairs'] + te['crossing_pairs']}.

{conv}

## Splits
GUM's official split: its `train` documents -> `train.jsonl`; its `dev` and `test` documents -> `test.jsonl`
(held out: no document is in both).

| | train | test |
|---|---|---|
| documents | {tr['documents']:,} | {te['documents']:,} |
| sentences | {tr['sentences']:,} | {te['sentences']:,} |
| words | {tr['words']:,} | {te['words']:,} |
| entities | {tr['entities']:,} | {te['entities']:,} |
| sentences with a nested entity | {tr['sentences_with_nesting']:,} | {te['sentences_with_nesting']:,} |
| entities inside another (depth ≥ 2) | {tr['inner_entities']:,} | {te['inner_entities']:,} |

Entities per type:

| type | train | test |
|---|---|---|
{rows}

Entities per nesting depth:

| depth | train | test |
|---|---|---|
{drows}

Entity length in words (both splits): {lrows}.

## Format
One JSON object per line: `{{"doc": "GUM_news_afghan", "genre": "news", "words": [...], "entities":
[[first_word, last_word, "ORG"], ...]}}`, word indices from 0, the last word included, entities sorted by
(first, last). Load with `course_lib.spans.load_gum_spans(split)`.
"""


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    args = ap.parse_args(argv)
    records, stats = convert(args.source)
    OUT.mkdir(parents=True, exist_ok=True)
    for split, recs in records.items():
        with open(OUT / f"{split}.jsonl", "w", encoding="utf-8") as f:
            for r in recs:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    summary = summarize(records, stats)
    (OUT / "stats.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
    shutil.copyfile(args.source / "LICENSE.txt", OUT / "LICENSE")
    (OUT / "DATA_CARD.md").write_text(card(summary))
    print(json.dumps(summary["splits"], indent=1))


if __name__ == "__main__":
    sys.exit(main())
