"""Encoder forward throughput: course_lib vs transformers, same weights, same batches, same run;
and the from-scratch tokenizers of notebook 11.1b.

    make bench                  # or: .venv/bin/python benchmarks/run.py [--device cuda] [--quick] [--only ...]

Two comparisons, each printed as tokens/s and as a ratio course_lib / transformers
(goal: >= 1.0, course_lib is not slower than the reference):

* without attention weights: course_lib's fast path (torch SDPA) vs transformers' default (sdpa)
* with attention weights:    course_lib's explicit path (weights + scores) vs transformers eager,
                             output_attentions=True

Timings are paired: each batch runs through both implementations back to back (in
alternating order), so a machine that slows down mid-run slows both alike; the ratio
is the median of the per-repeat ratios.

Fine-tuning (notebook 11.4a, goal >= 1.0): training steps per second of course_lib's loop
(``finetuning.fit``: our BertForSequenceClassification, AdamW, warm-up schedule, clipping, progress
bookkeeping) vs a plain PyTorch loop over transformers' BertForSequenceClassification, on the same
weights, the same batches (16 sentiment sentences padded to 64 tokens), the same optimizer; paired as above.

Tokenization (notebook 11.1b, goals from its issue):

* our BPE learner (words counted, then 2,000 merges with incremental pair counts) vs ``tokenizers``'
  BpeTrainer on the same Lee news text (goal: <= 5 s for ours; the ratio ours / theirs is printed);
* the SubwordExplorer widget, server side: a new text, another merge step, "sample again"
  (goal: each < 100 ms).

Widgets (``benchmarks/widget_latency.py``): every widget of every notebook, found in the notebooks and driven
through its real controls, median and p95 per interaction against 100 ms (a new sentence: 300 ms).

Notebooks (``benchmarks/notebook_timings.py``, ``--only notebooks``): each notebook top to bottom in a new kernel
(nbclient, after one warm-up run), wall time (< 3 min each, < 12 min together) and the kernel's peak RSS (<= 1.5 GB).

Click-to-paint (``--only browser``): for one interaction of each widget, from the input event in headless Chromium
to the output painted in JupyterLab (tests/browser/paint.py), median against 200 ms; skipped without Chromium.

Fill-mask (``--only fillmask``, notebook 11.2's explorer): ``course_lib.fill_mask`` with course-bert on short
everyday sentences, p50/p95 latency against 100 ms, and the ratio to transformers' BertForMaskedLM holding the same
weights (the same tokenizer, top 5), checked to give the same top 5 first.

Contextual states (``benchmarks/contextual_states.py``): ``target_states`` on the sense data with every word a target
vs a transformers reference doing the same (goal: ratio >= 1.0), and vs the former one-forward-per-instance path.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

import course_lib
from course_lib.checkpoints import embedded_model_dir
from course_lib.model.cost import timed

TEXT = ("The bank raised its interest rates, and people who had sat on the bank of the river all summer "
        "watched the boats go by while the plant across the water closed its doors after forty years. ")


def batches(tok, sizes, device):
    """Fixed batches of real text, cut to the given (batch, length) shapes, with some padding."""
    ids = tok(TEXT * 40, truncation=True, max_length=512).input_ids[0]  # warns: long text cut on purpose
    out = []
    for B, T in sizes:
        x = ids[:T].repeat(B, 1).clone()
        x[:, -1] = tok.sep_token_id
        am = torch.ones_like(x)
        am[B // 2:, T - T // 4:] = 0  # pad the last quarter of half the rows
        x[am == 0] = tok.pad_token_id
        out.append(dict(input_ids=x.to(device), attention_mask=am.to(device), token_type_ids=torch.zeros_like(x).to(device)))
    return out



@torch.inference_mode()
def compare(ours_fn, ref_fn, data, repeats, device):
    """Paired timing: every batch is run by both implementations back to back, in alternating order.

    Returns (course_lib tokens/s, transformers tokens/s, ratio); the throughputs are
    medians over repeats, the ratio is the median of the per-repeat paired ratios, which
    cancels slow drifts of the machine that hit both implementations alike.
    """
    tokens = sum(b["attention_mask"].sum().item() for b in data)
    for b in data:  # warm-up
        ours_fn(b), ref_fn(b)
    t_ours, t_ref = [], []
    for r in range(repeats):
        a = z = 0.0
        for i, b in enumerate(data):
            if (r + i) % 2:
                z += timed(lambda: ref_fn(b), device)
                a += timed(lambda: ours_fn(b), device)
            else:
                a += timed(lambda: ours_fn(b), device)
                z += timed(lambda: ref_fn(b), device)
        t_ours.append(a)
        t_ref.append(z)
    ratio = statistics.median(z / a for a, z in zip(t_ours, t_ref))
    return tokens / statistics.median(t_ours), tokens / statistics.median(t_ref), ratio


def tokenization(repeats: int) -> dict:
    """Our BPE learner vs BpeTrainer (paired, alternating order), and the 11.1b widget's interactions."""
    from course_lib.tokenization import corpora, reference
    from course_lib.tokenization.bpe import learn_bpe
    from course_lib.tokenization.compare import course_tokenizers
    from course_lib.widgets import SubwordExplorer

    train, merges = corpora.lee("train"), 2000
    ours_s, theirs_s = [], []
    for r in range(repeats):
        runs = [("ours", lambda: learn_bpe(corpora.word_counts(train), merges)),
                ("theirs", lambda: reference.bpe_trainer(train, merges))]
        for name, fn in (runs if r % 2 == 0 else runs[::-1]):
            t = time.perf_counter()
            fn()
            (ours_s if name == "ours" else theirs_s).append(time.perf_counter() - t)
    ratio = statistics.median(a / b for a, b in zip(ours_s, theirs_s))
    ours, theirs = statistics.median(ours_s), statistics.median(theirs_s)
    print(f"\nBPE learning, {merges:,} merges on the Lee corpus ({len(train):,} sentences), median of {repeats}:")
    print(f"  course_lib learn_bpe {ours:6.2f} s   tokenizers BpeTrainer {theirs:6.2f} s   ratio {ratio:5.1f}x  "
          f"{'goal <= 5 s met' if ours <= 5 else 'ABOVE goal 5 s'}")

    widget = SubwordExplorer(course_tokenizers(merges, 2000))
    texts = ["Mt. Sanitas is in Sunshine Canyon.", "Björk's café in Zürich costs €4.50 ☃, doesn't it?",
             "The Rechtsschutzversicherungsgesellschaften of 1987 were tokenized into 2,000 pieces."]
    timings: dict[str, list[float]] = {"new text": [], "move the merge slider": [], "sample again": []}
    for i in range(20):
        for name, act in [("new text", lambda: setattr(widget.text, "value", texts[i % 3] + " " * (i % 2))),
                          ("move the merge slider", lambda: setattr(widget.merges, "value", (i * 97) % merges)),
                          ("sample again", lambda: widget.sample.click())]:
            t = time.perf_counter()
            act()
            timings[name].append(time.perf_counter() - t)
    widget_ms = {name: 1000 * statistics.median(v) for name, v in timings.items()}
    worst_ms = {name: 1000 * max(v) for name, v in timings.items()}
    print("SubwordExplorer, server side (median / worst of 20):")
    for name in widget_ms:
        print(f"  {name:22s} {widget_ms[name]:6.1f} ms / {worst_ms[name]:6.1f} ms  "
              f"{'goal < 100 ms met' if worst_ms[name] < 100 else 'ABOVE goal 100 ms'}")
    return {"bpe_learning": {"merges": merges, "course_lib_s": ours, "tokenizers_s": theirs, "ratio": ratio},
            "widget_ms_median": widget_ms, "widget_ms_worst": worst_ms}


