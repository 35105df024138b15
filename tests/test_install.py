"""course_lib installed like a real package (``pip install .``, not editable) works from outside the checkout,
and running the notebooks writes nothing into the checkout."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow

USE_IT = textwrap.dedent('''
    import pathlib, sys
    import course_lib
    from course_lib.checkpoints import shipped_models
    from course_lib.embeddings import target_states, load_sense_data
    from course_lib.widgets import MaskSampler

    here = pathlib.Path(course_lib.__file__).resolve()
    assert str(here).startswith(sys.prefix), f"course_lib imported from {here}, not from the fresh venv {sys.prefix}"
    print("installed at", here.parent)
    print("shipped", sorted(shipped_models()))
    model, tok = course_lib.load_pretrained("minilm-wordnet-mlm", device="cpu")
    top = course_lib.fill_mask(model, tok, "The capital of France is [MASK].")[0].tokens[0]
    print("fill_mask", top)
    data = load_sense_data()
    states = target_states(model, tok, data.train[:4])
    print("states", tuple(states.shape))
    enc_model, enc_tok = course_lib.load_pretrained(device="cpu")
    from course_lib.pretraining import unigram_distribution
    unigram = unigram_distribution(["The cat sat on the mat."], tokenizer=enc_tok)
    widget = MaskSampler(enc_tok, unigram, "The cat sat on the mat.")
    print("widget", type(widget).__name__)
''')


def test_non_editable_install_works_outside_the_checkout(tmp_path):
    """A fresh venv gets course_lib by ``pip install --no-deps --target <its site-packages> .`` (a real,
    non-editable install: a wheel built from the checkout, package data included); its dependencies are the
    pinned set of the project's venv, made visible with a .pth line (so the test needs no network and no second
    copy of torch). Run from a folder outside the checkout."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    # the project venv's packages, appended after the fresh venv's own (its editable course_lib hook is a
    # .pth file there, which a path added this way does not run)
    (site / "zz_project_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # the project's pip builds the wheel and installs it into the fresh venv's site-packages; it builds from a
    # copy of what the wheel is made of, since setuptools writes build/ and *.egg-info/ next to its source
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "course_lib", src / "course_lib", ignore=shutil.ignore_patterns("__pycache__"))
    build = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                            "--no-index", "--target", str(site), str(src)], capture_output=True, text=True, cwd=tmp_path)
    assert build.returncode == 0, build.stdout + build.stderr
    installed = site / "course_lib"
    assert (installed / "data" / "models" / "minilm-wordnet-mlm" / "delta.safetensors").exists(), \
        "the shipped model is not in the installed package data"
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["COURSE_LIB_CACHE"] = str(tmp_path / "cache")
    res = subprocess.run([str(py), "-c", USE_IT], capture_output=True, text=True, cwd=outside, env=env, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr[-3000:]
    assert "fill_mask france" in res.stdout and "states (4, 7, 384)" in res.stdout, res.stdout
    assert str(installed) in res.stdout
    assert not any(ROOT in p.parents for p in (tmp_path / "cache").rglob("*"))
