"""What course_lib does for the Jupyter kernel a notebook runs in: give freed memory back after every cell.

glibc's malloc keeps the memory that Python and torch free in its heap for reuse, and a heap that many cells have
fragmented is rarely given back: notebook 11.3's kernel peaked at 1.9 GB with 1.2 GB in use. Binder and a course
JupyterHub give a student about 2 GB. So, in an IPython kernel, course_lib asks glibc after each cell to return
what is free (``malloc_trim``, a few milliseconds); with it, 11.3 peaks at about 1.3 GB. Elsewhere (no IPython,
no glibc: macOS, Windows, musl) nothing happens.
"""
from __future__ import annotations

import ctypes
import functools
import sys

_REGISTERED: set[int] = set()  # the IPython shells (by id) that already trim after each cell


@functools.cache
def _malloc_trim():
    """glibc's malloc_trim, or None where the C library has none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def release_freed_memory() -> bool:
    """Return the memory the process has freed to the system now; False where that cannot be done."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def trim_after_each_cell(shell=None) -> bool:
    """In an IPython shell (``shell``, else the running one, if IPython is loaded already), release freed memory
    after every cell, once per shell. False when there is no shell or nothing to release memory with."""
    if shell is None:
        ipython = sys.modules.get("IPython")
        shell = ipython.get_ipython() if ipython is not None else None
    if shell is None or _malloc_trim() is None:
        return False
    if id(shell) not in _REGISTERED:
        shell.events.register("post_run_cell", _after_cell)
        _REGISTERED.add(id(shell))
    return True


def _after_cell(result=None) -> None:
    release_freed_memory()
