"""Exercises of notebook 11.2, masked language modelling (SLP3 §11.2).

mlm_masking        mask_tokens(input_ids, special_ids, mask_token_id, unigram, select_prob=0.15, generator=None)
                   -> (corrupted_ids, labels): 15% selected; of those 80% [MASK], 10% random, 10% kept (§11.2.1)
mlm_loss           masked_lm_loss(logits, labels) -> the cross-entropy averaged over the selected tokens only
nsp_input          build_nsp_input(ids_a, ids_b, cls_id, sep_id) -> ([CLS] A [SEP] B [SEP], segment ids) (§11.2.2)
language_sampling  language_probs(p, alpha) -> q_i = p_i^α / Σ_j p_j^α (eq. 11.7)

The masking is random, so its check is statistical: it runs the student's function
on a large batch with fixed generator seeds (so a check always gives the same
verdict) and accepts shares within six standard deviations of the target rates.
The other checks compare with ``course_lib``'s reference implementations.
"""
from __future__ import annotations

import contextlib
import math
import numbers
import re

import torch
import torch.nn.functional as F

from ..pretraining.masking import IGNORE_INDEX
from ..pretraining.masking import masked_lm_loss as reference_mlm_loss
from ..pretraining.multilingual import language_sampling_probs
from .core import Wrong, exercise
from .hints import close, expect_shape, expect_tensor, first_mismatch, fmt_int, fmt_num, fmt_shape

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


def _call_mask_tokens(mask_tokens, input_ids, unigram, select_prob, seed):
    """Call the student's function (select_prob None: its default); add a hint to the errors we can explain."""
    kwargs = {"generator": torch.Generator().manual_seed(seed)}
    if select_prob is not None:
        kwargs["select_prob"] = select_prob
    try:
        return mask_tokens(input_ids, set(SPECIAL_IDS), MASK, unigram.clone(), **kwargs)
    except Wrong as e:
        msg = str(e)
        if "without replacement" in msg:
            raise Wrong(f"{msg}: pass replacement=True to torch.multinomial (several positions may draw the same "
                        "token)") from None
        if re.search(r"\bset\b", msg):
            raise Wrong(f"{msg}: special_ids is a set (as tokenizer.special_ids is); make a tensor of it first, "
                        "torch.tensor(sorted(special_ids))") from None
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
        raise Wrong(f"labels have dtype {labels.dtype}; F.cross_entropy needs torch.long (int64) labels")
    return corrupted, labels


