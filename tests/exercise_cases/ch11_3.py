"""Known-wrong answers to the exercises of notebook 11.3 (notebooks/11_3_contextual_embeddings.py).

Each case is a whole answer cell with one mistake; tests/test_exercise_registry.py runs it after the notebook's
``setup`` cells and checks that the message contains the hint given here.
"""

WV = "def word_vector(hidden_states, word_ids, word):\n    idx = [t for t, w in enumerate(word_ids) if w == word]\n"
LAST4 = "    last4 = torch.stack(hidden_states[-4:]).mean(0)\n"
WV_CASE = " (hidden_states: 7 tensors (9, 5), word_ids [None, 0, 1, 1, 1, 2, 3, 3, None], word 1)"
SC = "def sense_centroids(vectors, labels):\n    senses = list(dict.fromkeys(labels))\n"
MEMBERS = "vectors[[i for i, l in enumerate(labels) if l == s]]"
SC_CASE = " (vectors (9, 4), 3 senses)"
NS = "def nearest_sense(vector, centroids):\n"
COS = "F.cosine_similarity(vector, centroids[s], dim=0).item()"
NS_CASE = " (vector of norm 2, 4 centroids; cosines: bank.n.01 0.71, bank.n.02 1.00, bank.n.03 0.55, bank.n.04 -0.99)"
Z = "def z_score(X, corpus, eps=1e-6):\n    mu = corpus.mean(0)\n    sigma = ((corpus - mu) ** 2).mean(0).sqrt()\n"
Z_KEEP = "    return torch.where(sigma > eps, {}, torch.zeros_like(X))"
Z_CASE = " (X (3, 6), corpus (5, 6), default eps, dimension 3 constant)"
Z_CASE2 = " (X (2, 4), corpus (7, 4), eps = 0.01, dimension 2 constant)"
AN = "def anisotropy_estimate(X, n_pairs=10000, generator=None):\n"
DISTINCT = """\
    i = torch.randint(len(X), (n_pairs,), generator=generator)
    j = (i + torch.randint(1, len(X), (n_pairs,), generator=generator)) % len(X)
"""
ORTHO_CASE = " (8 orthogonal rows, n_pairs=2000)"
# anisotropy_by_layer runs after the setup cells only: its cases bring correct anisotropy_estimate and z_score
HELPERS = AN + """\
    i = torch.randint(len(X), (n_pairs,), generator=generator)
    j = (i + torch.randint(1, len(X), (n_pairs,), generator=generator)) % len(X)
    Xn = F.normalize(X, dim=-1)
    return (Xn[i] * Xn[j]).sum(-1).mean().item()


""" + Z + """\
    ok = sigma > eps
    return torch.where(ok, (X - mu) / torch.where(ok, sigma, torch.ones_like(sigma)), torch.zeros_like(X))


"""
BY_LAYER = """\
def anisotropy_by_layer(scored, fitted, n_pairs=10000, generator=None):
    out = []
    for layer in range(scored.size(1)):
        X = scored[:, layer]
        fit = {fit}
        raw = anisotropy_estimate(X, n_pairs, generator)
        z = anisotropy_estimate(z_score(X, fit), n_pairs, generator)
        out.append((raw, z))
    return out"""
BL_CASE = " (scored (40, 3, 8), fitted (60, 3, 8), n_pairs=4000)"
ROWS_CASE = " (X (40, 12) with rows of different norms, the default n_pairs)"
SAMPLING_CASE = " (X (6, 7), the first row along the rows' common direction and the last across it, the default n_pairs)"
KEEP_DISTINCT = """\
    keep = i != j
    Xn = F.normalize(X, dim=-1)
    return (Xn[i[keep]] * Xn[j[keep]]).sum(-1).mean().item()"""

