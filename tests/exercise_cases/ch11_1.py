"""Known-wrong answers to the exercises of notebook 11.1 (notebooks/11_1_bidirectional_encoders.py).

Each case is a whole answer cell with one mistake; tests/test_exercise_registry.py runs it after the notebook's
``setup`` cells and checks the hint. Here the hint is the whole message (``EXACT_HINTS``), not only a part of it.
"""

EXACT_HINTS = True  # each hint below is the student's whole message

ATTENTION = "def scaled_dot_product_attention(Q, K, V, mask=None):\n"
UNBATCHED_CASE = " (with Q (4, 8), K (6, 8), V (6, 5), no mask)"
CAUSAL_CASE = " (with Q (5, 8), K (5, 8), V (5, 3), causal mask)"
PADDING_CASE = " (with Q (2, 3, 8), K (2, 5, 8), V (2, 5, 6), key-padding mask (2, 1, 5) for real lengths [5, 3])"
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
    return w @ V, w""", "the weights sum to 1 along axis -2 instead of along each row: each query spreads its "
                        "attention over the keys, so normalise over the key axis, the last one" + UNBATCHED_CASE),
    "the mask is ignored": ("attention", ATTENTION + """\
    w = (Q @ K.transpose(-2, -1) / math.sqrt(K.size(-1))).softmax(-1)
    return w @ V, w""", "weight at (0, 1) should be 0: that key is masked" + CAUSAL_CASE),
    "the mask is applied after the softmax": ("attention", ATTENTION + """\
    w = (Q @ K.transpose(-2, -1) / math.sqrt(K.size(-1))).softmax(-1)
    w = w * mask if mask is not None else w
    return w @ V, w""", "row 0 of the weights sums to 0.65, expected 1: hide the masked keys in the scores, before "
                        "the softmax (a score of minus infinity becomes a weight of exactly 0); zeroing weights after "
                        "the softmax leaves rows that no longer sum to 1" + CAUSAL_CASE),
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
    "attention output shifted": ("attention", ATTENTION + """\
    w = (Q @ K.transpose(-2, -1) / math.sqrt(K.size(-1))).softmax(-1)
    return w @ V + 1, w""", "the weights are right, but the output differs from the weighted sum of the values "
                          "(eq. 11.2) by 1 at (0, 0)" + UNBATCHED_CASE),
    "attention drawing its own causal triangle whatever the mask": ("attention", ATTENTION + """\
    s = Q @ K.transpose(-2, -1) / math.sqrt(K.size(-1))
    if mask is not None:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), float("-inf"))
    w = s.softmax(-1)
    return w @ V, w""", "your weights hide every key after its query, as a causal mask would, but this mask hides "
                        "other keys: use the mask you are given, whatever its pattern (False = hidden), broadcast "
                        "over the leading dimensions" + PADDING_CASE),
    "attention broadcasting only a (T, T) mask": ("attention", ATTENTION + """\
    s = Q @ K.transpose(-2, -1) / math.sqrt(K.size(-1))
    if mask is not None and mask.dim() == 2:
        s = s.masked_fill(~mask, float("-inf"))
    w = s.softmax(-1)
    return w @ V, w""", "weight at (1, 0, 3) should be 0: that key is masked" + PADDING_CASE),
    "attention with the mask's meaning inverted": ("attention", ATTENTION + """\
    s = Q @ K.transpose(-2, -1) / math.sqrt(K.size(-1))
    if mask is not None:
        s = s.masked_fill(mask, float("-inf"))   # True = hidden, as in nn.MultiheadAttention
    w = s.softmax(-1)
    return w @ V, w""", "your weights hide the keys where the mask is True and keep those where it is False: here True "
                        "means the query *may attend* to that key (the causal mask is True on and below the diagonal), "
                        "the opposite of the convention of PyTorch's nn.MultiheadAttention, where True means hidden. "
                        "Hide the keys where the mask is False" + CAUSAL_CASE),
    "attention filling the masked scores with -1e4": ("attention", ATTENTION + """\
    s = Q @ K.transpose(-2, -1) / math.sqrt(K.size(-1))
    if mask is not None:
        s = s.masked_fill(~mask, -1e4)
    w = s.softmax(-1)
    return w @ V, w""", "the masked key gets weight 1.00 when the only visible key scores -20000 (q = 100, k = -200): "
                        "a finite fill such as -10000 is not below every score, so the softmax prefers the masked key. "
                        "Fill the masked scores with -inf (or the dtype's lowest value), which the softmax turns into "
                        "exactly 0 whatever the other scores (with Q (1, 1) = [[100]], K (2, 1) = [[-200], [5]], V (2, "
                        "3), mask [[True, False]]: large scores)"),
    "attention raising TypeError": ("attention", ATTENTION + "    return Q + 'a'",
                                    "your function scaled_dot_product_attention raised TypeError: unsupported operand "
                                    "type(s) for +: 'Tensor' and 'str'" + UNBATCHED_CASE),
    "transposed causal mask": ("causal_mask", "def causal_mask(T):\n    return torch.ones(T, T, dtype=torch.bool).triu()",
                               "position (0, 1) should be False: token 0 must not see token 1, which comes later"),
    "float causal mask": ("causal_mask", "def causal_mask(T):\n    return torch.ones(T, T).tril()",
                          "causal_mask(4) has dtype torch.float32; a mask holds yes/no answers (True = may attend), "
                          "not numbers: make it a boolean tensor"),
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
                                  "(B, H, T, d_h), which mixes tokens into heads; first cut each token's d features into H "
                                  "pieces of d_h, keeping the tokens apart, and only then move the head axis in front of "
                                  "the token axis"),
    "split interleaving the dims": ("heads", SPLIT + "    return X.view(B, T, d // n, n).permute(0, 3, 1, 2)\n" + GOOD_MERGE,
                                    "split_heads(X, 4) with X of shape (2, 5, 12): [0, 0, 0] should be X[0, 0, 0:3] "
                                    "(dims 0…2 of token 0); yours holds dims 0, 4, 8 of token 0: head h must hold dims "
                                    "h·d_h … (h+1)·d_h−1 of every token"),
    "merge by a single reshape": ("heads", GOOD_SPLIT + MERGE + "    return X.reshape(B, T, H * dh)\n",
                                  "merge_heads(X) with X of shape (2, 4, 5, 3): you reshaped (B, H, T, d_h) straight to "
                                  "(B, T, H·d_h), which mixes tokens and heads; first bring the token axis back in front of "
                                  "the head axis, and only then join each token's H pieces into one vector"),
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
    "no LayerNorm anywhere": ("param_count", COUNT + """\
    layer = 4 * (d * d + d) + (d * f + f) + (f * d + d)
    return (V + c.max_position_embeddings + c.type_vocab_size) * d + L * layer + d * d + d""",
        BASE.format(-38400, "109,443,840") + "38,400 is the size of every LayerNorm (the embeddings' and two per "
                                             "layer, 2·d each): did you leave it out?"),
    "a float count": ("param_count", COUNT + """\
    layer = 4 * (d * d + d) + 2 * d + (d * f + f) + (f * d + d) + 2 * d
    return ((V + c.max_position_embeddings + c.type_vocab_size) * d + 2 * d + L * layer + d * d + d) / 1""",
        "bert_parameter_count should return an int, got float 109482240.0 for BERT-base; a count is a whole "
        "number: keep to integer arithmetic (true division always gives a float)"),
    "the library's counter": ("param_count", """from course_lib.model.bert import parameter_count


