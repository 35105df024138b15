"""Exercises of notebook 11.3, contextual embeddings (SLP3 §11.3).

word_vector      word_vector(hidden_states, word_ids, word) -> (d,): the mean of the last four layers,
                 averaged over the word's subword tokens (§11.3.1)
sense_centroids  sense_centroids(vectors, labels) -> {label: (d,) mean of that sense's vectors} (eq. 11.8)
nearest_sense    nearest_sense(vector, centroids) -> the label of the centroid of highest cosine (eq. 11.9)
wsd_predict      wsd_predict(train_vectors, train_senses, train_lemmas, test_vectors, test_lemmas) -> one sense per
                 test vector: composes the two above, each word choosing only among its own senses
z_score          z_score(X, corpus, eps=1e-6) -> (X - μ) / σ with μ, σ (population) fitted on the corpus,
                 0 where σ <= eps (eq. 11.10-11.12)
anisotropy       anisotropy_estimate(X, n_pairs=10000, generator=None) -> the mean cosine of n_pairs random
                 pairs of different rows (Ethayarajh 2019)
anisotropy_by_layer  anisotropy_by_layer(scored, fitted, n_pairs=10000, generator=None) -> [(raw, z_scored)] per
                 layer, L0 first: composes the two above, z-scoring fitted on *other* tokens

Prediction questions, asked before the cell that reveals the answer: ``random_wsd`` (does a randomly
initialised encoder beat the most-frequent-sense baseline at any layer?) and ``most_anisotropic`` (which of the
three models has the most anisotropic last layer?).

Every check uses small seeded synthetic inputs built so that each common mistake
gives a recognisably different answer, and compares with ``course_lib.embeddings``
or with a direct computation. The anisotropy estimate is random: it is compared
with the exact expected cosine over all pairs of different rows, within six
standard errors of an estimate from that many pairs.
"""
from __future__ import annotations

import math
import numbers
from collections import Counter
from collections.abc import Mapping

import torch
import torch.nn.functional as F

from ..embeddings import ZScorer, combine_layers, cosine_matrix
from ..embeddings import sense_centroids as reference_centroids
from .core import Wrong, exercise, question
from .hints import close, expect_shape, expect_tensor, first_mismatch, fmt_index, fmt_shape

SIGMAS = 6  # a statistical check fails only beyond this many standard errors
FLOAT_SLACK = 1e-4  # rounding of a float32 mean over thousands of cosines


def _same_inputs(before, after) -> bool:
    return all(torch.equal(a, b) for a, b in zip(before, after))


# ----------------------------------------------------------------------------- word_vector

# (layers L+1, d, word_ids, word): every size different (T, k, 4, L+1, d) so that a wrong shape says what it is;
# the word is split into several subwords, and its word index is not the position of its tokens
WORD_CASES = [
    (7, 5, [None, 0, 1, 1, 1, 2, 3, 3, None], 1),
    (13, 10, [None, 0, 1, 2, 2, 3, 4, None], 2),
    (5, 7, [None, 0, 0, 1, 2, None], 0),
]


def word_inputs(n_layers: int, d: int, word_ids: list, seed: int) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(len(word_ids), d, generator=g) for _ in range(n_layers))


def _describe_token(word_ids: list, t: int) -> str:
    if word_ids[t] is None:
        return "[CLS]" if t == 0 else "[SEP]"
    return f"a token of word {word_ids[t]}"


def _layer_variants(n: int) -> list[tuple[torch.Tensor, str | None]]:
    """(weights over the n = L+1 layers, what the answer did); the reference first."""
    L = n - 1
    last4 = torch.zeros(n, dtype=torch.float64)
    last4[-4:] = 1
    out = [(last4 / 4, None), (last4, "you summed the last four layers: this exercise asks for their mean — summing "
                                      "is common too and gives the same cosines, since the sum is 4 × the mean, but "
                                      "not the same vector")]
    for k in range(n):
        w = torch.zeros(n, dtype=torch.float64)
        w[k] = 1
        if k == L:
            msg = ("you used only the last layer, hidden_states[-1]: the feature is the average of the last four "
                   "layers' vectors of the word, one vector per layer, averaged element by element")
        elif k == L - 3:
            msg = (f"you used only hidden_states[-4] (layer {k}), the first of the last four layers: average all "
                   "four, one vector per layer, element by element")
        else:
            what = "the embedding layer" if k == 0 else f"layer {k} of {L}"
            msg = f"you used only hidden_states[{k}] ({what}): average the last four layers, hidden_states[-4:]"
        out.append((w, msg))
    for a in range(n):
        for b in range(a + 2, n + 1):
            if (a, b) == (n - 4, n):
                continue
            w = torch.zeros(n, dtype=torch.float64)
            w[a:b] = 1
            where = f"hidden_states[{a}:{b}] (layers {a}…{b - 1})"
            last4 = (f"the last four, hidden_states[-4:] (layers {L - 3}…{L}; hidden_states[0] is the embedding layer "
                     "and hidden_states[-4] the first of the last four)")
            out.append((w / (b - a), f"you averaged {where}: average {last4}"))
            out.append((w, f"you summed {where}: average {last4}"))
    return out


def _token_variants(word_ids: list, word: int) -> list[tuple[torch.Tensor, str | None]]:
    """(weights over the T tokens, what the answer did); the reference first."""
    T = len(word_ids)
    idx = [t for t, w in enumerate(word_ids) if w == word]
    k = len(idx)
    where = f"word {word} is split into {k} tokens, at positions {idx}"

    def weights(ts, mean=True):
        w = torch.zeros(T, dtype=torch.float64)
        w[ts] = 1 / len(ts) if mean else 1
        return w

    out = [(weights(idx), None)]
    if k > 1:
        out.append((weights(idx, mean=False), f"you summed the word's {k} subword tokens: average them"))
    special = [t for t, w in enumerate(word_ids) if w is None]
    words = [t for t, w in enumerate(word_ids) if w is not None]
    out += [
        (weights(list(range(T))), f"you averaged all {T} tokens of the sentence, [CLS] and [SEP] included: keep only "
                                  f"the tokens whose word id is {word}"),
        (weights(words), f"you averaged the tokens of every word of the sentence: keep only the tokens whose word id "
                         f"is {word}"),
        (weights(idx + special), f"you included [CLS] and [SEP] (their word id is None): keep only the tokens whose "
                                 f"word id is {word}"),
    ]
    if 0 <= word < T and word not in idx:  # the word index taken as a token position
        out.append((weights([word]), f"you took token number {word}, which is {_describe_token(word_ids, word)}: "
                                     f"`word` counts words, not tokens; {where} (word_ids[t] == {word})"))
    for other in dict.fromkeys(w for w in word_ids if w is not None and w != word):
        pos = [t for t, w in enumerate(word_ids) if w == other]
        out.append((weights(pos), f"you took the tokens of word {other} (positions {pos}), not those of word "
                                  f"{word}; {where}"))
    for t in range(T):
        if k > 1 and t == idx[0]:
            msg = f"you took only the first subword token of word {word}; {where}: average over all of them"
        elif k > 1 and t == idx[-1]:
            msg = f"you took only the last subword token of word {word}; {where}: average over all of them"
        elif t in idx:
            msg = f"you took only one of the subword tokens of word {word} (position {t}); {where}: average them all"
        else:
            msg = f"you took only token {t}, which is {_describe_token(word_ids, t)}; {where}"
        out.append((weights([t]), msg))
    return out


