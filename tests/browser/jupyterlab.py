"""Drive a real JupyterLab in headless Chromium (Debian's /usr/bin/chromium) with Python playwright.

Used by tests/browser/test_jupyterlab_browser.py; usable by hand too:

    with JupyterLab(root_dir) as lab, sync_playwright() as pw:
        browser = launch_chromium(pw)
        page = open_notebook(browser, lab, "00_start_here.ipynb")
        result = run_all_cells(page, "00_start_here.ipynb")

How it talks to JupyterLab: the server is started with ``--LabApp.expose_app_in_browser=True``,
which sets ``window.jupyterapp``; cells are run with the same command the menu item
Run → Run All Cells calls (``notebook:run-all-cells``), and the results are read from the
notebook's model (``output_type == "error"``), not guessed from the rendering: in the DOM a
traceback and a warning on stderr look the same (both are ``.jp-OutputArea-output`` with
``data-mime-type="application/vnd.jupyter.stderr"``).
"""
from __future__ import annotations

import atexit
import base64
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium keeps calling Google services, which on a closed
# network means a stream of failing connections.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TOKEN = "course-lib-browser-test"
VIEWPORT = {"width": 1280, "height": 900}
MAX_SCREENSHOT_HEIGHT = 16000  # Chromium cannot capture much more than 16384 px in one image
TRACEBACK = "Traceback (most recent call last)"

# User settings for the test server only (a temporary user_settings_dir):
# no news/update pop-ups over the screenshots; every cell kept in the DOM (no windowing), and no empty
# space after the last cell, so that a tall viewport shows the whole notebook.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none", "scrollPastEnd": False},
}


def chromium_problem() -> str | None:
    """None if the browser tests can run here, else what to do about it."""
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        return (f"{CHROMIUM} is missing: the browser tests need Debian's Chromium. "
                "Run `make browser` (or `bash tools/install_browser.sh`) to install it.")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Python playwright is not installed in this environment: run `make setup`."
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]



def _interrupt(signum, _frame):
    raise KeyboardInterrupt(f"signal {signum}")


def _stop_on_sigterm() -> None:
    """SIGTERM (``timeout``, CI cancelling a job) becomes a KeyboardInterrupt, so that pytest ends the session
    and runs the finalizers that stop JupyterLab; by default SIGTERM ends Python at once and leaves the
    server and its kernels running."""
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _interrupt)

