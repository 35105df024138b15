"""Exercises of notebook 11.4a, fine-tuning for sentences and sentence pairs (SLP3 §11.4.1-11.4.2; L003, L004).

cls_head          cls_head(hidden, W, b, labels) -> (probs, loss): eq. 11.13, y = softmax(W z_CLS + b) over the
                  classes, z_CLS = hidden[:, 0]; the loss is the mean cross-entropy against ``labels``
freeze_last_k     freeze_all_but_last(model, k): only the last k transformer blocks of ``model.bert`` and the head
                  (everything outside ``model.bert``) keep requires_grad=True; graded by counting what trains
sbert_features    sbert_features(u, v) -> [u; v; |u − v|], (B, d) x 2 -> (B, 3d) (SentenceBERT, L004)
bi_encoder_logits bi_encoder_logits(z_a, mask_a, z_b, mask_b, W, b) -> (B, C): mean-pool each sentence over its
                  real tokens, build [u; v; |u − v|], apply W and b -- pooling, features and head composed
pooling_prediction  (question) head only on the frozen embedded model: does [CLS] or mean pooling do better?
all_pairs_prediction (question) encoder passes a cross-encoder needs for all pairs among 1,000 sentences

The references are course_lib's (``model.classification.pool``, ``finetuning.freezing``,
``finetuning.sbert.sbert_features``); inputs are small, seeded and built so that each common mistake gives a
recognisably different answer.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..finetuning.freezing import count_parameters, freeze
from ..finetuning.sbert import sbert_features as reference_features
from ..model.bert import BertConfig, BertModel
from ..model.classification import BertForSequenceClassification, pool
from .core import Wrong, exercise, question, seeded
from .hints import close, expect_shape, expect_tensor, fmt_shape

# ----------------------------------------------------------------------------- cls_head

CLS_CASES = [(3, 5, 8, 2), (4, 7, 6, 3)]  # (B, T, d, C): every size different, so a wrong shape names its axis


def cls_inputs(B, T, d, C, seed):
    g = torch.Generator().manual_seed(seed)
    hidden = torch.randn(B, T, d, generator=g)
    W = torch.randn(C, d, generator=g) * 0.5
    b = torch.randn(C, generator=g)
    labels = torch.randint(0, C, (B,), generator=g)
    return hidden, W, b, labels


def cls_reference(hidden, W, b, labels):
    z = pool(hidden, how="cls")  # (B, d)
    logits = z @ W.T + b  # (B, C)
    return logits.softmax(-1), F.cross_entropy(logits, labels)


@exercise("cls_head", needs=["cls_head"])
def check_cls_head(cls_head):
    for i, (B, T, d, C) in enumerate(CLS_CASES):
        hidden, W, b, labels = cls_inputs(B, T, d, C, seed=i)
        case = f" (hidden {fmt_shape(hidden.shape)}, W {fmt_shape(W.shape)}, {C} classes)"
        out = cls_head(hidden.clone(), W.clone(), b.clone(), labels.clone())
        if not isinstance(out, tuple) or len(out) != 2:
            raise Wrong("return a pair (probs, loss): the class probabilities and the loss")
        probs, loss = expect_tensor(out[0], "probs"), expect_tensor(out[1], "the loss")
        want_p, want_l = cls_reference(hidden, W, b, labels)
        expect_shape(probs, (B, C), "probs: one row of class probabilities per sentence" + case)
        logits = hidden @ W.T + b  # (B, T, C): what every position would give
        if not close(probs.sum(-1), torch.ones(B)):
            raise Wrong("each row of probs should sum to 1: apply the softmax over the classes (the last axis)" + case)
        if not close(probs, want_p):
            for t, name in [(T - 1, "the last token ([SEP])"), (1, "the first word's token (position 1)")]:
                if close(probs, logits[:, t].softmax(-1)):
                    raise Wrong(f"you classified {name}: eq. 11.13 reads z_CLS, the vector at position 0" + case)
            if close(probs, logits.mean(1).softmax(-1)):
                raise Wrong("you averaged over the tokens (mean pooling): eq. 11.13 reads only z_CLS at position 0"
                            + case)
            if close(probs, (hidden[:, 0] @ W.T).softmax(-1)):
                raise Wrong("the bias b is missing: y = softmax(W z_CLS + b)" + case)
            raise Wrong("probs differ from softmax(W z_CLS + b) with z_CLS = hidden[:, 0]" + case)
        if loss.dim() != 0:
            raise Wrong(f"the loss should be one number (a 0-dimensional tensor), got shape {fmt_shape(loss.shape)}:"
                        " average the cross-entropy over the batch" + case)
        nll = -want_p[torch.arange(B), labels].log()
        if close(loss, nll.sum()):
            raise Wrong("you summed the cross-entropy over the batch: take the mean" + case)
        if close(loss, F.cross_entropy(want_p, labels)):
            raise Wrong("you applied the softmax twice: F.cross_entropy takes the scores (logits), not probabilities"
                        + case)
        if close(loss, -want_p.log().mean()):
            raise Wrong("you averaged -log p over all classes: the loss is -log p of the correct class only" + case)
        if not close(loss, want_l):
            raise Wrong(f"loss {float(loss):.4f}, expected {float(want_l):.4f}: the mean over the batch of "
                        "-log p(correct class)" + case)
    return "eq. 11.13 and its cross-entropy, for every batch"


# ----------------------------------------------------------------------------- freeze_last_k

TINY = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=4, num_attention_heads=2, intermediate_size=32,
                  max_position_embeddings=16)


def tiny_classifier(seed: int = 0) -> BertForSequenceClassification:
    with seeded(seed):
        return BertForSequenceClassification(BertModel(TINY), labels=["a", "b", "c"])


def _trainable_layers(model) -> list[int]:
    return [i for i, block in enumerate(model.bert.encoder.layer) if all(p.requires_grad for p in block.parameters())]


def trainable_counts(model) -> dict[str, int]:
    """Trainable parameters per part: embeddings, each block, pooler, head (what the grader counts)."""
    def n(module):
        return sum(p.numel() for p in module.parameters() if p.requires_grad) if module is not None else 0
    parts = {"embeddings": n(model.bert.embeddings), "pooler": n(model.bert.pooler), "head": n(model.classifier)}
    parts |= {f"block {i}": n(b) for i, b in enumerate(model.bert.encoder.layer)}
    return parts


@exercise("freeze_last_k", needs=["freeze_all_but_last"])
def check_freeze_last_k(freeze_all_but_last):
    L = TINY.num_hidden_layers
    for k in (1, 2, 0, L):
        for start in ("all trainable", "all frozen"):
            model = tiny_classifier()
            model.requires_grad_(start == "all trainable")
            freeze_all_but_last(model, k)
            got = count_parameters(model)["trainable"]
            ref = tiny_classifier()
            freeze(ref, k)
            want = count_parameters(ref)["trainable"]
            if trainable_counts(model) == trainable_counts(ref):
                continue
            case = f" (k = {k}, a {L}-layer encoder whose parameters were {start} before your call)"
            layers = _trainable_layers(model)
            head = all(p.requires_grad for p in model.classifier.parameters())
            if got == 0 and start == "all frozen":
                raise Wrong("nothing trains after your call when every parameter started frozen: set requires_grad "
                            "to True on what should train, not only False on the rest (they may start either way)"
                            + case)
            if not head:
                raise Wrong("the head (model.classifier) must train: it is new and random" + case)
            if any(p.requires_grad for p in model.bert.embeddings.parameters()):
                raise Wrong("the embeddings should be frozen: only the last k blocks and the head train" + case)
            if model.bert.pooler is not None and any(p.requires_grad for p in model.bert.pooler.parameters()):
                raise Wrong("the pooler should be frozen: this classifier reads z_CLS, not the pooler" + case)
            want_layers = list(range(L - k, L))
            if layers == list(range(k)) and k not in (0, L):
                raise Wrong(f"blocks {layers} train: those are the first {k}; train the last {k}, "
                            f"model.bert.encoder.layer[-{k}:] (blocks {want_layers})" + case)
            if layers != want_layers:
                raise Wrong(f"blocks {layers} train; expected the last {k}: {want_layers} (set requires_grad on every "
                            "parameter of every block, True or False -- they may start either way)" + case)
            raise Wrong(f"{got:,} parameters train, expected {want:,}" + case)
    return "the last k blocks and the head train, nothing else, whatever the starting state"


# ----------------------------------------------------------------------------- sbert_features

@exercise("sbert_features", needs=["sbert_features"])
def check_sbert_features(sbert_features):
    g = torch.Generator().manual_seed(0)
    for B, d in ((3, 4), (2, 6)):
        u, v = torch.randn(B, d, generator=g), torch.randn(B, d, generator=g)
        got = expect_tensor(sbert_features(u.clone(), v.clone()), "the features")
        want = reference_features(u, v)
        case = f" (u, v of shape {fmt_shape(u.shape)})"
        if got.shape == (3 * B, d):
            raise Wrong("you concatenated along the batch axis: concatenate along the last axis (dim=-1)" + case)
        expect_shape(got, (B, 3 * d), "[u; v; |u − v|]" + case)
        if close(got, torch.cat([u, v, u - v], -1)):
            raise Wrong("the third part should be |u − v|, the absolute difference (u − v has a sign)" + case)
        if close(got, torch.cat([u, v, u * v], -1)):
            raise Wrong("the third part is |u − v|, not the product u * v" + case)
        if close(got, torch.cat([v, u, (u - v).abs()], -1)):
            raise Wrong("the order is [u; v; |u − v|]: u first" + case)
        if not close(got, want):
            raise Wrong("the features differ from torch.cat([u, v, |u − v|]) along the last axis" + case)
    return "[u; v; |u − v|]"


# ----------------------------------------------------------------------------- bi_encoder_logits (composed)

def bi_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    B, Ta, Tb, d, C = 3, 6, 5, 4, 3
    za, zb = torch.randn(B, Ta, d, generator=g), torch.randn(B, Tb, d, generator=g)
    ma = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 0, 0]])
    mb = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 1, 0, 0, 0]])
    W, b = torch.randn(C, 3 * d, generator=g), torch.randn(C, generator=g)
    return za, ma, zb, mb, W, b


def bi_reference(za, ma, zb, mb, W, b, how="mean"):
    u, v = pool(za, ma, how), pool(zb, mb, how)
    return reference_features(u, v) @ W.T + b


@exercise("bi_encoder_logits", needs=["bi_encoder_logits"])
def check_bi_encoder_logits(bi_encoder_logits):
    za, ma, zb, mb, W, b = bi_inputs(0)
    case = (f" (z_a {fmt_shape(za.shape)} and z_b {fmt_shape(zb.shape)} with padding: sentence lengths "
            f"{ma.sum(1).tolist()} and {mb.sum(1).tolist()}; W {fmt_shape(W.shape)})")
    got = expect_tensor(bi_encoder_logits(za.clone(), ma.clone(), zb.clone(), mb.clone(), W.clone(), b.clone()),
                        "the logits")
    expect_shape(got, (3, 3), "the logits, one row of class scores per pair" + case)
    want = bi_reference(za, ma, zb, mb, W, b)
    if close(got, want):
        return "mean pooling over real tokens, [u; v; |u − v|], then W and b"
    if close(got, bi_reference(za, torch.ones_like(ma), zb, torch.ones_like(mb), W, b)):
        raise Wrong("your mean includes the padding positions: average only where the mask is 1" + case)
    if close(got, bi_reference(za, ma, zb, mb, W, b, how="cls")):
        raise Wrong("you used z_CLS (position 0): SentenceBERT mean-pools each sentence's token vectors" + case)
    u, v = pool(za, ma, "mean"), pool(zb, mb, "mean")
    if close(got, torch.cat([u, v, u - v], -1) @ W.T + b):
        raise Wrong("the third part of the features should be |u − v| (absolute difference)" + case)
    if close(got, reference_features(u, v) @ W.T):
        raise Wrong("the bias b is missing" + case)
    if close(got, (reference_features(u, v) @ W.T + b).softmax(-1)):
        raise Wrong("return the logits (scores), not the softmax" + case)
    raise Wrong("the logits differ from W [u; v; |u − v|] + b with u, v the masked means" + case)


# ----------------------------------------------------------------------------- prediction questions

question(
    "pooling_prediction", variable="pooling_guess", choices=["[CLS]", "mean"], answer="mean",
    why="all-MiniLM-L6-v2 was fine-tuned (as a SentenceBERT) with mean pooling: its mean vector was trained to "
        "summarise the sentence, while its [CLS] vector was never trained for that after pretraining, so a "
        "frozen encoder's [CLS] carries less of the sentence for a linear head to read.",
    hint="think about which vector the embedded model's own training objective made into a sentence summary: "
         "its model card says how it turns token vectors into a sentence vector.",
)

question(
    "all_pairs_prediction", variable="passes_guess", choices=["1,000", "499,500", "1,000,000"], answer="499,500",
    why="a cross-encoder must read every unordered pair [CLS] A [SEP] B [SEP] once: n(n−1)/2 = 1,000 × 999 / 2 = "
        "499,500 passes, against 1,000 for a bi-encoder that encodes each sentence once.",
    hint="a cross-encoder reads two sentences together in one pass; count the pairs of different sentences, "
         "each pair once.",
)
