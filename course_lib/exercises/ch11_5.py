"""Exercises of notebook 11.5, span-based masking and span tasks (SLP3 §11.5).

span_lengths         sample_span_lengths(n, p=0.2, max_len=10, generator=None) -> (n,) long tensor of lengths
                     1..max_len from the geometric distribution renormalised over 1..max_len (§11.5.1);
                     graded statistically: 60,000 draws at fixed seeds must pass a chi-square test against the
                     exact probabilities, for SpanBERT's (0.2, 10) and for (0.5, 4)
span_enumeration     enumerate_spans(n, max_len=None) -> every (i, j) with 0 <= i <= j < n and j - i < max_len
                     (all n(n+1)/2 without a limit) (§11.5.2)
boundary_rep         span_representation(z, i, j) -> [z_i; z_j; g_ij] with g_ij the mean of z_i..z_j (eq. 11.21-11.22)
sbo_input            build_sbo_input(z, s, e, i, P) -> [z_(s-1); z_(e+1); p_(i-s+1)] with P's row k-1 = p_k (eq. 11.19)
span_ner_decode      predict_entities(z, max_len, scorer, names) -> [(i, j, name), ...]: enumerate the spans,
                     represent each (eq. 11.22), score it (eq. 11.27), keep those whose best class is not NULL
                     -- the composing exercise
mean_span_length     prediction: the mean span length of SpanBERT's bounded geometric distribution
bio_both_orgs        prediction: how many BIO tag sequences hold both "United Airlines" and "United Airlines Holding"

References are course_lib's (``course_lib.spans``).
"""
from __future__ import annotations

import torch

from ..spans.masking import mean_span_length, span_length_distribution
from ..spans.ner import count_spans
from ..spans.ner import enumerate_spans as reference_enumerate
from ..spans.representations import boundary_representation
from ..spans.sbo import sbo_input as reference_sbo_input
from .core import Wrong, exercise, question
from .hints import close

DRAWS = 60_000
LENGTH_RUNS = [(0.2, 10, 11), (0.5, 4, 12)]  # (p, max_len, seed); the first is passed as the defaults
ALPHA = 1e-6  # a correct sampler fails the chi-square test at a fixed seed with this probability
OTHER_SEED = 1000  # added to a run's seed: a sampler that ignores `generator` draws the same lengths again


# ----------------------------------------------------------------------------- span_lengths

def _lengths(sample_span_lengths, p, max_len, seed, defaults, touched=None):
    """The student's DRAWS lengths from a generator seeded ``seed``; the global generators the call changed are
    added to ``touched``."""
    from .remote import value_and_generators   # the check's side only: the sandbox never imports it

    g = torch.Generator().manual_seed(seed)
    args = (DRAWS,) if defaults else (DRAWS, p, max_len)
    got, changed = value_and_generators(sample_span_lengths, args, {"generator": g})
    if touched is not None:
        touched += changed
    if not torch.is_tensor(got):
        try:
            got = torch.as_tensor(got)
        except (TypeError, ValueError):
            raise Wrong(f"return a tensor of {DRAWS} lengths, not a {type(got).__name__}") from None
    if got.shape != (DRAWS,):
        raise Wrong(f"sample_span_lengths({DRAWS}, ...) should return shape ({DRAWS},), got {tuple(got.shape)}")
    if got.is_floating_point():
        if not torch.equal(got, got.round()):
            raise Wrong("span lengths are whole numbers of words; yours have fractions")
        got = got.long()
    return got.long()


