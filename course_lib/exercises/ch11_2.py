"""Exercises of notebook 11.2, masked language modelling (SLP3 §11.2).

mlm_masking        mask_tokens(input_ids, special_ids, mask_token_id, unigram, select_prob=0.15, generator=None)
                   -> (corrupted_ids, labels): 15% selected; of those 80% [MASK], 10% random, 10% kept (§11.2.1)
mlm_loss           masked_lm_loss(logits, labels) -> the cross-entropy averaged over the selected tokens only
nsp_input          build_nsp_input(ids_a, ids_b, cls_id, sep_id) -> ([CLS] A [SEP] B [SEP], segment ids) (§11.2.2)
language_sampling  language_probs(p, alpha) -> q_i = p_i^α / Σ_j p_j^α (eq. 11.7)
masked_batch       masked_batch_loss(model, tokenizer, texts, unigram, generator) -> (loss, corrupted_ids, labels):
                   raw texts -> a padded batch -> the 15% / 80-10-10 corruption -> the model -> L_MLM over the
                   selected tokens only (composes the steps of the notebook)

Prediction questions, asked before the cell that shows the answer: ``unchanged_prediction`` (what the MLM head
predicts where it sees a real token), ``piece_given_away`` (how much a [MASK] on one piece of a word gives away),
``share_in_loss`` (which share of the tokens the loss is computed on), ``loss_at_start`` (the MLM loss of an
untrained model).

The masking is random, so its check is statistical: it runs the student's function
on a large batch with fixed generator seeds (so a check always gives the same
verdict) and accepts shares within six standard deviations of the target rates.
The other checks compare with ``course_lib``'s reference implementations; ``masked_batch`` recomputes
the loss from the batch the student's function returns, so any correct masking is accepted. Hints
explain the idea and name what differs; they never give the code.
"""
from __future__ import annotations

import contextlib
import functools
import math
import numbers
import re

import torch
import torch.nn.functional as F

from ..pretraining.masking import IGNORE_INDEX
from ..pretraining.masking import masked_lm_loss as reference_mlm_loss
from ..pretraining.multilingual import language_sampling_probs
from .core import Wrong, exercise, question, seeded
from .hints import close, expect_shape, expect_tensor, first_mismatch, fmt_int, fmt_num, fmt_shape, same_gradient

SIGMAS = 6  # a statistical check fails only beyond this many standard deviations


def _within(share: float, expected: float, n: int) -> bool:
    """Is ``share`` (of n Bernoulli draws) within SIGMAS standard deviations of ``expected``?"""
    if n == 0:
        return False
    return abs(share - expected) <= SIGMAS * math.sqrt(expected * (1 - expected) / n) + 1e-12


# ----------------------------------------------------------------------------- mlm_masking

PAD, UNK, CLS, SEP, MASK = 0, 100, 101, 102, 103
SPECIAL_IDS = {PAD, UNK, CLS, SEP, MASK}  # a set, as tokenizer.special_ids is
VOCAB = 2000
WORDS = (1000, VOCAB)  # the ordinary tokens of the batch: ids 1000…1999
# the unigram distribution: all its mass on a few ids that never occur in the batch, so that a
# random replacement is always recognisable (it can never coincide with the original token)
UNIGRAM_IDS = list(range(200, 208))
UNIGRAM_PROBS = [0.3, 0.2, 0.15, 0.1, 0.1, 0.08, 0.05, 0.02]
BATCH = (200, 512)
MASKING_RUNS = [(0.15, 0), (0.3, 1)]  # (select_prob, generator seed); 0.15 is passed as the default


