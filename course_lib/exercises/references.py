"""The library's own implementations of what each exercise asks the student to write.

A submission whose graded cells use one of these for that exercise gets no credit -- see ``grading.reference_used``;
so does one that uses another package implementing the answer whole (``library_answers.PACKAGES``: `tokenizers`
for the tokenizer exercises, seqeval for entity F1). The tables are in :mod:`.library_answers`.
For every function exercise registered by the ``ch*`` modules: the reference its check compares with, the
check module's own helper that computes the expected answer, and any public equivalent in ``course_lib``.

Names are given where they are defined; a re-export (``course_lib.causal_mask``, ``course_lib.spans.sbo_input``)
is the same object, and ``reference_used`` compares objects. A listed class also catches its use through an
instance (``WordPiece(vocab).encode_word(word)``); a listed method only where it is named through its class.
Left out: helpers a student may use (tokenizers and models handed to the function, ``torch``, the cosine), what
the notebook tells the student to call, and any library function whose name a solution cell of that exercise uses
(the student's own function of that name would otherwise be read as the library's). An empty tuple says why.
"""
from __future__ import annotations

import ast
import re

from .grading import Cell, python_only
from .library_answers import PACKAGES, REFERENCES


def _package_of(name: str, dotted: str | None) -> str | None:
    """``dotted`` when it names something in a package listed for exercise ``name``, else None."""
    if not dotted:
        return None
    return dotted if any(dotted == p or dotted.startswith(p + ".") for p in PACKAGES.get(name, ())) else None


def _package_object(name: str, obj) -> str | None:
    """The dotted name of ``obj`` (a module, or a class, function or instance defined in one) when its module is a
    package listed for exercise ``name``, else None."""
    import types

    if isinstance(obj, types.ModuleType):
        return _package_of(name, obj.__name__)
    module = getattr(obj, "__module__", None)
    if not isinstance(module, str):
        owner = getattr(obj, "__self__", None)  # a method of a compiled class: Tokenizer.from_file
        module = getattr(owner, "__module__", None) if owner is not None else None
    if not isinstance(module, str):
        module = type(obj).__module__
    qual = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    return _package_of(name, f"{module}.{qual}") if isinstance(module, str) else None


# ----------------------------------------------------------------------------- finding them in a submission

def _references(name: str) -> dict[int, str]:
    """id of each library object that computes what exercise ``name`` asks for -> its dotted name."""
    found = {}
    for dotted in REFERENCES.get(name, ()):
        obj = _resolve(dotted)
        if obj is not None:
            found[id(obj)] = dotted
            found[id(getattr(obj, "__func__", obj))] = dotted
    return found


def _resolve(dotted: str):
    """The object ``course_lib.a.b.c`` names, importing what it needs; None when it names nothing."""
    import importlib

    if not re.fullmatch(r"course_lib(\.[A-Za-z_]\w*)*", dotted):
        return None
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except Exception:  # noqa: BLE001 - not a module (or one that fails to import): try a shorter prefix
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def _dotted(node) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def _imports(nodes, aliases: dict[str, str]) -> None:
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"


def uses_library(name: str, dotted: str) -> str:
    """The refusal of a function ``name`` whose code calls the library's answer ``dotted`` (grader and check())."""
    return (f"`{name}` uses `{dotted}`, the library's own implementation of what this exercise asks you to write: "
            "write it yourself (no credit while it calls the library's answer)")


def is_library(name: str, module: str, qualname: str) -> str:
    """The refusal of a function ``name`` that is the library's own ``module.qualname`` (grader and check())."""
    return f"`{name}` is course_lib's own `{module}.{qualname}`, not your code: write the function yourself"


