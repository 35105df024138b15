"""tools/gpu_suite.py, the suite carried to a GPU machine in parts: the parts join to the bundle byte for byte, a
missing or damaged part is named, each call's part stays under the device's 64 MiB, hide/unhide leave the working
tree alone and give the index back as HEAD has it, and the wheels carried are exactly what the image lacks."""
from __future__ import annotations

import importlib.util
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import gpu_suite  # noqa: E402


def _tar(tmp_path, n_bytes=10_000, mode="w"):
    src = tmp_path / "bundle"
    (src / "repo").mkdir(parents=True)
    (src / "repo" / "blob.bin").write_bytes(random.Random(0).randbytes(n_bytes))   # as weights: barely compresses
    (src / "bundle.json").write_text('{"head": "abc"}')
    tar = tmp_path / "bundle.tar"
    with tarfile.open(tar, mode) as t:
        t.add(src, arcname="bundle")
    return tar


@pytest.mark.parametrize("mode", ["w", "w:gz"])   # stage gzips the bundle; join reads either
def test_the_parts_join_back_to_the_bundle_byte_for_byte(tmp_path, mode):
    tar = _tar(tmp_path, mode=mode)
    parts = gpu_suite.split(tar, tmp_path / "parts", part_bytes=4096)
    assert len(parts) == -(-tar.stat().st_size // 4096) > 2
    assert all(p.stat().st_size <= 4096 for p in parts)
    assert [p.parent.name for p in parts] == [f"p{k}" for k in range(1, len(parts) + 1)]   # a folder per call
    manifest = json.loads((tmp_path / "parts" / "p1" / "manifest.json").read_text())
    assert len(manifest["parts"]) == len(parts)
    bundle = gpu_suite.join(tmp_path / "parts", tmp_path / "there")
    assert (bundle / "repo" / "blob.bin").read_bytes() == (tmp_path / "bundle" / "repo" / "blob.bin").read_bytes()
    assert not (tmp_path / "there" / "bundle.tar").exists()


def test_a_missing_or_damaged_part_is_named(tmp_path):
    tar = _tar(tmp_path)
    parts = gpu_suite.split(tar, tmp_path / "parts", part_bytes=4096)
    second = parts[1]
    data = second.read_bytes()
    second.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    with pytest.raises(SystemExit, match="part 2 .* is damaged"):
        gpu_suite.join(tmp_path / "parts", tmp_path / "there")
    second.unlink()
    with pytest.raises(SystemExit, match=f"part 2 of {len(parts)} is missing"):
        gpu_suite.join(tmp_path / "parts", tmp_path / "there")


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed here")


@needs_git
def test_a_call_carries_one_part_under_the_devices_limit_with_the_tree_beside_it():
    # the tree that travels beside a part while course_lib/data is hidden: the tracked files outside it
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    tree = sum((ROOT / f.decode()).stat().st_size for f in files
               if f and not f.decode().startswith(gpu_suite.HIDDEN + "/") and (ROOT / f.decode()).is_file())
    assert tree + gpu_suite.PART_MB * 2**20 < 62 * 2**20, f"tree {tree / 2**20:.1f} MiB + a part is too close to 64 MiB"


@needs_git
def test_hide_takes_the_data_out_of_the_index_only_and_unhide_gives_head_back(tmp_path):
    repo = tmp_path / "repo"
    data = repo / gpu_suite.HIDDEN
    data.mkdir(parents=True)
    (data / "weights.bin").write_bytes(b"x" * 100)
    (repo / "code.py").write_text("print(1)\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "one"]):
        subprocess.run([*git, *args], cwd=repo, check=True)

    def tracked():
        return set(subprocess.run(["git", "ls-files"], cwd=repo, capture_output=True, text=True).stdout.split())

    def untracked():
        return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=repo,
                              capture_output=True, text=True).stdout

    gpu_suite.set_hidden(True, repo)
    assert tracked() == {"code.py"}
    assert "??" not in untracked()                         # ignored, so it does not travel uncarried either
    assert (data / "weights.bin").read_bytes() == b"x" * 100
    gpu_suite.set_hidden(False, repo)
    assert tracked() == {"code.py", f"{gpu_suite.HIDDEN}/weights.bin"}
    assert untracked() == ""
    assert "gpu_suite" not in (repo / ".git" / "info" / "exclude").read_text()
    (repo / "code.py").write_text("print(2)\n")
    subprocess.run(["git", "add", "code.py"], cwd=repo, check=True)
    with pytest.raises(SystemExit, match="staged changes"):
        gpu_suite.set_hidden(True, repo)


def test_wheels_are_named_by_their_distribution_and_only_what_the_image_lacks_is_wanted():
    from pathlib import Path

    assert gpu_suite.wheel_name(Path("jupyter_client-8.6.3-py3-none-any.whl")) == "jupyter-client"
    assert gpu_suite.wheel_name(Path("PyYAML-6.0.3-cp312-cp312-manylinux_2_17_x86_64.whl")) == "pyyaml"
    wanted = {gpu_suite._norm(w.split("==")[0]) for w in gpu_suite.WANT}
    assert not wanted & gpu_suite.IMAGE
    assert {"torch", "transformers", "numpy", "pytest", "scikit-learn"} <= gpu_suite.IMAGE


def test_the_rehearsal_venv_asks_the_images_versions_once_each_and_no_accelerator_stack():
    reqs = gpu_suite.image_requirements()
    names = [gpu_suite._norm(r.split("==")[0]) for r in reqs]
    assert len(names) == len(set(names))
    assert {"torch==2.11.0", "numpy==2.5.2", "sentencepiece==0.2.2", "tokenizers==0.23.2"} <= set(reqs)
    assert {"pytest-xdist", "pytest-timeout", "scikit-learn", "scipy", "matplotlib", "numba", "attrs"} <= set(names)
    assert not [n for n in names if n.startswith(("nvidia", "jax", "cupy", "triton", "torchvision"))]
    assert set(names) <= gpu_suite.IMAGE   # nothing the image lacks: that comes as the bundle's wheels


def test_the_device_heavy_files_run_first_and_a_second_call_goes_on_from_where_the_first_stopped(tmp_path):
    for name in ("test_tokenizer.py", "test_claims_11_2.py", "test_attention.py", "test_notebooks.py",
                 "test_finetuning_models.py", "conftest.py", "exercise_notebooks.py"):
        (tmp_path / name).write_text("")
    order = gpu_suite.suite_order(tmp_path)
    assert order == ["tests/test_notebooks.py", "tests/test_claims_11_2.py", "tests/test_finetuning_models.py",
                     "tests/test_attention.py", "tests/test_tokenizer.py"]
    assert gpu_suite.files_from("tests/test_attention.py", tmp_path) == order[3:]
    with pytest.raises(SystemExit, match="tests/test_z.py is not a test file"):
        gpu_suite.files_from("tests/test_z.py", tmp_path)


def test_the_order_holds_every_test_file_of_the_suite_once():
    order = gpu_suite.suite_order(ROOT / "tests")
    assert sorted(order) == sorted(f"tests/{f.name}" for f in (ROOT / "tests").glob("test_*.py"))
    assert len(set(order)) == len(order)


def _clean_env() -> dict:
    """This process's environment without what would make the inner pytest think it is an xdist worker or report
    into this run's files (the suite itself runs under xdist and the plugin on the GPU machine)."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST_", "GPU_SUITE_"))}


@pytest.mark.parametrize("workers", [[], ["-n", "2", "--dist", "loadfile"]], ids=["one process", "xdist"])
def test_a_failure_is_reported_the_moment_it_happens_not_only_at_the_end(tmp_path, workers):
    """The device call can be killed at its time limit before pytest prints its failures: the plugin `there`
    loads writes each one to a file as it happens, once (under xdist the controller writes, not the workers)."""
    (tmp_path / "test_x.py").write_text("def test_ok():\n    pass\n\n\ndef test_bad():\n"
                                        "    assert 1 + 1 == 3, 'arithmetic moved'\n")
    report = tmp_path / "failures.txt"
    env = {**_clean_env(), "GPU_SUITE_FAILURES": str(report),
           "PYTHONPATH": str(gpu_suite.report_plugin(tmp_path / "plugin"))}
    if workers and importlib.util.find_spec("xdist") is None:
        pytest.skip("pytest-xdist is not installed here (the GPU image has it)")
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "gpu_suite_report",
                          *workers, str(tmp_path / "test_x.py")], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert res.returncode == 1, res.stdout
    text = report.read_text()
    assert text.count("=== ") == 1 and "test_x.py::test_bad (call)" in text and "arithmetic moved" in text


@pytest.mark.parametrize("workers", [[], ["-n", "2", "--dist", "loadfile"]], ids=["one process", "xdist"])
def test_a_resumed_call_leaves_out_the_tests_the_first_finished(tmp_path, workers):
    """`there --resume`: each test's id is written as it ends, passed or failed; a later call leaves those out."""
    if workers and importlib.util.find_spec("xdist") is None:
        pytest.skip("pytest-xdist is not installed here (the GPU image has it)")
    (tmp_path / "test_x.py").write_text("def test_a():\n    pass\n\n\ndef test_b():\n    pass\n\n\n"
                                        "def test_c():\n    assert False\n")
    done = tmp_path / "done.txt"
    env = {**_clean_env(), "GPU_SUITE_DONE": str(done), "PYTHONPATH": str(gpu_suite.report_plugin(tmp_path / "p"))}
    pytest_ = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "gpu_suite_report", *workers]
    first = subprocess.run([*pytest_, "-k", "test_a or test_c", "test_x.py"], cwd=tmp_path, env=env,
                           capture_output=True, text=True)
    assert first.returncode == 1 and sorted(done.read_text().split()) == ["test_x.py::test_a", "test_x.py::test_c"]
    again = subprocess.run([*pytest_, "test_x.py"], cwd=tmp_path, env={**env, "GPU_SUITE_SKIP": str(done)},
                           capture_output=True, text=True)
    # test_c, which fails, was left out (the call passes), and test_a too (one test passed: test_b); under xdist the
    # workers leave them out and the summary does not count them as deselected
    assert again.returncode == 0 and re.search(r"\b1 passed\b", again.stdout), again.stdout