class JupyterLab:
    """A JupyterLab server on 127.0.0.1 serving ``root_dir``, with its own settings and workspaces."""

    def __init__(self, root_dir: Path, jupyter: Path | None = None, startup_timeout: float = 90,
                 settings: dict | None = None):
        self.root_dir = Path(root_dir)
        self.settings = {**LAB_SETTINGS, **(settings or {})}  # plugin -> its user settings
        self.jupyter = jupyter or Path(sys.executable).with_name("jupyter")
        self.startup_timeout = startup_timeout
        self.state_dir = Path(tempfile.mkdtemp(prefix="lab-state-"))
        self.log_path = self.state_dir / "jupyterlab.log"
        self.port: int | None = None
        self.proc: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        sep = "&" if "?" in path else "?"
        return f"{self.base_url}/{path.lstrip('/')}{sep}token={TOKEN}"

    def start(self) -> "JupyterLab":
        settings = self.state_dir / "user-settings"
        for plugin, values in self.settings.items():
            f = settings / f"{plugin}.jupyterlab-settings"
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(json.dumps(values))
        cmd = [str(self.jupyter), "lab", "--no-browser", "--ServerApp.ip=127.0.0.1",
               f"--ServerApp.port={free_port()}", "--ServerApp.port_retries=20",
               f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={self.root_dir}",
               "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
               "--LabApp.extension_manager=readonly",
               f"--LabApp.user_settings_dir={settings}", f"--LabApp.workspaces_dir={self.state_dir / 'workspaces'}"]
        if os.geteuid() == 0:
            cmd.append("--allow-root")
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
               "JUPYTER_RUNTIME_DIR": str(self.state_dir / "runtime")}
        self._log = open(self.log_path, "w")
        # its own process group, so that stop() can also end kernels that outlive a crashed server
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env,
                                     cwd=self.root_dir, start_new_session=True)
        _stop_on_sigterm()
        atexit.register(self.stop)  # a session ended by a signal (e.g. `timeout`) leaves no server and no kernels
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with code {self.proc.returncode} before answering:\n"
                                   + self.log_tail())
            m = re.search(r"http://127\.0\.0\.1:(\d+)/", self.log_path.read_text())
            if m:
                self.port = int(m.group(1))
                try:
                    with urllib.request.urlopen(self.url("api/status"), timeout=2) as r:
                        if r.status == 200:
                            return self
                except OSError:
                    pass
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"JupyterLab did not answer within {self.startup_timeout:.0f} s:\n" + self.log_tail())

    def stop(self) -> None:
        if self.proc is None or self._log.closed:  # not started, or stopped already
            return
        if self.proc.poll() is None and self.port is not None:
            try:  # the clean way: the server shuts its kernels down too
                req = urllib.request.Request(self.url("api/shutdown"), method="POST")
                urllib.request.urlopen(req, timeout=5).close()
                self.proc.wait(timeout=20)
            except (OSError, subprocess.TimeoutExpired):
                pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        try:  # anything left in the server's own process group (orphaned kernels)
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self._log.close()
        self.proc = None

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.state_dir, ignore_errors=True)

    def __enter__(self) -> "JupyterLab":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.cleanup()


def launch_chromium(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)


# ---------------------------------------------------------------------------- notebook in the page
# Every snippet finds its notebook panel by path, so a restored or second document never gets in the way.
_FIND = """
const findPanel = (name) => {
  const app = window.jupyterapp;
  if (!app) return null;
  for (const w of app.shell.widgets('main')) {
    if (w.context && w.context.path === name && w.content && w.content.widgets) return w;
  }
  return null;
};
"""


def _js(body: str, is_async: bool = False) -> str:
    """A page function of one argument ``arg``, with findPanel() in scope.

    Never async for wait_for_function: it takes the returned Promise itself as a truthy answer.
    """
    return f"{'async ' if is_async else ''}(arg) => {{ {_FIND} {body} }}"


