"""The everyday-English extractors (chit-chat, WordNet and Ding examples) on tiny fake package roots, and the
builder's guard that keeps the everyday cloze sentences out of the training text."""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import build_english_text as B  # noqa: E402
from english_text.base import REGISTERS  # noqa: E402
from english_text.everyday import SOURCES, chitchat, ding_sentences, wordnet_examples  # noqa: E402


def _write(path: Path, text: str, encoding: str = "utf-8") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding=encoding)


def test_chitchat_gives_a_conversation_a_paragraph_turns_in_order(tmp_path):
    msg = lambda text, who: {"text": text, "timestamp": "2018-05-02T19:38:15Z", "sender": who}  # noqa: E731
    data = {"b-second": {"messages": [[msg("hi there", "x")], [msg("hello", "y"), msg("how are you?", "y")]],
                         "prompt": "p"},
            "a-first": {"messages": [[msg("Mail me at joe@example.com or see https://x.org/a today", "x")],
                                     [msg("??? :)", "y")], [msg("Sure thing!", "y")]], "prompt": "p"},
            "c-empty": {"messages": [[msg("...", "x")]], "prompt": "p"}}
    _write(tmp_path / "chitchat_dataset/dataset.json", json.dumps(data))
    assert list(chitchat([tmp_path])) == [
        "Mail me at or see today. Sure thing!",         # sorted by key; URL and address gone; '??? :)' has no letter
        "hi there. hello how are you?"]                  # one sender's consecutive messages are one turn


def test_wordnet_examples_are_the_quoted_parts_of_glosses_each_once_in_runs(tmp_path):
    header = "  1 This software and database is being provided to you, the LICENSEE, by Princeton University\n"
    noun = (header + '02084071 05 n 03 dog 0 domestic_dog 0 Canis_familiaris 0 023 @ 02083346 n 0000 | a member of '
            'the genus Canis; "the dog barked all night"\n'
            '02084072 05 n 01 bark 0 000 | a noise; "the dog barked all night"; "a loud bark"; "woof"\n')
    _write(tmp_path / "usr/share/wordnet/data.noun", noun, encoding="latin-1")
    verb = "".join(f'0{i:07d} 29 v 01 run 0 000 | move fast; "she runs number {i} fast!"\n' for i in range(9))
    _write(tmp_path / "usr/share/wordnet/data.verb", verb)
    for pos in ("adj", "adv"):
        _write(tmp_path / f"usr/share/wordnet/data.{pos}", header)
    got = list(wordnet_examples([tmp_path]))
    assert got[0] == ("The dog barked all night. A loud bark. She runs number 0 fast! She runs number 1 fast! "
                      "She runs number 2 fast! She runs number 3 fast! She runs number 4 fast! She runs number 5 fast!")
    assert got[1:] == ["She runs number 6 fast! She runs number 7 fast! She runs number 8 fast!"]  # 'woof': one word


def test_ding_keeps_the_english_sentences_without_labels(tmp_path):
    lines = ["# Version :: devel 2023-01-30", "# License :: GPL Version 2 or later",
             "Hund {m} | Der Hund bellt. :: dog | The dog barks. [Br.]",
             "laufen {vi} | Er läuft schnell. :: to run | He runs fast.; He runs fast.",
             "Umzug {m} :: move; relocation [Am.]",
             "Hilfe {f} | Hilf mir! :: help | Help me!"]
    _write(tmp_path / "usr/share/trans/de-en", "\n".join(lines) + "\n")
    assert list(ding_sentences([tmp_path])) == ["The dog barks. He runs fast."]  # 'Help me!' has 2 words


def test_the_sources_are_complete():
    assert [s.name for s in SOURCES] == ["chitchat", "wordnet-examples", "ding-examples"]
    for s in SOURCES:
        assert s.register in REGISTERS and s.licence and s.licence_files and s.packages, s.name
    assert {s.name for s in SOURCES} <= {s.name for s in B.all_sources()}


def test_a_piece_holding_a_cloze_sentence_filled_with_an_answer_is_dropped():
    guard = B.ClozeGuard([{"text": "The [MASK] barked at the moon.", "answers": ["dog", "fox"]}])
    assert "Last night the Dog barked at the moon, again." in guard
    assert "We heard that the fox barked at the moon" in guard
    assert "The dog barked at the sun." not in guard and "The cat barked at the moon." not in guard
    assert B.keep("Last night the dog barked at the moon, again and again.", guard) == "cloze"
    assert B.keep("Last night the cat barked at the moon, again and again.", guard) is None


def test_the_course_guard_holds_every_dev_and_test_sentence():
    from course_lib.pretraining.everyday import everyday_cloze

    guard = B.ClozeGuard.from_course()
    for it in everyday_cloze("dev") + everyday_cloze("test"):
        for a in it["answers"]:
            assert "So " + it["text"].replace("[MASK]", a.upper()) + " Yes." in guard, (it["text"], a)
