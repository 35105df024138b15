"""Three geometries side by side (SLP3 §11.3): an MLM-trained BERT, a contrastively trained sentence encoder and
a randomly initialised encoder of the same configuration, measured on the same tokens.

    models = compared_models()                          # {"course-bert": (model, tok), "all-MiniLM-L6-v2": ..., ...}
    score, fit = heldout_texts()                         # course-bert's held-out English text: scored / fitted
    S = model_states(model, tok, examples=data.examples, words=words, score_texts=score, fit_texts=fit)
    die_examples()                                       # Fig. 11.7's *die*: dice, to die, the German article
    sense_cosine_table(vectors, labels); silhouette(vectors, labels)
    word_zscorers(model, tok, zscoring_words(fit, exclude=words))  # μ, σ of other isolated words

Every forward goes through :func:`.cache.cached_states`, so a second run reads the states from the cache.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .cache import cached_states, model_fingerprint
from .senses import SenseExample, parse_marked
from .states import corpus_states, isolated_word_states, target_states

COURSE_BERT, MINILM, RANDOM = "course-bert", "all-MiniLM-L6-v2", "random init"
MODEL_NAMES = (COURSE_BERT, MINILM, RANDOM)

# Fig. 11.7 (Coenen et al. 2019): *die* as the singular of dice, the verb, and the German article.
DIE_SENTENCES = {
    "die (dice)": [
        "Roll the [[die]] again and see if you get a six.",
        "He shook the [[die]] in his cupped hands before throwing it.",
        "The [[die]] landed on a four, so she moved her piece four squares.",
        "Each player rolls a single [[die]] to decide who goes first.",
        "A loaded [[die]] lands on the same face far too often.",
        "The twenty-sided [[die]] rolled off the table and under the sofa.",
        "If the [[die]] shows a one, you lose your turn.",
        "She picked up the red [[die]] and blew on it for luck.",
    ],
    "die (to die)": [
        "Many trees will [[die]] if the drought continues.",
        "The old dog was expected to [[die]] within a week.",
        "Without water, these plants [[die]] in a few days.",
        "He did not want to [[die]] alone in a hospital.",
        "Soldiers on both sides continued to [[die]] in the trenches.",
        "Some stars [[die]] in huge explosions called supernovae.",
        "Honey bees usually [[die]] soon after they sting.",
        "The patient could [[die]] without an operation.",
    ],
    "die (German article)": [
        "[[Die]] Katze schläft auf dem Sofa.",
        "Ich habe [[die]] Zeitung heute noch nicht gelesen.",
        "Wo ist [[die]] nächste Haltestelle?",
        "Wir besuchen morgen [[die]] Großeltern in Berlin.",
        "Sie öffnete [[die]] Tür und ging hinaus.",
        "[[Die]] Kinder spielen im Garten.",
        "Er kauft [[die]] Blumen auf dem Markt.",
        "Kannst du mir [[die]] Butter geben?",
    ],
}


def die_examples() -> list[SenseExample]:
    """The sentences of :data:`DIE_SENTENCES` as sense examples (split "all")."""
    out = []
    for sense, sentences in DIE_SENTENCES.items():
        for s in sentences:
            text, start, end = parse_marked(s)
            out.append(SenseExample(text, start, end, "die", sense, "all"))
    return out


def compared_models(seed: int = 0, minilm: tuple | None = None) -> dict:
    """{name: (model, tokenizer)}: course-bert (MLM), all-MiniLM-L6-v2 (contrastive) and a seeded random
    initialisation of the same configuration (BertModel(config) after seed_everything(seed)).

    ``minilm``: the (model, tokenizer) of all-MiniLM-L6-v2 if already loaded (``load_pretrained()``), so that a
    notebook holds one copy of it."""
    from ..checkpoints import load_pretrained
    from ..model import BertModel, seed_everything

    minilm, tok = minilm if minilm is not None else load_pretrained()
    course, course_tok = load_pretrained(COURSE_BERT)
    seed_everything(seed)
    random_model = BertModel(minilm.config).eval()
    return {COURSE_BERT: (course.eval(), course_tok), MINILM: (minilm, tok), RANDOM: (random_model, tok)}


def heldout_texts() -> tuple[list[str], list[str]]:
    """course-bert's held-out English text (never trained on, every source interleaved): (texts whose tokens are
    scored, other texts whose tokens the z-scoring is fitted on), as course-bert's MODEL_CARD.md measures it."""
    from ..checkpoints import shipped_heldout

    return shipped_heldout(COURSE_BERT, "eval"), shipped_heldout(COURSE_BERT, "fit")


@dataclass
class ModelStates:
    """One model's vectors, every layer (L0 = embedding output): tokens of the scored and the fitted texts,
    the sense examples' target words and the isolated similarity words."""

    scored: torch.Tensor   # (n_tokens, L+1, d)
    fitted: torch.Tensor   # (n_tokens, L+1, d), other texts: for z-scoring
    senses: torch.Tensor   # (n_examples, L+1, d)
    words: torch.Tensor    # (n_words, L+1, d)


