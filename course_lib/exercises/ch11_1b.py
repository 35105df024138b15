"""Exercises of notebook 11.1b, subword tokenization (lecture 004: BPE, WordPiece, Unigram LM; SLP3 §11.4.3).

wordpiece_encode    wordpiece_tokenize(word, vocab) -> pieces: greedy longest-match-first with '##', '[UNK]'
                    for the whole word when a position has no match or the word is over 100 characters;
                    graded against the embedded model's real tokenizer on words the notebook never shows
bpe_merge_step      bpe_merge_step(words) -> (best_pair, new_words): count adjacent pairs inside each word,
                    weighted by the word counts, take the most frequent (ties: the smallest pair, a simpler rule
                    than the learner's vocabulary order), merge it everywhere
viterbi             viterbi_segment(word, log_probs) -> the pieces of the most probable segmentation
wordpiece_word_ids  wordpiece_word_ids(text, vocab) -> (tokens, word_ids): BERT's pre-tokenizer, the
                    student's WordPiece and the word index of every piece (composes the ideas above)
fertility_prediction, alpha_prediction   graded predictions, asked before the cells that reveal them
"""
from __future__ import annotations

import random
from functools import lru_cache

from ..tokenization import corpora
from ..tokenization.merges import PairCounts
from ..tokenization.pretokenize import basic_tokenize
from ..tokenization.reference import embedded_wordpiece
from ..tokenization.unigram import Unigram
from .core import Wrong, exercise, question

UNK = "[UNK]"


@lru_cache(maxsize=1)
def _reference():
    """The embedded model's own tokenizer (``tokenizers``) and its vocabulary."""
    tok = embedded_wordpiece()
    return tok, dict(tok.get_vocab())


@lru_cache(maxsize=1)
def _library_wordpiece():
    """course_lib's WordPiece with the embedded vocabulary (to recognise what a wrong answer did)."""
    from ..checkpoints import embedded_model_dir
    from ..tokenization.wordpiece import WordPiece

    return WordPiece.from_tokenizer_json(embedded_model_dir() / "tokenizer.json")


def _as_pieces(got, what: str) -> list[str]:
    if not isinstance(got, (list, tuple)) or not all(isinstance(p, str) for p in got):
        raise Wrong(f"{what} should return a list of strings (the pieces), got {type(got).__name__}: {got!r}"[:300])
    return list(got)


# ----------------------------------------------------------------------------- wordpiece_encode

def hidden_words(n: int = 250, seed: int = 11) -> list[str]:
    """Words the notebook never shows: from the held-out news and Wikipedia, normalised as BERT does."""
    pool = sorted({w for t in corpora.lee("test") + corpora.wikipedia() for w in basic_tokenize(t)
                   if len(w) > 3 and w.isalpha()})
    return random.Random(seed).sample(pool, n)


def _diagnose_wordpiece(word: str, got: list[str], expected: list[str]) -> str:
    strip = "".join(p.removeprefix("##") for p in got)
    if len(word) > 100 and expected == [UNK]:
        return (f"a word of {len(word)} characters should give ['[UNK]']: BERT does not even try words longer than "
                f"100 characters; you returned {len(got)} pieces")
    if got == [UNK] and expected != [UNK] and len(word) <= 100 < len(word.encode("utf-8")):
        return (f"a word of {len(word)} characters ({len(word.encode('utf-8'))} bytes in UTF-8) should still be cut "
                "into pieces; you returned ['[UNK]']: the limit of 100 counts characters, not bytes")
    if got == [UNK] and expected != [UNK] and len(word) == 100:
        return (f"a word of exactly 100 characters should still be cut into pieces (the real tokenizer gives "
                f"{len(expected)}); you returned ['[UNK]']: only words *longer* than 100 characters become '[UNK]'")
    if expected == [UNK] and UNK in got:
        return (f"for {word!r} you returned {got}: when no vocabulary entry matches at some position, the *whole* "
                "word becomes '[UNK]', not just the part that failed")
    if expected == [UNK]:
        return (f"for {word!r} you returned {got}, the real tokenizer gives ['[UNK]']: at some position no vocabulary "
                "entry matches, and then the whole word is unknown")
    if got and got[0].startswith("##"):
        return f"for {word!r} you returned {got}: the first piece of a word has no '##' (only continuations do)"
    if any(p.startswith("##") for p in expected) and not any(p.startswith("##") for p in got):
        return (f"for {word!r} you returned {got}, the real tokenizer gives {expected}: every piece after the first "
                "continues the word, so look it up with '##' in front (san, ##itas)")
    if strip == word and len(got) < len(expected):
        return (f"for {word!r} you returned {got}, fewer pieces than the real tokenizer's {expected}: BERT does not "
                "search for the fewest pieces, it takes the longest entry at the start and goes on from there")
    if strip == word and len(got) > len(expected):
        return (f"for {word!r} you returned {got}, the real tokenizer gives {expected}: at each position take the "
                "*longest* vocabulary entry (try the end of the word first and move it left)")
    return f"for {word!r} you returned {got}; the embedded model's tokenizer gives {expected}"


