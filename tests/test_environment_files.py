"""The conda environment files agree with pyproject.toml, and Binder builds from binder/.

pyproject.toml's [project].dependencies is the pinned runtime set. environment.yml (local
conda users) and binder/environment.yml (Binder / repo2docker) repeat it in their pip
sections; these tests fail as soon as one of the three drifts from the others, and check
what repo2docker would build from the repository without building it.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
ENV_FILES = ("environment.yml", "binder/environment.yml")
# Files that matter to repo2docker whether or not they are committed yet.
BINDER_FILES = ("environment.yml", "binder/environment.yml", "binder/postBuild")
CPU_INDEX_LINE = "--extra-index-url https://download.pytorch.org/whl/cpu"
CPU_TORCH_LINE = "torch==2.13.0+cpu"

_REQUIREMENT = re.compile(r"^(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[[^\]]*\])?\s*(?P<spec>.*)$")
_EXACT_PIN = re.compile(r"^==\s*(?P<version>[^\s,;]+)$")


def _normalise_name(name: str) -> str:
    """PEP 503: case-insensitive, runs of '-', '_' and '.' are the same."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _normalise_spec(spec: str) -> str:
    """'==2.13.0+cpu' -> '==2.13.0' (the local label only says which wheel build);
    anything that is not a single exact pin is kept as written, so it shows up as different."""
    spec = spec.strip()
    pin = _EXACT_PIN.match(spec)
    if pin is None:
        return spec or "(unpinned)"
    return "==" + pin.group("version").split("+", 1)[0]


def _parse(requirements: list[str], where: str) -> dict[str, str]:
    parsed: dict[str, str] = {}
    for line in requirements:
        match = _REQUIREMENT.match(line.strip())
        assert match, f"{where}: cannot read requirement {line!r}"
        name = _normalise_name(match.group("name"))
        assert name not in parsed, f"{where}: {match.group('name')} is listed twice"
        parsed[name] = _normalise_spec(match.group("spec"))
    return parsed


def _pyproject_runtime_requirements(root: Path = ROOT) -> list[str]:
    with open(root / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["dependencies"]


def _load_env(path: Path) -> dict:
    assert path.is_file(), f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} is missing"
    with open(path) as f:
        env = yaml.safe_load(f)
    assert isinstance(env, dict), f"{path}: expected a mapping at the top level, got {type(env).__name__}"
    return env


def _pip_lines(path: Path) -> list[str]:
    """Every line of the environment file's `pip:` section, options included."""
    sections = [dep["pip"] for dep in _load_env(path).get("dependencies", []) if isinstance(dep, dict) and "pip" in dep]
    assert len(sections) == 1, f"{path}: expected one `pip:` section under dependencies, found {len(sections)}"
    return [str(line).strip() for line in sections[0]]


def _pip_requirements(path: Path) -> list[str]:
    """The requirement lines of the pip section: options such as `--extra-index-url` and `-e .` left out."""
    return [line for line in _pip_lines(path) if not line.startswith("-")]


def _differences(expected: dict[str, str], actual: dict[str, str]) -> list[str]:
    problems = []
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    different = sorted(n for n in set(expected) & set(actual) if expected[n] != actual[n])
    if missing:
        problems.append("missing (in pyproject.toml only): " + ", ".join(f"{n}{expected[n]}" for n in missing))
    if extra:
        problems.append("extra (not in pyproject.toml): " + ", ".join(f"{n}{actual[n]}" for n in extra))
    if different:
        problems.append(
            "different: " + ", ".join(f"{n} {actual[n]} (pyproject.toml: {expected[n]})" for n in different)
        )
    return problems


def test_environment_files_pin_the_same_packages_as_pyproject():
    runtime = _pyproject_runtime_requirements()
    pyproject = _parse(runtime, "pyproject.toml [project].dependencies")
    loose = sorted(f"{name}{spec}" for name, spec in pyproject.items() if not spec.startswith("=="))
    assert not loose, f"pyproject.toml: every runtime dependency must be pinned with ==, these are not: {loose}"

    problems = []
    for env_file in ENV_FILES:
        pinned = _parse(_pip_requirements(ROOT / env_file), env_file)
        problems += [f"{env_file}: {p}" for p in _differences(pyproject, pinned)]
    assert not problems, "the environment files disagree with pyproject.toml:\n  " + "\n  ".join(problems)


def test_binder_and_local_environment_use_cpu_torch():
    for env_file in ENV_FILES:
        lines = _pip_lines(ROOT / env_file)
        assert CPU_TORCH_LINE in lines, f"{env_file}: pip section should pin {CPU_TORCH_LINE}, has {lines}"
        assert CPU_INDEX_LINE in lines, f"{env_file}: pip section should carry {CPU_INDEX_LINE!r}, has {lines}"
        assert lines[0] == CPU_INDEX_LINE, (
            f"{env_file}: {CPU_INDEX_LINE!r} should be the first pip line (pip reads options for the whole file), "
            f"first line is {lines[0]!r}"
        )


