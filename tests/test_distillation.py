"""Knowledge distillation (course_lib.finetuning.distill): the loss against its definition, the compact student,
the teacher's labels, and the key a distilled run is found by."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from course_lib.finetuning.distill import (Student, TeacherCollator, compact_classifier, distillation_loss,
                                           paired_difference, soften, train_student)
from course_lib.finetuning.runs import TrainConfig, _remember_run, trained_by
from course_lib.finetuning.training import correct_and_counted


def _by_hand(s: torch.Tensor, t: torch.Tensor, T: float) -> float:
    """T² · (1/B) Σ_b Σ_c p_t log(p_t / p_s), written out over Python floats."""
    total = 0.0
    for srow, trow in zip(s.tolist(), t.tolist()):
        zs = sum(math.exp(x / T) for x in srow)
        zt = sum(math.exp(x / T) for x in trow)
        for xs, xt in zip(srow, trow):
            ps, pt = math.exp(xs / T) / zs, math.exp(xt / T) / zt
            total += pt * math.log(pt / ps)
    return T * T * total / len(s)


@pytest.mark.parametrize("T", [0.5, 1.0, 2.0, 5.0])
def test_the_loss_is_t_squared_times_the_batch_mean_kl(T):
    g = torch.Generator().manual_seed(0)
    s, t = torch.randn(5, 3, generator=g) * 2, torch.randn(5, 3, generator=g) * 3
    assert float(distillation_loss(s, t, T)) == pytest.approx(_by_hand(s, t, T), rel=1e-5)


def test_the_loss_is_zero_for_the_teacher_itself_and_its_gradient_reaches_only_the_student():
    t = torch.tensor([[2.0, -1.0], [0.5, 0.3]])
    assert float(distillation_loss(t.clone(), t, 2.0)) == pytest.approx(0.0, abs=1e-7)
    s = torch.zeros(2, 2, requires_grad=True)
    teacher = t.clone().requires_grad_(True)
    distillation_loss(s, teacher, 2.0).backward()
    assert s.grad is not None and s.grad.abs().sum() > 0
    assert teacher.grad is None  # the teacher's scores are targets


def test_the_gradient_size_hardly_depends_on_t_thanks_to_t_squared():
    """Hinton et al.: for large T the gradient of T²·KL tends to (s − t)/B (logits centred), whatever T."""
    s = torch.tensor([[0.3, -0.2], [0.1, 0.4]], requires_grad=True)
    t = torch.tensor([[1.0, -1.0], [-0.5, 0.5]])
    grads = []
    for T in (10.0, 100.0):
        s.grad = None
        distillation_loss(s, t, T).backward()
        grads.append(s.grad.clone())
    sc, tc = s.detach() - s.detach().mean(-1, keepdim=True), t - t.mean(-1, keepdim=True)
    torch.testing.assert_close(grads[1], (sc - tc) / 2 / 2, atol=1e-3, rtol=0)  # /B and /C for two classes
    torch.testing.assert_close(grads[0], grads[1], atol=1e-2, rtol=0)


def test_bad_inputs_say_what_is_wrong():
    with pytest.raises(ValueError, match="must both be \\(batch, classes\\)"):
        distillation_loss(torch.zeros(2, 3), torch.zeros(2, 2))
    with pytest.raises(ValueError, match="temperature must be positive"):
        distillation_loss(torch.zeros(2, 3), torch.zeros(2, 3), 0.0)
    with pytest.raises(ValueError, match="temperature must be positive"):
        soften(torch.zeros(2), -1)


def test_a_higher_temperature_flattens_the_distribution():
    logits = torch.tensor([3.0, 0.0, -1.0])
    tops = [float(soften(logits, T).max()) for T in (0.5, 1, 2, 4, 100)]
    assert tops == sorted(tops, reverse=True)
    torch.testing.assert_close(soften(logits, 1), logits.softmax(-1))
    assert tops[-1] == pytest.approx(1 / 3, abs=0.01)


def test_the_compact_student_keeps_the_bottom_blocks_of_the_embedded_model_and_freezes_its_word_embeddings():
    from course_lib.finetuning.classify import pretrained_classifier

    full = pretrained_classifier(("negative", "positive"))
    student = compact_classifier(("negative", "positive"), layers=2)
    assert len(student.bert.encoder.layer) == 2 and student.config.num_hidden_layers == 2
    for i in range(2):
        for (n, a), (_, b) in zip(student.bert.encoder.layer[i].named_parameters(),
                                  full.bert.encoder.layer[i].named_parameters()):
            assert torch.equal(a, b), n
    torch.testing.assert_close(student.classifier.weight, full.classifier.weight)  # the same seeded head
    assert not student.bert.embeddings.word_embeddings.weight.requires_grad
    assert not any(p.requires_grad for p in student.bert.pooler.parameters())
    assert all(p.requires_grad for p in student.bert.encoder.parameters())
    assert all(p.requires_grad for p in student.classifier.parameters())
    ids = torch.tensor([[101, 7592, 2088, 102]])
    assert student(ids).logits.shape == (1, 2)
    for bad in (0, 7, 2.0, True):
        with pytest.raises(ValueError, match="keeps 1 to 6 of the encoder's 6 blocks"):
            compact_classifier(("negative", "positive"), layers=bad)


class _Teacher(torch.nn.Module):
    """Scores from the first token id, so that the labels it gives are known."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor([1.0, -1.0]))

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        class Out:
            pass
        out = Out()
        out.logits = (input_ids[:, 1:2].float() - 5000) / 1000 * self.w
        return out


