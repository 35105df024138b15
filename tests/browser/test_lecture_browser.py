"""The lecture preset (issue 24, item 2) in Chromium: a notebook prepared by tools/lecture.py opens with its outputs
already there and with the presenting settings applied (the fonts JupyterLab computes are the preset's)."""
from __future__ import annotations

import sys

import nbformat
import pytest

from . import jupyterlab as jl
from .conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import lecture  # noqa: E402

pytestmark = pytest.mark.slow


def test_a_prepared_notebook_opens_with_its_outputs_and_large_fonts(tmp_path, browser):
    source = tmp_path / "source" / "demo.ipynb"
    source.parent.mkdir()
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('prepared ' + str(6 * 7))")],
                                            metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                                     "language": "python"}}), source)
    copy, _ = lecture.prepare(source, tmp_path / "root" / "lecture")
    plugins = {rel.removesuffix(".jupyterlab-settings"): values for rel, values in lecture.settings(22).items()}
    server = jl.JupyterLab(tmp_path / "root", settings=plugins)
    try:
        server.start()
    except RuntimeError as err:
        pytest.fail(str(err), pytrace=False)
    try:
        page = jl.open_notebook(browser, server, "lecture/demo.ipynb")
        page.wait_for_selector(".jp-OutputArea-output:has-text('prepared 42')", timeout=30_000)  # no cell was run
        fonts = page.evaluate("""() => { const s = getComputedStyle(document.body);
            return ['--jp-code-font-size', '--jp-content-font-size1', '--jp-ui-font-size1']
                .map(v => s.getPropertyValue(v).trim()); }""")
        assert fonts == ["22px", "22px", "18px"], fonts
        size = page.evaluate("() => getComputedStyle(document.querySelector('.jp-OutputArea-output pre')).fontSize")
        assert size == "22px", size
        page.context.close()
    finally:
        server.cleanup()
