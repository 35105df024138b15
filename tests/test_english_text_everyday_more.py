"""The extractors of tools/english_text/everyday_more.py (recipes, Harvard sentences, GNOME help) on tiny fake
package roots shaped like the real files (no network)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "tools"), str(HERE)]

import build_english_text as B  # noqa: E402
from english_text import rdata  # noqa: E402
from english_text.base import REGISTERS  # noqa: E402
from english_text.everyday_more import (  # noqa: E402
    GNOME_HELP, RECIPES_FILE, SOURCES, STRINGR_DATA, gnome_help, harvard, recipe_step, recipes,
    recipes_attribution)
from test_english_text_extractors_rdata_sword import _lazyload_db, names, strsxp  # noqa: E402


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


# ----------------------------------------------------------------------------- recipes

def _recipe(title, steps, ingredients=("1 cup () milk",)):
    return {"title": title, "category": None, "servings": "4", "time": None, "difficulty": None,
            "ingredients": list(ingredients), "steps": steps}


def test_recipes_give_a_recipe_its_steps_as_one_paragraph_without_wiki_markup(tmp_path):
    data = {
        "Cookbook:Pancakes": _recipe("Pancakes", [
            "* Mix the flour and '''milk''' in a bowl.<ref name=\"a\">https://example.com/pancakes - retrieved</ref>",
            "thumb|The finished batterPour the batter into the pan.",                     # caption glued: dropped
            "Heat oven to 350&deg;F (175&nbsp;°C), then add ½ cup () of [[Cookbook:Sugar|sugar]]<ref name=\"a\" />",
            "Use a quick release ([https://www.youtube.com/watch?v=x see how])",
            "Serve warm.thumb|Finished pancakes|290x290px",
        ]),
        "Cookbook:Cookies": _recipe("Cookies", ["Preheat oven to (), or () if you want chewy cookies."]),
        "Cookbook:Fufu": _recipe("Fufu", ["Peel the cocoyam.<ref></ref>"
                                          "<ref>{{Cite web |title=How To |url=https://x.org"]),
    }
    _write(tmp_path / RECIPES_FILE, json.dumps(data))
    assert list(recipes([tmp_path])) == [
        "Mix the flour and milk in a bowl. Heat oven to 350°F (175 °C), then add ½ cup of sugar. "
        "Use a quick release (see how). Serve warm.",
        "Peel the cocoyam."]                       # Cookies: its only step lost its temperature


def test_a_recipe_step_keeps_plain_text_and_entities():
    assert recipe_step("Saut&eacute; the onion &mdash; slowly") == "Sauté the onion — slowly."
    assert recipe_step("<u>Stop stirring</u> and let it boil.<br />") == "Stop stirring and let it boil."
    assert recipe_step("Preheat deep fat fryer to ().") is None
    assert recipe_step("{{Recipe summary") is None


def test_every_recipe_page_is_credited_with_its_address(tmp_path):
    data = {"Cookbook:'Out of Salad Dressing' Salad Dressing": _recipe("x", ["Mix it."]),
            "Cookbook:A Nice Cup of Tea": _recipe("y", ["Boil the water."])}
    _write(tmp_path / RECIPES_FILE, json.dumps(data))
    text = recipes_attribution([tmp_path])
    assert "Wikibooks contributors" in text and "https://creativecommons.org/licenses/by-sa/4.0/" in text
    assert text.splitlines()[-2:] == [
        "Cookbook:'Out of Salad Dressing' Salad Dressing -- "
        "https://en.wikibooks.org/wiki/Cookbook:%27Out_of_Salad_Dressing%27_Salad_Dressing",
        "Cookbook:A Nice Cup of Tea -- https://en.wikibooks.org/wiki/Cookbook:A_Nice_Cup_of_Tea"]
    (recipes_source,) = [s for s in SOURCES if s.name == "recipes"]
    assert recipes_source.attribution is recipes_attribution and "ATTRIBUTION.txt" in recipes_source.note


# ----------------------------------------------------------------------------- Harvard sentences

def test_harvard_sentences_in_runs_of_eight(tmp_path):
    sentences = [f"The birch canoe number {i} slid on the smooth planks." for i in range(9)] + ["", None]
    _lazyload_db(tmp_path / STRINGR_DATA.parent, {"sentences": strsxp(sentences), "words": strsxp(["a", "able"]),
                                                  "fruit": strsxp(["apple"], names("x"))})
    got = list(harvard([tmp_path]))
    assert got == [" ".join(sentences[:8]), sentences[8]]
    assert rdata.SITE in STRINGR_DATA.parents


# ----------------------------------------------------------------------------- GNOME help

PAGE = """<page xmlns="http://projectmallard.org/1.0/" xmlns:its="http://www.w3.org/2005/11/its"
      xmlns:if="http://projectmallard.org/if/1.0/" type="topic" style="task" id="a11y-slowkeys">
  <info>
    <link type="guide" xref="a11y#mobility"/>
    <credit type="author"><name>Shaun McCance</name><email>shaunm@gnome.org</email></credit>
    <include href="legal.xml" xmlns="http://www.w3.org/2001/XInclude"/>
    <desc>Have a delay between a key being pressed and the letter.</desc>
  </info>
  <title>Turn on slow keys</title>
  <p>Turn on <em>slow keys</em> if you would like a delay
     between pressing a key and that letter being displayed</p>
  <steps>
    <item><p>Open the <gui xref="shell-introduction#activities">Activities</gui>
      overview and start typing <gui>Settings</gui>.</p></item>
    <item><p>Press <keyseq><key>Ctrl</key><key>P</key></keyseq> or choose
      <guiseq><gui>File</gui><gui>Print</gui></guiseq>.</p></item>
  </steps>
  <comment><cite date="2013-03-13">Shaun</cite><p>Check this again for 3.8.</p></comment>
  <note style="tip"><title>Quickly turn slow keys on and off</title>
    <p>See <link xref="a11y-bouncekeys"/> and <link xref="a11y-bouncekeys#more"/> for more.</p>
    <p>See <link xref="nosuch-page"/> for even more.</p>
    <p>Type <cmd>gsettings set org.gnome.a11y true</cmd> in a terminal.</p>
  </note>
  <if:choose>
    <if:when test="platform:gnome-classic"><p>Click Applications in the top left corner.</p></if:when>
    <if:else><p>Open the Activities overview first.</p></if:else>
  </if:choose>
  <terms>
    <item><title>Your personal files</title><p>Documents, photos and email.</p></item>
  </terms>
  <table><tr><td><p>Ctrl+Alt+Delete</p></td><td><p>Log out</p></td></tr></table>
  <media type="image" src="figures/x.svg"><p>The Bluetooth icon</p></media>
