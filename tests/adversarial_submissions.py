"""Hostile and broken submissions of notebook 11.2, built from its student copy, with the result each must get.

Each :class:`Case` is one file a student could hand in: the student copy (tools/make_student.py) with its
answers filled in from the notebook's own solution, then one thing done to it (an exit, a loop, memory, a
monkey-patch, a broken cell, a renamed function…), or a file that is not a gradable notebook at all.
``expected`` gives, for each exercise, the status and a part of the message it must get; for a file that
cannot be graded, a part of the one message about the file.

Used by tests/test_grading_adversarial.py and by benchmarks/grading.py (the batch's timing).
"""
from __future__ import annotations

import copy
import functools
import json
import re
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import jupytext
import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "11_2_masked_language_modeling.py"
sys.path.insert(0, str(ROOT / "tools"))
import make_student  # noqa: E402

from course_lib.exercises import EXERCISES  # noqa: E402
from course_lib.exercises.grading import CHECK_CALL  # noqa: E402

# the exercises of the notebook, in its order; the cases below break those of these four functions
NAMES = list(dict.fromkeys(n for c in jupytext.read(NOTEBOOK).cells if c.cell_type == "code"
                           for n in CHECK_CALL.findall(c.source) if n in EXERCISES))
FUNCTIONS = {"mlm_masking": "mask_tokens", "mlm_loss": "masked_lm_loss", "nsp_input": "build_nsp_input",
             "language_sampling": "language_probs"}
ALL_CORRECT = {name: ("correct", "") for name in NAMES}
POINTS = sum(EXERCISES[n].points for n in NAMES)


def _stub_message(name: str) -> str:
    ex = EXERCISES[name]
    if ex.kind == "question":
        return f"set `{ex.needs[0]}` to your prediction"
    return f"replace `raise NotImplementedError` in {ex.needs[0]}"


@dataclass
class Case:
    name: str
    what: str                              # what the submission does, in words
    content: bytes                         # the file handed in
    expected: dict | str                   # {exercise: (status, part of the message)} or the file's error
    suffix: str = ".ipynb"
    extra: dict = field(default_factory=dict)

    @property
    def filename(self) -> str:
        return f"{self.name}{self.suffix}"


def answered():
    """The student copy of notebook 11.2 with every answer filled in from the notebook's solution (a copy of its
    own: the cases edit it)."""
    return copy.deepcopy(_answered())


@functools.lru_cache(maxsize=1)
def _answered():
    student, solved = make_student.student_notebook(NOTEBOOK), jupytext.read(NOTEBOOK)
    assert len(student.cells) == len(solved.cells)
    for mine, theirs in zip(student.cells, solved.cells):
        if "exercise" in mine.metadata.get("tags", []):
            mine.source = "".join(line for line in theirs.source.splitlines(keepends=True)
                                  if not (make_student.BEGIN.match(line) or make_student.END.match(line)))
    return student


def _cell_of(nb, function: str) -> int:
    return next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and f"def {function}(" in c.source)


def _answer(nb, function: str) -> str:
    return nb.cells[_cell_of(nb, function)].source


def write(nb) -> bytes:
    return nbformat.writes(nb).encode()


def edited(function: str, *, cell: str | None = None, prefix: str = "", body: str = "") -> bytes:
    """The answered copy, with the cell that defines ``function`` replaced by ``cell``, or with ``prefix`` at the
    top of that cell (before the def) and ``body`` run first inside ``function`` (the rest of the answer follows)."""
    nb = answered()
    i = _cell_of(nb, function)
    source = textwrap.dedent(cell).strip("\n") if cell is not None else nb.cells[i].source
    if body:
        head, _, rest = source.partition('"""')  # the docstring: body goes right after it
        doc, _, code = rest.partition('"""\n')
        source = head + '"""' + doc + '"""\n' + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ") + "\n" + code
    if prefix:
        source = textwrap.dedent(prefix).strip("\n") + "\n\n" + source
    nb.cells[i].source = source
    return write(nb)


