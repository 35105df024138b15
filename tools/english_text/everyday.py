"""Everyday modern English, the register course-bert v2 is thinnest in (its card: *fridge* 5 times in 10 M words):
students' chat conversations, and the example sentences of two dictionaries (WordNet, Ding).

Each extractor takes the unpacked roots (in the order of the Source's packages) and yields paragraphs.
Example sentences come in runs of ``EXAMPLES_PER_PARAGRAPH`` in the file's order (one sentence alone is
under the builder's minimum of words)."""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from .base import Source
from .fetch import Package
from .registries import _URL  # URLs and e-mail addresses, as the e-mails source removes them

EXAMPLES_PER_PARAGRAPH = 8
_LETTER = re.compile(r"[A-Za-z]")


def _sentence(text: str) -> str:
    """``text`` with whitespace collapsed and a full stop added when it ends without one."""
    text = " ".join(text.split())
    return text if not text or text[-1] in ".?!\"')" else text + "."


def _runs(sentences: Iterable[str], n: int = EXAMPLES_PER_PARAGRAPH) -> Iterator[str]:
    run: list[str] = []
    for s in sentences:
        run.append(s)
        if len(run) == n:
            yield " ".join(run)
            run = []
    if run:
        yield " ".join(run)


# ----------------------------------------------------------------------------- BYU chit-chat conversations

def chitchat(roots: list[Path]) -> Iterator[str]:
    """Each conversation as one paragraph: its turns in order, a turn being one sender's consecutive messages;
    URLs and e-mail addresses removed, turns without a letter dropped."""
    data = json.loads((roots[0] / "chitchat_dataset" / "dataset.json").read_text(encoding="utf-8"))
    for key in sorted(data):
        turns = []
        for turn in data[key].get("messages") or []:
            text = " ".join(_URL.sub("", str(m.get("text") or "")).strip() for m in turn if isinstance(m, dict))
            if _LETTER.search(text):
                turns.append(_sentence(text))
        if turns:
            yield " ".join(turns)


# ----------------------------------------------------------------------------- WordNet 3.0 usage examples

WORDNET_DIR = "usr/share/wordnet"


def wordnet_examples(roots: list[Path]) -> Iterator[str]:
    """The quoted usage examples of every synset (``data.noun``, ``.verb``, ``.adj``, ``.adv``: the ``"..."``
    parts of the gloss after `` | ``), each once, capitalised, in runs of EXAMPLES_PER_PARAGRAPH."""
    def examples():
        seen = set()
        for pos in ("noun", "verb", "adj", "adv"):
            with open(roots[0] / WORDNET_DIR / f"data.{pos}", encoding="latin-1") as f:
                for line in f:
                    if line.startswith("  ") or " | " not in line:  # the licence header
                        continue
                    for q in re.findall(r'"([^"]+)"', line.split(" | ", 1)[1]):
                        q = " ".join(q.split())
                        if len(q.split()) >= 2 and q.lower() not in seen:
                            seen.add(q.lower())
                            yield _sentence(q[:1].upper() + q[1:])
    yield from _runs(examples())


# ----------------------------------------------------------------------------- Ding (German-English) examples

DING_FILE = "usr/share/trans/de-en"
_DING_LABEL = re.compile(r"\[[^\]]*\]|\{[^}]*\}|/[A-Z][A-Za-z0-9.]*/")


def ding_sentences(roots: list[Path]) -> Iterator[str]:
    """The English side of the Ding dictionary (after ``::``; alternatives split at ``|`` and ``;``, labels such
    as ``[Br.]``, ``{n}``, ``/IMP/`` removed), keeping only whole sentences -- a capital first, ``.``, ``!`` or
    ``?`` last, at least 3 words: its usage examples -- each once, in runs of EXAMPLES_PER_PARAGRAPH."""
    def sentences():
        seen = set()
        with open(roots[0] / DING_FILE, encoding="utf-8") as f:
            for line in f:
                if line.startswith("#") or "::" not in line:
                    continue
                for part in re.split(r"[|;]", line.split("::", 1)[1]):
                    s = " ".join(_DING_LABEL.sub(" ", part).split())
                    if (len(s.split()) >= 3 and re.match(r"^[\"'(]?[A-Z]", s) and re.search(r"[.!?][\"')]?$", s)
                            and s not in seen):
                        seen.add(s)
                        yield s
    yield from _runs(sentences())


SOURCES: list[Source] = [
    Source("chitchat", "BYU PCC chit-chat conversations (2018)", (Package("pypi", "chitchat-dataset", "0.9.0"),),
           "MIT (package licence file)", "conversational", chitchat,
           licence_files=("chitchat_dataset-0.9.0.dist-info/LICENSE", "chitchat_dataset-0.9.0.dist-info/METADATA"),
           note="7,168 typed conversations between students on a prompt; each conversation one paragraph, turns in "
                "order; URLs and e-mail addresses removed."),
    Source("wordnet-examples", "WordNet 3.0 usage examples", (Package("debian", "wordnet-base"),),
           "WordNet 3.0 licence (permissive, notice kept)", "example-sentences", wordnet_examples,
           licence_files=("usr/share/doc/wordnet-base/copyright",),
           note="The quoted examples of the glosses (\"the dog barked all night\"), capitalised, in runs of 8; "
                "the definitions are not used (GCIDE is the dictionary text)."),
    Source("ding-examples", "Ding German-English dictionary: English example sentences",
           (Package("debian", "trans-de-en"),), "GPL-2+", "example-sentences", ding_sentences,
           licence_files=("usr/share/doc/trans-de-en/copyright",),
           note="The English side's whole sentences (capital first, final punctuation, >= 3 words), labels removed, "
                "in runs of 8; words and phrases dropped."),
]
