"""Known-wrong answers to the exercises of notebook 11.4a (notebooks/11_4a_sentence_classification.py).

Each case is a whole answer cell with one mistake; tests/test_exercise_registry.py runs it after the notebook's
``setup`` cells and checks that the message contains the hint given here.
"""

HEAD = "def cls_head(encoder, tokenizer, sentences, W, b, labels):\n"
ENCODE = "    enc = tokenizer(sentences)\n    hidden = encoder(**enc).last_hidden_state\n"
FREEZE = "def freeze_all_but_last(model, k):\n"
FEAT = "def sbert_features(u, v):\n"
BI = "def bi_encoder_logits(z_a, mask_a, z_b, mask_b, W, b):\n"
KD = "def distillation_loss(student_logits, teacher_logits, T):\n"
LOGS = "    log_ps = F.log_softmax(student_logits / T, dim=-1)\n    pt = F.softmax(teacher_logits / T, dim=-1)\n"
MEAN = """\
    def mean(z, m):
        m = m.unsqueeze(-1).float()
        return (z * m).sum(1) / m.sum(1)
"""

CASES = {  # case -> (exercise, source of a wrong answer, a part of the message it must get)
    # ------------------------------------------------------------------ cls_head
    "no attention mask": ("cls_head", HEAD + "    enc = tokenizer(sentences)\n"
                          "    z = encoder(input_ids=enc['input_ids']).last_hidden_state[:, 0]\n"
                          "    logits = z @ W.T + b\n"
                          "    return logits.softmax(-1), F.cross_entropy(logits, labels)",
                          "the short sentences' answers change with the padding after them"),
    "everything under no_grad": ("cls_head", HEAD + "    with torch.no_grad():\n"
                                 "        z = encoder(**tokenizer(sentences)).last_hidden_state[:, 0]\n"
                                 "        logits = z @ W.T + b\n"
                                 "        return logits.softmax(-1), F.cross_entropy(logits, labels)",
                                 "your loss has the right value but carries no gradient back to W"),
    "the encoder under no_grad, the head trained": ("cls_head", HEAD + "    with torch.no_grad():\n"
                                                    "        z = encoder(**tokenizer(sentences)).last_hidden_state[:, 0]\n"
                                                    "    logits = z @ W.T + b\n"
                                                    "    return logits.softmax(-1), F.cross_entropy(logits, labels)",
                                                    "your loss carries a gradient to W but none into the encoder"),
    "z_CLS detached": ("cls_head", HEAD + ENCODE + "    logits = hidden[:, 0].detach() @ W.T + b\n"
                       "    return logits.softmax(-1), F.cross_entropy(logits, labels)",
                       "was the encoder run under torch.no_grad(), or z_CLS detached?"),
    "a loss rebuilt from a number": ("cls_head", HEAD + ENCODE + "    logits = hidden[:, 0] @ W.T + b\n"
                                     "    return logits.softmax(-1), torch.tensor(F.cross_entropy(logits, labels).item())",
                                     "your loss has the right value but carries no gradient back to W"),
    "last position": ("cls_head", HEAD + ENCODE + "    logits = hidden[:, -1] @ W.T + b\n"
                      "    return logits.softmax(-1), F.cross_entropy(logits, labels)",
                      "you classified the last position, which is padding"),
    "each sentence's [SEP]": ("cls_head", HEAD + ENCODE + "    last = enc['attention_mask'].sum(1) - 1\n"
                              "    logits = hidden[torch.arange(len(sentences)), last] @ W.T + b\n"
                              "    return logits.softmax(-1), F.cross_entropy(logits, labels)",
                              "you classified each sentence's last token ([SEP])"),
    "mean pooled": ("cls_head", HEAD + ENCODE + "    m = enc['attention_mask'].unsqueeze(-1).float()\n"
                    "    logits = ((hidden * m).sum(1) / m.sum(1)) @ W.T + b\n"
                    "    return logits.softmax(-1), F.cross_entropy(logits, labels)",
                    "you averaged over the tokens (mean pooling)"),
    "pooler": ("cls_head", HEAD + "    z = encoder(**tokenizer(sentences)).pooler_output\n"
               "    logits = z @ W.T + b\n"
               "    return logits.softmax(-1), F.cross_entropy(logits, labels)", "you used the pooler's output"),
    "embedding layer": ("cls_head", HEAD + "    out = encoder(**tokenizer(sentences), output_hidden_states=True)\n"
                        "    logits = out.hidden_states[0][:, 0] @ W.T + b\n"
                        "    return logits.softmax(-1), F.cross_entropy(logits, labels)",
                        "you read [CLS] at the embedding layer"),
    "no bias": ("cls_head", HEAD + ENCODE + "    logits = hidden[:, 0] @ W.T\n"
                "    return logits.softmax(-1), F.cross_entropy(logits, labels)", "the bias b is missing"),
    "softmax over the batch": ("cls_head", HEAD + ENCODE + "    logits = hidden[:, 0] @ W.T + b\n"
                               "    return logits.softmax(0), F.cross_entropy(logits, labels)",
                               "each row of probs should sum to 1"),
    "log-softmax as probs": ("cls_head", HEAD + ENCODE + "    logits = hidden[:, 0] @ W.T + b\n"
                             "    return logits.log_softmax(-1), F.cross_entropy(logits, labels)",
                             "your probs are log-probabilities"),  # was told "each row should sum to 1"
    "softmax twice": ("cls_head", HEAD + ENCODE + "    probs = (hidden[:, 0] @ W.T + b).softmax(-1)\n"
                      "    return probs, F.cross_entropy(probs, labels)", "you applied the softmax twice"),
    "summed loss": ("cls_head", HEAD + ENCODE + "    logits = hidden[:, 0] @ W.T + b\n"
                    "    return logits.softmax(-1), F.cross_entropy(logits, labels, reduction='sum')",
                    "you summed the cross-entropy over the batch"),
    "loss per example": ("cls_head", HEAD + ENCODE + "    logits = hidden[:, 0] @ W.T + b\n"
                         "    return logits.softmax(-1), F.cross_entropy(logits, labels, reduction='none')",
                         "the loss should be one number"),
    "logits only": ("cls_head", HEAD + ENCODE + "    return hidden[:, 0] @ W.T + b", "return a pair (probs, loss)"),
    "Hugging Face's tokenizer arguments": ("cls_head", HEAD + "    enc = tokenizer(sentences, padding=True, "
                                           "return_tensors='pt')\n"
                                           "    logits = encoder(**enc).last_hidden_state[:, 0] @ W.T + b\n"
                                           "    return logits.softmax(-1), F.cross_entropy(logits, labels)",
                                           "given a list, it pads the batch to its longest sentence itself and returns "
                                           "tensors"),  # right in intent; was a bare TypeError
    # ------------------------------------------------------------------ freeze_last_k
    "first k blocks": ("freeze_last_k", FREEZE + "    model.requires_grad_(False)\n"
                       "    model.classifier.requires_grad_(True)\n"
                       "    for block in model.bert.encoder.layer[:k]:\n        block.requires_grad_(True)",
                       "those are the first"),
    "embeddings left trainable": ("freeze_last_k", FREEZE + "    model.requires_grad_(True)\n"
                                  "    for block in model.bert.encoder.layer[:len(model.bert.encoder.layer) - k]:\n"
                                  "        block.requires_grad_(False)\n"
                                  "    model.bert.pooler.requires_grad_(False)",
                                  "the embeddings should be frozen"),
    "head frozen": ("freeze_last_k", FREEZE + "    model.requires_grad_(False)\n"
                    "    for block in model.bert.encoder.layer[len(model.bert.encoder.layer) - k:]:\n"
                    "        block.requires_grad_(True)", "the head (model.classifier) must train"),
    "only switches off": ("freeze_last_k", FREEZE + "    model.bert.embeddings.requires_grad_(False)\n"
                          "    model.bert.pooler.requires_grad_(False)\n"
                          "    for block in model.bert.encoder.layer[:len(model.bert.encoder.layer) - k]:\n"
                          "        block.requires_grad_(False)",
                          "they may start either way"),
    "one block too many": ("freeze_last_k", FREEZE + "    model.requires_grad_(False)\n"
                           "    model.classifier.requires_grad_(True)\n"
                           "    n = len(model.bert.encoder.layer)\n"
                           "    for block in model.bert.encoder.layer[max(n - k - 1, 0):]:\n        block.requires_grad_(True)",
                           "train; one block too many: the last 1 of blocks 0 … 3 start at block 3"),
    "layer[-k:] with k = 0": ("freeze_last_k", FREEZE + "    model.requires_grad_(False)\n"
                              "    model.classifier.requires_grad_(True)\n"
                              "    for block in model.bert.encoder.layer[-k:]:\n        block.requires_grad_(True)",
                              "a slice that starts at -0 starts at 0, so it is the whole list"),
    # ------------------------------------------------------------------ sbert_features
    "the absolute difference as the root of a square": ("sbert_features", FEAT
                                                         + "    return torch.cat([u, v, ((u - v) ** 2).sqrt()], dim=-1)",
                                                         "the gradient with respect to u is NaN where u = v"),
    "signed difference": ("sbert_features", FEAT + "    return torch.cat([u, v, u - v], dim=-1)",
                          "the absolute difference"),
    "product": ("sbert_features", FEAT + "    return torch.cat([u, v, u * v], dim=-1)", "not the product u * v"),
    "batch axis": ("sbert_features", FEAT + "    return torch.cat([u, v, (u - v).abs()], dim=0)",
                   "you concatenated along the batch axis"),
    "v first": ("sbert_features", FEAT + "    return torch.cat([v, u, (u - v).abs()], dim=-1)", "u first"),
    "two parts": ("sbert_features", FEAT + "    return torch.cat([u, v], dim=-1)", "expected shape (3, 12)"),
    "interleaved": ("sbert_features", FEAT + "    return torch.stack([u, v, (u - v).abs()], dim=-1).flatten(-2)",
                    "interleaved (u₁, v₁, |u₁ − v₁|, u₂, …)"),
    "|u| − |v| as the third part": ("sbert_features", FEAT + "    return torch.cat([u, v, u.abs() - v.abs()], dim=-1)",
                                    "each row holds the 4 numbers of u, then the 4 of v, then the 4 absolute "
                                    "differences |u − v|"),
    # ------------------------------------------------------------------ bi_encoder_logits
    "padding in the mean": ("bi_encoder_logits", BI + "    u, v = z_a.mean(1), z_b.mean(1)\n"
                            "    return torch.cat([u, v, (u - v).abs()], -1) @ W.T + b",
                            "your mean includes the padding positions"),
    "cls vectors": ("bi_encoder_logits", BI + "    u, v = z_a[:, 0], z_b[:, 0]\n"
                    "    return torch.cat([u, v, (u - v).abs()], -1) @ W.T + b", "you used z_CLS (position 0)"),
    "signed difference (composed)": ("bi_encoder_logits", BI + MEAN + "    u, v = mean(z_a, mask_a), mean(z_b, mask_b)\n"
                                     "    return torch.cat([u, v, u - v], -1) @ W.T + b", "|u − v|"),
    "logits under no_grad": ("bi_encoder_logits", BI + MEAN + "    with torch.no_grad():\n"
                             "        u, v = mean(z_a, mask_a), mean(z_b, mask_b)\n"
                             "        return torch.cat([u, v, (u - v).abs()], -1) @ W.T + b",
                             "your logits have the right values but carry no gradient back to W"),
    "logits detached": ("bi_encoder_logits", BI + MEAN + "    u, v = mean(z_a, mask_a), mean(z_b, mask_b)\n"
                        "    return (torch.cat([u, v, (u - v).abs()], -1) @ W.T + b).detach()",
                        "your logits have the right values but carry no gradient back to W"),
    "pooled under no_grad": ("bi_encoder_logits", BI + MEAN + "    with torch.no_grad():\n"
                             "        u, v = mean(z_a, mask_a), mean(z_b, mask_b)\n"
                             "    return torch.cat([u, v, (u - v).abs()], -1) @ W.T + b",
                             "carry no gradient back to z_a"),
    # detached features are caught on their own (the gradient of their sum) and where they are used
    "features detached": ("sbert_features", FEAT + "    return torch.cat([u, v, (u - v).abs()], -1).detach()",
                          "your features have the right values but do not carry the gradient back to u"),
    "features under no_grad": ("sbert_features", FEAT + "    with torch.no_grad():\n"
                               "        return torch.cat([u, v, (u - v).abs()], -1)",
                               "do not carry the gradient back to u"),
    "features rebuilt from numbers": ("sbert_features", FEAT + "    return torch.tensor(torch.cat([u, v, (u - v).abs()], "
                                      "-1).tolist())", "(computed under torch.no_grad(), detached, or rebuilt from numbers)"),
    "sbert_features detached": ("bi_encoder_logits", FEAT + "    return torch.cat([u, v, (u - v).abs()], -1).detach()\n"
                                "\n\n" + BI + MEAN + "    return sbert_features(mean(z_a, mask_a), mean(z_b, mask_b)) "
                                "@ W.T + b", "here or in the sbert_features it calls"),
    "softmaxed": ("bi_encoder_logits", BI + MEAN + "    u, v = mean(z_a, mask_a), mean(z_b, mask_b)\n"
                  "    return (torch.cat([u, v, (u - v).abs()], -1) @ W.T + b).softmax(-1)",
                  "return the logits (scores), not the softmax"),
    # ------------------------------------------------------------------ distillation_loss
    "the KL written out (0 log 0 is NaN)": ("distillation_loss", KD + LOGS
                                            + "    return (pt * (pt.log() - log_ps)).sum(-1).mean() * T * T",
                                            "where the teacher is certain: its probabilities of the other classes are 0"),
    "KD under no_grad": ("distillation_loss", KD + "    with torch.no_grad():\n" + LOGS.replace("    ", "        ")
                         + "        return F.kl_div(log_ps, pt, reduction='batchmean') * T * T",
                         "your loss has the right value but carries no gradient back to the student's scores"),
    "KD detached": ("distillation_loss", KD + LOGS + "    return (F.kl_div(log_ps, pt, reduction='batchmean') * T * T)"
                    ".detach()", "your loss has the right value but carries no gradient back to the student's scores"),
    "no T squared": ("distillation_loss", KD + LOGS + "    return F.kl_div(log_ps, pt, reduction='batchmean')",
                     "multiply by T²"),
    "kl_div's default mean": ("distillation_loss", KD + LOGS + "    return F.kl_div(log_ps, pt) * T * T",
                              "it averages over every entry (batch × classes)"),
    "summed over the batch": ("distillation_loss", KD + LOGS + "    return F.kl_div(log_ps, pt, reduction='sum') * T * T",
                              "you summed over the batch"),
    "no temperature": ("distillation_loss", KD + "    return F.kl_div(F.log_softmax(student_logits, -1), "
                       "F.softmax(teacher_logits, -1), reduction='batchmean') * T * T",
                       "divide both scores by T before their softmaxes"),
    "teacher softened only": ("distillation_loss", KD + "    pt = F.softmax(teacher_logits / T, dim=-1)\n"
                              "    return F.kl_div(F.log_softmax(student_logits, -1), pt, reduction='batchmean') * T * T",
                              "the student's scores must be divided by T too"),
    "KL the other way": ("distillation_loss", KD + "    ps = F.softmax(student_logits / T, -1)\n"
                         "    log_pt = F.log_softmax(teacher_logits / T, -1)\n"
                         "    return F.kl_div(log_pt, ps, reduction='batchmean') * T * T", "your number is KL(student ‖ teacher)"),
    "soft cross-entropy": ("distillation_loss", KD + LOGS + "    return -(pt * log_ps).sum(-1).mean() * T * T",
                           "you computed the cross-entropy"),
    "probabilities into kl_div": ("distillation_loss", KD + "    ps = F.softmax(student_logits / T, -1)\n"
                                  "    pt = F.softmax(teacher_logits / T, -1)\n"
                                  "    return F.kl_div(ps, pt, reduction='batchmean') * T * T",
                                  "treats the student's probabilities as log-probabilities"),
    "per sentence": ("distillation_loss", KD + LOGS + "    return (pt * (pt.log() - log_ps)).sum(-1) * T * T",
                     "average the per-sentence KL over the batch"),
    "T once": ("distillation_loss", KD + LOGS + "    return F.kl_div(log_ps, pt, reduction='batchmean') * T",
               "you multiplied by T once"),
    "KD softmax over the batch": ("distillation_loss", KD + "    log_ps = F.log_softmax(student_logits / T, dim=0)\n"
                               "    pt = F.softmax(teacher_logits / T, dim=0)\n"
                               "    return F.kl_div(log_ps, pt, reduction='batchmean') * T * T",
                               "your softmaxes run over the batch (dim=0)"),
    "kl_div's arguments swapped": ("distillation_loss", KD + LOGS + "    return F.kl_div(pt, log_ps, "
                                   "reduction='batchmean') * T * T", "your loss is NaN: somewhere a logarithm met a negative number"),
    "a float": ("distillation_loss", KD + LOGS + "    return (F.kl_div(log_ps, pt, reduction='batchmean') * T * T).item()",
                "the loss"),
    # ------------------------------------------------------------------ questions
    "cls guess": ("pooling_prediction", "pooling_guess = '[CLS]'", "which vector the embedded model's own training"),
    "CLS without brackets": ("pooling_prediction", "pooling_guess = 'CLS'", "not '[CLS]'. think about which vector"),
    "not a choice": ("pooling_prediction", "pooling_guess = 'max'", "choose one of"),
    "scratch as good as pretrained": ("from_scratch", "from_scratch = 'near the pretrained model'",
                                      "how much of that can 500 labelled sentences teach?"),
    "scratch learns nothing": ("from_scratch", "from_scratch = 'near the majority class'",
                               "Which of the three yardsticks needs nothing but which words a sentence contains?"),
    "forgets half": ("forgetting", "forgetting = 'about half'", "how large is each, and how much would the encoder"),
    "forgets everything": ("forgetting", "forgetting = 'almost none'", "how many updates does the lecture's recipe"),
    "n squared": ("all_pairs_prediction", "passes_guess = '1,000,000'", "every pair it compares costs a pass"),
    "mlm in between": ("mlm_search_prediction", "mlm_search = 'between MiniLM and word overlap'",
                       "what was each model trained to do?"),
    "soft wins": ("soft_vs_hard_prediction", "soft_vs_hard_guess = 'scores'", "what does a score tell the student"),
}

WRONG_ANSWERS: dict[str, list[tuple[str, str]]] = {}
for _exercise, _source, _hint in CASES.values():
    WRONG_ANSWERS.setdefault(_exercise, []).append((_source, _hint))
