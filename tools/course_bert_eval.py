"""The evaluations of course-bert v2, shared by tools/train_course_bert.py and tests/test_course_bert.py.

* the held-out sample (``heldout.tsv``: source, register, split, text): per source, up to ``PER_SOURCE_EVAL``
  pieces to score and ``PER_SOURCE_FIT`` others to fit the z-scoring on, in the order of the sha256 of their text;
* masked-token loss / top-1 / top-5 against the unigram baseline, overall, per source and per register, and
  for the 50 most frequent tokens vs all others;
* the everyday cloze sentences (course_lib/data/cloze): is an acceptable word the top-1 / in the top 5?
* the copy rate at "unchanged" positions of the 80/10/10 corruption;
* the per-layer geometry (anisotropy, z-scored, top-3 share).
"""
from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from pathlib import Path

import torch

from course_lib import mlm_mask
from course_lib.checkpoints.registry import round_robin  # noqa: F401  (the trainer's too)
from course_lib.embeddings import corpus_states, layer_geometry as library_geometry
from course_lib.paths import data_dir
from course_lib.pretraining import predictions_by_fate
from course_lib.pretraining.everyday import everyday_cloze, everyday_cloze_scores

HELDOUT_FILE = "heldout.tsv"
PER_SOURCE_EVAL, PER_SOURCE_FIT = 80, 40
TRACK_PER_SOURCE = 20          # during training: the first 20 eval pieces of every source (time)
FREQUENT = 50                  # "frequent tokens" = the 50 most frequent tokens of the training text
GEOMETRY_TOKENS, GEOMETRY_PAIRS, N_ROGUE = 5000, 20000, 3
UNSELECTED_EVERY = 8           # fates: the head asked at every 8th not-selected position (~10,000 of 81,000)
FATES_CHECK_TEXTS = 256        # fates again on the first 256 held-out texts (four batches of the pass above):
                               # what tests/test_course_bert.py recomputes (the whole pass takes ~35 s)
HELDOUT_CHECK_TEXTS = 256      # the held-out numbers of the first 256 texts, taken from the whole pass (their
                               # four batches have the same masks on their own): what the tests recompute
CLOZE_DIR = data_dir("cloze")


