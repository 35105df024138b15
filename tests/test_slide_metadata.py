"""Slides (issue 17, item 5): every notebook carries the slide metadata of tools/slide_metadata.py's rule,
in its .py, its .ipynb and its student copy; exercise and setup cells are never skipped; and Space, pressed from
the first slide, shows every cell (tools/deck_navigation.py: jupyterlab-deck's navigation, ported)."""
from __future__ import annotations

import sys
from pathlib import Path

import jupytext
import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import deck_navigation  # noqa: E402
import make_notebooks  # noqa: E402
import make_student  # noqa: E402
import slide_metadata  # noqa: E402

SOURCES = slide_metadata.sources()
TYPES = {"slide", "subslide", "fragment", "skip"}


def _slides(nb) -> list[str | None]:
    return [c.metadata.get("slideshow", {}).get("slide_type") for c in nb.cells]


def test_there_are_notebooks():
    assert len(SOURCES) >= 8


@pytest.mark.parametrize("py", SOURCES, ids=[p.stem for p in SOURCES])
def test_every_notebook_has_the_rules_slide_metadata(py):
    text = py.read_text()
    assert slide_metadata.apply(text) == text, f"run `python tools/slide_metadata.py` ({py.name} differs from the rule)"
    nb = jupytext.read(py)
    types = _slides(nb)
    assert types[0] == "slide" and types.count("slide") >= 2
    assert set(types) - {None} <= TYPES
    assert nb.metadata["rise"] == slide_metadata.RISE
    # every section heading opens a slide, every sub-heading a subslide
    for cell, kind in zip(nb.cells, types):
        if cell.cell_type == "markdown" and cell.source.startswith("## "):
            assert kind == "slide", cell.source.splitlines()[0]
    for i, (cell, kind) in enumerate(zip(nb.cells, types)):
        if cell.cell_type == "markdown" and cell.source.startswith("### "):
            after = nb.cells[i + 1] if i + 1 < len(nb.cells) else None  # two subslides in a row: the first a slide
            alone = after is not None and (after.source.startswith("### ") if after.cell_type == "markdown"
                                           else bool(slide_metadata.WIDGET_CALL.search(after.source)))
            assert kind == ("slide" if alone else "subslide"), cell.source.splitlines()[0]


@pytest.mark.parametrize("py", SOURCES, ids=[p.stem for p in SOURCES])
def test_space_from_the_first_slide_shows_every_cell(py):
    """A lecturer presses Space through the deck: no cell (a widget, an exercise) may be jumped over. Before the
    two-subslides rule, Space skipped 11.2's mask sampler, 20 cells of 11.3 (its anisotropy exercise and explorer)
    and 16 of 11.4b."""
    types = deck_navigation.slide_types(jupytext.read(py))
    assert deck_navigation.never_shown(types) == []
    walk = deck_navigation.space_walk(types)
    assert walk == sorted(walk) and len(walk) >= types.count("slide") + types.count("subslide")


def test_the_deck_port_jumps_where_deck_jumps():
    """deck's quirk, on made-up slide types: a subslide of one cell followed by a subslide is never shown, nor
    what lies between the slide and it; the rule's types (the first of the two a slide) show every cell."""
    raw = ["slide", None, "subslide", None, "fragment", "subslide", "subslide", None]
    assert deck_navigation.never_shown(raw) == [2, 3, 4, 5]
    assert deck_navigation.space_walk(raw) == [0, 1, 6, 7]
    fixed = ["slide", None, "subslide", None, "fragment", "slide", "subslide", None]
    assert deck_navigation.never_shown(fixed) == []
    assert deck_navigation.space_walk(fixed) == list(range(8))
    assert deck_navigation.never_shown(["slide", "skip", "subslide", None]) == []  # skipped cells are not counted
    assert deck_navigation.go(deck_navigation.extents(["slide", None]), 1, "down", "forward") is None  # the end


@pytest.mark.parametrize("py", SOURCES, ids=[p.stem for p in SOURCES])
def test_no_exercise_setup_or_check_cell_is_skipped(py):
    for i, cell in enumerate(jupytext.read(py).cells):
        if cell.metadata.get("slideshow", {}).get("slide_type") == "skip":
            assert not set(cell.metadata.get("tags", [])) & {"exercise", "setup"}, f"{py.name} cell {i}"
            assert "check(" not in cell.source and "# claim:" not in cell.source, f"{py.name} cell {i}"