def _diagnose_word_vector(got, H, word_ids, word, expected):
    """H (L+1, T, d) double; got (d,) differs from expected: name the layers and tokens it seems to use."""
    for lw, lmsg in _layer_variants(H.size(0)):
        layered = torch.einsum("l,ltd->td", lw, H)
        for tw, tmsg in _token_variants(word_ids, word):
            if lmsg is None and tmsg is None:
                continue
            if close(got, tw @ layered):
                raise Wrong("; and ".join(m for m in (lmsg, tmsg) if m))
    idx, diff = first_mismatch(got, expected)
    raise Wrong(f"your vector differs from the mean of the last four layers over the word's subword tokens by "
                f"{diff:.3g} at {fmt_index(idx)}")


def _word_shape_hint(got, n_layers, word_ids, word, d) -> str:
    T, k = len(word_ids), sum(w == word for w in word_ids)
    shape = tuple(got.shape)
    if shape == (1, d):
        return ": one vector per word, (d,): the average should not keep an axis of length 1"
    if len(shape) == 2 and shape[1] == d:
        if shape[0] == k:
            return f": one vector per subword token; average over the word's {k} tokens"
        if shape[0] == 4:
            return ": one vector per layer; average the last four layers"
        if shape[0] == n_layers:
            return f": one vector per layer ({n_layers} layers); average the last four"
        if shape[0] == T:
            return f": one vector per token of the sentence; keep only the tokens whose word id is {word}"
    return ": average over the last four layers and over the word's subword tokens"


@exercise("word_vector", needs=["word_vector"])
def check_word_vector(word_vector):
    for seed, (n_layers, d, word_ids, word) in enumerate(WORD_CASES):
        hs = word_inputs(n_layers, d, word_ids, seed)
        H = torch.stack(hs)  # (L+1, T, d)
        expected = combine_layers(H.transpose(0, 1), "last4_mean")[[t for t, w in enumerate(word_ids) if w == word]]
        expected = expected.double().mean(0)
        case = (f"hidden_states: {n_layers} tensors {fmt_shape(H.shape[1:])}, word_ids {word_ids}, "
                f"word {word}")
        args = tuple(h.clone() for h in hs)
        ids = list(word_ids)
        try:
            got = word_vector(args, ids, word)
        except Wrong as e:
            if "NoneType" in str(e):
                raise Wrong(f"{e} ({case}): word_ids holds None for [CLS] and [SEP], so it cannot become a tensor; "
                            "find the word's positions in plain Python instead: go through word_ids and keep each "
                            "position whose word id equals `word`") from None
            raise Wrong(f"{e} ({case})") from None
        if not _same_inputs(args, hs) or ids != word_ids:
            raise Wrong(f"word_vector changed its inputs in place ({case}): compute new tensors instead")
        got = expect_tensor(got, f"the word vector ({case})")
        if tuple(got.shape) != (d,):
            raise Wrong(f"expected shape {fmt_shape((d,))}, got {fmt_shape(got.shape)} for the word vector ({case})"
                        + _word_shape_hint(got, n_layers, word_ids, word, d))
        if not got.is_floating_point():
            raise Wrong(f"the word vector has dtype {got.dtype} ({case}); it should be a float tensor")
        if not close(got, expected):
            try:
                _diagnose_word_vector(got.double(), H.double(), word_ids, word, expected)
            except Wrong as e:
                raise Wrong(f"{e} ({case})") from None
    return (f"matches the mean of the last four layers over the word's subwords on {len(WORD_CASES)} sentences "
            "(5, 7 and 13 layers)")


# ----------------------------------------------------------------------------- sense_centroids

# labels in an order where first-seen != sorted, senses of different sizes (4, 3, 2)
CENTROID_CASES = [
    (["bank.n.02", "bank.n.01", "bank.n.02", "bank.n.09", "bank.n.01", "bank.n.02", "bank.n.09", "bank.n.01",
      "bank.n.02"], 4),
    (["interest.n.04", "interest.n.01", "interest.n.01", "interest.n.04", "interest.n.04"], 7),
    (["die.v.01", "die.n.01", "die.v.01"], 5),  # a sense seen once: its centroid is that one vector, shape (d,)
]


def centroid_inputs(labels: list[str], d: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(100 + seed)
    return torch.randn(len(labels), d, generator=g) + 2 * torch.randn(d, generator=g)


def _diagnose_centroid(got, s, vectors, labels, expected: dict, case):
    V = vectors.double()
    mine = V[[i for i, l in enumerate(labels) if l == s]]
    n = len(mine)
    if close(got, mine.sum(0)):
        raise Wrong(f"the centroid of {s!r} is the sum of its {n} vectors ({case}): eq. 11.8 averages them "
                    f"(divide by the number of vectors, {n})")
    if close(got, V.mean(0)):
        raise Wrong(f"the centroid of {s!r} is the mean of all {len(V)} vectors ({case}): average only the vectors "
                    f"labelled {s!r}")
    for other, c in expected.items():
        if other != s and close(got, c.double()):
            raise Wrong(f"under the key {s!r} you put the mean of the vectors labelled {other!r} ({case}): the "
                        "labels and the means are paired in different orders (set(labels) has no fixed order); "
                        "compute each label's mean from that label's own rows, in the same step that stores it "
                        "under the label, so that key and value cannot get out of step")
    for i, v in enumerate(mine):
        if close(got, v):
            raise Wrong(f"the centroid of {s!r} is one of its {n} vectors (a medoid, or the first?) ({case}): "
                        "eq. 11.8 takes their mean")
    if close(got, mine.median(0).values):
        raise Wrong(f"the centroid of {s!r} is the element-wise median of its vectors ({case}): eq. 11.8 takes "
                    "their mean")
    if close(got, F.normalize(mine, dim=-1).mean(0)):
        raise Wrong(f"you normalised the vectors of {s!r} before averaging them ({case}): eq. 11.8 averages the "
                    "vectors as they are")
    if close(got, F.normalize(mine.mean(0), dim=0)):
        raise Wrong(f"you normalised the centroid of {s!r} to length 1 ({case}): eq. 11.8 is the plain mean")
    idx, diff = first_mismatch(got, expected[s])
    raise Wrong(f"the centroid of {s!r} differs from the mean of its {n} vectors by {diff:.3g} at {fmt_index(idx)} "
                f"({case})")


@exercise("sense_centroids", needs=["sense_centroids"])
def check_sense_centroids(sense_centroids):
    for seed, (labels, d) in enumerate(CENTROID_CASES):
        vectors = centroid_inputs(labels, d, seed)
        senses, C = reference_centroids(vectors, labels)
        expected = dict(zip(senses, C))
        case = f"vectors {fmt_shape(vectors.shape)}, {len(senses)} senses"
        arg, arg_labels = vectors.clone(), list(labels)
        answer = sense_centroids(arg, arg_labels)
        if not torch.equal(arg, vectors) or arg_labels != labels:
            raise Wrong(f"sense_centroids changed its inputs in place ({case})")
        if isinstance(answer, tuple) and len(answer) == 2 and isinstance(answer[1], torch.Tensor):
            raise Wrong(f"sense_centroids should return a dict {{label: centroid}}, got a pair ({case}), as "
                        "course_lib.embeddings.sense_centroids returns (senses, tensor): return one entry per "
                        "sense instead, its label as the key and its row of centroids as the value")
        if not isinstance(answer, Mapping):
            got = (f"a tensor of shape {fmt_shape(answer.shape)}" if isinstance(answer, torch.Tensor)
                   else f"a {type(answer).__name__}")
            raise Wrong(f"sense_centroids should return a dict {{label: (d,) centroid}}, got {got} ({case}): key "
                        "each sense's mean by its label, e.g. {'bank.n.01': tensor([...]), ...}")
        keys = list(answer)
        if keys and all(isinstance(k, numbers.Integral) for k in keys):
            raise Wrong(f"the keys should be the sense labels ({', '.join(map(repr, senses))}), not numbers "
                        f"{keys} ({case})")
        missing = [s for s in senses if s not in answer]
        if missing:
            raise Wrong(f"there is no centroid for the sense {missing[0]!r} ({case}): the dict needs one key per "
                        f"label found in labels, here {', '.join(map(repr, senses))}")
        extra = [k for k in keys if k not in expected]
        if extra:
            raise Wrong(f"unexpected key {extra[0]!r} ({case}): the keys are the labels found in labels, "
                        f"here {', '.join(map(repr, senses))}")
        for s in senses:
            what = f"the centroid of {s!r} ({case})"
            got = expect_tensor(answer[s], what)
            n = labels.count(s)
            if tuple(got.shape) == (n, d) and n != 1:
                raise Wrong(f"the value for {s!r} holds its {n} vectors ({case}): return their mean, one (d,) "
                            "vector averaged over the rows")
            expect_shape(got, (d,), what)
            if not got.is_floating_point():
                raise Wrong(f"{what} has dtype {got.dtype}; it should be a float tensor")
            if not close(got, expected[s]):
                _diagnose_centroid(got.double(), s, vectors, labels, expected, case)
    return f"matches eq. 11.8 (course_lib.embeddings.sense_centroids) on {len(CENTROID_CASES)} labelled sets"


# ----------------------------------------------------------------------------- nearest_sense

# 2-D configurations (the vector, then the centroids), rotated into d dimensions. In the first two, the highest
# cosine, the highest dot product and the smallest Euclidean distance pick three different senses; in the third,
# the cosine nearest -1 (the opposite direction) is larger in absolute value than the highest one.
NEAREST_CASES = [
    ((2.0, 0.0), {"bank.n.01": (0.6, 0.6), "bank.n.02": (10.0, 1.0), "bank.n.03": (20.0, 30.0),
                  "bank.n.04": (-40.0, 5.0)}, 8),
    ((0.0, 3.0), {"interest.n.05": (30.0, 10.0), "interest.n.01": (1.0, 2.5), "interest.n.03": (-3.0, -4.0),
                  "interest.n.04": (0.5, 8.0)}, 6),
    ((1.0, 0.0), {"die.n.01": (1.0, 1.0), "die.v.01": (-1.0, 0.01), "die.n.02": (0.0, 1.0)}, 5),
]


def _rotated(d: int, seed: int):
    """A function embedding 2-D points (or lists of them) in d dimensions by a random rotation: cosines, dot
    products and distances unchanged."""
    g = torch.Generator().manual_seed(seed)
    Q, _ = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))
    return lambda xy: (torch.tensor(xy, dtype=torch.float64) @ Q[:2]).float()