def open_notebook(browser, lab: JupyterLab, name: str, timeout: float = 90):
    """A new page (own browser context) with ``name`` open in JupyterLab and its kernel idle."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.console_errors = []
    page.on("console", lambda m: m.type == "error" and page.console_errors.append(m.text))
    # a workspace of its own: the page starts empty, not with what an earlier page left open
    # (plain lab/tree/<name> would restore the shared default workspace; ?reset reloads the page)
    workspace = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")
    page.goto(lab.url(f"lab/workspaces/{workspace}/tree/{name}"), wait_until="domcontentloaded",
              timeout=timeout * 1000)
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:  # ready when the kernel is idle; a dialog (e.g. "File Load Error") ends the wait early
        page.wait_for_function(_js("""
            if (document.querySelector('.jp-Dialog')) return true;
            const p = findPanel(arg);
            if (!p || !p.context.isReady || !p.sessionContext.isReady) return false;
            const k = p.sessionContext.session && p.sessionContext.session.kernel;
            return !!k && k.status === 'idle';
        """), arg=name, timeout=timeout * 1000, polling=200)
    except PlaywrightTimeout:
        raise AssertionError(f"{name}: JupyterLab did not open it with an idle kernel within {timeout:.0f} s\n"
                             + _diagnostics(page, lab)) from None
    dialog = page.evaluate("() => { const d = document.querySelector('.jp-Dialog'); return d && d.innerText; }")
    if dialog:
        raise AssertionError(f"{name}: JupyterLab shows a dialog instead of the notebook:\n{dialog}\n"
                             + _diagnostics(page, lab))
    page.evaluate(_js("""
        const p = findPanel(arg);
        window.jupyterapp.shell.activateById(p.id);
        window.jupyterapp.shell.collapseLeft();
        window.jupyterapp.shell.collapseRight();
    """), name)
    return page


def _diagnostics(page, lab: JupyterLab) -> str:
    errors = "\n".join(getattr(page, "console_errors", [])[-10:]) or "(none)"
    return f"browser console errors:\n{errors}\nJupyterLab log (last lines):\n{lab.log_tail(25)}"


@dataclass
class RunResult:
    name: str
    seconds: float
    completed: bool                      # the Run All command resolved true (it stops at the first error)
    code_cells: int
    not_executed: list[int] = field(default_factory=list)     # code-cell indices without an execution count
    errors: list[dict] = field(default_factory=list)          # output_type == "error" outputs, with cell index
    dom_tracebacks: list[str] = field(default_factory=list)   # rendered outputs that show a Python traceback
    stderr: list[str] = field(default_factory=list)           # stderr streams (warnings): reported, not failures
    open_seconds: float = 0.0                                 # page load until the kernel was idle

    def problems(self) -> list[str]:
        out = [f"cell {e['cell']}: {e['ename']}: {e['evalue']}" for e in self.errors]
        out += [f"a rendered output shows a traceback: {t[:300]!r}" for t in self.dom_tracebacks if not self.errors]
        if not self.completed and not out:
            out.append("Run All Cells did not complete")
        if self.not_executed and not self.errors:
            out.append(f"code cells never executed: {self.not_executed}")
        return out


PRESENTING = "body[data-jp-deck-mode='presenting']"


def start_deck(page) -> None:
    """Present the open notebook with jupyterlab-deck from its first cell (command mode), as its toolbar button
    does, and wait until the first slide is on screen and deck has folded the side panels away."""
    page.evaluate("""() => { const p = window.jupyterapp.shell.currentWidget;
                             p.content.activeCellIndex = 0; p.content.mode = 'command'; }""")
    page.evaluate("async () => { await window.jupyterapp.commands.execute('deck:start'); }")
    page.wait_for_selector(PRESENTING, state="attached", timeout=30_000)
    page.wait_for_function("() => document.querySelectorAll('.jp-Cell.jp-deck-mod-onscreen').length > 0")
    page.wait_for_timeout(1500)  # deck folds the side panels away about a second after it starts


def run_all_cells(page, name: str, timeout: float = 600) -> RunResult:
    """Clear the outputs, Run → Run All Cells, wait until the kernel is idle and no prompt shows [*]."""
    return _run(page, name, None, timeout)


def run_cells(page, name: str, cells: list[int], timeout: float = 600) -> RunResult:
    """Clear the outputs of the code cells numbered ``cells`` (0-based among code cells) and run them, in order,
    in the kernel as it is (the other cells keep their outputs and what they defined); wait as
    :func:`run_all_cells` does. The result reports every cell, as after Run All."""
    return _run(page, name, sorted(cells), timeout)


def _run(page, name: str, cells: list[int] | None, timeout: float) -> RunResult:
    start = time.perf_counter()
    completed = page.evaluate(_js("""
        const [name, ms, which] = arg;
        const p = findPanel(name);
        const app = window.jupyterapp;
        app.shell.activateById(p.id);
        if (app.shell.currentWidget !== p) throw new Error('could not make ' + name + ' the current document');
        let run;
        if (which === null) {
          await app.commands.execute('notebook:clear-all-cell-outputs');
          run = app.commands.execute('notebook:run-all-cells');
        } else {
          const nb = p.content;
          const code = nb.widgets.filter((c) => c.model.type === 'code');
          const chosen = which.map((i) => code[i]);
          if (chosen.some((c) => !c)) throw new Error(name + ' has ' + code.length + ' code cells, not ' + which);
          nb.deselectAll();
          nb.activeCellIndex = nb.widgets.indexOf(chosen[0]);
          for (const c of chosen) {
            c.model.outputs.clear();
            c.model.executionCount = null;
            nb.select(c);
          }
          run = app.commands.execute('notebook:run-cell');  // the selected cells, in order; the selection stays
        }
        const timer = new Promise((resolve) => setTimeout(() => resolve('timeout'), ms));
        return await Promise.race([run, timer]);
    """, is_async=True), [name, timeout * 1000, cells])
    if completed == "timeout":
        what = "Run All Cells" if cells is None else f"running cells {cells}"
        raise TimeoutError(f"{name}: {what} still running after {timeout:.0f} s")
    wait_until_idle(page, name, timeout=max(30.0, timeout - (time.perf_counter() - start)))
    seconds = time.perf_counter() - start
    state = page.evaluate(_js("""
        const p = findPanel(arg);
        const cells = p.content.widgets.filter((c) => c.model.type === 'code');
        const res = {code_cells: cells.length, not_executed: [], errors: [], stderr: []};
        cells.forEach((c, i) => {
          if (!c.model.executionCount) res.not_executed.push(i);
          const outs = c.model.outputs;
          for (let j = 0; j < outs.length; j++) {
            const o = outs.get(j).toJSON();
            if (o.output_type === 'error') res.errors.push({cell: i, ename: o.ename, evalue: o.evalue});
            if (o.output_type === 'stream' && o.name === 'stderr') {
              res.stderr.push(Array.isArray(o.text) ? o.text.join('') : o.text);
            }
          }
        });
        const sel = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]';
        res.dom_tracebacks = Array.from(p.node.querySelectorAll(sel))
          .map((e) => e.innerText).filter((t) => t.includes('Traceback (most recent call last)'));
        return res;
    """), name)
    return RunResult(name=name, seconds=seconds, completed=completed is True, **state)


def wait_until_idle(page, name: str, timeout: float = 120) -> None:
    """Kernel idle and no cell of ``name`` showing the busy prompt [*], twice in a row 300 ms apart."""
    page.wait_for_function(_js("""
        const p = findPanel(arg);
        const k = p && p.sessionContext.session && p.sessionContext.session.kernel;
        const busy = !k || k.status !== 'idle' || p.sessionContext.pendingInput ||
          Array.from(p.node.querySelectorAll('.jp-InputPrompt')).some((e) => e.textContent.includes('*'));
        if (busy) { window.__idleSince = null; return false; }
        window.__idleSince = window.__idleSince || Date.now();
        return Date.now() - window.__idleSince >= 300;
    """), arg=name, timeout=timeout * 1000, polling=100)


_SCROLLER = """
const scroller = (p) => {  // the element that scrolls the notebook (.jp-WindowedPanel-outer in JupyterLab 4)
  let best = p.content.node, most = -1;
  for (const e of [p.content.node, ...p.content.node.querySelectorAll('*')]) {
    const oy = getComputedStyle(e).overflowY;
    if ((oy === 'auto' || oy === 'scroll') && e.scrollHeight - e.clientHeight > most) {
      best = e; most = e.scrollHeight - e.clientHeight;
    }
  }
  return best;
};
"""


def _set_height(page, height: int) -> None:
    height = int(min(max(height, VIEWPORT["height"]), MAX_SCREENSHOT_HEIGHT))
    page.set_viewport_size({"width": VIEWPORT["width"], "height": height})
    page.wait_for_timeout(300)  # Lumino lays the panels out again on the resize event
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")


# a slide is the 1280x720 window; jupyterlab-deck puts 57 px above a slide's first cell and 8 px between a cell's
# code and its output (measured on 11.1's explorer slide): what is left for the code and the widget under it
SLIDE = {"width": 1280, "height": 720}
SLIDE_ROOM = SLIDE["height"] - 57 - 8 - 15   # and 15 px to spare

_WIDGET_BOXES = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const rows = [];
  panel.content.widgets.forEach((cell, i) => {
    const tops = [...cell.node.querySelectorAll('.jp-OutputArea-output .jupyter-widgets')]
      .filter((e) => !e.parentElement.closest('.jupyter-widgets'));   // the outermost widget of each output
    for (const e of tops) {
      const r = e.getBoundingClientRect();
      if (r.height === 0) continue;
      const name = [...e.classList].find((c) => !/^(lm-|jp-|jupyter|widget)/.test(c)) || e.className;
      rows.push({cell: i, widget: name, code: Math.round(cell.node.querySelector('.jp-InputArea')
                 .getBoundingClientRect().height), height: Math.round(r.height), width: Math.round(r.width)});
    }
  });
  return rows;
}"""


