"""Write course-bert's ``recipes.json``: the recipes compared before one was shipped, each at its own
lowest-loss evaluation, read from the runs' records (tools/course_bert_card.py renders it in the model card).

    python tools/course_bert_recipes.py OUT.json --text /tmp/english-text \\
        --run "old/losses.json+old/metrics.json|alone|course-bert v2 as first shipped" \\
        --run "cb-B/state-lite.pt|shared with the lr 2e-4 run|stopped at the call's deadline before its decay ended" \\
        --run "cb-A/state-lite.pt|shared for steps 1-9,000, then alone|shipped"

A run is either a state file (train_course_bert.py's state.pt, or course_bert_gpu.py's state-lite.pt: its records
hold the cloze dev scores) or a shipped model's losses.json+metrics.json (cloze from its full evaluation).
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


def read_run(spec: str) -> dict:
    path, gpu, note = spec.split("|")
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
            "top1": b["top1"], "top5": b["top5"], "cloze_dev_top1": c1, "cloze_dev_top5": c5, "gpu": gpu, "note": note}


def word_counts(text_dir: Path) -> dict[str, int]:
    c = collections.Counter()
    with open(text_dir / "train.tsv") as f:
        for line in f:
            c.update(w for w in re.findall(r"[a-z]+", line.split("\t", 1)[1].lower()) if w in EVERYDAY)
    return {w: c[w] for w in EVERYDAY}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--run", action="append", required=True, help="PATH|GPU|NOTE (see above)")
    ap.add_argument("--text", type=Path, default=None, help="the training text, to count a few everyday words")
    args = ap.parse_args(argv)
    record = {"about": "Recipes compared on the same text, batch 256 x 128, warm-up 300 then linear decay, seed 0, "
                       "bf16 on one H200; loss/top-1/top-5 on the tracked held-out pieces at each run's lowest-loss "
                       "evaluation, cloze on the everyday dev set there",
              "runs": [read_run(s) for s in args.run]}
    if args.text:
        record["word_counts"] = word_counts(args.text)
        record["word_counts_how"] = "lower-cased [a-z]+ words of train.tsv"
    args.out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
