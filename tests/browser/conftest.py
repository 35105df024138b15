"""The browser tests' shared fixtures: one JupyterLab server and one Chromium per session, and
``executed(name)`` which opens a notebook in its own page and runs it once per session.

For a notebook of notebooks/ (``"11_2_masked_language_modeling.ipynb"``), what runs is the notebook of
its widget cells and the cells they need (tests/notebook_runs.widget_notebook), written next to it in the
server's temporary root as ``<stem>.widgets.ipynb``; any other name (the self-tests) runs as it is.

Needs Debian's Chromium at /usr/bin/chromium: `make browser` installs it (`make test` does it first).
"""
from __future__ import annotations

import contextlib
import shutil
import sys
import threading
import time
import warnings
from pathlib import Path

import nbformat
import pytest

from . import jupyterlab as jl

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from notebook_runs import widget_cells, widget_notebook, widget_slice  # noqa: E402

SCREENSHOTS = ROOT / "artifacts" / "screenshots"
SELFTEST = "_browser_selftest"  # folder inside the server's temporary root, never in the repo
SOURCES = sorted(p for p in (ROOT / "notebooks").glob("*.py") if not p.name.startswith("_"))


def _has_widgets(source: Path) -> bool:
    import jupytext

    return bool(widget_slice(jupytext.read(source)))


NOTEBOOKS_WITH_WIDGETS = [p for p in SOURCES if _has_widgets(p)]


# ---------------------------------------------------------------------------- self-test notebooks
def _code_notebook(*sources: str):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    return nb


ERROR_NOTEBOOK = _code_notebook(
    "import sys, warnings\nprint('to stdout')\nprint('to stderr', file=sys.stderr)\nwarnings.warn('only a warning')",
    "1/0",
    "never_reached = True",
)

# The explorer's class contract (see jupyterlab.py), with a solid-colour PNG for each (layer, head).
MINI_EXPLORER = '''
import struct, zlib
import ipywidgets as W

def png(rgb, size=48):
    raw = b"".join(b"\\x00" + bytes(rgb) * size for _ in range(size))
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    ihdr = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")

class MiniExplorer(W.VBox):
    def __init__(self):
        self.text = W.Text(value="So long and thanks", description="text", continuous_update=False)
        self.layer = W.Dropdown(options=list(range(6)), value=2, description="layer")
        self.head = W.Dropdown(options=["all"] + list(range(12)), value=3, description="head")
        self.message, self.heatmap = W.HTML(), W.Image(format="png", width=96, height=96)
        for w, c in [(self.text, "explorer-text"), (self.layer, "explorer-layer"), (self.head, "explorer-head"),
                     (self.message, "explorer-message"), (self.heatmap, "explorer-heatmap")]:
            w.add_class(c)
        super().__init__([self.text, W.HBox([self.layer, self.head]), self.message, self.heatmap])
        self.add_class("attention-explorer")
        for w in (self.text, self.layer, self.head):
            w.observe(self.redraw, "value")
        self.redraw()

    def redraw(self, _change=None):
        if not self.text.value.strip():
            self.message.value, self.heatmap.value = "<b>Type a sentence.</b>", b""
            return
        head = 12 if self.head.value == "all" else self.head.value
        self.message.value, self.heatmap.value = "", png((40 * self.layer.value, 20 * head, 200))

MiniExplorer()
'''


# ---------------------------------------------------------------------------- fixtures
TEARDOWN_SECONDS = 60


def _is_chromium(proc) -> bool:
    """A child process that is Chromium; one that exits while we look (a renderer closing) is not."""
    import psutil

    try:
        return "chrom" in proc.name().lower()
    except psutil.Error:
        return False


