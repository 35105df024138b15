"""Known-wrong answers to the exercises of notebook 11.1 (notebooks/11_1_bidirectional_encoders.py).

Each case is a whole answer cell with one mistake; tests/test_exercise_registry.py runs it after the notebook's
``setup`` cells and checks the hint. Here the hint is the whole message (``EXACT_HINTS``), not only a part of it.
"""

EXACT_HINTS = True  # each hint below is the student's whole message

ATTENTION = "def scaled_dot_product_attention(Q, K, V, mask=None):\n"
UNBATCHED_CASE = " (with Q (4, 8), K (6, 8), V (6, 5), no mask)"
CAUSAL_CASE = " (with Q (5, 8), K (5, 8), V (5, 3), causal mask)"
SPLIT = "def split_heads(X, n):\n    B, T, d = X.shape\n"
GOOD_SPLIT = SPLIT + "    return X.view(B, T, n, d // n).transpose(1, 2)\n"
MERGE = "def merge_heads(X):\n    B, H, T, dh = X.shape\n"
GOOD_MERGE = MERGE + "    return X.transpose(1, 2).reshape(B, T, H * dh)\n"
COUNT = ("def bert_parameter_count(c):\n"
         "    d, V, L, f = c.hidden_size, c.vocab_size, c.num_hidden_layers, c.intermediate_size\n")
BASE = "off by {:+,} parameters for BERT-base: yours {}, expected 109,482,240 = " \
       "embeddings 23,837,184 + 12 layers × 7,087,872 + pooler 590,592; "