# mistrust, obstruct, balinski: where the fewest pieces differ from greedy longest-first (mis ##trust, not
# mist ##rus ##t), so a shortest-segmentation search does not pass for the greedy rule
WORDPIECE_SHOWN = ["sanitas", "unaffable", "snow☃man", "a" * 101, "b" * 100, "mistrust", "obstruct", "balinski",
                   "α" * 60]  # 60 characters but 120 bytes: the limit counts characters


def wordpiece_words() -> list[str]:
    """Every word the wordpiece_encode check grades: the fixed ones, then the hidden ones."""
    return WORDPIECE_SHOWN + hidden_words()


@exercise("wordpiece_encode", needs=["wordpiece_tokenize"])
def check_wordpiece_encode(wordpiece_tokenize):
    tok, vocab = _reference()
    words = wordpiece_words()
    for word in words:
        expected = tok.encode(word, add_special_tokens=False).tokens
        got = _as_pieces(wordpiece_tokenize(word, vocab), "wordpiece_tokenize")
        if got != expected:
            raise Wrong(_diagnose_wordpiece(word, got, expected))
    # the stub's two parameters are used, not their defaults written into the body
    for word, kwargs, want in (("☃", {"unk": "<unk>"}, ["<unk>"]), ("ab" * 30, {"max_chars": 50}, ["[UNK]"]),
                               ("ab" * 30, {"max_chars": 60}, None)):
        got = _as_pieces(wordpiece_tokenize(word, vocab, **kwargs), "wordpiece_tokenize")
        want = want or tok.encode(word, add_special_tokens=False).tokens
        if got != want:
            given = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
            raise Wrong(f"wordpiece_tokenize({word!r}, vocab, {given}) gave {got[:6]}, expected {want[:6]}: use the "
                        "unk and max_chars arguments (a word is unknown when it is longer than max_chars characters, "
                        "and unk is what it becomes), not the defaults written into the body")
    return (f"equal to the embedded model's tokenizer on {len(words)} words, among them "
            f"{len(words) - len(WORDPIECE_SHOWN)} you never saw")


# ----------------------------------------------------------------------------- bpe_merge_step

