"""Make course-bert v2: all-MiniLM-L6-v2 trained further by masked language modelling on broad English.

    python tools/build_english_text.py                        # the text (once): $TMPDIR/english-text/
    python tools/train_course_bert.py                         # train (resumable), then write course_lib/data/models/course-bert/
    python tools/train_course_bert.py --steps 20 --eval-every 10 --run /tmp/cb-pilot --out /tmp/cb-pilot/model   # a try
    python tools/train_course_bert.py --device cuda --batch-size 256 --steps 10700 --warmup 300   # the GPU recipe
    python tools/train_course_bert.py --write-only            # the model folder from the run's best checkpoint
    python tools/train_course_bert.py --cards-only            # MODEL_CARD.md and the README table from metrics.json
    python tools/train_course_bert.py --rescore               # metrics.json's evaluation again, then the cards

From a fixed seed:

1. Text: tools/build_english_text.py's train.tsv / heldout.tsv (sources, licences and counts in its
   DATA_CARD.md, copied into the model folder with the licence files).
2. Model: the embedded all-MiniLM-L6-v2 with a fresh MLM head (dense + GELU + LayerNorm, decoder tied to
   the word embeddings). Every weight the MLM loss reaches is trained: embeddings, six layers, head.
3. Training: MLM with 80/10/10, 128-token blocks packed across pieces (RoBERTa style; each source's
   pieces in their order, so a block holds running text), loss only at the selected positions, AdamW
   (β 0.9/0.98, weight decay 0.01), linear warm-up then linear decay to 0 at ``--steps``, clipping 1.0.
4. Every ``--eval-every`` steps: held-out loss / top-1 / top-5 on a tracked sample of every source, and the
   per-layer geometry (anisotropy, z-scored, rogue-dimension share) -- logged, never used to choose.
   The run's state (weights, optimizer, data order, random generator) is saved then, so a stopped run
   continues where it stopped (``--steps`` may be raised for a longer run only before the decay starts to
   matter: the schedule is part of the state's recipe and is checked).
5. The checkpoint shipped is the evaluated one with the lowest tracked held-out loss. It is written as an
   fp16 delta of the packaged base with config, tokenizer, heldout.tsv, metrics.json (held-out numbers per
   source and register against the unigram baseline, the everyday cloze sentences, the copy rate at
   "unchanged" positions, the geometry), losses.json (the curve and its geometry) and MODEL_CARD.md.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "tools"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from course_lib import BertForPreTraining, load_pretrained, mlm_mask, pack_sequences, unigram_distribution  # noqa: E402
from course_lib.checkpoints import delta, embedded_model_dir, read_state_dict  # noqa: E402
from course_lib.paths import data_dir  # noqa: E402

import course_bert_eval as E  # noqa: E402  (the evaluations, shared with the tests)

NAME = "course-bert"
DEFAULT_OUT = data_dir("models", NAME)
DEFAULT_TEXT = Path(tempfile.gettempdir()) / "english-text"
DEFAULT_RUN = Path(tempfile.gettempdir()) / "course-bert-v2-run"
TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
UNIGRAM_FILE = "unigram.safetensors"
STATE_FILE, BEST_FILE, LOG_FILE = "state.pt", "best.pt", "train.log"
TRACK_TOKENS = 2000          # geometry along the run: fewer tokens (time)
README_BEGIN, README_END = "<!-- course-bert-metrics:begin -->", "<!-- course-bert-metrics:end -->"


# ============================================================================= data

def read_tsv(path: Path) -> list[tuple[str, str]]:
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            src, _, text = line.rstrip("\n").partition("\t")
            if text:
                rows.append((src, text))
    return rows


def text_sha(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class Corpus:
    def __init__(self, text_dir: Path, tok, block_size: int, log=print, weights: dict[str, float] | None = None):
        if not (text_dir / "train.tsv").exists():
            raise SystemExit(f"no training text in {text_dir}: run `python tools/build_english_text.py --out {text_dir}`")
        t0 = time.time()
        self.stats = json.loads((text_dir / "stats.json").read_text())
        self.sha = text_sha(text_dir / "train.tsv")
        train = read_tsv(text_dir / "train.tsv")
        ids = []
        texts = [t for _, t in train]
        for i in range(0, len(texts), 20000):  # in chunks: keep the ids, not the Encoding objects
            ids += [e.ids for e in tok.backend.encode_batch(texts[i:i + 20000], add_special_tokens=False)]
        self.train_tokens = sum(map(len, ids))
        self.train_words = sum(len(t.split()) for t in texts)
        # the unigram distribution (the 10% random tokens, the baseline) is the text's, whatever the weights
        self.unigram = unigram_distribution(ids, tok.vocab_size, exclude=tok.special_ids)
        p = self.unigram.double()
        self.unigram_entropy = float(-(p[p > 0] * p[p > 0].log()).sum())
        self.weights = dict(weights or {})
        self.weighted_tokens = self.train_tokens
        if self.weights:
            ids = [ids[i] for i in reweight(train, self.weights)]
            self.weighted_tokens = sum(map(len, ids))
            log("source weights " + ", ".join(f"{k} x{v:g}" for k, v in sorted(self.weights.items())) +
                f": {self.weighted_tokens:,} tokens per pass over the text ({self.train_tokens:,} unweighted)")
        self.blocks = pack_sequences(ids, block_size, tok.sep_token_id, tok.cls_token_id)
        registers = {name: v["register"] for name, v in self.stats["sources"].items()}
        self.heldout = E.heldout_sample(read_tsv(text_dir / "heldout.tsv"), registers, tok, block_size)
        log(f"text: {len(train):,} training pieces, {self.train_words:,} words, {self.train_tokens:,} tokens -> "
            f"{tuple(self.blocks.shape)} blocks; unigram entropy {self.unigram_entropy:.3f} nats; held-out sample "
            f"{len(self.heldout):,} pieces ({time.time() - t0:.0f} s)")


def reweight(rows: list[tuple[str, str]], weights: dict[str, float]) -> list[int]:
    """Each piece of a source with weight w, ``int(w)`` times, plus once more when the fractional part of w
    exceeds the piece's hash position in [0, 1) (a fixed choice, as the holding out is): w 0.3 keeps about
    30% of the pieces, w 2.5 every piece twice and half of them a third time. Sources not named keep w 1.
    Returns the indices of the rows to use, in order: the copies stay in the source's order, so packed blocks
    still hold running text."""
    unknown = set(weights) - {src for src, _ in rows}
    if unknown:
        raise SystemExit(f"--source-weights names sources the text does not have: {sorted(unknown)}")
    out = []
    for i, (src, text) in enumerate(rows):
        w = weights.get(src, 1.0)
        n = int(w) + (int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 16 ** 8 < w - int(w))
        out += [i] * n
    return out


def parse_weights(value: str) -> dict[str, float]:
    """``brown=2,kjv=0.3`` -> {"brown": 2.0, "kjv": 0.3}."""
    out = {}
    for part in filter(None, value.split(",")):
        name, _, w = part.partition("=")
        try:
            out[name.strip()] = float(w)
        except ValueError:
            raise argparse.ArgumentTypeError(f"--source-weights wants name=number pairs, got {part!r}") from None
        if out[name.strip()] < 0:
            raise argparse.ArgumentTypeError(f"a source weight must be >= 0, got {part!r}")
    return out


# ============================================================================= model

def build_model(base_model) -> BertForPreTraining:
    """The embedded encoder + a fresh MLM head (seeded init, bias 0, decoder tied to the word embeddings); every
    weight the MLM loss reaches is trainable (not the pooler, which it does not use)."""
    model = BertForPreTraining(base_model.config, nsp=False, add_pooling_layer=base_model.pooler is not None)
    model.bert.load_state_dict(base_model.state_dict(), strict=True)
    model.tie_weights()
    for p in model.parameters():
        p.requires_grad = False
    for part in (model.bert.embeddings, model.bert.encoder, model.cls.predictions.transform):
        for p in part.parameters():
            p.requires_grad = True
    model.cls.predictions.bias.requires_grad = True
    return model


def trainable_state(model) -> dict[str, torch.Tensor]:
    return {n: p.detach().cpu().clone() for n, p in model.named_parameters() if p.requires_grad}


def save_weights(model, out: Path) -> dict:
    """The fp16 delta of the packaged base: the tensors that changed (embeddings included), as
    course_lib.checkpoints.delta writes them, so that ``load_pretrained`` rebuilds the model."""
    from safetensors.torch import save_file

    base_dir = embedded_model_dir()
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    changed = delta.changed_weights(state, {"bert." + k: v for k, v in read_state_dict(base_dir).items()})
    save_file({k: v.to(torch.float16).contiguous() for k, v in sorted(changed.items())}, str(out / delta.DELTA_FILE))
    record = delta.describe_base(base_dir)
    record["delta"] = {"file": delta.DELTA_FILE, "dtype": "float16", "keys": sorted(changed),
                       "sha256": delta.sha256_file(out / delta.DELTA_FILE)}
    (out / delta.BASE_FILE).write_text(json.dumps(record, indent=2) + "\n")
    return record


# ============================================================================= training (resumable)

def recipe(args, corpus: Corpus) -> dict:
    """What a saved run must share with the command that continues it."""
    out = {"steps": args.steps, "batch_size": args.batch_size, "block_size": args.block_size, "lr": args.lr,
           "warmup": args.warmup, "seed": args.seed, "text_sha256": corpus.sha}
    if args.encoder_lr_scale != 1.0:
        out["encoder_lr_scale"] = args.encoder_lr_scale
    if corpus.weights:
        out["source_weights"] = dict(sorted(corpus.weights.items()))
    return out


def best_record(records: list[dict]) -> dict:
    """The evaluation a run ships: the lowest tracked held-out loss (the earlier step on a tie), never geometry."""
    return min(records, key=lambda r: (r["loss"], r["step"]))


def lr_factor(step: int, warmup: int, total: int) -> float:
    """Linear warm-up to 1 over ``warmup`` steps, then linear decay to 0 at ``total``."""
    if step < warmup:
        return (step + 1) / warmup
    return max(0.0, (total - step) / max(1, total - warmup))


def save_state(run: Path, state: dict) -> None:
    tmp = run / (STATE_FILE + ".part")
    torch.save(state, tmp)
    tmp.replace(run / STATE_FILE)


def train(args, corpus: Corpus, base_model, tok, log) -> dict:
    """Train (or continue the run in ``args.run``) to ``args.steps``; returns the final state dict."""
    dev = torch.device(args.device)
    run = args.run
    run.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(args.seed)
    model = build_model(base_model).to(dev)
    params = [p for p in model.parameters() if p.requires_grad]
    head = {id(p) for p in model.cls.predictions.transform.parameters()} | {id(model.cls.predictions.bias)}
    groups = [{"params": [p for p in params if id(p) not in head], "lr": args.lr * args.encoder_lr_scale},
              {"params": [p for p in params if id(p) in head], "lr": args.lr}]  # the fresh head at the full rate
    opt = torch.optim.AdamW(groups, lr=args.lr, betas=(0.9, 0.98), weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, args.warmup, args.steps))
    g = torch.Generator().manual_seed(args.seed)
    want = recipe(args, corpus)
    if (run / STATE_FILE).exists():
        state = torch.load(run / STATE_FILE, weights_only=False)
        if state["recipe"] != want:
            diff = {k: (state["recipe"].get(k), v) for k, v in want.items() if state["recipe"].get(k) != v}
            raise SystemExit(f"{run / STATE_FILE} was saved by another recipe (saved, asked): {diff}. "
                             f"Use another --run folder, or the same options.")
        with torch.no_grad():
            for n, p in model.named_parameters():
                if n in state["weights"]:
                    p.copy_(state["weights"][n].to(dev))
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        g.set_state(state["generator"])
        log(f"continuing {run} from step {state['step']} ({state['train_seconds'] / 60:.0f} min trained so far)")
    else:
        state = {"recipe": want, "step": 0, "order": torch.randperm(len(corpus.blocks), generator=g), "cursor": 0,
                 "losses": [], "records": [], "best_step": None, "train_seconds": 0.0, "eval_seconds": 0.0,
                 "device": str(dev), "hardware": [], "started": time.strftime("%Y-%m-%d %H:%M:%S")}
        log(f"training {sum(p.numel() for p in params):,} of {model.num_parameters():,} parameters on {dev}")
    hw = f"{platform.processor() or platform.machine()} / {torch.cuda.get_device_name(dev) if dev.type == 'cuda' else 'CPU'}" \
         f", {torch.get_num_threads()} threads"
    if hw not in state["hardware"]:
        state["hardware"].append(hw)
    state["torch"] = torch.__version__
    track_eval = [r[3] for r in E.round_robin([r for r in corpus.heldout if r[2] == "eval"], E.TRACK_PER_SOURCE)]
    geo_score = [r[3] for r in E.round_robin([r for r in corpus.heldout if r[2] == "eval"])]
    geo_fit = [r[3] for r in E.round_robin([r for r in corpus.heldout if r[2] == "fit"])]
    cloze_dev = E.read_cloze("everyday_dev")  # logged along the run (the dev set's job), never used to choose
    if not track_eval or not geo_fit:
        raise SystemExit("the held-out sample is empty: rebuild the text with tools/build_english_text.py")

    def checkpoint(step):
        t = time.time()
        model.eval()
        mlm = E.heldout_mlm(model, tok, track_eval, corpus.unigram)
        geom = E.layer_geometry(model, tok, geo_score, geo_fit, n_tokens=TRACK_TOKENS)
        with torch.no_grad():
            cloze = E.cloze_scores(model, tok, cloze_dev)
        model.train()
        seconds = time.time() - t
        state["eval_seconds"] += seconds
        losses = state["losses"][-args.eval_every:]
        rec = {"step": step, "train_minutes": round(state["train_seconds"] / 60, 2),
               "train_loss": round(sum(losses) / len(losses), 4) if losses else None, "lr": sched.get_last_lr()[-1],
               **{k: mlm[k] for k in ("n_masked", "loss", "unigram_loss", "top1", "top5")},
               **{k: geom[k] for k in ("anisotropy", "zscored", "top3_share")},
               "cloze_dev_top1": cloze["top1"], "cloze_dev_top5": cloze["top5"]}
        state["records"] = [r for r in state["records"] if r["step"] != step] + [rec]
        best = best_record(state["records"])
        if best["step"] == step:
            torch.save({"step": step, "weights": {k: v.half() for k, v in trainable_state(model).items()}},
                       run / BEST_FILE)
            state["best_step"] = step
        state["step"] = step
        state["weights"] = trainable_state(model)
        state["optimizer"] = opt.state_dict()
        state["scheduler"] = sched.state_dict()
        state["generator"] = g.get_state()
        save_state(run, state)
        log(f"[eval] step {step:5d} {state['train_seconds'] / 60:6.1f} min trained  held-out loss {rec['loss']:.3f} "
            f"(unigram {rec['unigram_loss']:.3f})  top-1 {rec['top1']:.3f} top-5 {rec['top5']:.3f} | cloze dev "
            f"{rec['cloze_dev_top1']:.2f}/{rec['cloze_dev_top5']:.2f} | aniso "
            f"{' '.join(f'{v:.2f}' for v in rec['anisotropy'])} | top-3 {' '.join(f'{v:.2f}' for v in rec['top3_share'])}"
            f" | best step {state['best_step']} ({seconds:.0f} s)")

    if state["step"] == 0 and not state["records"]:
        checkpoint(0)
    model.train()
    amp = torch.autocast("cuda", dtype=torch.bfloat16) if dev.type == "cuda" and args.bf16 else None
    t_last = time.time()
    for step in range(state["step"] + 1, args.steps + 1):
        if state["cursor"] + args.batch_size > len(state["order"]):
            state["order"], state["cursor"] = torch.randperm(len(corpus.blocks), generator=g), 0
        batch = corpus.blocks[state["order"][state["cursor"]:state["cursor"] + args.batch_size]]
        state["cursor"] += args.batch_size
        m = mlm_mask(batch, special_ids=tok.special_ids, mask_token_id=tok.mask_token_id, unigram=corpus.unigram,
                     generator=g)
        sel = (m.labels != -100).to(dev)
        ids = m.input_ids.to(dev)
        if amp is not None:
            with amp:
                out = model.bert(ids, None, torch.zeros_like(ids), output_hidden_states=False)  # packed: no padding
                logits = model.cls.predictions(out.last_hidden_state[sel])
        else:
            out = model.bert(ids, None, torch.zeros_like(ids), output_hidden_states=False)  # packed: no padding
            logits = model.cls.predictions(out.last_hidden_state[sel])
        loss = torch.nn.functional.cross_entropy(logits.float(), m.labels.to(dev)[sel])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        state["losses"].append(round(loss.item(), 4))
        now = time.time()
        state["train_seconds"] += now - t_last
        t_last = now
        if step % 10 == 0:
            log(f"step {step:5d}  loss {sum(state['losses'][-10:]) / 10:.3f}  lr {sched.get_last_lr()[-1]:.2e}  "
                f"{state['train_seconds'] / 60:6.1f} min")
        if step % args.eval_every == 0 or step == args.steps or step in args.eval_also:
            checkpoint(step)
            t_last = time.time()
            if args.stop_after is not None and step >= args.stop_after:
                log(f"--stop-after {args.stop_after}: stopping; a command without it continues the run")
                break
            if args.stop_file and args.stop_file.exists():
                log(f"{args.stop_file} exists: stopping after step {step}; run the same command to continue")
                break
    return state


# ============================================================================= writing the model folder

def write_model_dir(args, corpus: Corpus, tok, log) -> dict:
    from safetensors.torch import save_file

    state = torch.load(args.run / STATE_FILE, weights_only=False)
    best = torch.load(args.run / BEST_FILE, weights_only=False)
    base_model, _ = load_pretrained(device="cpu")
    torch.manual_seed(args.seed)
    model = build_model(base_model)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n in best["weights"]:
                p.copy_(best["weights"][n].float())
    model.eval()
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("heldout.txt", "GCIDE_LICENSE.txt", "GPL-2.txt", "alternatives.json"):  # v1's files
        (out / stale).unlink(missing_ok=True)
    base = embedded_model_dir()
    config = json.loads((base / "config.json").read_text())
    config["architectures"] = ["BertForMaskedLM"]
    config["_name_or_path"] = NAME
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    for name in TOKENIZER_FILES:
        if (base / name).exists():
            shutil.copy(base / name, out / name)
    record = save_weights(model, out)
    save_file({"unigram": corpus.unigram.contiguous()}, str(out / UNIGRAM_FILE))
    E.write_heldout(out / E.HELDOUT_FILE, corpus.heldout)
    text_dir = args.text
    shutil.copy(text_dir / "DATA_CARD.md", out / "DATA_CARD.md")
    if (out / "licences").exists():
        shutil.rmtree(out / "licences")
    shutil.copytree(text_dir / "licences", out / "licences")
    log("scoring the shipped checkpoint (held-out text, cloze sentences, fates, geometry)")
    from course_lib import load_pretrained as lp

    shipped, stok = lp(out, device="cpu")
    evaluation = E.evaluate_shipped(shipped, stok, out)
    steps_run = state["step"]
    metrics = {
        "name": NAME, "version": 2, "parameters": shipped.num_parameters(),
        "delta_bytes": (out / delta.DELTA_FILE).stat().st_size, "delta_keys": len(record["delta"]["keys"]),
        "unigram_entropy": corpus.unigram_entropy, "chosen_step": best["step"], "frequent_n": E.FREQUENT,
        "data": {"text_sha256": corpus.sha, "train_words": corpus.train_words, "train_tokens": corpus.train_tokens,
                 "train_blocks": int(corpus.blocks.size(0)), "sources": corpus.stats["sources"],
                 "heldout_rule": corpus.stats["holdout_rule"], "heldout_shipped": len(corpus.heldout),
                 "tokens_seen_to_chosen": best["step"] * args.batch_size * args.block_size},
        "training": {"steps_run": steps_run, "chosen_step": best["step"], "batch_size": args.batch_size,
                     "block_size": args.block_size, "lr": args.lr, "warmup": args.warmup, "schedule": "linear decay",
                     "encoder_lr_scale": args.encoder_lr_scale, "source_weights": corpus.weights, "weighted_tokens": corpus.weighted_tokens,
                     "seed": args.seed, "device": state["device"], "hardware": state["hardware"],
                     "train_seconds": state["train_seconds"], "eval_seconds": state["eval_seconds"],
                     "eval_every": args.eval_every, "torch": torch.__version__,
                     "train_torch": state.get("torch", torch.__version__), "command": command_line(args, steps_run),
                     "started": state["started"]},
        **evaluation,
    }
    curve = {"train_loss": state["losses"], "evaluations": sorted(state["records"], key=lambda r: r["step"]),
             "chosen_step": best["step"], "tracked": f"{E.TRACK_PER_SOURCE} eval pieces per source",
             "geometry_tokens": TRACK_TOKENS}
    (out / "metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")
    (out / "losses.json").write_text(json.dumps(curve) + "\n")
    write_cards(out, metrics, curve)
    return metrics


def write_cards(out: Path, metrics: dict, curve: dict) -> None:
    """MODEL_CARD.md from the metrics and the curve, and the README's table when ``out`` is the shipped folder."""
    import course_bert_card as C

    (out / "MODEL_CARD.md").write_text(C.model_card(metrics, curve, C.read_recipes(out)))
    if out.resolve() == DEFAULT_OUT.resolve():
        C.update_readme(metrics, ROOT / "README.md")


