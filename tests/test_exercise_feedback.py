"""Feedback of the exercises of 11.4a and 11.5 that must explain the idea without handing over code or the answer
(hints a review found giving the code, the formula or the row), run on answers written here."""
import torch

from course_lib.exercises import run_exercise


# ----------------------------------------------------------------------------- feedback that explains, not hands over

def _freeze(first: bool):
    def freeze_all_but_last(model, k):
        model.requires_grad_(False)
        model.classifier.requires_grad_(True)
        blocks = model.bert.encoder.layer
        for block in (blocks[:k] if first else blocks[-k:]):
            block.requires_grad_(True)
    return freeze_all_but_last


def test_the_freeze_hints_name_no_code_and_explain_the_minus_zero_slice():
    """Training the first k blocks was told `model.bert.encoder.layer[-1:]`; a student who then wrote layer[-k:]
    failed at k = 0 (every block trains: [-0:] is the whole list) with a parenthetical about the starting state."""
    first = run_exercise("freeze_last_k", {"freeze_all_but_last": _freeze(first=True)})
    assert not first.correct and "those are the first" in first.message
    minus_k = run_exercise("freeze_last_k", {"freeze_all_but_last": _freeze(first=False)})
    assert not minus_k.correct and "k = 0" in minus_k.message and "starts at -0 starts at 0" in minus_k.message
    for message in (first.message, minus_k.message):
        assert "layer[" not in message and "model." not in message and "they may start either way" not in message


def test_the_all_pairs_hint_gives_no_formula_and_the_explanation_names_the_order():
    from course_lib.exercises import EXERCISES

    wrong = run_exercise("all_pairs_prediction", {"passes_guess": "1,000,000"})
    assert not wrong.correct
    for formula in ("n(n", "/ 2", "each pair once", "n²", "half"):
        assert formula not in wrong.message, formula
    why = EXERCISES["all_pairs_prediction"].why
    assert "499,500" in why and "both" in why and "order" in why


def test_the_sbo_hints_do_not_give_the_row():
    """P[i - s - 1] was told "the last part should be p_(i-s+1), row i - s of P": the answer."""
    base = lambda z, s, e, i, P, k: torch.cat([z[s - 1], z[e + 1], P[k]])  # noqa: E731
    for row in (lambda i, s, e: i - s - 1, lambda i, s, e: e - i, lambda i, s, e: i - s + 1):
        result = run_exercise("sbo_input", {"build_sbo_input": lambda z, s, e, i, P, row=row: base(z, s, e, i, P,
                                                                                                    row(i, s, e))})
        assert not result.correct
        assert "row i - s" not in result.message and "P[i" not in result.message, result.message


def test_a_helper_left_as_a_stub_is_named_not_the_answer_that_calls_it():
    """An auditor: 11.4b's predicted_entities was told to replace its own NotImplementedError when only the
    read_entities it calls was unwritten. In the kernel (check()) and through the sandbox's reply alike."""
    import course_lib.exercises.ch11_1  # noqa: F401 (registers the exercises)
    from course_lib.exercises import calls
    from course_lib.exercises.core import run_exercise
    from course_lib.exercises.remote import _rebuilt
    from course_lib.exercises.worker import _raised

    namespace: dict = {}
    exec("def read_rows(X):\n    raise NotImplementedError('Exercise: replace this line with your code')\n"
         "def single_head_self_attention(X, W_Q, W_K, W_V, causal=False, attention_mask=None):\n"
         "    return read_rows(X)\n", namespace)
    result = run_exercise("self_attention", namespace)
    assert (result.status, result.message) == ("not attempted", "replace `raise NotImplementedError` in read_rows "
                                                                "with your code (single_head_self_attention calls it)")
    try:
        namespace["single_head_self_attention"](None, None, None, None)
    except NotImplementedError as e:
        reply = _raised(e)
    assert reply["kind"] == "not_implemented" and reply["where"] == "read_rows"
    assert calls.unwritten(_rebuilt(reply), "single_head_self_attention") == (
        "replace `raise NotImplementedError` in read_rows with your code (single_head_self_attention calls it)")
    # its own stub: named as before
    reply["where"] = "single_head_self_attention"
    assert calls.unwritten(_rebuilt(reply), "single_head_self_attention") == (
        "replace `raise NotImplementedError` in single_head_self_attention with your code")