MERGE_CASES = [
    {("a", "b"): 1, ("a", "b", "c"): 1, ("x", "y"): 10},                       # the counts of the words matter
    {("h", "u", "g"): 10, ("p", "u", "g"): 5, ("p", "u", "n"): 12, ("b", "u", "n"): 4, ("h", "u", "g", "s"): 5},
    {("a", "a", "a", "a"): 3, ("a", "a", "b"): 1, ("b", "a"): 2},             # overlapping occurrences
    {("l", "o", "w", "</w>"): 5, ("l", "o", "w", "e", "r", "</w>"): 2, ("n", "e", "w", "e", "s", "t", "</w>"): 6,
     ("w", "i", "d", "e", "s", "t", "</w>"): 3},                               # a tie: (e, s), (s, t), (t, </w>)
    {("x", "y", "z"): 3, ("a", "b"): 3},                                       # a tie the first pair seen loses
    {("a", "a", "a"): 5, ("b", "c"): 8},      # an odd run: (a, a) occurs twice in it, and merges left to right
    # symbols of several characters, as initial_symbols makes them ('h</w>'): (t, h) is not in ('b', 'o', 't', 'h</w>')
    {("t", "h", "e</w>"): 7, ("b", "o", "t", "h</w>"): 3, ("w", "i", "t", "h</w>"): 2, ("t", "h", "a", "t</w>"): 4},
    {("ne", "w", "</w>"): 5, ("f", "e", "w", "</w>"): 6, ("e", "w"): 9},     # (e, w) is not in ('ne', 'w', '</w>')
    {(".",): 6, ("a", "b"): 2},   # a word of one symbol ('.', ','): it has no pair, and none runs into the next word
    {("a", "bc"): 2, ("ab", "a"): 2},  # a tie where the smallest pair (a, bc) is not the smallest joined string (aba)
    {("a", "b", "c"): 3, ("ab", "c"): 1},  # two spellings of one word become one: their counts add up (3 + 1)
]


def _skipping_pair_counts(words: dict) -> dict:
    """Weighted pair counts with the mistake of jumping over a counted pair inside a run of one symbol (so that
    'a a a' holds (a, a) once)."""
    counts: dict = {}
    for w, n in words.items():
        i = 0
        while i < len(w) - 1:
            counts[(w[i], w[i + 1])] = counts.get((w[i], w[i + 1]), 0) + n
            i += 2 if i + 2 < len(w) and w[i] == w[i + 1] == w[i + 2] else 1
    return counts


def _merge_right_to_left(word: tuple, pair: tuple) -> tuple:
    out = list(word)
    i = len(out) - 2
    while i >= 0:
        if (out[i], out[i + 1]) == pair:
            out[i:i + 2] = [out[i] + out[i + 1]]
        i -= 1
    return tuple(out)


def _merge_by_string_replace(word: tuple, pair: tuple) -> tuple:
    """The mistake of merging in the spelling joined by spaces: 'b o t h</w>'.replace('t h', 'th') also joins the
    't' to the first character of the symbol 'h</w>'."""
    return tuple(" ".join(word).replace(" ".join(pair), "".join(pair)).split(" "))


def _reference_merge(words: dict) -> tuple[tuple[str, str], dict, dict]:
    """(best pair, merged words, all pair counts) with course_lib's incremental pair counts."""
    symbols = sorted({s for w in words for s in w})
    ids = {s: i for i, s in enumerate(symbols)}
    pc = PairCounts(symbols, [[ids[s] for s in w] for w in words], list(words.values()))
    counts = {(pc.symbols[a], pc.symbols[b]): c for (a, b), c in pc.pairs.items() if c}
    best = min(counts, key=lambda p: (-counts[p], p))
    pc.merge((ids[best[0]], ids[best[1]]), pc.add_symbol(best[0] + best[1]))
    merged: dict = {}
    for w, f in zip(pc.words, pc.freqs):
        key = tuple(pc.symbols[s] for s in w)
        merged[key] = merged.get(key, 0) + f
    return best, merged, counts


def _words_text(words: dict, most: int = 4) -> str:
    """A short picture of a dictionary of words: its first entries, and how many more."""
    shown = ", ".join(f"{w!r}: {c!r}" for w, c in list(words.items())[:most])
    more = f", … {len(words) - most} more" if len(words) > most else ""
    return "{" + shown + more + "}"