def _dependents(function: str) -> list[str]:
    """The exercises whose answers call ``function`` (notebook 11.2's composing exercise calls mask_tokens and
    masked_lm_loss): when it is broken, they are wrong too."""
    nb, found = _answered(), []  # read only: no copy
    for name in NAMES:
        ex = EXERCISES[name]
        if ex.kind == "function" and function not in ex.needs:
            sources = [c.source for c in nb.cells if any(f"def {n}(" in c.source for n in ex.needs)]
            if any(re.search(rf"\b{function}\(", s) for s in sources):
                found.append(name)
    return found


def _expect(dependents=("wrong", ""), **changed) -> dict:
    """Every exercise correct but those ``changed``; an exercise that calls a broken one's function gets
    ``dependents`` (wrong, by default)."""
    expected = dict(ALL_CORRECT)
    for name, (status, _) in changed.items():
        if status != "correct":
            expected.update({dependent: dependents for dependent in _dependents(FUNCTIONS[name])})
    return {**expected, **changed}


def cases() -> list[Case]:
    solved = answered()
    text = write(solved).decode()
    other = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)"),
                                            nbformat.v4.new_code_cell("assert fib(10) == 55")])
    untagged = copy.deepcopy(solved)
    for c in untagged.cells:
        c.metadata.pop("tags", None)
    damaged = text.replace('"cell_type": "code"', '"cell_type": "code",,', 1)
    renamed = _answer(solved, "mask_tokens").replace("def mask_tokens(", "def mask_token(")
    missing = [c for c in solved.cells if "def build_nsp_input(" not in c.source]
    nb_missing = copy.deepcopy(solved)
    nb_missing.cells = missing
    nb_helper = copy.deepcopy(solved)  # a helper in a new cell, added with "+" (JupyterLab gives it no tag)
    at = _cell_of(nb_helper, "masked_lm_loss")
    nb_helper.cells[at].source = "def masked_lm_loss(logits, labels):\n    return _selected_ce(logits, labels)"
    nb_helper.cells.insert(at, nbformat.v4.new_code_cell("def _selected_ce(logits, labels):\n    keep = labels != -100\n"
                                                         "    return F.cross_entropy(logits[keep], labels[keep])"))
    not_defined = "`{}` is not defined: run the cell that defines it"
    return [
        # ------------------------------------------------------------------ files that cannot be graded
        Case("empty", "an empty file", b"", "the file is empty (0 bytes)"),
        Case("truncated", "the notebook cut off halfway (an interrupted upload)", text[: len(text) // 2].encode(),
             "the notebook is cut off"),
        Case("damaged_json", "a notebook with a stray comma (edited by hand)", damaged.encode(),
             "the notebook file is damaged (line"),
        Case("binary", "a zip archive renamed to .ipynb", b"PK\x03\x04\x14\x00\x00\x00\x08\x00\xff\xfe" * 40,
             "the file is not a text file"),
        Case("not_a_notebook", "JSON that is not a notebook", json.dumps({"student": "alice", "answers": [1, 2]}).encode(),
             "the file is JSON but not a Jupyter notebook"),
        Case("other_course", "a notebook of another course", write(other),
             "this notebook holds none of the course's exercises"),
        Case("untagged", "the answers pasted into a new notebook (no cell tags)", write(untagged),
             "no cell of this notebook is tagged `setup` or `exercise`"),
        # ------------------------------------------------------------------ one exercise broken, the others graded
        Case("stub", "the student copy as handed out", write(make_student.student_notebook(NOTEBOOK)),
             {n: ("not attempted", _stub_message(n)) for n in NAMES}),
        Case("os_exit", "os._exit(0) inside mask_tokens", edited("mask_tokens", body="import os\nos._exit(0)"),
             _expect(mlm_masking=("wrong", "the process exited during `mask_tokens` (exit status 0)"))),
        Case("sys_exit", "sys.exit() inside masked_lm_loss", edited("masked_lm_loss", body="import sys\nsys.exit(1)"),
             _expect(mlm_loss=("wrong", "your function masked_lm_loss called sys.exit() or exit()"))),
        Case("infinite_loop", "while True: pass in build_nsp_input", edited("build_nsp_input", body="while True:\n    pass"),
             _expect(nsp_input=("wrong", "timed out after {time_limit} s during `build_nsp_input`"))),
        Case("sleeps", "time.sleep(10**6) in language_probs", edited("language_probs", body="import time\ntime.sleep(10**6)"),
             _expect(language_sampling=("wrong", "stopped after waiting {idle_limit} s during `language_probs` without computing"))),
        Case("stops_the_worker", "language_probs stops the process that relays its answer (SIGSTOP to its parent)",
             edited("language_probs", body="import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)"),
             _expect(language_sampling=("wrong", "stopped after waiting {idle_limit} s during `language_probs` without "
                                                 "computing"))),
        Case("memory", "a list that grows without end in mask_tokens",
             edited("mask_tokens", body="hoard = []\nwhile True:\n    hoard.append(bytearray(10**7))"),
             _expect(mlm_masking=("wrong", "your function mask_tokens used more than {memory}"))),
        Case("tensor_memory", "torch.ones of 40 GB in masked_lm_loss",
             edited("masked_lm_loss", body="big = torch.ones(10**10)"),
             _expect(mlm_loss=("wrong", "your function masked_lm_loss used more than {memory}"))),
        Case("segfault", "a crash in C code (ctypes) in build_nsp_input",
             edited("build_nsp_input", body="import ctypes\nctypes.string_at(0)"),
             _expect(nsp_input=("wrong", "the process crashed during `build_nsp_input` (SIGSEGV)"))),
        Case("keyboard_interrupt", "raise KeyboardInterrupt in language_probs",
             edited("language_probs", body="raise KeyboardInterrupt"),
             _expect(language_sampling=("wrong", "your function language_probs was interrupted (KeyboardInterrupt)"))),
        Case("base_exception", "a BaseException subclass raised in build_nsp_input",
             edited("build_nsp_input", prefix="class Escape(BaseException):\n    pass", body="raise Escape()"),
             _expect(nsp_input=("wrong", "your function build_nsp_input raised Escape"))),
        Case("deletes_globals", "masked_lm_loss empties the notebook's globals, then fails",
             edited("masked_lm_loss", body="globals().clear()"),
             _expect(mlm_loss=("wrong", "your function masked_lm_loss raised NameError"))),
        Case("deletes_import", "a cell deletes F, which masked_lm_loss needs",
             edited("masked_lm_loss", cell=_answer(solved, "masked_lm_loss") + "\n\ndel F"),
             _expect(mlm_loss=("wrong", "your function masked_lm_loss raised NameError: name 'F' is not defined"))),
        Case("patches_hints", "a cell replaces course_lib's comparison so that everything passes",
             edited("language_probs", prefix="import course_lib.exercises.hints as h\nh.close = lambda a, b: True"),
             _expect(language_sampling=("wrong", "the cell that defines `language_probs` replaced "
                                                 "`course_lib.exercises.hints.close`; changing course_lib or torch is not allowed"))),
        Case("patches_registry", "a cell swaps mlm_loss's check in the registry for one that always passes, and "
                                 "masked_lm_loss returns 0 (the registry the grader uses is not the sandbox's)",
             edited("masked_lm_loss", prefix="from course_lib.exercises import EXERCISES\nimport dataclasses\n"
                                           "EXERCISES['mlm_loss'] = dataclasses.replace(EXERCISES['mlm_loss'], run=lambda **k: 'ok')",
                    body="return logits.sum() * 0"),
             _expect(mlm_loss=("wrong", "your loss is 0.0000"))),
        Case("reseeds_global_generator", "mask_tokens reseeds torch's global generator from the one it is given and "
                                         "draws from it: every number right, the state of the notebook's generator not",
             edited("mask_tokens", body="if generator is not None:\n"
                                        "    torch.manual_seed(int(torch.randint(2 ** 62, (1,), generator=generator)))\n"
                                        "generator = None"),
             _expect(mlm_masking=("wrong", "your function changed torch's global random generator (torch.manual_seed, "
                                           "or a draw without generator=)"))),
        Case("forged_gradient", "masked_lm_loss returns the right value as a new tensor that claims to require grad",
             edited("masked_lm_loss", body="keep = labels != -100\n"
                                           "return torch.tensor(F.cross_entropy(logits[keep], labels[keep]).item(), "
                                           "requires_grad=True)"),
             _expect(dependents=("correct", ""),  # the batch's loss is checked by its value, which is right
                     mlm_loss=("wrong", "the loss is not connected to the logits (no gradient would flow)"))),
        Case("rewrites_logits", "masked_lm_loss returns the right value and, when a gradient is asked for, rewrites "
                                "the logits in place so that the gradient of its 0 * sum looks like the reference's",
             edited("masked_lm_loss", body="keep = labels != -100\n"
                                           "value = float(F.cross_entropy(logits[keep].detach().double(), labels[keep]))\n"
                                           "if logits.requires_grad:\n"
                                           "    with torch.no_grad():\n"
                                           "        logits.zero_()\n"
                                           "        logits.scatter_(-1, labels.clamp(min=0)[..., None], 1e4)\n"
                                           "    return torch.tensor(value) + 0 * logits.sum()\n"
                                           "return torch.tensor(value, dtype=logits.dtype)"),
             _expect(dependents=("correct", ""),
                     mlm_loss=("wrong", "masked_lm_loss changed logits in place while its gradient was taken"))),
        Case("patches_torch_in_call", "build_nsp_input replaces torch.equal while being checked",
             edited("build_nsp_input", body="import torch\ntorch.equal = lambda *a: True\nreturn [], []"),
             _expect(nsp_input=("wrong", "your code replaced `torch.equal`; changing course_lib or torch is not allowed"))),
        Case("prints_megabytes", "mask_tokens prints 20 MB before answering (correctly)",
             edited("mask_tokens", body="print('x' * 20_000_000)"), ALL_CORRECT),
        Case("cell_exits", "os._exit(3) at the top of the cell of build_nsp_input",
             edited("build_nsp_input", prefix="import os\nos._exit(3)"),
             _expect(nsp_input=("wrong", "the cell that defines `build_nsp_input` ended the process (exit status 3"))),
        Case("cell_loops", "an endless loop at the top of the cell of masked_lm_loss",
             edited("masked_lm_loss", prefix="while True:\n    pass"),
             _expect(mlm_loss=("wrong", "the cell that defines `masked_lm_loss` timed out after {cell_limit} s, so "
                                        "`masked_lm_loss` was never defined"))),
        Case("cell_sys_exit", "exit() at the top of the cell of language_probs",
             edited("language_probs", prefix="exit()"),
             _expect(language_sampling=("wrong", "the cell that defines `language_probs` called sys.exit() or exit(), "
                                                 "so `language_probs` was never defined"))),
        Case("cell_input", "input() at the top of the cell of language_probs (graded with nobody to type)",
             edited("language_probs", prefix="name = input('Your name? ')"),
             _expect(language_sampling=("wrong", "the cell that defines `language_probs` raised EOFError: EOF when "
                                                 "reading a line"))),
        Case("function_input", "input() inside build_nsp_input", edited("build_nsp_input", body="input('continue? ')"),
             _expect(nsp_input=("wrong", "your function build_nsp_input raised EOFError: EOF when reading a line"))),
        Case("swaps_stdin", "a cell puts a pipe nobody writes to in place of the process's standard input",
             edited("mask_tokens", prefix="import os\n_keep = os.dup(0)\n_r, _w = os.pipe()\nos.dup2(_r, 0)"),
             ALL_CORRECT),
        Case("syntax_error", "a syntax error in the cell of mask_tokens",
             edited("mask_tokens", cell=_answer(solved, "mask_tokens").replace("return corrupted, labels", "return corrupted, labels)")),
             _expect(mlm_masking=("wrong", "the cell that defines `mask_tokens` raised SyntaxError: unmatched ')'"))),
        Case("missing_package", "the cell of language_probs imports a package that is not installed",
             edited("language_probs", prefix="import scipy_special_extra"),
             _expect(language_sampling=("wrong", "the cell that defines `language_probs` imports `scipy_special_extra`, "
                                                 "which is not installed where notebooks are graded"))),
        Case("returns_lists", "mask_tokens returns its tensors as Python lists (.tolist()): 200,000 numbers and more",
             edited("mask_tokens", cell=_answer(solved, "mask_tokens").replace(
                 "return corrupted, labels", "return corrupted.tolist(), labels.tolist()")),
             _expect(mlm_masking=("wrong", "your function mask_tokens returned a tuple too large to check: more than "
                                           "200,000 values: return tensors where tensors are asked for"))),
        Case("renamed", "mask_tokens renamed to mask_token", edited("mask_tokens", cell=renamed),
             _expect(mlm_masking=("not attempted", "`mask_tokens` is not defined: run the cell that defines it (and keep "
                                                   "the name `mask_tokens`); your notebook defines `mask_token`: did you rename it?"))),
        Case("missing", "the cell of build_nsp_input deleted", write(nb_missing),
             _expect(nsp_input=("not attempted", not_defined.format("build_nsp_input")))),
        Case("helper_in_new_cell", "masked_lm_loss calls a helper defined in a new, untagged cell", write(nb_helper),
             _expect(mlm_loss=("wrong", "raised NameError: name '_selected_ce' is not defined (`_selected_ce` is "
                                        "defined in a cell that is not tagged `setup` or `exercise`, and only those "
                                        "are graded"))),
        Case("library_own", "masked_lm_loss imported from course_lib instead of written",
             edited("masked_lm_loss", cell="from course_lib.pretraining.masking import masked_lm_loss"),
             _expect(dependents=("correct", ""),  # what calls it gets the library's masked_lm_loss
                     mlm_loss=("wrong", "`masked_lm_loss` is course_lib's own `course_lib.pretraining.masking.masked_lm_loss`"))),
        Case("wrong_type", "language_probs returns a list", edited("language_probs", body="return [0.5, 0.5]"),
             _expect(language_sampling=("wrong", "language_probs should return a tensor, got a list"))),
        Case("wrong_shape", "masked_lm_loss returns one loss per position", edited("masked_lm_loss", cell="""\
             def masked_lm_loss(logits, labels):
                 return F.cross_entropy(logits.transpose(1, 2), labels, reduction="none")"""),
             _expect(mlm_loss=("wrong", "masked_lm_loss should return a scalar, got shape (3, 7)"))),
        Case("nan", "language_probs divides by zero (NaN)", edited("language_probs", body="return torch.as_tensor(p) * float('nan')"),
             _expect(language_sampling=("wrong", "q contains NaN"))),
        Case("inf", "masked_lm_loss returns inf", edited("masked_lm_loss", body="return torch.tensor(float('inf'))"),
             _expect(mlm_loss=("wrong", "your loss is inf, expected 5.0864"))),
        Case("fills_disk", "language_probs asks for a 2 GB file in /tmp and one in its folder (the sandbox's /tmp is "
                           "memory), and fails loudly if it gets either",
             edited("language_probs", body="import os\n"
                                           "for where in ('/tmp/fill', 'fill'):\n"
                                           "    fd = os.open(where, os.O_CREAT | os.O_WRONLY)\n"
                                           "    try:\n"
                                           "        os.posix_fallocate(fd, 0, 2 * 2**30)\n"
                                           "    except OSError:\n"
                                           "        continue\n"
                                           "    finally:\n"
                                           "        os.close(fd)\n"
                                           "        os.remove(where)\n"
                                           "    raise RuntimeError(f'got 2 GB at {where}')"), ALL_CORRECT),
        Case("writes_files", "a cell overwrites and deletes every notebook in its folder",
             edited("build_nsp_input", prefix="import glob, os\nfor f in glob.glob('*.ipynb') + glob.glob('../*.ipynb'):\n"
                                            "    open(f, 'w').write('hacked')\n    os.remove(f)"), ALL_CORRECT),
    ]