# the CSS variables the lecture preset sets at its default size (`make lecture`, FONT=20: tools/lecture.settings;
# test_lecture_browser.py checks that JupyterLab computes them so)
PRESET_FONTS = {"--jp-code-font-size": "20px", "--jp-content-font-size1": "20px", "--jp-ui-font-size1": "16px"}


def widget_boxes_on_a_slide(page, fonts: dict[str, str] | None = None) -> list[dict]:
    """Every widget of the open notebook as it lays out in a 1280-pixel-wide window: its cell, its class, the height
    of the cell's code and its own height and width; with ``fonts``, under those CSS variables (e.g. PRESET_FONTS).
    The window's size and the fonts are given back after."""
    page.set_viewport_size(SLIDE)
    if fonts:
        page.evaluate("(f) => { for (const [k, v] of Object.entries(f)) document.body.style.setProperty(k, v); }", fonts)
    try:
        page.wait_for_timeout(300)  # Lumino lays the panels out again on the resize event
        page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")
        return page.evaluate(_WIDGET_BOXES)
    finally:
        if fonts:
            page.evaluate("(f) => { for (const k of Object.keys(f)) document.body.style.removeProperty(k); }", fonts)
        _set_height(page, VIEWPORT["height"])


def screenshot_notebook(page, name: str, path: Path) -> Path:
    """The whole notebook in one PNG: the viewport is made as tall as the notebook, then restored."""
    path.parent.mkdir(parents=True, exist_ok=True)
    hidden = lambda: page.evaluate(_js(_SCROLLER + """
        const s = scroller(findPanel(arg));
        s.scrollTop = 0;
        return s.scrollHeight - s.clientHeight;
    """), name)
    for _ in range(3):  # images and widgets may still grow the notebook after a resize
        extra = hidden()
        if extra <= 1:
            break
        _set_height(page, page.viewport_size["height"] + extra)
    page.screenshot(path=str(path), full_page=True)
    _set_height(page, VIEWPORT["height"])
    return path