def test_the_teacher_collator_labels_with_the_teachers_scores_or_its_top_class():
    from course_lib.finetuning.classify import pretrained_encoder

    _, tok = pretrained_encoder()
    teacher = _Teacher().train()
    texts = ["awful", "zebra"]  # ids below and above 5000
    soft = TeacherCollator(tok, ("negative", "positive"), teacher)(texts)
    ids = tok(texts)["input_ids"][:, 1].float()
    torch.testing.assert_close(soft["labels"], ((ids - 5000) / 1000)[:, None] * torch.tensor([1.0, -1.0]))
    hard = TeacherCollator(tok, ("negative", "positive"), teacher, hard=True)(texts)
    assert hard["labels"].dtype == torch.long and hard["labels"].tolist() == soft["labels"].argmax(-1).tolist()
    assert teacher.training  # put back as it was
    assert TeacherCollator(tok, ("negative", "positive"), teacher).cache_key()["hard"] is False


def test_the_student_wrapper_uses_kd_for_scores_and_cross_entropy_for_classes():
    student = compact_classifier(("negative", "positive"), layers=1).eval()
    wrapped = Student(student, temperature=3.0)
    ids = torch.tensor([[101, 7592, 102], [101, 2088, 102]])
    logits = student(ids).logits
    t = torch.tensor([[1.0, -1.0], [0.0, 2.0]])
    torch.testing.assert_close(wrapped(ids, labels=t).loss, distillation_loss(logits, t, 3.0))
    y = torch.tensor([0, 1])
    torch.testing.assert_close(wrapped(ids, labels=y).loss, F.cross_entropy(logits, y))
    assert wrapped(ids).loss is None
    assert "temperature=3.0" in repr(wrapped)


def test_training_accuracy_against_scores_is_agreement_with_the_teachers_top_class():
    logits = torch.tensor([[2.0, 0.0], [0.0, 1.0], [3.0, 1.0]])
    teacher = torch.tensor([[0.5, 0.1], [0.9, 0.2], [1.0, -1.0]])  # top classes 0, 0, 0
    assert correct_and_counted(logits, teacher) == (2, 3)
    assert correct_and_counted(logits, torch.tensor([0, 1, -100])) == (2, 2)


def test_a_model_remembers_the_run_that_trained_it_until_its_weights_change():
    model = compact_classifier(("negative", "positive"), layers=1)
    assert trained_by(model) is None
    _remember_run(model, "abc")
    assert trained_by(model) == "abc"
    with torch.no_grad():
        model.classifier.bias.add_(1.0)
    assert trained_by(model) is None


