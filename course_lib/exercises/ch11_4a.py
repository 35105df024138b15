"""Exercises of notebook 11.4a, fine-tuning for sentences and sentence pairs (SLP3 §11.4.1-11.4.2; L003, L004).

cls_head          cls_head(encoder, tokenizer, sentences, W, b, labels) -> (probs, loss): eq. 11.13 on top of the
                  encoder -- tokenize the batch (padded), encode it with its attention mask, z_CLS = the last layer
                  at position 0, y = softmax(W z_CLS + b); the loss is the mean cross-entropy against ``labels``.
                  Composed: graded on a small random BERT with sentences of very different lengths, so that an
                  unmasked batch, the pooler, the last position or mean pooling each give another answer
freeze_last_k     freeze_all_but_last(model, k): only the last k transformer blocks of ``model.bert`` and the head
                  (everything outside ``model.bert``) keep requires_grad=True; graded by counting what trains
sbert_features    sbert_features(u, v) -> [u; v; |u − v|], (B, d) x 2 -> (B, 3d) (SentenceBERT, L004)
bi_encoder_logits bi_encoder_logits(z_a, mask_a, z_b, mask_b, W, b) -> (B, C): mean-pool each sentence over its
                  real tokens, build [u; v; |u − v|], apply W and b -- pooling, features and head composed
distillation_loss distillation_loss(student_logits, teacher_logits, T) -> T² · KL(softmax(t/T) ‖ softmax(s/T)), the
                  mean over the batch (Hinton et al. 2015; L004's compact BERTs) -- temperature, two softmaxes, the
                  KL's direction and its reduction composed; each common slip gives another number
pooling_prediction  (question) head only on the frozen embedded model: does [CLS] or mean pooling do better?
forgetting          (question) after the lecture's recipe, how much of course-bert's masked-word top-1 is left?
from_scratch        (question) the pretrained network from random weights, on the same 500 sentences: nearest which yardstick?
all_pairs_prediction (question) encoder passes a cross-encoder needs for all pairs among 1,000 sentences
soft_vs_hard_prediction (question) a student on the teacher's top class or on its scores: which is more accurate?

The references are course_lib's (``model.classification.pool``, ``finetuning.freezing``,
``finetuning.sbert.sbert_features``); inputs are small, seeded and built so that each common mistake gives a
recognisably different answer.
"""
from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

from ..finetuning.distill import distillation_loss as reference_distillation
from ..finetuning.freezing import count_parameters, freeze
from ..finetuning.sbert import sbert_features as reference_features
from ..model.bert import BertConfig, BertModel
from ..model.classification import BertForSequenceClassification, pool
from .core import Stopped, Wrong, exercise, question, seeded
from .hints import close, expect_shape, expect_tensor, fmt_shape, same_gradient

# ----------------------------------------------------------------------------- cls_head (composed)

# batches of sentences of very different lengths, so that the padding changes a short sentence's z_CLS when it is
# not masked; (sentences, labels, number of classes)
CLS_CASES = [
    (["A gorgeous, witty, seductive movie.", "Dull.",
      "The plot is nothing but boilerplate clichés from start to finish, and the jokes fall flat."], [1, 0, 0], 2),
    (["Not bad at all!", "An intelligent, moving and very funny film about growing up in a small town.", "Meh.",
      "It is long."], [2, 0, 1, 1], 3),
]


@functools.cache
def cls_model_and_tokenizer():
    """A small random BERT (with a pooler) over the embedded model's WordPiece vocabulary, seeded, dropout off.

    Its initialisation is wider than BERT's, so that attention is far from uniform: a short sentence's z_CLS
    changes visibly when the padding after it is not masked.
    """
    from ..checkpoints import embedded_model_dir
    from ..tokenization.bert_tokenizer import BertTokenizer

    tok = BertTokenizer.from_dir(embedded_model_dir())
    config = BertConfig(vocab_size=tok.vocab_size, hidden_size=24, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=48, max_position_embeddings=64, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0, initializer_range=0.5)
    with seeded(5):
        model = BertModel(config).eval()
    return model, tok


def cls_inputs(case: int):
    sentences, labels, C = CLS_CASES[case]
    model, tok = cls_model_and_tokenizer()
    g = torch.Generator().manual_seed(case)
    W = torch.randn(C, model.config.hidden_size, generator=g) * 0.5
    b = torch.randn(C, generator=g)
    return model, tok, list(sentences), W, b, torch.tensor(labels)