def _word_states(model, tokenizer, words, fingerprint: str) -> torch.Tensor:
    """(n, L+1, d): each of ``words`` embedded on its own, read from the cache when computed before."""
    words = list(words)
    return cached_states(model, "words", words, lambda: isolated_word_states(model, tokenizer, words),
                         fingerprint=fingerprint)


def sense_states(model, tokenizer, examples, fingerprint: str | None = None) -> torch.Tensor:
    """(n, L+1, d): the target word of each sense example (:class:`.senses.SenseExample`), every layer, read from
    the cache when computed before (by 11.3 or a test: the same file)."""
    examples = list(examples)
    ex = [(e.text, e.start, e.end) for e in examples]
    return cached_states(model, "targets", ex, lambda: target_states(model, tokenizer, examples),
                         fingerprint=fingerprint)


def model_states(model, tokenizer, *, examples, words, score_texts, fit_texts, n_tokens: int = 5000) -> ModelStates:
    """All the states §11.3's comparisons need, each read from the cache when it was computed before."""
    fp = model_fingerprint(model)
    return ModelStates(
        cached_states(model, "corpus", [score_texts, n_tokens],
                      lambda: corpus_states(model, tokenizer, score_texts, max_tokens=n_tokens), fingerprint=fp),
        cached_states(model, "corpus", [fit_texts, n_tokens],
                      lambda: corpus_states(model, tokenizer, fit_texts, max_tokens=n_tokens), fingerprint=fp),
        sense_states(model, tokenizer, examples, fp),
        _word_states(model, tokenizer, words, fp))


def zscoring_words(texts, exclude=(), n: int = 1000) -> list[str]:
    """The ``n`` most frequent words of ``texts`` (letters only, three or more, lower-cased; ties alphabetical)
    that are not in ``exclude``: *other* words, each to be embedded on its own, whose μ and σ z-score isolated
    words (the similarity sets') with statistics of the same kind of vector and without using the scored words."""
    import collections
    import re

    if n < 2:
        raise ValueError(f"z-scoring needs at least 2 words to fit on, got n={n}")
    skip = {w.lower() for w in exclude}
    counts = collections.Counter(w.lower() for t in texts for w in re.findall(r"[A-Za-z]{3,}", t))
    ranked = sorted((w for w in counts if w not in skip), key=lambda w: (-counts[w], w))
    if len(ranked) < n:
        raise ValueError(f"the texts have {len(ranked)} words outside the excluded ones, fewer than the {n} asked for")
    return ranked[:n]


def word_zscorers(model, tokenizer, words) -> list:
    """Per layer (L0 first), a :class:`.geometry.ZScorer` fitted on ``words``, each embedded on its own as
    :func:`.states.isolated_word_states` does (read from the cache when computed before)."""
    from .geometry import ZScorer

    W = _word_states(model, tokenizer, words, model_fingerprint(model))
    return [ZScorer().fit(W[:, layer]) for layer in range(W.size(1))]


def _cosines(vectors: torch.Tensor) -> torch.Tensor:
    X = torch.nn.functional.normalize(vectors.double(), dim=-1)
    return X @ X.T


def sense_cosine_table(vectors: torch.Tensor, labels) -> tuple[list[str], torch.Tensor]:
    """(senses, (S, S) mean cosine between instances of sense a and of sense b; a vector never with itself)."""
    senses = list(dict.fromkeys(labels))
    C = _cosines(vectors)
    idx = {s: torch.tensor([i for i, l in enumerate(labels) if l == s]) for s in senses}
    table = torch.zeros(len(senses), len(senses), dtype=torch.float64)
    for i, a in enumerate(senses):
        for j, b in enumerate(senses):
            block = C[idx[a]][:, idx[b]]
            if a == b:
                n = len(idx[a])
                block = block[~torch.eye(n, dtype=torch.bool)] if n > 1 else block.new_zeros(1)
            table[i, j] = block.mean()
    return senses, table


def silhouette(vectors: torch.Tensor, labels) -> float:
    """Mean silhouette with cosine distance 1 − cos (Rousseeuw 1987): near 1 when each sense is a tight cluster
    far from the others, near 0 when the senses overlap. Scale-free, so comparable across models."""
    D = 1 - _cosines(vectors)
    lab = list(labels)
    senses = list(dict.fromkeys(lab))
    if len(senses) < 2:
        raise ValueError("a silhouette needs at least two senses")
    masks = {s: torch.tensor([l == s for l in lab]) for s in senses}
    scores = []
    for i, s in enumerate(lab):
        own = masks[s].clone()
        own[i] = False
        if not own.any():
            scores.append(0.0)
            continue
        a = D[i, own].mean()
        b = min(D[i, masks[t]].mean() for t in senses if t != s)
        scores.append(float((b - a) / max(a, b)))
    return sum(scores) / len(scores)
