"""Known-wrong answers to the exercises of notebook 11.1b (notebooks/11_1b_subword_tokenization.py).

Each is a whole answer cell with one typical mistake, run after the notebook's ``setup`` cells; the string
beside it is a part of the hint it must get.
"""

WORDPIECE = "def wordpiece_tokenize(word, vocab, unk='[UNK]', max_chars=100):\n"
GOOD_WORDPIECE = WORDPIECE + """\
    if len(word) > max_chars:
        return [unk]
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start and (word[start:end] if start == 0 else '##' + word[start:end]) not in vocab:
            end -= 1
        if end == start:
            return [unk]
        pieces.append(word[start:end] if start == 0 else '##' + word[start:end])
        start = end
    return pieces
"""
MERGE = "def bpe_merge_step(words):\n"
# the merge applied to every word, once the pair `best` is chosen (right in every wrong answer below that uses it)
APPLY = """\
    new = {}
    for w, n in words.items():
        out, i = [], 0
        while i < len(w):
            if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                out.append(w[i] + w[i + 1]); i += 2
            else:
                out.append(w[i]); i += 1
        new[tuple(out)] = new.get(tuple(out), 0) + n
    return best, new
"""
BEST = """\
    from collections import Counter
    pairs = Counter()
    for w, n in words.items():
        for p in zip(w, w[1:]):
            pairs[p] += n
    best = min(pairs, key=lambda p: (-pairs[p], p))
"""
VITERBI = "def viterbi_segment(word, log_probs):\n"