def cls_reference(encoder, tokenizer, sentences, W, b, labels):
    """Eq. 11.13 on top of the encoder: tokenize with padding, encode with the mask, z_CLS, softmax(W z + b), CE."""
    with torch.no_grad():
        out = encoder(**tokenizer(sentences))
    logits = pool(out.last_hidden_state, how="cls") @ W.T + b  # (B, C)
    return logits.softmax(-1), F.cross_entropy(logits, labels)


def _cls_alternatives(encoder, tokenizer, sentences, W, b):
    """Class probabilities from the vectors a plausible mistake would read, in the order they are tried."""
    enc = tokenizer(sentences)
    with torch.no_grad():
        out = encoder(**enc, output_hidden_states=True)
        unmasked = encoder(input_ids=enc["input_ids"], token_type_ids=enc["token_type_ids"])
    h, m = out.last_hidden_state, enc["attention_mask"]
    last_real = h[torch.arange(len(sentences)), m.sum(1) - 1]  # each sentence's [SEP]
    soft = [("no mask", unmasked.last_hidden_state[:, 0]),
            ("last position", h[:, -1]), ("sep", last_real), ("first word", h[:, 1]),
            ("mean", pool(h, m, "mean")), ("mean with padding", h.mean(1)),
            ("embeddings", out.hidden_states[0][:, 0]), ("pooler", out.pooler_output)]
    return [(name, (z @ W.T + b).softmax(-1)) for name, z in soft] + [("no bias", (h[:, 0] @ W.T).softmax(-1))]


CLS_HINTS = {
    "no mask": "the short sentences' answers change with the padding after them: the encoder must be told which "
               "positions are padding (the attention mask the tokenizer returns), or [CLS] attends to [PAD]",
    "last position": "you classified the last position, which is padding for the shorter sentences: eq. 11.13 "
                     "reads z_CLS, the vector at position 0",
    "sep": "you classified each sentence's last token ([SEP]): eq. 11.13 reads z_CLS, the vector at position 0",
    "first word": "you classified the first word's token (position 1): eq. 11.13 reads z_CLS, at position 0",
    "mean": "you averaged over the tokens (mean pooling): eq. 11.13 reads only z_CLS at position 0",
    "mean with padding": "you averaged over every position, padding included (mean pooling): eq. 11.13 reads only "
                         "z_CLS at position 0",
    "embeddings": "you read [CLS] at the embedding layer: eq. 11.13 reads z_CLS in the *last* layer",
    "pooler": "you used the pooler's output, tanh(W_p z_CLS + b_p), a further layer trained for next-sentence "
              "prediction: eq. 11.13 reads z_CLS itself",
    "no bias": "the bias b is missing: y = softmax(W z_CLS + b)",
}


