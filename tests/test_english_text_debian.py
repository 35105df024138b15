"""The Debian text extractors on tiny fake package roots (no network, no fetch)."""
from __future__ import annotations

import gzip
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

from english_text.base import REGISTERS  # noqa: E402
from english_text.debian_text import SOURCES, anarchist_faq, fortunes, jargon  # noqa: E402
from english_text.games import crawl, endless_sky, wesnoth  # noqa: E402


def _write(path: Path, text: str, gz: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())


def test_fortunes(tmp_path):
    folder = tmp_path / "usr/share/games/fortunes"
    _write(folder / "wisdom", "A fool and his money are\nsoon parted.\n\t\t-- Thomas Tusser,\n\t\t   Five Hundred Points\n"
           "%\nNever trust a computer you can't lift. -- Stan Mazor\n%\nI have bones -- many of them -- to pick with you.\n"
           "%\n  ____\n |    |\n |____|  a box\n%\nint main() {\n  return 0;\n}\n%\nBOFH excuse #7:\n\npoor power conditioning "
           "today\n%\n")
    _write(folder / "wisdom.dat", "binary")
    _write(folder / "off/rude", "A rude fortune that must not be read here at all.\n%\n")
    assert list(fortunes([tmp_path])) == [
        "A fool and his money are soon parted.", "Never trust a computer you can't lift.",
        "I have bones -- many of them -- to pick with you.", "poor power conditioning today"]


def test_anarchist_faq(tmp_path):
    md = ("# Section A.1 What is anarchism?\n\nAnarchism is a _political theory_ which aims to create **anarchy**, as\n"
          "[Proudhon](secA1.md \"Go\") put it\\. It opposes all hierarchy.\n\n> _\"Change opinion, convince the public "
          "that\n> government is harmful.\"_ [ **Anarchy** , p. 16]\n\n  * [A.1 What is anarchism?](secA1.md)\n"
          "  * [A.2 What does it stand for?](secA2.md)\n\n  * Workers would manage their own workplaces and elect "
          "their delegates.\n\n| a | b |\n|---|---|\n\n    code = 1\n")
    _write(tmp_path / "usr/share/doc/anarchism/markdown/secA1.md.gz", md, gz=True)
    assert list(anarchist_faq([tmp_path])) == [
        "Anarchism is a political theory which aims to create anarchy, as Proudhon put it. It opposes all hierarchy.",
        "\"Change opinion, convince the public that government is harmful.\" [Anarchy, p. 16]",
        "Workers would manage their own workplaces and elect their delegates."]


def test_jargon(tmp_path):
    text = ("   The Jargon File\n\n   Table of Contents\n\n   :disk farm: n.\n\n   A large room or rooms filled with disk\n"
            "   drives (esp. {washing machine}s).\n\n   :disemvowel: /dis'em·vow'@l/, v.\n\n   [Usenet] Less common "
            "synonym for {splat out}, used of posts.\n\n   See {farm}.\n\n   :ack: interj.\n\n   1. Acknowledge. Used "
            "with its opposite {NAK}.\n\n   2. [from the comic strip Bloom County] An exclamation of surprised "
            "disgust.\n")
    _write(tmp_path / "usr/share/doc/jargon-text/jargon.txt.gz", text, gz=True)
    assert list(jargon([tmp_path])) == [
        "disk farm: A large room or rooms filled with disk drives (esp. washing machines).",
        "disemvowel: Less common synonym for splat out, used of posts.",
        "ack: Acknowledge. Used with its opposite NAK.",
        "[from the comic strip Bloom County] An exclamation of surprised disgust."]


def test_wesnoth(tmp_path):
    cfg = ('[message]\n    speaker=Konrad\n    message= _ "What is this place? That is one ""big"" mountain!"\n'
           '[/message]\n    name= _ "Gryphon Mountain"\n    # po: _ "A comment that must be skipped, friend."\n'
           '    story= _ "The orcs came at night.\n\nNone of the villagers\n  survived the raid."\n'
           '    message= _ "Welcome, $unit.name, to our humble village of Elensefar."\n'
           '    message= _ "female^Good morning, Delfador! Is it time to attack?"\n'
           '    note= _ "<span color=\'red\'>Beware:</span> the <b>bridge</b> is out, so go around."\n')
    _write(tmp_path / "usr/share/games/wesnoth/1.16/data/campaigns/X/scenarios/01.cfg", cfg)
    _write(tmp_path / "usr/share/games/wesnoth/1.16/data/test/scenarios/t.cfg", 'm= _ "A test string, never in the corpus."')
    assert list(wesnoth([tmp_path])) == [
        'What is this place? That is one "big" mountain!', "None of the villagers survived the raid.",
        "Good morning, Delfador! Is it time to attack?", "Beware: the bridge is out, so go around."]


def test_endless_sky(tmp_path):
    data = ('# A comment line, not "part of the game at all."\nmission "Liberate Kornephoros"\n'
            '\tdescription "Travel with the militia to the <system> system and drive off the fleet."\n'
            '\ton offer\n\t\tconversation\n\t\t\t`The mood in the spaceport is solemn and quiet.`\n'
            '\t\t\t`\tYou find Tomek walking among the fleet, "Captain! How is your ship?"`\n'
            '\t\t\t\t"to take control of our own fate "\n'
            '\t\tlog "Factions" "Quarg" `The Quarg are tall, thin, inscrutable aliens.`\n'
            '\t\t\t`[Take good care of this fleet, it must last you.]`\n')
    _write(tmp_path / "usr/share/games/endless-sky/data/human/start.txt", data)
    assert list(endless_sky([tmp_path])) == [
        "The mood in the spaceport is solemn and quiet.",
        'You find Tomek walking among the fleet, "Captain! How is your ship?"',
        "The Quarg are tall, thin, inscrutable aliens.", "Take good care of this fleet, it must last you."]


def test_crawl(tmp_path):
    dat = tmp_path / "usr/share/crawl/dat"
    _write(dat / "descript/monsters.txt", "%%%%\n# Uniques\nAgnes\n\nThis spriggan is aged and weathered from\n"
           "years of travel.\n%%%%\n__d_suffix\n\n“Trogdor was a man!\n I mean, he was a dragon-man!”\n"
           "    -The Brothers Chaps, “Trogdor”. 2003.\n%%%%\n__q_suffix\n\n<__d_suffix>\n%%%%\n")
    _write(dat / "database/monspeak.txt", "%%%%\n_shouts_\n\nshouts\n\nyells\n%%%%\nkobold\n\n"
           "@The_monster@ says, \"Me steal your gold!\"\n\nThe kobold mutters about the shiny things it lost.\n%%%%\n")
    _write(dat / "descript/pl/monsters.txt", "%%%%\nAgnes\n\nTen niziołek jest stary i zmęczony podróżami.\n%%%%\n")
    assert list(crawl([tmp_path])) == [
        "This spriggan is aged and weathered from years of travel.",
        "“Trogdor was a man! I mean, he was a dragon-man!”",
        "The kobold mutters about the shiny things it lost."]


def test_sources():
    names = [s.name for s in SOURCES]
    assert names == ["fortunes", "anarchist-faq", "jargon", "wesnoth", "endless-sky", "crawl"]
    for s in SOURCES:
        assert s.register in REGISTERS and s.licence and s.note and s.modern
        assert s.licence_files == (f"usr/share/doc/{s.packages[0].name}/copyright",)
        assert all(p.registry == "debian" for p in s.packages)
    assert {s.name: s.cap_words for s in SOURCES}["anarchist-faq"] == 600_000
