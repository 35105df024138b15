"""Shared fixtures: the embedded model, the transformers reference, tiny checkpoints made on the fly."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # tests never reach for a network
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import course_lib  # noqa: E402
from course_lib.checkpoints import embedded_model_dir  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"


def _grading_sandbox() -> None:
    """Where this machine offers no sandbox (no bubblewrap, not root), the tests that grade honest notebooks grade
    them with time and memory limits only; the hostile ones skip (tests/test_grading_trust.py)."""
    from course_lib.exercises import isolation

    try:
        isolation.choose(None)
    except isolation.SandboxUnavailable:
        os.environ.setdefault(isolation.ENV, "unsafe")


_grading_sandbox()


# ----------------------------------------------------------------------------- helpers of the exercise tests

def run_answer(name: str, source: str):
    """Define the student's answer (a cell's code) in a fresh namespace and run exercise ``name`` on it."""
    import math
    import textwrap

    import torch.nn.functional as F

    from course_lib.exercises import run_exercise

    namespace = {"math": math, "torch": torch, "F": F}
    exec(textwrap.dedent(source), namespace)
    return run_exercise(name, namespace)


def solution_lines(text: str) -> set[str]:
    """Lines found only inside solution blocks (a line also found outside them may rightly stay)."""
    inside, outside, in_block = set(), set(), False
    for line in text.splitlines():
        if "### BEGIN SOLUTION" in line or "### END SOLUTION" in line:
            in_block = "BEGIN" in line
            continue
        (inside if in_block else outside).add(line.strip())
    return {line for line in inside - outside if line}

# A padded batch with a sentence pair: the inputs every parity test uses.
PARITY_TEXTS = [
    ("The bank raised its interest rates.", None),
    ("Mt. Sanitas is in Sunshine Canyon.", "We hiked there on a sunny Saturday morning with friends."),
    ("So long and thanks for all the fish!", None),
]


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (none on this machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


# ----------------------------------------------------------------------------- several workers (pytest-xdist)

if os.environ.get("PYTEST_XDIST_WORKER"):
    # workers share the cores: torch in each worker, and the kernels and graders it starts, take their share only
    _share = max(1, len(os.sched_getaffinity(0)) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    os.environ.setdefault("OMP_NUM_THREADS", str(_share))
    _threads = os.environ["OMP_NUM_THREADS"].split(",")[0]  # OpenMP also takes a list, one count per level
    torch.set_num_threads(int(_threads) if _threads.strip().isdigit() else _share)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile``, but tests/browser/ is one unit: its files share one JupyterLab and one Chromium (package
    fixtures), which a worker of its own starts once."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class BrowserTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "tests/browser/" if path.startswith("tests/browser/") else path

    return BrowserTogether(config, log)


@pytest.fixture(scope="session", autouse=True)
def _notebook_runs_shared_by_xdist_workers(tmp_path_factory):
    """Under pytest-xdist each worker is a process of its own: the notebooks it executes are kept where the other
    workers of the run find them (the parent of the workers' temporary folders, which pytest cleans up)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        import notebook_runs

        notebook_runs.SHARED = tmp_path_factory.getbasetemp().parent / "notebook-runs"
    yield


@pytest.fixture(scope="session")
def embedded():
    """(model, tokenizer) of the packaged all-MiniLM-L6-v2, on the CPU."""
    return course_lib.load_pretrained(device="cpu")


@pytest.fixture(scope="session")
def embedded_dir() -> Path:
    return embedded_model_dir()


def encode_parity_batch(tokenizer, device="cpu"):
    """Encode PARITY_TEXTS one by one (pairs need the pair path), then pad them into one batch."""
    encs = [tokenizer(a, b) if b else tokenizer(a) for a, b in PARITY_TEXTS]
    T = max(e.input_ids.size(1) for e in encs)
    def pad(t, value):
        return torch.nn.functional.pad(t, (0, T - t.size(1)), value=value)
    return {
        "input_ids": torch.cat([pad(e.input_ids, tokenizer.pad_token_id) for e in encs]).to(device),
        "attention_mask": torch.cat([pad(e.attention_mask, 0) for e in encs]).to(device),
        "token_type_ids": torch.cat([pad(e.token_type_ids, 0) for e in encs]).to(device),
    }


@pytest.fixture(scope="session")
def parity_batch(embedded):
    return encode_parity_batch(embedded[1])


TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
            max_position_embeddings=128)


def make_hf_mlm_checkpoint(path: Path, vocab_dir: Path, *, safe: bool = True, nsp: bool = False, seed: int = 0):
    """Save a tiny randomly initialised transformers BERT with an MLM head (and NSP head) in HF format."""
    import transformers

    torch.manual_seed(seed)
    cfg = transformers.BertConfig(vocab_size=30522, **TINY)
    cls = transformers.BertForPreTraining if nsp else transformers.BertForMaskedLM
    model = cls(cfg).eval()
    with torch.no_grad():  # give the MLM bias non-zero values so a lost bias is noticed
        model.cls.predictions.bias.normal_(0, 0.5)
    model.save_pretrained(path, safe_serialization=safe)
    shutil.copy(vocab_dir / "vocab.txt", path / "vocab.txt")
    return model


@pytest.fixture(scope="session")
def tiny_mlm_dir(tmp_path_factory, embedded_dir):
    path = tmp_path_factory.mktemp("tiny-mlm")
    model = make_hf_mlm_checkpoint(path, embedded_dir)
    return path, model


# ----------------------------------------------------------------------------- the checkout, as the run found it

def checkout_status() -> set[str]:
    """`git status` of the checkout, ignored files included ('' outside a git checkout)."""
    import subprocess

    try:
        res = subprocess.run(["git", "status", "--porcelain", "--ignored", "--untracked-files=all"], cwd=ROOT,
                             capture_output=True, text=True)
    except OSError:  # no git on this machine (a bare GPU image: tools/gpu_suite.py)
        return set()
    return set(res.stdout.splitlines()) if res.returncode == 0 else set()


CHECKOUT_AT_START = checkout_status()


# ----------------------------------------------------------------------------- timings shown after the run
TIMINGS: list[str] = []  # tests append "what: N.N s" lines; printed in the terminal summary


def pytest_terminal_summary(terminalreporter):
    if TIMINGS:
        terminalreporter.section("wall times")
        for line in TIMINGS:
            terminalreporter.write_line(line)