@exercise("cls_head", needs=["cls_head"])
def check_cls_head(cls_head):
    for i in range(len(CLS_CASES)):
        encoder, tok, sentences, W, b, labels = cls_inputs(i)
        B, C = len(sentences), W.shape[0]
        lengths = tok(sentences)["attention_mask"].sum(1).tolist()
        case = (f" ({B} sentences of {', '.join(map(str, lengths))} tokens, W {fmt_shape(W.shape)}, "
                f"{C} classes)")
        try:
            out = cls_head(encoder, tok, list(sentences), W.clone(), b.clone(), labels.clone())
        except Wrong as e:
            if not isinstance(e, Stopped) and "unexpected keyword argument" in str(e) and any(
                    f"'{k}'" in str(e) for k in HF_TOKENIZER_ARGUMENTS):
                raise Wrong(TOKENIZER_HINT + f" ({e})") from None
            raise
        if not isinstance(out, tuple) or len(out) != 2:
            raise Wrong("return a pair (probs, loss): the class probabilities and the loss")
        probs, loss = expect_tensor(out[0], "probs"), expect_tensor(out[1], "the loss")
        want_p, want_l = cls_reference(encoder, tok, sentences, W, b, labels)
        expect_shape(probs, (B, C), "probs: one row of class probabilities per sentence" + case)
        if not close(probs.sum(-1), torch.ones(B)):
            if bool((probs <= 0).all()) and close(probs.exp().sum(-1), torch.ones(B)):
                raise Wrong("your probs are log-probabilities (every entry ≤ 0, their exponentials sum to 1): "
                            "return the probabilities themselves, the softmax over the classes" + case)
            raise Wrong("each row of probs should sum to 1: apply the softmax over the classes (the last axis)" + case)
        if not close(probs, want_p):
            for name, alt in _cls_alternatives(encoder, tok, sentences, W, b):  # one more encoding, not one each
                if close(probs, alt):
                    raise Wrong(CLS_HINTS[name] + case)
            raise Wrong("probs differ from softmax(W z_CLS + b), with z_CLS the last layer's vector at position 0 of "
                        "the padded, masked batch" + case)
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
    from .remote import value_and_grad   # the check's side only: the sandbox never imports it

    encoder, tok, sentences, W, b, labels = cls_inputs(0)
    with torch.enable_grad():
        _, grad = value_and_grad(cls_head, (encoder, tok, sentences, W.clone().requires_grad_(True), b.clone(),
                                            labels.clone()), wrt=3, out=1)
        if grad is None:
            raise Wrong(NO_GRADIENT.format(what="W"))
        Wx = W.clone().requires_grad_(True)
        (want,) = torch.autograd.grad(cls_reference(encoder, tok, sentences, Wx, b, labels)[1], Wx)
    same_gradient(grad, want, "W")
    # fine-tuning trains the encoder too (§11.4.1): the loss must reach its weights, not only W
    with torch.enable_grad():
        _, grad = value_and_grad(cls_head, (encoder, tok, sentences, W.clone(), b.clone(), labels.clone()),
                                 wrt=(0, ENCODER_WEIGHT), out=1)
        if grad is None:
            raise Wrong(ENCODER_NO_GRADIENT)
        weight = dict(encoder.named_parameters())[ENCODER_WEIGHT]
        out = encoder(**tok(sentences))
        (want,) = torch.autograd.grad(F.cross_entropy(pool(out.last_hidden_state, how="cls") @ W.T + b, labels), weight)
    same_gradient(grad, want, "the encoder's weights")
    return "eq. 11.13 on a padded batch of sentences, and its cross-entropy, gradient included (to W and the encoder)"


ENCODER_WEIGHT = "encoder.layer.0.intermediate.dense.weight"  # a weight of the first block: the whole way back
ENCODER_NO_GRADIENT = ("your loss carries a gradient to W but none into the encoder: was the encoder run under "
                       "torch.no_grad(), or z_CLS detached? Fine-tuning updates the encoder's weights as well as the "
                       "head's (§11.4.1), so the loss must reach them; to train the head alone, freeze the encoder's "
                       "parameters (requires_grad_(False)) instead of cutting the graph in cls_head")


HF_TOKENIZER_ARGUMENTS = ("padding", "return_tensors", "return_attention_mask", "return_token_type_ids")
TOKENIZER_HINT = ("the course's tokenizer is called as tokenizer(sentences): given a list, it pads the batch to its "
                  "longest sentence itself and returns tensors (input_ids, attention_mask, token_type_ids), so it takes "
                  "no padding= or return_tensors= as a Hugging Face tokenizer does; leave them out")