def masking_batch() -> torch.Tensor:
    """(200, 512) ids: row b is [CLS] A [SEP] B [SEP] [PAD]…, of length 256…512, words drawn from 1000…1999."""
    g = torch.Generator().manual_seed(1234)
    B, T = BATCH
    ids = torch.randint(*WORDS, (B, T), generator=g)
    for b in range(B):
        n = 256 + (b * 37) % (T - 255)  # tokens before the padding, 256…512
        ids[b, 0] = CLS
        ids[b, n // 2] = SEP
        ids[b, n - 1] = SEP
        ids[b, n:] = PAD
    return ids


def masking_unigram() -> torch.Tensor:
    unigram = torch.zeros(VOCAB)
    unigram[UNIGRAM_IDS] = torch.tensor(UNIGRAM_PROBS)
    return unigram


def _call_mask_tokens(mask_tokens, input_ids, unigram, select_prob, seed, touched=None):
    """Call the student's function (select_prob None: its default); add a hint to the errors we can explain. With a
    list ``touched``, add to it the global generators the call changed."""
    from .remote import value_and_generators   # the check's side only: the sandbox never imports it

    kwargs = {"generator": torch.Generator().manual_seed(seed)}
    if select_prob is not None:
        kwargs["select_prob"] = select_prob
    try:
        args = (input_ids, set(SPECIAL_IDS), MASK, unigram.clone())
        if touched is None:
            return mask_tokens(*args, **kwargs)
        answer, changed = value_and_generators(mask_tokens, args, kwargs)
        touched += changed
        return answer
    except Wrong as e:
        msg = str(e)
        if "without replacement" in msg:
            raise Wrong(f"{msg}: the random tokens are drawn with replacement -- several positions may well draw "
                        "the same frequent token") from None
        if re.search(r"\bset\b", msg):
            raise Wrong(f"{msg}: special_ids is a Python set (as tokenizer.special_ids is); tensor operations "
                        "need the ids as a tensor or a list first") from None
        raise


def _unpack_masking(answer, input_ids):
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        got = "a single tensor" if isinstance(answer, torch.Tensor) else type(answer).__name__
        raise Wrong(f"mask_tokens should return a pair (corrupted_ids, labels), got {got}")
    corrupted = expect_tensor(answer[0], "corrupted_ids (the first value returned)")
    labels = expect_tensor(answer[1], "labels (the second value returned)")
    expect_shape(corrupted, input_ids.shape, "corrupted_ids")
    expect_shape(labels, input_ids.shape, "labels")
    if (corrupted == IGNORE_INDEX).any() and not (labels == IGNORE_INDEX).any():
        raise Wrong("return (corrupted_ids, labels) in this order: yours look like (labels, corrupted_ids)")
    if corrupted.dtype != input_ids.dtype:
        raise Wrong(f"corrupted_ids has dtype {corrupted.dtype}; token ids are integers: keep the dtype of "
                    f"input_ids ({input_ids.dtype})")
    if labels.dtype != torch.long:
        raise Wrong(f"labels have dtype {labels.dtype}; cross-entropy needs 64-bit integer (long) class labels")
    return corrupted, labels


def _check_masking_run(mask_tokens, select_prob: float | None, seed: int):
    """One call on the big batch; raises Wrong at the first problem. Returns (corrupted, labels, counts)."""
    p = 0.15 if select_prob is None else select_prob
    input_ids, unigram = masking_batch(), masking_unigram()
    original = input_ids.clone()
    answer = _call_mask_tokens(mask_tokens, input_ids, unigram, select_prob, seed)
    corrupted, labels = _unpack_masking(answer, original)
    if not torch.equal(input_ids, original):
        raise Wrong("mask_tokens changed input_ids in place: corrupt a copy, so that the caller keeps the original "
                    "ids (the labels are taken from them)")

    special = torch.isin(original, torch.tensor(sorted(SPECIAL_IDS)))
    eligible = ~special
    sel = labels != IGNORE_INDEX
    changed = corrupted != original

    # labels: -100 at the unselected positions, the original id at the selected ones
    if sel[eligible].float().mean() > 0.99:  # (at most) the special tokens have -100
        where = (sel & ~changed & eligible).nonzero()
        b, t = (where if len(where) else (sel & eligible).nonzero())[0].tolist()
        raise Wrong(f"labels should be -100 at unselected positions; found {int(labels[b, t])} at ({b}, {t}): "
                    "a label keeps the original id only where the token was selected for the loss")
    if (sel & special).any():
        b, t = (sel & special).nonzero()[0].tolist()
        raise Wrong(f"special token {int(original[b, t])} was selected at position ({b}, {t}) (its label is "
                    f"{int(labels[b, t])}, not -100): tokens in special_ids ([CLS], [SEP], padding) are never selected")
    if (changed & special).any():
        b, t = (changed & special).nonzero()[0].tolist()
        raise Wrong(f"special token {int(original[b, t])} at position ({b}, {t}) was replaced by "
                    f"{int(corrupted[b, t])}: tokens in special_ids ([CLS], [SEP], padding) are never selected")
    bad = sel & (labels != original)
    if bad.any():
        b, t = bad.nonzero()[0].tolist()
        got, orig = int(labels[b, t]), int(original[b, t])
        if set(labels[sel].unique().tolist()) <= {0, 1}:
            raise Wrong(f"labels should hold the original token ids at the selected positions, not 0/1 flags; "
                        f"found {got} at ({b}, {t}) where the original id is {orig}")
        if got == int(corrupted[b, t]):
            raise Wrong(f"the label at ({b}, {t}) is {got}, the corrupted id, instead of the original id {orig}: "
                        "take the labels from input_ids, before corrupting")
        raise Wrong(f"the label at ({b}, {t}) is {got}; it should be the original id {orig} (or -100 if the "
                    "position is not selected)")
    if (changed & ~sel).any():
        b, t = (changed & ~sel).nonzero()[0].tolist()
        raise Wrong(f"position ({b}, {t}) was changed to {int(corrupted[b, t])} but its label is -100: every "
                    "selected token, whether it becomes [MASK], a random token or stays unchanged, gets its original id "
                    "as label, and only selected tokens are changed")

    # the share of selected tokens
    n_eligible, n_sel = int(eligible.sum()), int(sel.sum())
    share = n_sel / n_eligible
    if not _within(share, p, n_eligible):
        hint = f"{share:.1%} of the tokens were selected, expected about {p:.0%}"
        if select_prob is not None and abs(share - 0.15) < 0.01:
            hint += ": use the select_prob argument, not a fixed 0.15"
        elif _within(share, 1 - p, n_eligible):
            hint += (": a token should be selected when its uniform random number falls below select_prob, which "
                     "happens with probability select_prob")
        elif _within(share, 0.9 * p, n_eligible):
            hint += (": are the selected tokens that stay unchanged missing from the labels? They get their "
                     "original id as label too")
        elif _within(share, 0.8 * p, n_eligible):
            hint += ": only the [MASK]ed tokens have labels; the random and unchanged ones need them too"
        raise Wrong(hint)

    # the fates of the selected tokens: [MASK], random or unchanged
    masked = sel & (corrupted == MASK)
    kept = sel & ~changed
    rnd = sel & changed & ~masked
    m, r, k = (int(x.sum()) / n_sel for x in (masked, rnd, kept))
    if not (_within(m, 0.8, n_sel) and _within(r, 0.1, n_sel) and _within(k, 0.1, n_sel)):
        hint = (f"{m:.0%} of the selected tokens became [MASK], {r:.0%} random tokens and {k:.0%} stayed unchanged; "
                "expected about 80%, 10% and 10%")
        if r < 0.02:
            hint += ": 10% of the selected tokens should become a token drawn from the unigram distribution"
        elif k < 0.02:
            hint += ": leave 10% of the selected tokens unchanged"
        else:
            hint += (": the three fates are shares of the selected tokens, so each selected token needs exactly "
                     "one fate of its own, [MASK] with probability 0.8, a random token 0.1, unchanged 0.1; decided "
                     "by separate draws, the fates overlap and their shares come out wrong")
        raise Wrong(hint)

    # the random tokens come from unigram
    drawn = corrupted[rnd]
    counts = torch.bincount(drawn.clamp(0, VOCAB - 1), minlength=VOCAB)
    if len(drawn) > len(UNIGRAM_IDS) and int(counts[UNIGRAM_IDS].max()) <= 1:
        raise Wrong("no token was drawn twice as a random replacement, although unigram has only "
                    f"{len(UNIGRAM_IDS)} tokens of non-zero probability: the draws were made without replacement; "
                    "each replaced position needs an independent draw, so a frequent token can be drawn many times")
    outside = (drawn < 0) | (drawn >= VOCAB)
    outside[~outside] = unigram[drawn[~outside]] == 0
    if outside.any():
        b, t = rnd.nonzero()[int(outside.nonzero()[0])].tolist()
        raise Wrong(f"position ({b}, {t}) became token {int(corrupted[b, t])} as a random replacement, but unigram "
                    "gives that token probability 0: the random tokens must be drawn from the unigram distribution, "
                    "not uniformly from the vocabulary")
    counts = counts[UNIGRAM_IDS]
    n_rnd = len(drawn)
    if (counts == n_rnd).any():
        raise Wrong(f"every random replacement is token {UNIGRAM_IDS[int((counts == n_rnd).nonzero()[0])]}: draw one "
                    "token for every replaced position, each one drawn on its own")
    for i, prob in zip(UNIGRAM_IDS, UNIGRAM_PROBS):
        f = int(counts[UNIGRAM_IDS.index(i)]) / n_rnd
        if not _within(f, prob, n_rnd):
            raise Wrong(f"the random replacements do not follow unigram: token {i} has probability {prob:.0%} but "
                        f"replaced {f:.0%} of them; draw each one with the unigram probabilities as weights")
    return corrupted, labels, (n_eligible, n_sel)


@contextlib.contextmanager
def _one_thread():
    """Run on one CPU thread: for tensors of 100k elements threads gain nothing, and on a busy machine
    waiting for a second thread made this check 25 times slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@exercise("mlm_masking", needs=["mask_tokens"])
def check_mlm_masking(mask_tokens):
    with _one_thread():
        return _check_mlm_masking(mask_tokens)


def _check_mlm_masking(mask_tokens):
    runs = []
    for select_prob, seed in MASKING_RUNS:
        try:  # 0.15 is not passed: the default of select_prob is checked too
            runs.append(_check_masking_run(mask_tokens, None if select_prob == 0.15 else select_prob, seed))
        except Wrong as e:
            given = "the default select_prob=0.15" if select_prob == 0.15 else f"select_prob={select_prob}"
            raise Wrong(f"{e} (with {given})") from None
    # the generator: the same seed gives the same corruption, another seed another one
    input_ids, unigram = masking_batch(), masking_unigram()
    (corrupted, labels, _), (_, seed) = runs[0], MASKING_RUNS[0]
    touched: list = []
    again = _unpack_masking(_call_mask_tokens(mask_tokens, input_ids, unigram, None, seed, touched), input_ids)
    if not (torch.equal(again[0], corrupted) and torch.equal(again[1], labels)):
        raise Wrong(f"two calls with the same generator, torch.Generator().manual_seed({seed}), gave different results: "
                    "every random number (the selection, the fates, the random tokens) must come from the generator "
                    "you are given")
    other = _unpack_masking(_call_mask_tokens(mask_tokens, input_ids, unigram, None, seed + 1), input_ids)
    if torch.equal(other[1], labels):
        raise Wrong(f"generators seeded {seed} and {seed + 1} gave the same selection: draw every random number "
                    "from the generator you are given, and do not reseed torch's global one")
    # ... and other fates: where both seeds selected a token, its fates agree about 66% of the time (0.8² + 0.1² +
    # 0.1²) when drawn from the generator; fates from torch's global generator, reseeded, agree far more often
    both = (labels != IGNORE_INDEX) & (other[1] != IGNORE_INDEX)
    fate = lambda c: torch.where(c == MASK, 0, torch.where(c == input_ids, 1, 2))  # noqa: E731
    agree = float((fate(corrupted)[both] == fate(other[0])[both]).float().mean())
    if agree > 0.85:
        raise Wrong(f"generators seeded {seed} and {seed + 1} gave the same fate ([MASK], random, unchanged) to "
                    f"{agree:.0%} of the tokens both selected, where independent draws agree about 66% of the "
                    "time: draw the fates (and the random tokens) from the generator you are given too, not from "
                    "torch's global one")
    from .remote import refuse_global_draws   # the check's side only: the sandbox never imports it

    refuse_global_draws(touched, "The corruption looks right")
    # without a generator (the default): it runs and returns a pair
    small = input_ids[:2, :20].clone()
    _unpack_masking(mask_tokens(small, set(SPECIAL_IDS), MASK, unigram.clone()), small)
    (n_eligible, _), p = runs[0][2], [sp for sp, _ in MASKING_RUNS]
    return (f"on {fmt_int(n_eligible)} eligible tokens: {p[0]:.0%} and {p[1]:.0%} selected, 80/10/10 fates, "
            "replacements drawn from unigram, special tokens never selected, reproducible with a generator")


# ----------------------------------------------------------------------------- mlm_loss

LOSS_CASES = [(3, 7, 11, 0), (2, 9, 5, 1)]  # (B, T, |V|, seed)


def loss_inputs(B: int, T: int, V: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded logits (B, T, V) and labels (B, T): about 30% selected, every row at least one, some label 0."""
    g = torch.Generator().manual_seed(seed)
    logits = 3 * torch.randn(B, T, V, generator=g)
    targets = torch.randint(0, V, (B, T), generator=g)
    targets[0, 1] = 0  # a selected label 0 is a real token id, not "unselected"
    selected = torch.rand(B, T, generator=g) < 0.3
    selected[0, :3] = True
    selected[1, 0] = True
    selected[1, 1:] &= torch.arange(1, T) % 2 == 0  # rows select different numbers of tokens
    return logits, torch.where(selected, targets, torch.full_like(targets, IGNORE_INDEX))


def _loss_variants(logits, labels) -> list[tuple[torch.Tensor, str]]:
    """Values of common mistakes, each with its hint."""
    lg = logits.double()
    B, T, V = lg.shape
    keep = labels != IGNORE_INDEX
    n = int(keep.sum())
    tok = F.cross_entropy(lg[keep], labels[keep], reduction="none")  # (|M|,)
    probs = lg.softmax(-1)
    per_row = [F.cross_entropy(lg[b][keep[b]], labels[b][keep[b]]) for b in range(B)]
    positive = labels > 0
    return [
        (tok.sum(), f"your loss is the sum over the {n} selected tokens: L_MLM is their mean (divide by |M| = {n})"),
        (tok.sum() / (B * T), f"your loss is averaged over all B·T = {B * T} positions: average over the {n} "
                              "selected positions only, those whose label is not -100"),
        (F.cross_entropy(lg.reshape(-1, V), labels.clamp(min=0).reshape(-1)),
         "your loss includes the unselected positions (label -100): only the selected positions, the set M, count"),
        (torch.stack(per_row).mean(), "you averaged each sequence's loss, then the sequences: L_MLM averages over "
                                      "all the selected tokens of the batch at once"),
        (F.cross_entropy(probs[keep], labels[keep]), "you gave probabilities (after a softmax) to a cross-entropy "
                                                     "that applies the log-softmax itself: give it the raw scores"),
        (-probs[keep].gather(-1, labels[keep, None]).mean(), "you averaged minus the probability of the label; the "
                                                             "loss is minus its *log*-probability"),
        (-lg[keep].gather(-1, labels[keep, None]).mean(), "you took minus the logit of the label: a logit becomes a "
                                                          "log-probability only after the log-softmax over the "
                                                          "vocabulary"),
        (F.cross_entropy(lg[positive], labels[positive]),
         "your loss skips the positions whose label is 0, a real token id: only -100 marks the unselected positions"),
        (F.cross_entropy(lg[keep], labels[keep]) / math.log(2), "your loss is in bits (log base 2): the chapter's "
                                                                "loss, like PyTorch's, uses the natural logarithm"),
    ]


def _check_loss_case(masked_lm_loss, logits, labels, case, confident: bool = False):
    ref = reference_mlm_loss(logits, labels)
    n = int((labels != IGNORE_INDEX).sum())
    B, T, _ = logits.shape
    lg, lb = logits.clone(), labels.clone()
    try:
        got = masked_lm_loss(lg, lb)
    except Wrong as e:
        if "Expected target size" in str(e):
            raise Wrong(f"{e} ({case}): cross-entropy expects the classes on the second axis; picking out the "
                        "selected positions first gives an (|M|, |V|) matrix of scores and |M| labels") from None
        raise
    if not torch.equal(lb, labels):
        raise Wrong(f"masked_lm_loss changed labels in place ({case}): work on a copy, or select with a mask")
    if not torch.equal(lg, logits):
        raise Wrong(f"masked_lm_loss changed logits in place ({case})")
    if isinstance(got, numbers.Real):
        raise Wrong(f"masked_lm_loss should return a tensor (the loss backward() starts from), got "
                    f"{type(got).__name__} {got!r}: a plain Python number cannot carry a gradient")
    got = expect_tensor(got, "the loss")
    if got.dim() != 0:
        shape = fmt_shape(got.shape)
        if tuple(got.shape) == (n,):
            raise Wrong(f"masked_lm_loss should return a scalar, got shape {shape} ({case}): these look like the "
                        f"losses of the {n} selected tokens; return their mean")
        if tuple(got.shape) == (B, T):
            raise Wrong(f"masked_lm_loss should return a scalar, got shape {shape} ({case}): these look like one loss "
                        "per position; L_MLM is one number, the mean over the selected positions only")
        raise Wrong(f"masked_lm_loss should return a scalar (shape ()), got shape {shape} ({case})")
    if not got.is_floating_point():
        raise Wrong(f"the loss has dtype {got.dtype} ({case}); it should be a float")
    if not torch.isfinite(got) and confident:
        raise Wrong(f"your loss is {float(got)} ({case}): a score 120 below the best gives a probability that "
                    "rounds to 0 before its log is taken, and log 0 = -inf. A softmax is unchanged when the same "
                    "number is taken off every score: compute the log-probabilities with the largest score taken "
                    "out first, never the log of a probability that has already underflowed")
    if torch.isnan(got):
        raise Wrong(f"your loss is NaN ({case}): are the unselected positions (label -100) left out?")
    if close(got, ref):
        return
    for value, hint in _loss_variants(logits, labels):
        if close(got, value):
            raise Wrong(f"{hint} ({case})")
    raise Wrong(f"your loss is {float(got):.4f}, expected {float(ref):.4f}, the mean cross-entropy of the {n} "
                f"selected tokens ({case})")


@exercise("mlm_loss", needs=["masked_lm_loss"])
def check_mlm_loss(masked_lm_loss):
    for B, T, V, seed in LOSS_CASES:
        logits, labels = loss_inputs(B, T, V, seed)
        n = int((labels != IGNORE_INDEX).sum())
        _check_loss_case(masked_lm_loss, logits, labels, f"logits {fmt_shape(logits.shape)}, {n} selected tokens")
    # a confident model: one selected token's score 120 below the best (its loss is 120, not inf)
    logits, labels = loss_inputs(*LOSS_CASES[0])
    b, t = (labels != IGNORE_INDEX).nonzero()[0].tolist()
    logits[b, t, labels[b, t]] = logits[b, t].max() - 120
    _check_loss_case(masked_lm_loss, logits, labels, f"logits {fmt_shape(logits.shape)}, the score of the label at "
                     f"({b}, {t}) 120 below the best", confident=True)
    from .remote import value_and_grad   # the check's side only: the sandbox never imports it

    logits, labels = loss_inputs(*LOSS_CASES[0])
    pristine, _ = loss_inputs(*LOSS_CASES[0])  # the reference gradient is taken here, never from what was handed out
    with torch.enable_grad():
        logits.requires_grad_(True)
        _, grad = value_and_grad(masked_lm_loss, (logits, labels.clone()), wrt=0)
        if not torch.equal(logits.detach(), pristine):
            raise Wrong("masked_lm_loss changed logits in place while its gradient was taken: a loss reads the "
                        "logits, it never writes them")
        if grad is None:
            raise Wrong("the loss is not connected to the logits (no gradient would flow): it must be computed from "
                        "the logits by tensor operations all the way, never through a plain Python number or a "
                        "tensor built anew from one")
        x = pristine.clone().requires_grad_(True)
        (want,) = torch.autograd.grad(reference_mlm_loss(x, labels), x)
    same_gradient(grad, want, "the logits")
    return (f"matches course_lib.pretraining.masking.masked_lm_loss on {len(LOSS_CASES)} batches, gradient included")


# ----------------------------------------------------------------------------- nsp_input

NSP_CASES = [([7, 8, 9], [4, 5], 101, 102), ([11], [12, 13, 14, 15], 2, 3), ([21, 22], [23, 24], 101, 102)]


def _nsp_reference(a, b, cls_id, sep_id):
    return [cls_id, *a, sep_id, *b, sep_id], [0] * (len(a) + 2) + [1] * (len(b) + 1)


def _check_int_list(x, what: str, case: str) -> list[int]:
    if not isinstance(x, list):
        raise Wrong(f"{what} should be a plain Python list of ints, got {type(x).__name__} ({case}): the ids "
                    "go in as lists and come out as one list")
    for v in x:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise Wrong(f"{what} should hold ints, found {v!r} of type {type(v).__name__} ({case})")
    return [int(v) for v in x]


def _diagnose_nsp_ids(got, a, b, cls_id, sep_id, case):
    want, _ = _nsp_reference(a, b, cls_id, sep_id)
    if got == want:
        return
    if got == want[:-1]:
        raise Wrong(f"input_ids should end with [SEP] (id {sep_id}) ({case}): the input is [CLS] A [SEP] B [SEP], "
                    "with a [SEP] after B too")
    if got == want[1:]:
        raise Wrong(f"input_ids should start with [CLS] (id {cls_id}) ({case})")
    if got == [cls_id, *a, *b, sep_id]:
        raise Wrong(f"put a [SEP] (id {sep_id}) between A and B ({case}): [CLS] A [SEP] B [SEP]")
    if got == [cls_id, *b, sep_id, *a, sep_id]:
        raise Wrong(f"sentence A comes first ({case}): [CLS] A [SEP] B [SEP]")
    raise Wrong(f"input_ids should be {want}, got {got} ({case})")


def _diagnose_nsp_types(got, a, b, case):
    _, want = _nsp_reference(a, b, 0, 0)
    if got == want:
        return
    first_sep, last = len(a) + 1, len(want) - 1
    if len(got) == len(want) - 1 and got in (want[1:], want[:-1]):
        raise Wrong(f"token_type_ids has {len(got)} entries, input_ids {len(want)} ({case}): one segment id per "
                    "token, [CLS] and both [SEP]s included")
    if len(got) != len(want):
        raise Wrong(f"token_type_ids has {len(got)} entries but input_ids has {len(want)} ({case}): one segment id "
                    "per token")
    if got == [1 - v for v in want]:
        raise Wrong(f"the segments are swapped ({case}): [CLS] A [SEP] have token type 0, B [SEP] type 1")
    diff = [i for i in range(len(want)) if got[i] != want[i]]
    if diff == [first_sep]:
        raise Wrong(f"the segment of the first [SEP] (position {first_sep}) should be 0 ({case}): it closes "
                    "sentence A and belongs to segment 0")
    if diff == [last]:
        raise Wrong(f"the segment of the last [SEP] (position {last}) should be 1 ({case}): it closes sentence B")
    if diff == [0]:
        raise Wrong(f"the segment of [CLS] (position 0) should be 0 ({case})")
    raise Wrong(f"token_type_ids should be {want}, got {got} ({case}): 0 for [CLS] A [SEP], 1 for B [SEP]")


@exercise("nsp_input", needs=["build_nsp_input"])
def check_nsp_input(build_nsp_input):
    for a, b, cls_id, sep_id in NSP_CASES:
        case = f"A = {a}, B = {b}, cls_id = {cls_id}, sep_id = {sep_id}"
        arg_a, arg_b = list(a), list(b)
        answer = build_nsp_input(arg_a, arg_b, cls_id, sep_id)
        if (arg_a, arg_b) != (a, b):
            which = "ids_a" if arg_a != a else "ids_b"
            raise Wrong(f"build_nsp_input changed {which} in place ({case}): the caller's lists must stay as they "
                        "were, so build a new list instead of adding to the one you were given")
        if not isinstance(answer, (tuple, list)) or len(answer) != 2:
            raise Wrong(f"build_nsp_input should return a pair (input_ids, token_type_ids), got "
                        f"{type(answer).__name__} ({case})")
        ids = _check_int_list(answer[0], "input_ids (the first value returned)", case)
        types = _check_int_list(answer[1], "token_type_ids (the second value returned)", case)
        if set(ids) <= {0, 1} and not set(types) <= {0, 1}:
            raise Wrong(f"return (input_ids, token_type_ids) in this order: yours look swapped ({case})")
        _diagnose_nsp_ids(ids, a, b, cls_id, sep_id, case)
        _diagnose_nsp_types(types, a, b, case)
    return f"[CLS] A [SEP] B [SEP] with segments 0…0 1…1, for {len(NSP_CASES)} sentence pairs"


# ----------------------------------------------------------------------------- language_sampling

LANGUAGE_CASES = [  # (p, alpha): probabilities, counts as a Python list, integer counts, α = 1, α near 0
    (torch.tensor([0.6, 0.25, 0.1, 0.05]), 0.3),
    ([3.0e9, 1.2e9, 8.0e8, 9.0e7, 1.5e7, 8.0e5], 0.3),
    (torch.tensor([50, 30, 15, 5]), 0.5),
    (torch.tensor([20.0, 50.0, 30.0], dtype=torch.float64), 1.0),
    (torch.tensor([9.0e6, 1.0e6]), 0.01),
]


def _describe_p(p) -> str:
    if isinstance(p, list):
        return f"p = [{', '.join(f'{v:g}' for v in p)}] (a list of counts)"
    kind = "counts" if not p.is_floating_point() or float(p.sum()) > 1.5 else "probabilities"
    values = ", ".join(f"{v:g}" for v in p.tolist())
    return f"p = [{values}] ({kind}, a {p.dtype} tensor)"


def _normalised(x: torch.Tensor) -> torch.Tensor:
    return x / x.sum()


def _diagnose_q(q, p, alpha, expected, case):
    if torch.isnan(q).any():
        raise Wrong(f"q contains NaN ({case})")
    P = _normalised(torch.as_tensor(p, dtype=torch.float64))
    total = float(q.double().sum())
    if abs(total - 1) > 1e-5:
        hint = f"your q sums to {fmt_num(total, near=1) if total < 1e4 else f'{total:.3g}'}, expected 1"
        if close(q, P.pow(alpha)) or close(q, torch.as_tensor(p, dtype=torch.float64).pow(alpha)):
            hint += (": you computed p^α (dividing by Σ_j p_j changes nothing when p already sums to 1); eq. 11.7 "
                     "normalises by the sum of the exponentiated values")
        elif close(q, alpha * P):
            hint += ": you computed α·p; eq. 11.7 raises each p_i to the power α, then normalises"
        else:
            hint += ": divide by Σ_j p_j^α (eq. 11.7)"
        raise Wrong(f"{hint} ({case})")
    if alpha != 1 and close(q, P):
        raise Wrong(f"your q is p normalised, as if α were 1 (α·p normalised is p again) ({case}): each p_i must "
                    "be raised to the power α before normalising")
    variants = [
        (_normalised(torch.full_like(P, alpha).pow(P)), "you computed α^p; eq. 11.7 needs p^α, the share raised to the power α"),
        (_normalised(P.pow(1 / alpha)), "you raised p to the power 1/α; eq. 11.7 uses p^α"),
        (torch.softmax(alpha * P, 0), "you took a softmax of α·p; eq. 11.7 is p^α / Σ_j p_j^α, without exponentials"),
    ]
    for value, hint in variants:
        if close(q, value):
            raise Wrong(f"{hint} ({case})")
    idx, _ = first_mismatch(q, expected)
    i = idx[0]
    raise Wrong(f"q[{i}] is {float(q[i]):.4g}, expected {float(expected[i]):.4g} = p_{i}^α / Σ_j p_j^α ({case})")


@exercise("language_sampling", needs=["language_probs"])
def check_language_sampling(language_probs):
    for p, alpha in LANGUAGE_CASES:
        case = f"{_describe_p(p)}, α = {alpha}"
        expected = language_sampling_probs(p, alpha)
        arg = p.clone() if isinstance(p, torch.Tensor) else list(p)
        try:
            q = language_probs(arg, alpha)
        except Wrong as e:
            if isinstance(p, list):
                raise Wrong(f"{e} (with {case}): p may be a plain list of counts; turn it into a floating-point "
                            "tensor before computing with it") from None
            if isinstance(p, torch.Tensor) and not p.is_floating_point():
                raise Wrong(f"{e} (with {case}): p may hold integer counts; powers and shares need floating-point "
                            "numbers, so convert them first") from None
            raise
        if isinstance(p, torch.Tensor) and not torch.equal(arg, p):
            raise Wrong(f"language_probs changed p in place ({case}): the caller's p must stay as it was, so "
                        "normalise into a new tensor")
        if isinstance(p, list) and arg != p:
            raise Wrong(f"language_probs changed the list p in place ({case})")
        if isinstance(q, (list, tuple)):
            raise Wrong(f"language_probs should return a tensor, got a {type(q).__name__} ({case}): turn p into a "
                        "tensor first and compute with tensors throughout")
        q = expect_tensor(q, f"q (for {case})")
        expect_shape(q, expected.shape, f"q ({case})")
        if not q.is_floating_point():
            raise Wrong(f"q has dtype {q.dtype} ({case}): probabilities are floats")
        if not close(q, expected):
            _diagnose_q(q, p, alpha, expected, case)
    return f"matches eq. 11.7 (course_lib.pretraining.multilingual.language_sampling_probs) on {len(LANGUAGE_CASES)} inputs, " \
           "counts and probabilities, lists and tensors"


# ----------------------------------------------------------------------------- masked_batch (composing)

BATCH_TEXTS = [  # lengths from 3 to 25 words, so that the batch is padded
    "Please turn your homework in.",
    "So long and thanks for all the fish.",
    "The cloze task asks for a missing word given the words on both sides of it.",
    "Mt. Sanitas is in Sunshine Canyon.",
    "Bidirectional encoders see the whole sentence at once.",
    "A token is selected for the loss with probability fifteen percent, and most selected tokens become masks.",
    "It rained.",
    "The model predicts the original token at every selected position.",
    "Random replacements are drawn from the unigram distribution of the corpus, so frequent words are drawn "
    "more often than rare ones.",
    "Special tokens are never selected.",
    "The river bank was steep and muddy after the storm.",
    "She deposited the cheque at the bank on Monday morning before the lecture started.",
    "Next sentence prediction asks whether the second sentence followed the first.",
    "Padding fills the shorter sentences of a batch.",
    "Only the selected tokens contribute to the loss, the others are context.",
    "We stayed in.",
    "Attention lets every token look at every other token in both directions, which a causal model cannot do.",
    "The last hidden state of the classification token summarises the input.",
    "Word pieces split rare words into frequent parts.",
    "Thanks!",
]
BATCH_SEEDS = (0, 1, 2)  # the loss is checked on these batches
FATES_SEEDS = tuple(range(3, 16))  # and the corruption pooled over all 16: about 3,800 text tokens and 570
#                                    selected, enough to tell the fates apart at 6 sigma


BATCH_VOCAB_HEAD = 2048  # the embedded vocabulary's first entries kept (specials, characters, the commonest words)


def batch_tokenizer():
    """The embedded model's WordPiece tokenizer cut down to its first BATCH_VOCAB_HEAD entries plus every piece
    of BATCH_TEXTS: it splits the check's texts into exactly the same pieces (greedy longest match finds the
    same piece in a subset that holds it), with the same special ids, over 2,163 entries instead of 30,522, so
    that the MLM head of the check's model costs a fourteenth. Most of its entries never occur in the texts, so
    random tokens drawn from the whole vocabulary instead of ``unigram`` are still caught."""
    import json

    from tokenizers import Tokenizer

    from ..checkpoints import embedded_model_dir
    from ..tokenization.bert_tokenizer import BertTokenizer

    full = BertTokenizer.from_dir(embedded_model_dir())
    spec = json.loads(full.backend.to_str())
    used = sorted({i for row in full(BATCH_TEXTS).input_ids.tolist() for i in row} - set(range(BATCH_VOCAB_HEAD)))
    keep = [*range(BATCH_VOCAB_HEAD), *used]
    spec["model"]["vocab"] = {full.id_to_token(i): new for new, i in enumerate(keep)}
    return BertTokenizer(Tokenizer.from_str(json.dumps(spec)), full.model_max_length,
                         name=f"{full.name}, cut down to {len(keep):,} entries")


@functools.cache
def batch_model_and_tokenizer():
    """A small random BERT with an MLM head over a cut-down copy of the embedded model's WordPiece vocabulary
    (:func:`batch_tokenizer`; seeded, dropout off).

    Its initialisation is wider than BERT's, so that its attention is far from uniform and the answer
    changes visibly when the padding is not masked.
    """
    from ..model.bert import BertConfig
    from ..model.heads import BertForPreTraining

    tok = batch_tokenizer()
    config = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0, initializer_range=0.5)
    with seeded(11):
        model = BertForPreTraining(config, nsp=False).eval()
    model.name_or_path = "a small random BERT with an MLM head (the exercise's model)"
    return model, tok


