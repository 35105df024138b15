"""check() in a notebook says what the grader says of an answer that calls the library's own implementation
(course_lib.exercises.references): a reviewer passed `param_count` with one line calling `parameter_count`, which
the grader (reading the cells' code) refuses. The same answers, as objects of a live kernel."""
from __future__ import annotations

import textwrap

import pytest

import course_lib.exercises.ch11_1  # noqa: F401 (registers the exercises)
import course_lib.exercises.ch11_2  # noqa: F401
from course_lib.exercises.core import WRONG, run_exercise
from course_lib.exercises.references import reference_called
from course_lib.exercises.core import EXERCISES


def _result(name: str, source: str):
    namespace = {"__name__": "__main__"}
    exec(compile(textwrap.dedent(source), "<answer>", "exec"), namespace)
    return run_exercise(name, namespace)


CALLS = {
    "imported name, in a lambda": ("param_count", """\
        from course_lib.model.bert import BertConfig, parameter_count
        bert_parameter_count = lambda c: parameter_count(BertConfig(**vars(c)))""",
                                   "course_lib.model.bert.parameter_count"),
    "through a module alias and a helper": ("param_count", """\
        import course_lib.model.bert as b
        def helper(c):
            return b.parameter_count(b.BertConfig(**vars(c)))
        def bert_parameter_count(c):
            return helper(c)""", "course_lib.model.bert.parameter_count"),
    "imported inside the function": ("param_count", """\
        def bert_parameter_count(c):
            from course_lib.model.bert import BertConfig
            from course_lib.model.size import parameter_breakdown
            return sum(parameter_breakdown(BertConfig(**vars(c))).values())""",
                                     "course_lib.model.size.parameter_breakdown"),
    "the package's full path": ("param_count", """\
        import course_lib
        def bert_parameter_count(c):
            return course_lib.model.bert.parameter_count(course_lib.model.bert.BertConfig(**vars(c)))""",
                                "course_lib.model.bert.parameter_count"),
    "a closure": ("param_count", """\
        def make():
            from course_lib.model.bert import BertConfig, BertModel
            def count(c):
                return sum(p.numel() for p in BertModel(BertConfig(**vars(c))).parameters())
            return count
        bert_parameter_count = make()""", "course_lib.model.bert.BertModel"),
    "another chapter": ("mlm_masking", """\
        from course_lib.pretraining.masking import mlm_mask
        def mask_tokens(input_ids, special_ids, mask_token_id, unigram, select_prob=0.15, generator=None):
            b = mlm_mask(input_ids, special_ids=special_ids, mask_token_id=mask_token_id, unigram=unigram,
                         select_prob=select_prob, generator=generator)
            return b.input_ids, b.labels""", "course_lib.pretraining.masking.mlm_mask"),
}


@pytest.mark.parametrize("case", sorted(CALLS))
def test_check_refuses_an_answer_that_calls_the_librarys_own(case):
    name, source, dotted = CALLS[case]
    result = _result(name, source)
    assert result.status == WRONG and f"uses `{dotted}`, the library's own implementation" in result.message, result


def test_an_answer_of_its_own_that_merely_sits_beside_the_library_is_not_refused():
    """The notebook imports course_lib and the student's causal_mask shares the library's name: only what the code
    loads counts, and a name of the notebook's own is the notebook's."""
    namespace = {"__name__": "__main__"}
    exec(textwrap.dedent("""\
        import torch
        import course_lib
        from course_lib.model.bert import BertConfig
        def causal_mask(T):
            return torch.ones(T, T, dtype=torch.bool).tril()
        def bert_parameter_count(c):
            d, L, V, P, S, F = (c.hidden_size, c.num_hidden_layers, c.vocab_size, c.max_position_embeddings,
                                c.type_vocab_size, c.intermediate_size)
            emb = (V + P + S) * d + 2 * d
            block = 4 * (d * d + d) + 2 * d + (d * F + F) + (F * d + d) + 2 * d
            return emb + L * block + d * d + d
        """), namespace)
    for name in ("causal_mask", "param_count"):
        assert reference_called(EXERCISES[name], namespace) is None, name
    assert run_exercise("causal_mask", namespace).correct
    assert run_exercise("param_count", namespace).correct


def test_check_refuses_the_librarys_function_handed_in_under_the_exercises_name():
    """`from course_lib.pretraining.masking import masked_lm_loss` in the answer cell: no code of one's own at all
    (the grader says the same, from the function's module)."""
    result = _result("mlm_loss", "from course_lib.pretraining.masking import masked_lm_loss")
    assert result.status == WRONG and result.message == (
        "`masked_lm_loss` is course_lib's own `course_lib.pretraining.masking.masked_lm_loss`, not your code: write "
        "the function yourself"), result