NO_GRADIENT = ("your loss has the right value but carries no gradient back to {what}: was it computed under "
               "torch.no_grad(), or through .detach() or .item()? Training runs backward() from this loss, so it must "
               "come from {what} by tensor operations all the way")


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
                raise Wrong(f"blocks {layers} train: those are the first {k}, nearest the embeddings; train the "
                            f"last {k}, nearest the output (blocks {want_layers})" + case)
            if k == 0 and layers == list(range(L)):
                raise Wrong(f"with k = 0 no block trains, only the head, but all {L} blocks train after your call: a "
                            "slice that starts at -0 starts at 0, so it is the whole list, not an empty one"
                            + case)
            if layers != want_layers:
                if layers == list(range(L - k - 1, L)) or layers == list(range(L - k + 1, L)):
                    why = (f"one block {'too many' if len(layers) > k else 'too few'}: the last {k} of blocks "
                           f"0 … {L - 1} start at block {L - k}")
                elif start == "all trainable" and set(want_layers) <= set(layers):
                    why = ("blocks that started trainable were left so: set requires_grad on every parameter of every "
                           "block, True or False, since they may start either way")
                else:
                    why = f"expected the last {k}: {want_layers}"
                raise Wrong(f"blocks {layers} train; {why}" + case)
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
            raise Wrong("you concatenated along the batch axis: each row (one pair) holds its three parts side "
                        "by side, so they join along the features" + case)
        expect_shape(got, (B, 3 * d), "[u; v; |u − v|]" + case)
        if close(got, torch.cat([u, v, u - v], -1)):
            raise Wrong("the third part should be |u − v|, the absolute difference (u − v has a sign)" + case)
        if close(got, torch.cat([u, v, u * v], -1)):
            raise Wrong("the third part is |u − v|, not the product u * v" + case)
        if close(got, torch.cat([v, u, (u - v).abs()], -1)):
            raise Wrong("the order is [u; v; |u − v|]: u first" + case)
        if close(got, torch.stack([u, v, (u - v).abs()], -1).flatten(-2)):
            raise Wrong("your numbers are right but interleaved (u₁, v₁, |u₁ − v₁|, u₂, …): the three vectors go one "
                        "after the other, all of u, then all of v, then all of |u − v|" + case)
        if not close(got, want):
            raise Wrong(f"the features differ from [u; v; |u − v|]: each row holds the {d} numbers of u, then the {d} "
                        f"of v, then the {d} absolute differences |u − v|, one block after the other" + case)
        _sbert_gradient(sbert_features, u, v, case)
    u = torch.randn(2, 4, generator=g)   # a pair whose two sentences are the same: u = v in the first row
    v = torch.cat([u[:1], u[1:] + 1.0])
    _sbert_gradient(sbert_features, u, v, " (u, v of shape (2, 4), the first rows equal: the same sentence twice)")
    return "[u; v; |u − v|], gradient included (also where u = v)"


def _sbert_gradient(sbert_features, u, v, case: str) -> None:
    """The features must carry the gradient back to u and v: the classifier trains the encoder through them."""
    from .remote import value_and_grad   # the check's side only: the sandbox never imports it

    for wrt, name in ((0, "u"), (1, "v")):
        given, x = [u.clone(), v.clone()], [u.clone(), v.clone()]
        given[wrt].requires_grad_(True)
        x[wrt].requires_grad_(True)
        with torch.enable_grad():  # (the checks run under no_grad)
            _, grad = value_and_grad(sbert_features, tuple(given), wrt=wrt)
            (want,) = torch.autograd.grad(reference_features(*x).sum(), x[wrt])
        if grad is not None and torch.isnan(grad).any():
            raise Wrong(f"the gradient with respect to {name} is NaN where u = v: √((u − v)²) has no derivative at 0, "
                        "and autograd computes 0/0 there, which would put NaN into every weight it trains; the "
                        "absolute value itself has a usable (sub)gradient, 0, at 0" + case)
        if grad is None or not close(grad, want):
            raise Wrong(f"your features have the right values but do not carry the gradient back to {name} "
                        "(computed under torch.no_grad(), detached, or rebuilt from numbers): the classifier on "
                        "top trains the encoder through them, and here it could not" + case)


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
        check_bi_gradients(bi_encoder_logits)
        return "mean pooling over real tokens, [u; v; |u − v|], then W and b, gradients included"
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


BI_NO_GRADIENT = ("your logits have the right values but carry no gradient back to {what}: was something computed "
                  "under torch.no_grad(), or through .detach() -- here or in the sbert_features it calls? Training runs "
                  "backward() through these scores into W and the encoder, so they must come from W, z_a and z_b by "
                  "tensor operations all the way")


def check_bi_gradients(bi_encoder_logits):
    """The gradient of one pair's one score (B = C = 1, so the answer is a single number) with respect to W, z_a and
    z_b, against the reference's: logits computed under no_grad or detached have the right values and train nothing."""
    from .remote import value_and_grad   # the check's side only: the sandbox never imports it

    za, ma, zb, mb, W, b = (x[:1] for x in bi_inputs(1))   # one pair: z_a without padding, z_b with (below)
    za, zb, ma, mb = za.clone(), zb.clone(), ma.clone(), torch.tensor([[1, 1, 1, 0, 0]])
    W, b = W[:1].clone(), b[:1].clone()   # one class: the score is one number
    args = [za, ma, zb, mb, W, b]
    for wrt, what in ((4, "W"), (0, "z_a"), (2, "z_b")):
        given = [a.clone() for a in args]
        given[wrt].requires_grad_(True)
        with torch.enable_grad():
            _, grad = value_and_grad(bi_encoder_logits, tuple(given), wrt=wrt)
            if grad is None:
                raise Wrong(BI_NO_GRADIENT.format(what=what))
            mine = [a.clone() for a in args]
            mine[wrt].requires_grad_(True)
            (want,) = torch.autograd.grad(bi_reference(*mine).sum(), mine[wrt])
        if tuple(grad.shape) != tuple(want.shape) or not torch.allclose(grad.float(), want, atol=1e-6, rtol=1e-4):
            raise Wrong(f"your logits have the right values, but their gradient with respect to {what} is not that of "
                        "W [u; v; |u − v|] + b: part of the computation was detached or done under torch.no_grad() "
                        "(here or in sbert_features), so backward() would train with the wrong numbers")


