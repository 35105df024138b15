"""Widget latency, server side: every widget of every notebook, driven through its real controls.

    .venv/bin/python benchmarks/run.py --only widgets [--quick] [--notebooks 11_1 11_3]

How the widgets are found (nothing here names a widget class):

* each notebook source ``notebooks/<stem>.py`` is read; its *widget cells* are the code cells that use a
  name imported from ``course_lib.widgets``; those cells and, backwards, every earlier cell defining a
  name they need are run in one IPython shell in this process -- the state a lecturer has after running
  the notebook once (its caches in ``course_lib.paths.cache_dir()`` warm);
* each widget a widget cell builds (the cell's value, or a name it assigns) is walked: every enabled
  control among its descendants is driven -- a selection gets ``.value`` set to its other options in turn,
  a slider or number box moves, a checkbox toggles, a button is ``.click()``-ed, a text box gets text.

What is timed: from setting the value (or clicking) until the callbacks return, i.e. until the new output
is in the widget's traits, ready to be sent to the browser (ipywidgets runs observers synchronously).
Each control first goes once through its values untimed (warm caches, as after a first use), then
``repeats`` times timed. Text boxes are timed twice: with sentences seen before, and each time with a
sentence never seen before ("new sentence", target < 300 ms) -- the first word of the original text
followed by an inserted filler word, and so on; a control for which such an edit shows an error message
(e.g. a tag sequence that must match the words) gets whitespace edits instead.

Two clocks: wall time, and the CPU time of this process (all its threads). On a machine shared with
other work the wall time grows with the load, the CPU time hardly: the verdict is on CPU time, an upper
bound of the idle wall time when the work runs on one thread (torch on two threads makes it larger than
the wall time). The load average is printed with the table.
"""
from __future__ import annotations

import ast
import contextlib
import io
import os
import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
TARGET_MS = 100.0
NEW_SENTENCE_TARGET_MS = 300.0
FILLERS = ["really", "quite", "still", "also", "then", "often", "again", "perhaps", "surely", "simply", "just",
           "indeed", "already", "soon", "rather", "truly", "mostly", "nearly", "maybe", "now"]
OUTPUT_ONLY = ("HTML", "HTMLMath", "Image", "Label", "Output", "Valid", "Box", "VBox", "HBox", "GridBox", "Tab",
               "Accordion", "Stack", "Play")


# ----------------------------------------------------------------------------- the widget cells of a notebook
def _python(source: str) -> str:
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


def _names(source: str) -> tuple[set[str], set[str]]:
    """(names a cell reads, names it defines at top level)."""
    try:
        tree = ast.parse(_python(source))
    except SyntaxError:
        return set(), set()
    loads = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    defined: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            defined |= {(a.asname or a.name).split(".")[0] for a in node.names}
        else:
            for t in ast.walk(node):
                if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store):
                    defined.add(t.id)
    return loads, defined


def widget_cells(cells: list[str]) -> list[int]:
    """Indices of the cells that use a name imported from course_lib.widgets (in any earlier cell)."""
    names: set[str] = set()
    found = []
    for i, src in enumerate(cells):
        try:
            tree = ast.parse(_python(src))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("course_lib.widgets"):
                names |= {a.asname or a.name for a in node.names}
        if _names(src)[0] & names:
            found.append(i)
    return found


def widget_slice(cells: list[str]) -> list[int]:
    """The widget cells and, backwards, every earlier cell that defines a name they (or a taken cell) read."""
    picked = set(widget_cells(cells))
    if not picked:
        return []
    builtins = set(dir(__import__("builtins")))
    needed: set[str] = set()
    for i in picked:
        needed |= _names(cells[i])[0]
    for i in range(max(picked), -1, -1):
        loads, defined = _names(cells[i])
        if i in picked or defined & needed:
            picked.add(i)
            needed |= loads - builtins
    return sorted(picked)


def notebook_code_cells(source: Path) -> list[str]:
    import jupytext

    return [c.source for c in jupytext.read(source).cells if c.cell_type == "code"]


def _is_course_widget(obj) -> bool:
    import ipywidgets as W

    return isinstance(obj, W.Widget) and type(obj).__module__.startswith("course_lib.widgets")


@dataclass
class Built:
    notebook: str
    widgets: list                     # (label, widget)
    seconds: float                    # to run the slice
    errors: list[str] = field(default_factory=list)