CASES = {  # case -> (exercise, source of a wrong answer, a part of the message it must get)
    # ------------------------------------------------------------------ word_vector
    "last layer only": ("word_vector", WV + "    return hidden_states[-1][idx].mean(0)",
        "you used only the last layer, hidden_states[-1]: the feature is the average of the last four layers' "
        "vectors of the word, one vector per layer, averaged element by element" + WV_CASE),
    "last four layers summed": ("word_vector", WV + "    return torch.stack(hidden_states[-4:]).sum(0)[idx].mean(0)",
        "you summed the last four layers: this exercise asks for their mean — summing is common too and gives the "
        "same cosines, since the sum is 4 × the mean, but not the same vector" + WV_CASE),
    "four layers before the last": ("word_vector",
                                    WV + "    return torch.stack(hidden_states[-5:-1]).mean(0)[idx].mean(0)",
        "you averaged hidden_states[2:6] (layers 2…5): average the last four, hidden_states[-4:] (layers 3…6; "
        "hidden_states[0] is the embedding layer and hidden_states[-4] the first of the last four)" + WV_CASE),
    "last five layers": ("word_vector", WV + "    return torch.stack(hidden_states[-5:]).mean(0)[idx].mean(0)",
        "you averaged hidden_states[2:7] (layers 2…6)"),
    "only hidden_states[-4]": ("word_vector", WV + "    return hidden_states[-4][idx].mean(0)",
        "you used only hidden_states[-4] (layer 3), the first of the last four layers: average all four, "
        "one vector per layer, element by element" + WV_CASE),
    "first subword only": ("word_vector", WV + LAST4 + "    return last4[idx[0]]",
        "you took only the first subword token of word 1; word 1 is split into 3 tokens, at positions [2, 3, 4]: "
        "average over all of them" + WV_CASE),
    "subwords summed": ("word_vector", WV + LAST4 + "    return last4[idx].sum(0)",
        "you summed the word's 3 subword tokens: average them" + WV_CASE),
    "[CLS] and [SEP] included": ("word_vector", WV.replace("w == word]", "w == word or w is None]") + LAST4
                                 + "    return last4[idx].mean(0)",
        "you included [CLS] and [SEP] (their word id is None): keep only the tokens whose word id is 1" + WV_CASE),
    "the whole sentence averaged": ("word_vector", WV + LAST4 + "    return last4.mean(0)",
        "you averaged all 9 tokens of the sentence, [CLS] and [SEP] included: keep only the tokens whose word id is 1"
        + WV_CASE),
    "token index instead of word index": ("word_vector", WV + LAST4 + "    return last4[word]",
        "you took token number 1, which is a token of word 0: `word` counts words, not tokens; word 1 is split into "
        "3 tokens, at positions [2, 3, 4] (word_ids[t] == 1)" + WV_CASE),
    "word index shifted past [CLS]": ("word_vector", WV.replace("w == word]", "w == word + 1]") + LAST4
                                      + "    return last4[idx].mean(0)",
        "you took the tokens of word 2 (positions [5]), not those of word 1; word 1 is split into 3 tokens"),
    "last layer and first subword": ("word_vector", WV + "    return hidden_states[-1][idx[0]]",
        "you used only the last layer, hidden_states[-1]: the feature is the average of the last four layers' "
        "vectors of the word, one vector per layer, averaged element by element; and you took only the first "
        "subword token of word 1"),
    "one vector per subword": ("word_vector", WV + LAST4 + "    return last4[idx]",
        "expected shape (5,), got (3, 5) for the word vector" + WV_CASE + ": one vector per subword token; average "
        "over the word's 3 tokens"),
    "one vector per layer": ("word_vector", WV + "    return torch.stack(hidden_states[-4:])[:, idx].mean(1)",
        "expected shape (5,), got (4, 5) for the word vector" + WV_CASE + ": one vector per layer; average the last "
        "four layers"),
    "keepdim": ("word_vector", WV + LAST4 + "    return last4[idx].mean(0, keepdim=True)",
        "expected shape (5,), got (1, 5) for the word vector" + WV_CASE + ": one vector per word, (d,): the average should not keep an axis of length 1"),
    "word_ids made a tensor": ("word_vector", WV + LAST4 + """\
    return last4[torch.tensor(word_ids) == word].mean(0)""",
        "your function word_vector raised RuntimeError: Could not infer dtype of NoneType" + WV_CASE + ": word_ids "
        "holds None for [CLS] and [SEP], so it cannot become a tensor"),
    "layers summed in place": ("word_vector", WV + """\
    acc = hidden_states[-4]
    for h in hidden_states[-3:]:
        acc += h
    return (acc / 4)[idx].mean(0)""", "word_vector changed its inputs in place" + WV_CASE),
    # ------------------------------------------------------------------ sense_centroids
    "squeezed before the mean (a sense seen once)": ("sense_centroids", SC
                                                      + f"    return {{s: {MEMBERS}.squeeze().mean(0) for s in senses}}",
        "(vectors (3, 5), 2 senses)"),
    "sum instead of mean": ("sense_centroids", SC + f"    return {{s: {MEMBERS}.sum(0) for s in senses}}",
        "the centroid of 'bank.n.02' is the sum of its 4 vectors" + SC_CASE + ": eq. 11.8 averages them (divide by "
        "the number of vectors, 4)"),
    "first vector of each sense": ("sense_centroids", SC + "    return {s: vectors[labels.index(s)] for s in senses}",
        "the centroid of 'bank.n.02' is one of its 4 vectors (a medoid, or the first?)" + SC_CASE),
    "medoid": ("sense_centroids", SC + f"""\
    out = {{}}
    for s in senses:
        V = {MEMBERS}
        out[s] = V[(V - V.mean(0)).norm(dim=-1).argmin()]
    return out""", "the centroid of 'bank.n.02' is one of its 4 vectors (a medoid, or the first?)" + SC_CASE),
    "mean of all the vectors": ("sense_centroids", SC + "    return {s: vectors.mean(0) for s in senses}",
        "the centroid of 'bank.n.02' is the mean of all 9 vectors" + SC_CASE + ": average only the vectors labelled "
        "'bank.n.02'"),
    "labels and means paired in different orders": ("sense_centroids", SC + f"""\
    means = [{MEMBERS}.mean(0) for s in senses]
    return dict(zip(sorted(set(labels)), means))""",
        "under the key 'bank.n.02' you put the mean of the vectors labelled 'bank.n.01'" + SC_CASE),
    "a list": ("sense_centroids", SC + f"    return [{MEMBERS}.mean(0) for s in senses]",
        "sense_centroids should return a dict {label: (d,) centroid}, got a list" + SC_CASE),
    "a tensor": ("sense_centroids", SC + f"    return torch.stack([{MEMBERS}.mean(0) for s in senses])",
        "sense_centroids should return a dict {label: (d,) centroid}, got a tensor of shape (3, 4)" + SC_CASE),
    "a pair like the library's": ("sense_centroids", SC + f"""\
    return senses, torch.stack([{MEMBERS}.mean(0) for s in senses])""",
        "sense_centroids should return a dict {label: centroid}, got a pair" + SC_CASE + ", as "
        "course_lib.embeddings.sense_centroids returns (senses, tensor)"),
    "numbers as keys": ("sense_centroids", SC + f"    return {{k: {MEMBERS}.mean(0) for k, s in enumerate(senses)}}",
        "the keys should be the sense labels ('bank.n.02', 'bank.n.01', 'bank.n.09'), not numbers [0, 1, 2]"),
    "a sense missing": ("sense_centroids", SC + f"    return {{s: {MEMBERS}.mean(0) for s in set(labels[:3])}}",
        "there is no centroid for the sense 'bank.n.09'" + SC_CASE),
    "the vectors, not their mean": ("sense_centroids", SC + f"    return {{s: {MEMBERS} for s in senses}}",
        "the value for 'bank.n.02' holds its 4 vectors" + SC_CASE + ": return their mean, one (d,) vector "
        "averaged over the rows"),
    "normalised before averaging": ("sense_centroids", SC + f"    return {{s: F.normalize({MEMBERS}, dim=-1).mean(0) "
                                    "for s in senses}",
        "you normalised the vectors of 'bank.n.02' before averaging them" + SC_CASE),
    # ------------------------------------------------------------------ nearest_sense
    "dot product": ("nearest_sense", NS + "    return max(centroids, key=lambda s: (vector @ centroids[s]).item())",
        "you chose 'bank.n.03', the centroid with the largest dot product; the cosine divides by the norms and "
        "chooses 'bank.n.02'" + NS_CASE),
    "Euclidean distance": ("nearest_sense", NS + "    return min(centroids, key=lambda s: "
                                                 "(vector - centroids[s]).norm().item())",
        "you chose 'bank.n.01', the centroid nearest by Euclidean distance; eq. 11.9 takes the highest cosine, "
        "'bank.n.02'" + NS_CASE),
    "lowest cosine": ("nearest_sense", NS + f"    return min(centroids, key=lambda s: {COS})",
        "you chose 'bank.n.04', the centroid with the lowest cosine: take the highest (max, not min), 'bank.n.02'"
        + NS_CASE),
    "largest cosine in absolute value": ("nearest_sense", NS + f"    return max(centroids, key=lambda s: abs({COS}))",
        "you chose 'die.v.01', whose cosine is the largest in absolute value but negative: it points the opposite "
        "way; eq. 11.9 takes the highest cosine, 'die.n.01'"),
    "the index": ("nearest_sense", NS + """\
    C = torch.stack(list(centroids.values()))
    return int(F.cosine_similarity(vector[None], C).argmax())""",
        "nearest_sense returned 1, a position" + NS_CASE + ": return the label, list(centroids)[1] = 'bank.n.02'"),
    "the index as a tensor": ("nearest_sense", NS + """\
    C = torch.stack(list(centroids.values()))
    return F.cosine_similarity(vector[None], C).argmax()""", "nearest_sense returned 1, a position"),
    "the score": ("nearest_sense", NS + f"    return max({COS} for s in centroids)",
        "nearest_sense returned the number 0.995 (a score?)" + NS_CASE),
    "(label, score)": ("nearest_sense", NS + f"""\
    best = max(centroids, key=lambda s: {COS})
    s = best
    return best, {COS}""", "nearest_sense should return only the label, got a tuple of 2" + NS_CASE),
    "normalised in place": ("nearest_sense", NS + f"""\
    vector /= vector.norm()
    return max(centroids, key=lambda s: {COS})""",
        "nearest_sense changed its inputs in place (normalising with /= ?)" + NS_CASE),
    # ------------------------------------------------------------------ z_score
    "the threshold on the variance, not on sigma": ("z_score", """\
def z_score(X, corpus, eps=1e-6):
    mu, sigma = corpus.mean(0), corpus.std(0, unbiased=False)
    return torch.where(sigma ** 2 > eps, (X - mu) / sigma, torch.zeros_like(X))""",
        "dimension 3 is all 0, but its σ = 0.05 is above eps = 0.01, so it is standardized (X (3, 5), corpus (6, 5), "
        "eps = 0.01, dimension 0 constant): compare σ itself with eps, not its square"),
    "fitted on X": ("z_score", """\
def z_score(X, corpus, eps=1e-6):
    mu, sigma = X.mean(0), X.std(0, unbiased=False)
    return torch.where(sigma > eps, (X - mu) / sigma, torch.zeros_like(X))""",
        "you fitted μ and σ on X: fit them on the corpus, then standardize X with them" + Z_CASE),
    "sample standard deviation": ("z_score", """\
def z_score(X, corpus, eps=1e-6):
    mu, sigma = corpus.mean(0), corpus.std(0)
    return torch.where(sigma > eps, (X - mu) / sigma, torch.zeros_like(X))""",
        "you divided by the sample standard deviation (÷ N−1 = 4); eq. 11.11 divides by |C| = 5: "
        "the population standard deviation, not the sample one" + Z_CASE),
    "divided by the variance": ("z_score", Z + Z_KEEP.format("(X - mu) / sigma ** 2"),
        "you divided by the variance σ²: divide by σ, its square root" + Z_CASE),
    "mean not subtracted": ("z_score", Z + Z_KEEP.format("X / sigma"),
        "you did not subtract the mean μ: z = (x − μ) / σ" + Z_CASE),
    "not divided by sigma": ("z_score", Z + Z_KEEP.format("X - mu"),
        "you did not divide by σ: z = (x − μ) / σ" + Z_CASE),
    "one mean and sigma for everything": ("z_score", """\
def z_score(X, corpus, eps=1e-6):
    return (X - corpus.mean()) / corpus.std(unbiased=False)""",
        "you took one mean and one σ over all the numbers of the corpus: fit one μ and one σ per dimension, each "
        "over the corpus's rows"
        + Z_CASE),
    "constant dimension divided by 0": ("z_score", Z + "    return (X - mu) / sigma",
        "z[0, 3] is inf: dimension 3 is constant over the corpus (σ = 0)" + Z_CASE + "; a dimension whose σ <= eps has "
        "nothing to standardise"),
    "sigma + eps": ("z_score", Z + "    return (X - mu) / (sigma + eps)",
        "z[0, 3] is 1.25e+06, expected 0: dimension 3 has σ = 0 <= eps (the default eps = 1e-6)" + Z_CASE
        + "; set such dimensions to 0 rather than dividing by eps or by σ + eps"),
    "only sigma == 0 zeroed": ("z_score", Z + "    return torch.where(sigma > 0, (X - mu) / sigma, torch.zeros_like(X))",
        "dimension 1 has σ = 0.00083 <= eps (eps = 0.01)" + Z_CASE2 + "; set such dimensions to 0: decide by "
        "comparing σ with the eps you were given, not with 0"),
    "X changed in place": ("z_score", Z + "    X -= mu\n" + Z_KEEP.format("X / sigma"),
        "z_score changed X in place (X -= … ?)" + Z_CASE),
    # ------------------------------------------------------------------ anisotropy
    "a row paired with itself": ("anisotropy", AN + """\
    i = torch.randint(len(X), (n_pairs,), generator=generator)
    j = torch.randint(len(X), (n_pairs,), generator=generator)
    return F.cosine_similarity(X[i], X[j], dim=-1).mean().item()""",
        "yours is about 1/N = 0.125, as if some pairs were a row with itself (cosine 1): draw the second row of each "
        "pair among the N − 1 rows other than the first"),
    "every pair, the diagonal included": ("anisotropy", AN + """\
    U = F.normalize(X, dim=-1)
    return (U @ U.T).mean().item()""",
        "the estimate is 0.1250, expected 0: the cosine of two different rows is 0 for every pair" + ORTHO_CASE
        + "; yours is about 1/N = 0.125"),
    "dot products": ("anisotropy", AN + DISTINCT + "    return (X[i] * X[j]).sum(-1).mean().item()",
        "but the expected cosine of two different rows is 0.3242; an estimate from 10000 pairs falls within ±0.015 of "
        "it" + SAMPLING_CASE + ": yours is the mean dot product; normalise each row to length 1 first"),
    "neighbouring rows paired": ("anisotropy", AN + """\
    i = torch.randint(len(X), (n_pairs,), generator=generator)
    j = (i + 1) % len(X)
    return F.cosine_similarity(X[i], X[j], dim=-1).mean().item()""",
        "the estimate is 0.3852, but the expected cosine of two different rows is 0.3242; an estimate from 10000 "
        "pairs falls within ±0.015 of it" + SAMPLING_CASE
        + ": yours is the mean cosine of neighbouring rows (each row with the next one): the second row of a pair "
        "must be drawn at random too, from the rows other than the first"),
    "the last row never drawn": ("anisotropy", AN + """\
    i = torch.randint(len(X) - 1, (n_pairs,), generator=generator)
    j = torch.randint(len(X) - 1, (n_pairs,), generator=generator)
""" + KEEP_DISTINCT,
        SAMPLING_CASE + ": yours is about the mean over the pairs that leave out the last row, as if rows were drawn "
        "only among the first N − 1 = 5: the upper bound of a random integer draw is excluded"),
    "the first row never drawn": ("anisotropy", AN + """\
    i = torch.randint(1, len(X), (n_pairs,), generator=generator)
    j = torch.randint(1, len(X), (n_pairs,), generator=generator)
""" + KEEP_DISTINCT,
        SAMPLING_CASE + ": yours is about the mean over the pairs that leave out the first row"),
    "the first row seldom drawn (only i < j)": ("anisotropy", AN + """\
    i = torch.randint(len(X) - 1, (n_pairs,), generator=generator)
    j = i + 1 + (torch.rand(n_pairs, generator=generator) * (len(X) - 1 - i)).long()
    return F.cosine_similarity(X[i], X[j], dim=-1).mean().item()""",
        SAMPLING_CASE + ": yours is about the mean over the pairs that leave out the first row: is row 0 drawn less "
        "often than the others, or never?"),
    "one minus the cosine": ("anisotropy", AN + DISTINCT + "    return 1 - F.cosine_similarity(X[i], X[j]).mean().item()",
        "yours is 1; is it 1 − cosine, a distance?"),
    "generator ignored": ("anisotropy", AN + DISTINCT.replace(", generator=generator", "")
                          + "    return F.cosine_similarity(X[i], X[j]).mean().item()",
        "two calls with generators seeded alike (seed 11) gave"),
    "torch's global generator, reseeded from the one given": ("anisotropy", AN + """\
    if generator is not None:
        torch.manual_seed(int(torch.randint(2 ** 62, (1,), generator=generator)))
""" + DISTINCT.replace(", generator=generator", "") + "    return F.cosine_similarity(X[i], X[j]).mean().item()",
        "your function changed torch's global random generator (torch.manual_seed, or a draw without generator=). "
        "The estimates look right"),
    "a collision moved to the next row": ("anisotropy", AN + """\
    i = torch.randint(len(X), (n_pairs,), generator=generator)
    j = torch.randint(len(X), (n_pairs,), generator=generator)
    j = torch.where(j == i, (j + 1) % len(X), j)
    return F.cosine_similarity(X[i], X[j], dim=-1).mean().item()""",
        "on the four rows u, 2v, 3u, v/2 (u ⟂ v) the estimate is 0.2"),
    "a neighbour never drawn (offsets 2 to N - 1)": ("anisotropy", AN + """\
    i = torch.randint(len(X), (n_pairs,), generator=generator)
    j = (i + torch.randint(2, len(X), (n_pairs,), generator=generator)) % len(X)
    return F.cosine_similarity(X[i], X[j], dim=-1).mean().item()""",
        "it should be close to 0.3333: given the first row, each of the N − 1 others must be equally likely"),
    "the global generator reseeded, generator ignored": ("anisotropy", AN + """\
    torch.manual_seed(0)
""" + DISTINCT.replace(", generator=generator", "") + "    return F.cosine_similarity(X[i], X[j]).mean().item()",
        "gave the same estimate, 0.3"),
    "the cosines, not their mean": ("anisotropy", AN + DISTINCT + "    return F.cosine_similarity(X[i], X[j])",
        "anisotropy_estimate returned a tensor of shape (2000,)" + ORTHO_CASE + ": return the mean of the cosines"),
    "X normalised in place": ("anisotropy", AN + DISTINCT + """\
    X /= X.norm(dim=-1, keepdim=True)
    return (X[i] * X[j]).sum(-1).mean().item()""",
        "anisotropy_estimate changed X in place (normalising with /= ?)" + ORTHO_CASE),
    "n_pairs ignored": ("anisotropy", AN + DISTINCT.replace("(n_pairs,)", "(10000,)")
                        + "    return F.cosine_similarity(X[i], X[j]).mean().item()",
        "with n_pairs=1 the estimate should be the cosine of one pair of different rows"),
    "the exact mean, no sampling": ("anisotropy", AN + """\
    U = F.normalize(X, dim=-1)
    N = len(X)
    return ((U.sum(0) @ U.sum(0) - N) / (N * (N - 1))).item()""",
        "with n_pairs=1 your estimate is 0.3057, the exact mean over all pairs (X (40, 12), n_pairs=1): the exercise "
        "asks for an estimate from n_pairs random pairs, drawn with generator"),
    # ------------------------------------------------------------------ anisotropy_by_layer (composes the two above)
    "z-scoring fitted on the scored tokens": ("anisotropy_by_layer", HELPERS + BY_LAYER.format(fit="X"),
        BL_CASE + ": you fitted μ and σ on the scored tokens themselves"),
    "z-scoring fitted on both sets": ("anisotropy_by_layer",
                                      HELPERS + BY_LAYER.format(fit="torch.cat([X, fitted[:, layer]])"),
        "you fitted μ and σ on the scored and the fitted tokens together; fit them on fitted[:, layer] only"),
    "pairs swapped": ("anisotropy_by_layer", HELPERS + BY_LAYER.format(fit="fitted[:, layer]").replace(
        "out.append((raw, z))", "out.append((z, raw))"),
        "each pair is (z_scored, raw); return (raw, z_scored)"),
    "L0 left out": ("anisotropy_by_layer", HELPERS + BY_LAYER.format(fit="fitted[:, layer]").replace(
        "range(scored.size(1))", "range(1, scored.size(1))"),
        "anisotropy_by_layer returned 2 entries for 3 layers" + BL_CASE + ": one pair per layer, L0"),
    "two lists": ("anisotropy_by_layer", HELPERS + BY_LAYER.format(fit="fitted[:, layer]").replace(
        "    return out", "    return [r for r, _ in out], [z for _, z in out]"),
        "did you return (raws, z_scoreds) as two lists?"),
    "not z-scored": ("anisotropy_by_layer", HELPERS + BY_LAYER.format(fit="fitted[:, layer]").replace(
        "z = anisotropy_estimate(z_score(X, fit), n_pairs, generator)", "z = anisotropy_estimate(X, n_pairs, generator)"),
        "the z-scored values equal the raw ones"),
    # an expert review: these two got "the z-scored values equal the raw ones" and "you fitted μ and σ on the scored
    # tokens", which misdiagnosed what they did
    "z-scored with one overall mean and std": ("anisotropy_by_layer", HELPERS + BY_LAYER.format(fit="fitted[:, layer]")
                                               .replace("z_score(X, fit)", "(X - fit.mean()) / fit.std()"),
        "you z-scored with one μ and one σ for the whole matrix"),
    "the fitted tokens z-scored with their own statistics": ("anisotropy_by_layer",
                                                             HELPERS + BY_LAYER.format(fit="fitted[:, layer]")
                                                             .replace("z_score(X, fit)", "z_score(fit, fit)"),
        "your z-scored values are those of the fitted tokens, z-scored with their own μ and σ"),
    "raw anisotropy of the fitted tokens": ("anisotropy_by_layer", HELPERS + BY_LAYER.format(fit="fitted[:, layer]")
                                            .replace("raw = anisotropy_estimate(X,", "raw = anisotropy_estimate(fit,"),
        "your raw values are the fitted tokens' anisotropy; score scored[:, layer]"),
    # ------------------------------------------------------------------ predictions
    "random encoder beats MFS by far": ("random_wsd", 'random_wsd = "well above it (by 10 points or more)"',
        "not 'well above it (by 10 points or more)'. At initialisation every weight matrix is small and random"),
    "random encoder far below MFS": ("random_wsd", 'random_wsd = "well below it (by 10 points or more)"',
        "How much does one block change the vector it gets"),
    "a number instead of a choice": ("random_wsd", "random_wsd = 40",
        "`random_wsd` is 40; choose one of 'well above it (by 10 points or more)', 'about level with it (within a few points)', 'well below it (by 10 points or more)'"),
    "course-bert most anisotropic": ("most_anisotropic", 'most_anisotropic = "course-bert"',
        "not 'course-bert'. Anisotropy is the expected cosine of two random tokens"),
    "MiniLM most anisotropic": ("most_anisotropic", 'most_anisotropic = "all-MiniLM-L6-v2"',
        "and how much of that survives the blocks in each of the three models?"),
    "a misspelt model": ("most_anisotropic", 'most_anisotropic = "random"',
        "`most_anisotropic` is 'random'; choose one of 'course-bert', 'all-MiniLM-L6-v2', 'random init'"),
}