# ----------------------------------------------------------------------------- distillation_loss (composed)

def distill_inputs(case: int):
    """(student scores, teacher scores, T): 3 classes, so that averaging over the classes gives another number."""
    g = torch.Generator().manual_seed(40 + case)
    B, C, T = ((5, 3, 2.0), (3, 3, 4.0), (5, 2, 1.0))[case]  # B never T², so a slip on one cannot hide another
    return torch.randn(B, C, generator=g) * 2, torch.randn(B, C, generator=g) * 3, T


def _distill_alternatives(s, t, T):
    """The numbers a plausible slip gives, with what to say about it."""
    B, C = s.shape
    ref = reference_distillation(s, t, T)
    log_ps, pt = F.log_softmax(s / T, -1), F.softmax(t / T, -1)
    entropy_t = -(pt * pt.log()).sum(-1).mean()
    ps, log_pt = F.softmax(s / T, -1), F.log_softmax(t / T, -1)
    return [
        ("no T²", ref / (T * T),
         "multiply by T²: softening both distributions by T shrinks the gradients by about 1/T², and T² puts them "
         "back, so the loss keeps its weight whatever T you pick"),
        ("T, not T²", ref / T,
         "you multiplied by T once: the factor is T² (T * T), which undoes the 1/T² that softening puts on the "
         "gradients"),
        ("softmax over the batch", F.kl_div(F.log_softmax(s / T, 0), F.softmax(t / T, 0), reduction="batchmean") * T * T,
         "your softmaxes run over the batch (dim=0): each sentence's scores become a distribution over its classes, "
         "the last axis (dim=-1)"),
        ("mean over classes too", ref / C,
         "your number is the right one divided by the number of classes: it averages over every entry (batch × "
         "classes), but the KL of one sentence is a *sum* over its classes; only the batch is averaged. Which "
         "reduction does that?"),
        ("sum over the batch", ref * B,
         "you summed over the batch: the loss is the mean of the sentences' KLs"),
        ("no temperature", F.kl_div(F.log_softmax(s, -1), F.softmax(t, -1), reduction="batchmean") * T * T,
         "divide both scores by T before their softmaxes: the temperature is what softens the distributions"),
        ("no temperature, no T²", F.kl_div(F.log_softmax(s, -1), F.softmax(t, -1), reduction="batchmean"),
         "the temperature is missing: divide both scores by T before their softmaxes, and multiply the KL by T²"),
        ("T on the teacher only", F.kl_div(F.log_softmax(s, -1), pt, reduction="batchmean") * T * T,
         "the student's scores must be divided by T too: both distributions are softened by the same temperature"),
        ("T on the student only", F.kl_div(log_ps, F.softmax(t, -1), reduction="batchmean") * T * T,
         "the teacher's scores must be divided by T too: both distributions are softened by the same temperature"),
        ("reversed KL", F.kl_div(log_pt, ps, reduction="batchmean") * T * T,
         "your number is KL(student ‖ teacher): the divergence is measured from the teacher's distribution, "
         "KL(teacher ‖ student) = Σ p_teacher · (log p_teacher − log p_student). Which of F.kl_div's two "
         "arguments plays which part?"),
        ("cross-entropy", ref + entropy_t * T * T,
         "you computed the cross-entropy −Σ p_teacher log p_student: it is the KL plus the teacher's entropy, a "
         "constant for the student (same gradients), but the exercise asks for the KL, which is 0 when the "
         "student gives the teacher's distribution"),
        ("probabilities as input", F.kl_div(F.softmax(s / T, -1), pt, reduction="batchmean") * T * T,
         "your number treats the student's probabilities as log-probabilities: read what F.kl_div expects its "
         "first argument to be"),
        ("log-probabilities as target", F.kl_div(log_ps, F.log_softmax(t / T, -1), reduction="batchmean") * T * T,
         "your number treats the teacher's log-probabilities as probabilities: read what F.kl_div expects its "
         "target to be"),
    ]