def finetuning(repeats: int, steps: int, device) -> dict:
    """Training steps/s: course_lib's fit vs a plain loop over transformers, same model, batches, optimizer."""
    import transformers

    from course_lib.finetuning.classify import pretrained_classifier, pretrained_encoder
    from course_lib.finetuning.data import SENTIMENT_LABELS, load_sentiment
    from course_lib.finetuning.runs import TrainConfig
    from course_lib.finetuning.training import fit, linear_schedule, make_optimizer

    B, T = 16, 64
    _, tok = pretrained_encoder("cpu")
    texts = [e.text for e in load_sentiment("train", n=B * steps)]
    enc = tok(texts, max_length=T, truncation=True)
    pad = T - enc.input_ids.size(1)
    ids = torch.nn.functional.pad(enc.input_ids, (0, pad), value=tok.pad_token_id)
    mask = torch.nn.functional.pad(enc.attention_mask, (0, pad))
    labels = torch.arange(len(texts)) % 2
    examples = list(range(len(texts)))

    def collate(idx):
        return {"input_ids": ids[idx], "attention_mask": mask[idx], "token_type_ids": torch.zeros_like(ids[idx]),
                "labels": labels[idx]}

    cfg = TrainConfig(lr=3e-5, epochs=1, batch_size=B)
    ours = pretrained_classifier(SENTIMENT_LABELS, pooling="pooler", device=device)  # = transformers' head
    ref = transformers.BertForSequenceClassification.from_pretrained(embedded_model_dir(), num_labels=2).to(device)
    ref.load_state_dict(ours.state_dict(), strict=True)  # the very same weights

    def run_ours():
        return fit(ours, examples, collate, cfg, device=device, cache=False, progress=False).seconds_per_epoch

    def run_ref():
        ref.train()
        opt = make_optimizer(ref, cfg)  # the same AdamW: groups, weight decay, fused kernel
        sched = linear_schedule(opt, int(cfg.warmup_ratio * steps), steps)
        if device.type == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        for s in range(0, len(examples), B):
            batch = {k: v.to(device) for k, v in collate(examples[s:s + B]).items()}
            loss = ref(**batch).loss
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(ref.parameters(), cfg.max_grad_norm)
            opt.step()
            sched.step()
            float(loss.detach())
        if device.type == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - t

    run_ours(), run_ref()  # warm-up
    t_ours, t_ref = [], []
    for r in range(repeats):
        for name, fn in ([("ours", run_ours), ("ref", run_ref)] if r % 2 == 0 else [("ref", run_ref), ("ours", run_ours)]):
            (t_ours if name == "ours" else t_ref).append(fn())
    ratio = statistics.median(z / a for a, z in zip(t_ours, t_ref))
    ours_sps, ref_sps = steps / statistics.median(t_ours), steps / statistics.median(t_ref)
    print(f"\nfine-tuning, {steps} training steps of batch {B} x {T} tokens (full model, AdamW), median of {repeats}:")
    print(f"  course_lib fit {ours_sps:6.2f} steps/s   plain transformers loop {ref_sps:6.2f} steps/s   "
          f"ratio {ratio:5.2f}  {'goal >= 1.0 met' if ratio >= 1.0 else 'BELOW goal 1.0'}")
    return {"steps": steps, "batch": B, "length": T, "course_lib_steps_per_s": ours_sps,
            "transformers_steps_per_s": ref_sps, "ratio": ratio}