def command_line(args, steps_run: int) -> str:
    """The command that rebuilds the run as it went: ``--stop-after`` records where it stopped."""
    parts = ["python tools/train_course_bert.py"]
    defaults = vars(parser().parse_args([]))
    given = {k: v for k, v in vars(args).items() if k != "stop_after"}
    for k, v in list(given.items()) + [("stop_after", steps_run if steps_run < args.steps else None)]:
        if k in ("out", "run", "text", "write_only", "train_only", "cards_only", "stop_file", "threads") \
                or v == defaults.get(k):
            continue
        if k == "stop_after" and v is None:
            continue
        if isinstance(v, set):
            v = ",".join(map(str, sorted(v)))
        if isinstance(v, dict):
            v = ",".join(f"{name}={w:g}" for name, w in sorted(v.items()))
        parts.append(f"--{k.replace('_', '-')}" + ("" if v is True else f" {v}"))
    return " ".join(parts)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the model folder written at the end")
    ap.add_argument("--text", type=Path, default=DEFAULT_TEXT, help="tools/build_english_text.py's output")
    ap.add_argument("--run", type=Path, default=DEFAULT_RUN, help="the run's state (resumable), log and best checkpoint")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--block-size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--warmup", type=int, default=300)
    ap.add_argument("--encoder-lr-scale", type=float, default=1.0,
                    help="the embeddings' and layers' learning rate as a share of --lr (the fresh head gets --lr)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--source-weights", type=parse_weights, default={},
                    help="name=w,...: each piece of a source used w times (w < 1 keeps a fixed share), e.g. kjv=0.3")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu", help="cpu or cuda (the long run when a GPU is lent)")
    ap.add_argument("--bf16", action="store_true", help="bf16 autocast on cuda (evaluation stays fp32)")
    ap.add_argument("--stop-file", type=Path, default=None,
                    help="stop at the next evaluation once this file exists; the same command continues the run")
    ap.add_argument("--stop-after", type=int, default=None,
                    help="stop after this step (at an evaluation) without changing the schedule of --steps")
    ap.add_argument("--eval-also", type=lambda v: {int(x) for x in v.split(",") if x}, default=set(),
                    help="extra evaluation steps, comma-separated (the fresh head's early transient: 50,100,200)")
    ap.add_argument("--train-only", action="store_true", help="train, but leave the model folder unwritten "
                    "(the GPU machine: tools/course_bert_gpu.py packs the run, --write-only finishes it here)")
    ap.add_argument("--write-only", action="store_true", help="write the model folder from the run's best checkpoint")
    ap.add_argument("--cards-only", action="store_true", help="rewrite MODEL_CARD.md and the README table from metrics.json")
    ap.add_argument("--rescore", action="store_true", help="score the shipped model folder again (held-out, fates, "
                    "cloze, geometry: after a change to tools/course_bert_eval.py), then rewrite its cards")
    return ap