def _batch_unigram(tok) -> torch.Tensor:
    from ..pretraining.masking import unigram_distribution

    return unigram_distribution(BATCH_TEXTS, tokenizer=tok)


def _call_batch_loss(masked_batch_loss, model, tok, unigram, seed, texts=BATCH_TEXTS, touched=None):
    from .remote import value_and_generators   # the check's side only: the sandbox never imports it

    try:
        args = (model, tok, list(texts), unigram.clone(), torch.Generator().manual_seed(seed))
        if touched is None:
            answer = masked_batch_loss(*args)
        else:  # and the global generators it changed
            answer, changed = value_and_generators(masked_batch_loss, args, {})
            touched += changed
    except Wrong as err:  # what the student's function raised, in the student's words
        if "raised IndexError: index out of range" in str(err):
            raise Wrong(f"{err}: the model was given an id outside the vocabulary of the tokenizer you were given, "
                        f"which has {tok.vocab_size:,} entries here: take every id from `tokenizer` and `unigram`, "
                        "never from a fixed vocabulary size such as 30,522") from None
        raise
    if not isinstance(answer, (tuple, list)) or len(answer) != 3:
        got = type(answer).__name__ if not isinstance(answer, (tuple, list)) else f"{len(answer)} values"
        raise Wrong(f"masked_batch_loss should return three things, (loss, corrupted_ids, labels); got {got}")
    loss, corrupted, labels = answer
    if isinstance(loss, numbers.Real):
        raise Wrong(f"the loss should be a tensor, got {type(loss).__name__} {loss!r}: a plain Python number cannot "
                    "carry a gradient back to the model")
    loss = expect_tensor(loss, "the loss (the first value returned)")
    corrupted = expect_tensor(corrupted, "corrupted_ids (the second value returned)")
    labels = expect_tensor(labels, "labels (the third value returned)")
    return loss, corrupted, labels