def reference_used(ex, cells: list[Cell]) -> str | None:
    """The message for a submission whose function for exercise ``ex`` calls the library's own implementation of
    it (:mod:`.references`), read from the code of its graded cells (directly, through an import alias, or through
    a helper function the notebook defines); None when it does not."""
    if ex.kind != "function":
        return None
    refs = _references(ex.name)
    if not refs and not PACKAGES.get(ex.name):
        return None
    aliases: dict[str, str] = {}
    defs: dict[str, ast.AST] = {}
    for cell in cells:
        if not cell.graded:
            continue
        try:
            tree = ast.parse(python_only(cell.source))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        _imports(tree.body, aliases)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defs[node.name] = node
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                    if isinstance(target, ast.Name):
                        defs[target.id] = node
    todo, seen = list(ex.needs), set()
    while todo:
        name = todo.pop()
        if name in seen or name not in defs:
            continue
        seen.add(name)
        local = dict(aliases)
        _imports(ast.walk(defs[name]), local)
        for node in ast.walk(defs[name]):
            dotted = _dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
            if dotted is None:
                continue
            head, _, rest = dotted.partition(".")
            if head in defs and head not in seen and node is not defs[name]:
                todo.append(head)
            full = local.get(head, head) + (f".{rest}" if rest else "")
            if _package_of(ex.name, full):
                return uses_library(ex.needs[0], full)
            if full.startswith("course_lib"):
                obj = _resolve(full)
                if obj is not None and id(obj) in refs:
                    return uses_library(ex.needs[0], full)
    return None


def reference_called(ex, fns: dict) -> str | None:
    """:func:`reference_used` for functions of a live kernel (the notebook's ``check()``, which has no cells, only
    objects): what each function's code loads -- a global or a closure's name and the attributes read from it
    (``bert.parameter_count``, an instance of a listed class), a module it imports -- resolved to objects, and
    the helpers of the same notebook it calls, so that ``check()`` says what the grader will; None when none is the
    library's answer."""
    import dis
    import types

    if ex.kind != "function":
        return None
    refs = _references(ex.name)
    if not refs and not PACKAGES.get(ex.name):
        return None

    def hit(obj) -> str | None:
        for candidate in (obj, getattr(obj, "__func__", None), type(obj)):
            if candidate is not None and id(candidate) in refs:
                return refs[id(candidate)]
        return None

    for n in ex.needs:  # the library's function itself, handed in under the exercise's name
        module = str(getattr(fns.get(n), "__module__", None) or "")
        if module == "course_lib" or module.startswith("course_lib."):
            return is_library(n, module, getattr(fns[n], "__qualname__", n))
    todo, seen = [fns[n] for n in ex.needs if n in fns], set()
    while todo:
        f = todo.pop()
        code, where = getattr(f, "__code__", None), getattr(f, "__globals__", {})
        if not isinstance(code, types.CodeType) or id(code) in seen:
            continue
        seen.add(id(code))
        closure = dict(zip(code.co_freevars, (_contents(c) for c in (getattr(f, "__closure__", None) or ()))))
        found, codes = [], [code]
        while codes:
            c = codes.pop()
            codes += [k for k in c.co_consts if isinstance(k, types.CodeType)]
            chain, imported = [], None
            for ins in dis.get_instructions(c):
                if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_CLASSDEREF"):
                    start = closure if ins.opname.endswith("DEREF") else where
                    chain = [start.get(ins.argval)] if ins.argval in start else []
                elif ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and chain:
                    chain.append(getattr(chain[-1], ins.argval, None))
                else:
                    chain = []
                if ins.opname == "IMPORT_NAME":
                    imported = ins.argval
                    if _package_of(ex.name, str(imported)):
                        return uses_library(ex.needs[0], str(imported))
                    chain = [_resolve(imported)] if str(imported).startswith("course_lib") else []
                elif ins.opname == "IMPORT_FROM" and imported:
                    found.append(_resolve(f"{imported}.{ins.argval}"))
                found += chain[-1:]
                for obj in chain:  # another package's answer, named anywhere along the chain
                    other = _package_object(ex.name, obj)
                    if other:
                        return uses_library(ex.needs[0], other)
        for obj in found:
            dotted = hit(obj)
            if dotted is not None:
                return uses_library(ex.needs[0], dotted)
            if isinstance(obj, types.FunctionType) and getattr(obj, "__globals__", None) is where:
                todo.append(obj)  # a helper the notebook defines
    return None


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:  # a closure's variable not yet assigned
        return None
