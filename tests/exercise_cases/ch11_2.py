"""Known-wrong answers to the exercises of notebook 11.2 (notebooks/11_2_masked_language_modeling.py).

Each case is a whole answer cell with one mistake; tests/test_exercise_registry.py runs it after the notebook's
``setup`` cells and checks that the message contains the hint given here.
"""

# The wrong masking and NSP answers are a correct answer with one mistake: edit(BASE, old, new).
MASK_TOKENS = """\
def mask_tokens(input_ids, special_ids, mask_token_id, unigram, select_prob=0.15, generator=None):
    eligible = ~torch.isin(input_ids, torch.tensor(sorted(special_ids)))
    selected = eligible & (torch.rand(input_ids.shape, generator=generator) < select_prob)
    labels = torch.where(selected, input_ids, torch.full_like(input_ids, -100))
    fate = torch.rand(input_ids.shape, generator=generator)
    corrupted = input_ids.clone()
    masked = selected & (fate < 0.8)
    randomized = selected & (fate >= 0.8) & (fate < 0.9)
    corrupted[masked] = mask_token_id
    n_random = int(randomized.sum())
    if n_random:
        corrupted[randomized] = torch.multinomial(unigram, n_random, replacement=True, generator=generator)
    return corrupted, labels
"""
LOSS = "def masked_lm_loss(logits, labels):\n    keep = labels != -100\n"
NSP = """\
def build_nsp_input(ids_a, ids_b, cls_id, sep_id):
    input_ids = [cls_id] + list(ids_a) + [sep_id] + list(ids_b) + [sep_id]
    token_type_ids = [0] * (len(ids_a) + 2) + [1] * (len(ids_b) + 1)
    return input_ids, token_type_ids
"""
PROBS = "def language_probs(p, alpha):\n    p = torch.as_tensor(p, dtype=torch.float64)\n    p = p / p.sum()\n"


def edit(source: str, old: str, new: str) -> str:
    """The reference answer with one mistake: ``old`` (which must be there) replaced by ``new``."""
    assert old in source, old
    return source.replace(old, new)


def masking(old: str, new: str) -> str:
    return edit(MASK_TOKENS, old, new)


def nsp(old: str, new: str) -> str:
    return edit(NSP, old, new)


WITH_015, WITH_03 = " (with the default select_prob=0.15)", " (with select_prob=0.3)"
MULTINOMIAL = "torch.multinomial(unigram, n_random, replacement=True, generator=generator)"
LOSS_CASE = " (logits (3, 7, 11), 10 selected tokens)"
NSP_CASE = " (A = [7, 8, 9], B = [4, 5], cls_id = 101, sep_id = 102)"
PROB_CASE = " (p = [0.6, 0.25, 0.1, 0.05] (probabilities, a torch.float32 tensor), α = 0.3)"
LIST_CASE = " (with p = [3e+09, 1.2e+09, 8e+08, 9e+07, 1.5e+07, 800000] (a list of counts), α = 0.3)"

