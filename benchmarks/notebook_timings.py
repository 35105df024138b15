"""Restart-and-run-all before class (issue 17, items 6-7): each notebook executed top to bottom in a fresh kernel
with nbclient, its wall time and the kernel's peak memory.

    .venv/bin/python benchmarks/run.py --only notebooks [--notebooks 00 11_1] [--no-warmup]

* wall time: from the first cell to the last, kernel start-up excluded (the kernel is started first); targets
  < 3 min per notebook and < 12 min for all of them together, on 2 cores. By default every notebook is run
  once untimed first, so that what a fresh clone computes on its first run (``course_lib.paths.cache_dir()``:
  UMAP projections, fine-tuning runs, ...) is cached, as after `make lab` and one run by the lecturer; both runs'
  times are printed. ``--no-warmup``: one run, timed, whatever the state of the caches;
* peak memory: the kernel process's peak resident set read in the kernel after its last cell (``VmHWM`` in
  ``/proc/self/status``; ``ru_maxrss`` where there is no /proc, which Linux would inherit from the process that
  started the kernel), and the peak of the kernel's process tree (the kernel and any child it starts)
  sampled every 50 ms with psutil; target <= 1.5 GB per notebook (Binder and a course JupyterHub give each
  student about 2 GB). The widgets a notebook builds are in it; they are not driven here (their interactions
  are in the widgets section).

Notebooks run from notebooks/<stem>.ipynb with notebooks/ as working directory (as in tests/test_notebooks.py);
nothing is written into the checkout (the notebooks write only under cache_dir()).
"""
from __future__ import annotations

import threading
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
EACH_S, ALL_S, RSS_GB = 180.0, 720.0, 1.5
# the kernel's own peak resident set in kB: VmHWM of its memory map on Linux. Not ru_maxrss: Linux carries that across
# fork and exec, so a kernel started by a large process (this benchmark after its browser section: 3.5 GB) would
# report its parent's peak as its own.
MAXRSS = ("import pathlib, resource; s = pathlib.Path('/proc/self/status'); "
          "print(next((int(x.split()[1]) for x in s.read_text().splitlines() if x.startswith('VmHWM:')), 0) "
          "if s.exists() else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")


def notebook_paths(prefixes=None) -> list[Path]:
    paths = sorted(p.with_suffix(".ipynb") for p in NOTEBOOKS.glob("*.py") if not p.name.startswith("_"))
    if prefixes:
        paths = [p for p in paths if any(p.stem.startswith(x) for x in prefixes)]
    return paths


class _TreeSampler(threading.Thread):
    """Peak resident memory (bytes) of a process and its children, sampled."""

    def __init__(self, pid: int, every: float = 0.05):
        super().__init__(daemon=True)
        self.pid, self.every, self.peak = pid, every, 0
        self._halt = threading.Event()

    def run(self):
        import psutil

        try:
            proc = psutil.Process(self.pid)
        except psutil.NoSuchProcess:
            return
        while not self._halt.is_set():
            try:
                rss = proc.memory_info().rss
                for child in proc.children(recursive=True):
                    try:
                        rss += child.memory_info().rss
                    except psutil.NoSuchProcess:
                        pass
            except psutil.NoSuchProcess:
                return
            self.peak = max(self.peak, rss)
            time.sleep(self.every)

    def stop(self) -> int:
        self._halt.set()
        self.join(timeout=2)
        return self.peak


def run_notebook(path: Path, timeout: int = 900) -> dict:
    """Execute one notebook top to bottom in a new kernel: seconds, errors, peak RSS (VmHWM and sampled)."""
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(path.parent)}})
    with client.setup_kernel():
        pid = client.km.provisioner.process.pid
        sampler = _TreeSampler(pid)
        sampler.start()
        import psutil

        kernel = psutil.Process(pid)
        rss, growth = kernel.memory_info().rss, []  # (RSS growth of the kernel during the cell, cell index)
        start = time.perf_counter()
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
            if cell.cell_type == "code":
                now = kernel.memory_info().rss
                growth.append((now - rss, index))
                rss = now
        seconds = time.perf_counter() - start
        probe = nbformat.v4.new_code_cell(MAXRSS)
        nb.cells.append(probe)
        client.execute_cell(probe, len(nb.cells) - 1)
        nb.cells.pop()
        tree_peak = sampler.stop()
    maxrss_kb = int("".join(o.get("text", "") for o in probe.outputs if o.get("name") == "stdout").strip() or 0)
    errors = [f"cell {i}: {o.get('ename')}: {o.get('evalue')}" for i, c in enumerate(nb.cells) if c.cell_type == "code"
              for o in c.get("outputs", []) if o.get("output_type") == "error"]
    top = sorted(growth, reverse=True)[:3]
    return {"seconds": seconds, "maxrss_gb": maxrss_kb * 1024 / 1e9, "tree_peak_gb": tree_peak / 1e9,
            "errors": errors, "largest_growth": [
                {"cell": i, "gb": round(g / 1e9, 3), "first_line": nb.cells[i].source.splitlines()[0][:70]
                 if nb.cells[i].source else ""} for g, i in top if g > 0]}