@pytest.mark.parametrize("py", SOURCES, ids=[p.stem for p in SOURCES])
def test_generated_notebook_and_student_copy_keep_the_slides(py):
    ipynb = nbformat.read(py.with_suffix(".ipynb"), as_version=4)
    assert not make_notebooks.out_of_sync(py), "run `python tools/make_notebooks.py`"
    source = jupytext.read(py)
    assert _slides(ipynb) == _slides(source)
    assert ipynb.metadata.get("rise") == slide_metadata.RISE
    if make_student.has_solutions(py.read_text()):
        student = make_student.student_notebook(py)
        assert _slides(student) == _slides(source)
        assert student.metadata.get("rise") == slide_metadata.RISE


HEADER = ("# ---\n# jupyter:\n#   jupytext:\n#     formats: ipynb,py:percent\n#   kernelspec:\n"
          "#     display_name: Python 3\n#     language: python\n#     name: python3\n# ---\n\n")


def test_the_rule_on_a_made_up_notebook():
    helper = "def f(x):\n" + "    x = x + 1\n" * (slide_metadata.HELPER_LINES) + "    return x\n"
    text = HEADER + "\n\n".join([
        "# %% [markdown]\n# # Title",
        "# %%\nimport math\nmath.pi",
        "# %% [markdown]\n# What pi looks like.",  # after code: fragment
        "# %% [markdown]\n# More prose.",  # after markdown: continues
        "# %% [markdown]\n# ## 1. A section",
        "# %% [markdown]\n# ### Exercise `x`",
        '# %% tags=["exercise"]\n' + helper,  # a helper, but an exercise: never skipped
        "# %%\n" + helper,  # a long helper showing nothing: skipped
        '# %% tags=["setup"]\n' + helper,
        "# %%\ndef g():\n    return 1\n",  # short: shown
        '# %% [markdown] slideshow={"slide_type": "skip"}\n# Wrongly skipped before: the rule decides (after code: a fragment).',
        "# %%\nfrom course_lib.widgets import AttentionExplorer\n\nAttentionExplorer(model, tokenizer)",  # a widget
        "# %% [markdown]\n# Drag the slider.",  # after code: a fragment
    ]) + "\n"
    out = slide_metadata.apply(text)
    assert slide_metadata.apply(out) == out  # idempotent
    nb = jupytext.reads(out, fmt="py:percent")
    assert _slides(nb) == ["slide", None, "fragment", None, "slide", "subslide", None, "skip", None, None, "fragment",
                           "subslide", "fragment"]
    assert slide_metadata.WIDGET_CALL.search("import course_lib.widgets.AttentionExplorer") is None
    assert nb.cells[6].metadata["tags"] == ["exercise"] and nb.cells[8].metadata["tags"] == ["setup"]
    assert [c.source for c in nb.cells] == [c.source for c in jupytext.reads(text, fmt="py:percent").cells]
    assert nb.metadata["rise"] == slide_metadata.RISE
    assert nb.metadata["jupytext"]["notebook_metadata_filter"] == "rise"


def test_check_mode_reports_a_drifted_source(tmp_path, capsys):
    bad = tmp_path / "nb.py"
    bad.write_text(HEADER + "# %% [markdown]\n# # Title\n")
    assert slide_metadata.main(["--check", str(bad)]) == 1
    assert "differs from the rule" in capsys.readouterr().out
    assert slide_metadata.main([str(bad)]) == 0
    assert slide_metadata.main(["--check", str(bad)]) == 0


def test_two_subslides_in_a_row_make_the_first_a_slide():
    widget = "# %%\nfrom course_lib.widgets import MaskSampler\n\nMaskSampler(tokenizer, unigram)"
    text = HEADER + "\n\n".join([
        "# %% [markdown]\n# # Title", "# %% [markdown]\n# ### The sampler", widget,
        "# %% [markdown]\n# ### Exercise `x`", "# %%\nx = 1",
    ]) + "\n"
    types = _slides(jupytext.reads(slide_metadata.apply(text), fmt="py:percent"))
    assert types == ["slide", "slide", "slide", "subslide", None]
    assert deck_navigation.never_shown(types) == []
