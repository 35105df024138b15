"""Run each notebook once per test session, and prove its student copy with the same kernel.

A notebook is executed top to bottom exactly once (``executed(source)`` caches the result); tests that check
the numbers its prose states read that executed notebook's outputs instead of running it again.

The student copy differs from the solution only inside the solution blocks. So instead of running it top to
bottom a second time, the same kernel -- after the solution's last cell -- runs the student's version of
every exercise cell, then every later cell that could behave differently because of a stub: each cell that
reads a name a stubbed cell defines (directly, or through a name such a cell assigned), and each
``check(...)`` cell. Those cells must raise nothing, and every check must say "not attempted". A stub that
would break a later cell therefore still fails the test, at a fraction of the cost.
"""
from __future__ import annotations

import ast
import functools
import hashlib
import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import make_student  # noqa: E402

STUDENT_MARK = "# --- the student's copy, from here on run in the same kernel"
CLAIM = re.compile(r"^# claim: ([\w-]+)\s*$", re.M)   # the marker of a cell whose output a claims test reads


def _python(source: str) -> str:
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


_SCOPES = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.FunctionDef,
           ast.AsyncFunctionDef)


def _free_loads(node, bound: frozenset = frozenset()) -> set[str]:
    """The names ``node`` reads from the notebook's namespace: a lambda's or function's parameters and a
    comprehension's loop variables are its own, not reads of a global of the same name (``lambda pooling: ...``
    needs no cell that defines ``pooling``)."""
    if isinstance(node, ast.Name):
        return {node.id} if isinstance(node.ctx, ast.Load) and node.id not in bound else set()
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):  # x += 1 reads x first
        return ({node.target.id} - bound) | _free_loads(node.value, bound)
    if isinstance(node, _SCOPES):
        inner = set(bound)
        if isinstance(node, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            params = [x for x in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if x is not None]
            inner |= {x.arg for x in params}
            outer = [*a.defaults, *(d for d in a.kw_defaults if d is not None)]
            if not isinstance(node, ast.Lambda):  # decorators and annotations are read where the def stands
                outer += node.decorator_list + [x.annotation for x in params if x.annotation]
                outer += [node.returns] if node.returns else []
            body = [node.body] if isinstance(node, ast.Lambda) else node.body
        else:
            inner |= {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
            outer = [node.generators[0].iter]  # the first iterable is read where the comprehension stands
            body = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            body += [node.generators[0].target] + [x for g in node.generators[1:] for x in (g.target, g.iter)]
            body += [c for g in node.generators for c in g.ifs]
        found = set().union(*(_free_loads(x, bound) for x in outer))
        return found.union(*(_free_loads(x, frozenset(inner)) for x in body))
    return set().union(*(_free_loads(child, bound) for child in ast.iter_child_nodes(node)))


def _names(source: str) -> tuple[set[str], set[str], set[str]]:
    """(names the cell reads, names it defines at top level, the part of those that only an import binds),
    ignoring what is only inside check("...")."""
    try:
        tree = ast.parse(_python(source))
    except SyntaxError:
        return set(), set(), set()
    loads = _free_loads(tree)
    defined, imported = set(), set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.With)):
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            if isinstance(node, ast.With):
                targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
            for t in targets:
                if t is not None:
                    defined |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            imported |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return loads, defined | imported, imported - defined


def student_cells_to_rerun(student) -> list[int]:
    """Indices of the student's cells that must run after the solution: the stubbed cells, then every later
    cell reading a name they (or a rerun cell) define, and every check() cell after the first stub."""
    tainted: set[str] = set()
    picked: list[int] = []
    seen_stub = False
    for i, cell in enumerate(student.cells):
        if cell.cell_type != "code":
            continue
        stubbed = make_student.STUB in cell.source or "= ...  # your prediction" in cell.source
        loads, defined, imported = _names(cell.source)
        if stubbed or (seen_stub and (loads & tainted or "check(" in cell.source)):
            picked.append(i)
            # an import binds the same module whatever the student wrote (a stubbed cell's imports stay tainted)
            tainted |= defined if stubbed else defined - imported
            seen_stub = seen_stub or stubbed
    return picked