# ---------------------------------------------------------------------------- kernel messages
def watch_kernel(page, name: str) -> None:
    """Start recording the kernel's error messages and stderr (e.g. from widget callbacks)."""
    page.evaluate(_js("""
        const p = findPanel(arg);
        window.__kernelProblems = [];
        if (window.__kernelWatched === p.id) return;
        window.__kernelWatched = p.id;
        p.sessionContext.iopubMessage.connect((_, msg) => {
          const t = msg.header.msg_type, c = msg.content;
          if (t === 'error') window.__kernelProblems.push(c.ename + ': ' + c.evalue);
          if (t === 'stream' && c.name === 'stderr' && c.text.includes('Traceback')) window.__kernelProblems.push(c.text);
        });
    """), name)


def kernel_problems(page) -> list[str]:
    return page.evaluate("() => window.__kernelProblems || []")


def page_tracebacks(page) -> list[str]:
    """Python tracebacks visible anywhere on the page (outputs, log console, dialogs)."""
    return page.evaluate(f"""() => {{
        const text = document.body.innerText;
        const found = [];
        let i = text.indexOf({json.dumps(TRACEBACK)});
        while (i >= 0) {{ found.push(text.slice(Math.max(0, i - 100), i + 400)); i = text.indexOf({json.dumps(TRACEBACK)}, i + 1); }}
        return found;
    }}""")