def bert_parameter_count(config):
    return parameter_count(config)""",
        "`bert_parameter_count` uses `course_lib.model.bert.parameter_count`, the library's own implementation of "
        "what this exercise asks you to write: write it yourself (no credit while it calls the library's answer)"),
    "a model built and counted": ("param_count", """from course_lib.model.bert import BertModel


def bert_parameter_count(config):
    return sum(p.numel() for p in BertModel(config).parameters())""",
        "`bert_parameter_count` uses `course_lib.model.bert.BertModel`, the library's own implementation of what "
        "this exercise asks you to write: write it yourself (no credit while it calls the library's answer)"),
}

# ----------------------------------------------------------------------------- one head from X
SELF = "def single_head_self_attention(X, W_Q, W_K, W_V, causal=False, attention_mask=None):\n"
MASK = """\
    B, T, _ = X.shape
    mask = torch.ones(B, T, T, dtype=torch.bool)
    if causal:
        mask = mask & torch.ones(T, T, dtype=torch.bool).tril()
"""
KEY_MASK = """\
    if attention_mask is not None:
        mask = mask & attention_mask.bool()[:, None, :]
"""
ATTEND = """\
    s = (X @ W_Q) @ (X @ W_K).transpose(1, 2) / math.sqrt(W_K.size(1))
    w = s.masked_fill(~mask, float("-inf")).softmax(-1)
    return w @ (X @ W_V), w