CASES = {  # case -> (exercise, source of a wrong answer, a part of the message it must get)
    # ------------------------------------------------------------------ mlm_masking
    "only padding excluded": ("mlm_masking", masking(
        "~torch.isin(input_ids, torch.tensor(sorted(special_ids)))", "input_ids != 0"),
        "special token 102 was selected at position (2, 165) (its label is 102, not -100): tokens in special_ids "
        "([CLS], [SEP], padding) are never selected" + WITH_015),
    "labels are the input ids everywhere": ("mlm_masking", masking(
        "labels = torch.where(selected, input_ids, torch.full_like(input_ids, -100))", "labels = input_ids.clone()"),
        'labels should be -100 at unselected positions; found 1171 at (0, 1): a label keeps the original id '
        'only where the token was selected for the loss (with the default select_prob=0.15)'),
    "labels -100 only at the special tokens": ("mlm_masking", masking(
        "labels = torch.where(selected, input_ids, torch.full_like(input_ids, -100))",
        "labels = torch.where(eligible, input_ids, torch.full_like(input_ids, -100))"),
        'labels should be -100 at unselected positions; found 1171 at (0, 1): a label keeps the original id '
        'only where the token was selected for the loss (with the default select_prob=0.15)'),
    "a default select_prob of 0.5": ("mlm_masking", masking("select_prob=0.15, generator", "select_prob=0.5, generator"),
        "50.0% of the tokens were selected, expected about 15%" + WITH_015),
    "select_prob hard-coded to 0.15": ("mlm_masking", masking("< select_prob)", "< 0.15)"),
        "14.8% of the tokens were selected, expected about 30%: use the select_prob argument, not a fixed 0.15"
        + WITH_03),
    "selected above select_prob": ("mlm_masking", masking("< select_prob)", "> select_prob)"),
        '85.0% of the tokens were selected, expected about 15%: a token should be selected when its uniform '
        'random number falls below select_prob, which happens with probability select_prob (with the default '
        'select_prob=0.15)'),
    "unchanged tokens without labels": ("mlm_masking", masking(
        "    return corrupted, labels", "    return corrupted, torch.where(selected & (fate < 0.9), input_ids, -100)"),
        "13.6% of the tokens were selected, expected about 15%: are the selected tokens that stay unchanged missing "
        "from the labels? They get their original id as label too" + WITH_015),
    "no random tokens (80/0/20)": ("mlm_masking", masking("    if n_random:", "    if False:"),
        '80% of the selected tokens became [MASK], 0% random tokens and 20% stayed unchanged; expected about '
        '80%, 10% and 10%: 10% of the selected tokens should become a token drawn from the unigram '
        'distribution (with the default select_prob=0.15)'),
    "no unchanged tokens (80/20/0)": ("mlm_masking", masking("(fate < 0.9)", "(fate <= 1)"),
        "80% of the selected tokens became [MASK], 20% random tokens and 0% stayed unchanged; expected about 80%, "
        "10% and 10%: leave 10% of the selected tokens unchanged" + WITH_015),
    "fates from independent draws": ("mlm_masking", masking(
        "randomized = selected & (fate >= 0.8) & (fate < 0.9)",
        "randomized = selected & ~masked & (torch.rand(input_ids.shape, generator=generator) < 0.1)"),
        '80% of the selected tokens became [MASK], 2% random tokens and 18% stayed unchanged; expected about '
        '80%, 10% and 10%: the three fates are shares of the selected tokens, so each selected token needs '
        'exactly one fate of its own, [MASK] with probability 0.8, a random token 0.1, unchanged 0.1; decided by '
        'separate draws, the fates overlap and their shares come out wrong (with the default select_prob=0.15)'),
    "random tokens uniform over the vocabulary": ("mlm_masking", masking(
        MULTINOMIAL, "torch.randint(len(unigram), (n_random,), generator=generator)"),
        'position (0, 77) became token 1685 as a random replacement, but unigram gives that token probability '
        '0: the random tokens must be drawn from the unigram distribution, not uniformly from the vocabulary '
        '(with the default select_prob=0.15)'),
    "random tokens uniform over unigram's support": ("mlm_masking", masking(
        MULTINOMIAL, "torch.multinomial((unigram > 0).float(), n_random, replacement=True, generator=generator)"),
        'the random replacements do not follow unigram: token 200 has probability 30% but replaced 14% of '
        'them; draw each one with the unigram probabilities as weights (with the default select_prob=0.15)'),
    "one random token for all": ("mlm_masking", masking(MULTINOMIAL, "torch.multinomial(unigram, 1, generator=generator)"),
        'every random replacement is token 200: draw one token for every replaced position, each one drawn on '
        'its own (with the default select_prob=0.15)'),
    "multinomial without replacement": ("mlm_masking", masking(", replacement=True", ""),
        'no token was drawn twice as a random replacement, although unigram has only 8 tokens of non-zero '
        'probability: the draws were made without replacement; each replaced position needs an independent '
        'draw, so a frequent token can be drawn many times (with the default select_prob=0.15)'),
    "multinomial without the generator": ("mlm_masking", masking(
        "replacement=True, generator=generator)", "replacement=True)"),
        'two calls with the same generator, torch.Generator().manual_seed(0), gave different results: every '
        'random number (the selection, the fates, the random tokens) must come from the generator you are '
        'given'),
    "generator ignored, global seed": ("mlm_masking", masking(
        "    eligible =", "    torch.manual_seed(0)\n    generator = None\n    eligible ="),
        'generators seeded 0 and 1 gave the same selection: draw every random number from the generator you '
        "are given, and do not reseed torch's global one"),
    "the fates from torch's global generator, reseeded": ("mlm_masking", masking(
        "    fate = torch.rand(input_ids.shape, generator=generator)",
        "    torch.manual_seed(42)\n    fate = torch.rand(input_ids.shape)"),
        "gave the same fate ([MASK], random, unchanged) to"),
    # every draw from torch's global generator, reseeded from the one given: every number right, the notebook's
    # later draws not
    "torch's global generator, reseeded from the one given": ("mlm_masking", masking(
        "    eligible =", "    if generator is not None:\n"
        "        torch.manual_seed(int(torch.randint(2 ** 62, (1,), generator=generator)))\n"
        "    generator = None\n    eligible ="),
        "your function changed torch's global random generator (torch.manual_seed, or a draw without generator=). "
        "The corruption looks right, but every random number drawn after your function in the notebook now depends "
        "on it"),
    "input modified in place": ("mlm_masking", masking("corrupted = input_ids.clone()", "corrupted = input_ids"),
        'mask_tokens changed input_ids in place: corrupt a copy, so that the caller keeps the original ids '
        '(the labels are taken from them) (with the default select_prob=0.15)'),
    "labels from the corrupted ids": ("mlm_masking", masking(
        "    return corrupted, labels", "    return corrupted, torch.where(selected, corrupted, -100)"),
        "the label at (0, 2) is 103, the corrupted id, instead of the original id 1806: take the labels from "
        "input_ids, before corrupting" + WITH_015),
    "labels only for the masked tokens": ("mlm_masking", masking(
        "    return corrupted, labels", "    return corrupted, torch.where(masked, input_ids, -100)"),
        "position (0, 77) was changed to 200 but its label is -100: every selected token, whether it becomes [MASK], "
        "a random token or stays unchanged, gets its original id as label, and only selected tokens are changed"
        + WITH_015),
    "labels as 0/1 flags": ("mlm_masking", masking(
        "    return corrupted, labels", "    return corrupted, torch.where(selected, 1, -100)"),
        "labels should hold the original token ids at the selected positions, not 0/1 flags; found 1 at (0, 2) "
        "where the original id is 1806" + WITH_015),
    "float labels": ("mlm_masking", masking("    return corrupted, labels", "    return corrupted, labels.float()"),
        'labels have dtype torch.float32; cross-entropy needs 64-bit integer (long) class labels (with the '
        'default select_prob=0.15)'),
    "returns (labels, corrupted)": ("mlm_masking", masking("return corrupted, labels", "return labels, corrupted"),
        "return (corrupted_ids, labels) in this order: yours look like (labels, corrupted_ids)" + WITH_015),
    "returns only the corrupted ids": ("mlm_masking", masking("return corrupted, labels", "return corrupted"),
        "mask_tokens should return a pair (corrupted_ids, labels), got a single tensor" + WITH_015),
    "special_ids (a set) straight into a tensor": ("mlm_masking", masking(
        "torch.tensor(sorted(special_ids))", "torch.tensor(special_ids)"),
        'your function mask_tokens raised RuntimeError: Could not infer dtype of set: special_ids is a Python '
        'set (as tokenizer.special_ids is); tensor operations need the ids as a tensor or a list first (with '
        'the default select_prob=0.15)'),
    # ------------------------------------------------------------------ mlm_loss
    "-log of the softmax (underflows)": ("mlm_loss", LOSS + """\
    p = logits[keep].softmax(-1)
    return -p[torch.arange(len(p)), labels[keep]].log().mean()""",
        "a score 120 below the best gives a probability that rounds to 0 before its log is taken"),
    "loss summed": ("mlm_loss", LOSS + "    return F.cross_entropy(logits[keep], labels[keep], reduction='sum')",
        "your loss is the sum over the 10 selected tokens: L_MLM is their mean (divide by |M| = 10)" + LOSS_CASE),
    "loss averaged over all positions": ("mlm_loss", LOSS + """\
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="sum") / labels.numel()""",
        'your loss is averaged over all B·T = 21 positions: average over the 10 selected positions only, '
        'those whose label is not -100 (logits (3, 7, 11), 10 selected tokens)'),
    "per-token losses": ("mlm_loss", LOSS + "    return F.cross_entropy(logits[keep], labels[keep], reduction='none')",
        "masked_lm_loss should return a scalar, got shape (10,)" + LOSS_CASE + ": these look like the losses of the "
        "10 selected tokens; return their mean"),
    "per-position losses": ("mlm_loss", LOSS + """\
    return F.cross_entropy(logits.transpose(1, 2), labels.clamp(min=0), reduction="none")""",
        'masked_lm_loss should return a scalar, got shape (3, 7) (logits (3, 7, 11), 10 selected tokens): '
        'these look like one loss per position; L_MLM is one number, the mean over the selected positions '
        'only'),
    "probabilities instead of logits": ("mlm_loss", LOSS + """\
    return F.cross_entropy(logits.softmax(-1)[keep], labels[keep])""",
        'you gave probabilities (after a softmax) to a cross-entropy that applies the log-softmax itself: '
        'give it the raw scores (logits (3, 7, 11), 10 selected tokens)'),
    "nll_loss of probabilities": ("mlm_loss", LOSS + "    return F.nll_loss(logits.softmax(-1)[keep], labels[keep])",
        'you averaged minus the probability of the label; the loss is minus its *log*-probability (logits (3, '
        '7, 11), 10 selected tokens)'),
    "nll_loss of logits": ("mlm_loss", LOSS + "    return F.nll_loss(logits[keep], labels[keep])",
        'you took minus the logit of the label: a logit becomes a log-probability only after the log-softmax '
        'over the vocabulary (logits (3, 7, 11), 10 selected tokens)'),
    "unselected positions included as label 0": ("mlm_loss", LOSS + """\
    return F.cross_entropy(logits.flatten(0, 1), labels.clamp(min=0).flatten())""",
        'your loss includes the unselected positions (label -100): only the selected positions, the set M, '
        'count (logits (3, 7, 11), 10 selected tokens)'),
    "label 0 taken for unselected": ("mlm_loss", "def masked_lm_loss(logits, labels):\n    keep = labels > 0\n"
                                     "    return F.cross_entropy(logits[keep], labels[keep])",
        "your loss skips the positions whose label is 0, a real token id: only -100 marks the unselected positions"
        + LOSS_CASE),
    "mean of the sequences' means": ("mlm_loss", LOSS + """\
    return torch.stack([F.cross_entropy(l[k], y[k]) for l, y, k in zip(logits, labels, keep)]).mean()""",
        "you averaged each sequence's loss, then the sequences: L_MLM averages over all the selected tokens of the "
        "batch at once" + LOSS_CASE),
    "loss in bits": ("mlm_loss", "import math\n" + LOSS + "    return F.cross_entropy(logits[keep], labels[keep]) / math.log(2)",
        "your loss is in bits (log base 2): the chapter's loss, like PyTorch's, uses the natural logarithm "
        '(logits (3, 7, 11), 10 selected tokens)'),
    "a float": ("mlm_loss", LOSS + "    return F.cross_entropy(logits[keep], labels[keep]).item()",
        "masked_lm_loss should return a tensor (the loss backward() starts from), got float"),
    "a new tensor without gradient": ("mlm_loss", LOSS + """\
    return torch.tensor(F.cross_entropy(logits[keep], labels[keep]).item())""",
        'the loss is not connected to the logits (no gradient would flow): it must be computed from the '
        'logits by tensor operations all the way, never through a plain Python number or a tensor built anew '
        'from one'),
    "a new tensor claiming a gradient": ("mlm_loss", LOSS + """\
    return torch.tensor(F.cross_entropy(logits[keep], labels[keep]).item(), requires_grad=True)""",
        'the loss is not connected to the logits (no gradient would flow)'),
    "the value detached, then tied to the logits": ("mlm_loss", LOSS + """\
    return F.cross_entropy(logits[keep], labels[keep]).detach() + 0 * logits.sum()""",
        'your loss has the right value, but its gradient with respect to the logits is not that of the loss (off by '
        'up to'),
    "classes on the last axis": ("mlm_loss", LOSS + "    return F.cross_entropy(logits, labels)",
        'your function masked_lm_loss raised RuntimeError: Expected target size [3, 11], got [3, 7] (logits '
        '(3, 7, 11), 10 selected tokens): cross-entropy expects the classes on the second axis; picking out '
        'the selected positions first gives an (|M|, |V|) matrix of scores and |M| labels'),
    "labels changed in place": ("mlm_loss", "def masked_lm_loss(logits, labels):\n"
                                "    labels[labels == -100] = 0\n"
                                "    return F.cross_entropy(logits[labels > 0], labels[labels > 0])",
        "masked_lm_loss changed labels in place" + LOSS_CASE + ": work on a copy, or select with a mask"),
    # ------------------------------------------------------------------ nsp_input
    "no final [SEP]": ("nsp_input", nsp("list(ids_b) + [sep_id]", "list(ids_b)"),
        "input_ids should end with [SEP] (id 102)" + NSP_CASE + ": the input is [CLS] A [SEP] B [SEP], with a [SEP] "
        "after B too"),
    "no [CLS]": ("nsp_input", nsp("[cls_id] + list(ids_a)", "list(ids_a)"),
        "input_ids should start with [CLS] (id 101)" + NSP_CASE),
    "no [SEP] between A and B": ("nsp_input", nsp("list(ids_a) + [sep_id] + list(ids_b)", "list(ids_a) + list(ids_b)"),
        "put a [SEP] (id 102) between A and B" + NSP_CASE + ": [CLS] A [SEP] B [SEP]"),
    "B before A": ("nsp_input", nsp("list(ids_a) + [sep_id] + list(ids_b)", "list(ids_b) + [sep_id] + list(ids_a)"),
        "sentence A comes first" + NSP_CASE + ": [CLS] A [SEP] B [SEP]"),
    "first [SEP] in segment 1": ("nsp_input", nsp("[0] * (len(ids_a) + 2) + [1] * (len(ids_b) + 1)",
                                                  "[0] * (len(ids_a) + 1) + [1] * (len(ids_b) + 2)"),
        "the segment of the first [SEP] (position 4) should be 0" + NSP_CASE + ": it closes sentence A and belongs "
        "to segment 0"),
    "last [SEP] in segment 0": ("nsp_input", nsp("[0] * (len(ids_a) + 2) + [1] * (len(ids_b) + 1)",
                                                 "[0] * (len(ids_a) + 2) + [1] * len(ids_b) + [0]"),
        "the segment of the last [SEP] (position 7) should be 1" + NSP_CASE + ": it closes sentence B"),
    "no segment id for [CLS]": ("nsp_input", nsp("[0] * (len(ids_a) + 2)", "[0] * (len(ids_a) + 1)"),
        "token_type_ids has 7 entries, input_ids 8" + NSP_CASE + ": one segment id per token, [CLS] and both [SEP]s "
        "included"),
    "segment ids for A and B only": ("nsp_input", nsp("[0] * (len(ids_a) + 2) + [1] * (len(ids_b) + 1)",
                                                      "[0] * len(ids_a) + [1] * len(ids_b)"),
        "token_type_ids has 5 entries but input_ids has 8" + NSP_CASE + ": one segment id per token"),
    "segments 1 then 0": ("nsp_input", nsp("[0] * (len(ids_a) + 2) + [1] * (len(ids_b) + 1)",
                                           "[1] * (len(ids_a) + 2) + [0] * (len(ids_b) + 1)"),
        "the segments are swapped" + NSP_CASE + ": [CLS] A [SEP] have token type 0, B [SEP] type 1"),
    "ids_a extended in place": ("nsp_input", """\
def build_nsp_input(ids_a, ids_b, cls_id, sep_id):
    n_a = len(ids_a)
    ids_a.insert(0, cls_id)
    ids_a.append(sep_id)
    return ids_a + ids_b + [sep_id], [0] * (n_a + 2) + [1] * (len(ids_b) + 1)""",
        'build_nsp_input changed ids_a in place (A = [7, 8, 9], B = [4, 5], cls_id = 101, sep_id = 102): the '
        "caller's lists must stay as they were, so build a new list instead of adding to the one you were "
        'given'),
    "tensors instead of lists": ("nsp_input", nsp("return input_ids, token_type_ids",
                                                  "return torch.tensor(input_ids), torch.tensor(token_type_ids)"),
        'input_ids (the first value returned) should be a plain Python list of ints, got Tensor (A = [7, 8, '
        '9], B = [4, 5], cls_id = 101, sep_id = 102): the ids go in as lists and come out as one list'),
    # ------------------------------------------------------------------ language_sampling
    "not normalised": ("language_sampling", PROBS + "    return p ** alpha",
        "your q sums to 2.43, expected 1: you computed p^α (dividing by Σ_j p_j changes nothing when p already "
        "sums to 1); eq. 11.7 normalises by the sum of the exponentiated values" + PROB_CASE),
    "divided by the sum of p": ("language_sampling", PROBS + "    return p ** alpha / p.sum()",
        "you computed p^α (dividing by Σ_j p_j changes nothing when p already sums to 1)"),
    "alpha ignored": ("language_sampling", PROBS + "    return p",
        'your q is p normalised, as if α were 1 (α·p normalised is p again) (p = [0.6, 0.25, 0.1, 0.05] '
        '(probabilities, a torch.float32 tensor), α = 0.3): each p_i must be raised to the power α before '
        'normalising'),
    "alpha times p, normalised": ("language_sampling", PROBS + "    return alpha * p / (alpha * p).sum()",
        "your q is p normalised, as if α were 1 (α·p normalised is p again)" + PROB_CASE),
    "alpha times p": ("language_sampling", PROBS + "    return alpha * p",
        'your q sums to 0.30, expected 1: you computed α·p; eq. 11.7 raises each p_i to the power α, then '
        'normalises (p = [0.6, 0.25, 0.1, 0.05] (probabilities, a torch.float32 tensor), α = 0.3)'),
    "alpha to the power p": ("language_sampling", PROBS + "    q = alpha ** p\n    return q / q.sum()",
        'you computed α^p; eq. 11.7 needs p^α, the share raised to the power α (p = [0.6, 0.25, 0.1, 0.05] '
        '(probabilities, a torch.float32 tensor), α = 0.3)'),
    "p to the power 1/alpha": ("language_sampling", PROBS + "    q = p ** (1 / alpha)\n    return q / q.sum()",
        "you raised p to the power 1/α; eq. 11.7 uses p^α" + PROB_CASE),
    "softmax of alpha p": ("language_sampling", PROBS + "    return torch.softmax(alpha * p, 0)",
        "you took a softmax of α·p; eq. 11.7 is p^α / Σ_j p_j^α, without exponentials" + PROB_CASE),
    "a list is not converted": ("language_sampling", """\
def language_probs(p, alpha):
    q = (p / p.sum()) ** alpha
    return q / q.sum()""",
        "your function language_probs raised AttributeError: 'list' object has no attribute 'sum' (with p = "
        '[3e+09, 1.2e+09, 8e+08, 9e+07, 1.5e+07, 800000] (a list of counts), α = 0.3): p may be a plain list '
        'of counts; turn it into a floating-point tensor before computing with it'),
    "p divided in place": ("language_sampling", """\
def language_probs(p, alpha):
    p = torch.as_tensor(p, dtype=torch.float64)
    p /= p.sum()
    q = p ** alpha
    return q / q.sum()""",
        'language_probs changed p in place (p = [20, 50, 30] (counts, a torch.float64 tensor), α = 1.0): the '
        "caller's p must stay as it was, so normalise into a new tensor"),
    "a list returned": ("language_sampling", """\
def language_probs(p, alpha):
    p = [float(x) for x in p]
    q = [(x / sum(p)) ** alpha for x in p]
    return [x / sum(q) for x in q]""",
        'language_probs should return a tensor, got a list (p = [0.6, 0.25, 0.1, 0.05] (probabilities, a '
        'torch.float32 tensor), α = 0.3): turn p into a tensor first and compute with tensors throughout'),
}


