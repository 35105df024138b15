"""course_lib.paths.gensim_test_data: gensim's test data found without importing gensim, or a message that says what
to install or what is missing."""
from __future__ import annotations

import importlib.util

import pytest

from course_lib.paths import gensim_test_data


def test_the_similarity_sets_and_the_lee_corpus_are_found_without_importing_gensim():
    import sys

    had = "gensim" in sys.modules
    for name in ("wordsim353.tsv", "simlex999.txt", "lee_background.cor", "lee.cor"):
        assert gensim_test_data(name).stat().st_size > 5_000, name
    assert ("gensim" in sys.modules) == had


def test_a_missing_file_or_a_missing_gensim_is_named(monkeypatch):
    with pytest.raises(FileNotFoundError, match="no-such.txt is missing from the installed gensim"):
        gensim_test_data("no-such.txt")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModuleNotFoundError, match="come with gensim's test data: `pip install gensim`"):
        gensim_test_data("lee.cor")