"""
LARGE_SCORES = " (X [[200], [-300]], W_Q [[1]], W_K [[-1]], W_V [[1]], causal=True: large scores)"
PLAIN = " (with X (1, 4, 6), W_Q and W_K (6, 4), W_V (6, 3), causal=False, no padding)"
CAUSAL_ONLY = " (with X (2, 5, 6), W_Q and W_K (6, 4), W_V (6, 3), causal=True, no padding)"
PADDED = " (with X (2, 5, 6), W_Q and W_K (6, 4), W_V (6, 3), causal=False, real lengths [5, 3])"
BOTH = " (with X (3, 6, 6), W_Q and W_K (6, 4), W_V (6, 3), causal=True, real lengths [6, 2, 4])"

CASES.update({
    "self-attention with a finite fill": ("self_attention", SELF + MASK + KEY_MASK + ATTEND.replace(
        'float("-inf")', "-1e4"),
        "the hidden key gets weight 1.00 when the only visible key scores -40000: a finite fill such as -10000 is not "
        "below every score. Fill the hidden scores with -inf (or the dtype's lowest value)" + LARGE_SCORES),
    "self-attention by exp() without the max": ("self_attention", SELF + MASK + KEY_MASK + """\
    s = (X @ W_Q) @ (X @ W_K).transpose(1, 2) / math.sqrt(W_K.size(1))
    e = s.exp() * mask
    w = e / e.sum(-1, keepdim=True)
    return w @ (X @ W_V), w
""", "the weights of query 0 are NaN when its scores are -40000 and +60000: exp() of 60,000 overflows. A softmax is "
        "unchanged when the same number is taken off every score of a row: take out the largest before "
        "exponentiating" + LARGE_SCORES),
    "self-attention ignoring causal": ("self_attention", SELF + MASK.replace("if causal:", "if False:") + KEY_MASK + ATTEND,
                                       "in text 0, query 0 attends to key 1, which comes after it: with causal=True "
                                       "each token may see only itself and the tokens before it" + CAUSAL_ONLY),
    "self-attention ignoring padding": ("self_attention", SELF + MASK + ATTEND,
                                        "in text 1, query 0 attends to key 3, a [PAD] position (its attention_mask "
                                        "is 0): padding keys must get weight 0" + PADDED),
    "self-attention masking padded queries": ("self_attention", SELF + MASK + """\
    if attention_mask is not None:
        m = attention_mask.bool()
        mask = mask & m[:, None, :] & m[:, :, None]
