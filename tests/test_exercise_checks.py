"""Properties of particular checks, beyond "the solution passes, the stub is not attempted, wrong answers get their
hint" (tests/test_exercise_registry.py): partial answers, statistical checks that are deterministic and accept every
correct answer, other correct ways to the answer, the library's own functions passing the checks.

Correct answers come from the notebooks' solutions (exercise_notebooks.graded_namespace), never from a copy.
"""
import itertools
import math
import textwrap

import pytest
import torch
import torch.nn.functional as F

from conftest import ROOT
from course_lib.exercises import ch11_3, run_exercise
from exercise_notebooks import graded_namespace

NOTEBOOK_11_1 = ROOT / "notebooks" / "11_1_bidirectional_encoders.py"
NOTEBOOK_11_2 = ROOT / "notebooks" / "11_2_masked_language_modeling.py"
NOTEBOOK_11_3 = ROOT / "notebooks" / "11_3_contextual_embeddings.py"


def answer(notebook, source: str) -> dict:
    """The namespace of ``notebook``'s setup cells with ``source`` (an answer cell) run in it."""
    namespace = graded_namespace(notebook, tags=("setup",))
    exec(textwrap.dedent(source), namespace)
    return namespace


# ----------------------------------------------------------------------------- 11.1

def test_heads_with_only_split_done_says_which_function_is_left():
    namespace = graded_namespace(NOTEBOOK_11_1)  # the notebook's solution of split_heads
    exec("def merge_heads(X):\n    raise NotImplementedError", namespace)
    result = run_exercise("heads", namespace)
    assert result.status == "not attempted"
    assert result.message == "split_heads is correct; now replace `raise NotImplementedError` in merge_heads with your code"


# ----------------------------------------------------------------------------- 11.2

def test_the_library_reference_passes_the_masking_and_loss_checks():
    from course_lib.pretraining.masking import masked_lm_loss, mlm_mask
    from course_lib.pretraining.multilingual import language_sampling_probs

    def mask_tokens(input_ids, special_ids, mask_token_id, unigram, select_prob=0.15, generator=None):
        batch = mlm_mask(input_ids, special_ids=special_ids, mask_token_id=mask_token_id, unigram=unigram,
                         select_prob=select_prob, generator=generator)
        return batch.input_ids, batch.labels

    from course_lib.exercises.core import EXERCISES, run_check

    namespace = {"mask_tokens": mask_tokens, "masked_lm_loss": masked_lm_loss, "language_probs": language_sampling_probs}
    for name in ("mlm_masking", "mlm_loss", "language_sampling"):
        ex = EXERCISES[name]
        assert run_check(ex, {n: namespace[n] for n in ex.needs}).correct, name  # the check itself agrees
        # and check() gives a notebook that hands in the library's own no credit, as the grader does
        message = run_exercise(name, namespace).message
        assert "the library's own implementation" in message or "is course_lib's own" in message, (name, message)


def test_the_masking_check_is_deterministic_and_leaves_the_random_state_alone():
    namespace = graded_namespace(NOTEBOOK_11_2)
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    first = run_exercise("mlm_masking", namespace)
    torch.testing.assert_close(torch.rand(3), expected)
    assert run_exercise("mlm_masking", namespace) == first and first.correct



def test_the_batch_checks_cut_down_tokenizer_splits_its_texts_as_the_full_one_and_mostly_holds_other_pieces():
    from course_lib.checkpoints import embedded_model_dir
    from course_lib.exercises.ch11_2 import BATCH_TEXTS, batch_tokenizer
    from course_lib.pretraining.masking import unigram_distribution
    from course_lib.tokenization.bert_tokenizer import BertTokenizer

    small, full = batch_tokenizer(), BertTokenizer.from_dir(embedded_model_dir())
    assert small.vocab_size < full.vocab_size / 10
    assert f"a vocabulary of {small.vocab_size:,} entries instead of {full.vocab_size:,}" in NOTEBOOK_11_2.read_text()
    assert small.special_ids == full.special_ids and small.mask_token_id == full.mask_token_id
    a, b = small(BATCH_TEXTS), full(BATCH_TEXTS)
    assert torch.equal(a.attention_mask, b.attention_mask) and torch.equal(a.token_type_ids, b.token_type_ids)
    for got, want in zip(a.input_ids, b.input_ids):
        assert small.convert_ids_to_tokens(got) == full.convert_ids_to_tokens(want)
    # a token drawn uniformly from the vocabulary is one `unigram` never draws about nine times in ten
    assert (unigram_distribution(BATCH_TEXTS, tokenizer=small) == 0).float().mean() > 0.9

# ----------------------------------------------------------------------------- 11.3

@pytest.mark.parametrize("seed", range(0, 400, 7))
def test_the_reference_estimate_passes_whatever_the_generator_seed(seed, monkeypatch):
    monkeypatch.setattr(ch11_3, "ANISOTROPY_SEED", seed)
    assert run_exercise("anisotropy", graded_namespace(NOTEBOOK_11_3)).correct


def test_the_exact_expected_cosine_is_the_mean_over_distinct_pairs():
    X = ch11_3.anisotropic_rows(40, 12, 0)
    U = F.normalize(X.double(), dim=-1)
    cos = [float(U[i] @ U[j]) for i in range(40) for j in range(40) if i != j]
    assert ch11_3.expected_cosine(X) == pytest.approx(sum(cos) / len(cos), abs=1e-12)
    assert ch11_3.pair_stats(ch11_3.orthogonal_rows(8, 0))[0] == pytest.approx(0, abs=1e-6)