CASES = {  # case -> (exercise, source of a wrong answer, the whole message it must get)
    "attention without the 1/sqrt(d_k) scaling": ("attention", ATTENTION + """\
    s = Q @ K.transpose(-2, -1)
    w = s.masked_fill(~mask, float("-inf")).softmax(-1) if mask is not None else s.softmax(-1)
    return w @ V, w""", "your weights are softmax(QKᵀ), without the division by √d_k: scale the scores by 1/√d_k "
                        "(eq. 11.6)" + UNBATCHED_CASE),
    "attention dividing by d_k": ("attention", ATTENTION + """\
    w = (Q @ K.transpose(-2, -1) / K.size(-1)).softmax(-1)
    return w @ V, w""", "your weights are softmax(QKᵀ/d_k): divide by √d_k, not by d_k" + UNBATCHED_CASE),
    "softmax over the queries": ("attention", ATTENTION + """\
    w = (Q @ K.transpose(-2, -1) / math.sqrt(K.size(-1))).softmax(-2)
    return w @ V, w""", "the weights sum to 1 along axis -2 instead of along each row: take the softmax over the keys, "
                        "the last axis (dim=-1)" + UNBATCHED_CASE),
    "the mask is ignored": ("attention", ATTENTION + """\
    w = (Q @ K.transpose(-2, -1) / math.sqrt(K.size(-1))).softmax(-1)
    return w @ V, w""", "weight at (0, 1) should be 0: that key is masked" + CAUSAL_CASE),
    "the mask is applied after the softmax": ("attention", ATTENTION + """\
    w = (Q @ K.transpose(-2, -1) / math.sqrt(K.size(-1))).softmax(-1)
    w = w * mask if mask is not None else w
    return w @ V, w""", "row 0 of the weights sums to 0.65, expected 1: apply the mask to the scores before the softmax "
                        "(masked scores -> -inf), not to the weights after it" + CAUSAL_CASE),
    "sigmoid instead of softmax": ("attention", ATTENTION + """\
    w = (Q @ K.transpose(-2, -1) / math.sqrt(K.size(-1))).sigmoid()
    return w @ V, w""", "row 0 of the weights sums to 3.01, expected 1" + UNBATCHED_CASE),
    "attention output from the keys": ("attention", ATTENTION + """\
    w = (Q @ K.transpose(-2, -1) / math.sqrt(K.size(-1))).softmax(-1)
    return w @ K, w""", "expected shape (4, 5), got (4, 8) for the output" + UNBATCHED_CASE),
    "attention returns (weights, output)": ("attention", ATTENTION + """\
    w = (Q @ K.transpose(-2, -1) / math.sqrt(K.size(-1))).softmax(-1)
    return w, w @ V""", "return (output, weights) in this order: yours look like (weights, output)" + UNBATCHED_CASE),
    "attention only for unbatched inputs": ("attention", ATTENTION + """\
    w = (Q @ K.mT.reshape(K.size(-1), -1) / math.sqrt(K.size(-1))).softmax(-1)
    return w @ V, w""", "weight at (0, 1) should be 0: that key is masked" + CAUSAL_CASE),
    "attention raising TypeError": ("attention", ATTENTION + "    return Q + 'a'",
                                    "your function scaled_dot_product_attention raised TypeError: unsupported operand "
                                    "type(s) for +: 'Tensor' and 'str'" + UNBATCHED_CASE),
    "transposed causal mask": ("causal_mask", "def causal_mask(T):\n    return torch.ones(T, T, dtype=torch.bool).triu()",
                               "position (0, 1) should be False: token 0 must not see token 1, which comes later"),
    "float causal mask": ("causal_mask", "def causal_mask(T):\n    return torch.ones(T, T).tril()",
                          "causal_mask(4) has dtype torch.float32; a mask must be torch.bool (True = may attend): "
                          "use dtype=torch.bool or .bool()"),
    "causal mask of the wrong shape": ("causal_mask", "def causal_mask(T):\n    return torch.ones(T, dtype=torch.bool)",
                                       "expected shape (4, 4), got (4,) for causal_mask(4)"),
    "causal mask hiding the diagonal": ("causal_mask",
                                        "def causal_mask(T):\n    return torch.ones(T, T, dtype=torch.bool).tril(-1)",
                                        "position (0, 0) should be True: every token may see itself"),
    "split without the transpose": ("heads", SPLIT + "    return X.view(B, T, n, d // n)\n" + GOOD_MERGE,
                                    "expected shape (2, 4, 5, 3), got (2, 5, 4, 3) for split_heads(X, 4) with X of shape "
                                    "(2, 5, 12): are the head and token axes swapped?"),
    "split by a single reshape": ("heads", SPLIT + "    return X.reshape(B, n, T, d // n)\n" + GOOD_MERGE,
                                  "split_heads(X, 4) with X of shape (2, 5, 12): you reshaped (B, T, d) straight to "
                                  "(B, H, T, d_h), which mixes tokens into heads; view X as (B, T, H, d_h) first, then swap "
                                  "the token and head axes with transpose(1, 2)"),
    "split interleaving the dims": ("heads", SPLIT + "    return X.view(B, T, d // n, n).permute(0, 3, 1, 2)\n" + GOOD_MERGE,
                                    "split_heads(X, 4) with X of shape (2, 5, 12): [0, 0, 0] should be X[0, 0, 0:3] "
                                    "(dims 0…2 of token 0); yours holds dims 0, 4, 8 of token 0: head h must hold dims "
                                    "h·d_h … (h+1)·d_h−1 of every token"),
    "merge by a single reshape": ("heads", GOOD_SPLIT + MERGE + "    return X.reshape(B, T, H * dh)\n",
                                  "merge_heads(X) with X of shape (2, 4, 5, 3): you reshaped (B, H, T, d_h) straight to "
                                  "(B, T, H·d_h), which mixes tokens and heads; transpose(1, 2) to (B, T, H, d_h) first, "
                                  "then reshape"),
    "merge with token and feature axes swapped": ("heads", GOOD_SPLIT + MERGE + "    return X.permute(0, 1, 3, 2).reshape(B, H * dh, T)\n",
                                                  "expected shape (2, 5, 12), got (2, 12, 5) for merge_heads(X) with X of "
                                                  "shape (2, 4, 5, 3): are the token and feature axes swapped?"),
    "no LayerNorm on the embeddings": ("param_count", COUNT + """\
    layer = 4 * (d * d + d) + 2 * d + (d * f + f) + (f * d + d) + 2 * d
    return (V + c.max_position_embeddings + c.type_vocab_size) * d + L * layer + d * d + d""",
        BASE.format(-1536, "109,480,704") + "1,536 is the size of one LayerNorm (2·d) or the segment embeddings: "
                                            "did you leave it out?"),
    "no pooler": ("param_count", COUNT + """\
    layer = 4 * (d * d + d) + 2 * d + (d * f + f) + (f * d + d) + 2 * d
    return (V + c.max_position_embeddings + c.type_vocab_size) * d + 2 * d + L * layer""",
        BASE.format(-590592, "108,891,648") + "590,592 is the size of the pooler (d·d + d): did you leave it out?"),
    "two segment types hard-coded": ("param_count", COUNT + """\
    layer = 4 * (d * d + d) + 2 * d + (d * f + f) + (f * d + d) + 2 * d
    return (V + c.max_position_embeddings + 2) * d + 2 * d + L * layer + d * d + d""",
        "off by +24 parameters for a BERT with V=57, d=24, L=3, d_ff=50, 20 positions, 1 segment type: yours 17,454, "
        "expected 17,430 = embeddings 1,920 + 3 layers × 4,970 + pooler 600; 24 is the size of one bias vector (d) or the "
        "segment embeddings: did you count it twice?"),
    "a float count": ("param_count", COUNT + """\
    layer = 4 * (d * d + d) + 2 * d + (d * f + f) + (f * d + d) + 2 * d
    return ((V + c.max_position_embeddings + c.type_vocab_size) * d + 2 * d + L * layer + d * d + d) / 1""",
        "bert_parameter_count should return an int, got float 109482240.0 for BERT-base; use // rather than /, or int(...)"),
}


WRONG_ANSWERS: dict[str, list[tuple[str, str]]] = {}
for _exercise, _source, _hint in CASES.values():
    WRONG_ANSWERS.setdefault(_exercise, []).append((_source, _hint))