def _selected_loss(logits, labels) -> torch.Tensor:
    keep = labels != IGNORE_INDEX
    return F.cross_entropy(logits[keep].double(), labels[keep])


def _check_batch_run(masked_batch_loss, model, tok, unigram, seed, texts=BATCH_TEXTS, loss_too: bool = True):
    enc = tok(list(texts))
    original, att = enc.input_ids, enc.attention_mask
    loss, corrupted, labels = _call_batch_loss(masked_batch_loss, model, tok, unigram, seed, texts)
    if tuple(corrupted.shape) != tuple(original.shape):
        raise Wrong(f"corrupted_ids has shape {fmt_shape(corrupted.shape)}; the {len(texts)} texts tokenized "
                    f"together, padded to the longest, make a batch of shape {fmt_shape(original.shape)}: tokenize "
                    "the whole list at once")
    expect_shape(labels, original.shape, "labels")
    pad = att == 0
    special = torch.isin(original, torch.tensor(sorted(tok.special_ids))) & ~pad
    sel = labels != IGNORE_INDEX
    if (sel & pad).any():
        raise Wrong(f"{int((sel & pad).sum())} padding positions were selected for the loss: padding is not text. "
                    "The attention mask says which positions are padding; they must never be selected")
    if (sel & special).any():
        b, t = (sel & special).nonzero()[0].tolist()
        raise Wrong(f"{tok.convert_ids_to_tokens([int(original[b, t])])[0]} at position {t} of text {b} was selected "
                    "for the loss: special tokens ([CLS], [SEP]) are never selected")
    if (sel & (labels != original)).any():
        b, t = (sel & (labels != original)).nonzero()[0].tolist()
        raise Wrong(f"the label at position {t} of text {b} is {int(labels[b, t])}, the original token there is "
                    f"{int(original[b, t])}: labels hold the original ids of the selected tokens (and -100 elsewhere)")
    if ((corrupted != original) & ~sel).any():
        b, t = ((corrupted != original) & ~sel).nonzero()[0].tolist()
        raise Wrong(f"position {t} of text {b} was changed to {int(corrupted[b, t])} but not selected (its label is "
                    "-100): only selected tokens are corrupted")
    if not (corrupted == tok.mask_token_id).any():
        raise Wrong("corrupted_ids contains no [MASK] at all: the model must be given the corrupted input, in which "
                    "most selected tokens are [MASK]")
    eligible = ~pad & ~special
    n_eligible, n_sel = int(eligible.sum()), int(sel.sum())
    changed = corrupted != original
    rnd = sel & changed & (corrupted != tok.mask_token_id)
    drawn = corrupted[rnd]
    if ((drawn < 0) | (drawn >= len(unigram))).any() or (unigram[drawn.clamp(0, len(unigram) - 1)] == 0).any():
        b, t = rnd.nonzero()[0].tolist()
        raise Wrong(f"a selected token became token {int(corrupted[b, t])}, which the unigram distribution you were "
                    "given never draws: the random replacements must be drawn from `unigram`, not uniformly from the "
                    "vocabulary")
    counts = torch.tensor([n_eligible, n_sel, int((sel & (corrupted == tok.mask_token_id)).sum()), int(rnd.sum()),
                           int((sel & ~changed).sum())])
    if not loss_too:  # a batch for the shares only: the loss was checked on the others
        return counts
    with torch.no_grad():
        ref = _selected_loss(model(corrupted, att, enc.token_type_ids).logits, labels)
    if loss.dim() != 0:
        raise Wrong(f"the loss should be a single number (shape ()), got shape {fmt_shape(loss.shape)}: average "
                    "over the selected tokens")
    if close(loss, ref):
        return counts
    with torch.no_grad():
        logits_no_mask = model(corrupted).logits
        logits_original = model(original, att, enc.token_type_ids).logits
        logits = model(corrupted, att, enc.token_type_ids).logits
    keep = labels != IGNORE_INDEX
    every = F.cross_entropy(logits.double().reshape(-1, logits.size(-1)), original.reshape(-1))
    variants = [
        (_selected_loss(logits_no_mask, labels), "your loss is what the model gives when it also attends to the "
         "padding: give it the attention mask of the padded batch, so that no token looks at [PAD] positions"),
        (_selected_loss(logits_original, labels), "your loss is the model's loss on the original, uncorrupted "
         "text: the model must see the corrupted ids (else it can simply copy the answer it is shown)"),
        (F.cross_entropy(logits[keep].double(), labels[keep], reduction="sum"), "your loss is the sum over the "
         "selected tokens; L_MLM is their mean"),
        (every, "your loss averages over every position of the batch, padding included: only the selected tokens "
         "count"),
        (F.cross_entropy(logits[eligible].double(), original[eligible]), "your loss averages over every text "
         "token; only the selected tokens (the set M) count"),
    ]
    for value, hint in variants:
        if close(loss, value):
            raise Wrong(hint)
    raise Wrong(f"your loss is {float(loss):.4f}; the model's mean cross-entropy over the {n_sel} selected tokens of "
                f"your corrupted batch is {float(ref):.4f}")


