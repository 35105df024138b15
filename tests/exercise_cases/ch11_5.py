"""Known-wrong answers to the exercises of notebook 11.5 (notebooks/11_5_span_based.py).

Each case is a whole answer cell with one mistake; tests/test_exercise_registry.py runs it after the notebook's
``setup`` cells and checks that the message contains the hint given here.
"""

LENGTHS = """\
def sample_span_lengths(n, p=0.2, max_len=10, generator=None):
    lengths = torch.arange(1, max_len + 1, dtype=torch.float64)
    probs = p * (1 - p) ** (lengths - 1)
    return torch.multinomial(probs / probs.sum(), n, replacement=True, generator=generator) + 1
"""
CUT = """\
import math


def sample_span_lengths(n, p=0.2, max_len=10, generator=None):
    u = torch.rand(n, generator=generator, dtype=torch.float64)
    raw = torch.floor(torch.log(u) / math.log(1 - p)).long() + 1
    return raw.clamp(max=max_len)
"""
ENUM = """\
def enumerate_spans(n, max_len=None):
    L = n if max_len is None else max_len
    return [(i, j) for i in range(n) for j in range(i, min(i + L, n))]
"""
REP = """\
def span_representation(z, i, j):
    g = z[i:j + 1].mean(dim=0)
    return torch.cat([z[i], z[j], g])
"""
SBO = """\
def build_sbo_input(z, s, e, i, P):
    return torch.cat([z[s - 1], z[e + 1], P[i - s]])
"""
COMPOSE = ENUM + REP + """\
def predict_entities(z, max_len, scorer, names):
    out = []
    for i, j in enumerate_spans(z.shape[0], max_len):
        k = int(scorer(span_representation(z, i, j)).argmax())
        if k != 0:
            out.append((i, j, names[k]))
    return out
"""


def edit(source: str, old: str, new: str) -> str:
    """The reference answer with one mistake: ``old`` (which must be there) replaced by ``new``."""
    assert old in source, old
    return source.replace(old, new)