@exercise("span_lengths", needs=["sample_span_lengths"])
def check_span_lengths(sample_span_lengths):
    from .remote import refuse_global_draws   # the check's side only: the sandbox never imports it

    for p, max_len, seed in LENGTH_RUNS:
        defaults = (p, max_len) == (0.2, 10)
        where = "with the defaults (p = 0.2, max_len = 10)" if defaults else f"with p = {p}, max_len = {max_len}"
        touched: list = []
        got = _lengths(sample_span_lengths, p, max_len, seed, defaults, touched)
        if int(got.min()) < 1:
            raise Wrong(f"{where}: a length of {int(got.min())} was drawn; a span has at least one word, so lengths "
                        "start at 1 (the geometric distribution counts trials up to and including the first success)")
        if int(got.max()) > max_len:
            raise Wrong(f"{where}: a length of {int(got.max())} was drawn, above the bound of {max_len}")
        again = _lengths(sample_span_lengths, p, max_len, seed, defaults)
        if not torch.equal(got, again):
            raise Wrong(f"{where}: two calls with generators seeded alike (seed {seed}) gave different lengths: "
                        "pass `generator` to every random call")
        other = _lengths(sample_span_lengths, p, max_len, seed + OTHER_SEED, defaults)
        if torch.equal(got, other):
            raise Wrong(f"{where}: generators seeded {seed} and {seed + OTHER_SEED} gave the same {DRAWS:,} lengths, "
                        "so your draws do not come from the generator you are given. Draw every random number from "
                        "`generator`, and do not make or seed a generator (torch's or numpy's) of your own")
        refuse_global_draws(touched, "The lengths look right", where=f"{where}: ")
        probs = span_length_distribution(p, max_len)
        observed = torch.bincount(got, minlength=max_len + 1)[1:].double()
        expected = probs * DRAWS
        share = observed / DRAWS
        chi2 = float(((observed - expected) ** 2 / expected).sum())
        from scipy import stats  # here: every grading worker imports this module, and scipy.stats takes ~0.7 s

        if stats.chi2.sf(chi2, df=max_len - 1) >= ALPHA:
            continue
        if float(share.max() - share.min()) < 0.02:
            raise Wrong(f"{where}: your lengths look uniform over 1..{max_len}; P(ℓ) should fall by a factor "
                        f"(1 - p) = {1 - p} from each length to the next")
        cut_top = (1 - p) ** (max_len - 1)  # P(min(L, max) = max) when long draws are cut instead of redrawn
        if abs(share[-1] - cut_top) < abs(share[-1] - probs[-1]) and share[-1] > probs[-1]:
            raise Wrong(f"{where}: {share[-1]:.1%} of your lengths are exactly {max_len}, expected {probs[-1]:.1%}. "
                        f"Cutting long draws down to {max_len} piles all their probability on {max_len}; SpanBERT's "
                        "distribution is renormalised over 1..max_len, as if a draw above the bound were drawn again")
        ratio = float(share[1] / share[0]) if share[0] > 0 else float("inf")
        if p != 0.5 and abs(ratio - p) < abs(ratio - (1 - p)):
            raise Wrong(f"{where}: length 1 has {share[0]:.1%} of your draws, expected {probs[0]:.1%}, and each "
                        f"length is about {ratio:.2f} times as likely as the one before, not 1 - p = {1 - p}. Is p "
                        "the probability of stopping after each word (P(ℓ) = p (1-p)^(ℓ-1)), or did you use it as "
                        "the probability of going on?")
        worst = int((observed - expected).abs().argmax())
        raise Wrong(f"{where}: your {DRAWS:,} lengths do not follow P(ℓ) ∝ p (1-p)^(ℓ-1) on 1..{max_len} (chi-square "
                    f"{chi2:.0f}, df {max_len - 1}); the largest gap is at ℓ = {worst + 1}: {share[worst]:.1%} of "
                    f"your draws, expected {probs[worst]:.1%}")
    return f"{DRAWS:,} draws at two settings match the bounded geometric distribution (chi-square test)"


# ----------------------------------------------------------------------------- span_enumeration

ENUM_CASES = [(5, None), (1, None), (6, 2), (7, 3), (4, 10), (9, 1), (0, None)]