def _check_batch_shares(n_eligible: int, n_sel: int, n_mask: int, n_rnd: int, n_kept: int) -> None:
    """The corruption pooled over the seeds: 15% of the text tokens selected, and of those 80/10/10."""
    if not _within(n_sel / n_eligible, 0.15, n_eligible):
        raise Wrong(f"{n_sel} of the {n_eligible} text tokens of the batches checked were selected "
                    f"({n_sel / n_eligible:.1%}); about 15% should be")
    m, r, k = n_mask / n_sel, n_rnd / n_sel, n_kept / n_sel
    if _within(m, 0.8, n_sel) and _within(r, 0.1, n_sel) and _within(k, 0.1, n_sel):
        return
    hint = (f"of the {n_sel} selected tokens, {m:.0%} became [MASK], {r:.0%} random tokens and {k:.0%} stayed "
            "unchanged (and still have their label); BERT's recipe gives about 80%, 10% and 10%")
    if k < 0.02 and r < 0.02:
        hint += (": not every selected token becomes [MASK]; 10% become a token drawn from `unigram` and 10% stay "
                 "as they are, still selected, so that the model learns to predict at every position")
    elif k < 0.02:
        hint += (": the 10% left unchanged are selected all the same: they keep their label, so the model must "
                 "predict a token it can see")
    elif r < 0.02:
        hint += ": 10% of the selected tokens become a token drawn from `unigram`"
    raise Wrong(hint)


