"""Write course-bert's ``recipes.json``: the recipes compared before one was shipped, each at its own
lowest-loss evaluation, read from the runs' records (tools/course_bert_card.py renders it in the model card).

    python tools/course_bert_recipes.py OUT.json --text /tmp/english-text --previous /tmp/cb-v2-old \
        --run "old/losses.json+old/metrics.json|alone|course-bert v2 as first shipped|v2.0" \
        --run "cb-B/state-lite.pt|shared with the lr 2e-4 run|stopped at the call's deadline before its decay ended|v2.0" \
        --run "cb-A/state-lite.pt|alone|shipped|v2.1"

A run is either a state file (train_course_bert.py's state.pt, or course_bert_gpu.py's state-lite.pt: its records
hold the cloze dev scores) or a shipped model's losses.json+metrics.json (cloze from its full evaluation). The last
field names the training text (TEXTS): held-out losses are comparable only between runs on the same text, whose
tracked held-out pieces are the same. ``--previous`` scores the checkpoint shipped before (a model folder) on the
held-out pieces and cloze sentences of the one being shipped (OUT's folder), so the two can be compared there.
"""
from __future__ import annotations

import argparse
import collections
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from train_course_bert import best_record as best  # noqa: E402  (the trainer's own choice of checkpoint)

EVERYDAY = ("kitchen", "oven", "fridge", "pizza", "homework", "passport", "trash")


TEXTS = {
    "v2.0": "9.9 M words from 20 sources",
    "v2.1": "12.7 M words from 23 sources (+ student chats, WordNet and Ding example sentences, those three twice)",
}


def read_run(spec: str) -> dict:
    path, gpu, note, text = spec.split("|")
    if text not in TEXTS:
        raise SystemExit(f"unknown text {text!r}: one of {', '.join(TEXTS)}")
    if "+" in path:
        losses, metrics = (json.loads(Path(p).read_text()) for p in path.split("+"))
        b, t = best(losses["evaluations"]), metrics["training"]
        cloze = metrics["cloze"]["everyday_dev"]
        recipe = {"lr": t["lr"], "encoder_lr_scale": t.get("encoder_lr_scale", 1.0)}
        steps_run = of = t["steps_run"]
        c1, c5 = cloze["top1"], cloze["top5"]
    else:
        import torch

        s = torch.load(path, weights_only=False)
        b = best(s["records"])
        recipe = {"lr": s["recipe"]["lr"], "encoder_lr_scale": s["recipe"].get("encoder_lr_scale", 1.0)}
        steps_run, of = s["step"], s["recipe"]["steps"]
        c1, c5 = b["cloze_dev_top1"], b["cloze_dev_top5"]
    return {"recipe": recipe, "steps_run": steps_run, "of_steps": of, "best_step": b["step"], "loss": b["loss"],
            "top1": b["top1"], "top5": b["top5"], "cloze_dev_top1": c1, "cloze_dev_top5": c5, "gpu": gpu, "note": note,
            "text": text}


def word_counts(text_dir: Path) -> dict[str, int]:
    c = collections.Counter()
    with open(text_dir / "train.tsv") as f:
        for line in f:
            c.update(w for w in re.findall(r"[a-z]+", line.split("\t", 1)[1].lower()) if w in EVERYDAY)
    return {w: c[w] for w in EVERYDAY}


def kept(path: Path | None) -> list[dict]:
    """The runs of an earlier recipes.json; the one it shipped is now the one "shipped before"."""
    if path is None:
        return []
    runs = json.loads(path.read_text())["runs"]
    for r in runs:
        r.setdefault("text", "v2.0")
        if r["note"] == "shipped":
            r["note"] = "shipped before"
    return runs


def score_previous(previous: Path, model_dir: Path) -> dict:
    """The earlier checkpoint (a model folder) on ``model_dir``'s held-out pieces and cloze sets."""
    import course_bert_eval as E

    from course_lib import load_pretrained

    metrics = json.loads((previous / "metrics.json").read_text())
    model, tok = load_pretrained(str(previous), device="cpu")
    ev = E.evaluate_shipped(model, tok, model_dir)
    h = ev["heldout"]
    return {"label": f"step {metrics['chosen_step']:,}, lr {metrics['training']['lr']:g}, "
                     f"{metrics['data']['train_words'] / 1e6:.1f} M words",
            "heldout": {k: h[k] for k in ("n_masked", "loss", "top1", "top5")},
            "cloze": {name: {"top1": c["top1"], "top5": c["top5"], "n": c["n"]} for name, c in ev["cloze"].items()}}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--run", action="append", required=True, help="PATH|GPU|NOTE (see above)")
    ap.add_argument("--text", type=Path, default=None, help="the training text, to count a few everyday words")
    ap.add_argument("--keep", type=Path, default=None,
                    help="a recipes.json whose runs are kept (before these), their text v2.0 unless they name one")
    ap.add_argument("--previous", type=Path, default=None, help="the model folder shipped before, scored on OUT's")
    args = ap.parse_args(argv)
    record = {"about": "Recipes compared, batch 256 x 128, warm-up 300 then linear decay, seed 0, bf16 on one lent "
                       "GPU; loss/top-1/top-5 on the tracked held-out pieces of the run's text at each run's lowest-"
                       "loss evaluation, cloze on the everyday dev set there",
              "texts": TEXTS, "runs": kept(args.keep) + [read_run(s) for s in args.run]}
    if args.previous:
        record["previous"] = score_previous(args.previous, args.out.parent)
    if args.text:
        record["word_counts"] = word_counts(args.text)
        record["word_counts_how"] = "lower-cased [a-z]+ words of train.tsv"
    args.out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
