"""course_lib.finetuning.training: the generic loop learns, caches, stops without losing finished epochs, resumes."""
from __future__ import annotations

import threading
from dataclasses import dataclass

import pytest
import torch

import course_lib.paths
from course_lib.finetuning.training import (TrainConfig, batches, evaluate, fingerprint, fit, make_optimizer,
                                            run_key)


@dataclass
class Out:
    logits: torch.Tensor
    loss: torch.Tensor | None = None


class Toy(torch.nn.Module):
    """A 2-layer MLP with dropout; ``body`` plays the pretrained encoder, ``classifier`` the new head."""

    def __init__(self, d_in=4, classes=2):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(d_in, 16), torch.nn.ReLU(), torch.nn.Dropout(0.1))
        self.classifier = torch.nn.Linear(16, classes)
        self.calls = 0

    def forward(self, x, labels=None):
        self.calls += 1
        logits = self.classifier(self.body(x))
        loss = None
        if labels is not None:
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1),
                                                     ignore_index=-100)
        return Out(logits, loss)


def toy_data(n=240, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=g)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).long()
    return [(x[i], y[i]) for i in range(n)]


def collate(examples):
    return {"x": torch.stack([e[0] for e in examples]), "labels": torch.stack([e[1] for e in examples])}


def new_model(seed=0):
    torch.manual_seed(seed)
    return Toy()


CFG = TrainConfig(lr=1e-2, epochs=3, batch_size=16, warmup_ratio=0.0)


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_LIB_CACHE", str(tmp_path / "cache"))


def test_loop_learns_a_separable_toy_task():
    train, test = toy_data(), toy_data(100, seed=1)
    model = new_model()
    before = evaluate(model, test, collate)["accuracy"]
    run = fit(model, train, collate, CFG, eval_data=test, progress=False, cache=False)
    assert run.finished and len(run.epochs) == 3 and len(run.step_losses) == 3 * 15
    assert run.final() > 0.9 > before + 0.1
    assert run.epochs[-1].train_loss < run.epochs[0].train_loss
    assert run.curve("accuracy") == [e.eval["accuracy"] for e in run.epochs]


def test_frozen_parameters_do_not_move_and_are_not_counted():
    model = new_model()
    for p in model.body.parameters():
        p.requires_grad_(False)
    body = [p.clone() for p in model.body.parameters()]
    run = fit(model, toy_data(), collate, CFG, progress=False, cache=False)
    assert all(torch.equal(a, b.detach().cpu()) for a, b in zip(body, model.body.parameters()))  # fit may use cuda
    assert run.trainable_parameters == 16 * 2 + 2
    assert run.total_parameters == 4 * 16 + 16 + 16 * 2 + 2


def test_lr_overrides_give_the_head_its_own_learning_rate():
    cfg = TrainConfig(lr=1e-5, lr_overrides=(("classifier.", 1e-3), ("classifier.bias", 5e-3)))
    assert cfg.lr_for("body.0.weight") == 1e-5
    assert cfg.lr_for("classifier.weight") == 1e-3
    assert cfg.lr_for("classifier.bias") == 5e-3  # the longest prefix wins
    lrs = sorted({g["lr"] for g in make_optimizer(new_model(), cfg).param_groups})
    assert lrs == [1e-5, 1e-3, 5e-3]


def test_no_weight_decay_on_biases():
    opt = make_optimizer(new_model(), TrainConfig(weight_decay=0.1))
    for g in opt.param_groups:
        assert all(p.dim() > 1 for p in g["params"]) == (g["weight_decay"] == 0.1)


def test_a_finished_run_is_loaded_from_the_cache_without_training():
    train, test = toy_data(), toy_data(100, seed=1)
    first_model = new_model()
    first = fit(first_model, train, collate, CFG, eval_data=test, progress=False)
    again_model = new_model()
    again = fit(again_model, train, collate, CFG, eval_data=test, progress=False)
    assert again.cached and not first.cached
    assert again_model.calls == 0  # not a single forward pass
    assert again.to_dict() | {"cached": False} == first.to_dict()
    for a, b in zip(first_model.parameters(), again_model.parameters()):
        assert torch.equal(a, b)