def test_each_wrong_sampler_is_several_tolerances_from_the_right_answer_and_from_the_others():
    """On the sampling matrix of the anisotropy check every diagnosis is unambiguous: the exact expectations of the
    right sampler and of each wrong one (neighbour pairs, the first or the last row never drawn, self pairs, dot
    products, 1 − cosine) lie more than twice the tolerance apart, so an estimate can match one of them only."""
    n = 10000  # the default n_pairs, with which the check runs this matrix
    Y = ch11_3.sampling_rows()
    values = [("right", ch11_3.expected_cosine(Y), ch11_3.pair_stats(Y)[1])]
    values += [(name, mean, std) for name, mean, std, _ in ch11_3.sampler_variants(Y)]
    assert len(values) == 7
    tol = lambda std: ch11_3.SIGMAS * std / math.sqrt(n) + ch11_3.FLOAT_SLACK  # noqa: E731
    for (a, ma, sa), (b, mb, sb) in itertools.combinations(values, 2):
        assert abs(ma - mb) > 2 * max(tol(sa), tol(sb)), (a, ma, b, mb)
    # the random rows' mean cosine is far from 0.5, where the cosine and 1 − cosine would meet
    for X in (Y, ch11_3.anisotropic_rows(40, 12, 0)):
        assert 0.25 < ch11_3.expected_cosine(X) < 0.35


def test_the_anisotropy_check_leaves_the_random_state_alone():
    namespace = graded_namespace(NOTEBOOK_11_3)
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    assert run_exercise("anisotropy", namespace).correct
    torch.testing.assert_close(torch.rand(3), expected)


OTHER_CORRECT_ANSWERS = {  # other ways to the right answer than the notebook's: none may be called wrong
    "word_vector": """\
def word_vector(hidden_states, word_ids, word):
    idx = torch.tensor([w == word for w in word_ids])
    per_layer = [h[idx].mean(0) for h in hidden_states[len(hidden_states) - 4:]]
    return sum(per_layer) / 4""",
    "sense_centroids": """\
def sense_centroids(vectors, labels):
    out = {}
    for s in sorted(set(labels)):
        mask = torch.tensor([l == s for l in labels])
        out[s] = vectors[mask].sum(0) / mask.sum()
    return out""",
    "nearest_sense": """\
def nearest_sense(vector, centroids):
    labels = list(centroids)
    C = F.normalize(torch.stack([centroids[s] for s in labels]), dim=-1)
    return labels[int((C @ F.normalize(vector, dim=0)).argmax())]""",
    "z_score": """\
def z_score(X, corpus, eps=1e-6):
    mu, sigma = corpus.mean(0), corpus.std(0, unbiased=False)
    z = (X - mu) / sigma
    z[:, sigma <= eps] = 0
    return z""",
    "anisotropy": """\
def anisotropy_estimate(X, n_pairs=10000, generator=None):
    N = len(X)
    i = torch.randint(N, (n_pairs,), generator=generator)
    j = torch.randint(N - 1, (n_pairs,), generator=generator)
    j = j + (j >= i)
    return F.cosine_similarity(X[i], X[j], dim=-1).mean()""",
    "anisotropy (pairs i == j dropped)": """\
def anisotropy_estimate(X, n_pairs=10000, generator=None):
    i = torch.randint(len(X), (n_pairs,), generator=generator)
    j = torch.randint(len(X), (n_pairs,), generator=generator)
    keep = i != j
    return F.cosine_similarity(X[i[keep]], X[j[keep]], dim=-1).mean().item()""",
}


@pytest.mark.parametrize("case", OTHER_CORRECT_ANSWERS)
def test_other_correct_answers_pass(case):
    result = run_exercise(case.split()[0], answer(NOTEBOOK_11_3, OTHER_CORRECT_ANSWERS[case]))
    assert result.correct, result


@pytest.mark.parametrize("typed", ["ln |V|", "  LN|v| ", "ln | V |"])
def test_a_prediction_typed_with_other_case_or_spaces_is_the_choice(typed):
    from course_lib.exercises.core import EXERCISES, run_check

    assert run_check(EXERCISES["loss_at_start"], {"loss_at_start": typed}).correct
    assert not run_check(EXERCISES["loss_at_start"], {"loss_at_start": "the unigram"}).correct


@pytest.mark.parametrize("typed, choice", [("CLS", "[CLS]"), ("cls", "[CLS]"), ("[cls]", "[CLS]"), ("499500", "499,500"),
                                           ("499,500", "499,500")])
def test_a_prediction_typed_without_brackets_or_thousands_separators_is_the_choice(typed, choice):
    """A reviewer's "CLS" for "[CLS]" and "499500" for "499,500" were refused while " mean " passed."""
    from course_lib.exercises.core import EXERCISES, _fold, question

    q = question("folding", variable="folding", choices=[choice, "mean", "1.5%"], answer=choice, why="w", hint="h")
    try:
        assert q.run(folding=typed) == "w" and _fold("0,5") == "0,5"  # a decimal comma is not a thousands separator
        with pytest.raises(Exception, match="choose one of"):
            q.run(folding="CLS2")
    finally:
        EXERCISES.pop("folding", None)  # the registry is the notebooks' exercises only


def test_choices_that_differ_only_in_case_or_spaces_are_refused():
    from course_lib.exercises.core import question

    with pytest.raises(ValueError, match="differ only in case or spaces"):
        question("twins", variable="twins", choices=["ln|V|", "ln |V|"], answer="ln|V|", why="w", hint="h")