# wsd_predict runs after the setup cells only: its cases bring correct sense_centroids and nearest_sense
WSD_HELPERS = SC + f"    return {{s: {MEMBERS}.mean(0) for s in senses}}\n\n" + NS + f"    return max(centroids, key=lambda s: {COS})\n\n"
WSD = "def wsd_predict(train_vectors, train_senses, train_lemmas, test_vectors, test_lemmas):\n"
WSD_CASE = (" (10 training vectors of 'bank' and 'mouse', 7 test vectors ('bank', 'bank', 'mouse', 'mouse', 'bank', "
            "'mouse', 'bank'))")
CASES.update({
    "senses of every word": ("wsd_predict", WSD_HELPERS + WSD + "    c = sense_centroids(train_vectors, train_senses)\n"
                             "    return [nearest_sense(v, c) for v in test_vectors]",
                             "test vector 1 is an occurrence of 'bank' but got 'animal', a sense of another word"
                             + WSD_CASE + ": eq. 11.9 chooses among the senses of the test word's own lemma"),
    "dot product": ("wsd_predict", WSD_HELPERS + WSD + """\
    out = []
    for v, lemma in zip(test_vectors, test_lemmas):
        idx = [i for i, l in enumerate(train_lemmas) if l == lemma]
        c = sense_centroids(train_vectors[idx], [train_senses[i] for i in idx])
        out.append(max(c, key=lambda s: float(v @ c[s])))
    return out""", "your predictions are those of the largest dot product" + WSD_CASE),
    "training vectors normalised before averaging": ("wsd_predict", WSD_HELPERS + WSD + """\
    train_vectors = F.normalize(train_vectors, dim=-1)
    out = []
    for v, lemma in zip(test_vectors, test_lemmas):
        idx = [i for i, l in enumerate(train_lemmas) if l == lemma]
        c = sense_centroids(train_vectors[idx], [train_senses[i] for i in idx])
        out.append(nearest_sense(v, c))
    return out""", "your predictions are those of centroids of unit-length training vectors, normalised before "
                   "averaging" + WSD_CASE + ": eq. 11.8 averages the vectors as they are"),
    "nearest single training vector": ("wsd_predict", WSD_HELPERS + WSD + """\
    out = []
    for v, lemma in zip(test_vectors, test_lemmas):
        idx = [i for i, l in enumerate(train_lemmas) if l == lemma]
        cos = F.cosine_similarity(train_vectors[idx], v[None], dim=-1)
        out.append(train_senses[idx[int(cos.argmax())]])
    return out""", "your predictions are those of the nearest single training vector" + WSD_CASE),
    "most frequent sense": ("wsd_predict", WSD_HELPERS + WSD + """\
    from collections import Counter
    mfs = {l: Counter(s for s, m in zip(train_senses, train_lemmas) if m == l).most_common(1)[0][0] for l in train_lemmas}
    return [mfs[l] for l in test_lemmas]""", "every test vector got its word's most frequent sense" + WSD_CASE),
    "one answer for all": ("wsd_predict", WSD_HELPERS + WSD + """\
    idx = [i for i, l in enumerate(train_lemmas) if l == test_lemmas[0]]
    c = sense_centroids(train_vectors[idx], [train_senses[i] for i in idx])
    return nearest_sense(test_vectors.mean(0), c)""", "wsd_predict should return a list of sense labels, one per test "
                                                      "vector, got str" + WSD_CASE),
    "first lemma's centroids for all": ("wsd_predict", WSD_HELPERS + WSD + """\
    idx = [i for i, l in enumerate(train_lemmas) if l == train_lemmas[0]]
    c = sense_centroids(train_vectors[idx], [train_senses[i] for i in idx])
    return [nearest_sense(v, c) for v in test_vectors]""", "test vector 2 is an occurrence of 'mouse' but got 'river'"),
})


WRONG_ANSWERS: dict[str, list[tuple[str, str]]] = {}
for _exercise, _source, _hint in CASES.values():
    WRONG_ANSWERS.setdefault(_exercise, []).append((_source, _hint))