def test_the_cache_key_changes_with_config_data_init_and_trainable_set():
    train = toy_data()
    model = new_model()
    base = run_key(model, train, CFG)
    assert run_key(new_model(), train, CFG) == base  # same seed, same weights
    assert run_key(model, train, TrainConfig(lr=2e-2, epochs=3, batch_size=16, warmup_ratio=0.0)) != base
    assert run_key(model, toy_data(seed=5), CFG) != base
    assert run_key(new_model(seed=1), train, CFG) != base
    model.body[0].weight.requires_grad_(False)
    assert run_key(model, train, CFG) != base
    assert run_key(new_model(), train, CFG, extra={"max_length": 64}) != base


def test_the_key_is_the_same_under_a_torch_that_writes_layer_norm_without_its_bias(monkeypatch):
    """torch 2.11 (the GPU image's) writes `LayerNorm((8,), eps=1e-05, elementwise_affine=True)`, torch 2.13 adds
    `, bias=True`: a key built on repr(model) sent every shipped run back to training there (found on an H100)."""
    from torch import nn

    from course_lib.finetuning.runs import structure

    model = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.Dropout(0.1), nn.Linear(8, 2))
    train = toy_data()
    here, text = run_key(model, train, CFG), structure(model)
    assert "LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)" in text
    monkeypatch.setattr(nn.LayerNorm, "extra_repr",   # torch 2.11's own words
                        lambda self: "{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}"
                        .format(**self.__dict__))
    assert "elementwise_affine=True)" in repr(model)
    assert structure(model) == text and run_key(model, train, CFG) == here
    assert "extra_repr" not in vars(model[1])   # the module is left as it was
    # without a bias, without weights at all, beside an ordinary one: each written as torch 2.13 writes it
    odd = nn.Sequential(nn.LayerNorm(8, bias=False), nn.LayerNorm((2, 4), elementwise_affine=False), nn.LayerNorm(8))
    assert structure(odd).count("bias=False)") == 2
    assert "eps=1e-05, elementwise_affine=True, bias=True)" in structure(odd)
    monkeypatch.undo()
    if "bias=" in repr(nn.LayerNorm(2)):   # a torch that writes the bias (the pinned 2.13): its own repr, so no key
        assert structure(odd) == repr(odd)   # here changed (under torch 2.11 the lines above are the whole test)


def test_fingerprint_is_stable_and_sensitive():
    a = [{"text": "good film", "label": 1}, ("x", 2)]
    assert fingerprint(a) == fingerprint([{"label": 1, "text": "good film"}, ("x", 2)])
    assert fingerprint(a) != fingerprint([{"text": "good film!", "label": 1}, ("x", 2)])
    assert fingerprint(torch.tensor(3)) != fingerprint(torch.tensor(4))


def _stop_after(n_steps):
    event, seen = threading.Event(), []

    def callback(kind, run):
        if kind == "step":
            seen.append(1)
            if len(seen) == n_steps:
                event.set()
    return event, callback


def test_stop_keeps_finished_epochs_and_their_weights_then_resumes_exactly():
    train, test = toy_data(), toy_data(100, seed=1)
    unbroken_model = new_model()
    unbroken = fit(unbroken_model, train, collate, CFG, eval_data=test, progress=False, cache=False)

    model = new_model()
    event, callback = _stop_after(15 + 4)  # epoch 1 has 15 steps; stop 4 steps into epoch 2
    part = fit(model, train, collate, CFG, eval_data=test, progress=False, callback=callback, stop=event)
    assert part.interrupted and not part.finished and len(part.epochs) == 1
    assert len(part.step_losses) == 15
    assert part.epochs[0].train_loss == unbroken.epochs[0].train_loss
    assert part.epochs[0].eval == unbroken.epochs[0].eval
    # the model holds the weights of the end of epoch 1: its held-out score is the one recorded
    assert evaluate(model, test, collate)["accuracy"] == part.epochs[0].eval["accuracy"]

    resumed = fit(model, train, collate, CFG, eval_data=test, progress=False)
    assert resumed.finished and resumed.resumed_from == 1 and len(resumed.epochs) == 3
    assert resumed.step_losses == pytest.approx(unbroken.step_losses, abs=1e-6)
    for a, b in zip(unbroken_model.parameters(), model.parameters()):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=0)