# ------------------------------------------------------------------ masked_batch (composing): a right answer with
# one mistake; it uses only what the notebook's setup cell imports (mlm_mask, F, torch)
BATCH = """\
def masked_batch_loss(model, tokenizer, texts, unigram, generator):
    enc = tokenizer(texts)
    b = mlm_mask(enc.input_ids, special_ids=tokenizer.special_ids, mask_token_id=tokenizer.mask_token_id,
                 unigram=unigram, attention_mask=enc.attention_mask, generator=generator)
    logits = model(b.input_ids, enc.attention_mask, enc.token_type_ids).logits
    keep = b.labels != -100
    return F.cross_entropy(logits[keep], b.labels[keep]), b.input_ids, b.labels
"""


def batch(old: str, new: str) -> str:
    return edit(BATCH, old, new)


CASES.update({
    "padding attended to": ("masked_batch", batch("model(b.input_ids, enc.attention_mask, enc.token_type_ids)",
                                                  "model(b.input_ids)"),
        "your loss is what the model gives when it also attends to the padding: give it the attention mask of the "
        "padded batch, so that no token looks at [PAD] positions"),
    "the model sees the original text": ("masked_batch", batch("model(b.input_ids, enc.attention_mask",
                                                               "model(enc.input_ids, enc.attention_mask"),
        "your loss is the model's loss on the original, uncorrupted text: the model must see the corrupted ids"),
    "torch's global generator, reseeded, for the batch": ("masked_batch", batch(
        "    enc = tokenizer(texts)\n", "    enc = tokenizer(texts)\n"
        "    torch.manual_seed(int(torch.randint(2 ** 62, (1,), generator=generator)))\n    generator = None\n"),
        "your function changed torch's global random generator (torch.manual_seed, or a draw without generator=). "
        "The batch looks right"),
    "loss summed": ("masked_batch", batch("F.cross_entropy(logits[keep], b.labels[keep])",
                                          "F.cross_entropy(logits[keep], b.labels[keep], reduction='sum')"),
        "your loss is the sum over the selected tokens; L_MLM is their mean"),
    "loss over every position": ("masked_batch", batch(
        "F.cross_entropy(logits[keep], b.labels[keep])",
        "F.cross_entropy(logits.flatten(0, 1), enc.input_ids.flatten())"),
        "your loss averages over every position of the batch, padding included: only the selected tokens count"),
    "loss over every text token": ("masked_batch", batch(
        "F.cross_entropy(logits[keep], b.labels[keep])",
        "F.cross_entropy(logits[b.eligible], enc.input_ids[b.eligible])"),
        "your loss averages over every text token; only the selected tokens (the set M) count"),
    "padding may be selected": ("masked_batch", batch(
        "special_ids=tokenizer.special_ids, mask_token_id=tokenizer.mask_token_id,\n"
        "                 unigram=unigram, attention_mask=enc.attention_mask,",
        "special_ids=tokenizer.special_ids - {tokenizer.pad_token_id},\n"
        "                 mask_token_id=tokenizer.mask_token_id, unigram=unigram,"),
        "padding positions were selected for the loss: padding is not text. The attention mask says which "
        "positions are padding; they must never be selected"),
    "one text only": ("masked_batch", batch("enc = tokenizer(texts)", "enc = tokenizer(texts[0])"),
        "texts tokenized together, padded to the longest, make a batch of shape (20, 27): tokenize the whole list "
        "at once"),
    "a float": ("masked_batch", batch("F.cross_entropy(logits[keep], b.labels[keep]), b.input_ids",
                                      "F.cross_entropy(logits[keep], b.labels[keep]).item(), b.input_ids"),
        "the loss should be a tensor, got float"),
    "the generator ignored": ("masked_batch", batch("generator=generator)", "generator=None)"),
        "two calls with the same seeded generator gave different batches: every random draw must come from the "
        "generator you are given"),
    "a generator of its own": ("masked_batch", batch("generator=generator)", "generator=torch.Generator().manual_seed(2))"),
        "generators seeded 0 and 1 gave the same selection: draw every random number from the generator you are "
        "given"),
    "torch's generator reseeded": ("masked_batch", batch("    enc = tokenizer(texts)", "    torch.manual_seed(7)\n"
                                                         "    enc = tokenizer(texts)").replace("generator=generator)",
                                                                                          "generator=None)"),
        "generators seeded 0 and 1 gave the same selection"),
    "every selected token masked": ("masked_batch", batch(
        "    logits = model(",
        "    b.input_ids[b.labels != -100] = tokenizer.mask_token_id\n    logits = model("),
        "not every selected token becomes [MASK]; 10% become a token drawn from `unigram` and 10% stay as they are"),
    "random tokens from the whole vocabulary": ("masked_batch", batch(
        "    logits = model(",
        "    rnd = (b.labels != -100) & (b.input_ids != tokenizer.mask_token_id) & (b.input_ids != enc.input_ids)\n"
        "    b.input_ids[rnd] = torch.randint(tokenizer.vocab_size, (int(rnd.sum()),), generator=generator)\n"
        "    logits = model("),
        "which the unigram distribution you were given never draws: the random replacements must be drawn from "
        "`unigram`"),
    "random ids below a fixed vocabulary size": ("masked_batch", batch(
        "    logits = model(",
        "    rnd = (b.labels != -100) & (b.input_ids != tokenizer.mask_token_id) & (b.input_ids != enc.input_ids)\n"
        "    b.input_ids[rnd] = torch.randint(30522, (int(rnd.sum()),), generator=generator)\n"
        "    logits = model("),
        "the model was given an id outside the vocabulary of the tokenizer you were given, which has 2,163 entries "
        "here"),
    "50/25/25 fates": ("masked_batch", batch("generator=generator)", "generator=generator, mask_prob=0.5, "
                                                                     "random_prob=0.25)"),
        "became [MASK], 2"),
    "unchanged tokens left out of the labels": ("masked_batch", batch(
        "    logits = model(",
        "    b.labels[b.input_ids == enc.input_ids] = -100\n    logits = model("),
        "the 10% left unchanged are selected all the same: they keep their label"),
    "a quarter selected": ("masked_batch", batch("generator=generator)", "generator=generator, select_prob=0.25)"),
        "text tokens of the batches checked were selected (2"),
    "two values returned": ("masked_batch", batch("return F.cross_entropy(logits[keep], b.labels[keep]), b.input_ids, "
                                                  "b.labels", "return F.cross_entropy(logits[keep], b.labels[keep]), "
                                                  "b.labels"),
        "masked_batch_loss should return three things, (loss, corrupted_ids, labels); got 2 values"),
    # ------------------------------------------------------------------ the predictions
    "[MASK] where a real token is seen": ("unchanged_prediction", 'at_unchanged = "[MASK]"',
        "not '[MASK]'. think about what the 10% unchanged tokens teach"),
    "a word that fits the context": ("unchanged_prediction", 'at_unchanged = "a word that fits the context"',
        "At such a position, what is the target, and what does the model's input hold there?"),
    "the most frequent token": ("unchanged_prediction", 'at_unchanged = "the most frequent token"',
        "At such a position, what is the target, and what does the model's input hold there?"),
    "a piece is as hard as its word": ("piece_given_away", 'piece_given_away = "about twice as often"',
        "How many candidates are left in each case?"),
    "only the [MASK]ed tokens": ("share_in_loss", 'share_in_loss = "12%"',
        "not '12%'. which positions get a label other than -100"),
    "every token": ("share_in_loss", 'share_in_loss = "100%"', "the selection, or the fate a selected token then meets?"),
    "not a choice": ("share_in_loss", 'share_in_loss = "20%"',
        "`share_in_loss` is '20%'; choose one of '1.5%', '12%', '15%', '85%', '100%'"),
    "the unigram entropy at the start": ("loss_at_start", 'loss_at_start = "the unigram entropy"',
        "with random, small weights, how different are the scores of the |V| tokens"),
    "zero at the start": ("loss_at_start", 'loss_at_start = "0"', "not '0'."),
})

WRONG_ANSWERS: dict[str, list[tuple[str, str]]] = {}
for _exercise, _source, _hint in CASES.values():
    WRONG_ANSWERS.setdefault(_exercise, []).append((_source, _hint))
