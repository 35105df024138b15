"""Contextual embeddings (SLP3 §11.3): word vectors, 1-NN word-sense disambiguation, anisotropy, z-scoring.

    states = target_states(model, tok, data.train)        # (N, L+1, d): every layer, subwords pooled to the word
    X = combine_layers(states, "last4_mean")               # (N, d): one vector per example
    wsd = NearestSenseWSD().fit(X, data.train)             # sense centroids, eq. 11.8
    wsd.predict(X_test, [e.lemma for e in data.test])      # argmax cosine over the lemma's senses, eq. 11.9

    Z = ZScorer().fit(corpus_vectors)                      # eq. 11.10-11.12
    anisotropy(corpus_vectors), anisotropy(Z(corpus_vectors))

Layers count as in ``EncoderOutput.hidden_states``: 0 is the embedding layer, 1..L the
outputs of the transformer blocks.
"""
from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from .senses import SenseExample

LAYER_CHOICES = ("last", "last4_mean", "last4_sum")
POOLINGS = ("mean", "first", "sum")


# ============================================================================= word vectors

def _encoder(model):
    return getattr(model, "bert", model)  # BertForPreTraining -> its BertModel


def _check_pooling(pooling: str) -> None:
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, not {pooling!r}")


@torch.no_grad()
def target_states(model, tokenizer, examples: Sequence[SenseExample] | None = None, *, texts=None, spans=None,
                  pooling: str = "mean", batch_size: int = 32) -> torch.Tensor:
    """The vector of each target word at every layer: (N, L+1, d), float32 on the CPU.

    Give ``examples`` (:class:`SenseExample` s), or ``texts`` and character ``spans``.
    The subword tokens that overlap the span are pooled into one word vector:
    ``mean`` (default), ``first`` (the first subword, as many taggers do) or ``sum``.
    """
    _check_pooling(pooling)
    if examples is not None:
        texts, spans = [e.text for e in examples], [(e.start, e.end) for e in examples]
    if texts is None or spans is None:
        raise ValueError("give examples=..., or texts=... and spans=[(start, end), ...]")
    texts, spans = list(texts), list(spans)
    if len(texts) != len(spans):
        raise ValueError(f"{len(texts)} texts but {len(spans)} spans")
    if not texts:
        raise ValueError("no examples: nothing to embed")
    enc_model = _encoder(model)
    device = enc_model.device
    out = []
    for b in range(0, len(texts), batch_size):
        enc = tokenizer(texts[b:b + batch_size])
        hs = enc_model(**enc.to(device), output_hidden_states=True).hidden_states
        H = torch.stack(hs, dim=1).float().cpu()  # (B, L+1, T, d)
        for i, (start, end) in enumerate(spans[b:b + batch_size]):
            idx = [t for t, (s, e) in enumerate(enc.offsets[i]) if e > s and s < end and e > start]
            if not idx:
                raise ValueError(f"no token covers characters {start}-{end} of {texts[b + i]!r}: "
                                 "is the span inside the sentence?")
            v = H[i][:, idx]  # (L+1, k, d)
            out.append(v[:, 0] if pooling == "first" else v.sum(1) if pooling == "sum" else v.mean(1))
    return torch.stack(out)


def word_states(model, tokenizer, sentence: str, word: str, *, occurrence: int = 0, pooling: str = "mean"):
    """(L+1, d) vectors of ``word`` in ``sentence`` (its ``occurrence``-th appearance; case-insensitive)."""
    if not sentence.strip():
        raise ValueError("the sentence is empty: type a sentence that contains the target word")
    if not word.strip():
        raise ValueError("no target word given: say which word of the sentence to look at")
    found = [m.span() for m in re.finditer(rf"(?<!\w){re.escape(word.strip())}(?!\w)", sentence, re.IGNORECASE)]
    if not found:
        raise ValueError(f"the target word {word.strip()!r} does not occur in the sentence {sentence!r}")
    if occurrence >= len(found):
        raise ValueError(f"{word!r} occurs {len(found)} time(s) in the sentence; occurrence {occurrence} does not exist")
    return target_states(model, tokenizer, texts=[sentence], spans=[found[occurrence]], pooling=pooling)[0]