WRONG_ANSWERS = {
    "wordpiece_encode": [
        (GOOD_WORDPIECE.replace("len(word) > max_chars", "len(word) > 100").replace("return [unk]", 'return ["[UNK]"]'),
         "use the unk and max_chars arguments"),
        # the fewest pieces (a shortest-path search, ties to the longest first piece) instead of greedy
        (WORDPIECE + """\
    if len(word) > max_chars:
        return [unk]
    def piece(i, j):
        return word[i:j] if i == 0 else '##' + word[i:j]
    best = {len(word): []}
    for i in range(len(word) - 1, -1, -1):
        options = [[piece(i, j)] + best[j] for j in range(len(word), i, -1) if piece(i, j) in vocab and j in best]
        if options:
            best[i] = min(options, key=len)
    return best.get(0, [unk])
""", "BERT does not search for the fewest pieces"),
        (WORDPIECE + """\
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start and word[start:end] not in vocab:
            end -= 1
        if end == start:
            return [unk]
        pieces.append(word[start:end])
        start = end
    return pieces
""", "look it up with '##' in front"),
        (WORDPIECE + """\
    pieces, start = [], 0
    while start < len(word):
        end = start + 1
        while end <= len(word) and (word[start:end] if start == 0 else '##' + word[start:end]) not in vocab:
            end += 1
        if end > len(word):
            return [unk]
        pieces.append(word[start:end] if start == 0 else '##' + word[start:end])
        start = end
    return pieces
""", "take the *longest* vocabulary entry"),
        (WORDPIECE + """\
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start and (word[start:end] if start == 0 else '##' + word[start:end]) not in vocab:
            end -= 1
        if end == start:
            pieces.append(unk)
            start += 1
            continue
        pieces.append(word[start:end] if start == 0 else '##' + word[start:end])
        start = end
    return pieces
""", "the *whole* word becomes '[UNK]'"),
        (GOOD_WORDPIECE.replace("    if len(word) > max_chars:\n        return [unk]\n", ""),
         "longer than 100 characters"),
        (WORDPIECE + "    return word.split()\n", "for 'sanitas' you returned ['sanitas']"),
        (GOOD_WORDPIECE.replace("len(word) > max_chars", "len(word) >= max_chars"),
         "only words *longer* than 100 characters become '[UNK]'"),
        (GOOD_WORDPIECE.replace("len(word) > max_chars", "len(word.encode('utf-8')) > max_chars"),
         "the limit of 100 counts characters, not bytes"),
    ],
    "bpe_merge_step": [
        (MERGE + BEST + APPLY.replace("new.get(tuple(out), 0) + n", "n"),
         "when two words are spelt alike after the merge, their counts add up"),
        (MERGE + """\
    from collections import Counter
    pairs = Counter(p for w in words for p in zip(w, w[1:]))
    best = min(pairs, key=lambda p: (-pairs[p], p))
""" + APPLY, "weight each occurrence by the word's count"),
        (MERGE + """\
    from collections import Counter
    pairs = Counter()
    for w, n in words.items():
        for p in zip(w, w[1:]):
            pairs[p] += n
    best = max(pairs, key=pairs.get)
""" + APPLY, "on a tie take the smallest pair"),
        (MERGE + """\
    from collections import Counter
    pairs = Counter()
    for w, n in words.items():
        for p in zip(w, w[1:]):
            pairs[p] += n
    best = min(pairs, key=lambda p: (-pairs[p], p[0] + p[1]))
""" + APPLY, "on a tie take the smallest pair"),
        (MERGE + """\
    from collections import Counter
    pairs = Counter()
    for w, n in words.items():
        for p in zip(w, w[1:]):
            pairs[p] += n
    best = min(pairs, key=lambda p: (-pairs[p], p))
    new = {}
    for w, n in words.items():
        w = list(w)
        for i in range(len(w) - 1):
            if (w[i], w[i + 1]) == best:
                w[i:i + 2] = [w[i] + w[i + 1]]
                break
        new[tuple(w)] = n
    return best, new
""", "merge *every* occurrence"),
        (MERGE + """\
    from collections import Counter
    pairs = Counter()
    for w, n in words.items():
        for p in zip(w, w[1:]):
            pairs[p] += n
    best = min(pairs, key=lambda p: (-pairs[p], p))
    for w in list(words):
        n = words.pop(w)
        out, i = [], 0
        while i < len(w):
            if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                out.append(w[i] + w[i + 1]); i += 2
            else:
                out.append(w[i]); i += 1
        words[tuple(out)] = n
    return best, words
""", "changed the dictionary it was given ({('a', 'b'): 1, ('a', 'b', 'c'): 1, ('x', 'y'): 10}; now {('a', 'b'): 1, "
        "('a', 'b', 'c'): 1, ('xy',): 10}; ('x', 'y'), ('xy',) changed)"),
        (MERGE + """\
    from collections import Counter
    pairs = Counter()
    for w, n in words.items():
        i = 0
        while i < len(w) - 1:            # jumps over a pair once counted: 'a a a' holds (a, a) once
            pairs[(w[i], w[i + 1])] += n
            i += 2 if i + 2 < len(w) and w[i] == w[i + 1] == w[i + 2] else 1
    best = min(pairs, key=lambda p: (-pairs[p], p))
""" + APPLY, "count the pair at every position"),
        (MERGE + """\
    from collections import Counter
    pairs = Counter()
    for w, n in words.items():
        for p in zip(w, w[1:]):
            pairs[p] += n
    best = min(pairs, key=lambda p: (-pairs[p], p))
    new = {}
    for w, n in words.items():
        out, i = [], len(w) - 1            # merges from the right
        while i >= 0:
            if i > 0 and (w[i - 1], w[i]) == best:
                out.insert(0, w[i - 1] + w[i]); i -= 2
            else:
                out.insert(0, w[i]); i -= 1
        new[tuple(out)] = n
    return best, new
""", "merge from left to right"),
        (MERGE + """\
    from collections import Counter
    pairs = Counter()
    for w, n in words.items():
        for p in zip(w, w[1:]):
            pairs[p] += n
    best = min(pairs, key=lambda p: (-pairs[p], p))
    new = {}
    for w, n in words.items():            # merges in the spelling as text: 't h</w>' also holds 't h'
        merged = tuple(' '.join(w).replace(' '.join(best), ''.join(best)).split(' '))
        new[merged] = new.get(merged, 0) + n
    return best, new
""", "a symbol is a unit, not a string of characters"),
        (MERGE + """\
    from collections import Counter
    stream = [s for w, n in words.items() for _ in range(n) for s in w]   # the corpus as one stream of symbols
    pairs = Counter(zip(stream, stream[1:]))
    best = min(pairs, key=lambda p: (-pairs[p], p))
""" + APPLY, "pairs never cross a word boundary"),
    ],
    "viterbi": [
        (VITERBI + """\
    pieces, i = [], 0
    while i < len(word):
        j = max(j for j in range(i + 1, len(word) + 1) if word[i:j] in log_probs)
        pieces.append(word[i:j])
        i = j
    return pieces
""", "the longest piece at each step"),
        (VITERBI + "    return list(word)\n", "has log-probability"),
        # the forward algorithm's sum over paths where Viterbi takes the max, then the best last piece
        (VITERBI + """\
    import math
    n, score, back = len(word), [0.0] + [-math.inf] * len(word), [0] * (len(word) + 1)
    for i in range(1, n + 1):
        terms = [(score[j] + log_probs[word[j:i]], j) for j in range(i) if word[j:i] in log_probs]
        terms = [(t, j) for t, j in terms if t > -math.inf]
        top = max(t for t, _ in terms)
        score[i] = top + math.log(sum(math.exp(t - top) for t, _ in terms))
        back[i] = max(terms)[1]
    pieces, i = [], n
    while i > 0:
        pieces.append(word[back[i]:i])
        i = back[i]
    return pieces[::-1]
""", "a max, not a sum"),
        (VITERBI + "    return [word[:2], word[2:]]\n", "is not a piece of the vocabulary"),
    ],
    "wordpiece_word_ids": [
        (GOOD_WORDPIECE + """
def wordpiece_word_ids(text, vocab):
    tokens = []
    for word in basic_tokenize(text):
        tokens += wordpiece_tokenize(word, vocab)
    return tokens, list(range(len(tokens)))
""", "every piece of a word gets the index of its word"),
        (GOOD_WORDPIECE + """
def wordpiece_word_ids(text, vocab):
    tokens, ids = [], []
    for i, word in enumerate(text.split()):
        pieces = wordpiece_tokenize(word, vocab)
        tokens += pieces
        ids += [i] * len(pieces)
    return tokens, ids
""", "normalise and split the text first"),
        (GOOD_WORDPIECE + """
def wordpiece_word_ids(text, vocab):
    return [t for w in basic_tokenize(text) for t in wordpiece_tokenize(w, vocab)]
""", "return a pair (tokens, word_ids)"),
        (GOOD_WORDPIECE + """
import re, unicodedata
def wordpiece_word_ids(text, vocab):
    text = unicodedata.normalize("NFD", text.lower())
    text = "".join(c for c in text if unicodedata.category(c) != "Mn")
    tokens, ids = [], []
    for i, w in enumerate(re.findall(r"\\w+|[^\\w\\s]", text)):
        p = wordpiece_tokenize(w, vocab)
        tokens += p
        ids += [i] * len(p)
    return tokens, ids
""", "makes every punctuation character a word of its own, the underscore too, and every CJK character as well"),
    ],
    "fertility_prediction": [
        ('most_pieces = "Python code"', "an unknown character costs one piece, as a letter no merge joined does"),
        ('most_pieces = "code"', "choose one of"),
    ],
    "alpha_prediction": [
        ('viterbi_share = "goes down"', "If one segmentation is twice as probable as another"),
    ],
}