def fillmask(repeats: int) -> dict:
    """course_lib.fill_mask on course-bert vs transformers BertForMaskedLM with the same weights."""
    import transformers

    from course_lib.pretraining import everyday_cloze

    model, tok = course_lib.load_pretrained("course-bert", device="cpu")
    cfg = transformers.BertConfig.from_dict(model.config.to_dict() if hasattr(model.config, "to_dict")
                                            else dict(vars(model.config)))
    ref = transformers.BertForMaskedLM(cfg).eval()
    state = {k: v for k, v in model.state_dict().items() if not k.startswith("bert.pooler.")}
    missing, unexpected = ref.load_state_dict(state, strict=False)
    assert not unexpected and all("position_ids" in k for k in missing), (missing, unexpected)
    texts = [it["text"] for it in everyday_cloze("dev")[:40]]

    def theirs(text):
        enc = tok(text)
        with torch.no_grad():
            logits = ref(input_ids=enc.input_ids, attention_mask=enc.attention_mask,
                         token_type_ids=enc.token_type_ids).logits[0]
        pos = int((enc.input_ids[0] == tok.mask_token_id).nonzero()[0])
        return tok.convert_ids_to_tokens(logits[pos].topk(5).indices.tolist())

    for t in texts[:10]:
        assert course_lib.fill_mask(model, tok, t, top_k=5)[0].tokens == theirs(t), t
    ours_ms, ref_ms, ratios = [], [], []
    for _ in range(repeats):
        for i, t in enumerate(texts):
            pair = [("ours", lambda: course_lib.fill_mask(model, tok, t, top_k=5)), ("ref", lambda: theirs(t))]
            got = {}
            for name, fn in (pair if i % 2 == 0 else pair[::-1]):
                t0 = time.perf_counter()
                fn()
                got[name] = 1000 * (time.perf_counter() - t0)
            ours_ms.append(got["ours"])
            ref_ms.append(got["ref"])
            ratios.append(got["ref"] / got["ours"])
    q = statistics.quantiles(ours_ms, n=20)
    res = {"p50_ms": statistics.median(ours_ms), "p95_ms": q[18], "transformers_p50_ms": statistics.median(ref_ms),
           "ratio_speed_ours_over_transformers": statistics.median(ratios), "n": len(ours_ms)}
    print(f"\nfill-mask with course-bert ({len(texts)} everyday sentences x {repeats}): p50 {res['p50_ms']:.1f} ms, "
          f"p95 {res['p95_ms']:.1f} ms ({'goal < 100 ms met' if res['p95_ms'] < 100 else 'ABOVE the 100 ms goal'}); "
          f"transformers p50 {res['transformers_p50_ms']:.1f} ms; speed ratio ours/theirs "
          f"{res['ratio_speed_ours_over_transformers']:.2f} (goal >= 1.0)")
    return res