</page>
"""

OTHER = """<page xmlns="http://projectmallard.org/1.0/" type="topic" id="a11y-bouncekeys">
  <info><title type="link">bounce keys</title></info>
  <title>Turn on bounce keys</title>
  <section id="more"><title>More about <gui>keys</gui></title><p>Nothing here.</p></section>
</page>
"""


def test_gnome_help_gives_a_page_the_running_text_of_its_paragraphs(tmp_path):
    _write(tmp_path / GNOME_HELP / "a11y-slowkeys.page", PAGE)
    _write(tmp_path / GNOME_HELP / "a11y-bouncekeys.page", OTHER)
    _write(tmp_path / GNOME_HELP / "legal.xml", "<license xmlns=\"http://projectmallard.org/1.0/\"/>")
    assert list(gnome_help([tmp_path])) == [
        "Nothing here.",                                                   # a11y-bouncekeys (file-name order)
        "Turn on slow keys if you would like a delay between pressing a key and that letter being displayed. "
        "Open the Activities overview and start typing Settings. Press Ctrl+P or choose File, then Print. "
        "See bounce keys and More about keys for more. Open the Activities overview first. "
        "Your personal files: Documents, photos and email."]


# ----------------------------------------------------------------------------- the sources

def test_the_sources_are_complete_and_follow_everyday_in_the_builder():
    assert [s.name for s in SOURCES] == ["recipes", "harvard-sentences", "gnome-help"]
    for s in SOURCES:
        assert s.register in REGISTERS and s.licence and s.licence_files and s.packages and s.note, s.name
    assert {s.register for s in SOURCES} == {"instructions", "example-sentences"}
    names_ = [s.name for s in B.all_sources()]
    i = names_.index("ding-examples")  # the last source of everyday.py
    assert names_[i + 1:i + 4] == ["recipes", "harvard-sentences", "gnome-help"]