@dataclass
class NotebookRun:
    source: Path
    notebook: nbformat.NotebookNode       # the solution, executed top to bottom
    student_cells: list                   # the student's cells that were rerun, executed
    seconds: float

    def outputs_text(self, cells=None, html: bool = False) -> str:
        """What the cells printed and displayed, as text; ``html``: HTML outputs too (tables), tags removed."""
        cells = self.notebook.cells if cells is None else cells
        parts = []
        for c in cells:
            stream = None  # the kernel may split one printed line over two stream outputs: join them as printed
            for o in c.get("outputs", []):
                if o.output_type == "stream":
                    if stream == o.name:
                        parts[-1] += o.text
                    else:
                        parts.append(o.text)
                    stream = o.name
                    continue
                stream = None
                if o.output_type in ("execute_result", "display_data"):
                    data = o.get("data", {})
                    parts.append(data.get("text/plain", ""))
                    if html and "text/html" in data:
                        parts.append(re.sub(r"<[^>]+>", " ", data["text/html"]))
        return "\n".join(parts)

    def claim_output(self, name: str) -> str:
        """The output of the one code cell marked ``# claim: <name>``."""
        cells = [c for c in self.notebook.cells if c.cell_type == "code" and name in CLAIM.findall(c.source)]
        assert len(cells) == 1, f"{len(cells)} cells of {self.source.name} are marked '# claim: {name}'"
        return self.outputs_text(cells)

    def prose(self) -> str:
        """Every markdown cell of the notebook, joined."""
        return "\n".join(c.source for c in self.notebook.cells if c.cell_type == "markdown")

    def errors(self, cells=None) -> list:
        cells = self.notebook.cells if cells is None else cells
        return [o for c in cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]


SHARED: Path | None = None  # under pytest-xdist, a folder every worker of the run shares (tests/conftest.py)


@functools.cache
def executed(source: Path) -> NotebookRun:
    """Execute ``source`` (a py:percent notebook) once per test run (once per worker process, and under xdist
    once for all the workers: the first that asks runs it, the others read it back), then its student copy's stub-dependent cells."""
    shared = SHARED
    if shared is None:
        return _execute(source)
    from filelock import FileLock

    from course_lib.paths import written_whole

    shared.mkdir(exist_ok=True)
    key = f"{source.stem}-{hashlib.sha256(source.read_bytes()).hexdigest()[:12]}"
    saved = shared / f"{key}.json"
    with FileLock(str(shared / f"{key}.lock")):
        if saved.exists():
            data = json.loads(saved.read_text())
            return NotebookRun(source, nbformat.from_dict(data["notebook"]),
                               [nbformat.from_dict(c) for c in data["student_cells"]], data["seconds"])
        run = _execute(source)
        with written_whole(saved) as tmp:  # a worker that dies while writing leaves no half file for the others
            tmp.write_text(json.dumps({"notebook": run.notebook, "student_cells": run.student_cells,
                                       "seconds": run.seconds}))
        return run


def _execute(source: Path) -> NotebookRun:
    nb = jupytext.read(source)
    n = len(nb.cells)
    student_idx: list[int] = []
    if make_student.has_solutions(source.read_text()):
        student = make_student.student_notebook(source)
        student_idx = student_cells_to_rerun(student)
        nb.cells.append(nbformat.v4.new_code_cell(STUDENT_MARK))
        nb.cells.extend(nbformat.v4.new_code_cell(student.cells[i].source, metadata=student.cells[i].metadata)
                        for i in student_idx)
    start = time.perf_counter()
    client = NotebookClient(nb, timeout=900, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(source.parent)}})
    client.execute()
    seconds = time.perf_counter() - start
    executed_nb = nbformat.from_dict({**nb, "cells": nb.cells[:n]})
    return NotebookRun(source, executed_nb, nb.cells[n + 1:], seconds)


def executed_ok(source: Path) -> NotebookRun:
    """:func:`executed`, asserting that no cell of the notebook raised."""
    run = executed(Path(source))
    errors = run.errors()
    assert not errors, f"{Path(source).name}: {errors[0].ename}: {errors[0].evalue}"
    return run


def claims_in(source: Path) -> list[str]:
    """The names of the claim cells of a py:percent notebook, in order."""
    return CLAIM.findall(Path(source).read_text())


# what the claims tests read: output(run, "name"), prose(run), and numbers in printed text

def output(run: NotebookRun, name: str) -> str:
    return run.claim_output(name)


def prose(run: NotebookRun) -> str:
    return run.prose()


def number(pattern: str, text: str) -> float:
    """The first group of ``pattern`` in ``text`` as a float (thousands separators removed)."""
    found = re.search(pattern, text)
    assert found, f"{pattern!r} not found in {text!r}"
    return float(found.group(1).replace(",", ""))


def floats(pattern: str, text: str) -> list[float]:
    """Every match of ``pattern`` (one group, or none) in ``text`` as floats."""
    found = re.findall(pattern, text)
    assert found, f"{pattern!r} not found in {text!r}"
    return [float(x) for x in found]


# ----------------------------------------------------------------------------- the widget cells of a notebook

BUILTIN_NAMES = set(dir(__import__("builtins")))