def test_train_student_refuses_what_cannot_train():
    from course_lib.finetuning.classify import pretrained_encoder

    _, tok = pretrained_encoder()
    student = compact_classifier(("negative", "positive"), layers=1)
    with pytest.raises(ValueError, match="no training sentences"):
        train_student(student, [], ["x"], tok, ("negative", "positive"))
    with pytest.raises(ValueError, match="hard=True trains on the teacher's top class: pass the teacher"):
        train_student(student, ["good"], ["x"], tok, ("negative", "positive"), hard=True)


def test_a_student_trains_on_a_teachers_scores_and_its_run_is_cached_by_the_teacher(tmp_path, monkeypatch):
    """A few steps on a handful of sentences: the loss is the KD loss, and another teacher is another run."""
    from course_lib.finetuning.classify import pretrained_encoder
    from course_lib.finetuning.data import SentenceExample

    monkeypatch.setenv("COURSE_LIB_CACHE", str(tmp_path))
    _, tok = pretrained_encoder()
    labels = ("negative", "positive")
    texts = ["a fine film", "dull and slow", "loved it", "a mess", "sharp and funny", "boring"]
    test = [SentenceExample("great", "positive"), SentenceExample("awful", "negative")]
    config = TrainConfig(lr=1e-4, epochs=1, batch_size=3)
    teacher = _Teacher()
    run = train_student(compact_classifier(labels, layers=1), texts, test, tok, labels, teacher=teacher,
                        config=config, progress=False, device="cpu")
    assert run.finished and len(run.step_losses) == 2 and all(x >= 0 for x in run.step_losses)
    assert run.info["teacher"] == "scores at T = 2" and run.info["layers"] == 1
    again = train_student(compact_classifier(labels, layers=1), texts, test, tok, labels, teacher=teacher,
                          config=config, progress=False, device="cpu")
    assert again.cached and again.key == run.key
    hard = train_student(compact_classifier(labels, layers=1), texts, test, tok, labels, teacher=teacher, hard=True,
                         config=config, progress=False, device="cpu")
    assert not hard.cached and hard.key != run.key
    _remember_run(teacher, "some teacher run")  # now keyed by that run instead of its weights
    other = train_student(compact_classifier(labels, layers=1), texts, test, tok, labels, teacher=teacher,
                          config=config, progress=False, device="cpu")
    assert not other.cached and other.key not in (run.key, hard.key)
    trained = compact_classifier(labels, layers=1)
    first = train_student(trained, texts, test, tok, labels, teacher=teacher, config=config, progress=False,
                          device="cpu")
    again = train_student(trained, texts, test, tok, labels, teacher=teacher, config=config, progress=False,
                          device="cpu")  # the same, already trained student: its run, not a new one from here
    assert again.cached and again.key == first.key
    assert train_student(trained, texts, test, tok, labels, teacher=teacher, temperature=4.0, config=config,
                         progress=False, device="cpu").key != first.key


def test_the_paired_difference_counts_only_the_sentences_where_one_is_right():
    gold = torch.tensor([0, 1, 1, 0, 1, 0, 1, 1])
    a = torch.tensor([0, 1, 1, 0, 0, 0, 1, 0])   # 6 right
    b = torch.tensor([0, 1, 0, 1, 1, 0, 1, 0])   # 5 right
    d = paired_difference(a, b, gold)
    x = torch.tensor([0, 0, 1, 1, -1, 0, 0, 0], dtype=torch.double)
    assert d["difference"] == pytest.approx(1 / 8) and d["n"] == 8 and d["disagree"] == 3
    assert d["se"] == pytest.approx(float(x.std()) / math.sqrt(8))
    assert paired_difference(a, a, gold)["se"] == 0.0
    with pytest.raises(ValueError, match="need two predictions per example"):
        paired_difference(a, b[:3], gold)