def nearest_inputs(vector, centroids: dict, d: int, seed: int) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The 2-D case embedded in d dimensions by a random rotation (cosines, dots and distances unchanged)."""
    embed = _rotated(d, 200 + seed)
    return embed(vector), {s: embed(c) for s, c in centroids.items()}


@exercise("nearest_sense", needs=["nearest_sense"])
def check_nearest_sense(nearest_sense):
    for seed, (v2, c2, d) in enumerate(NEAREST_CASES):
        vector, centroids = nearest_inputs(v2, c2, d, seed)
        senses = list(centroids)
        C = torch.stack(list(centroids.values()))
        cos = cosine_matrix(vector[None], C)[0].double()
        dots = C.double() @ vector.double()
        dist = (C.double() - vector.double()).norm(dim=-1)
        best = senses[int(cos.argmax())]
        scores = ", ".join(f"{s} {float(c):.2f}" for s, c in zip(senses, cos))
        case = f"vector of norm {float(vector.norm()):.3g}, {len(senses)} centroids; cosines: {scores}"
        arg_v, arg_c = vector.clone(), {s: c.clone() for s, c in centroids.items()}
        answer = nearest_sense(arg_v, arg_c)
        if not torch.equal(arg_v, vector) or list(arg_c) != senses or not _same_inputs(arg_c.values(), C):
            raise Wrong(f"nearest_sense changed its inputs in place (normalising with /= ?) ({case}): the caller's "
                        "vectors must come back as they were, so compute new tensors instead of changing these")
        if isinstance(answer, str) and answer in centroids:
            label = answer
        elif isinstance(answer, tuple):
            raise Wrong(f"nearest_sense should return only the label, got a tuple of {len(answer)} ({case})")
        elif isinstance(answer, torch.Tensor) and answer.dim() == 1:
            raise Wrong(f"nearest_sense returned a vector of shape {fmt_shape(answer.shape)} ({case}): return the "
                        "label of the best centroid (a key of centroids), not the centroid")
        else:
            if isinstance(answer, torch.Tensor) and answer.numel() == 1:
                answer = answer.item()
            if isinstance(answer, numbers.Integral) and 0 <= int(answer) < len(senses):
                raise Wrong(f"nearest_sense returned {int(answer)}, a position ({case}): return the label, "
                            f"list(centroids)[{int(answer)}] = {senses[int(answer)]!r}")
            if isinstance(answer, numbers.Real):
                raise Wrong(f"nearest_sense returned the number {float(answer):.4g} (a score?) ({case}): return the "
                            "label whose centroid has the highest cosine")
            raise Wrong(f"nearest_sense should return one of the labels {', '.join(map(repr, senses))}, got "
                        f"{answer!r} ({case})")
        if label == best:
            continue
        if label == senses[int(dots.argmax())]:
            raise Wrong(f"you chose {label!r}, the centroid with the largest dot product; the cosine divides by the "
                        f"norms and chooses {best!r} ({case}): a centroid should not win only because it is longer")
        if label == senses[int(dist.argmin())]:
            raise Wrong(f"you chose {label!r}, the centroid nearest by Euclidean distance; eq. 11.9 takes the "
                        f"highest cosine, {best!r} ({case})")
        if label == senses[int(cos.abs().argmax())] and float(cos[senses.index(label)]) < 0:
            raise Wrong(f"you chose {label!r}, whose cosine is the largest in absolute value but negative: it points "
                        f"the opposite way; eq. 11.9 takes the highest cosine, {best!r} ({case})")
        if label == senses[int(cos.argmin())]:
            raise Wrong(f"you chose {label!r}, the centroid with the lowest cosine: take the highest (max, not min), "
                        f"{best!r} ({case})")
        raise Wrong(f"you chose {label!r}; the highest cosine is that of {best!r} ({case})")
    return (f"picks the highest cosine on {len(NEAREST_CASES)} cases where the dot product and the Euclidean "
            "distance would choose other senses")


# ----------------------------------------------------------------------------- wsd_predict

# Two words in 2-D, rotated into d dimensions: (training vectors, their senses, their lemmas), then the test vectors
# and lemmas. The test vector of 'mouse' lies nearest (cosine) to a centroid of 'bank'; a long centroid wins on the
# dot product; the most frequent sense of each word is not the right answer for every test vector; the vectors of
# mouse's "device" sense differ in length (6 and 0.6) and in direction (180° and 252°), so that their centroid points at 185°
# but that of the same vectors normalised first at 216°, and the test vector at 143° changes sense with it. The last
# test vector (bank, 67.1°) is nearest to the centroid of "river" (133°, against "finance"'s 0°) but to a single
# training vector of "finance" (5.7°, against 129.5°): 1-nearest *instance* would choose otherwise.
WSD_CASE = (
    [(1.0, 0.1), (0.9, -0.1), (-8.0, 9.0), (-9.0, 8.0), (-7.0, 8.5), (0.2, 1.0), (-0.1, 1.2), (0.1, 0.9),
     (-6.0, 0.0), (-0.2, -0.6)],
    # the labels do not name their word (as in the notebook's data, "finance" not "bank.n.01"): only train_lemmas
    # says which word a sense belongs to
    ["finance", "finance", "river", "river", "river", "animal", "animal", "animal", "device", "device"],
    ["bank"] * 5 + ["mouse"] * 5,
    [(1.0, 0.05), (0.5, 0.866), (-0.57, 0.82), (-1.0, 0.1), (-0.7, 0.7), (-0.8, 0.6), (0.389, 0.921)],
    ["bank", "bank", "mouse", "mouse", "bank", "mouse", "bank"],
)


def _wsd_reference(train_v, senses, lemmas, test_v, test_lemmas, score: str = "cos", restrict: bool = True):
    """The predictions with the cosine (or the dot product), each word among its own senses (or among all)."""
    order, C = reference_centroids(train_v, senses)
    lemma_of = {k: lemmas[senses.index(k)] for k in order}
    S = cosine_matrix(test_v, C) if score == "cos" else test_v @ C.T
    out = []
    for row, lemma in zip(S, test_lemmas):
        allowed = [j for j, k in enumerate(order) if not restrict or lemma_of[k] == lemma]
        out.append(order[max(allowed, key=lambda j: float(row[j]))])
    return out


def _nearest_instance(train_v, senses, lemmas, test_v, test_lemmas):
    """1-nearest neighbour over the training vectors themselves (by cosine, among the word's own): not eq. 11.8-11.9."""
    C = cosine_matrix(test_v, train_v)
    return [senses[max((i for i in range(len(senses)) if lemmas[i] == lemma), key=lambda i: float(row[i]))]
            for row, lemma in zip(C, test_lemmas)]


@exercise("wsd_predict", needs=["wsd_predict"])
def check_wsd_predict(wsd_predict):
    tv, senses, lemmas, xv, xl = WSD_CASE
    embed = _rotated(6, 311)
    train_v, test_v = embed(tv), embed(xv)
    case = (f"{len(senses)} training vectors of 'bank' and 'mouse', {len(xl)} test vectors "
            f"({', '.join(map(repr, xl))})")
    args = (train_v.clone(), list(senses), list(lemmas), test_v.clone(), list(xl))
    got = wsd_predict(*args)
    if not (torch.equal(args[0], train_v) and torch.equal(args[3], test_v) and args[1] == senses and args[2] == lemmas):
        raise Wrong(f"wsd_predict changed its inputs in place ({case}): compute new tensors instead")
    if isinstance(got, torch.Tensor) or not isinstance(got, (list, tuple)):
        raise Wrong(f"wsd_predict should return a list of sense labels, one per test vector, got "
                    f"{type(got).__name__} ({case})")
    got = list(got)
    if len(got) != len(xl):
        raise Wrong(f"wsd_predict returned {len(got)} labels for {len(xl)} test vectors ({case}): one per test "
                    "vector, in their order")
    want = _wsd_reference(train_v, senses, lemmas, test_v, xl)
    if got == want:
        return (f"1-nearest centroid by cosine among each word's own senses, on {len(xl)} test vectors where the "
                "senses of another word, the dot product, centroids of normalised vectors, the nearest single "
                "training vector and the most frequent sense would each choose otherwise")
    for k, (label, lemma) in enumerate(zip(got, xl)):
        if isinstance(label, str) and label in senses and lemmas[senses.index(label)] != lemma:
            raise Wrong(f"test vector {k} is an occurrence of {lemma!r} but got {label!r}, a sense of another word "
                        f"({case}): eq. 11.9 chooses among the senses of the test word's own lemma")
    if got == _wsd_reference(F.normalize(train_v, dim=-1), senses, lemmas, test_v, xl):
        raise Wrong(f"your predictions are those of centroids of unit-length training vectors, normalised before "
                    f"averaging ({case}): eq. 11.8 averages the vectors as they are, so that a long vector weighs "
                    "more; the cosine of eq. 11.9 normalises only when it compares a test vector with a centroid")
    if got == _nearest_instance(train_v, senses, lemmas, test_v, xl):
        raise Wrong(f"your predictions are those of the nearest single training vector ({case}): eq. 11.8 first "
                    "averages all the training vectors of a sense into one centroid, and eq. 11.9 compares the test "
                    "vector with the centroids, so that one odd training sentence cannot decide on its own")
    if got == _wsd_reference(train_v, senses, lemmas, test_v, xl, score="dot"):
        raise Wrong(f"your predictions are those of the largest dot product ({case}): compare by cosine, so that a "
                    "centroid does not win only because it is longer")
    mfs = {lemma: Counter(s for s, l in zip(senses, lemmas) if l == lemma).most_common(1)[0][0] for lemma in xl}
    if got == [mfs[lemma] for lemma in xl]:
        raise Wrong(f"every test vector got its word's most frequent sense ({case}): that is the baseline, "
                    "which never looks at the vector; take the centroid nearest to each vector")
    k = next(i for i, (a, b) in enumerate(zip(got, want)) if a != b)
    raise Wrong(f"test vector {k} ({xl[k]!r}) got {got[k]!r}; the highest cosine among the senses of {xl[k]!r} is "
                f"that of {want[k]!r} ({case})")


# ----------------------------------------------------------------------------- z_score

# (N, M, d, eps or None for the default, constant dims, tiny dims, small dims): N small, so that σ (÷N) and the
# sample std (÷N-1) differ by far more than the tolerance; X != corpus. A small dimension has eps < σ < √eps: it
# is standardized, but a threshold on the variance (σ² <= eps) would set it to 0
Z_CASES = [(5, 3, 6, None, [3], [], []), (7, 2, 4, 1e-2, [2], [1], []), (6, 3, 5, 1e-2, [0], [], [3])]


def z_inputs(N, M, d, const, tiny, seed, small=()) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(300 + seed)
    scale, shift = 0.5 + 2 * torch.rand(d, generator=g), 3 * torch.randn(d, generator=g)
    corpus = torch.randn(N, d, generator=g) * scale + shift
    X = torch.randn(M, d, generator=g) * scale + shift
    for j in const:
        corpus[:, j] = 0.75
        X[:, j] = 2.0  # differs from the corpus value: dividing by 0 gives inf, not 0/0
    for j in tiny:
        corpus[:, j] = 1e-3 * torch.randn(N, generator=g)
        X[:, j] = 1e-3 * torch.randn(M, generator=g)
    for j in small:  # σ = 0.05 exactly: above eps = 0.01, its square below it
        c = torch.randn(N, generator=g, dtype=torch.float64)
        corpus[:, j] = (0.05 * (c - c.mean()) / c.std(unbiased=False) + 1.0).float()
        X[:, j] = 1.0 + 0.1 * torch.randn(M, generator=g)
    return X, corpus


def _z_variants(X, corpus) -> list[tuple[torch.Tensor, str]]:
    Xd, Cd = X.double(), corpus.double()
    N = len(Cd)
    mu, sd = Cd.mean(0), Cd.std(0, unbiased=False)
    mx, sx = Xd.mean(0), Xd.std(0, unbiased=False)
    return [
        ((Xd - mx) / sx, "you fitted μ and σ on X: fit them on the corpus, then standardize X with them"),
        ((Xd - mx) / Xd.std(0), "you fitted μ and σ on X: fit them on the corpus, then standardize X with them"),
        ((Xd - mu) / Cd.std(0), f"you divided by the sample standard deviation (÷ N−1 = {N - 1}); eq. 11.11 divides "
                                f"by |C| = {N}: the population standard deviation, not the sample one"),
        ((Xd - mu) / sd ** 2, "you divided by the variance σ²: divide by σ, its square root"),
        (Xd / sd, "you did not subtract the mean μ: z = (x − μ) / σ"),
        (Xd - mu, "you did not divide by σ: z = (x − μ) / σ"),
        ((Xd - Cd.mean()) / Cd.std(unbiased=False), "you took one mean and one σ over all the numbers of the corpus: "
                                                    "fit one μ and one σ per dimension, each over the corpus's rows"),
    ]


def _check_z_case(z_score, X, corpus, eps, const, tiny, case):
    ref = ZScorer(eps=1e-6 if eps is None else eps).fit(corpus)
    expected = ref.transform(X.double())
    ok = ref.sigma > ref.eps  # the dimensions that are standardized
    args = (X.clone(), corpus.clone())
    got = z_score(*args) if eps is None else z_score(*args, eps=eps)
    if not torch.equal(args[0], X):
        raise Wrong(f"z_score changed X in place (X -= … ?) ({case}): compute the z-scores as a new tensor and "
                    "leave X as it was")
    if not torch.equal(args[1], corpus):
        raise Wrong(f"z_score changed the corpus in place ({case})")
    got = expect_tensor(got, f"the z-scores ({case})")
    if tuple(got.shape) == tuple(corpus.shape) and corpus.shape != X.shape:
        raise Wrong(f"expected shape {fmt_shape(X.shape)}, got {fmt_shape(got.shape)} ({case}): you standardized the "
                    "corpus; fit μ and σ on the corpus, then return the z-scores of X")
    expect_shape(got, X.shape, f"the z-scores ({case})")
    if not got.is_floating_point():
        raise Wrong(f"the z-scores have dtype {got.dtype} ({case}); they should be floats")
    got = got.double()
    bad = ~torch.isfinite(got) & ok
    if bad.any():
        i, j = (int(v) for v in bad.nonzero()[0])
        raise Wrong(f"z[{i}, {j}] is {float(got[i, j])} ({case})")
    zeroed = [j for j in ok.nonzero().flatten().tolist() if not got[:, j].any() and expected[:, j].any()]
    if zeroed:
        j, sigma, e = zeroed[0], float(ref.sigma[zeroed[0]]), ref.eps
        raise Wrong(f"dimension {j} is all 0, but its σ = {sigma:.3g} is above eps = {e:g}, so it is standardized "
                    f"({case}): compare σ itself with eps, not its square (σ² = {sigma ** 2:.2g} is below eps)"
                    if sigma ** 2 <= e else f"dimension {j} is all 0, but its σ = {sigma:.3g} is above eps = {e:g}: "
                    f"only the dimensions with σ <= eps are set to 0 ({case})")
    if not close(got[:, ok], expected[:, ok]):
        for value, hint in _z_variants(X, corpus):
            if close(got[:, ok], value[:, ok]):
                raise Wrong(f"{hint} ({case})")
        idx, diff = first_mismatch(got[:, ok], expected[:, ok])
        i, j = idx[0], int(ok.nonzero()[idx[1]])
        raise Wrong(f"z[{i}, {j}] is {float(got[i, j]):.4g}, expected {float(expected[i, j]):.4g} = (x − μ) / σ "
                    f"with μ and σ of the corpus ({case})")
    for j in const + tiny:
        if not torch.isfinite(got[:, j]).all():
            i = int((~torch.isfinite(got[:, j])).nonzero()[0])
            raise Wrong(f"z[{i}, {j}] is {float(got[i, j])}: dimension {j} is constant over the corpus (σ = 0) "
                        f"({case}); a dimension whose σ <= eps has nothing to standardise: its z-score is 0 by "
                        "definition, whatever its values")
        if not close(got[:, j], expected[:, j]):
            sigma = float(ref.sigma[j])
            i = int((got[:, j] - expected[:, j]).abs().argmax())
            given = f"eps = {eps}" if eps is not None else "the default eps = 1e-6"
            hint = (f"z[{i}, {j}] is {float(got[i, j]):.4g}, expected 0: dimension {j} has σ = {sigma:.2g} <= eps "
                    f"({given}) ({case}); set such dimensions to 0")
            if j in tiny:
                hint += ": decide by comparing σ with the eps you were given, not with 0"
            elif abs(float(got[i, j])) > 1e3:
                hint += " rather than dividing by eps or by σ + eps"
            raise Wrong(hint)


@exercise("z_score", needs=["z_score"])
def check_z_score(z_score):
    for seed, (N, M, d, eps, const, tiny, small) in enumerate(Z_CASES):
        X, corpus = z_inputs(N, M, d, const, tiny, seed, small)
        case = (f"X {fmt_shape(X.shape)}, corpus {fmt_shape(corpus.shape)}, "
                + ("default eps" if eps is None else f"eps = {eps}") + f", dimension {const[0]} constant")
        _check_z_case(z_score, X, corpus, eps, const, tiny, case)
    return (f"matches eq. 11.10-11.12 (course_lib.embeddings.ZScorer) on {len(Z_CASES)} corpora, constant and "
            "near-constant dimensions set to 0")


# ----------------------------------------------------------------------------- anisotropy

ANISOTROPY_SEED = 11


def orthogonal_rows(N: int, seed: int) -> torch.Tensor:
    """N orthogonal rows of different norms: every cosine between two different rows is 0."""
    g = torch.Generator().manual_seed(400 + seed)
    Q, _ = torch.linalg.qr(torch.randn(N, N, generator=g, dtype=torch.float64))
    return (Q * torch.linspace(0.5, 4.0, N, dtype=torch.float64)[:, None]).float()


def anisotropic_rows(N: int, d: int, seed: int) -> torch.Tensor:
    """Rows sharing a common direction (mean cosine of two different rows about 0.3, far from 0.5, so that the
    cosine and 1 − cosine differ by far more than the tolerance), of norms from 0.3 to 6."""
    g = torch.Generator().manual_seed(500 + seed)
    X = 0.8 * torch.randn(d, generator=g) + torch.randn(N, d, generator=g)
    norms = 0.3 + 5.7 * torch.rand(N, 1, generator=g)
    return F.normalize(X, dim=-1) * norms


def sampling_rows(N: int = 6, seed: int = 0) -> torch.Tensor:
    """N rows (mean cosine about 0.3, norms from 0.3 to 6) where every row matters: the first lies almost along
    the common direction u, the last across it, and each of the others leans towards the next one. A sampler that
    never draws the first row, or the last, or that pairs each row with its neighbour, is off by several
    tolerances, each in its own direction (tests/test_exercise_checks.py checks the separations)."""
    c_first, c_mid, c_last, lean = 0.99, 0.55, 0.0, 0.5
    X = torch.zeros(N, N + 1, dtype=torch.float64)
    E = torch.eye(N + 1, dtype=torch.float64)
    for i in range(N):
        w = E[1 + i] + (lean * E[2 + i] if 1 <= i < N - 2 else 0)  # ⟂ u = E[0]
        c = c_first if i == 0 else c_last if i == N - 1 else c_mid
        X[i] = c * E[0] + math.sqrt(1 - c * c) * w / w.norm()
    g = torch.Generator().manual_seed(700 + seed)
    Q, _ = torch.linalg.qr(torch.randn(N + 1, N + 1, generator=g, dtype=torch.float64))
    norms = torch.linspace(0.3, 6.0, N, dtype=torch.float64)[torch.randperm(N, generator=g)]
    return (X @ Q * norms[:, None]).float()


def twin_rows() -> torch.Tensor:
    """Four rows u, 2v, 3u, v/2 with u ⟂ v: of the 12 ordered pairs of different rows, 4 have cosine 1 and the rest
    0, so the expected cosine is exactly 1/3, and any sampler that favours some pairs lands far from it (stepping
    to the next row when the two collide: 1/4; never pairing neighbours: 1/2)."""
    u, v = torch.tensor([0.6, 0.8, 0.0]), torch.tensor([0.8, -0.6, 0.0])
    return torch.stack([u, 2 * v, 3 * u, v / 2])


def pair_stats(X: torch.Tensor, cosine: bool = True, distinct: bool = True) -> tuple[float, float]:
    """Mean and standard deviation of the cosine (or dot product) of a uniformly random ordered pair of rows:
    of different rows, or (distinct=False) of any two rows, a row with itself included."""
    V = X.double()
    if cosine:
        V = F.normalize(V, dim=-1)
    G = V @ V.T
    vals = G[~torch.eye(len(V), dtype=torch.bool)] if distinct else G.flatten()
    return float(vals.mean()), float(vals.std(unbiased=False))


def expected_cosine(X: torch.Tensor) -> float:
    """The exact expected cosine of two different rows, in closed form: (‖Σ x̂‖² − N) / (N(N−1))."""
    U = F.normalize(X.double(), dim=-1)
    N = len(U)
    return float((U.sum(0).square().sum() - N) / (N * (N - 1)))


def _stats(vals: torch.Tensor) -> tuple[float, float]:
    return float(vals.mean()), float(vals.std(unbiased=False))


def sampler_variants(X: torch.Tensor) -> list[tuple[str, float, float, str]]:
    """What common wrong samplers estimate on X, exactly: (name, mean, standard deviation of one draw, hint)."""
    N = len(X)
    U = F.normalize(X.double(), dim=-1)
    G = U @ U.T
    off = lambda M: M[~torch.eye(len(M), dtype=torch.bool)]  # noqa: E731
    mean, std = _stats(off(G))
    return [
        ("dot", *pair_stats(X, cosine=False),
         "yours is the mean dot product; normalise each row to length 1 first, so that the dot product of two rows "
         "is their cosine"),
        ("one minus", 1 - mean, std, "yours looks like 1 − cosine, a distance; return the mean cosine"),
        ("neighbours", *_stats(G[torch.arange(N), (torch.arange(N) + 1) % N]),
         "yours is the mean cosine of neighbouring rows (each row with the next one): the second row of a pair must "
         "be drawn at random too, from the rows other than the first"),
        ("no last row", *_stats(off(G[:-1, :-1])),
         f"yours is about the mean over the pairs that leave out the last row, as if rows were drawn only among the "
         f"first N − 1 = {N - 1}: the upper bound of a random integer draw is excluded, so it must be the number of "
         f"rows, N"),
        ("no first row", *_stats(off(G[1:, 1:])),
         "yours is about the mean over the pairs that leave out the first row: is row 0 drawn less often than the "
         "others, or never? Row indices start at 0, and every row must be as likely as any other in each pair"),
        ("self pairs", *pair_stats(X, distinct=False),
         "yours is about the mean over all ordered pairs, a row with itself (cosine 1) included: pair only different "
         "rows"),
    ]


def _within(value: float, mean: float, std: float, n: int) -> bool:
    return abs(value - mean) <= SIGMAS * std / math.sqrt(n) + FLOAT_SLACK


def _as_number(answer, case: str) -> float:
    if isinstance(answer, bool):
        raise Wrong(f"anisotropy_estimate returned {answer}, expected a number ({case})")
    if isinstance(answer, numbers.Real):
        return float(answer)
    if isinstance(answer, torch.Tensor):
        if answer.dim() == 0:
            if not answer.is_floating_point():
                raise Wrong(f"anisotropy_estimate returned an integer tensor ({case}): the mean cosine is a float")
            return float(answer)
        if answer.dim() == 1 and answer.numel() > 1:
            raise Wrong(f"anisotropy_estimate returned a tensor of shape {fmt_shape(answer.shape)} ({case}): return "
                        "the mean of the cosines, a single number (a float, or a tensor of one value)")
        raise Wrong(f"anisotropy_estimate returned a tensor of shape {fmt_shape(answer.shape)} ({case}): return a "
                    "number, a float or a 0-dim tensor (.item())")
    raise Wrong(f"anisotropy_estimate should return a number, got {type(answer).__name__} ({case})")


def _call_anisotropy(fn, X, case, allow_nan=False, touched=None, **kwargs) -> float:
    """The student's estimate on a copy of X, as a number; with a list ``touched``, the global generators the call
    changed are added to it."""
    from .remote import value_and_generators   # the check's side only: the sandbox never imports it

    arg = X.clone()
    if touched is None:
        answer = fn(arg, **kwargs)
    else:
        answer, changed = value_and_generators(fn, (arg,), kwargs)
        touched += changed
    if not torch.equal(arg, X):
        raise Wrong(f"anisotropy_estimate changed X in place (normalising with /= ?) ({case}): compute a new, "
                    "normalised tensor and leave X as it was")
    value = _as_number(answer, case)
    if math.isnan(value) and not allow_nan:
        raise Wrong(f"anisotropy_estimate returned NaN ({case})")
    return value


def _diagnose_sampler(got: float, X: torch.Tensor, n: int, names=None) -> str:
    """': <hint>' of the one wrong sampler (of ``names``, default all) whose exact expectation on X the estimate
    matches; '' when none or several do (then a diagnosis would be a guess)."""
    found = [hint for name, mean, std, hint in sampler_variants(X)
             if (names is None or name in names) and _within(got, mean, std, n)]
    return f": {found[0]}" if len(found) == 1 else ""


def _check_estimate(anisotropy_estimate, X, case, gen, n=10000, names=None) -> float:
    """The estimate with the default n_pairs (n), within SIGMAS standard errors of the exact expected cosine;
    when not, the wrong sampler of ``names`` (default all) it matches, if one does."""
    mean, std = expected_cosine(X), pair_stats(X)[1]
    got = _call_anisotropy(anisotropy_estimate, X, case, generator=gen)
    if not _within(got, mean, std, n):
        tol = SIGMAS * std / math.sqrt(n) + FLOAT_SLACK
        raise Wrong(f"the estimate is {got:.4f}, but the expected cosine of two different rows is {mean:.4f}; an "
                    f"estimate from {n} pairs falls within ±{tol:.3f} of it ({case})" + _diagnose_sampler(got, X, n, names))
    return got


@exercise("anisotropy", needs=["anisotropy_estimate"])
def check_anisotropy(anisotropy_estimate):
    gen = lambda seed=ANISOTROPY_SEED: torch.Generator().manual_seed(seed)  # noqa: E731
    # 1. orthogonal rows: every pair of different rows has cosine 0, so the estimate is 0 whatever the pairs
    N, n = 8, 2000
    X = orthogonal_rows(N, 0)
    case = f"{N} orthogonal rows, n_pairs={n}"
    got = _call_anisotropy(anisotropy_estimate, X, case, n_pairs=n, generator=gen())
    if abs(got) > FLOAT_SLACK:
        hint = f"the estimate is {got:.4f}, expected 0: the cosine of two different rows is 0 for every pair ({case})"
        if abs(got - 1) < 1e-3:
            hint += ": yours is 1; is it 1 − cosine, a distance? Return the mean cosine of pairs of different rows"
        elif _within(got, *pair_stats(X, distinct=False), n):
            hint += (f"; yours is about 1/N = {1 / N:.3f}, as if some pairs were a row with itself (cosine 1): draw "
                     "the second row of each pair among the N − 1 rows other than the first, so that it can never "
                     "be the same row")
        raise Wrong(hint)
    # 2. every row can be drawn, at random: a few rows, the first and the last unlike the others, every wrong
    # sampler of sampler_variants several tolerances from the right answer and from each other
    Y = sampling_rows()
    _check_estimate(anisotropy_estimate, Y, f"X {fmt_shape(Y.shape)}, the first row along the rows' common "
                                            "direction and the last across it, the default n_pairs", gen())
    # 3. random rows of different norms sharing a direction (mean cosine about 0.3): the default n_pairs. Only
    # the samplers far from the right answer are named here: by chance, any other wrong value may lie near one
    N, d = 40, 12
    X = anisotropic_rows(N, d, 0)
    case = f"X {fmt_shape(X.shape)} with rows of different norms, the default n_pairs"
    got = _check_estimate(anisotropy_estimate, X, case, gen(), names=("dot", "one minus"))
    # 3b. four rows u, 2v, 3u, v/2: every pair of different rows equally likely gives exactly 1/3
    T = twin_rows()
    twin = _call_anisotropy(anisotropy_estimate, T, "X = u, 2v, 3u, v/2 with u ⟂ v, the default n_pairs",
                            generator=gen())
    if not _within(twin, 1 / 3, math.sqrt(2) / 3, 10000):
        raise Wrong(f"on the four rows u, 2v, 3u, v/2 (u ⟂ v) the estimate is {twin:.4f}; one pair of different rows "
                    "in three is (u, 3u) or (2v, v/2), cosine 1, the others cosine 0, so it should be close to 0.3333: "
                    "given the first row, each of the N − 1 others must be equally likely as the second (a collision "
                    "moved to the next row makes neighbours twice as likely; a draw that skips a neighbour never "
                    "pairs them)")
    # 4. the generator: the same seed gives the same estimate
    touched: list = []
    again = _call_anisotropy(anisotropy_estimate, X, case, touched=touched, generator=gen())
    if again != got:
        raise Wrong(f"two calls with generators seeded alike (seed {ANISOTROPY_SEED}) gave {got:.6f} and "
                    f"{again:.6f}: pass the generator argument on to every random draw (torch.randint)")
    # 5. n_pairs is used: one pair gives the cosine of two different rows
    case = f"X {fmt_shape(X.shape)}, n_pairs=1"
    one = _call_anisotropy(anisotropy_estimate, X, case, allow_nan=True, n_pairs=1, generator=gen(ANISOTROPY_SEED + 1))
    U = F.normalize(X.double(), dim=-1)
    off = (U @ U.T)[~torch.eye(N, dtype=torch.bool)]  # the cosines of the N(N-1) pairs of different rows
    # (NaN: a sampler that drops the pairs i == j may be left with none; nothing to check then)
    if not math.isnan(one) and not (off - one).abs().min() < 1e-5:
        if abs(one - 1) < 1e-5:
            raise Wrong(f"with n_pairs=1 the estimate is 1.0, the cosine of a row with itself ({case}): pair only "
                        "different rows")
        if abs(one - expected_cosine(X)) < 1e-5:
            raise Wrong(f"with n_pairs=1 your estimate is {one:.4f}, the exact mean over all pairs ({case}): the "
                        "exercise asks for an estimate from n_pairs random pairs, drawn with generator")
        raise Wrong(f"with n_pairs=1 the estimate should be the cosine of one pair of different rows; yours, "
                    f"{one:.4f}, is not ({case}): average the cosines of n_pairs random pairs")
    # 6. another seed, another estimate (the generator is used, not torch's global one, reseeded)
    case = f"X {fmt_shape(X.shape)} with rows of different norms, the default n_pairs"
    other = _call_anisotropy(anisotropy_estimate, X, case, generator=gen(ANISOTROPY_SEED + 2))
    if other == got:
        raise Wrong(f"generators seeded {ANISOTROPY_SEED} and {ANISOTROPY_SEED + 2} gave the same estimate, "
                    f"{got:.6f}: draw every pair from the generator you are given, and do not reseed torch's global "
                    "one")
    from .remote import refuse_global_draws   # the check's side only: the sandbox never imports it

    refuse_global_draws(touched, "The estimates look right", draw="every pair")
    # 7. without a generator (the default)
    _call_anisotropy(anisotropy_estimate, X, f"X {fmt_shape(X.shape)}, no generator", n_pairs=100)
    return (f"within {SIGMAS} standard errors of the exact expected cosine over distinct pairs on two matrices, "
            "every row drawn; 0 for orthogonal rows; reproducible with a generator")


# ----------------------------------------------------------------------------- composing: anisotropy per layer

def layered_inputs(N: int, M: int, d: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(N, 3, d) scored and (M, 3, d) fitted states. L0: no shared direction. L1: scored and fitted share an
    offset (z-scoring with the fitted μ removes it). L2: only the scored tokens have the offset, the fitted ones
    are centred and twice as wide (z-scoring with the fitted μ, σ leaves it; with the scored tokens' own, not)."""
    g = torch.Generator().manual_seed(600 + seed)
    u = 3 * F.normalize(torch.randn(d, generator=g), dim=0)
    scale = torch.linspace(0.5, 2.0, d)
    noise = lambda n, s=1.0: s * scale * torch.randn(n, d, generator=g)  # noqa: E731
    scored = torch.stack([noise(N), noise(N) + u, noise(N) + u], dim=1)
    fitted = torch.stack([noise(M), noise(M) + u, noise(M, 2.0)], dim=1)
    return scored, fitted


def _reference_by_layer(scored, fitted, fit_on="fitted") -> list[tuple[float, float]]:
    out = []
    for l in range(scored.size(1)):
        X = scored[:, l]
        fit = {"fitted": fitted[:, l], "scored": X, "both": torch.cat([X, fitted[:, l]])}[fit_on]
        out.append((expected_cosine(X), expected_cosine(ZScorer().fit(fit.double())(X.double()))))
    return out


def _estimate(X: torch.Tensor, n: int, g: torch.Generator) -> float:
    """The notebook's estimator, drawing from ``g``: i, then j among the other rows."""
    i = torch.randint(len(X), (n,), generator=g)
    j = (i + torch.randint(1, len(X), (n,), generator=g)) % len(X)
    U = F.normalize(X.double(), dim=-1)
    return float((U[i] * U[j]).sum(-1).mean())


def _replayed(scored, fitted, n: int, z_of) -> list[tuple[float, float]]:
    """What an answer built like the notebook's (raw, then z-scored, layer by layer, all from the one generator)
    returns when it z-scores a layer as ``z_of(X, C)`` does: the same pairs drawn, so a slip is recognised exactly,
    where the expected values of two slips can lie within the sampling noise of each other."""
    g = torch.Generator().manual_seed(ANISOTROPY_SEED)
    out = []
    for l in range(scored.size(1)):
        X, C = scored[:, l].double(), fitted[:, l].double()
        raw = _estimate(X, n, g)
        out.append((raw, _estimate(z_of(X, C), n, g)))
    return out


# slips recognised by replaying them (_replayed): how each z-scores a layer, and what the answer did
REPLAYED_SLIPS = [
    (lambda X, C: (X - C.mean()) / C.std(),
     "you z-scored with one μ and one σ for the whole matrix, the mean and standard deviation of all its numbers; "
     "eq. 11.10-11.12 give each dimension i its own μ_i and σ_i (the mean and standard deviation of that dimension "
     "over the fitted tokens), so that no dimension dominates the cosine by its size or offset"),
    (lambda X, C: ZScorer().fit(C)(C),
     "your z-scored values are those of the fitted tokens, z-scored with their own μ and σ: the fitted tokens only "
     "supply μ and σ; standardise the scored tokens with them and estimate the anisotropy of the result"),
]


@exercise("anisotropy_by_layer", needs=["anisotropy_by_layer"])
def check_anisotropy_by_layer(anisotropy_by_layer):
    N, M, d, n = 40, 60, 8, 4000
    scored, fitted = layered_inputs(N, M, d, 0)
    case = f"scored {fmt_shape(scored.shape)}, fitted {fmt_shape(fitted.shape)}, n_pairs={n}"
    s0, f0 = scored.clone(), fitted.clone()
    got = anisotropy_by_layer(scored, fitted, n_pairs=n, generator=torch.Generator().manual_seed(ANISOTROPY_SEED))
    if not (torch.equal(scored, s0) and torch.equal(fitted, f0)):
        raise Wrong(f"anisotropy_by_layer changed its inputs in place ({case}): z-score into a new tensor")
    if isinstance(got, torch.Tensor) or not hasattr(got, "__len__"):
        raise Wrong(f"anisotropy_by_layer returned {type(got).__name__} ({case}): return a list with one "
                    "(raw, z_scored) pair per layer, L0 first")
    if len(got) != scored.size(1):
        hint = (f"anisotropy_by_layer returned {len(got)} entries for {scored.size(1)} layers ({case}): one pair "
                "per layer, L0 (the embedding output, scored[:, 0]) included")
        if len(got) == 2 and all(hasattr(x, "__len__") and len(x) == scored.size(1) for x in got):
            hint += "; did you return (raws, z_scoreds) as two lists? Return one (raw, z_scored) pair per layer"
        raise Wrong(hint)
    values = []
    for l, pair in enumerate(got):
        if isinstance(pair, (str, bytes)) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise Wrong(f"entry {l} is {pair!r} ({case}): each entry is a pair (raw, z_scored) of numbers")
        values.append(tuple(_as_number(v, f"{case}, layer {l}") for v in pair))
    right = _reference_by_layer(scored, fitted)
    tols = []
    for l in range(scored.size(1)):
        X = scored[:, l]
        Z = ZScorer().fit(fitted[:, l].double())(X.double())
        tols.append((SIGMAS * pair_stats(X)[1] / math.sqrt(n) + FLOAT_SLACK,
                     SIGMAS * pair_stats(Z)[1] / math.sqrt(n) + FLOAT_SLACK))
    near = lambda vals, ref: all(abs(a - b) <= t for (a, b), t in zip(  # noqa: E731
        [(v, r) for vv, rr in zip(vals, ref) for v, r in zip(vv, rr)], [t for tt in tols for t in tt]))
    if near(values, right):
        return (f"raw and z-scored anisotropy at each of {scored.size(1)} layers within {SIGMAS} standard errors; "
                "z-scored with the fitted tokens' μ and σ")
    show = ", ".join(f"L{l} ({v[0]:.3f}, {v[1]:.3f})" for l, v in enumerate(values))
    want = ", ".join(f"L{l} ({r[0]:.3f}, {r[1]:.3f})" for l, r in enumerate(right))
    hint = f"got {show}; expected about {want} ({case})"
    slip = next((msg for z_of, msg in REPLAYED_SLIPS if all(
        abs(a - b) <= 1e-4 for v, r in zip(values, _replayed(scored, fitted, n, z_of)) for a, b in zip(v, r))), None)
    if slip:
        hint += ": " + slip
    elif near(values, [(b, a) for a, b in right]):
        hint += ": each pair is (z_scored, raw); return (raw, z_scored)"
    elif near(values, _reference_by_layer(scored, fitted, "scored")):
        hint += (": you fitted μ and σ on the scored tokens themselves (then the mean z-vector is exactly 0 and "
                 "the z-scored anisotropy says nothing); fit them on fitted[:, layer], the other tokens")
    elif near(values, _reference_by_layer(scored, fitted, "both")):
        hint += ": you fitted μ and σ on the scored and the fitted tokens together; fit them on fitted[:, layer] only"
    elif near(values, [(a, a) for a, _ in right]):
        hint += ": the z-scored values equal the raw ones; z-score scored[:, layer] before estimating"
    elif all(abs(v[0] - r[0]) <= 0.05 for v, r in zip(values, _reference_by_layer(fitted, fitted))):
        hint += ": your raw values are the fitted tokens' anisotropy; score scored[:, layer]"
    else:
        hint += (": for each layer l, the raw value is the anisotropy of scored[:, l], the z-scored one that of "
                 "scored[:, l] standardised with μ and σ of fitted[:, l]")
    raise Wrong(hint)


# ----------------------------------------------------------------------------- predictions

question(
    "random_wsd", variable="random_wsd",
    choices=["well above it (by 10 points or more)", "about level with it (within a few points)", "well below it (by 10 points or more)"],
    answer="about level with it (within a few points)",
    why="a random encoder's blocks, with weights of standard deviation 0.02, barely change the residual stream: each "
        "target's vector stays its (random) word embedding plus its position, so the instances of a word differ "
        "almost only by where they stand, which says nothing about the sense. Context helps only once trained",
    hint="At initialisation every weight matrix is small and random. How much does one block change the vector it "
         "gets, and what, besides the word itself, is left to tell two instances of *bank* apart?",
    giveaways=["random encoder separates nothing", "pass through almost unchanged",
               "random encoder's blocks barely change"])

question(
    "most_anisotropic", variable="most_anisotropic", choices=["course-bert", "all-MiniLM-L6-v2", "random init"],
    answer="random init",
    why="every token of a one-sentence input adds the same segment embedding; at random initialisation the word, "
        "position and segment embeddings are three random vectors of about the same size, so two tokens share about "
        "a third of their vector (expected cosine ≈ 1/3), at every layer, since the random blocks pass it through. "
        "The trained models' geometry is learnt: course-bert's layers stay mildly anisotropic, most in the middle "
        "layers, less at the last one; MiniLM's last layer is nearly isotropic, which fits its contrastive "
        "training (this notebook does not show that it is the cause)",
    hint="Anisotropy is the expected cosine of two random tokens. What does every token of a one-sentence input "
         "have in common in its input vector, and how much of that survives the blocks in each of the three "
         "models?",
    giveaways=["segment's embeddings", "same segment embedding", "share the word's and the segment"])