class ScalarMix(nn.Module):
    """ELMo's learned layer mix: γ Σ_j softmax(s)_j h_j over the L+1 layers (Peters et al. 2018)."""

    def __init__(self, n_layers: int):
        super().__init__()
        self.scalars = nn.Parameter(torch.zeros(n_layers))
        self.gamma = nn.Parameter(torch.ones(()))

    @property
    def weights(self) -> torch.Tensor:
        return self.scalars.softmax(-1)

    def forward(self, states: torch.Tensor) -> torch.Tensor:  # (..., L+1, d) -> (..., d)
        if states.size(-2) != self.scalars.numel():
            raise ValueError(f"the mix has {self.scalars.numel()} layer weights, the states {states.size(-2)} layers")
        return self.gamma * torch.einsum("l,...ld->...d", self.weights, states)


def combine_layers(states: torch.Tensor, layers="last4_mean") -> torch.Tensor:
    """One vector per example from (N, L+1, d) states (or (L+1, d) for one word).

    ``layers``: an int (0 = embeddings … L = last block; negative counts from the end),
    ``"last"``, ``"last4_mean"`` / ``"last4_sum"`` (mean / sum of the last four blocks; §11.3.1),
    or a :class:`ScalarMix`.
    """
    n = states.size(-2)
    if isinstance(layers, ScalarMix):
        return layers(states)
    if isinstance(layers, (int, np.integer)) and not isinstance(layers, bool):
        if not -n <= layers < n:
            raise IndexError(f"layer {layers} is out of range: this model has layers 0 (embeddings) to {n - 1}")
        return states[..., int(layers), :]
    if layers == "last":
        return states[..., -1, :]
    if layers in ("last4_mean", "last4_sum"):
        if n < 5:
            raise ValueError(f"the model has only {n - 1} layers: there are no last four")
        last4 = states[..., -4:, :]
        return last4.mean(-2) if layers == "last4_mean" else last4.sum(-2)
    raise ValueError(f"layers must be a layer number 0..{n - 1}, one of {', '.join(LAYER_CHOICES)}, or a ScalarMix; "
                     f"not {layers!r}")


def layer_name(layers) -> str:
    if isinstance(layers, ScalarMix):
        return "learned scalar mix"
    if isinstance(layers, (int, np.integer)):
        return "embeddings" if layers == 0 else f"layer {layers}"
    return {"last": "last layer", "last4_mean": "mean of last 4", "last4_sum": "sum of last 4"}.get(layers, str(layers))


# ============================================================================= 1-NN word-sense disambiguation