def widget_cells(nb) -> list[int]:
    """Indices of the code cells that build a widget: they use a name imported from course_lib.widgets."""
    widget_names: set[str] = set()
    found = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(_python(cell.source))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("course_lib.widgets"):
                widget_names |= {a.asname or a.name for a in node.names}
        loads, _, _ = _names(cell.source)
        if loads & widget_names:
            found.append(i)
    return found


def widget_slice(nb) -> list[int]:
    """The cells a notebook's widgets need, in order: every widget cell, and backwards from it the nearest
    earlier cell that defines each name a taken cell reads (a name a taken cell binds at its top level is not
    looked for further back, unless that cell also reads it and binds it by more than an import). Markdown,
    exercises, checks and everything the widgets do not need are left out, so a browser can show the widgets
    without running the notebook a second time."""
    picked = set(widget_cells(nb))
    if not picked:
        return []
    needed: set[str] = set()
    for i in range(max(picked), -1, -1):
        cell = nb.cells[i]
        if cell.cell_type != "code":
            continue
        loads, defined, imported = _names(cell.source)
        if i in picked or defined & needed:
            picked.add(i)
            needed = (needed - defined) | (loads - imported - BUILTIN_NAMES)  # what a cell imports, it has
    return sorted(picked)


def widget_notebook(source: Path):
    """A notebook of the widget cells of ``source`` and what they need (see :func:`widget_slice`)."""
    nb = jupytext.read(source)
    keep = widget_slice(nb)
    out = nbformat.v4.new_notebook()
    out.metadata = nb.metadata
    out.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    out.metadata.pop("jupytext", None)
    out.cells = [nbformat.v4.new_code_cell(nb.cells[i].source) for i in keep]
    return out


# ----------------------------------------------------------------------------- figures as JupyterLab shows them
FIGURE_AS_TEXT = re.compile(r"<Figure size [\d.]+x[\d.]+ with \d+ Axes>")
DRAWS = re.compile(r"plt\.(?:subplots|figure)\(|\bdraw_\w+\(|\.plot\(")
IMAGE_TYPES = {"image/png", "image/svg+xml"}
WIDGET_TYPE = "application/vnd.jupyter.widget-view+json"


def figure_problems(notebook) -> list[str]:
    """Code cells whose figure would not show in JupyterLab: a Figure displayed as its text repr (built without
    pyplot, no inline display) with no image beside it, or a cell that draws (plt.subplots, a draw_* view,
    .plot) whose outputs hold no image. Widget cells draw into their own outputs and are left out."""
    problems = []
    for k, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        kinds, texts = set(), []
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            kinds |= set(data)
            texts += [data.get("text/plain", ""), out.get("text", "")]
        image = bool(kinds & IMAGE_TYPES)
        first_line = cell.source.strip().splitlines()[0][:70] if cell.source.strip() else ""
        if not image and any(FIGURE_AS_TEXT.search(t) for t in texts):
            problems.append(f"cell {k} ({first_line}): a Figure shown as text, no image")
        elif not image and WIDGET_TYPE not in kinds and DRAWS.search(cell.source):
            problems.append(f"cell {k} ({first_line}): draws, but its outputs hold no image")
    return problems


DIRECTION = re.compile(r"\b(?:rises?|rising|falls?|falling|grows?|drops?|higher|lower|above|below|increases?|"
                       r"decreases?|peaks?|climbs?|best|worst|beats?|more than|less than|larger|smaller|steeper|"
                       r"flatter|overtakes?|worse|better)\b", re.I)
FIGURE_CELL = re.compile(DRAWS.pattern + r"|\bplot_\w+\(")  # DRAWS, and the plot_* helpers


def _is_heading(cell) -> bool:
    return cell.cell_type == "markdown" and cell.source.lstrip().startswith("#")


def unclaimed_figures(notebook) -> list[str]:
    """Figures whose prose states a direction ("rises", "below", "best" …) with no claim cell beside them: the
    figure cell itself, a code cell of its section before it, or one after it before the next figure or heading
    must be a ``# claim:`` cell, whose numbers a claims test checks. Read from the source; nothing is run."""
    cells, problems = notebook.cells, []
    for k, cell in enumerate(cells):
        if cell.cell_type != "code" or not FIGURE_CELL.search(cell.source):
            continue
        neighbours, prose = [cell], []
        for j in range(k - 1, -1, -1):  # back to the section's heading (or the previous figure)
            if _is_heading(cells[j]) or (cells[j].cell_type == "code" and FIGURE_CELL.search(cells[j].source)):
                break
            neighbours.append(cells[j])
        for j in range(k + 1, len(cells)):
            c = cells[j]
            if c.cell_type == "code" and FIGURE_CELL.search(c.source):
                break
            if c.cell_type == "markdown":
                heading = re.search(r"^#", c.source, re.M)  # prose up to a heading inside the cell
                prose.append(c.source[:heading.start()] if heading else c.source)
                if heading:
                    break
            else:
                neighbours.append(c)
        words = sorted({w.lower() for p in prose for w in DIRECTION.findall(p)})
        if words and not any(c.cell_type == "code" and CLAIM.search(c.source) for c in neighbours):
            first_line = cell.source.strip().splitlines()[0][:70]
            problems.append(f"cell {k} ({first_line}): its prose says {', '.join(words)}, but no claim cell "
                            "is beside it")
    return problems