@exercise("masked_batch", needs=["masked_batch_loss"])
def check_masked_batch(masked_batch_loss):
    model, tok = batch_model_and_tokenizer()
    unigram = _batch_unigram(tok)
    counts = torch.zeros(5, dtype=torch.long)
    first = None
    for seed in BATCH_SEEDS:
        counts += _check_batch_run(masked_batch_loss, model, tok, unigram, seed)
        if first is None:
            first = _call_batch_loss(masked_batch_loss, model, tok, unigram, seed)
    # before the shares are pooled: a function that draws from a generator of its own makes the same batch every
    # time, and its shares (one batch, 16 times) would send the student after a fault of the 80/10/10 step
    other = _call_batch_loss(masked_batch_loss, model, tok, unigram, BATCH_SEEDS[1])
    if torch.equal(other[2] != IGNORE_INDEX, first[2] != IGNORE_INDEX):
        raise Wrong(f"generators seeded {BATCH_SEEDS[0]} and {BATCH_SEEDS[1]} gave the same selection: draw every "
                    "random number from the generator you are given, and do not make or reseed one of your own")
    for seed in FATES_SEEDS:
        counts += _check_batch_run(masked_batch_loss, model, tok, unigram, seed, loss_too=False)
    n_eligible, n_sel, n_mask, n_rnd, n_kept = counts.tolist()
    _check_batch_shares(n_eligible, n_sel, n_mask, n_rnd, n_kept)
    touched: list = []
    again = _call_batch_loss(masked_batch_loss, model, tok, unigram, BATCH_SEEDS[0], touched=touched)
    if not (torch.equal(again[2], first[2]) and torch.equal(again[1], first[1])):
        raise Wrong("two calls with the same seeded generator gave different batches: every random draw must come "
                    "from the generator you are given")
    from .remote import refuse_global_draws   # the check's side only: the sandbox never imports it

    refuse_global_draws(touched, "The batch looks right", given=" (pass it on to mask_tokens)")
    return (f"{len(BATCH_TEXTS)} texts → a padded batch, {n_sel} of {n_eligible} text tokens selected over "
            f"{len(BATCH_SEEDS) + len(FATES_SEEDS)} batches ({n_mask / n_sel:.0%} [MASK], {n_rnd / n_sel:.0%} random, "
            f"{n_kept / n_sel:.0%} unchanged), no padding or special token selected, the loss the model gives on "
            "your corrupted batch")