@exercise("bpe_merge_step", needs=["bpe_merge_step"])
def check_bpe_merge_step(bpe_merge_step):
    for words in MERGE_CASES:
        given = dict(words)
        answer = bpe_merge_step(given)
        if given != words:
            changed = sorted({*given, *words} - {w for w in words if given.get(w) == words[w]}, key=str)[:3]
            raise Wrong(f"bpe_merge_step changed the dictionary it was given ({_words_text(words)}; now "
                        f"{_words_text(given)}; {', '.join(map(repr, changed))} changed): build a new dictionary for "
                        "the merged words and leave the given one as it was")
        if not isinstance(answer, (tuple, list)) or len(answer) != 2:
            raise Wrong(f"return a pair (best_pair, new_words), got {type(answer).__name__}")
        pair, new_words = answer
        best, merged, counts = _reference_merge(words)
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise Wrong(f"the best pair should be a tuple of two symbols such as ('e', 's'), got {pair!r}")
        pair = tuple(pair)
        if pair != best:
            if pair not in counts:
                raise Wrong(f"you chose {pair}, but no word of {words} holds {pair[0]!r} and {pair[1]!r} side by "
                            "side: pairs never cross a word boundary. Count the pairs inside each word, never "
                            "between the end of one word and the start of the next (a word of one symbol has none)")
            plain = {}
            for w in words:
                for p in zip(w, w[1:]):
                    plain[p] = plain.get(p, 0) + 1
            if pair == min(plain, key=lambda p: (-plain[p], p)) and counts.get(pair, 0) < counts[best]:
                raise Wrong(f"you chose {pair}, which occurs in the most *distinct* words; weight each occurrence by "
                            f"the word's count: {best} occurs {counts[best]} times, {pair} {counts.get(pair, 0)}")
            skipping = _skipping_pair_counts(words)
            if pair == min(skipping, key=lambda p: (-skipping[p], p)) and skipping.get(best) != counts[best]:
                raise Wrong(f"count the pair at every position: in ('a', 'a', 'a') the pair ('a', 'a') occurs twice "
                            f"(first-second and second-third), although one merge can use only one of them; so "
                            f"{best} occurs {counts[best]} times, more than {pair} ({counts.get(pair, 0)})")
            if counts.get(pair, 0) == counts[best]:
                raise Wrong(f"{pair} and {best} both occur {counts[best]} times: on a tie take the smallest pair, "
                            "min() of the tied pairs")
            raise Wrong(f"the most frequent pair of {words} is {best} ({counts[best]} times); you chose {pair} "
                        f"({counts.get(pair, 0)} times)")
        if not isinstance(new_words, dict):
            raise Wrong(f"new_words should be a dict from symbol tuples to counts, got {type(new_words).__name__}")
        new_words = {tuple(k): v for k, v in new_words.items()}
        if new_words != merged and set(new_words) == set(merged):
            k = next(k for k in merged if new_words[k] != merged[k])
            raise Wrong(f"after merging {best}, {k} should occur {merged[k]} times, yours {new_words[k]}: when two "
                        "words are spelt alike after the merge, their counts add up (do not overwrite one with the "
                        "other)")
        if new_words != merged:
            if sorted(new_words.values()) != sorted(merged.values()):
                raise Wrong("keep each word's count: merging changes how a word is spelt, not how often it occurs")
            for w in words:
                expect = next(k for k in merged if "".join(k) == "".join(w))
                mine = next((k for k in new_words if "".join(k) == "".join(w)), None)
                if mine != expect and mine == _merge_by_string_replace(w, best):
                    should = "stay" if expect == w else "become"
                    raise Wrong(f"after merging {best}, {w} should {should} {expect}, yours is {mine}: a symbol is a "
                                f"unit, not a string of characters. {best} is a pair of whole symbols side by side; a "
                                "symbol that only begins or ends with the same characters, such as 'h</w>' or 'ne', "
                                "is not part of it. Compare neighbouring symbols, not the spelling as text")
                if mine != expect and mine == _merge_right_to_left(w, best):
                    raise Wrong(f"after merging {best}, {w} should become {expect}, yours is {mine}: merge from "
                                "left to right — the first two symbols of an odd run join, the last one stays alone")
                if mine != expect:
                    left = sum(1 for p in zip(mine or (), (mine or ())[1:]) if p == best)
                    extra = (": merge *every* occurrence, left to right, without overlaps" if left else
                             ": the merged symbol is the two strings joined, e.g. 'e' + 's' → 'es'")
                    raise Wrong(f"after merging {best}, {w} should become {expect}, yours is {mine}{extra}")
            raise Wrong(f"after merging {best} the words should be {merged}, yours are {new_words}")
    return (f"the most frequent pair and the merged words of {len(MERGE_CASES)} small corpora, with symbols of one and "
            "of several characters, counted and merged as course_lib's BPE learner does (ties by this exercise's "
            "simpler rule, the smallest pair; the learner breaks them by vocabulary order)")