@exercise("span_enumeration", needs=["enumerate_spans"])
def check_span_enumeration(enumerate_spans):
    for n, L in ENUM_CASES:
        got = enumerate_spans(n) if L is None else enumerate_spans(n, L)
        call = f"enumerate_spans({n})" if L is None else f"enumerate_spans({n}, {L})"
        try:
            got = [(int(i), int(j)) for i, j in got]
        except (TypeError, ValueError):
            raise Wrong(f"{call} should return a list of (i, j) pairs") from None
        want = reference_enumerate(n, L)
        if len(set(got)) != len(got):
            raise Wrong(f"{call} lists a span twice")
        bad = [s for s in got if not 0 <= s[0] <= s[1] < n]
        if bad:
            raise Wrong(f"{call} gives {bad[0]}: a span needs 0 ≤ i ≤ j < n (positions from 0, the end included)")
        missing = sorted(set(want) - set(got))
        extra = sorted(set(got) - set(want))
        if extra:
            i, j = extra[0]
            raise Wrong(f"{call} gives ({i}, {j}), which has {j - i + 1} tokens: the limit L = {L} allows j - i < L, "
                        f"at most {L} tokens")
        if missing:
            i, j = missing[0]
            what = "one-token spans (i = j) are spans too" if i == j else \
                f"it has {j - i + 1} tokens, within the limit" if L is not None else "every i ≤ j is a span"
            raise Wrong(f"{call} misses ({i}, {j}): {what}. Expected {len(want)} spans"
                        + (f" = n(n+1)/2 = {count_spans(n)}" if L is None else "") + f", you gave {len(got)}")
    return "n(n+1)/2 spans without a limit, j - i < L with one"


# ----------------------------------------------------------------------------- boundary_rep

def _z(T=6, d=4, seed=5):
    return torch.randn(T, d, generator=torch.Generator().manual_seed(seed))


@exercise("boundary_rep", needs=["span_representation"])
def check_boundary_rep(span_representation):
    z = _z()
    d = z.size(1)
    for i, j in [(1, 3), (2, 2), (0, 5), (4, 5)]:
        got = span_representation(z.clone(), i, j)
        if not torch.is_tensor(got):
            raise Wrong(f"return a tensor, not a {type(got).__name__}")
        want = boundary_representation(z, [(i, j)])[0]
        if got.shape != want.shape:
            raise Wrong(f"for z of shape (6, {d}) the representation has 3d = {3 * d} numbers, got shape "
                        f"{tuple(got.shape)}: concatenate three d-vectors into one")
        if close(got, want):
            continue
        parts = [got[:d], got[d:2 * d], got[2 * d:]]
        if close(parts[0], z[j]) and close(parts[1], z[i]):
            raise Wrong(f"span ({i}, {j}): the start z_i comes first, then the end z_j")
        if not close(parts[0], z[i]) or not close(parts[1], z[j]):
            raise Wrong(f"span ({i}, {j}): the first two parts should be z_i and z_j, the outputs at the span's "
                        "first and last positions (both inside the span)")
        if j > i and close(parts[2], z[i:j].mean(0)):
            raise Wrong(f"span ({i}, {j}): your mean stops before z_j; g_ij averages z_i … z_j, the end included "
                        "(eq. 11.21: j - i + 1 vectors)")
        if close(parts[2], z[i:j + 1].sum(0)):
            raise Wrong(f"span ({i}, {j}): g_ij is the mean of z_i … z_j, not their sum")
        raise Wrong(f"span ({i}, {j}): the third part should be g_ij = 1/(j-i+1) Σ_k z_k (eq. 11.21)")
    return "[z_i; z_j; g_ij] for four spans"


# ----------------------------------------------------------------------------- sbo_input

