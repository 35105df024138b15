"""Generate the .ipynb notebooks from their py:percent sources (the truth).

    python tools/make_notebooks.py            # create missing .ipynb, refresh stale ones
    python tools/make_notebooks.py --check    # exit 1 if a committed .ipynb differs from its .py

A notebook's inputs are regenerated from its .py; its outputs are kept
(jupytext's --update), so running this never throws away executed results.
An .ipynb whose inputs were edited more recently than its .py (someone worked in
JupyterLab without the pairing) is left alone and reported, never overwritten,
unless --force is given. Each .ipynb written here carries the hash of its inputs
(metadata ``course_lib.inputs``): one whose inputs no longer match it was edited
by hand, and is kept as ``<name>.ipynb.bak-<time>`` before it is replaced, even
when its .py is newer (a ``git pull`` or ``touch`` makes it so).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import jupytext

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_student import keep_copy  # noqa: E402 (a student's copy and an edited .ipynb are kept alike)

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"


KEPT_METADATA = ("tags", "slideshow")  # cell metadata that belongs to the source (slideshow: tools/slide_metadata.py)


def _inputs(nb) -> list:
    """What the .py decides: every cell's type, source, tags and slide type, and the notebook's rise settings."""
    cells = [(c.cell_type, c.source.strip(), {k: c.metadata[k] for k in KEPT_METADATA if k in c.metadata})
             for c in nb.cells]
    return [nb.metadata.get("rise"), *cells]


def inputs_hash(nb) -> str:
    return hashlib.sha256(json.dumps(_inputs(nb), sort_keys=True, default=str).encode()).hexdigest()[:16]


def edited_by_hand(nb) -> bool:
    """Whether an .ipynb's inputs differ from those this tool last wrote into it (or it was not written here)."""
    return nb.metadata.get("course_lib", {}).get("inputs") != inputs_hash(nb)


def sources(folder: Path = NOTEBOOKS) -> list[Path]:
    return sorted(p for p in folder.glob("*.py") if not p.name.startswith("_"))


def out_of_sync(py: Path) -> bool:
    ipynb = py.with_suffix(".ipynb")
    if not ipynb.exists():
        return True
    return _inputs(jupytext.read(py)) != _inputs(jupytext.read(ipynb))


def generate(py: Path, force: bool = False) -> str:
    ipynb = py.with_suffix(".ipynb")
    if not out_of_sync(py):
        return "up to date"
    nb = jupytext.read(py)
    kept = None
    if ipynb.exists():
        if ipynb.stat().st_mtime > py.stat().st_mtime and not force:
            return "SKIPPED: the .ipynb was edited after the .py (use --force to overwrite it)"
        old = jupytext.read(ipynb)
        # keep outputs of cells whose source did not change
        outputs = {c.source: c.get("outputs") for c in old.cells if c.cell_type == "code"}
        ids = {(c.cell_type, c.source): c.get("id") for c in old.cells}  # and their ids: small diffs
        for c in nb.cells:
            if c.cell_type == "code" and outputs.get(c.source):
                c.outputs = outputs[c.source]
            if ids.get((c.cell_type, c.source)):
                c.id = ids[(c.cell_type, c.source)]
        if edited_by_hand(old):
            kept = keep_copy(ipynb)
    nb.metadata["course_lib"] = {"inputs": inputs_hash(nb)}
    jupytext.write(nb, ipynb, fmt="ipynb")
    return "written" + (f" (the edited .ipynb is kept as {kept.name})" if kept else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only report notebooks whose .ipynb is out of sync")
    ap.add_argument("--force", action="store_true", help="overwrite an .ipynb even if it was edited later")
    ap.add_argument("folder", nargs="?", default=str(NOTEBOOKS))
    args = ap.parse_args(argv)
    bad = 0
    for py in sources(Path(args.folder)):
        if args.check:
            if out_of_sync(py):
                print(f"out of sync: {py.with_suffix('.ipynb').relative_to(ROOT)} (run `make notebooks`)")
                bad += 1
        else:
            status = generate(py, force=args.force)
            print(f"{py.with_suffix('.ipynb').name}: {status}")
            bad += status.startswith("SKIPPED")
    return 1 if (bad and args.check) else 0


if __name__ == "__main__":
    sys.exit(main())