""" + ATTEND, "row 3 of text 1 (a [PAD] query) should still attend to the real keys: padding hides keys, not queries, "
              "so that no row is left without a key (its output is ignored later)" + PADDED),
    "self-attention joining the masks with or": ("self_attention", SELF + MASK + KEY_MASK.replace(
        "mask = mask & attention_mask", "mask = mask | attention_mask") + ATTEND,
        "in text 1, query 0 attends to key 3, a [PAD] position (its attention_mask is 0): padding keys must get "
        "weight 0" + PADDED),
    "self-attention with only the padding mask under causal": ("self_attention", SELF + MASK.replace(
        "if causal:", "if causal and attention_mask is None:") + KEY_MASK + ATTEND,
        "in text 0, query 0 attends to key 1, which comes after it: with causal=True each token may see only itself "
        "and the tokens before it" + BOTH),
    "self-attention scaled by the input size": ("self_attention", SELF + MASK + KEY_MASK + ATTEND.replace(
        "W_K.size(1)", "X.size(-1)"),
        "you scaled by √d = √6, the size of the inputs: scale by √d_k = √4, the size of the queries and keys" + PLAIN),
    "self-attention keys against queries": ("self_attention", SELF + MASK + KEY_MASK + ATTEND.replace(
        "(X @ W_Q) @ (X @ W_K)", "(X @ W_K) @ (X @ W_Q)"),
        "your scores compare the keys with the queries the wrong way round: row i of the score matrix holds query i "
        "(from W_Q) compared with every key (from W_K)" + PLAIN),
    "self-attention summing the inputs": ("self_attention", SELF + MASK + KEY_MASK + ATTEND.replace(
        "w @ (X @ W_V)", "w @ X"),
        "your output is a weighted sum of the inputs X (6 features per token): weight the values instead, the rows "
        "of X W^V (3 features)" + PLAIN),
    "self-attention without the scaling": ("self_attention", SELF + MASK + KEY_MASK + ATTEND.replace(
        " / math.sqrt(W_K.size(1))", ""),
        "your weights are softmax(QKᵀ), without the division by √d_k: scale the scores by 1/√d_k (eq. 11.6)" + PLAIN),
    "self-attention returning the weights only": ("self_attention", SELF + MASK + KEY_MASK + ATTEND.replace(
        "return w @ (X @ W_V), w", "return w"),
        "single_head_self_attention should return a pair (output, weights), got a single tensor" + PLAIN),
})

# ----------------------------------------------------------------------------- the whole encoder
ENCODER = """\
def bert_encoder(input_ids, token_type_ids, attention_mask, model):
    emb = model.embeddings
    positions = torch.arange(input_ids.size(1))
    x = emb.LayerNorm(emb.word_embeddings(input_ids) + emb.position_embeddings(positions)
                      + emb.token_type_embeddings(token_type_ids))
    states = [x]
    keys = attention_mask.bool()[:, None, None, :]
    for block in model.encoder.layer:
        att, out = block.attention.self, block.attention.output
        q, k, v = (A.split_heads(proj(x), att.num_heads) for proj in (att.query, att.key, att.value))
        s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        heads = s.masked_fill(~keys, float("-inf")).softmax(-1) @ v
        h = out.LayerNorm(x + out.dense(A.merge_heads(heads)))
        x = block.output.LayerNorm(h + block.output.dense(torch.nn.functional.gelu(block.intermediate.dense(h))))
        states.append(x)
    return states
