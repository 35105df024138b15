"""2-D UMAP projections of contextual vectors (Fig. 11.7), cached in memory and in the user cache
directory (:func:`course_lib.paths.cache_dir`), so that the same picture comes back instantly.

``python -m course_lib.embeddings`` warms UMAP's numba cache once per machine (``make setup``).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..paths import cache_dir, written_whole



@dataclass
class Projection:
    coords: np.ndarray   # (N, 2)
    cached: bool         # True when read from the cache instead of computed
    key: str


class ProjectionCache:
    """Projections by key: in memory, and as ``.npy`` files in ``cache_dir("umap")`` for new kernels."""

    def __init__(self, folder: Path | None = None):
        self.folder = folder
        self.memory: dict[str, np.ndarray] = {}

    def path(self, key: str) -> Path:
        return (self.folder or cache_dir("umap")) / f"{key}.npy"

    def get(self, key: str) -> np.ndarray | None:
        if key in self.memory:
            return self.memory[key].copy()
        f = self.path(key)
        if f.exists():
            try:
                self.memory[key] = np.load(f)
                return self.memory[key].copy()
            except (OSError, ValueError):
                return None  # a broken cache file is recomputed
        return None

    def put(self, key: str, coords: np.ndarray) -> None:
        self.memory[key] = coords
        try:
            f = self.path(key)
            with written_whole(f) as tmp:
                np.save(tmp, coords)
        except OSError:
            pass  # a read-only cache still works, in memory

    def clear(self, disk: bool = False) -> None:
        self.memory.clear()
        if disk:
            for f in (self.folder or cache_dir("umap")).glob("*.npy"):
                f.unlink(missing_ok=True)


UMAP_CACHE = ProjectionCache()  # the cache umap_project uses by default


def import_umap():
    """Import umap-learn so that numba caches its compiled code on disk: the compile is paid once per machine.

    umap-learn compiles ~100 numba functions on first use (10-20 s in every new kernel),
    and most of them are not declared ``cache=True``. While umap (and pynndescent) are
    imported, ``numba.njit``/``numba.jit`` default to ``cache=True``; numba then keeps the
    machine code next to the package (or in ``NUMBA_CACHE_DIR``) and later kernels load it.
    """
    import sys

    if "umap" in sys.modules:
        return sys.modules["umap"]
    import numba

    originals = numba.njit, numba.jit

    def cached(decorator):
        def wrapper(*args, **kwargs):
            if len(args) == 1 and callable(args[0]) and not kwargs:  # bare @numba.njit
                return decorator(cache=True)(args[0])
            kwargs.setdefault("cache", True)
            return decorator(*args, **kwargs)
        return wrapper

    numba.njit, numba.jit = cached(originals[0]), cached(originals[1])
    try:
        import umap
    finally:
        numba.njit, numba.jit = originals
    return umap


def warm_umap() -> float:
    """Compile (or load from numba's cache) UMAP's code once; returns the seconds it took. ``make setup`` calls it."""
    import time
    import warnings

    start = time.perf_counter()
    umap = import_umap()
    X = np.random.default_rng(0).normal(size=(64, 16)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        umap.UMAP(n_neighbors=10, metric="cosine", random_state=0).fit_transform(X)
        umap.UMAP(n_neighbors=10, metric="euclidean", random_state=0).fit_transform(X)
    return time.perf_counter() - start


def umap_project(vectors, *, n_neighbors: int = 15, min_dist: float = 0.1, metric: str = "cosine",
                 seed: int = 0, cache: "bool | ProjectionCache" = True) -> Projection:
    """2-D UMAP projection, cached in memory and on disk (``cache_dir("umap")``; ``cache`` may be False or a ProjectionCache).

    The key is a hash of the vectors' bytes and the parameters, so the same inputs give
    the same picture instantly — also in a new kernel, where UMAP's numba code would
    otherwise be compiled again (10-20 s).
    """
    X = np.ascontiguousarray(np.asarray(vectors.detach().cpu() if torch.is_tensor(vectors) else vectors,
                                        dtype=np.float32))
    if X.ndim != 2 or len(X) < 3:
        raise ValueError(f"UMAP needs at least 3 vectors as an (N, d) array, got shape {X.shape}")
    n_neighbors = min(n_neighbors, len(X) - 1)
    umap = import_umap()

    h = hashlib.sha256(X.tobytes())
    h.update(repr((X.shape, n_neighbors, min_dist, metric, seed, umap.__version__ if hasattr(umap, "__version__")
                   else "")).encode())
    key = h.hexdigest()[:24]
    store = UMAP_CACHE if cache is True else cache
    if store:
        hit = store.get(key)
        if hit is not None:
            return Projection(hit, True, key)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # n_jobs / random_state notice
        coords = umap.UMAP(n_neighbors=n_neighbors, min_dist=min_dist, metric=metric, random_state=seed,
                           init="random" if len(X) < 10 else "spectral").fit_transform(X).astype(np.float32)
    if store:
        store.put(key, coords)
    return Projection(coords.copy(), False, key)