def test_keyboard_interrupt_in_the_first_epoch_restores_the_initial_weights():
    model = new_model()
    start = [p.clone() for p in model.parameters()]

    def callback(kind, run):
        if kind == "step" and len(run.step_losses) == 3:
            raise KeyboardInterrupt

    run = fit(model, toy_data(), collate, CFG, progress=False, callback=callback)
    assert run.interrupted and run.epochs == [] and run.step_losses == []
    assert all(torch.equal(a, b.detach().cpu()) for a, b in zip(start, model.parameters()))  # fit may use cuda


def test_accuracy_ignores_minus_100_labels_for_token_classification():
    class Tagger(torch.nn.Module):
        def forward(self, x, labels=None):
            logits = torch.stack([x, -x], dim=-1)  # (B, T, 2): class 0 when x > 0
            return Out(logits, torch.tensor(0.0))

    data = [(torch.tensor([1.0, -1.0, 2.0]), torch.tensor([0, 1, -100])),
            (torch.tensor([1.0, 1.0, 1.0]), torch.tensor([1, -100, -100]))]
    scores = evaluate(Tagger(), data, collate)
    assert scores["accuracy"] == pytest.approx(2 / 3)


def test_batches_cover_every_example_once_and_shuffle_by_seed():
    data = list(range(37))
    b = batches(data, 8, shuffle=True, seed=3)
    assert [len(x) for x in b] == [8, 8, 8, 8, 5]
    assert sorted(sum(b, [])) == data
    assert b == batches(data, 8, shuffle=True, seed=3) != batches(data, 8, shuffle=True, seed=4)


@pytest.mark.parametrize("kwargs, message", [
    (dict(lr=0), "learning rate must be a positive number"),
    (dict(lr=float("nan")), "learning rate must be a positive number"),
    (dict(epochs=0), "epochs must be a whole number"),
    (dict(batch_size=0), "batch_size must be a whole number"),
    (dict(warmup_ratio=1.5), "warmup_ratio"),
])
def test_bad_configs_are_refused_in_plain_words(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**kwargs)


def test_empty_data_and_nothing_trainable_are_refused():
    with pytest.raises(ValueError, match="no training examples"):
        fit(new_model(), [], collate, CFG, progress=False)
    model = new_model()
    model.requires_grad_(False)
    with pytest.raises(ValueError, match="no parameter of the model is trainable"):
        fit(model, toy_data(), collate, CFG, progress=False)


def test_a_model_without_loss_gets_a_clear_message():
    with pytest.raises(ValueError, match="returned no loss"):
        fit(new_model(), toy_data(), lambda ex: {"x": torch.stack([e[0] for e in ex])}, CFG, progress=False,
            cache=False)


@pytest.mark.gpu
def test_the_loop_runs_on_cuda():
    model = new_model()
    run = fit(model, toy_data(), collate, CFG, eval_data=toy_data(100, seed=1), progress=False, cache=False)
    assert run.device.startswith("cuda") and next(model.parameters()).is_cuda
    assert run.final() > 0.9


def test_length_bucketing_groups_similar_lengths_and_keeps_every_example():
    g = torch.Generator().manual_seed(0)
    data = [("x" * int(n), i) for i, n in enumerate(torch.randint(1, 60, (256,), generator=g))]
    plain = batches(data, 16, shuffle=True, seed=1)
    bucketed = batches(data, 16, shuffle=True, seed=1, length=lambda e: len(e[0]))
    assert sorted(e[1] for b in bucketed for e in b) == list(range(256))

    def padding(bs):
        return sum(max(len(e[0]) for e in b) * len(b) - sum(len(e[0]) for e in b) for b in bs)
    assert padding(bucketed) < padding(plain) / 3