"""
FIRST_BERT = " (with a random BERT with d = 24, 4 heads, 2 blocks, and a batch of texts of lengths [9, 6, 2])"


def encoder_edit(old: str, new: str) -> str:
    assert ENCODER.count(old) == 1, old
    return ENCODER.replace(old, new)


CASES.update({
    "encoder without the padding mask": ("bert_encoder", encoder_edit('s.masked_fill(~keys, float("-inf"))', "s"),
        "block 1: padding keys must get weight 0 in every head: mask the scores where attention_mask is 0 (the "
        "longest text is right, the shorter ones are not)" + FIRST_BERT),
    "encoder with a pre-LN block": ("bert_encoder", encoder_edit(
        "        h = out.LayerNorm(x + out.dense(A.merge_heads(heads)))\n"
        "        x = block.output.LayerNorm(h + block.output.dense(torch.nn.functional.gelu(block.intermediate.dense(h))))",
        "        h = x + out.dense(A.merge_heads(heads))\n"
        "        x = h + block.output.dense(torch.nn.functional.gelu(block.intermediate.dense(block.output.LayerNorm(h))))"
        ).replace("(A.split_heads(proj(x), att.num_heads)", "(A.split_heads(proj(out.LayerNorm(x)), att.num_heads)"),
        "block 1: that is a pre-LayerNorm block (x + Sublayer(LayerNorm(x))): BERT's is post-LayerNorm, "
        "LayerNorm(x + Sublayer(x)), after each residual sum" + FIRST_BERT),
    "encoder with the tanh GELU": ("bert_encoder", encoder_edit(
        "torch.nn.functional.gelu(block.intermediate.dense(h))",
        "torch.nn.functional.gelu(block.intermediate.dense(h), approximate='tanh')"),
        "block 1: your GELU is the tanh approximation: BERT's is the exact one, x·Φ(x) with Φ the normal distribution's CDF"
        + FIRST_BERT),
    "encoder with ReLU": ("bert_encoder", encoder_edit(
        "torch.nn.functional.gelu(block.intermediate.dense(h))", "torch.relu(block.intermediate.dense(h))"),
        "block 1: BERT's feed-forward activation is the GELU, not ReLU (torch.nn.functional.gelu)" + FIRST_BERT),
    "encoder masking the padding queries too": ("bert_encoder", encoder_edit(
        "keys = attention_mask.bool()[:, None, None, :]",
        "keys = attention_mask.bool()[:, None, None, :] & attention_mask.bool()[:, None, :, None]"),
        "layer L2 has NaN or inf at real tokens. A query whose keys are all masked (a padding query, if you mask "
        "queries too) gets softmax of all -inf = NaN, and the next block's attention carries it to the real tokens "
        "(0 · NaN is NaN): mask only the keys, so that every query keeps its real keys; padding positions may hold "
        "anything finite" + FIRST_BERT),
    "encoder with the key mask of the attention exercise, (B, 1, T)": ("bert_encoder", encoder_edit(
        "keys = attention_mask.bool()[:, None, None, :]", "keys = attention_mask.bool()[:, None, :]"),
        "your function bert_encoder raised RuntimeError: The size of tensor a (3) must match the size of tensor b "
        "(4) at non-singleton dimension 1. The scores of all heads have the shape (B, H, T, T): a mask of the keys "
        "must have the shape (B, 1, 1, T), one row for every head and every query"),
    "encoder with MiniLM's 12 heads": ("bert_encoder", encoder_edit("att.num_heads)", "12)"),
        "block 1: you split the vectors into 12 heads, MiniLM's number: split into block.attention.self.num_heads"
        + FIRST_BERT),
    "encoder scaled by the width": ("bert_encoder", encoder_edit("math.sqrt(q.size(-1))", "math.sqrt(x.size(-1))"),
        "block 1: scale the scores of each head by √d_h (its query size), not by √d, the model's width" + FIRST_BERT),
    "encoder without LayerNorm on the embeddings": ("bert_encoder", encoder_edit(
        "x = emb.LayerNorm(emb.word_embeddings(input_ids)", "x = (emb.word_embeddings(input_ids)"),
        "your L0 has no LayerNorm: the input vector is LayerNorm(E_tok[w] + E_pos[i] + E_seg[s])" + FIRST_BERT),
    "encoder without L0": ("bert_encoder", encoder_edit("states = [x]", "states = []"),
        "return 3 hidden states (L0 and one per block of the 2), got 2: did you leave out L0, the embedding output?"
        + FIRST_BERT),
    "encoder without the attention residual": ("bert_encoder", encoder_edit(
        "h = out.LayerNorm(x + out.dense(", "h = out.LayerNorm(out.dense("),
        "block 1: the attention sub-layer has no residual connection: its LayerNorm normalises x + W^O·attention, the "
        "block's input added back (Fig. 11.3)" + FIRST_BERT),
    "encoder without the feed-forward residual": ("bert_encoder", encoder_edit(
        "x = block.output.LayerNorm(h + block.output.dense(", "x = block.output.LayerNorm(block.output.dense("),
        "block 1: the feed-forward sub-layer has no residual connection: its LayerNorm normalises h + FFN(h), the "
        "attention sub-layer's output added back" + FIRST_BERT),
    "encoder with the LayerNorms swapped": ("bert_encoder", encoder_edit(
        "h = out.LayerNorm(x + ", "h = block.output.LayerNorm(x + ").replace(
        "x = block.output.LayerNorm(h + ", "x = out.LayerNorm(h + "),
        "block 1: your two LayerNorms are swapped: attention.output.LayerNorm follows the attention sub-layer, "
        "output.LayerNorm the feed-forward one" + FIRST_BERT),
    "encoder with the feed-forward on x": ("bert_encoder", encoder_edit(
        "gelu(block.intermediate.dense(h))", "gelu(block.intermediate.dense(x))"),
        "block 1: your feed-forward network reads the block's input x: it reads h, the attention sub-layer's "
        "output after its residual and LayerNorm" + FIRST_BERT),
    "encoder calling the blocks": ("bert_encoder", encoder_edit(
        "        att, out = block.attention.self, block.attention.output\n",
        "        x = block(x, None, False)[0]\n        states.append(x)\n        continue\n"),
        "your function bert_encoder raised RuntimeError: a module of the model (model.encoder.layer[0]) was called "
        "as a whole: compute it from its weights (its Embedding, Linear and LayerNorm layers), which is the point "
        "of the exercise"),
    "encoder rebuilding the model from its config and weights": ("bert_encoder", """\
from course_lib.model.bert import BertModel


def bert_encoder(input_ids, token_type_ids, attention_mask, model):
    rebuilt = BertModel(model.config).eval()
    rebuilt.load_state_dict(model.state_dict())
    return list(rebuilt(input_ids, attention_mask, token_type_ids, output_hidden_states=True).hidden_states)""",
        "your function bert_encoder raised AttributeError: model.config has no vocab_size: the exercise gives only "
        "the parts it names (hidden_size, num_attention_heads, num_hidden_layers here)"),
    "encoder calling the model's class forward": ("bert_encoder", """\