# ---------------------------------------------------------------------------- the attention explorer
# The contract with course_lib.widgets.AttentionExplorer: CSS classes set with widget.add_class().
# ipywidgets 8 puts the class on the view's root element: a Dropdown is div.widget-dropdown > select,
# a Text is div.widget-text > input, an HTML is div.widget-html, an Image is the <img> itself.
EXPLORER = ".attention-explorer"
LAYER = f"{EXPLORER} .explorer-layer select"
HEAD = f"{EXPLORER} .explorer-head select"
TEXT = f"{EXPLORER} .explorer-text input"
MESSAGE = f"{EXPLORER} .explorer-message"
HEATMAP = f"{EXPLORER} img.explorer-heatmap"


def heatmap_src(page) -> str:
    return image_src(page, HEATMAP)


def heatmap_bytes(page) -> bytes:
    """The PNG shown by the heatmap image (ipywidgets 8 serves it as a blob: URL; data: URLs work too)."""
    return image_bytes(page, HEATMAP)


def wait_for_explorer(page, condition: str, what: str, arg=None, timeout: float = 60) -> None:
    """Wait until the page function ``condition`` (JS, of ``arg``) holds; stop early, with the kernel's
    error, if a widget callback fails (needs watch_kernel())."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(f"""(arg) => (window.__kernelProblems || []).length > 0 || ({condition})(arg)""",
                               arg=arg, timeout=timeout * 1000, polling=100)
    except PlaywrightTimeout:
        raise AssertionError(f"the explorer did not {what} within {timeout:.0f} s") from None
    problems = kernel_problems(page)
    if problems:
        raise AssertionError(f"the kernel reported an error while waiting for the explorer to {what}: {problems}")


def wait_heatmap_shown(page, timeout: float = 60) -> None:
    wait_for_explorer(page, f"""() => {{
        const img = document.querySelector({json.dumps(HEATMAP)});
        return img && img.src && img.complete && img.naturalWidth > 0;
    }}""", "show a heatmap", timeout=timeout)


def wait_heatmap_changed(page, old_src: str, timeout: float = 60) -> None:
    wait_image_changed(page, HEATMAP, old_src, timeout, what="redraw the heatmap")


def wait_message_shown(page, timeout: float = 30) -> None:
    wait_text_shown(page, MESSAGE, timeout, what="show a message")


def dropdown_options(page, selector: str) -> tuple[list[str], str]:
    """(option labels, selected label) of an ipywidgets Dropdown's <select>."""
    return page.locator(selector).first.evaluate(
        "(s) => [Array.from(s.options).map((o) => o.textContent.trim()),"
        " s.selectedIndex >= 0 ? s.options[s.selectedIndex].textContent.trim() : null]")


def choose_other(page, selector: str, prefer: list[str]) -> str:
    """Select the first label of ``prefer`` that exists and differs from the current one; return it."""
    options, current = dropdown_options(page, selector)
    label = next((p for p in prefer if p in options and p != current), None)
    if label is None:
        label = next(o for o in options if o != current)
    page.locator(selector).first.select_option(label=label)
    return label


def message_text(page) -> str:
    return page.locator(MESSAGE).first.inner_text().strip()


def set_text(page, value: str) -> None:
    """Type into the explorer's Text box and commit it (continuous_update=False: Enter, then blur)."""
    fill_text(page, TEXT, value)


def screenshot_explorer(page, path: Path) -> Path:
    """The explorer widget alone; the viewport grows for a moment if the widget is taller than it."""
    return screenshot_widget(page, EXPLORER, path)


# ---------------------------------------------------------------------------- any widget, by CSS class
# The same contract for the widgets of 11.2 and 11.3: every control and output has a class
# (see course_lib/widgets/*.py); these helpers take a selector such as ".mask-sampler .sampler-tokens".

def inner_html(page, selector: str) -> str:
    return page.locator(selector).first.evaluate("(e) => e.innerHTML")


