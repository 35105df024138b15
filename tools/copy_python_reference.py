"""Copy the Python reference manual's topics (the standard library's ``pydoc_data.topics``) into
``course_lib/data/python_reference/topics.json``: the text of notebook 11.2's live pretraining and of its domain
adaptation.

Each Python patch version ships another manual, so reading it from the running Python gave every other Python
another corpus: another key, and the shipped tiny BERT and adaptation trained again (Python 3.12 on the GPU
image did). The copy was made once, from the Python 3.11.7 that trained the shipped runs; run this again only to
move the course to another manual (then the shipped runs must be made again: tools/ship_runs.py).

    python tools/copy_python_reference.py            # writes the file and the licence beside it
"""
from __future__ import annotations

import json
import platform
import shutil
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "course_lib" / "data" / "python_reference"


def main() -> int:
    from pydoc_data.topics import topics

    OUT.mkdir(parents=True, exist_ok=True)
    data = {"python": platform.python_version(), "source": "pydoc_data.topics", "topics": dict(sorted(topics.items()))}
    (OUT / "topics.json").write_text(json.dumps(data, indent=0, ensure_ascii=False) + "\n", encoding="utf-8")
    licence = Path(sysconfig.get_paths()["stdlib"]) / "LICENSE.txt"
    shutil.copy(licence, OUT / "LICENSE.txt")
    print(f"{len(topics)} topics of Python {data['python']} -> {OUT.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
