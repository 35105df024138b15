"""course_lib.paths: gensim's test data found without importing gensim (or a message that says what to install or
what is missing); cache files written whole or not at all, whoever else writes them at the same time."""
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


def test_a_cache_file_is_written_whole_or_not_at_all(tmp_path):
    import threading

    import numpy as np

    from course_lib.paths import written_whole

    target = tmp_path / "coords.npy"
    with written_whole(target) as tmp:
        assert tmp.parent == tmp_path and tmp.suffix == ".npy" and tmp != target
        np.save(tmp, np.arange(3))   # np.save keeps a name that ends in .npy as it is
        assert not target.exists()   # nothing at the final name until the file is complete
    assert np.load(target).tolist() == [0, 1, 2] and sorted(tmp_path.iterdir()) == [target]
    with pytest.raises(RuntimeError), written_whole(target) as tmp:
        tmp.write_bytes(b"half a fi")
        raise RuntimeError("the writer failed")
    assert np.load(target).tolist() == [0, 1, 2] and sorted(tmp_path.iterdir()) == [target]  # the old file stays

    # two writers of the same file at once: each writes under its own name, the file ends as one of them, whole
    def write(value):
        with written_whole(target) as tmp:
            np.save(tmp, np.full(200_000, value))

    threads = [threading.Thread(target=write, args=(v,)) for v in (1, 2, 3, 4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    data = np.load(target)
    assert len(data) == 200_000 and len(set(data.tolist())) == 1 and sorted(tmp_path.iterdir()) == [target]