def _output_texts(cell) -> list[str]:
    texts = []
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        texts += [out.get("text", ""), data.get("text/plain", ""), data.get("text/html", "")]
    return [t if isinstance(t, str) else "".join(t) for t in texts if t]


def _reveals(text: str, answer: str, others: list[str]) -> bool:
    """``text`` names the answer and not every other choice (a list of all the choices gives nothing away)."""
    text = re.sub(r"\s*\n#?\s*|\s+", " ", text)  # a choice may be wrapped over two lines of prose

    def names(choice):
        return re.search(rf"(?<![\w-]){re.escape(choice)}(?![\w-])", text, flags=re.I) is not None
    return names(answer) and not all(names(o) for o in others)


WHY_RUN = 7  # words in a row shared with a question's `why` that count as saying it before the question


def _words(text: str) -> list[str]:
    return re.findall(r"[\w'’]+|\[\w+\]", text.lower())


def _said_before(text: str, ex) -> str | None:
    """What of ``ex``'s explanation or giveaway phrases ``text`` already says (None if nothing)."""
    flat = " ".join(_words(text))
    for phrase in ex.giveaways:
        if " ".join(_words(phrase)) in f" {flat} ":
            return phrase
    why = _words(ex.why)
    runs = {" ".join(why[i:i + WHY_RUN]) for i in range(len(why) - WHY_RUN + 1)}
    found = [r for r in runs if r in flat]
    return f"its explanation: {found[0]!r}" if found else None


def revealed_predictions(notebook) -> list[str]:
    """Prediction questions whose answer a cell before them gives away: in the question's own section, an output
    or the prose names the answer without naming every other choice; anywhere above the question, prose or an
    output says a phrase the question lists as a giveaway, or WHY_RUN words in a row of its explanation (`why`,
    shown after the student answers). Answers that are bare numbers are left out of the first rule (a number is
    printed everywhere for other reasons)."""
    from course_lib.exercises import EXERCISES

    cells = notebook.cells
    problems = []
    for k, cell in enumerate(cells):
        m = re.search(r'check\("(\w+)"\)', cell.source) if cell.cell_type == "code" else None
        ex = EXERCISES.get(m.group(1)) if m else None
        if ex is None or ex.kind != "question":
            continue
        variable = ex.needs[0]
        asked = [i for i in range(k) if cells[i].cell_type == "code" and re.search(rf"^{variable}\s*=", cells[i].source, re.M)]
        if not asked:
            problems.append(f"{ex.name}: no cell sets `{variable}` before check")
            continue
        q = asked[-1]
        for i in range(q):
            c = cells[i]
            texts = [c.source] if c.cell_type == "markdown" else (_output_texts(c) if c.cell_type == "code" else [])
            for t in texts:
                said = _said_before(t, ex)
                if said:
                    where = "prose" if c.cell_type == "markdown" else "output"
                    problems.append(f"{ex.name}: the {where} of cell {i} says it before the question: {said}")
                    break
        answer, others = str(ex.answer), [str(c) for c in ex.choices if c != ex.answer]
        if re.fullmatch(r"[\d.,%\s+-]+", answer):
            continue  # a bare number is printed everywhere for other reasons: such questions are checked by hand
        section = max([i for i in range(q) if cells[i].cell_type == "markdown" and re.search(r"^#{1,2} ", cells[i].source, re.M)],
                      default=0)
        for i in range(section, q):
            c = cells[i]
            if c.cell_type == "code":
                hits = [t for t in _output_texts(c) if _reveals(t, answer, others)]
                if hits:
                    problems.append(f"{ex.name}: the output of cell {i} names the answer {answer!r}: {hits[0][:120]!r}")
            elif c.cell_type == "markdown" and _reveals(c.source, answer, others):
                problems.append(f"{ex.name}: the prose of cell {i} (its section) names the answer {answer!r}: "
                                f"{c.source[:120]!r}")
    return problems