@exercise("sbo_input", needs=["build_sbo_input"])
def check_sbo_input(build_sbo_input):
    z = _z(9, 4, seed=7)
    P = torch.randn(10, 3, generator=torch.Generator().manual_seed(8))  # d_p = 3 ≠ d, so parts are recognisable
    for s, e, i in [(3, 5, 4), (3, 5, 3), (2, 7, 3), (2, 2, 2), (1, 7, 7)]:  # (2, 7, 3): e - i, i - 1, i all differ
        got = build_sbo_input(z.clone(), s, e, i, P.clone())
        if not torch.is_tensor(got):
            raise Wrong(f"return a tensor, not a {type(got).__name__}")
        want = reference_sbo_input(z, s, e, i, P)
        if got.shape != want.shape:
            raise Wrong(f"expected {want.numel()} numbers (z_(s-1), z_(e+1): 4 each; p: 3), got shape {tuple(got.shape)}")
        if close(got, want):
            continue
        left, right, pos = got[:4], got[4:8], got[8:]
        where = f"token {i} of the span ({s}, {e})"
        if close(left, z[s]) or close(right, z[e]):
            raise Wrong(f"{where}: the SBO reads the tokens just *outside* the span, z_(s-1) and z_(e+1), not its "
                        "first and last tokens (those are masked)")
        if not (close(left, z[s - 1]) and close(right, z[e + 1])):
            raise Wrong(f"{where}: the first two parts are z_(s-1) (left boundary) and z_(e+1) (right boundary)")
        if e - i != i - s and close(pos, P[e - i]):
            raise Wrong(f"{where}: you counted the position from the span's right end (e - i = {e - i}); the position "
                        "is relative to the left boundary s - 1, counted from the left")
        if i - s + 1 < P.size(0) and close(pos, P[i - s + 1]):
            raise Wrong(f"{where}: its relative position is i - s + 1 = {i - s + 1}, and p_k is row k - 1 of P; you "
                        f"took row {i - s + 1}")
        if close(pos, P[i - 1]) or close(pos, P[i]):
            raise Wrong(f"{where}: the position embedding is *relative* to the span (i - s + 1 = {i - s + 1}), "
                        "not the token's position in the sentence")
        raise Wrong(f"{where}: the last part is the embedding of token i's position inside the span, counted from "
                    "the left boundary s - 1 (the span's first token is position 1); P's rows are counted from 0")
    return "[z_(s-1); z_(e+1); p_(i-s+1)] for five tokens"


# ----------------------------------------------------------------------------- span_ner_decode (composing)

NAMES = ("NULL", "LOC", "ORG", "PER")


def _scorer():
    W = torch.randn(len(NAMES), 12, generator=torch.Generator().manual_seed(21))
    b = torch.tensor([8.0, 0.0, 0.0, 0.0])  # NULL wins about half the spans, and each of the three types occurs

    def scorer(rep):
        rep = torch.as_tensor(rep)
        if rep.shape[-1] != 12:
            raise ValueError(f"the scorer reads span representations of 3d = 12 numbers, got shape {tuple(rep.shape)}")
        return rep @ W.T + b
    return scorer


def _close_call_scorer():
    """NULL wins every span whose representation sums below 0, with LOC a close second (p(LOC) about 0.4): a rule
    like "the best non-NULL class, if its probability is above a threshold" tags those spans too."""
    def scorer(rep):
        rep = torch.as_tensor(rep)
        if rep.shape[-1] != 12:
            raise ValueError(f"the scorer reads span representations of 3d = 12 numbers, got shape {tuple(rep.shape)}")
        null_wins = torch.tensor([1.0, 0.9, 0.0, -1.0])
        loc_wins = torch.tensor([0.0, 1.0, 0.2, 0.1])
        return torch.where(rep.sum(-1, keepdim=True) < 0, null_wins, loc_wins)
    return scorer


def _low_confidence_scorer():
    """A type wins every span whose representation sums to 0 or more, but only just (logits like [0, 0.1, 0, 0]:
    p ≈ 0.27); NULL wins the others clearly. A rule "the argmax, if its probability reaches a threshold" drops the
    close wins that argmax decoding keeps."""
    def scorer(rep):
        rep = torch.as_tensor(rep)
        if rep.shape[-1] != 12:
            raise ValueError(f"the scorer reads span representations of 3d = 12 numbers, got shape {tuple(rep.shape)}")
        null_wins = torch.tensor([2.0, 0.0, 0.0, 0.0])
        k = 1 + (rep.abs().sum(-1) * 10).floor().long() % 3  # which type wins, per span: LOC, ORG or PER
        type_wins = 0.1 * torch.nn.functional.one_hot(k, 4).to(rep.dtype)   # row by row: a batch of spans works too
        return torch.where(rep.sum(-1, keepdim=True) < 0, null_wins, type_wins)
    return scorer


def reference_entities(z, max_len, scorer, names):
    out = []
    for i, j in reference_enumerate(z.size(0), max_len):
        logits = scorer(boundary_representation(z, [(i, j)])[0])
        k = int(logits.argmax())
        if k != 0:
            out.append((i, j, names[k]))
    return out