def test_predict_by_length_returns_results_in_the_order_of_the_data():
    model = new_model().eval()
    data = toy_data(50)
    plain = evaluate(model, data, collate)
    from course_lib.finetuning.training import predict

    p1, g1, _ = predict(model, data, collate, batch_size=8)
    p2, g2, _ = predict(model, data, collate, batch_size=8, length=lambda e: float(e[0][0]))
    assert torch.equal(g1, g2) and torch.equal(p1, p2)
    assert evaluate(model, data, collate, length=lambda e: float(e[0][0]))["accuracy"] == plain["accuracy"]


def test_lr_override_prefixes_also_match_inside_a_wrapper():
    cfg = TrainConfig(lr=1e-5, lr_overrides=(("classifier.", 1e-3),))
    assert cfg.lr_for("model.classifier.weight") == 1e-3
    assert cfg.lr_for("model.myclassifier.weight") == 1e-5  # only at a module boundary


# ----------------------------------------------------------------------------- shipped runs (float16 deltas)

@pytest.fixture
def shipped_toy(tmp_path, monkeypatch):
    """A toy run trained with COURSE_LIB_SHIP_DELTAS set, then served as if shipped with the course, and a new
    empty cache."""
    import shutil

    import course_lib.finetuning.runs as runs
    import course_lib.finetuning.shipped as shipped_mod

    monkeypatch.setenv(shipped_mod.SHIP_ENV, "1")
    model = new_model()
    model.body.requires_grad_(False)   # as head-only training: the delta holds the trained parameters only
    run = fit(model, toy_data(), collate, CFG, eval_data=toy_data(60, seed=1), name="toy", progress=False)
    made = runs.run_dir("toy", run.key)
    shipped = tmp_path / "shipped" / made.name
    shipped.mkdir(parents=True)
    for f in ("run.json", "delta.safetensors", "shipped.json"):
        shutil.copy2(made / f, shipped / f)
    monkeypatch.delenv(shipped_mod.SHIP_ENV)
    monkeypatch.setattr(course_lib.paths, "shipped_run", lambda kind, name: shipped if name == shipped.name else None)
    monkeypatch.setenv("COURSE_LIB_CACHE", str(tmp_path / "new-cache"))
    return model, run, shipped


def _fresh():
    model = new_model()
    model.body.requires_grad_(False)
    return model


def test_a_shipped_run_is_loaded_as_initial_weights_plus_its_float16_delta(shipped_toy, tmp_path):
    import json

    trained, run, shipped = shipped_toy
    assert {f.name for f in shipped.iterdir()} == {"run.json", "delta.safetensors", "shipped.json"}
    model = _fresh()
    before = model.classifier.weight.detach().clone()
    again = fit(model, toy_data(), collate, CFG, eval_data=toy_data(60, seed=1), name="toy", progress=False)
    assert again.shipped and again.cached and again.origin == "shipped with the course"
    assert model.calls == 0, "a shipped run is loaded, not trained"
    assert again.epochs == run.epochs and again.step_losses == run.step_losses
    made = json.loads((shipped / "shipped.json").read_text())
    error = (model.classifier.weight - trained.classifier.weight).abs().max().item()
    assert 0 < made["max_abs_error"] and error <= made["max_abs_error"] + 1e-9
    change = (trained.classifier.weight.detach().cpu() - before).abs().max().item()  # fit may have moved it to cuda
    assert error < 1e-3 * change  # float16 of the change
    assert torch.equal(model.body[0].weight, trained.body[0].weight), "frozen parameters are not touched"
    assert evaluate(model, toy_data(60, seed=1), collate)["accuracy"] == run.final()
    assert not (tmp_path / "new-cache" / "finetuning").exists(), "loading a shipped run writes nothing"
    # the model it trained, asked again, keeps its weights (the delta is not added twice)
    w = model.classifier.weight.detach().clone()
    third = fit(model, toy_data(), collate, CFG, eval_data=toy_data(60, seed=1), name="toy", progress=False)
    assert third.shipped and torch.equal(model.classifier.weight, w)