def build_notebook_widgets(source: Path, shell) -> Built:
    """Run the widget slice of ``source`` in ``shell``; return the widgets its widget cells build."""
    cells = notebook_code_cells(source)
    keep = widget_slice(cells)
    wcells = set(widget_cells(cells))
    widgets, errors = [], []
    start = time.perf_counter()
    cwd = os.getcwd()
    os.chdir(source.parent)  # as a kernel started on the notebook's folder
    try:
        for i in keep:
            before = {k: id(v) for k, v in shell.user_ns.items()}
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                result = shell.run_cell(cells[i], store_history=False, silent=False)
            if not result.success:
                err = result.error_in_exec or result.error_before_exec
                errors.append(f"cell {i}: {type(err).__name__}: {err}")
                continue
            if i in wcells:
                found = [result.result] if _is_course_widget(result.result) else []
                found += [v for k, v in shell.user_ns.items()  # not _, _3, Out: the shell's own references
                          if not k.startswith("_") and k != "Out" and _is_course_widget(v)
                          and before.get(k) != id(v) and v is not result.result]
                for w in found:
                    widgets.append((type(w).__name__, w))
    finally:
        os.chdir(cwd)
    return Built(source.stem, widgets, time.perf_counter() - start, errors)


def new_shell():
    from IPython.core.interactiveshell import InteractiveShell

    os.environ.setdefault("MPLBACKEND", "Agg")
    shell = InteractiveShell.instance()
    shell.displayhook.shell = shell
    return shell


# ----------------------------------------------------------------------------- the controls of a widget
def controls(widget) -> list[tuple[str, object]]:
    """(name, control) for every control under ``widget``; the name is its attribute on the widget if any."""
    import ipywidgets as W

    names = {id(v): k for k, v in vars(widget).items() if isinstance(v, W.Widget) and not k.startswith("_")}
    out, stack, seen = [], [widget], set()
    while stack:
        w = stack.pop(0)
        if id(w) in seen:
            continue
        seen.add(id(w))
        stack.extend(getattr(w, "children", ()) or ())
        if w is widget or type(w).__name__ in OUTPUT_ONLY:
            continue
        if isinstance(w, W.Button) or isinstance(w, W.ValueWidget):
            name = names.get(id(w)) or (getattr(w, "description", "") or type(w).__name__)
            out.append((name, w))
    return out


def _option_values(control) -> list:
    vals = getattr(control, "_options_values", None)
    if vals is None:
        vals = [o[1] if isinstance(o, tuple) and len(o) == 2 else o for o in control.options]
    return list(vals)


def _spread(n: int, k: int) -> list[int]:
    """k indices spread over range(n) (all of them when n <= k)."""
    if n <= k:
        return list(range(n))
    return sorted({round(i * (n - 1) / (k - 1)) for i in range(k)})


def value_plan(control, distinct: int) -> list | None:
    """The values to visit for a (non-text) control, or None when it is not one we drive this way."""
    import ipywidgets as W

    if isinstance(control, (W.Text, W.Textarea, W.Combobox, W.Password)):
        return None
    if hasattr(control, "options") and hasattr(control, "index"):
        vals = _option_values(control)
        cur = control.value
        order = [vals[i] for i in _spread(len(vals), distinct)]
        plan = [v for v in order if v != cur]
        return plan + [cur] if plan else None
    if isinstance(control, (W.Checkbox, W.ToggleButton)):
        return [not control.value, control.value]
    if isinstance(control, (W.IntSlider, W.FloatSlider, W.BoundedIntText, W.BoundedFloatText, W.FloatLogSlider)):
        lo, hi, step = control.min, control.max, control.step or 1
        n = int(round((hi - lo) / step)) + 1
        vals = [lo + step * i for i in _spread(n, distinct)]
        if isinstance(control, (W.IntSlider, W.BoundedIntText)):
            vals = [int(v) for v in vals]
        else:
            vals = [round(v, 10) for v in vals]
        plan = [v for v in vals if v != control.value]
        return plan + [control.value] if plan else None
    if isinstance(control, (W.IntText, W.FloatText)):
        v = control.value
        return [v + 1, v + 2, v + 3, v]
    return None


