"""An exercise that hands the student a generator also checks that the answer leaves torch's, numpy's and Python's
global generators alone (calls.watched_generators): reseeding one from the generator given is right in every number
a check can see, and changes every draw the notebook makes afterwards."""
import random

import numpy as np
import pytest
import torch

from course_lib.exercises import calls
from course_lib.exercises.remote import value_and_generators


def _reseeds_torch(generator):
    torch.manual_seed(int(torch.randint(2 ** 62, (1,), generator=generator)))
    return torch.rand(3)


@pytest.mark.parametrize("name, touch", [
    ("torch", lambda: torch.rand(1)),
    ("torch", lambda: torch.manual_seed(0)),
    ("numpy", lambda: np.random.rand()),
    ("numpy", lambda: np.random.seed(0)),
    ("random", lambda: random.random()),
    ("random", lambda: random.seed(0)),
])
def test_each_global_generator_drawn_from_or_reseeded_is_named(name, touch):
    with calls.watched_generators() as changed:
        touch()
    assert changed == [name]
    assert name in calls.GLOBAL_GENERATORS


def test_a_function_that_draws_only_from_the_generator_it_is_given_changes_none():
    g = torch.Generator().manual_seed(3)
    value, changed = value_and_generators(torch.rand, (4,), {"generator": g})
    assert changed == [] and value.shape == (4,)


def test_a_reseed_that_leaves_the_state_of_the_last_call_is_still_seen():
    """Reseeded from generators seeded alike, the global generator ends each call in the same state: compared with
    the state before the call, a second call would look untouched unless the watch starts from a fresh state."""
    for _ in range(3):
        value, changed = value_and_generators(_reseeds_torch, (torch.Generator().manual_seed(5),), {})
        assert changed == ["torch"]
    assert torch.equal(value, _reseeds_torch(torch.Generator().manual_seed(5)))  # the answer itself is unchanged


def test_the_states_before_the_watch_are_restored_even_when_the_function_raises():
    torch.manual_seed(123)
    np.random.seed(123)
    random.seed(123)
    expected = (torch.rand(2), np.random.rand(), random.random())
    torch.manual_seed(123)
    np.random.seed(123)
    random.seed(123)
    with pytest.raises(ZeroDivisionError):
        with calls.watched_generators():
            torch.manual_seed(9), np.random.seed(9), random.seed(9)
            1 / 0
    assert torch.equal(torch.rand(2), expected[0]) and np.random.rand() == expected[1]
    assert random.random() == expected[2]
