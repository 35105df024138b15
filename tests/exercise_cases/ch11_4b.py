"""Known-wrong answers to the exercises of notebook 11.4b (notebooks/11_4b_sequence_labelling.py).

Each case is a whole answer cell with one mistake; tests/test_exercise_registry.py runs it after the notebook's
``setup`` cells and checks that the message contains the hint given here.
"""

ALIGN = """\
def align_word_labels(word_tags, word_ids, policy):
    labels, previous = [], None
    for w in word_ids:
        if w is None:
            labels.append(-100)
        elif policy == "every" or w != previous:
            labels.append(word_tags[w])
        else:
            labels.append(-100)
        previous = w
    return labels
"""
DECODE = """\
def decode_first_subword(subword_tags, word_ids):
    tags, seen = [], set()
    for tag, w in zip(subword_tags, word_ids):
        if w is not None and w not in seen:
            seen.add(w)
            tags.append(tag)
    return tags
"""
F1 = """\
def read_entities(tags):
    out, start, typ = [], None, None
    for i, t in enumerate(list(tags) + ["O"]):
        prefix, kind = (t[0], t[2:]) if t != "O" else ("O", "")
        if start is not None and not (prefix == "I" and kind == typ):
            out.append((typ, start, i - 1))
            start = None
        if prefix == "B" or (prefix == "I" and start is None):
            start, typ = i, kind
    return out

def entity_f1(y_true, y_pred):
    gold = {(n, *e) for n, s in enumerate(y_true) for e in read_entities(s)}
    pred = {(n, *e) for n, s in enumerate(y_pred) for e in read_entities(s)}
    hit = len(gold & pred)
    p = hit / len(pred) if pred else 0.0
    r = hit / len(gold) if gold else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)
"""
SPAN = """\
def best_span_under_limit(start_logits, end_logits, max_len):
    best, best_score = (0, 0), float("-inf")
    T = len(start_logits)
    for i in range(T):
        for j in range(i, min(T, i + max_len)):
            score = float(start_logits[i] + end_logits[j])
            if score > best_score:
                best, best_score = (i, j), score
    return best
"""
COMPOSE = """\
def predicted_entities(words, word_ids, subword_logits, tags):
    ids = subword_logits.argmax(-1).tolist()
    word_tags = decode_first_subword([tags[i] for i in ids], word_ids)
    return [(" ".join(words[a:b + 1]), t) for t, a, b in read_entities(word_tags)]
"""

FIRST_NOT_O = """\
def decode_first_subword(subword_tags, word_ids):
    first = {}
    for tag, w in zip(subword_tags, word_ids):
        if w is not None and (w not in first or first[w] == "O"):
            first[w] = tag
    return [first[w] for w in sorted(first)]
"""
MAJORITY = """\
def decode_first_subword(subword_tags, word_ids):
    pieces = {}
    for tag, w in zip(subword_tags, word_ids):
        if w is not None:
            pieces.setdefault(w, []).append(tag)
    return [max(ts, key=ts.count) for w, ts in sorted(pieces.items())]
"""

READ = F1[:F1.index("def entity_f1")]  # the right read_entities: a wrong entity_f1 that does not call it
TOKEN_F1 = READ + """\
def entity_f1(y_true, y_pred):
    key = lambda t: t
    pairs = [(key(a), key(b)) for g, p in zip(y_true, y_pred) for a, b in zip(g, p)]
    hit = sum(a == b and a != "O" for a, b in pairs)
    n_pred, n_gold = sum(b != "O" for a, b in pairs), sum(a != "O" for a, b in pairs)
    p = hit / n_pred if n_pred else 0.0
    r = hit / n_gold if n_gold else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)
"""
POOLED = F1.split("def entity_f1")[0] + """\
from collections import Counter

def entity_f1(y_true, y_pred):
    gold = Counter(e for s in y_true for e in read_entities(s))
    pred = Counter(e for s in y_pred for e in read_entities(s))
    hit = sum((gold & pred).values())
    p = hit / sum(pred.values()) if pred else 0.0
    r = hit / sum(gold.values()) if gold else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)
"""


def edit(source: str, old: str, new: str) -> str:
    """The reference answer with one mistake: ``old`` (which must be there) replaced by ``new``."""
    assert old in source, old
    return source.replace(old, new)