def normalise(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


def heldout_sample(rows: list[tuple[str, str]], registers: dict[str, str], tok, block_size: int = 128):
    """[(source, register, split, text)]: per source, the held-out pieces that fit one block, in sha256 order;
    the first PER_SOURCE_EVAL are scored ('eval'), the next PER_SOURCE_FIT fit the z-scoring ('fit')."""
    by_source = defaultdict(list)
    for src, text in rows:
        by_source[src].append(text)
    out = []
    for src in sorted(by_source):
        texts = sorted(by_source[src], key=lambda t: (hashlib.sha256(normalise(t).encode()).hexdigest(), t))
        lengths = [len(e.ids) for e in tok.backend.encode_batch(texts, add_special_tokens=False)]
        fit = [t for t, n in zip(texts, lengths) if n + 2 <= block_size]
        for i, t in enumerate(fit[:PER_SOURCE_EVAL + PER_SOURCE_FIT]):
            out.append((src, registers[src], "eval" if i < PER_SOURCE_EVAL else "fit", t))
    return out


def write_heldout(path: Path, rows) -> None:
    path.write_text("source\tregister\tsplit\ttext\n" + "".join("\t".join(r) + "\n" for r in rows))


def read_heldout(path: Path) -> list[tuple[str, str, str, str]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [tuple(line.split("\t", 3)) for line in lines[1:]]


@torch.no_grad()
def heldout_mlm(model, tok, texts, unigram: torch.Tensor, *, seed: int = 0, batch_size: int = 64,
                per_token: bool = False) -> dict:
    """Masked-token loss (nats), top-1, top-5 on held-out texts, every selected token (15%) replaced by [MASK];
    the unigram baseline's on the same tokens; top-1 split into the FREQUENT most frequent tokens and the rest.
    The masks are those of course_lib.pretraining.masked_token_accuracy with the same seed and batches."""
    g = torch.Generator().manual_seed(seed)
    logp_uni = torch.log(unigram.clamp_min(1e-12))
    base_top5 = unigram.topk(5).indices
    dev = model.device
    golds, nll, nll_uni, hit1, hit5, b1, b5, where = [], [], [], [], [], [], [], []
    for i in range(0, len(texts), batch_size):
        enc = tok(list(texts[i:i + batch_size]))
        m = mlm_mask(enc.input_ids, special_ids=tok.special_ids, mask_token_id=tok.mask_token_id, unigram=unigram,
                     select_prob=0.15, mask_prob=1.0, random_prob=0.0, generator=g, attention_mask=enc.attention_mask)
        sel = m.labels != -100
        if not sel.any():
            continue
        hidden = model.bert.last_hidden_by_length(m.input_ids.to(dev), enc.attention_mask.to(dev),
                                                  enc.token_type_ids.to(dev))
        logits = model.cls.predictions(hidden[sel.to(dev)]).float().cpu()
        gold = m.labels[sel]
        where.append(torch.arange(i, i + sel.size(0))[:, None].expand_as(sel)[sel])  # the text of each token
        top5 = logits.topk(5, dim=-1).indices
        golds.append(gold)
        nll.append(torch.nn.functional.cross_entropy(logits, gold, reduction="none"))
        nll_uni.append(-logp_uni[gold])
        hit1.append(top5[:, 0] == gold)
        hit5.append((top5 == gold[:, None]).any(-1))
        b1.append(gold == base_top5[0])
        b5.append((base_top5[None, :] == gold[:, None]).any(-1))
    if not golds:
        raise ValueError("the texts are too short: no token was selected for masking")
    tokens = {"text": torch.cat(where), "gold": torch.cat(golds), "hit1": torch.cat(hit1), "hit5": torch.cat(hit5),
              "nll": torch.cat(nll).double(), "nll_uni": torch.cat(nll_uni).double(), "b1": torch.cat(b1),
              "b5": torch.cat(b5)}
    res = summarise(tokens, unigram)
    if per_token:
        res["per_token"] = tokens
    return res


def summarise(per_token: dict, unigram: torch.Tensor) -> dict:
    """heldout_mlm's numbers of the masked tokens ``per_token`` (all of a pass, or some: :func:`first_texts`)."""
    frequent = torch.zeros_like(unigram, dtype=torch.bool)
    frequent[unigram.topk(FREQUENT).indices] = True
    t = per_token
    hit1, freq = t["hit1"], frequent[t["gold"]]
    return {"n_masked": len(t["gold"]), "loss": float(t["nll"].mean()), "unigram_loss": float(t["nll_uni"].mean()),
            "top1": float(hit1.float().mean()), "top5": float(t["hit5"].float().mean()),
            "baseline_top1": float(t["b1"].float().mean()), "baseline_top5": float(t["b5"].float().mean()),
            "n_frequent": int(freq.sum()), "top1_frequent": float(hit1[freq].float().mean()) if freq.any() else None,
            "top1_other": float(hit1[~freq].float().mean()) if (~freq).any() else None,
            "distinct_top1": None}


def first_texts(per_token: dict, n_texts: int) -> dict:
    """The masked tokens of a pass's first ``n_texts`` texts: with a multiple of the batch size, what a pass over
    those texts alone gives (the same batches, so the same masks)."""
    keep = per_token["text"] < n_texts
    return {k: v[keep] for k, v in per_token.items()}


@torch.no_grad()
def layer_geometry(model, tok, score_texts, fit_texts, *, n_tokens: int = GEOMETRY_TOKENS,
                   n_pairs: int = GEOMETRY_PAIRS, seed: int = 0) -> dict:
    """Per layer (0 = embedding output, layer l = block l): anisotropy raw (mean cosine of random pairs,
    Ethayarajh 2019), z-scored with mean/std fitted on fit_texts' tokens, and the share of the expected cosine
    carried by the top-3 dimensions (Timkey & van Schijndel 2021)."""
    S = corpus_states(model, tok, score_texts, max_tokens=n_tokens)  # (N, L+1, d)
    F = corpus_states(model, tok, fit_texts, max_tokens=n_tokens)
    g = library_geometry(S, F, n_pairs=n_pairs, seed=seed, n_rogue=N_ROGUE)
    return {"anisotropy": g.anisotropy, "zscored": g.zscored, "top3_share": g.top_share, "rogue_dims": g.rogue,
            "n_tokens_scored": int(S.size(0)), "n_tokens_fitted": int(F.size(0))}


def read_cloze(name: str = "everyday_dev") -> list[dict]:
    return everyday_cloze(name.removeprefix("everyday_"))


def cloze_scores(model, tok, items: list[dict], top_k: int = 5) -> dict:
    """course_lib's everyday_cloze_scores as a dict: n, top1, top5, rows."""
    s = everyday_cloze_scores(model, tok, items, top_k)
    return {"n": s.n, "top1": s.top1, f"top{top_k}": s.topk, "rows": s.rows}


def by_group(per_token: dict, rows, key: int) -> dict:
    """The numbers of one heldout_mlm pass over ``rows``' texts (``per_token=True``), per source (key=0) or per
    register (key=1) of the rows: the same masked tokens as the overall numbers, grouped by where they are from."""
    t = per_token
    token_group = [rows[i][key] for i in t["text"].tolist()]  # the group of each masked token
    out = {}
    for name in sorted(set(token_group)):
        mine = torch.tensor([g == name for g in token_group], dtype=torch.bool)
        out[name] = {"n_masked": int(mine.sum()), "loss": float(t["nll"][mine].mean()),
                     "unigram_loss": float(t["nll_uni"][mine].mean()),
                     **{k: float(t[c][mine].float().mean()) for k, c in
                        (("top1", "hit1"), ("top5", "hit5"), ("baseline_top1", "b1"), ("baseline_top5", "b5"))}}
    return out


def fates_dict(fates: dict) -> dict:
    """metrics.json's form of ``predictions_by_fate``'s result."""
    return {f: {"n": s.n, "top1_original": s.top1_original, "p_original": s.p_original, "top1_shown": s.top1_shown}
            for f, s in fates.items()}


def evaluate_shipped(model, tok, model_dir: Path) -> dict:
    """Every number of the model card, recomputed from the files of the model folder."""
    from safetensors.torch import load_file

    unigram = load_file(str(model_dir / "unigram.safetensors"))["unigram"]
    rows = read_heldout(model_dir / HELDOUT_FILE)
    ev = round_robin([r for r in rows if r[2] == "eval"])
    fit = round_robin([r for r in rows if r[2] == "fit"])
    texts = [r[3] for r in ev]
    overall = heldout_mlm(model, tok, texts, unigram, per_token=True)
    per_token = overall.pop("per_token")
    fates = predictions_by_fate(model, tok, texts, unigram, seed=0, unselected_every=UNSELECTED_EVERY)
    check = predictions_by_fate(model, tok, texts[:FATES_CHECK_TEXTS], unigram, seed=0,
                                unselected_every=UNSELECTED_EVERY)
    cloze = {name: {k: v for k, v in cloze_scores(model, tok, read_cloze(name)).items()}
             for name in ("everyday_dev", "everyday_test") if (CLOZE_DIR / f"{name}.jsonl").exists()}
    geometry = layer_geometry(model, tok, texts, [r[3] for r in fit])
    first = first_texts(per_token, HELDOUT_CHECK_TEXTS)
    return {
        "heldout": {"file": HELDOUT_FILE, "n_texts": len(texts), "seed": 0, **overall,
                    "by_register": by_group(per_token, ev, 1), "by_source": by_group(per_token, ev, 0)},
        "heldout_check": {"n_texts": HELDOUT_CHECK_TEXTS, **summarise(first, unigram),
                          "by_register": by_group(first, ev, 1), "by_source": by_group(first, ev, 0)},
        "fates": fates_dict(fates),
        "fates_unselected_every": UNSELECTED_EVERY,
        "fates_check": {"n_texts": FATES_CHECK_TEXTS, **fates_dict(check)},
        "cloze": cloze,
        "geometry": {"n_pairs": GEOMETRY_PAIRS, "seed": 0, **geometry},
    }