def test_local_environment_installs_course_lib_and_binder_leaves_it_to_postbuild():
    for env_file in ENV_FILES:
        env = _load_env(ROOT / env_file)
        assert env.get("channels") == ["conda-forge"], f"{env_file}: channels should be conda-forge only, are {env.get('channels')}"
        assert "python=3.11" in env["dependencies"], f"{env_file}: should pin python=3.11, has {env['dependencies']}"

    local = _pip_lines(ROOT / "environment.yml")
    assert local[-1] == "-e .", f"environment.yml: the pip section should end with `-e .`, ends with {local[-1]!r}"
    # A local path in binder/environment.yml makes repo2docker copy the whole repository
    # before creating the environment, so every commit would rebuild it from scratch.
    binder = _pip_lines(ROOT / "binder/environment.yml")
    local_refs = [line for line in binder if line.startswith(("-e", "--editable", ".", "/", "file:"))]
    assert not local_refs, f"binder/environment.yml: no local installs (binder/postBuild installs course_lib), found {local_refs}"

    post_build = ROOT / "binder/postBuild"
    assert os.access(post_build, os.X_OK), "binder/postBuild should be executable"
    script = post_build.read_text()
    for needed in ("set -euo pipefail", "python -m pip install --no-deps -e .", "python tools/make_notebooks.py"):
        assert needed in script, f"binder/postBuild should run {needed!r}"


def _files_repo2docker_reads(root: Path) -> list[str]:
    """Committed files (plus the Binder files, committed or not) that repo2docker looks at:
    the top level and binder/ or .binder/. Nothing else changes the build plan."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=root, capture_output=True, text=True, check=True, timeout=30
        ).stdout.split("\0")
    except (OSError, subprocess.SubprocessError):  # not a git checkout: take what is on disk
        listed = [p.name for p in root.iterdir() if p.is_file()]
        listed += [str(p.relative_to(root)) for d in ("binder", ".binder") for p in (root / d).rglob("*") if p.is_file()]
    files = {f for f in listed if f} | set(BINDER_FILES)
    return sorted(
        f for f in files
        if (root / f).is_file() and ("/" not in f or f.split("/", 1)[0] in ("binder", ".binder"))
    )


def _repo2docker_plan(root: Path, tmp_path: Path) -> str:
    """The Dockerfile repo2docker would build for `root`, rendered without Docker."""
    repo2docker = Path(sys.executable).parent / "repo2docker"
    assert repo2docker.exists(), f"{repo2docker} not found: install the test extras (pip install -e '.[test]')"
    checkout = tmp_path / "checkout"
    for name in _files_repo2docker_reads(root):
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, checkout / name)
    # Binder's user (uid 1000), not whoever runs the tests: the plan is rendered as on mybinder.org.
    result = subprocess.run(
        [str(repo2docker), "--no-build", "--debug", "--user-id", "1000", "--user-name", "jovyan", str(checkout)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    output = result.stderr + result.stdout  # log lines (stderr) first, then the Dockerfile
    assert result.returncode == 0, f"repo2docker --no-build failed ({result.returncode}):\n{output}"
    return output


def _relevant_part(output: str) -> str:
    """repo2docker's log lines and the repository-specific end of the Dockerfile (the rest is boilerplate)."""
    lines = output.splitlines()
    head = next((i for i, line in enumerate(lines) if line.startswith("FROM ")), len(lines))
    tail = next((i for i, line in enumerate(lines) if "Run pre-assemble scripts" in line), None)
    if tail is None:
        return output
    return "\n".join(lines[:head] + ["[... base image setup ...]"] + lines[tail:])


def test_repo2docker_plan_uses_binder_env_and_postbuild(tmp_path):
    output = _repo2docker_plan(ROOT, tmp_path)
    lines = output.splitlines()
    shown = f"\n--- repo2docker --no-build --debug output ---\n{_relevant_part(output)}"

    def first(pattern: str) -> int | None:
        return next((i for i, line in enumerate(lines) if re.search(pattern, line)), None)

    env_update = first(r"\benv (update|create)\b.*--file \"?binder/environment\.yml\"?")
    assert env_update is not None, "repo2docker should create/update the environment from binder/environment.yml" + shown
    assert first(r"--file \"?environment\.ya?ml\"?") is None, "repo2docker should not install the top-level environment.yml" + shown
    assert first(r"^COPY\b.*\bsrc/environment\.ya?ml\s") is None, "repo2docker should not copy the top-level environment.yml" + shown
    assert "Building conda environment for python=3.11" in output, "repo2docker should build for Python 3.11" + shown
    copy_env = first(r"^COPY\b.*\bsrc/binder/environment\.yml\s")
    assert copy_env is not None, (
        "repo2docker should copy binder/environment.yml on its own, before the repository "
        "(it copies the whole repository first when the file has local pip installs such as `-e .`)" + shown
    )
    copy_repo = first(r"^COPY\b.*\bsrc/ \$\{REPO_DIR\}/$")
    post_build = first(r"^RUN \./binder/postBuild$")
    assert copy_repo is not None and post_build is not None, "repo2docker should copy the repository and run ./binder/postBuild" + shown
    # The environment is installed before the repository is copied in, so Docker's layer
    # cache keeps it across commits that do not touch binder/environment.yml.
    assert copy_env < env_update < copy_repo < post_build, (
        "expected, in order: copy binder/environment.yml, install it, copy the repository, run postBuild" + shown
    )