@exercise("distillation_loss", needs=["distillation_loss"])
def check_distillation_loss(distillation_loss):
    for i in range(3):
        s, t, T = distill_inputs(i)
        case = f" (scores {fmt_shape(s.shape)}, T = {T:g})"
        got = expect_tensor(distillation_loss(s.clone(), t.clone(), T), "the loss")
        if got.dim() != 0:
            if got.shape == (s.shape[0],):
                raise Wrong("return one number: average the per-sentence KL over the batch" + case)
            raise Wrong(f"the loss should be one number (a 0-dimensional tensor), got shape {fmt_shape(got.shape)}"
                        + case)
        want = reference_distillation(s, t, T)
        if close(got, want):
            continue
        if torch.isnan(got).any():
            raise Wrong("your loss is NaN: somewhere a logarithm met a negative number, which happens when "
                        "F.kl_div's two arguments are given in each other's place (one expects log-probabilities, "
                        "the other probabilities)" + case)
        for name, alt, why in _distill_alternatives(s, t, T):
            if T == 1.0 and name in ("no T²", "T, not T²", "no temperature", "no temperature, no T²",
                                     "T on the teacher only", "T on the student only"):
                continue  # the same number at T = 1
            if close(got, alt):
                raise Wrong(why + case)
        raise Wrong(f"loss {float(got):.4f}, expected {float(want):.4f}: T² · KL(softmax(t/T) ‖ softmax(s/T)), "
                    "summed over the classes and averaged over the batch" + case)
    # a teacher certain of one class: its other probabilities underflow to 0, and 0 · log 0 counts as 0
    sc, tc, _ = distill_inputs(0)
    tc[0] = 0.0
    tc[0, 0] = 150.0
    case = f" (scores {fmt_shape(sc.shape)}, T = 1, the teacher's first row {tc[0].tolist()})"
    got = expect_tensor(distillation_loss(sc.clone(), tc.clone(), 1.0), "the loss")
    if got.dim() == 0 and not torch.isfinite(got):
        raise Wrong(f"your loss is {float(got)} where the teacher is certain: its probabilities of the other classes "
                    "are 0 in floating point, and the KL counts a term 0 · log 0 as 0, which p * log p computed "
                    "as written turns into 0 · (−inf) = NaN: the terms where the teacher's probability is 0 must "
                    "contribute 0" + case)
    want = reference_distillation(sc, tc, 1.0)
    if not close(got, want):
        raise Wrong(f"loss {float(got):.4f}, expected {float(want):.4f} where the teacher is certain" + case)
    with torch.no_grad():
        same = distillation_loss(t.clone(), t.clone(), 2.0)
    if not close(torch.as_tensor(same, dtype=torch.float32), torch.tensor(0.0)):
        raise Wrong(f"a student that gives the teacher's scores exactly should have loss 0 (the KL of a distribution "
                    f"to itself); yours is {float(torch.as_tensor(same)):.4g} (scores {fmt_shape(t.shape)}, the "
                    "student's equal to the teacher's, T = 2)")
    from .remote import value_and_grad   # the check's side only: the sandbox never imports it

    s, t, T = distill_inputs(1)
    with torch.enable_grad():
        _, grad = value_and_grad(distillation_loss, (s.clone().requires_grad_(True), t.clone(), T), wrt=0)
        if grad is None:
            raise Wrong(NO_GRADIENT.format(what="the student's scores"))
        sx = s.clone().requires_grad_(True)
        (want,) = torch.autograd.grad(reference_distillation(sx, t, T), sx)
    same_gradient(grad, want, "the student's scores")
    return "T² · KL(softmax(t/T) ‖ softmax(s/T)), averaged over the batch, gradient included"


# ----------------------------------------------------------------------------- prediction questions

question(
    "pooling_prediction", variable="pooling_guess", choices=["[CLS]", "mean"], answer="mean",
    why="all-MiniLM-L6-v2 was fine-tuned (as a SentenceBERT) with mean pooling: its mean vector was trained to "
        "summarise the sentence, while its [CLS] vector was never trained for that after pretraining, so a "
        "frozen encoder's [CLS] carries less of the sentence for a linear head to read.",
    hint="think about which vector the embedded model's own training objective made into a sentence summary, and "
         "which vector it never trained for that.",
    giveaways=["pooled its token vectors into one sentence vector", "fine-tuned with mean pooling",
               "trained with mean pooling", "a SentenceBERT, section 5",
               "made one vector of each sentence into its summary"],  # the last: a pointer to where it is said
)