def notebooks_benchmark(prefixes=None, warmup: bool = True) -> dict:
    paths = notebook_paths(prefixes)
    print(f"\nNotebooks top to bottom (nbclient, a new kernel each; {'warm-up run first' if warmup else 'one run'}); "
          f"targets: < {EACH_S / 60:.0f} min each, < {ALL_S / 60:.0f} min together, peak RSS <= {RSS_GB} GB")
    print(f"  {'notebook':34s} {'first run':>10s} {'timed run':>10s} {'peak RSS':>10s} {'tree peak':>10s}")
    results, total = {}, 0.0
    for path in paths:
        first = run_notebook(path) if warmup else None
        res = run_notebook(path)
        res["first_run_seconds"] = first["seconds"] if first else None
        results[path.stem] = res
        total += res["seconds"]
        ok = res["seconds"] < EACH_S and res["maxrss_gb"] <= RSS_GB and res["tree_peak_gb"] <= RSS_GB
        first_s = f"{first['seconds']:9.1f}s" if first else f"{'-':>10s}"
        print(f"  {path.stem:34s} {first_s} {res['seconds']:9.1f}s {res['maxrss_gb']:8.2f}GB "
              f"{res['tree_peak_gb']:8.2f}GB  {'targets met' if ok else 'ABOVE target'}"
              + (f"  ERRORS: {res['errors'][:2]}" if res["errors"] else ""), flush=True)
        if res["maxrss_gb"] > RSS_GB or res["tree_peak_gb"] > RSS_GB:
            for g in res["largest_growth"]:
                print(f"      cell {g['cell']:3d} grew the kernel by {g['gb']:.2f} GB: {g['first_line']}")
    print(f"  {'all together':34s} {'':10s} {total:9.1f}s  "
          f"{'target < 12 min met' if total < ALL_S else 'ABOVE target 12 min'}"
          + ("" if not prefixes else "  (only the notebooks chosen)"))
    return {"notebooks": results, "total_seconds": total, "targets": {"each_s": EACH_S, "all_s": ALL_S,
                                                                     "rss_gb": RSS_GB}}


# ----------------------------------------------------------------------------- click-to-paint in Chromium
def browser_benchmark(prefixes=None, repeats: int = 5) -> dict:
    """Click-to-paint per widget (tests/browser/paint.py) in a JupyterLab of its own and headless Chromium."""
    import shutil
    import sys
    import tempfile

    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests"))
    from notebook_runs import widget_notebook  # tests/notebook_runs.py
    from tests.browser import jupyterlab as jl
    from tests.browser import paint

    problem = jl.chromium_problem()
    if problem:
        print(f"\nclick-to-paint: skipped ({problem})")
        return {"skipped": problem}
    chosen = [it for it in paint.INTERACTIONS if not prefixes or any(it.notebook.startswith(x) for x in prefixes)]
    root = Path(tempfile.mkdtemp(prefix="bench-lab-"))
    shutil.copytree(NOTEBOOKS, root, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "student"))
    print(f"\nClick-to-paint in Chromium (input event -> output painted; 1 warm-up, then {repeats} timed; "
          f"target < {paint.TARGET_MS:.0f} ms):")
    results: dict = {}
    server = jl.JupyterLab(root)
    server.start()
    try:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            chromium = jl.launch_chromium(pw)
            for stem in dict.fromkeys(it.notebook for it in chosen):
                name = f"{stem}.widgets.ipynb"
                nbformat.write(widget_notebook(NOTEBOOKS / f"{stem}.py"), root / name)
                page = jl.open_notebook(chromium, server, name)
                run = jl.run_all_cells(page, name)
                if run.problems():
                    print(f"  {stem}: the widget cells failed: {run.problems()[:2]}")
                    continue
                for it in (it for it in chosen if it.notebook == stem):
                    try:
                        times = paint.measure(page, name, it, repeats=repeats, warmup=1)
                    except Exception as err:  # noqa: BLE001 - one widget's failure is reported, the others still run
                        results[it.name] = {"notebook": stem, "error": str(err).splitlines()[0]}
                        print(f"  {stem[:6]:6s} {it.name:42s} FAILED: {str(err).splitlines()[0]}", flush=True)
                        continue
                    results[it.name] = {"notebook": stem, **paint.summary(times)}
                    print(paint.report_line(it, times, paint.TARGET_MS), flush=True)
                page.context.close()
            chromium.close()
    finally:
        server.cleanup()
        shutil.rmtree(root, ignore_errors=True)
    return {"target_ms": paint.TARGET_MS, "interactions": results}
