"""Every module of course_lib imports on its own, and no two modules import each other (directly or round a loop)."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "course_lib"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "data" not in p.relative_to(PACKAGE).parts}


def _target(importer: str, is_package: bool, node: ast.ImportFrom | ast.Import, known: dict[str, Path]) -> list[str]:
    """The course_lib modules a top-level import statement loads."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "course_lib"]
    if node.level:
        base = importer.split(".") if is_package else importer.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    if prefix.split(".")[0] != "course_lib":
        return []
    out = []
    for alias in node.names:
        out.append(f"{prefix}.{alias.name}" if f"{prefix}.{alias.name}" in known else prefix)
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules it imports at module level (imports inside functions are deliberate and lazy).

    Importing a submodule always runs its parent packages' __init__ first, so an edge from a module to a
    package that contains it is not a cycle and is left out."""
    known = modules()
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        edges = set()
        for node in tree.body:  # top level only
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for t in _target(name, path.name == "__init__.py", node, known):
                    if t in known and t != name and not name.startswith(t + "."):
                        edges.add(t)
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done
    stack: list[str] = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state and (c := visit(m)):
                return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (c := visit(n)):
            return c
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_between_modules():
    graph = {n: {m for m in e if not m.startswith(n + ".")} for n, e in import_graph().items()}
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_every_module_imports_in_a_fresh_interpreter():
    """Each module is imported with no course_lib module loaded before it, so no import-order accident hides."""
    names = sorted(modules())
    code = (
        "import importlib, sys, traceback\n"
        f"failed = []\n"
        f"for name in {names!r}:\n"
        "    for m in [m for m in sys.modules if m == 'course_lib' or m.startswith('course_lib.')]:\n"
        "        del sys.modules[m]\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except Exception as e:\n"
        "        failed.append(f'{name}: {type(e).__name__}: {e}')\n"
        "print('\\n'.join(failed))\n"
        "sys.exit(1 if failed else 0)\n"
    )
    # each module re-imports the package: compiled into a bytecode cache of the course's cache folder (kept
    # between runs; Python checks each file against its source), not compiled again for every module
    from course_lib.paths import cache_dir

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {
        "PYTHONPYCACHEPREFIX": str(cache_dir("pycache"))}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                         cwd=PACKAGE.parent, env=env)
    assert res.returncode == 0, res.stdout + res.stderr[-2000:]


def test_modules_stay_small():
    """One concept per module: none over ~300 lines unless it is one concept (listed here with the reason)."""
    one_concept = {
        "course_lib.model.bert": "the encoder: config, embeddings, block, pooler, outputs",
        "course_lib.pretraining.masking": "MLM and NSP input construction",
        "course_lib.pretraining.training": "the live run: recipe, loop, evaluation, cache (its corpus is pretraining.corpus)",
        "course_lib.exercises.ch11_1": "the checks of one notebook",
        "course_lib.exercises.ch11_2": "the checks of one notebook",
        "course_lib.exercises.ch11_3": "the checks of one notebook",
        "course_lib.exercises.wire": "the boundary's codec: what encode writes and decode reads, side by side",
        "course_lib.exercises.worker": "the sandbox side: the cells, then serving the grader's calls",
    }
    big = {n: len(p.read_text().splitlines()) for n, p in modules().items()}
    over = {n: k for n, k in big.items() if k > 320 and n not in one_concept and not n.startswith("course_lib.exercises.ch")}
    assert not over, f"modules over 320 lines: {over}"


def test_the_grading_worker_imports_no_plotting_or_science_stack():
    """Every submission is graded in a fresh interpreter that imports course_lib.exercises (the grader too): a
    module-level import of scipy, scikit-learn, matplotlib or UMAP there costs every submission its import time
    (scipy.stats alone took 0.7 s of 3.3). Import them inside the function that needs them."""
    heavy = ("scipy", "sklearn", "matplotlib", "umap", "ipywidgets", "transformers")
    code = ("import sys\nimport course_lib.exercises.worker\n"
            f"print(' '.join(sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r}))))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         cwd=PACKAGE.parent)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split() == [], f"the grading worker imports {res.stdout.strip()}"