# ----------------------------------------------------------------------------- viterbi

TOY = {"▁": -3.0, "u": -4.0, "n": -3.5, "r": -3.8, "e": -3.0, "l": -3.9, "a": -3.2, "t": -3.3, "d": -3.6,
       "▁un": -5.0, "un": -5.5, "re": -4.5, "rel": -6.0, "related": -8.0, "late": -6.5, "ted": -5.8, "at": -4.2,
       "ed": -4.0, "▁unrelated": -13.5, "el": -5.2}


def viterbi_cases() -> list[tuple[str, dict[str, float]]]:
    """The toy table (where the longest first piece is a trap) and seeded random tables of all substrings."""
    rng = random.Random(5)
    cases = [("▁unrelated", TOY), ("▁related", TOY), ("▁tentatively", {**TOY, "i": -4.1, "v": -4.4, "y": -4.0}),
             # summing over paths (the forward algorithm) and then backtracking by max gives ▁abc d; Viterbi ▁ab cd
             ("▁abcd", {"▁": -5.7, "a": -4.8, "b": -2.9, "c": -3.3, "d": -2.8, "▁a": -4.3, "▁ab": -1.9,
                        "▁abc": -5.0, "abc": -4.2, "bc": -1.6, "cd": -5.5})]
    for word in ["abracadabra", "mississippi", "banana", "▁sunshine"]:
        table = {word[j:i]: -rng.uniform(1, 4 * (i - j)) for j in range(len(word)) for i in range(j + 1, len(word) + 1)
                 if i - j <= 4 or rng.random() < 0.3}
        cases.append((word, table))
    return cases


def _score(pieces, table) -> float:
    return sum(table[p] for p in pieces)


def _greedy(word: str, table) -> list[str]:
    out, i = [], 0
    while i < len(word):
        j = max(j for j in range(i + 1, len(word) + 1) if word[i:j] in table)
        out.append(word[i:j])
        i = j
    return out


def _summed_then_best(word: str, table) -> list[str]:
    """A slip: best[i] as the log of the *sum* over paths (the forward algorithm), then the best last piece."""
    import math

    n, score, back = len(word), [0.0] + [-math.inf] * len(word), [0] * (len(word) + 1)
    for i in range(1, n + 1):
        terms = [(score[j] + table[word[j:i]], j) for j in range(i) if word[j:i] in table and score[j] > -math.inf]
        if terms:
            top = max(t for t, _ in terms)
            score[i] = top + math.log(sum(math.exp(t - top) for t, _ in terms))
            back[i] = max(terms)[1]
    out, i = [], n
    while i > 0:
        out.append(word[back[i]:i])
        i = back[i]
    return out[::-1]


@exercise("viterbi", needs=["viterbi_segment"])
def check_viterbi(viterbi_segment):
    for word, table in viterbi_cases():
        got = _as_pieces(viterbi_segment(word, dict(table)), "viterbi_segment")
        expected = Unigram(table).viterbi(word)
        if "".join(got) != word:
            raise Wrong(f"for {word!r} your pieces {got} spell {''.join(got)!r}: a segmentation must spell the word")
        unknown = [p for p in got if p not in table]
        if unknown:
            raise Wrong(f"{unknown[0]!r} is not a piece of the vocabulary: use only the keys of log_probs")
        if got != expected:
            mine, best = _score(got, table), _score(expected, table)
            if got == _summed_then_best(word, table):
                raise Wrong(f"for {word!r} you returned {got} (log-probability {mine:.2f}); {expected} has {best:.2f}: "
                            "your best[i] adds up the probabilities of all the paths to i (the forward algorithm); "
                            "Viterbi keeps only the best one, a max, not a sum")
            if got == _greedy(word, table):
                raise Wrong(f"for {word!r} you returned {got}, the longest piece at each step (log-probability "
                            f"{mine:.2f}); {expected} has {best:.2f}: compare whole paths, best[i] = max over j of "
                            "best[j] + log p(word[j:i])")
            raise Wrong(f"for {word!r} your segmentation {got} has log-probability {mine:.2f}; {expected} has "
                        f"{best:.2f}")
    return f"the most probable segmentation of all {len(viterbi_cases())} words"