def cosine_matrix(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """(n, d) × (m, d) -> (n, m) cosines; a zero vector has cosine 0 with everything."""
    A = torch.nn.functional.normalize(A.float(), dim=-1)
    B = torch.nn.functional.normalize(B.float(), dim=-1)
    return A @ B.T


def sense_centroids(vectors: torch.Tensor, labels: Sequence[str]) -> tuple[list[str], torch.Tensor]:
    """Eq. 11.8: v_s = mean of the vectors of sense s. Returns (senses in first-seen order, (S, d))."""
    if len(labels) != len(vectors):
        raise ValueError(f"{len(vectors)} vectors but {len(labels)} labels")
    senses = list(dict.fromkeys(labels))
    lab = np.asarray(labels, dtype=object)
    return senses, torch.stack([vectors[torch.from_numpy(lab == s)].mean(0) for s in senses])


@dataclass
class SenseScore:
    sense: str
    cosine: float


class NearestSenseWSD:
    """1-nearest-centroid WSD (eq. 11.8-11.9), each word choosing only among its own senses.

    ``fit(vectors, examples)`` averages the vectors of each sense; ``predict`` takes the
    sense whose centroid has the highest cosine. A lemma without training examples gets
    its most frequent sense from ``fallback`` (e.g. WordNet's first sense), if given.
    """

    def __init__(self, fallback: dict[str, str] | None = None):
        self.fallback = dict(fallback or {})
        self.centroids: dict[str, tuple[list[str], torch.Tensor]] = {}
        self.sense_counts: dict[str, Counter] = {}

    def fit(self, vectors: torch.Tensor, examples: Sequence[SenseExample]) -> "NearestSenseWSD":
        if len(vectors) != len(examples):
            raise ValueError(f"{len(vectors)} vectors but {len(examples)} examples")
        by_lemma: dict[str, list[int]] = {}
        for i, e in enumerate(examples):
            by_lemma.setdefault(e.lemma, []).append(i)
        for lemma, idx in by_lemma.items():
            labels = [examples[i].sense for i in idx]
            self.centroids[lemma] = sense_centroids(vectors[idx], labels)
            self.sense_counts[lemma] = Counter(labels)
        return self

    def most_frequent_sense(self, lemma: str) -> str:
        if lemma in self.sense_counts:
            return self.sense_counts[lemma].most_common(1)[0][0]
        if lemma in self.fallback:
            return self.fallback[lemma]
        raise KeyError(f"no training examples and no fallback sense for {lemma!r}; "
                       f"known words: {', '.join(sorted(self.centroids))}")

    def scores(self, vector: torch.Tensor, lemma: str) -> list[SenseScore]:
        """Cosine of one vector to every sense centroid of ``lemma``, best first."""
        if lemma not in self.centroids:
            raise KeyError(f"no sense centroids for {lemma!r}; known words: {', '.join(sorted(self.centroids))}")
        senses, C = self.centroids[lemma]
        cos = cosine_matrix(vector[None], C)[0]
        return sorted((SenseScore(s, float(c)) for s, c in zip(senses, cos)), key=lambda s: -s.cosine)

    def predict(self, vectors: torch.Tensor, lemmas: Sequence[str]) -> list[str]:
        if len(vectors) != len(lemmas):
            raise ValueError(f"{len(vectors)} vectors but {len(lemmas)} lemmas")
        return [self.scores(v, l)[0].sense if l in self.centroids else self.most_frequent_sense(l)
                for v, l in zip(vectors, lemmas)]

    def predict_mfs(self, lemmas: Sequence[str]) -> list[str]:
        """The most-frequent-sense baseline: each lemma's most common training sense, whatever the context."""
        return [self.most_frequent_sense(l) for l in lemmas]


def accuracy(predicted: Sequence[str], gold: Sequence[str]) -> float:
    if len(predicted) != len(gold) or not gold:
        raise ValueError(f"{len(predicted)} predictions for {len(gold)} gold labels")
    return sum(p == g for p, g in zip(predicted, gold)) / len(gold)


@dataclass
class WSDResult:
    layers: object
    accuracy: float
    mfs_accuracy: float


def wsd_by_layer(train_states, train, test_states, test, layer_choices=None) -> list[WSDResult]:
    """1-NN test accuracy for each layer choice (default: every layer, then last4_mean), beside MFS."""
    n = train_states.size(1)
    choices = list(range(n)) + ["last4_mean"] if layer_choices is None else list(layer_choices)
    gold, lemmas = [e.sense for e in test], [e.lemma for e in test]
    out = []
    for layers in choices:
        wsd = NearestSenseWSD().fit(combine_layers(train_states, layers), train)
        pred = wsd.predict(combine_layers(test_states, layers), lemmas)
        out.append(WSDResult(layers, accuracy(pred, gold), accuracy(wsd.predict_mfs(lemmas), gold)))
    return out


def fit_scalar_mix(states: torch.Tensor, examples: Sequence[SenseExample], *, steps: int = 200, lr: float = 0.1,
                   temperature: float = 0.05, seed: int = 0) -> ScalarMix:
    """Learn ELMo-style layer weights for WSD: softmax over cosines to the (mixed) sense centroids of each lemma."""
    torch.manual_seed(seed)
    mix = ScalarMix(states.size(1))
    opt = torch.optim.Adam(mix.parameters(), lr=lr)
    groups = {}
    for i, e in enumerate(examples):
        groups.setdefault(e.lemma, []).append(i)
    groups = {l: (idx, [examples[i].sense for i in idx]) for l, idx in groups.items()}
    for _ in range(steps):
        loss = 0.0
        X = mix(states)
        for idx, labels in groups.values():
            senses, C = sense_centroids(X[idx], labels)
            target = torch.tensor([senses.index(s) for s in labels])
            loss = loss + nn.functional.cross_entropy(cosine_matrix(X[idx], C) / temperature, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return mix.eval()


# ============================================================================= anisotropy, rogue dimensions, z-scoring

@torch.no_grad()
def corpus_states(model, tokenizer, texts: Sequence[str], *, max_tokens: int = 20000, batch_size: int = 32,
                  max_length: int = 128) -> torch.Tensor:
    """Vectors of the corpus's tokens at every layer, (N, L+1, d), skipping [CLS]/[SEP]/padding; at most max_tokens."""
    enc_model = _encoder(model)
    out, n = [], 0
    texts = [t for t in texts if t.strip()]
    for b in range(0, len(texts), batch_size):
        enc = tokenizer(texts[b:b + batch_size], truncation=True, max_length=max_length) if any(
            len(t) > 4 * max_length for t in texts[b:b + batch_size]) else tokenizer(texts[b:b + batch_size])
        hs = enc_model(**enc.to(enc_model.device), output_hidden_states=True).hidden_states
        H = torch.stack(hs, dim=2).float().cpu()  # (B, T, L+1, d)
        keep = enc.attention_mask.bool().cpu() & ~torch.isin(enc.input_ids.cpu(), torch.tensor(sorted(tokenizer.special_ids)))
        out.append(H[keep])
        n += int(keep.sum())
        if n >= max_tokens:
            break
    if not out:
        raise ValueError("the corpus is empty")
    return torch.cat(out)[:max_tokens]


def pair_cosines(vectors: torch.Tensor, n_pairs: int = 5000, generator: int | torch.Generator = 0) -> torch.Tensor:
    """Cosines of ``n_pairs`` random pairs of distinct rows of (N, d) ``vectors``: the anisotropy's distribution."""
    if vectors.dim() != 2 or len(vectors) < 2:
        raise ValueError(f"need at least 2 vectors as an (N, d) tensor, got shape {tuple(vectors.shape)}")
    g = torch.Generator().manual_seed(generator) if isinstance(generator, int) else generator
    i = torch.randint(len(vectors), (n_pairs,), generator=g)
    j = (i + torch.randint(1, len(vectors), (n_pairs,), generator=g)) % len(vectors)  # j != i
    X = torch.nn.functional.normalize(vectors.float(), dim=-1)
    return (X[i] * X[j]).sum(-1)


def anisotropy(vectors: torch.Tensor, n_pairs: int = 20000, generator: int | torch.Generator = 0) -> float:
    """Ethayarajh (2019): the expected cosine of two randomly chosen (distinct) vectors of the corpus."""
    return float(pair_cosines(vectors, n_pairs, generator).mean())


@dataclass
class DimensionReport:
    """Per-dimension statistics of a set of vectors (Timkey & van Schijndel 2021)."""

    variance: torch.Tensor       # (d,)
    mean: torch.Tensor           # (d,)
    cosine_share: torch.Tensor   # (d,) each dimension's contribution to the expected cosine (sums to ≈ anisotropy)
    rogue: list[int]             # the dimensions with the largest contributions, largest first

    def top_share(self) -> float:
        """Share of the expected cosine due to the rogue dimensions."""
        total = float(self.cosine_share.sum())
        return float(self.cosine_share[self.rogue].sum()) / total if total else 0.0


def dimension_report(vectors: torch.Tensor, n_rogue: int = 3) -> DimensionReport:
    """Variance per dimension and each dimension's share of the expected cosine, E[û_i v̂_i] = (E[û_i])².

    A "rogue" dimension dominates cosine similarity: a handful of the d dimensions
    contribute most of the anisotropy.
    """
    X = vectors.double()
    U = torch.nn.functional.normalize(X, dim=-1)
    share = U.mean(0) ** 2
    rogue = share.argsort(descending=True)[:n_rogue].tolist()
    return DimensionReport(X.var(0, unbiased=False).float(), X.mean(0).float(), share.float(), rogue)


class ZScorer:
    """Standardize vectors with statistics fitted on a corpus (eq. 11.10-11.12): z = (x - μ) / σ.

    ``eps``: a dimension whose σ is at most eps (constant over the corpus) carries no
    information and is set to 0 instead of dividing by (almost) zero.
    """

    def __init__(self, eps: float = 1e-6):
        self.eps = eps
        self.mu = self.sigma = None

    def fit(self, vectors: torch.Tensor) -> "ZScorer":
        if vectors.dim() != 2 or len(vectors) < 2:
            raise ValueError(f"fit on at least 2 vectors as an (N, d) tensor, got shape {tuple(vectors.shape)}")
        X = vectors.double()
        self.mu = X.mean(0)                                         # eq. 11.10
        self.sigma = ((X - self.mu) ** 2).mean(0).sqrt()            # eq. 11.11 (population std)
        return self

    def transform(self, vectors: torch.Tensor) -> torch.Tensor:
        if self.mu is None:
            raise RuntimeError("the ZScorer is not fitted yet: call .fit(corpus_vectors) first")
        if vectors.size(-1) != self.mu.numel():
            raise ValueError(f"fitted on {self.mu.numel()}-dimensional vectors, got {vectors.size(-1)} dimensions")
        ok = self.sigma > self.eps
        z = (vectors.double() - self.mu) / torch.where(ok, self.sigma, torch.ones_like(self.sigma))  # eq. 11.12
        return torch.where(ok, z, torch.zeros_like(z)).to(vectors.dtype)

    __call__ = transform


# ============================================================================= word similarity (WordSim-353, SimLex-999)

SIMILARITY_FILES = {"wordsim353": "wordsim353.tsv", "simlex999": "simlex999.txt"}


def gensim_test_data(name: str) -> Path:
    """A file of gensim's test data (found without importing gensim)."""
    import importlib.util

    spec = importlib.util.find_spec("gensim")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the word-similarity sets and the Lee corpus come with gensim: `pip install gensim`")
    f = Path(spec.submodule_search_locations[0]) / "test" / "test_data" / name
    if not f.exists():
        raise FileNotFoundError(f"{f} is missing from the installed gensim")
    return f


def similarity_pairs(name: str) -> list[tuple[str, str, float]]:
    """(word1, word2, human score) of ``"wordsim353"`` or ``"simlex999"``, as shipped with gensim."""
    if name not in SIMILARITY_FILES:
        raise ValueError(f"unknown similarity set {name!r}; choose {', '.join(SIMILARITY_FILES)}")
    pairs = []
    for line in gensim_test_data(SIMILARITY_FILES[name]).read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        a, b, s = line.split("\t")[:3]
        pairs.append((a.lower(), b.lower(), float(s)))
    return pairs


def lee_corpus(max_docs: int | None = None) -> list[str]:
    """Sentences of the Lee background news corpus (gensim test data), for fitting z-scoring and anisotropy."""
    text = gensim_test_data("lee_background.cor").read_text(encoding="utf-8", errors="replace")
    docs = [d.strip() for d in text.splitlines() if d.strip()][:max_docs]
    return [s for d in docs for s in re.split(r"(?<=[.!?])\s+(?=[A-Z\"'])", d) if len(s.split()) >= 4]


@torch.no_grad()
def isolated_word_states(model, tokenizer, words: Sequence[str], *, pooling: str = "mean") -> torch.Tensor:
    """(N, L+1, d): each word on its own ("[CLS] word [SEP]"), subwords pooled."""
    words = list(words)
    return target_states(model, tokenizer, texts=words, spans=[(0, len(w)) for w in words], pooling=pooling,
                         batch_size=128)


def spearman(x, y) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(np.asarray(x), np.asarray(y)).statistic)


def similarity_correlation(word_vectors: dict[str, torch.Tensor], pairs, zscorer: ZScorer | None = None) -> float:
    """Spearman ρ between cosine(word1, word2) and the human scores (raw, or after ``zscorer``)."""
    cos, human = [], []
    for a, b, s in pairs:
        u, v = word_vectors[a], word_vectors[b]
        if zscorer is not None:
            u, v = zscorer(u[None])[0], zscorer(v[None])[0]
        cos.append(float(torch.nn.functional.cosine_similarity(u.float(), v.float(), dim=0)))
        human.append(s)
    return spearman(cos, human)


# ============================================================================= UMAP with a cache

def cache_dir() -> Path:
    d = os.environ.get("COURSE_LIB_CACHE")
    return Path(d) if d else Path(__file__).resolve().parents[1] / "artifacts" / "cache"


@dataclass
class Projection:
    coords: np.ndarray   # (N, 2)
    cached: bool         # True when read from the cache instead of computed
    key: str


_UMAP_MEMORY: dict[str, np.ndarray] = {}


def import_umap():
    """Import umap-learn so that numba caches its compiled code on disk: the compile is paid once per machine.

    umap-learn compiles ~100 numba functions on first use (10-20 s in every new kernel),
    and most of them are not declared ``cache=True``. While umap (and pynndescent) are
    imported, ``numba.njit``/``numba.jit`` default to ``cache=True``; numba then keeps the
    machine code next to the package (or in ``NUMBA_CACHE_DIR``) and later kernels load it.
    """
    import sys

    if "umap" in sys.modules:
        return sys.modules["umap"]
    import numba

    originals = numba.njit, numba.jit

    def cached(decorator):
        def wrapper(*args, **kwargs):
            if len(args) == 1 and callable(args[0]) and not kwargs:  # bare @numba.njit
                return decorator(cache=True)(args[0])
            kwargs.setdefault("cache", True)
            return decorator(*args, **kwargs)
        return wrapper

    numba.njit, numba.jit = cached(originals[0]), cached(originals[1])
    try:
        import umap
    finally:
        numba.njit, numba.jit = originals
    return umap


def warm_umap() -> float:
    """Compile (or load from numba's cache) UMAP's code once; returns the seconds it took. ``make setup`` calls it."""
    import time
    import warnings

    start = time.perf_counter()
    umap = import_umap()
    X = np.random.default_rng(0).normal(size=(64, 16)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        umap.UMAP(n_neighbors=10, metric="cosine", random_state=0).fit_transform(X)
        umap.UMAP(n_neighbors=10, metric="euclidean", random_state=0).fit_transform(X)
    return time.perf_counter() - start


def umap_project(vectors, *, n_neighbors: int = 15, min_dist: float = 0.1, metric: str = "cosine",
                 seed: int = 0, cache: bool = True) -> Projection:
    """2-D UMAP projection, cached in memory and on disk (``artifacts/cache/umap``, or $COURSE_LIB_CACHE).

    The key is a hash of the vectors' bytes and the parameters, so the same inputs give
    the same picture instantly — also in a new kernel, where UMAP's numba code would
    otherwise be compiled again (10-20 s).
    """
    X = np.ascontiguousarray(np.asarray(vectors.detach().cpu() if torch.is_tensor(vectors) else vectors,
                                        dtype=np.float32))
    if X.ndim != 2 or len(X) < 3:
        raise ValueError(f"UMAP needs at least 3 vectors as an (N, d) array, got shape {X.shape}")
    n_neighbors = min(n_neighbors, len(X) - 1)
    umap = import_umap()

    h = hashlib.sha256(X.tobytes())
    h.update(repr((X.shape, n_neighbors, min_dist, metric, seed, umap.__version__ if hasattr(umap, "__version__")
                   else "")).encode())
    key = h.hexdigest()[:24]
    f = cache_dir() / "umap" / f"{key}.npy"
    if cache and key in _UMAP_MEMORY:
        return Projection(_UMAP_MEMORY[key].copy(), True, key)
    if cache and f.exists():
        try:
            coords = np.load(f)
            _UMAP_MEMORY[key] = coords
            return Projection(coords.copy(), True, key)
        except (OSError, ValueError):
            pass  # a broken cache file is recomputed below
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # n_jobs / random_state notice
        coords = umap.UMAP(n_neighbors=n_neighbors, min_dist=min_dist, metric=metric, random_state=seed,
                           init="random" if len(X) < 10 else "spectral").fit_transform(X).astype(np.float32)
    if cache:
        _UMAP_MEMORY[key] = coords
        try:
            f.parent.mkdir(parents=True, exist_ok=True)
            tmp = f.with_suffix(".tmp.npy")
            np.save(tmp, coords)
            tmp.replace(f)
        except OSError:
            pass  # a read-only checkout still works, without the disk cache
    return Projection(coords.copy(), False, key)


if __name__ == "__main__":  # python -m course_lib.contextual: warm UMAP's numba cache (make setup does it)
    print(f"UMAP ready ({warm_umap():.1f} s; numba's compiled code is cached for the next kernels)")
