"""Where course_lib reads its shipped files and writes its caches.

* :func:`data_dir` -- the package data (``course_lib/data``): the shipped models, the sense data and the
  data sets of the notebooks, read-only, found with :mod:`importlib.resources` so that a non-editable
  ``pip install .`` finds them as well as a checkout does.
* :func:`shipped_run` -- a finished run shipped with the course (``course_lib/data/runs``), in the layout of
  the cache's own folders: what a fresh clone loads instead of training (tools/ship_runs.py makes them).
* :func:`finished_run` -- where a run that need not train again is: the shipped one, else the cache's.
* :func:`gensim_test_data` -- a file of gensim's test data (WordSim-353, SimLex-999, the Lee corpus).
* :func:`cache_dir` -- everything a run writes (UMAP projections, fine-tuning runs, logs): the user cache
  directory of the platform (``~/.cache/course-lib`` on Linux, via ``platformdirs``), or the folder named
  by the environment variable ``COURSE_LIB_CACHE``. Created on first use. course_lib never writes into
  its own source tree.
* :func:`written_whole` -- how a cache file is written: under a name of this writer's own, then moved into
  place in one step, so that two kernels (or two test workers) filling the same cache never mix their bytes
  and a reader sees the old file or the whole new one.
"""
from __future__ import annotations

import contextlib
import os
import threading
from importlib import resources
from pathlib import Path

CACHE_ENV = "COURSE_LIB_CACHE"


def data_dir(*parts: str) -> Path:
    """A path inside the package data, e.g. ``data_dir("models", "course-bert")`` (not checked to exist)."""
    root = resources.files("course_lib") / "data"
    return Path(str(root)).joinpath(*parts)


def shipped_run(kind: str, name: str) -> Path | None:
    """The folder of a finished run shipped with the course, ``course_lib/data/runs/<kind>/<name>`` (named as
    the cache names the same run, so by its recipe, data and code), or None when none is shipped or it is
    incomplete (no ``run.json``)."""
    folder = data_dir("runs", kind, name)
    return folder if (folder / "run.json").is_file() else None


def finished_run(kind: str, folder: Path) -> Path | None:
    """The finished run whose cache folder is ``folder`` (``<cache>/<kind>/<name>``): the one shipped with the
    course if there is one (so a notebook says the same wherever it runs), else ``folder`` itself if it holds
    ``run.json`` (written last, so a folder with it is complete), else None: the run must train."""
    return shipped_run(kind, folder.name) or (folder if (folder / "run.json").is_file() else None)


def gensim_test_data(name: str) -> Path:
    """A file of the test data installed with gensim, found without importing gensim (which takes seconds)."""
    import importlib.util

    spec = importlib.util.find_spec("gensim")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the word-similarity sets and the Lee corpus come with gensim's test data: "
                                  "`pip install gensim`")
    f = Path(list(spec.submodule_search_locations)[0]) / "test" / "test_data" / name
    if not f.exists():
        raise FileNotFoundError(f"{f} is missing from the installed gensim")
    return f


def is_shipped(path: str | Path | None) -> bool:
    """Is ``path`` inside the package data (a shipped file or run), rather than in the user's cache?"""
    if path is None:
        return False
    return Path(path).resolve().is_relative_to(data_dir().resolve())


def cache_root() -> Path:
    """The cache directory: $COURSE_LIB_CACHE, or the platform's user cache (not created)."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("course-lib", appauthor=False))


def cache_dir(*parts: str) -> Path:
    """A folder inside the cache directory ($COURSE_LIB_CACHE or the platform's user cache), created if missing."""
    path = cache_root().joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def written_whole(path: str | Path):
    """``with written_whole(path) as tmp: save(..., tmp)``: the file is written under a temporary name of this
    process and thread (beside ``path``, with the same suffix, which ``np.save`` and others expect), and replaces
    ``path`` in one step only once it is complete; on an error the temporary file is removed and ``path`` is left
    as it was."""
    path = Path(path)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}-{threading.get_ident()}.tmp{path.suffix}")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
