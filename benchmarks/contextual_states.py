"""``target_states`` on a corpus with several targets per sentence vs a ``transformers`` reference doing the same.

    .venv/bin/python benchmarks/run.py --only states [--quick]

The corpus: the project's sense-labelled sentences (``course_lib/data/wsd``), every word of each sentence a
target -- as when a tagger or a probe needs the vector of every word, or a sense corpus marks several words
per sentence. Three ways to get the same (N, L+1, d) tensor, timed in the same run, paired and in
alternating order (a machine that slows down mid-run slows all alike; ratios are medians of per-repeat
ratios):

* ``course_lib``: ``target_states`` -- each distinct sentence encoded once, batched by length, targets gathered;
* ``transformers``: the same strategy written with ``BertTokenizerFast`` (offsets) and ``BertModel``
  (``output_hidden_states=True``), on the same weights;
* ``per instance``: what ``target_states`` did before, one sentence per target instance (consecutive
  instances in batches of 32), for the record.

Goal: ratio transformers / course_lib >= 1.0 (course_lib is not slower).
"""
from __future__ import annotations

import re
import statistics
import time

import torch


def corpus(max_sentences: int | None = None) -> tuple[list[str], list[tuple[int, int]]]:
    from course_lib.embeddings import load_sense_data

    sentences = list(dict.fromkeys(e.text for e in load_sense_data().examples))[:max_sentences]
    texts, spans = [], []
    for s in sentences:
        for m in re.finditer(r"[A-Za-z]+", s):
            texts.append(s)
            spans.append(m.span())
    return texts, spans


@torch.no_grad()
def transformers_reference(model, tok, texts, spans, batch_size: int = 32) -> torch.Tensor:
    """Each distinct sentence once, batched by length, mean of the subword vectors that overlap each span."""
    distinct = list(dict.fromkeys(texts))
    row = {t: i for i, t in enumerate(distinct)}
    enc = tok(distinct, return_offsets_mapping=True, padding=True, return_tensors="pt")
    lengths = enc["attention_mask"].sum(1).tolist()
    order = sorted(range(len(distinct)), key=lambda i: lengths[i])
    states: list = [None] * len(distinct)
    for b in range(0, len(order), batch_size):
        rows = order[b:b + batch_size]
        T = max(lengths[i] for i in rows)
        idx = torch.tensor(rows)
        hs = model(input_ids=enc["input_ids"][idx, :T], attention_mask=enc["attention_mask"][idx, :T],
                   token_type_ids=enc["token_type_ids"][idx, :T], output_hidden_states=True).hidden_states
        H = torch.stack(hs, dim=2)  # (B, T, L+1, d)
        for j, i in enumerate(rows):
            states[i] = H[j]
    offsets = enc["offset_mapping"].tolist()
    out = []
    for text, (start, end) in zip(texts, spans):
        r = row[text]
        k = [t for t, (s, e) in enumerate(offsets[r]) if e > s and s < end and e > start]
        out.append(states[r][k].mean(0))
    return torch.stack(out)


@torch.no_grad()
def per_instance(model, tokenizer, texts, spans, batch_size: int = 32) -> torch.Tensor:
    """The former target_states: one sentence per target instance, consecutive instances batched."""
    out = []
    for b in range(0, len(texts), batch_size):
        enc = tokenizer(texts[b:b + batch_size])
        H = torch.stack(model(**enc, output_hidden_states=True).hidden_states, dim=1).float()  # (B, L+1, T, d)
        for i, (start, end) in enumerate(spans[b:b + batch_size]):
            k = [t for t, (s, e) in enumerate(enc.offsets[i]) if e > s and s < end and e > start]
            out.append(H[i][:, k].mean(1))
    return torch.stack(out)


def states_benchmark(repeats: int = 5, max_sentences: int | None = None, log=print) -> dict:
    import transformers

    import course_lib
    from course_lib.checkpoints import embedded_model_dir
    from course_lib.embeddings import target_states

    model, tokenizer = course_lib.load_pretrained(device="cpu")
    ref = transformers.BertModel.from_pretrained(embedded_model_dir()).eval()
    ref_tok = transformers.BertTokenizerFast.from_pretrained(embedded_model_dir())
    texts, spans = corpus(max_sentences)
    n_sent = len(set(texts))
    runs = {
        "course_lib": lambda: target_states(model, tokenizer, texts=texts, spans=spans),
        "transformers": lambda: transformers_reference(ref, ref_tok, texts, spans),
        "per instance": lambda: per_instance(model, tokenizer, texts, spans),
    }
    results = {name: fn() for name, fn in runs.items()}  # warm-up, and the answers compared
    diff = {name: float((results[name] - results["course_lib"]).abs().max()) for name in runs}
    times: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    for r in range(repeats):
        for name in (names if r % 2 == 0 else names[::-1]):
            t = time.perf_counter()
            runs[name]()
            times[name].append(time.perf_counter() - t)
    ratio = statistics.median(z / a for a, z in zip(times["course_lib"], times["transformers"]))
    before = statistics.median(p / a for a, p in zip(times["course_lib"], times["per instance"]))
    med = {name: statistics.median(v) for name, v in times.items()}
    print(f"\ntarget_states: {len(texts):,} targets in {n_sent:,} sentences of the sense data ({len(texts) / n_sent:.1f} "
          f"per sentence), every layer, mean of subwords; torch threads {torch.get_num_threads()}; median of {repeats}:")
    for name in names:
        print(f"  {name:13s} {med[name]:7.2f} s   {len(texts) / med[name]:8.0f} targets/s   max |Δ| vs course_lib "
              f"{diff[name]:.1e}")
    print(f"  ratio transformers / course_lib {ratio:5.2f}  {'goal >= 1.0 met' if ratio >= 1.0 else 'BELOW goal 1.0'};"
          f"  per instance / course_lib {before:5.2f}")
    return {"targets": len(texts), "sentences": n_sent, "seconds": med, "max_abs_diff": diff, "ratio": ratio,
            "speedup_vs_per_instance": before}
