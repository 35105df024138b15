"""tools/make_student.py: solutions become stubs, nothing of them survives, a student's copy is never lost."""
import re
import sys

import jupytext
import nbformat
import pytest

from conftest import ROOT, solution_lines

sys.path.insert(0, str(ROOT / "tools"))
import make_student  # noqa: E402

SOLVED = make_student.sources()  # the notebooks with exercises
SOURCE = ROOT / "notebooks" / "11_1_bidirectional_encoders.py"  # only read
TARGET = f"{SOURCE.stem}.ipynb"
STUB = make_student.STUB
PREDICTION = re.escape(make_student.PREDICTION_STUB).replace(re.escape("{name}"), r"\w+")
STUBS = re.compile(rf"^[ \t]*{re.escape(STUB)}$|(?:^{PREDICTION}\n?)+", re.MULTILINE)  # one match per block


def _first_cell(nb, has) -> int:
    return next(i for i, c in enumerate(nb.cells) if has(c))


def test_a_solution_block_becomes_a_stub_at_its_indentation():
    source = "def f(x):\n    \"\"\"doc\"\"\"\n    ### BEGIN SOLUTION\n    y = x + 1\n    return y\n    ### END SOLUTION\n\n" \
             "### BEGIN SOLUTION\nz = 3\n### END SOLUTION\nprint(z)\n"
    assert make_student.strip_solutions(source) == (f"def f(x):\n    \"\"\"doc\"\"\"\n    {STUB}\n\n"
                                                    f"{make_student.PREDICTION_STUB.format(name='z')}\nprint(z)\n")


def test_a_prediction_keeps_its_name_set_to_ellipsis_and_other_top_level_code_becomes_the_stub():
    prediction = "### BEGIN SOLUTION\nguess = 'first'\nsecond_guess = 3  # why\n### END SOLUTION\n"
    assert make_student.strip_solutions(prediction) == "guess = ...  # your prediction: replace ... with one of the choices\n" \
        "second_guess = ...  # your prediction: replace ... with one of the choices\n"
    code = "### BEGIN SOLUTION\nguess = compute()\nprint(guess)\n### END SOLUTION\n"
    assert make_student.strip_solutions(code) == f"{STUB}\n"
    namespace = {}
    exec(make_student.strip_solutions(prediction), namespace)
    assert namespace["guess"] is Ellipsis


@pytest.mark.parametrize("text, message", [
    ("x = 1\n    ### BEGIN SOLUTION\n    y = 2\n", "nb.py:2: '### BEGIN SOLUTION' has no matching '### END SOLUTION'"),
    ("### END SOLUTION\n", "nb.py:1: '### END SOLUTION' without a '### BEGIN SOLUTION' before it"),
    ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n", "nb.py:2: a new '### BEGIN SOLUTION' before the '### END SOLUTION' "
                                                 "of the block opened on line 1"),
])
def test_a_broken_marker_names_the_file_and_line(text, message):
    with pytest.raises(make_student.SolutionMarkerError) as err:
        make_student.strip_solutions(text, "nb.py")
    assert str(err.value) == message


def test_the_command_line_reports_a_broken_marker_and_writes_nothing(tmp_path, capsys):
    source = tmp_path / "nb.py"
    source.write_text('# %% tags=["exercise"]\ndef f():\n    ### BEGIN SOLUTION\n    return 1\n')
    assert make_student.main(["--out", str(tmp_path / "out"), str(source)]) == 1
    assert f"{source}:3: '### BEGIN SOLUTION' has no matching '### END SOLUTION'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("source", SOLVED, ids=[p.stem for p in SOLVED])