def _check_masking_run(mask_tokens, select_prob: float | None, seed: int):
    """One call on the big batch; raises Wrong at the first problem. Returns (corrupted, labels, counts)."""
    p = 0.15 if select_prob is None else select_prob
    input_ids, unigram = masking_batch(), masking_unigram()
    original = input_ids.clone()
    answer = _call_mask_tokens(mask_tokens, input_ids, unigram, select_prob, seed)
    corrupted, labels = _unpack_masking(answer, original)
    if not torch.equal(input_ids, original):
        raise Wrong("mask_tokens changed input_ids in place: work on a copy, corrupted = input_ids.clone()")

    special = torch.isin(original, torch.tensor(sorted(SPECIAL_IDS)))
    eligible = ~special
    sel = labels != IGNORE_INDEX
    changed = corrupted != original

    # labels: -100 at the unselected positions, the original id at the selected ones
    if sel[eligible].float().mean() > 0.99:  # (at most) the special tokens have -100
        where = (sel & ~changed & eligible).nonzero()
        b, t = (where if len(where) else (sel & eligible).nonzero())[0].tolist()
        raise Wrong(f"labels should be -100 at unselected positions; found {int(labels[b, t])} at ({b}, {t}): "
                    "labels = torch.where(selected, input_ids, -100)")
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
            hint += ": select a token when its random number is below select_prob (torch.rand(…) < select_prob)"
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
            hint += ": replace 10% of the selected tokens by tokens drawn with torch.multinomial(unigram, …)"
        elif k < 0.02:
            hint += ": leave 10% of the selected tokens unchanged"
        else:
            hint += (": draw one more random number per token: below 0.8 -> [MASK], 0.8 to 0.9 -> a random token, "
                     "above 0.9 -> unchanged")
        raise Wrong(hint)

    # the random tokens come from unigram
    drawn = corrupted[rnd]
    counts = torch.bincount(drawn.clamp(0, VOCAB - 1), minlength=VOCAB)
    if len(drawn) > len(UNIGRAM_IDS) and int(counts[UNIGRAM_IDS].max()) <= 1:
        raise Wrong("no token was drawn twice as a random replacement, although unigram has only "
                    f"{len(UNIGRAM_IDS)} tokens of non-zero probability: torch.multinomial draws without replacement "
                    "unless you pass replacement=True")
    outside = (drawn < 0) | (drawn >= VOCAB)
    outside[~outside] = unigram[drawn[~outside]] == 0
    if outside.any():
        b, t = rnd.nonzero()[int(outside.nonzero()[0])].tolist()
        raise Wrong(f"position ({b}, {t}) became token {int(corrupted[b, t])} as a random replacement, but unigram "
                    "gives that token probability 0: draw the random tokens from unigram, "
                    "torch.multinomial(unigram, n, replacement=True, generator=generator)")
    counts = counts[UNIGRAM_IDS]
    n_rnd = len(drawn)
    if (counts == n_rnd).any():
        raise Wrong(f"every random replacement is token {UNIGRAM_IDS[int((counts == n_rnd).nonzero()[0])]}: draw one "
                    "token per replaced position, torch.multinomial(unigram, n, replacement=True, generator=generator)")
    for i, prob in zip(UNIGRAM_IDS, UNIGRAM_PROBS):
        f = int(counts[UNIGRAM_IDS.index(i)]) / n_rnd
        if not _within(f, prob, n_rnd):
            raise Wrong(f"the random replacements do not follow unigram: token {i} has probability {prob:.0%} but "
                        f"replaced {f:.0%} of them; draw them with torch.multinomial(unigram, n, replacement=True)")
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
    again = _unpack_masking(_call_mask_tokens(mask_tokens, input_ids, unigram, None, seed), input_ids)
    if not (torch.equal(again[0], corrupted) and torch.equal(again[1], labels)):
        raise Wrong(f"two calls with the same generator, torch.Generator().manual_seed({seed}), gave different results: "
                    "pass generator=generator to every random call (torch.rand, torch.multinomial)")
    other = _unpack_masking(_call_mask_tokens(mask_tokens, input_ids, unigram, None, seed + 1), input_ids)
    if torch.equal(other[1], labels):
        raise Wrong(f"generators seeded {seed} and {seed + 1} gave the same selection: draw every random number "
                    "from generator (and do not call torch.manual_seed)")
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
                              "selected positions only (labels != -100)"),
        (F.cross_entropy(lg.reshape(-1, V), labels.clamp(min=0).reshape(-1)),
         "your loss includes the unselected positions (label -100): keep only the positions where labels != -100"),
        (torch.stack(per_row).mean(), "you averaged each sequence's loss, then the sequences: L_MLM averages over "
                                      "all the selected tokens of the batch at once"),
        (F.cross_entropy(probs[keep], labels[keep]), "you gave probabilities (after a softmax) to F.cross_entropy, "
                                                     "which applies log-softmax itself: give it the logits"),
        (-probs[keep].gather(-1, labels[keep, None]).mean(), "F.nll_loss expects log-probabilities, not "
                                                             "probabilities: use F.cross_entropy on the logits"),
        (-lg[keep].gather(-1, labels[keep, None]).mean(), "you took minus the logit of the label, without the "
                                                          "log-softmax: use F.cross_entropy on the logits"),
        (F.cross_entropy(lg[positive], labels[positive]),
         "your loss skips the positions whose label is 0, a real token id: only -100 marks the unselected positions"),
        (F.cross_entropy(lg[keep], labels[keep]) / math.log(2), "your loss is in bits (log base 2): use the natural "
                                                                "logarithm, as F.cross_entropy does"),
    ]


