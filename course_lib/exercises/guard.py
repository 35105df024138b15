"""Inside the sandbox: spotting and undoing a monkey-patch of the library (it cannot change a grade there)."""
from __future__ import annotations

import contextlib
import sys
import types

WATCHED = ("torch", "torch.nn", "torch.nn.functional", "torch.linalg", "numpy", "math", "builtins", "json", "os")


class LibraryGuard:
    """The functions, classes and modules of course_lib, torch and a few more, as they were before any
    student code ran: a monkey-patch is spotted (``changed``) and undone (``restore``). Inside the sandbox a patch
    cannot change a grade (the grader compares on its own side); it is reported so that the student learns it is
    not allowed, and undone so that one cell's patch does not change how another function runs."""

    def __init__(self):
        import torch

        owners = [(name, m) for name, m in sys.modules.items() if m is not None and
                  (name in WATCHED or name == "course_lib" or name.startswith("course_lib."))]
        owners.append(("torch.Tensor", torch.Tensor))
        self.saved = [(name, owner, {k: v for k, v in vars(owner).items() if self._code(k, v)}) for name, owner in owners]

    @staticmethod
    def _code(key: str, value) -> bool:
        return not key.startswith("__") and key != "_" and (callable(value) or isinstance(value, types.ModuleType))

    def changed(self) -> list[tuple[str, object, str, object]]:
        """(where, owner, attribute, original) of each patch; a library's own wrapper of the original (torch's
        dynamo wraps torch.manual_seed when it is first imported) is accepted and becomes the original."""
        missing, found = object(), []
        for name, owner, saved in self.saved:
            now_items = vars(owner)
            for k, v in list(saved.items()):
                now = now_items.get(k, missing)
                if now is v:
                    continue
                if _library_wrapper(now, v):
                    saved[k] = now
                else:
                    found.append((f"{name}.{k}", owner, k, v))
        return found

    def restore(self) -> list[str]:
        """Undo every patch; what was patched, e.g. ``["course_lib.exercises.hints.close"]``."""
        found = self.changed()
        for _, owner, k, v in found:
            with contextlib.suppress(Exception):
                setattr(owner, k, v)
        return [where for where, *_ in found]


def _library_wrapper(new, old) -> bool:
    code = getattr(new, "__code__", None)
    from_library = code is not None and not code.co_filename.startswith("<")
    return from_library and getattr(new, "__wrapped__", None) is old