# ----------------------------------------------------------------------------- wordpiece_word_ids

def composing_sentences() -> list[str]:
    rng = random.Random(3)
    # the fourth: an underscore (punctuation to BERT, a word character to a regex's \w) and CJK characters (each a
    # word of its own), which a home-made pre-tokenizer gets wrong
    return (["Mt. Sanitas is in Sunshine Canyon.", "Björk's café isn't in Zürich!", "Unaffable tokenizers, 2,000 of them.",
             "snake_case names, 東京 and 北京."]
            + rng.sample(list(corpora.wikipedia()), 6) + rng.sample(list(corpora.lee("test")), 5))


@exercise("wordpiece_word_ids", needs=["wordpiece_word_ids"])
def check_wordpiece_word_ids(wordpiece_word_ids):
    tok, vocab = _reference()
    for text in composing_sentences():
        enc = tok.encode(text, add_special_tokens=False)
        answer = wordpiece_word_ids(text, vocab)
        if not isinstance(answer, (tuple, list)) or len(answer) != 2:
            raise Wrong(f"return a pair (tokens, word_ids), got {type(answer).__name__}")
        tokens, word_ids = _as_pieces(answer[0], "wordpiece_word_ids (its tokens)"), list(answer[1])
        if tokens != enc.tokens:
            wp = _library_wordpiece()
            unsplit = [[wp.encode_word(w) for w in text.split()], [wp.encode_word(w.lower()) for w in text.split()]]
            if any(tokens == [p for pieces in u for p in pieces] for u in unsplit):
                raise Wrong(f"for {text!r} your tokens are {tokens[:12]}: normalise and split the text first "
                            "(lower case, no accents, punctuation as words of its own) -- basic_tokenize(text) "
                            "does both")
            extra = (": BERT's pre-tokenizer makes every punctuation character a word of its own, the underscore "
                     "too, and every CJK character as well -- basic_tokenize(text) does" if "_" in text else "")
            raise Wrong(f"for {text!r} your tokens are {tokens}, the real tokenizer gives {enc.tokens}{extra}")
        if word_ids != enc.word_ids:
            if word_ids == list(range(len(tokens))):
                raise Wrong(f"for {text!r} your word ids count the pieces: every piece of a word gets the index of "
                            f"its word (san and ##itas of 'Sanitas' both get the same id), expected {enc.word_ids}")
            raise Wrong(f"for {text!r} your word ids are {word_ids}, expected {enc.word_ids}")
    return "tokens and word ids equal to the embedded tokenizer's on 15 sentences"


# ----------------------------------------------------------------------------- predictions

question(
    "fertility_prediction", variable="most_pieces",
    choices=["news (held out)", "Python code", "numbers & dates", "German"], answer="German",
    why="the merges were made for the words of English news, and German shares few of them: about one word in ten "
        "occurs in the news, against about half of the code's, so its words, long compounds "
        "(Rechtsschutzversicherungsgesellschaften) among them, fall apart into short pieces. Not for ä, ö, ü, ß: "
        "the code has more characters outside the news alphabet per word, and an unknown character costs one "
        "piece, as a letter no merge joined does",
    hint="a word costs one piece when the merges built it whole, and more the less of it they built, up to one "
         "piece per character (an unknown character costs one piece, as a letter no merge joined does). For each "
         "text, ask how many of its words occur in the news, and how long its words are.")

question(
    "alpha_prediction", variable="viterbi_share", choices=["goes up", "goes down", "stays the same"],
    answer="goes up",
    why="a segmentation is drawn with probability ∝ P(x)^α: a larger α widens the ratios between probable and "
        "improbable segmentations, so the most probable one (Viterbi's) is drawn more often; α → 0 makes all "
        "segmentations equally likely",
    hint="samples follow P(x)^α. If one segmentation is twice as probable as another, how many times as probable "
         "is it after raising both to the power 2? And to the power 0?")
