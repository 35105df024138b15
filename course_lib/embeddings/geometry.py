"""The geometry of contextual embeddings (SLP3 §11.3.2): anisotropy, rogue dimensions, z-scoring.

    anisotropy(X)         # expected cosine of random pairs of vectors (Ethayarajh 2019)
    dimension_report(X)   # per-dimension contributions to the expected cosine; the top dimensions, called
                          # rogue only when they carry ROGUE_SHARE of it or more (Timkey & van Schijndel 2021)
    ZScorer().fit(X)(Y)   # z = (x - μ) / σ per dimension, eq. 11.10-11.12, with an ε for constant dimensions
    layer_geometry(S, F)  # all three per layer of (N, L+1, d) states, z-scoring fitted on *other* tokens F
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..stats import spearman

ROGUE_SHARE = 0.3  # the top dimensions are "rogue" when they carry at least this share of the expected cosine


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
    rogue: list[int]             # the top dimensions (largest contributions, largest first); rogue if is_rogue()

    def top_share(self) -> float:
        """Share of the expected cosine due to the top dimensions."""
        total = float(self.cosine_share.sum())
        return float(self.cosine_share[self.rogue].sum()) / total if total else 0.0

    def is_rogue(self) -> bool:
        """Do the top dimensions dominate the expected cosine (a share of at least ROGUE_SHARE)?"""
        return is_rogue(self.top_share())


def is_rogue(top_share: float) -> bool:
    """A few dimensions are *rogue* only when they carry at least ROGUE_SHARE of the expected cosine."""
    return top_share >= ROGUE_SHARE


def top_dimensions_label(dims: list[int], top_share: float) -> str:
    """'rogue dimensions 18, 28, 29 give 55% of the expected cosine', or, below ROGUE_SHARE, 'top-3 dimensions 151,
    345, 24 give 6% of the expected cosine: not rogue (below 30%)'."""
    what = "rogue dimensions" if is_rogue(top_share) else f"top-{len(dims)} dimensions"
    text = f"{what} {', '.join(map(str, dims))} give {top_share:.0%} of the expected cosine"
    return text if is_rogue(top_share) else f"{text}: not rogue (below {ROGUE_SHARE:.0%})"


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



@dataclass
class LayerGeometry:
    """Per layer, L0 (embedding output) first: anisotropy raw, centred and z-scored, the top dimensions' share."""

    anisotropy: list[float]       # expected cosine of two different tokens' vectors
    zscored: list[float]          # the same after eq. 11.10-11.12 with μ, σ of the *fitted* tokens
    top_share: list[float]        # share of the expected cosine carried by the n_rogue largest contributions
    rogue: list[list[int]]        # those top dimensions, largest first (rogue only where is_rogue(layer))
    zscorers: list[ZScorer]       # the fitted μ, σ of each layer (for z-scoring anything else at that layer)
    centred: list[float] = field(default_factory=list)  # after subtracting the fitted μ only (no division by σ)
    same_order: list[float] = field(default_factory=list)  # Spearman ρ of the same pairs' cosines, centred vs z-scored

    def most_anisotropic(self) -> int:
        return max(range(len(self.anisotropy)), key=self.anisotropy.__getitem__)

    def is_rogue(self, layer: int) -> bool:
        return is_rogue(self.top_share[layer])

    def top_label(self, layer: int) -> str:
        return top_dimensions_label(self.rogue[layer], self.top_share[layer])


def layer_geometry(scored: torch.Tensor, fitted: torch.Tensor, *, n_pairs: int = 20000, seed: int = 0,
                   n_rogue: int = 3) -> LayerGeometry:
    """Anisotropy, z-scored anisotropy and rogue-dimension share at every layer of (N, L+1, d) ``scored`` states.

    The z-scoring statistics come from ``fitted`` (M, L+1, d), vectors of *other* tokens: fitted on the scored
    tokens themselves, the z-scored vectors would average exactly 0 by construction, which proves nothing.
    """
    if scored.dim() != 3 or fitted.dim() != 3 or scored.shape[1:] != fitted.shape[1:]:
        raise ValueError(f"need (N, L+1, d) scored and (M, L+1, d) fitted states with the same L+1 and d, got "
                         f"{tuple(scored.shape)} and {tuple(fitted.shape)}")
    out = LayerGeometry([], [], [], [], [])
    for layer in range(scored.size(1)):
        x = scored[:, layer]
        z = ZScorer().fit(fitted[:, layer])
        rep = dimension_report(x, n_rogue)
        out.anisotropy.append(anisotropy(x, n_pairs, seed))
        out.zscored.append(anisotropy(z(x), n_pairs, seed))
        centred = x.double() - z.mu
        out.centred.append(anisotropy(centred, n_pairs, seed))
        # dividing by σ changes no mean much once μ is gone, but it does change which pairs are the most similar
        out.same_order.append(float(spearman(pair_cosines(centred, n_pairs, seed).double(),
                                             pair_cosines(z(x), n_pairs, seed).double())))
        out.top_share.append(rep.top_share())
        out.rogue.append(rep.rogue)
        out.zscorers.append(z)
    return out
