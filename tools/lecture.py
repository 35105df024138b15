"""Open a notebook ready to present: its outputs already there, its slow steps cached, large fonts, deck mode.

    make lecture NB=11_2                       # = .venv/bin/python tools/lecture.py 11_2
    .venv/bin/python tools/lecture.py 11_2 --prepare-only    # before the lecture: execute, write the settings

1. The notebook (``notebooks/<NB>*.ipynb``, a prefix is enough) is executed once, top to bottom, into
   ``notebooks/lecture/`` (not tracked): every output is there when it opens, and every slow step (training runs,
   frozen states, projections) is now in the course cache, so *Run All* in the lecture takes seconds. An executed
   copy newer than its notebook is reused (``--again`` executes it anew). A cell that fails stops the preparation
   with its error: better before the lecture than during it.
2. JupyterLab starts with its own settings folder (``notebooks/lecture/.settings``, so your own settings are left
   alone): fonts large enough for the back row (``--font`` pixels for code and text, default 20), line numbers
   off, the notebook opened at once.
3. In the lecture: *Run All* (seconds, from the cache: the widgets become live on the kernel), then the deck button
   of the notebook's toolbar (or the command palette: *Start Deck*), see the README's "present a notebook".
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
LECTURE = NOTEBOOKS / "lecture"


def find_notebook(name: str, folder: Path = NOTEBOOKS) -> Path:
    """The notebook ``name`` names: a file, a stem, or the start of one ("11_2"); a clear error otherwise."""
    path = Path(name)
    if path.suffix == ".ipynb" and path.is_file():
        return path
    name = name.replace(".", "_")  # "11.1" is the section 11_1
    found = sorted(p for p in folder.glob("*.ipynb") if p.stem == name or p.stem.startswith(name))
    whole = [p for p in found if p.stem == name or p.stem.startswith(name + "_")]  # "11_1": 11.1, not 11.1b
    if len(whole) == 1:
        return whole[0]
    if len(found) == 1:
        return found[0]
    known = ", ".join(p.stem for p in sorted(folder.glob("*.ipynb")))
    if not found:
        raise SystemExit(f"no notebook called {name!r} in {folder}; the notebooks are: {known}")
    raise SystemExit(f"{name!r} names {len(found)} notebooks ({', '.join(p.stem for p in found)}): say which")


def settings(font_px: int) -> dict[str, dict]:
    """JupyterLab user settings for presenting: {settings file (plugin path): its content}."""
    ui = max(12, font_px - 4)
    return {
        "@jupyterlab/apputils-extension/themes.jupyterlab-settings": {
            "overrides": {"code-font-size": f"{font_px}px", "content-font-size1": f"{font_px}px",
                          "ui-font-size1": f"{ui}px"}},
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {
            "codeCellConfig": {"lineNumbers": False}, "renderingLayout": "default"},
        "@jupyterlab/shortcuts-extension/shortcuts.jupyterlab-settings": {"shortcuts": deck_keys()},
    }


# While the deck is presenting and no text field has the focus, the arrows and Space step through the slides at
# once: jupyterlab-deck's own keys act only once its on-screen navigation has the focus (deathbeds/jupyterlab-deck#63),
# so a lecturer had to click an arrow first. A widget's text box and a cell's editor keep their keys
# (tests/browser/test_lecture_browser.py types into both while presenting). Lumino takes no comma in a selector.
DECK_IDLE = "body[data-jp-deck-mode='presenting']" + "".join(
    f":not(:has({field}:focus))" for field in ("input", "textarea", "select", "[contenteditable='true']"))
DECK_KEYS = {"forward": ["ArrowRight"], "back": ["ArrowLeft"], "up": ["ArrowUp"], "down": ["ArrowDown"]}


def deck_keys() -> list[dict]:
    """JupyterLab shortcuts: deck's own commands and keys (→ deck:forward …; Space / Shift Space: deck:go down or
    forward / up or back), with DECK_IDLE as their selector."""
    keys = [(f"deck:{d}", {}, k) for d, k in DECK_KEYS.items()]
    keys += [("deck:go", {"direction": "down", "alternate": "forward"}, ["Space"]),
             ("deck:go", {"direction": "up", "alternate": "back"}, ["Shift Space"])]
    return [{"command": c, "args": args, "keys": k, "selector": DECK_IDLE} for c, args, k in keys]


def write_settings(folder: Path, font_px: int) -> list[Path]:
    written = []
    for rel, content in settings(font_px).items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(content, indent=2) + "\n")
        written.append(path)
    return written


def prepare(notebook: Path, out_dir: Path = LECTURE, again: bool = False, timeout: int = 1800) -> tuple[Path, str]:
    """Execute ``notebook`` into ``out_dir`` (kept if newer than the notebook, unless ``again``); (copy, what
    happened)."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / notebook.name
    if not again and target.is_file() and target.stat().st_mtime >= notebook.stat().st_mtime:
        return target, "up to date (executed before; --again to execute it anew)"
    nb = nbformat.read(notebook, as_version=4)
    start = time.perf_counter()
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(notebook.parent)}})
    try:
        client.execute()
    except CellExecutionError as e:
        failed = next((c.source for c in nb.cells if any(o.get("output_type") == "error" for o in c.get("outputs", []))), "")
        raise SystemExit(f"{notebook.name} stopped at a cell that failed, so it is not ready to present: "
                         f"{e.ename}: {e.evalue}\n--- the cell:\n{failed}") from None
    tmp = target.with_name(f".{target.name}.tmp")
    nbformat.write(nb, tmp)
    os.replace(tmp, target)
    return target, f"executed in {time.perf_counter() - start:.0f} s"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebook", help="a notebook of notebooks/: its name or the start of it (11_2, 00)")
    ap.add_argument("--font", type=int, default=20, help="font size in pixels for code and text (default 20)")
    ap.add_argument("--again", action="store_true", help="execute the notebook again even if its copy is up to date")
    ap.add_argument("--prepare-only", action="store_true", help="execute and write the settings; do not start JupyterLab")
    ap.add_argument("--port", type=int, default=int(os.environ.get("PORT", 8888)))
    args = ap.parse_args(argv)
    if not 8 <= args.font <= 64:
        ap.error(f"--font is a size in pixels between 8 and 64, not {args.font}")
    notebook = find_notebook(args.notebook)
    copy, what = prepare(notebook, again=args.again)
    print(f"{copy.relative_to(ROOT)}: {what}")
    written = write_settings(LECTURE / ".settings", args.font)
    print(f"settings for presenting ({args.font}px): {written[0].parents[1].relative_to(ROOT)}")
    if args.prepare_only:
        return 0
    cmd = [sys.executable, "-m", "jupyter", "lab", "--notebook-dir", str(NOTEBOOKS), "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={args.port}", str(copy.relative_to(NOTEBOOKS))]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.insert(4, "--allow-root")
    env = {**os.environ, "JUPYTERLAB_SETTINGS_DIR": str(LECTURE / ".settings")}
    print("In the lecture: Run All (seconds, from the cache), then the deck button in the notebook's toolbar.")
    return subprocess.call(cmd, env=env, cwd=NOTEBOOKS)


if __name__ == "__main__":
    sys.exit(main())
