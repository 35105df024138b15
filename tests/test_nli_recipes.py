"""The NLI recipe of notebook 11.4a is chosen on development pairs drawn from SNLI's training file, never on the
test pairs that score it (course_lib.finetuning.nli_recipes)."""
import pytest

from course_lib.finetuning.data import NLI_LABELS, class_balance, load_nli
from course_lib.finetuning.nli_recipes import (RECIPES, NliRecipe, best_recipe, dev_run_name, development_pairs)


@pytest.fixture(scope="module")
def train():
    return load_nli("train", n=600)


def test_the_development_pairs_share_no_pair_and_no_premise_with_the_training_pairs(train):
    dev = development_pairs(train)
    assert len(dev) == 300
    assert not {(e.premise, e.hypothesis) for e in dev} & {(e.premise, e.hypothesis) for e in train}
    assert not {e.premise for e in dev} & {e.premise for e in train}
    assert not {(e.premise, e.hypothesis) for e in dev} & {(e.premise, e.hypothesis) for e in load_nli("test")}
    assert class_balance(dev) == {label: 100 for label in NLI_LABELS}
    assert development_pairs(train) == dev                      # seeded: the same pairs on every machine
    assert development_pairs(train, seed=1) != dev


def test_more_development_pairs_than_the_file_holds_are_refused_in_words(train):
    with pytest.raises(ValueError, match=r"only \d+ training-file pairs share no premise with the 600 given; "
                                         r"5000 development pairs were asked for"):
        development_pairs(train, n=5000)


def test_the_recipe_with_the_best_mean_of_the_two_models_is_chosen_and_a_tie_goes_to_the_one_tried_first():
    a, b = RECIPES
    assert best_recipe({a: {"cross-encoder": 0.40, "bi-encoder": 0.60}, b: {"cross-encoder": 0.55, "bi-encoder": 0.50}}) == b
    assert best_recipe({a: {"cross-encoder": 0.70, "bi-encoder": 0.40}, b: {"cross-encoder": 0.55, "bi-encoder": 0.50}}) == a
    assert best_recipe({a: {"cross-encoder": 0.5, "bi-encoder": 0.5}, b: {"cross-encoder": 0.5, "bi-encoder": 0.5}}) == a
    assert best_recipe({b: {"cross-encoder": 0.5, "bi-encoder": 0.5}, a: {"cross-encoder": 0.5, "bi-encoder": 0.5}}) == b
    with pytest.raises(ValueError, match="no recipes to choose from"):
        best_recipe({})


def test_each_recipe_and_model_has_its_own_run_name_and_says_what_it_is():
    names = {dev_run_name(r, k) for r in RECIPES for k in ("cross-encoder", "bi-encoder")}
    assert len(names) == 4 and all(n.startswith("nli-dev-") for n in names)
    assert str(NliRecipe("mean", "last-3", 2e-4, 6)) == "mean, last 3, 2e-4, 6 epochs"
    assert str(NliRecipe("cls", "last-2", 5e-5, 3)) == "[CLS], last 2, 5e-5, 3 epochs"