def _write_json(args, results: dict) -> None:
    """--json FILE: the results, as the run printed them."""
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


def widgets(args, write: bool = True):
    """The widget benchmark (benchmarks/widget_latency.py): every widget of every notebook through its controls."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from widget_latency import widget_benchmark

    print("\nWidgets of the notebooks, driven through their controls:")
    res = widget_benchmark(repeats=5 if args.quick else 15, new_sentences=3 if args.quick else 8,
                           distinct=5 if args.quick else 13, notebooks=args.notebooks,
                           threads=args.threads)
    if write:
        _write_json(args, {"widgets": res})
    return res if not write else 0


def states(args, write: bool = True):
    """target_states vs transformers, several targets per sentence (benchmarks/contextual_states.py)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from contextual_states import states_benchmark

    if args.threads:
        torch.set_num_threads(args.threads)
    res = states_benchmark(repeats=2 if args.quick else 5, max_sentences=60 if args.quick else 300)
    if write:
        _write_json(args, {"states": res})
    return res if not write else 0


def notebooks(args, write: bool = True):
    """Each notebook top to bottom: wall time and the kernel's peak RSS (benchmarks/notebook_timings.py)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from notebook_timings import notebooks_benchmark

    res = notebooks_benchmark(args.notebooks, warmup=not args.no_warmup)
    if write:
        _write_json(args, {"notebooks": res})
    return res if not write else 0


def browser(args, write: bool = True):
    """Click-to-paint of one interaction per widget in JupyterLab + headless Chromium (tests/browser/paint.py)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from notebook_timings import browser_benchmark

    res = browser_benchmark(args.notebooks, repeats=3 if args.quick else 7)
    if write:
        _write_json(args, {"browser": res})
    return res if not write else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="fewer, smaller batches (a smoke run)")
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument("--only", choices=["encoder", "tokenization", "finetuning", "fillmask", "widgets", "states", "notebooks",
                                       "browser"],
                    help="run one of the benchmarks")
    ap.add_argument("--notebooks", nargs="*",
                    help="widgets, notebooks, browser: only the notebooks whose stem starts with these")
    ap.add_argument("--no-warmup", action="store_true", help="notebooks: one timed run each, no warm-up run first")
    ap.add_argument("--threads", type=int, help="widgets, states: torch threads (default torch's; 1 on a loaded machine)")
    args = ap.parse_args(argv)
    if args.only == "widgets":
        return widgets(args)
    if args.only == "states":
        return states(args)
    if args.only == "notebooks":
        return notebooks(args)
    if args.only == "browser":
        return browser(args)
    if args.only == "finetuning":
        results = {"finetuning": finetuning(2 if args.quick else 5, 4 if args.quick else 12,
                                            course_lib.get_device(args.device))}
        _write_json(args, results)
        return 0
    if args.only == "fillmask":
        results = {"fillmask": fillmask(1 if args.quick else 5)}
        _write_json(args, results)
        return 0
    if args.only == "tokenization":
        results = {"tokenization": tokenization(2 if args.quick else 5)}
        _write_json(args, results)
        return 0
    import warnings

    import transformers

    warnings.filterwarnings("ignore", message="truncated")
    device = course_lib.get_device(args.device)
    model, tok = course_lib.load_pretrained(device=device)
    ref_sdpa = transformers.BertModel.from_pretrained(embedded_model_dir(), attn_implementation="sdpa").to(device).eval()
    ref_eager = transformers.BertModel.from_pretrained(embedded_model_dir(), attn_implementation="eager").to(device).eval()
    sizes = [(4, 64), (8, 128)] if args.quick else [(32, 32), (16, 128), (8, 256), (4, 512)]
    data = batches(tok, sizes, device)
    repeats = 2 if args.quick else args.repeats
    print(f"device: {device}, torch {torch.__version__}, transformers {transformers.__version__}, "
          f"threads {torch.get_num_threads()}; batches (B, T): {sizes}; median of {repeats} repeats")
    rows = {}
    rows["without attention weights"] = compare(lambda b: model(**b, output_hidden_states=False), lambda b: ref_sdpa(**b), data, repeats, device)
    rows["with attention weights"] = compare(lambda b: model(**b, output_attentions=True, output_hidden_states=False),
                                             lambda b: ref_eager(**b, output_attentions=True), data, repeats, device)
    print(f"{'':28s} {'course_lib tok/s':>17s} {'transformers tok/s':>19s} {'ratio':>7s}")
    results = {}
    for name, (a, r, ratio) in rows.items():
        results[name] = {"course_lib_tokens_per_s": a, "transformers_tokens_per_s": r, "ratio": ratio}
        print(f"{name:28s} {a:17.0f} {r:19.0f} {ratio:7.2f}  {'goal >= 1.0 met' if ratio >= 1.0 else 'BELOW goal 1.0'}")
    if args.only != "encoder":
        results["tokenization"] = tokenization(2 if args.quick else 5)
        results["fillmask"] = fillmask(1 if args.quick else 5)
        results["widgets"] = widgets(args, write=False)
        results["states"] = states(args, write=False)
        results["finetuning"] = finetuning(2 if args.quick else 5, 4 if args.quick else 12, device)
        results["browser"] = browser(args, write=False)
        results["notebooks"] = notebooks(args, write=False)
    _write_json(args, {"device": str(device), "sizes": sizes, "results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