def test_the_generated_version_keeps_the_cells_and_drops_every_solution(source, tmp_path):
    assert make_student.main(["--out", str(tmp_path), str(source)]) == 0
    generated = tmp_path / f"{source.stem}.ipynb"
    text = generated.read_text()
    assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text
    nb, solved = nbformat.read(generated, as_version=4), jupytext.read(source)
    code = "\n".join(c.source for c in nb.cells)
    leaked = [line for line in solution_lines(source.read_text()) if line in code]
    assert not leaked, f"solution text in the student's notebook: {leaked}"
    assert [(c.cell_type, c.metadata.get("tags")) for c in nb.cells] == \
           [(c.cell_type, c.metadata.get("tags")) for c in solved.cells]
    assert re.findall(r'check\("\w+"\)', code) == re.findall(r'check\("\w+"\)', source.read_text())
    # one stub per solution block: the NotImplementedError line, or a prediction's `name = ...` line(s)
    assert len(STUBS.findall(code)) == source.read_text().count("### BEGIN SOLUTION")
    assert nb.metadata["jupytext"] == {"formats": "ipynb"}  # not paired: saving it writes no .py


def test_an_edited_copy_is_kept_unless_forced_and_then_backed_up(tmp_path, capsys):
    out = tmp_path / "student"
    args = ["--out", str(out), str(SOURCE)]
    source_before = SOURCE.read_bytes()
    assert make_student.main(args) == 0
    target = out / TARGET
    assert f"{TARGET}: written" in capsys.readouterr().out

    nb = nbformat.read(target, as_version=4)
    answered = _first_cell(nb, lambda c: STUB in c.source)
    nb.cells[answered].source = nb.cells[answered].source.replace(STUB, "return 42  # my answer")
    nbformat.write(nb, target)
    edited = target.read_text()
    assert make_student.main(args) == 0
    said = capsys.readouterr().out
    assert "kept your edited copy" in said and f"{TARGET}; use --force to replace it" in said
    assert target.read_text() == edited

    assert make_student.main(["--force", *args]) == 0
    assert "replaced (your old copy is" in capsys.readouterr().out
    backups = list(out.glob(f"{TARGET}.bak-*"))
    assert len(backups) == 1 and re.fullmatch(re.escape(TARGET) + r"\.bak-\d{8}-\d{6}", backups[0].name)
    assert backups[0].read_text() == edited
    assert STUB in nbformat.read(target, as_version=4).cells[answered].source and "my answer" not in target.read_text()
    assert SOURCE.read_bytes() == source_before


def test_a_kept_copy_is_reported(tmp_path, capsys):
    out = tmp_path / "student"
    make_student.main(["--out", str(out), str(SOURCE)])
    target = out / TARGET
    nb = nbformat.read(target, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("print('my notes')"))
    nbformat.write(nb, target)
    capsys.readouterr()
    make_student.main(["--out", str(out), str(SOURCE)])
    assert capsys.readouterr().out.strip().endswith("; use --force to replace it")
    assert "my notes" in target.read_text()


def test_a_copy_that_was_only_run_is_up_to_date_and_keeps_its_outputs(tmp_path, capsys):
    out = tmp_path / "student"
    make_student.main(["--out", str(out), str(SOURCE)])
    target = out / TARGET
    nb = nbformat.read(target, as_version=4)
    nb.cells[_first_cell(nb, lambda c: c.cell_type == "code")].outputs = [nbformat.v4.new_output("stream", text="ran\n")]
    nbformat.write(nb, target)
    capsys.readouterr()
    make_student.main(["--out", str(out), str(SOURCE)])
    assert capsys.readouterr().out.strip().endswith(f"{TARGET}: up to date")
    assert "ran\\n" in target.read_text()


def test_the_same_source_always_gives_the_same_file(tmp_path):
    for out in ("a", "b"):
        make_student.main(["--out", str(tmp_path / out), str(SOURCE)])
    assert (tmp_path / "a" / TARGET).read_bytes() == (tmp_path / "b" / TARGET).read_bytes()


def test_by_default_only_notebooks_with_solutions_are_used(tmp_path):
    (tmp_path / "with.py").write_text("# %%\ndef f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION\n")
    (tmp_path / "without.py").write_text("# %%\nx = 1  # mentions ### BEGIN SOLUTION only inside a line\n")
    assert make_student.sources(tmp_path) == [tmp_path / "with.py"]
