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


OTHER_PACKAGES = {  # another package that implements the exercise's answer whole (library_answers.PACKAGES)
    "tokenizers' WordPiece": ("wordpiece_encode", """\
        from tokenizers import Tokenizer
        from tokenizers.models import WordPiece as HFWordPiece
        def wordpiece_tokenize(word, vocab, unk="[UNK]", max_chars=100):
            return Tokenizer(HFWordPiece(vocab, unk_token=unk, max_input_chars_per_word=max_chars)).encode(word).tokens
        """, "tokenizers.Tokenizer"),
    "the embedded tokenizer.json read by tokenizers": ("wordpiece_word_ids", """\
        import tokenizers
        from course_lib.checkpoints import embedded_model_dir
        def wordpiece_word_ids(text, vocab):
            tok = tokenizers.Tokenizer.from_file(str(embedded_model_dir() / "tokenizer.json"))
            tok.no_padding()
            enc = tok.encode(text, add_special_tokens=False)
            return enc.tokens, enc.word_ids
        """, "tokenizers"),
    "tokenizers' Unigram, imported inside": ("viterbi", """\
        def viterbi_segment(word, log_probs):
            from tokenizers import Tokenizer, models
            return Tokenizer(models.Unigram(list(log_probs.items()))).encode(word).tokens
        """, "tokenizers"),
    "seqeval's scores": ("entity_f1", """\
        from seqeval.metrics import f1_score, precision_score, recall_score
        from seqeval.metrics.sequence_labeling import get_entities
        def read_entities(tags):
            return get_entities(tags)
        def entity_f1(y_true, y_pred):
            return precision_score(y_true, y_pred), recall_score(y_true, y_pred), f1_score(y_true, y_pred)
        """, "seqeval.metrics"),
}


@pytest.mark.parametrize("case", sorted(OTHER_PACKAGES))
def test_check_refuses_an_answer_that_another_package_computes_whole(case):
    """An independent reader passed wordpiece_encode, wordpiece_word_ids and viterbi with `tokenizers` (the very
    library the checks compare with) and entity_f1 with seqeval: each is refused by check() and by the grader."""
    import course_lib.exercises.ch11_1b  # noqa: F401
    import course_lib.exercises.ch11_4b  # noqa: F401
    from course_lib.exercises.grading import Cell
    from course_lib.exercises.references import reference_used

    name, source, prefix = OTHER_PACKAGES[case]
    ex = EXERCISES[name]
    result = _result(name, source)
    assert result.status == WRONG and f"uses `{prefix}" in result.message, result
    assert "the library's own implementation of what this exercise asks you to write" in result.message
    message = reference_used(ex, [Cell(0, textwrap.dedent(source), True, True)])
    assert message is not None and f"uses `{prefix}" in message, message


def test_a_package_listed_for_one_exercise_is_not_refused_in_another():
    """tokenizers is refused only where it computes the answer: a check of 11.4a's NLI pairs may tokenize with it."""
    import course_lib.exercises.ch11_4a  # noqa: F401

    namespace = {"__name__": "__main__"}
    exec(textwrap.dedent("""\
        import tokenizers
        import torch
        def sbert_features(u, v):
            assert tokenizers is not None
            return torch.cat([u, v, (u - v).abs()], dim=-1)
        """), namespace)
    assert reference_called(EXERCISES["sbert_features"], namespace) is None