def bert_encoder(input_ids, token_type_ids, attention_mask, model):
    out = type(model).forward(model, input_ids, attention_mask, token_type_ids, output_hidden_states=True)
    return list(out.hidden_states)""",
        "your function bert_encoder raised AttributeError: type object 'ModelParts' has no attribute 'forward'"),
    "encoder copying the model and dropping the refusals": ("bert_encoder", """\
import copy


def bert_encoder(input_ids, token_type_ids, attention_mask, model):
    m = copy.deepcopy(model)
    for module in m.modules():
        module.__dict__.pop("forward", None)
    return list(m(input_ids, attention_mask, token_type_ids, output_hidden_states=True).hidden_states)""",
        "your function bert_encoder raised AttributeError: the model has no modules: the exercise gives only the "
        "parts it names (embeddings, encoder, config here)"),
    "encoder reading the model's state_dict": ("bert_encoder", ENCODER.replace(
        "    emb = model.embeddings\n", "    weights = model.state_dict()\n    emb = model.embeddings\n"),
        "your function bert_encoder raised AttributeError: the model has no state_dict: the exercise gives only the "
        "parts it names (embeddings, encoder, config here)"),
})

# ----------------------------------------------------------------------------- predictions
ROTATION_HINT = ("write q·k without coordinates: |q| |k| cos θ. What does turning both vectors by the same "
                 "rotation do to their lengths and to the angle between them? Then ask whether one product q[d]·k[d] "
                 "can be written without coordinates")
CAUSAL_HINT = ("How far a position's vector moves in block 1 depends on two things: which of its keys the mask hides, "
               "and whether the keys and values it still reads are the ones it read without the mask. Draw the mask "
               "for a short sentence, and ask what block 1's keys and values are computed from")
LIMIT_HINT = ("Tell a hard limit from a price: follow one token through the model, from how its input vector is made "
              "to what each layer does with it, and ask at each step what the model needs for a 513th token, and "
              "whether more memory or time could supply it or only training could")
CASES.update({
    "the first token changes least": ("changes_least", 'changes_least = "first"', "not 'first'. " + CAUSAL_HINT),
    "no token changes less": ("changes_least", 'changes_least = "none"', "not 'none'. " + CAUSAL_HINT),
    "a position instead of a choice": ("changes_least", "changes_least = 0",
                                       "`changes_least` is 0; choose one of 'first', 'middle', 'last', 'none'"),
    "positions zeroed still tell the order": ("word_order", 'word_order = "different, but close"',
                                              "not 'different, but close'. follow one layer. If you swap two input "
                                              "vectors, what happens to the attention weights and outputs of the "
                                              "other tokens, and of the two you swapped? Nothing else in the block "
                                              "knows the index of a token"),
    "BERT-base is BERT-large's size": ("bert_base_size", 'bert_base_size = "340M"',
                                       "not '340M'. which parts of a block hold about d × d weights each, and how "
                                       "many such matrices are there (count the feed-forward's, with d_ff = 4d)? "
                                       "Which part holds |V| × d? Estimate both for BERT-base's d, layers and "
                                       "vocabulary, to one significant figure."),
    "a number instead of a choice": ("bert_base_size", "bert_base_size = 110_000_000",
                                     "`bert_base_size` is 110000000; choose one of '10M', '110M', '340M', '1B'"),
    "a rotation changes the weights": ("rotated_parts", 'rotated_parts = "both change"',
                                       "not 'both change'. " + ROTATION_HINT),
    "the parts belong to the model": ("rotated_parts", 'rotated_parts = "neither changes"',
                                      "not 'neither changes'. " + ROTATION_HINT),
    "the quadratic cost stops 513": ("limit_512", 'limit_512 = "the quadratic cost"',
                                     "not 'the quadratic cost'. " + LIMIT_HINT),
    "the vocabulary stops 513": ("limit_512", 'limit_512 = "the vocabulary"', "not 'the vocabulary'. " + LIMIT_HINT),
})


WRONG_ANSWERS: dict[str, list[tuple[str, str]]] = {}
for _exercise, _source, _hint in CASES.values():
    WRONG_ANSWERS.setdefault(_exercise, []).append((_source, _hint))