@contextlib.contextmanager
def browser_watchdog(seconds: float, processes=None):
    """Closing pages and the browser must not hang the suite: Playwright's close calls take no timeout and wait
    for as long as a browser that stopped answering makes them (a CI run once sat there until it was killed).
    After ``seconds`` the browser's processes (default: this process's Chromium children) are killed, the
    pending call fails, and that is reported as a warning; the tests themselves have already passed or failed."""
    import psutil

    if processes is None:
        processes = [p for p in psutil.Process().children(recursive=True) if _is_chromium(p)]
    fired = threading.Event()

    def kill():
        fired.set()
        for proc in processes:
            with contextlib.suppress(psutil.Error):
                proc.kill()

    timer = threading.Timer(seconds, kill)
    timer.daemon = True
    timer.start()
    try:
        yield fired
    except Exception as err:  # noqa: BLE001 - a teardown that failed only because the watchdog fired
        if not fired.is_set():
            raise
        warnings.warn(f"closing the browser took over {seconds} s; its processes were killed ({err})", stacklevel=1)
    finally:
        timer.cancel()


@pytest.fixture(scope="package")
def lab(tmp_path_factory):
    problem = jl.chromium_problem()
    if problem:
        pytest.fail(problem, pytrace=False)
    root = tmp_path_factory.mktemp("lab-root")
    shutil.copytree(ROOT / "notebooks", root, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    if (ROOT / "jupytext.toml").exists():  # the pairing config a student's JupyterLab finds above notebooks/
        shutil.copy(ROOT / "jupytext.toml", root)
    (root / SELFTEST).mkdir()
    nbformat.write(ERROR_NOTEBOOK, root / SELFTEST / "error.ipynb")
    nbformat.write(_code_notebook(MINI_EXPLORER), root / SELFTEST / "mini_explorer.ipynb")
    server = jl.JupyterLab(root)
    try:
        server.start()
    except RuntimeError as err:
        pytest.fail(str(err), pytrace=False)
    yield server
    server.cleanup()


@pytest.fixture(scope="package")
def browser(lab):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = jl.launch_chromium(pw)
        yield chromium
        with browser_watchdog(TEARDOWN_SECONDS):
            chromium.close()


@pytest.fixture(scope="package")
def _executed_session(lab, browser):
    """``run(name, module)`` -> (page, RunResult): each notebook is opened and run once per session. When
    another test module asks for it, its widget cells run again (new widgets, in their initial state), so that
    no module sees the widgets as an earlier module left them (an emptied text, a moved slider); the cells they
    need are not run again: what those defined is still in the kernel. A self-test notebook runs again whole."""
    cache: dict[str, tuple] = {}
    owner: dict[str, str] = {}
    rerun: dict[str, list[int]] = {}  # a course notebook's widget cells (a self-test notebook: none, all rerun)

    def run(name: str, module: str = ""):
        if name in cache and owner.get(name) != module:
            page, old = cache[name]
            cells = rerun.get(name)
            result = jl.run_all_cells(page, old.name) if cells is None else jl.run_cells(page, old.name, cells)
            result.open_seconds, result.name = old.open_seconds, old.name
            cache[name] = (page, result)
        owner[name] = module
        if name not in cache:
            opened_name = name
            source = ROOT / "notebooks" / Path(name).with_suffix(".py").name
            if "/" not in name and source.exists():  # a course notebook: its widget cells only
                opened_name = f"{Path(name).stem}.widgets.ipynb"
                nb = widget_notebook(source)
                nbformat.write(nb, lab.root_dir / opened_name)
                rerun[name] = widget_cells(nb)  # every cell of nb is a code cell
            start = time.perf_counter()
            page = jl.open_notebook(browser, lab, opened_name)
            opened = time.perf_counter() - start
            result = jl.run_all_cells(page, opened_name)
            result.open_seconds = opened
            result.name = opened_name
            cache[name] = (page, result)
        return cache[name]

    yield run
    with browser_watchdog(TEARDOWN_SECONDS):
        for page, _ in cache.values():
            page.context.close()


@pytest.fixture(scope="module")
def executed(_executed_session, request):
    """``executed(name)`` -> (page, RunResult) for this test module (see ``_executed_session``)."""
    return lambda name: _executed_session(name, request.module.__name__)