def main(argv=None):
    args = parser().parse_args(argv)
    if args.rescore:
        from course_lib import load_pretrained as lp

        metrics = json.loads((args.out / "metrics.json").read_text())
        shipped, stok = lp(args.out, device="cpu")
        metrics.update(E.evaluate_shipped(shipped, stok, args.out))
        (args.out / "metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")
    if args.cards_only or args.rescore:
        write_cards(args.out, json.loads((args.out / "metrics.json").read_text()),
                    json.loads((args.out / "losses.json").read_text()))
        return
    args.run.mkdir(parents=True, exist_ok=True)

    def log(msg):
        line = f"{time.strftime('%H:%M:%S')} {msg}"
        print(line, flush=True)
        with open(args.run / LOG_FILE, "a") as f:
            f.write(line + "\n")

    torch.set_num_threads(args.threads)
    if args.device == "cpu":
        torch.use_deterministic_algorithms(True, warn_only=True)
    base_model, tok = load_pretrained(device="cpu")
    corpus = Corpus(args.text, tok, args.block_size, log, weights=args.source_weights)
    if not args.write_only:
        train(args, corpus, base_model, tok, log)
    if args.train_only:
        return
    metrics = write_model_dir(args, corpus, tok, log)
    log(json.dumps({k: metrics[k] for k in ("heldout", "cloze", "chosen_step")}, default=str)[:2000])


if __name__ == "__main__":
    main()