def insert_filler(text: str, k: int) -> str:
    """``text`` with a filler word inserted before word k (never inside [...] or at the very start)."""
    words = text.split(" ")
    slots = [i for i in range(1, len(words)) if words[i] and not words[i].startswith("[")] or [len(words)]
    i = slots[k % len(slots)]
    return " ".join(words[:i] + [FILLERS[(k // len(slots)) % len(FILLERS)]] + words[i:])


def _shows_error(widget) -> bool:
    """Whether any HTML output under the widget shows the project's error message (course_lib.views.common)."""
    import ipywidgets as W

    stack = [widget]
    while stack:
        w = stack.pop()
        stack.extend(getattr(w, "children", ()) or ())
        if isinstance(w, W.HTML) and "⚠" in (w.value or ""):
            return True
    return False


# ----------------------------------------------------------------------------- timing
@dataclass
class Timing:
    widget: str
    interaction: str
    wall_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)
    target_ms: float = TARGET_MS
    note: str = ""

    @staticmethod
    def _p95(xs):
        s = sorted(xs)
        return s[min(len(s) - 1, int(round(0.95 * (len(s) - 1))))]

    def summary(self) -> dict:
        return {"n": len(self.wall_ms), "wall_median_ms": statistics.median(self.wall_ms),
                "wall_p95_ms": self._p95(self.wall_ms), "cpu_median_ms": statistics.median(self.cpu_ms),
                "cpu_p95_ms": self._p95(self.cpu_ms), "max_wall_ms": max(self.wall_ms), "target_ms": self.target_ms}


def _wait_threads(before: set, timeout: float = 600) -> None:
    """Wait for threads a callback started (e.g. a training run) so that they do not load the next timing."""
    for t in threading.enumerate():
        if t.ident not in before and t is not threading.current_thread():
            t.join(timeout)


def timed(action) -> tuple[float, float]:
    threads = {t.ident for t in threading.enumerate()}
    c, t = time.process_time(), time.perf_counter()
    action()
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    _wait_threads(threads)
    return 1000 * wall, 1000 * cpu


def drive(label: str, widget, repeats: int, distinct: int, new_sentences: int, log=print) -> list[Timing]:
    """Drive every control of ``widget``; return one Timing per interaction."""
    import ipywidgets as W

    out = []
    for name, control in controls(widget):
        if getattr(control, "disabled", False):
            continue
        n_before = len(out)
        if isinstance(control, W.Button):
            t = Timing(label, f"click '{control.description or name}'")
            control.click()  # warm-up
            for _ in range(repeats):
                t.wall_ms.append(0), t.cpu_ms.append(0)
                t.wall_ms[-1], t.cpu_ms[-1] = timed(control.click)
            out.append(t)
        elif isinstance(control, (W.Text, W.Textarea)):
            out.extend(_drive_text(label, widget, name, control, repeats, new_sentences))
        else:
            plan = value_plan(control, distinct)
            if not plan:
                continue
            initial = control.value
            for v in plan:  # warm-up: every value once
                control.value = v
            t = Timing(label, f"{name} ({type(control).__name__}, {len(plan)} values)")
            for r in range(repeats):
                v = plan[r % len(plan)]
                if v == control.value:  # the plan ends on the initial value; skip a no-op
                    v = plan[(r + 1) % len(plan)]
                t.wall_ms.append(0), t.cpu_ms.append(0)
                t.wall_ms[-1], t.cpu_ms[-1] = timed(lambda: setattr(control, "value", v))
            control.value = initial
            out.append(t)
        for t in out[n_before:]:
            log(f"    {label}: {t.interaction}: median {statistics.median(t.wall_ms):.0f} ms wall, "
                f"{statistics.median(t.cpu_ms):.0f} ms CPU")
    return out


def _drive_text(label, widget, name, control, repeats, new_sentences) -> list[Timing]:
    initial = control.value
    had_error = _shows_error(widget)
    k = 0

    def fresh():
        nonlocal k
        k += 1
        return insert_filler(initial, k)

    control.value = fresh()
    edit = "a filler word inserted"
    if _shows_error(widget) and not had_error:  # such edits are not valid input here: whitespace instead
        edit = "whitespace changed"

        def fresh():  # noqa: F811
            nonlocal k
            k += 1
            return initial + " " * k
    seen = [initial, fresh()]
    for s in seen:  # warm-up
        control.value = s
    seen_t = Timing(label, f"{name}: a sentence seen before")
    for r in range(repeats):
        v = seen[r % 2] if control.value != seen[r % 2] else seen[(r + 1) % 2]
        seen_t.wall_ms.append(0), seen_t.cpu_ms.append(0)
        seen_t.wall_ms[-1], seen_t.cpu_ms[-1] = timed(lambda: setattr(control, "value", v))
    new_t = Timing(label, f"{name}: first use of a new sentence", target_ms=NEW_SENTENCE_TARGET_MS,
                   note=f"new text each time: {edit}")
    for _ in range(new_sentences):
        v = fresh()
        new_t.wall_ms.append(0), new_t.cpu_ms.append(0)
        new_t.wall_ms[-1], new_t.cpu_ms[-1] = timed(lambda: setattr(control, "value", v))
    control.value = initial
    return [seen_t, new_t]


# ----------------------------------------------------------------------------- the benchmark
def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def table(timings: list[Timing]) -> str:
    head = (f"{'widget':22s} {'interaction':52s} {'n':>3s} {'wall med':>9s} {'wall p95':>9s} {'CPU med':>8s} "
            f"{'CPU p95':>8s} {'target':>7s}  verdict (CPU p95)")
    lines = [head, "-" * len(head)]
    for t in timings:
        s = t.summary()
        ok = s["cpu_p95_ms"] < t.target_ms
        lines.append(f"{t.widget:22s} {t.interaction[:52]:52s} {s['n']:3d} {s['wall_median_ms']:9.1f} "
                     f"{s['wall_p95_ms']:9.1f} {s['cpu_median_ms']:8.1f} {s['cpu_p95_ms']:8.1f} "
                     f"{t.target_ms:7.0f}  {'ok' if ok else 'ABOVE'}")
    return "\n".join(lines)


def widget_benchmark(repeats: int = 15, distinct: int = 13, new_sentences: int = 8, notebooks: list[str] | None = None,
                     threads: int | None = None, log=print) -> dict:
    """Build the widgets of the notebooks and drive them; print the table; return the numbers.

    threads: torch's intra-op threads while the widgets are driven (default: torch's own, one per core). On a
    loaded machine two threads wait for each other (and spin, which counts as CPU time): ``threads=1`` then
    gives the load-robust number, the CPU time of the work itself.
    """
    import torch

    if threads:
        torch.set_num_threads(threads)

    sources = sorted(p for p in NOTEBOOKS.glob("*.py") if not p.name.startswith("_"))
    if notebooks:
        sources = [p for p in sources if any(p.stem.startswith(n) for n in notebooks)]
    shell = new_shell()
    timings: list[Timing] = []
    built_all = []
    for src in sources:
        cells = notebook_code_cells(src)
        if not widget_cells(cells):
            continue
        shell.reset(new_session=False)
        log(f"  {src.stem}: running its widget cells and what they need ({len(widget_slice(cells))} cells)…")
        built = build_notebook_widgets(src, shell)
        built_all.append(built)
        for e in built.errors:
            log(f"    ERROR {e}")
        log(f"    built {', '.join(n for n, _ in built.widgets) or 'no widget'} in {built.seconds:.0f} s")
        if threads:  # again: a notebook cell may have changed it
            torch.set_num_threads(threads)
        for name, w in built.widgets:
            timings.extend(drive(f"{name}", w, repeats, distinct, new_sentences, log=log))
    print(f"\nWidget interactions, server side (ms; {repeats} repeats, new sentences {new_sentences}); "
          f"torch threads {torch.get_num_threads()}, load average {load_average()} on {os.cpu_count()} CPUs")
    print(table(timings))
    above = [t for t in timings if t.summary()["cpu_p95_ms"] >= t.target_ms]
    print(f"{len(timings) - len(above)} of {len(timings)} interactions within target (CPU p95)")
    return {"load_average": load_average(), "cpus": os.cpu_count(),
            "notebooks": {b.notebook: {"widgets": [n for n, _ in b.widgets], "seconds": b.seconds, "errors": b.errors}
                          for b in built_all},
            "interactions": [{"widget": t.widget, "interaction": t.interaction, **t.summary()} for t in timings]}


def main(argv=None) -> int:
    import argparse
    import json

    ap = argparse.ArgumentParser(description="widget latency, server side (see the module's docstring)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--notebooks", nargs="*")
    ap.add_argument("--threads", type=int)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    res = widget_benchmark(repeats=5 if args.quick else 15, new_sentences=3 if args.quick else 8,
                           distinct=5 if args.quick else 13, notebooks=args.notebooks, threads=args.threads)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