# ----------------------------------------------------------------------------- predictions

question(
    "unchanged_prediction", variable="at_unchanged",
    choices=["the token it sees", "a word that fits the context", "[MASK]", "the most frequent token"],
    answer="the token it sees",
    why="where it sees a real token, it mostly predicts that very token (the table below shows it for both "
        "models). BERT's stated reason for leaving 10% of the selected tokens unchanged, still to be predicted, is "
        "to keep the model's outputs at real tokens meaningful, which matters because a pretrained model is then "
        "used on text without a single [MASK]; how much of the copying those tokens taught, this run cannot say",
    hint="think about what the 10% unchanged tokens teach. At such a position, what is the target, and what does "
         "the model's input hold there?",
    giveaways=["predict a token it can see — which is usually right", "it mostly predicts that very token"])

question(
    "piece_given_away", variable="piece_given_away",
    choices=["about as often", "about twice as often", "five times as often or more"],
    answer="five times as often or more",
    why="the other pieces of a word narrow the masked piece down to a handful of spellings: 'san' and '##itas' "
        "leave little doubt about what sits between or beside them. With the whole word masked, only the "
        "context is left, and many words fit a context. The piece-alone guess is mostly spelling, which is why "
        "whole-word masking (and SpanBERT's spans of whole words) makes the task harder and the training signal "
        "richer",
    hint="cover one piece of a long word in a sentence and guess it; then cover the whole word and guess the same "
         "piece. How many candidates are left in each case?",
    giveaways=["the leak whole-word masking closes", "what a [MASK] on one piece gives away"])

question(
    "share_in_loss", variable="share_in_loss", choices=["1.5%", "12%", "15%", "85%", "100%"], answer="15%",
    why="every selected token is predicted, whatever its fate: 80% of them are [MASK]ed (12% of the text), but the "
        "10% random and the 10% unchanged ones are in the loss too; the other 85% of the tokens are only context. "
        "That is the inefficiency the chapter points out (ELECTRA learns from every position)",
    hint="which positions get a label other than -100, and what decides that: the selection, or the fate a "
         "selected token then meets?",
    giveaways=["selects 15% of the input tokens for the loss", "15% of the tokens contribute to the loss"])

question(
    "loss_at_start", variable="loss_at_start", choices=["ln|V|", "the unigram entropy", "0"], answer="ln|V|",
    why="random weights give nearly equal scores to every token of the vocabulary, so the probability of the right "
        "one is about 1/|V| and the cross-entropy about ln|V|. Learning how frequent each token is brings it down "
        "to the unigram entropy; only the context can bring it below",
    hint="with random, small weights, how different are the scores of the |V| tokens, and so how much more likely "
         "is the right one than any other? The loss is minus the log of that probability.")