@exercise("span_ner_decode", needs=["predict_entities"])
def check_span_ner_decode(predict_entities):
    z = _z(7, 4, seed=9)
    for max_len, make in ((3, _scorer), (None, _scorer), (1, _scorer), (3, _close_call_scorer),
                          (3, _low_confidence_scorer)):
        want = reference_entities(z, max_len, make(), NAMES)
        got = predict_entities(z.clone(), max_len, make(), NAMES)
        try:
            got = [(int(i), int(j), str(t)) for i, j, t in got]
        except (TypeError, ValueError):
            raise Wrong("return a list of (i, j, label) triples") from None
        if any(t == "NULL" for _, _, t in got):
            raise Wrong("keep only the spans whose best class is not NULL (class 0): NULL means 'not an entity'")
        if sorted(got) == sorted(want):
            continue
        longer = [s for s in got if max_len is not None and s[1] - s[0] >= max_len]
        if longer:
            raise Wrong(f"with max_len = {max_len} you return {longer[0]}: only spans with j - i < L are scored")
        missing = sorted(set(want) - set(got))
        extra = sorted(set(got) - set(want))
        def null_wins_there(span):
            logits = make()(boundary_representation(z, [span[:2]])[0])
            return int(logits.argmax()) == 0 and NAMES[int(logits[1:].argmax()) + 1] == span[2]

        if extra and not missing and all(null_wins_there(x) for x in extra):
            i, j, t = extra[0]
            raise Wrong(f"span ({i}, {j}): NULL has the highest score and {t} comes close, and you tag it {t}. "
                        "A span is an entity only when its best class (the argmax over all classes, NULL included) "
                        "is not NULL; how close another class comes does not matter")
        def narrow_win(span):
            return float(make()(boundary_representation(z, [span[:2]])[0]).softmax(-1).max()) < 0.5

        if missing and not extra and all(narrow_win(x) for x in missing):
            i, j, t = missing[0]
            p = float(make()(boundary_representation(z, [(i, j)])[0]).softmax(-1).max())
            raise Wrong(f"span ({i}, {j}): {t} has the highest score (p = {p:.2f}), and you leave it out. Argmax "
                        "decoding keeps every span whose best class is not NULL, however small its probability; a "
                        "threshold on the probability is another decoding rule, not the one asked for here")
        s = (missing or extra)[0]
        raise Wrong(f"with max_len = {max_len}: expected {len(want)} entities, got {len(got)}; "
                    + (f"({s[0]}, {s[1]}) should be {s[2]}" if missing else f"({s[0]}, {s[1]}, {s[2]}) is not one")
                    + ". Enumerate the spans, represent each as [z_i; z_j; g_ij], take the argmax of the scorer's "
                      "output and map it to a name"
                    + (" (the right spans with the wrong labels: check the representation, g_ij is the mean of "
                       "z_i … z_j, both ends included)" if {x[:2] for x in got} == {x[:2] for x in want} else ""))
    return "enumerate, represent, classify, decode: composed"


# ----------------------------------------------------------------------------- predictions

question(
    "mean_span_length", variable="mean_length_guess", choices=["2.0", "3.8", "4.5", "5.0"],
    answer="3.8",
    why=f"Geometric(0.2) alone has mean 1/p = 5 words, but lengths above 10 are redrawn: the distribution is "
        f"renormalised over 1..10, which removes the long tail, and the mean falls to {mean_span_length():.2f}. "
        "(Cutting long draws to 10 instead would pile their mass on 10 and give 4.46.)",
    hint="start from the mean of an unbounded geometric distribution with p = 0.2 (1/p), then ask what taking "
         "away every length above 10 does to it",
    giveaways=["3.8 words", "reports, 3.8", "mean of 3.8"])

question(
    "bio_both_orgs", variable="bio_sequences_with_both", choices=["0", "1", "6", "25"], answer="0",
    why="every word has one tag. 'Holding' is either I-ORG (then the entity runs to 'Holding' and 'United "
        "Airlines' alone is never closed) or something else (then 'United Airlines Holding' is never an entity). "
        "No sequence of the 5^6 = 15,625 holds both: BIO encodes one layer of entities",
    hint="write, word by word, the tags that make 'United Airlines' an entity, and those that make 'United "
         "Airlines Holding' one. How many tags does each word get in a BIO sequence?",
    giveaways=["why BIO cannot hold", "BIO cannot hold", "no BIO tagger can output", "BIO encodes one layer"])