question(
    "from_scratch", variable="from_scratch",
    choices=["near the majority class", "near word counts", "near the pretrained model"], answer="near word counts",
    why="500 sentences are far too few to learn what words mean, how they combine and what order does, for 22 "
        "million parameters that start from nothing: the network learns which words go with which label, as the "
        "word counts do, and memorises its training sentences (its training accuracy reaches 99%). It does not "
        "stay at the majority class, because the tokens themselves still carry the signal. What the pretrained "
        "model adds on top is what it learnt from far more text before it ever saw a label",
    hint="what must a network learn before a sentence's label follows from its vector, and how much of that can "
         "500 labelled sentences teach? Which of the three yardsticks needs nothing but which words a sentence "
         "contains?",
    giveaways=["memorises its training sentences", "about what word counts reach",
               "a favour to it"],  # a setting chosen in its favour: a hint that it still falls short
)

question(
    "forgetting", variable="forgetting",
    choices=["about all of it (within 2 points)", "about half", "almost none"],
    answer="about all of it (within 2 points)",
    why="about a hundred steps at 5e-5 move each weight by a tiny fraction of its size: enough to turn [CLS] into "
        "a sentiment summary, far too little to rewrite what the lower layers and the embeddings know about words. "
        "That is what the lecture's small learning rate and few epochs are for; larger and longer steps do wear the "
        "pretrained knowledge away",
    hint="how many updates does the lecture's recipe make on 500 sentences, how large is each, and how much would "
         "the encoder have to change to stop predicting masked words?",
    giveaways=["left masked-word prediction intact", "the lecture's recipe forgot"],
)

question(
    "all_pairs_prediction", variable="passes_guess", choices=["1,000", "499,500", "1,000,000"], answer="499,500",
    why="a cross-encoder must read every unordered pair [CLS] A [SEP] B [SEP] once: n(n−1)/2 = 1,000 × 999 / 2 = "
        "499,500 passes, against 1,000 for a bi-encoder that encodes each sentence once. That counts A with B "
        "and B with A as one pair; a cross-encoder reads its two sentences in order, so its score for "
        "[CLS] B [SEP] A [SEP] may differ, and a task that cares about order needs both: twice as many passes.",
    hint="a cross-encoder reads two sentences together, so nothing it computes for one sentence can be reused "
         "with another: every pair it compares costs a pass of its own. Does the number of pairs grow like the "
         "number of sentences, or faster? And which pairs does finding the most similar pair really need?",
)

question(
    "mlm_search_prediction", variable="mlm_search",
    choices=["above MiniLM", "between MiniLM and word overlap", "below word overlap"], answer="below word overlap",
    why="masked language modelling trains each token's vector to predict the word behind it, not a sentence's "
        "mean vector to sit near the vectors of sentences that mean the same: after it, those means crowd "
        "together, and their cosines are ruled by frequent words and shared quirks rather than meaning. TF-IDF at "
        "least rewards the rarer words a premise and its hypothesis share. SentenceBERT trains the siamese network "
        "precisely because averaged BERT vectors search so poorly",
    hint="what was each model trained to do? Which of them was ever asked to put two sentences that mean the same "
         "close together, and what does masked language modelling ask of a sentence's mean vector?")

question(
    "soft_vs_hard_prediction", variable="soft_vs_hard_guess", choices=["top class", "scores", "about the same"],
    answer="about the same",
    why="with two classes, the teacher's scores add one number to its top class: how sure it was. Both students "
        "learnt from the same sentences and the same teacher, and they ended within a point of each other, well "
        "inside what chance moves an accuracy on 400 sentences; the difference showed in their confidence "
        "instead: the student trained on the scores has the lower held-out loss. With many classes the scores "
        "also rank the wrong classes, and soft targets carry more.",
    hint="with two classes, what does a score tell the student that the top class does not? Think about whether "
         "that mostly shapes which answers a model gives, or how sure it is of them, and how big a difference in "
         "accuracy 400 test sentences can show.",
    giveaways=["about the same accuracy", "within a point"],
)
