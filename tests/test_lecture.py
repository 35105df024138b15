"""The lecture preset (tools/lecture.py): the notebook executed beforehand into notebooks/lecture/ (outputs there,
reused while up to date, a failing cell stops it with its error), presenting settings with large fonts, and a
notebook named by the start of its name."""
import json
import sys

import nbformat
import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import lecture  # noqa: E402


def _notebook(path, *sources):
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources]), path)
    return path


def test_a_notebook_is_found_by_the_start_of_its_name(tmp_path):
    for stem in ("11_1_bidirectional_encoders", "11_1b_subword_tokenization", "11_2_masked_language_modeling"):
        _notebook(tmp_path / f"{stem}.ipynb", "1")
    assert lecture.find_notebook("11_2", tmp_path).stem == "11_2_masked_language_modeling"
    assert lecture.find_notebook("11_1b", tmp_path).stem == "11_1b_subword_tokenization"
    # a section's number names its notebook, though it also starts 11_1b's name; with a dot as in the chapter too
    assert lecture.find_notebook("11_1", tmp_path).stem == "11_1_bidirectional_encoders"
    assert lecture.find_notebook("11.1", tmp_path).stem == "11_1_bidirectional_encoders"
    with pytest.raises(SystemExit, match="'11_' names 3 notebooks"):
        lecture.find_notebook("11_", tmp_path)
    with pytest.raises(SystemExit, match="no notebook called '12'.*11_2_masked_language_modeling"):
        lecture.find_notebook("12", tmp_path)
    assert lecture.find_notebook("11_4a", ROOT / "notebooks").name == "11_4a_sentence_classification.ipynb"


def test_the_notebook_is_executed_beforehand_and_reused_while_up_to_date(tmp_path):
    source = _notebook(tmp_path / "demo.ipynb", "x = 6 * 7\nx", "print('ready')")
    copy, what = lecture.prepare(source, tmp_path / "lecture")
    assert what.startswith("executed in") and copy == tmp_path / "lecture" / "demo.ipynb"
    cells = nbformat.read(copy, as_version=4).cells
    assert cells[0].outputs[0]["data"]["text/plain"] == "42" and cells[1].outputs[0]["text"] == "ready\n"
    assert nbformat.read(source, as_version=4).cells[0].outputs == []  # the notebook itself is untouched
    assert lecture.prepare(source, tmp_path / "lecture")[1].startswith("up to date")
    assert lecture.prepare(source, tmp_path / "lecture", again=True)[1].startswith("executed in")


def test_a_failing_cell_stops_the_preparation_with_its_error(tmp_path):
    source = _notebook(tmp_path / "broken.ipynb", "1 / 0")
    with pytest.raises(SystemExit, match="broken.ipynb stopped at a cell that failed, so it is not ready to present: ZeroDivisionError: division by zero"):
        lecture.prepare(source, tmp_path / "lecture")
    assert not (tmp_path / "lecture" / "broken.ipynb").exists()


def test_the_presenting_settings_are_large_fonts_in_their_own_folder(tmp_path):
    written = lecture.write_settings(tmp_path, 24)
    themes = json.loads((tmp_path / "@jupyterlab/apputils-extension/themes.jupyterlab-settings").read_text())
    assert themes["overrides"] == {"code-font-size": "24px", "content-font-size1": "24px", "ui-font-size1": "20px"}
    assert all(p.is_relative_to(tmp_path) for p in written)
    with pytest.raises(SystemExit):
        lecture.main(["11_2", "--font", "200"])