def _check_loss_case(masked_lm_loss, logits, labels, case):
    ref = reference_mlm_loss(logits, labels)
    n = int((labels != IGNORE_INDEX).sum())
    B, T, _ = logits.shape
    lg, lb = logits.clone(), labels.clone()
    try:
        got = masked_lm_loss(lg, lb)
    except Wrong as e:
        if "Expected target size" in str(e):
            raise Wrong(f"{e} ({case}): F.cross_entropy wants the classes on axis 1; select the positions first, "
                        "logits[keep] (|M|, |V|) and labels[keep] (|M|,)") from None
        raise
    if not torch.equal(lb, labels):
        raise Wrong(f"masked_lm_loss changed labels in place ({case}): work on a copy, or select with a mask")
    if not torch.equal(lg, logits):
        raise Wrong(f"masked_lm_loss changed logits in place ({case})")
    if isinstance(got, numbers.Real):
        raise Wrong(f"masked_lm_loss should return a tensor (the loss backward() starts from), got "
                    f"{type(got).__name__} {got!r}: drop .item() / float(…)")
    got = expect_tensor(got, "the loss")
    if got.dim() != 0:
        shape = fmt_shape(got.shape)
        if tuple(got.shape) == (n,):
            raise Wrong(f"masked_lm_loss should return a scalar, got shape {shape} ({case}): these look like the "
                        f"losses of the {n} selected tokens; return their mean")
        if tuple(got.shape) == (B, T):
            raise Wrong(f"masked_lm_loss should return a scalar, got shape {shape} ({case}): one loss per position "
                        "(reduction='none'?); average over the selected positions only")
        raise Wrong(f"masked_lm_loss should return a scalar (shape ()), got shape {shape} ({case})")
    if not got.is_floating_point():
        raise Wrong(f"the loss has dtype {got.dtype} ({case}); it should be a float")
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
    logits, labels = loss_inputs(*LOSS_CASES[0])
    with torch.enable_grad():
        logits.requires_grad_(True)
        loss = masked_lm_loss(logits, labels)
        if not loss.requires_grad:
            raise Wrong("the loss is not connected to the logits (no gradient would flow): compute it with torch "
                        "operations on the logits, without .item(), float() or torch.tensor(…)")
    return (f"matches course_lib.pretraining.masking.masked_lm_loss on {len(LOSS_CASES)} batches, gradient included")


# ----------------------------------------------------------------------------- nsp_input

NSP_CASES = [([7, 8, 9], [4, 5], 101, 102), ([11], [12, 13, 14, 15], 2, 3), ([21, 22], [23, 24], 101, 102)]


def _nsp_reference(a, b, cls_id, sep_id):
    return [cls_id, *a, sep_id, *b, sep_id], [0] * (len(a) + 2) + [1] * (len(b) + 1)


def _check_int_list(x, what: str, case: str) -> list[int]:
    if not isinstance(x, list):
        raise Wrong(f"{what} should be a list of ints, got {type(x).__name__} ({case}): build it with list "
                    "concatenation, e.g. [cls_id] + list(ids_a) + [sep_id] + …")
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
            raise Wrong(f"build_nsp_input changed {which} in place (append / extend / insert?) ({case}): build new "
                        "lists, e.g. [cls_id] + list(ids_a) + [sep_id] + …")
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
            hint += ": you computed p^α; now divide by Σ_j p_j^α"
        elif close(q, alpha * P):
            hint += ": you computed α·p; eq. 11.7 raises p to the power α (p ** alpha), then normalises"
        else:
            hint += ": divide by Σ_j p_j^α (eq. 11.7)"
        raise Wrong(f"{hint} ({case})")
    if alpha != 1 and close(q, P):
        raise Wrong(f"your q is p normalised, as if α were 1 (α·p normalised is p again) ({case}): raise p to the "
                    "power α, p ** alpha, before normalising")
    variants = [
        (_normalised(torch.full_like(P, alpha).pow(P)), "you computed α^p; eq. 11.7 needs p^α: p ** alpha"),
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
                raise Wrong(f"{e} (with {case}): p may be a list; convert it first, "
                            "torch.as_tensor(p, dtype=torch.float64)") from None
            if isinstance(p, torch.Tensor) and not p.is_floating_point():
                raise Wrong(f"{e} (with {case}): p may hold integer counts; convert it first, "
                            "torch.as_tensor(p, dtype=torch.float64)") from None
            raise
        if isinstance(p, torch.Tensor) and not torch.equal(arg, p):
            raise Wrong(f"language_probs changed p in place (p /= … ?) ({case}): compute a new tensor, "
                        "p = p / p.sum()")
        if isinstance(p, list) and arg != p:
            raise Wrong(f"language_probs changed the list p in place ({case})")
        if isinstance(q, (list, tuple)):
            raise Wrong(f"language_probs should return a tensor, got a {type(q).__name__} ({case}): "
                        "torch.as_tensor(p) first, then compute with tensors")
        q = expect_tensor(q, f"q (for {case})")
        expect_shape(q, expected.shape, f"q ({case})")
        if not q.is_floating_point():
            raise Wrong(f"q has dtype {q.dtype} ({case}): probabilities are floats")
        if not close(q, expected):
            _diagnose_q(q, p, alpha, expected, case)
    return f"matches eq. 11.7 (course_lib.pretraining.multilingual.language_sampling_probs) on {len(LANGUAGE_CASES)} inputs, " \
           "counts and probabilities, lists and tensors"