WRONG_ANSWERS = {
    "span_lengths": [
        (CUT, "piles all their probability"),
        (edit(LENGTHS, "replacement=True, generator=generator) + 1", "replacement=True, generator=generator)"),
         "lengths start at 1"),
        (edit(LENGTHS, "probs = p * (1 - p) ** (lengths - 1)", "probs = (1 - p) * p ** (lengths - 1)"),
         "probability of stopping"),
        (edit(LENGTHS, "probs = p * (1 - p) ** (lengths - 1)", "probs = torch.ones(max_len)"), "look uniform"),
        (edit(LENGTHS, "generator=generator) + 1", "generator=None) + 1"), "pass `generator`"),
        # a generator of its own, seeded once: the same seed gives the same draws, but so does every other seed
        (edit(LENGTHS, "generator=generator) + 1", "generator=torch.Generator().manual_seed(0)) + 1"),
         "do not make or seed a generator (torch's or numpy's) of your own"),
        ("import numpy as np\n\n\n" + edit(LENGTHS, "    return torch.multinomial(probs / probs.sum(), n, replacement=True, "
                                                   "generator=generator) + 1",
                                           "    rng = np.random.default_rng(123)\n"
                                           "    return torch.as_tensor(rng.choice(lengths.numpy(), size=n, "
                                           "p=(probs / probs.sum()).numpy())).long()"),
         "Draw every random number from `generator`"),
        (edit(LENGTHS, "lengths = torch.arange(1, max_len + 1, dtype=torch.float64)",
              "lengths = torch.arange(1, 11, dtype=torch.float64)"), "above the bound of 4"),
        # torch's global generator, reseeded from the one given: every length right, the notebook's later draws not
        (edit(LENGTHS, "    return torch.multinomial(probs / probs.sum(), n, replacement=True, generator=generator) + 1",
              "    torch.manual_seed(int(torch.randint(2 ** 62, (1,), generator=generator)))\n"
              "    return torch.multinomial(probs / probs.sum(), n, replacement=True) + 1"),
         "your function changed torch's global random generator (torch.manual_seed, or a draw without generator=)"),
        ("import numpy as np\n\n\n" + edit(LENGTHS, "    return torch.multinomial(probs / probs.sum(), n, replacement=True, "
                                                   "generator=generator) + 1",
                                           "    np.random.seed(int(torch.randint(2 ** 31, (1,), generator=generator)))\n"
                                           "    return torch.as_tensor(np.random.choice(lengths.numpy(), size=n, "
                                           "p=(probs / probs.sum()).numpy())).long()"),
         "your function changed numpy's global random generator"),
    ],
    "span_enumeration": [
        (edit(ENUM, "range(i, min(i + L, n))", "range(i, min(i + L + 1, n))"), "allows j - i < L"),
        (edit(ENUM, "range(i, min(i + L, n))", "range(i + 1, min(i + L, n))"), "one-token spans"),
        (edit(ENUM, "range(i, min(i + L, n))", "range(i, min(i + L, n + 1))"), "0 ≤ i ≤ j < n"),
        (edit(ENUM, "    return [(i, j)", "    return [(0, 0)] * (n > 0) + [(i, j)"), "lists a span twice"),
    ],
    "boundary_rep": [
        (edit(REP, "g = z[i:j + 1].mean(dim=0)", "g = z[i:j].mean(dim=0)"), "stops before z_j"),
        (edit(REP, "g = z[i:j + 1].mean(dim=0)", "g = z[i:j + 1].sum(dim=0)"), "not their sum"),
        (edit(REP, "torch.cat([z[i], z[j], g])", "torch.cat([z[j], z[i], g])"), "start z_i comes first"),
        (edit(REP, "torch.cat([z[i], z[j], g])", "torch.stack([z[i], z[j], g])"), "concatenate three d-vectors"),
        (edit(REP, "torch.cat([z[i], z[j], g])", "torch.cat([z[i - 1], z[j + 1], g])"), "both inside the span"),
    ],
    "sbo_input": [
        (edit(SBO, "z[s - 1], z[e + 1]", "z[s], z[e]"), "just *outside* the span"),
        (edit(SBO, "P[i - s]", "P[i - s + 1]"), "p_k is row k - 1 of P"),
        (edit(SBO, "P[i - s]", "P[i - 1]"), "relative* to the span"),
        (edit(SBO, "z[s - 1], z[e + 1]", "z[e + 1], z[s - 1]"), "z_(s-1) (left boundary)"),
        (edit(SBO, "P[i - s]", "P[e - i]"), "relative to the left boundary s - 1, counted from the left"),
        (edit(SBO, "P[i - s]", "P[i - s - 1]"),  # was told "p_(i-s+1), row i - s of P": the answer itself
         "counted from the left boundary s - 1 (the span's first token is position 1); P's rows are counted from 0"),
    ],
    "span_ner_decode": [
        (edit(COMPOSE, "        if k != 0:\n            out.append((i, j, names[k]))", "        out.append((i, j, names[k]))"),
         "not NULL"),
        (edit(COMPOSE, "for i, j in enumerate_spans(z.shape[0], max_len):",
              "for i, j in enumerate_spans(z.shape[0], None):"), "only spans with j - i < L"),
        (edit(COMPOSE, "k = int(scorer(span_representation(z, i, j)).argmax())",
              "k = int(scorer(torch.cat([z[i], z[j], z[i]])).argmax())"), "Enumerate the spans, represent each"),
        # "the best non-NULL class when its probability passes a threshold": right on most spans, wrong on a
        # close call where NULL wins (issue 25)
        (edit(COMPOSE, "        k = int(scorer(span_representation(z, i, j)).argmax())\n        if k != 0:",
              "        p = scorer(span_representation(z, i, j)).softmax(-1)\n"
              "        k = int(p[1:].argmax()) + 1\n        if p[k] > 0.0076:"),
         "how close another class comes does not matter"),
        # argmax, then a threshold on the winner (the cell before taught one): right on confident spans only
        *[(edit(COMPOSE, "        k = int(scorer(span_representation(z, i, j)).argmax())\n        if k != 0:",
                "        p = scorer(span_representation(z, i, j)).softmax(-1)\n"
                f"        k = int(p.argmax())\n        if k != 0 and p[k] >= {t}:"),
           "however small its probability") for t in (0.3, 0.4)],
    ],
    "mean_span_length": [('mean_length_guess = "5.0"', "unbounded geometric")],
    "bio_both_orgs": [('bio_sequences_with_both = "1"', "How many tags does each word get in a BIO sequence?")],
}

RIGHT_ANSWERS = {  # other correct answers than the notebook's: each must be graded correct
    "span_ner_decode": [
        (edit(COMPOSE, """\
    out = []
    for i, j in enumerate_spans(z.shape[0], max_len):
        k = int(scorer(span_representation(z, i, j)).argmax())
        if k != 0:
            out.append((i, j, names[k]))
    return out""", """\
    spans = enumerate_spans(z.shape[0], max_len)
    ks = scorer(torch.stack([span_representation(z, i, j) for i, j in spans])).argmax(-1)
    return [(i, j, names[int(k)]) for (i, j), k in zip(spans, ks) if int(k) != 0]"""),
         "every span scored in one batch: a scorer (an FFN) reads a batch of span vectors row by row"),
    ],
}