def test_a_shipped_run_refuses_other_starting_weights_and_a_damaged_delta(shipped_toy):
    from safetensors.torch import load_file, save_file

    _, run, shipped = shipped_toy
    other = _fresh()
    with torch.no_grad():
        other.classifier.bias.add_(0.5)
    with pytest.raises(RuntimeError, match="made for other starting weights than this model's"):
        fit(other, toy_data(), collate, CFG, name="toy", key=run.key, progress=False)
    delta = load_file(str(shipped / "delta.safetensors"))
    delta["classifier.bias"] = delta["classifier.bias"] + 1
    save_file(delta, str(shipped / "delta.safetensors"))
    with pytest.raises(RuntimeError, match="did not give the weights it was shipped with: its files may be damaged"):
        fit(_fresh(), toy_data(), collate, CFG, eval_data=toy_data(60, seed=1), name="toy", progress=False)


def test_without_the_ship_setting_a_run_writes_no_delta(tmp_path):
    run = fit(new_model(), toy_data(), collate, CFG, name="toy", progress=False)
    from course_lib.finetuning.runs import run_dir

    assert {f.name for f in run_dir("toy", run.key).iterdir()} == {"run.json", "trained.safetensors"}


def test_a_matrix_whose_rows_mostly_did_not_move_ships_by_its_moved_rows(tmp_path):
    """As the word embeddings of a full fine-tuning: a gradient reaches only the rows of the training text's
    tokens, weight decay alone moves the others by far less. Only the moved rows are stored; the others count
    as unchanged, and what that leaves out is within the recorded error; loading gives exactly the recorded
    weights; row indices that do not fit the model are refused."""
    import json

    from safetensors.torch import load_file, save_file

    from course_lib.finetuning.runs import fingerprint
    from course_lib.finetuning.shipped import ROWS, _dense, save_delta

    g = torch.Generator().manual_seed(0)
    initial = {"emb": torch.randn(100, 8, generator=g), "bias": torch.randn(8, generator=g),
               "dense": torch.randn(4, 8, generator=g)}
    trained = {n: t * (1 - 5e-7) for n, t in initial.items()}  # weight decay: every row moves a little
    trained["emb"][[3, 17]] += 0.1 * torch.randn(2, 8, generator=g)
    trained["bias"] += 0.01
    trained["dense"] += 0.01 * torch.randn(4, 8, generator=g)
    save_delta(tmp_path, initial, trained)
    stored = load_file(str(tmp_path / "delta.safetensors"))
    assert stored["emb"].shape == (2, 8) and stored["emb" + ROWS].tolist() == [3, 17]
    assert stored["dense"].shape == (4, 8) and "dense" + ROWS not in stored  # every row moved: stored whole
    made = json.loads((tmp_path / "shipped.json").read_text())
    delta = _dense(stored, initial)
    rebuilt = {n: initial[n] + delta[n].float() for n in initial}
    assert fingerprint(rebuilt) == made["trained"]
    assert max(float((rebuilt[n] - trained[n]).abs().max()) for n in initial) == pytest.approx(made["max_abs_error"])
    assert 1e-6 < made["max_abs_error"] < 1e-4  # the unmoved rows' decay (and float16) left out, no more
    assert torch.equal(rebuilt["emb"][5], initial["emb"][5])
    stored["emb" + ROWS] = torch.tensor([3, 100], dtype=torch.int32)
    save_file(stored, str(tmp_path / "delta.safetensors"))
    with pytest.raises(RuntimeError, match="does not fit this model: its files may be damaged"):
        _dense(load_file(str(tmp_path / "delta.safetensors")), initial)