def image_src(page, selector: str) -> str:
    return page.locator(selector).first.get_attribute("src") or ""


def image_bytes(page, selector: str) -> bytes:
    """The bytes an <img> shows (ipywidgets 8 serves them as a blob: URL; data: URLs work too)."""
    b64 = page.locator(selector).first.evaluate("""async (img) => {
        if (!img.src) return '';
        const blob = await (await fetch(img.src)).blob();
        return await new Promise((resolve) => {
          const r = new FileReader();
          r.onload = () => resolve(r.result.split(',')[1] || '');
          r.readAsDataURL(blob);
        });
    }""")
    return base64.b64decode(b64)


def wait_widget(page, condition: str, what: str, arg=None, timeout: float = 60) -> None:
    """Wait for a JS condition of ``arg`` (same early stop on kernel errors as the explorer helpers)."""
    wait_for_explorer(page, condition, what, arg=arg, timeout=timeout)


def wait_image_shown(page, selector: str, timeout: float = 60) -> None:
    wait_widget(page, f"""() => {{
        const img = document.querySelector({json.dumps(selector)});
        return img && img.src && img.complete && img.naturalWidth > 0 && img.offsetParent !== null;
    }}""", f"show an image in {selector}", timeout=timeout)


def wait_image_changed(page, selector: str, old_src: str, timeout: float = 60, what: str | None = None) -> None:
    wait_widget(page, f"""(old) => {{
        const img = document.querySelector({json.dumps(selector)});
        return img && img.src && img.src !== old && img.complete && img.naturalWidth > 0;
    }}""", what or f"redraw {selector}", arg=old_src, timeout=timeout)


def wait_html_changed(page, selector: str, old_html: str, timeout: float = 60) -> None:
    wait_widget(page, f"""(old) => {{
        const e = document.querySelector({json.dumps(selector)});
        return e && e.innerHTML !== old && e.innerHTML.length > 0;
    }}""", f"change {selector}", arg=old_html, timeout=timeout)


def wait_html_contains(page, selector: str, text: str, timeout: float = 60) -> None:
    """Wait until the element's HTML contains ``text`` (for a change made of several messages, e.g. two fields
    typed one after the other, where the first redraw is not yet the last)."""
    wait_widget(page, f"""(t) => {{
        const e = document.querySelector({json.dumps(selector)});
        return e && e.innerHTML.includes(t);
    }}""", f"show {text!r} in {selector}", arg=text, timeout=timeout)


def wait_text_shown(page, selector: str, timeout: float = 60, what: str | None = None) -> None:
    wait_widget(page, f"""() => {{
        const e = document.querySelector({json.dumps(selector)});
        return e && e.innerText.trim().length > 0;
    }}""", what or f"show text in {selector}", timeout=timeout)


def fill_text(page, selector: str, value: str) -> None:
    """Type into an ipywidgets Text (``selector`` is its <input>) and commit it: Enter, then blur."""
    box = page.locator(selector).first
    box.scroll_into_view_if_needed()
    box.fill(value)
    box.press("Enter")
    box.blur()


def set_slider(page, selector: str, value: str) -> None:
    """Set an ipywidgets slider by typing into its editable readout (what a student can do too)."""
    readout = page.locator(f"{selector} .widget-readout").first
    readout.scroll_into_view_if_needed()
    readout.click()
    page.keyboard.press("Control+A")
    page.keyboard.type(value)
    page.keyboard.press("Enter")


def screenshot_widget(page, selector: str, path: Path) -> Path:
    """One widget alone; the viewport grows for a moment if the widget is taller than it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    widget = page.locator(selector).first
    box = widget.bounding_box()
    if box and box["height"] + 200 > VIEWPORT["height"]:
        _set_height(page, box["height"] + 200)
    widget.scroll_into_view_if_needed()
    widget.screenshot(path=str(path))
    if page.viewport_size["height"] != VIEWPORT["height"]:
        _set_height(page, VIEWPORT["height"])
    return path