WRONG_ANSWERS = {
    "align_labels": [
        (edit(ALIGN, 'policy == "every" or w != previous', "w != previous"), "with policy 'every' (the chapter's)"),
        (edit(ALIGN, 'policy == "every" or w != previous', "True"), "with policy 'first' only the first piece"),
        (edit(ALIGN, "            labels.append(-100)\n        elif", "            labels.append('O')\n        elif"),
         "special token or padding (word id None): its label is -100, so the loss ignores it; you gave 'O' (tags "
         "['B-LOC', 'I-LOC', 'O', 'O', 'B-LOC', 'I-LOC', 'O'], word ids [None, 0, 0, 1, 1, 2, 3, 4, 5, 6, None]"),
    ],
    "decode_first_subword": [
        (edit(DECODE, "        if w is not None and w not in seen:\n            seen.add(w)\n            tags.append(tag)",
              "        if w is not None:\n            tags.append(tag)"), "one tag per word"),
        ("def decode_first_subword(subword_tags, word_ids):\n    last = {}\n"
         "    for tag, w in zip(subword_tags, word_ids):\n        if w is not None:\n            last[w] = tag\n"
         "    return [last[w] for w in sorted(last)]\n", "last subword"),
        (edit(DECODE, "if w is not None and w not in seen:", "if w not in seen:"), "return 7 tags, you returned 8"),
        (FIRST_NOT_O, "took its first tag that is not O"),
        (MAJORITY, "you took a majority vote over each word's pieces"),  # was told "last subword"
    ],
    "entity_f1": [
        # entities read in another form, used alike for gold and predicted tags: the scores are right
        (edit(F1, "out.append((typ, start, i - 1))", "out.append((start, i - 1, typ))"),
         "read_entities(['I-PER', 'I-PER', 'O']) returned [(0, 1, 'PER')]; expected [('PER', 0, 1)]: each entity is "
         "(type, first, last), the type first"),
        (edit(F1, "out.append((typ, start, i - 1))", "out.append((typ, start, i))"),
         "read_entities(['I-PER', 'I-PER', 'O']) returned [('PER', 0, 2)]; expected [('PER', 0, 1)]: last is the "
         "index of the entity's last word, included"),
        (edit(F1, 'if prefix == "B" or (prefix == "I" and start is None):', 'if prefix == "B":'),
         "an I- tag after O (or at the start) starts an entity"),
        (edit(F1, "    p = hit / len(pred) if pred else 0.0\n    r = hit / len(gold) if gold else 0.0",
              "    r = hit / len(pred) if pred else 0.0\n    p = hit / len(gold) if gold else 0.0"),
         "precision and recall are swapped"),
        (edit(F1, "    for i, t in enumerate(list(tags) + [\"O\"]):", "    for i, t in enumerate(list(tags)):"),
         "an entity that ends the sentence must be closed"),
        (edit(F1, "{(n, *e) for n, s in enumerate(y_true) for e in read_entities(s)}",
              "{e for n, s in enumerate(y_true) for e in read_entities(s)}").replace(
            "{(n, *e) for n, s in enumerate(y_pred) for e in read_entities(s)}", "{e for n, s in enumerate(y_pred) for e in read_entities(s)}"),
         "entities are matched within their sentence"),
        (READ + "def entity_f1(y_true, y_pred):\n    pairs = [(a, b) for g, p in zip(y_true, y_pred) for a, b in zip(g, p)]\n"
         "    acc = sum(a == b for a, b in pairs) / len(pairs)\n    return acc, acc, acc\n", "token accuracy"),
        (F1 + "\n_f1 = entity_f1\n\ndef entity_f1(y_true, y_pred):\n"
         "    types = sorted({t[2:] for s in y_true + y_pred for t in s if t != 'O'})\n"
         "    keep = lambda s, k: [t if t[2:] == k else 'O' for t in s]\n"
         "    per = [_f1([keep(s, k) for s in y_true], [keep(s, k) for s in y_pred]) for k in types]\n"
         "    return tuple(sum(x[i] for x in per) / len(per) for i in range(3)) if per else (0.0, 0.0, 0.0)\n",
         "that is the macro average"),
        (edit(F1, "    p = hit / len(pred) if pred else 0.0\n    r = hit / len(gold) if gold else 0.0",
              "    p = hit / len(pred) if pred else 1.0\n    r = hit / len(gold) if gold else 1.0"),
         "no gold and no predicted entities, so precision and recall both divide by zero: P = R = F1 = 0 by "
         "convention"),  # was told "that is token accuracy"
        (edit(F1, "{(n, *e) for n, s in enumerate(y_true) for e in read_entities(s)}",
              "{(n, e[1], e[2]) for n, s in enumerate(y_true) for e in read_entities(s)}").replace(
            "{(n, *e) for n, s in enumerate(y_pred) for e in read_entities(s)}",
            "{(n, e[1], e[2]) for n, s in enumerate(y_pred) for e in read_entities(s)}"),
         "your matches ignore the entity's type"),
        (F1 + "\n_f1 = entity_f1\n\ndef entity_f1(y_true, y_pred):\n"
         "    per = [_f1([g], [p]) for g, p in zip(y_true, y_pred)]\n"
         "    return tuple(sum(x[i] for x in per) / len(per) for i in range(3))\n",
         "you scored each sentence and averaged the scores"),
        (F1 + "\n_f1 = entity_f1\n\ndef entity_f1(y_true, y_pred):\n"
         "    return _f1([[t for s in y_true for t in s]], [[t for s in y_pred for t in s]])\n",
         "you read the sentences as one sequence"),
        (TOKEN_F1, "that is token-level F1 (with the B-/I- prefix)"),  # was told "an I- tag after O … starts an entity"
        (edit(TOKEN_F1, "key = lambda t: t", "key = lambda t: t[2:] if t != 'O' else t"),
         "that is token-level F1 (comparing types, the B-/I- prefix dropped)"),
        (edit(F1, "(2 * p * r / (p + r) if p + r else 0.0)", "(p + r) / 2"),
         "your precision and recall are right (1.000, 0.500), your F1 is not: 0.667, not 0.750. F1 is the *harmonic* "
         "mean of P and R (you took their average, the arithmetic mean)"),  # was told "every entity … counts once"
        (POOLED, "expected P/R/F1 = 0.000/0.000/0.000, got 1.000/1.000/1.000 (entities are matched within their "
                 "sentence"),  # a Counter of (type, first, last) without the sentence: passed the edge cases
    ],
    "best_span": [
        (edit(SPAN, "range(i, min(T, i + max_len))", "range(T)"), "an answer cannot end before it starts"),
        (edit(SPAN, "range(i, min(T, i + max_len))", "range(i, T)"), "more than the limit"),
        ("def best_span_under_limit(start_logits, end_logits, max_len):\n"
         "    return int(start_logits.argmax()), int(end_logits.argmax())\n", "taken separately"),
        (edit(SPAN, "range(i, min(T, i + max_len))", "range(i, min(T, i + max_len + 1))"),
         "a span holds at most max_len tokens, so j - i < max_len"),  # j <= i + max_len: one token too many
        (edit(SPAN, "range(i, min(T, i + max_len))", "range(i, min(T, i + max_len - 1))"),
         "a span of exactly max_len tokens is allowed"),
        (edit(SPAN, "    return best\n", "    return best[0], best[1] + 1\n"),
         "j is the last token of the span, included"),  # a slice's end; was told "more than the limit max_len"
    ],
    "predicted_entities": [
        (F1 + DECODE + edit(COMPOSE, "word_tags = decode_first_subword([tags[i] for i in ids], word_ids)",
                            "word_tags = [tags[i] for i, w in zip(ids, word_ids) if w is not None]"),
         "decode to one tag per word first"),
        (F1 + DECODE + edit(COMPOSE, '(" ".join(words[a:b + 1]), t)', '(" ".join(words[a:b]), t)'), "expected"),
        (F1 + DECODE + edit(COMPOSE, "ids = subword_logits.argmax(-1).tolist()", "ids = subword_logits.argmax(0).tolist()"),
         "argmax per subword"),  # the wrong axis
        (F1 + DECODE + edit(COMPOSE, "word_tags = decode_first_subword([tags[i] for i in ids], word_ids)",
                            "word_tags = decode_first_subword([tags[i] for i in ids][::-1], word_ids[::-1])[::-1]"),
         "you took the tag of each word's last subword"),  # decoded from each word's last subword
        (F1 + FIRST_NOT_O + COMPOSE, "took its first tag that is not O"),  # a word tagged O B-LOC is O
        (F1 + MAJORITY + COMPOSE, "you took a majority vote"),  # a word tagged B-PER I-ORG I-ORG is B-PER
    ],
    "every_subword_entities": [('subword_entities = "2"', "B- tag right after another B- tag")],
    "all_o_accuracy": [('all_o_token_accuracy = "below 50%"', "What share of the words")],
    "probe_layer": [('probe_layer = "L6"', "what was the last layer of all-MiniLM-L6-v2 trained to be good at")],
    "full_vs_probe": [('full_vs_probe = "10 to 20 points higher"', "never trained to carry entity types")],
    "threshold_hindsight": [('threshold_hindsight = "5 or more F1 points above"', "How well must that number separate")],
}

RIGHT_ANSWERS = {  # other correct answers than the notebook's: each must be graded correct
    "best_span": [
        (edit(SPAN, "if score > best_score", "if score >= best_score"), "of tied spans, keeps the last"),
        (edit(SPAN, "for j in range(i, min(T, i + max_len)):", "for j in reversed(range(i, min(T, i + max_len))):"),
         "runs j downwards: of tied spans, keeps the longest"),
        ("def best_span_under_limit(start_logits, end_logits, max_len):\n"
         "    T = len(start_logits)\n"
         "    scores = start_logits[:, None] + end_logits[None, :]\n"
         "    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]\n"
         "    scores = scores.masked_fill((j < i) | (j - i >= max_len), float('-inf'))\n"
         "    flat = int(scores.T.argmax())\n"
         "    return flat % T, flat // T\n", "argmax in end-major order: another tie-break"),
    ],
}
