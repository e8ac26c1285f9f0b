"""Tests of agents.benchmarks.mechanism: the gradient-carrying rollouts, informative prompts and
fraction of final counts."""

from __future__ import annotations

import numpy as np
import pytest

from agents.benchmarks.mechanism import MECHANISM, mechanism


def test_mechanism_on_a_hand_built_state():
    # (s, f): (0,4) all wrong, (1,1) mixed n=2, (3,0) all right, (2,3) mixed n=5, (0,0) empty
    m = mechanism([0, 1, 3, 2, 0], [4, 1, 0, 3, 0])
    assert float(m["gradient_rollouts"]) == 7.0
    assert float(m["informative_prompts"]) == 2.0
    assert float(m["informative_frac"]) == pytest.approx(2 / 5)


def test_mechanism_is_vectorised_over_episodes():
    s = np.array([[0, 1, 3, 2], [1, 1, 1, 1], [0, 0, 0, 0]])
    f = np.array([[4, 1, 0, 3], [7, 0, 2, 5], [8, 8, 8, 8]])
    m = mechanism(s, f)
    assert m["gradient_rollouts"].tolist() == [7.0, 8.0 + 3.0 + 6.0, 0.0]
    assert m["informative_prompts"].tolist() == [2.0, 3.0, 0.0]
    assert m["informative_frac"].tolist() == [0.5, 0.75, 0.0]


def test_mechanism_refuses_mismatched_shapes():
    with pytest.raises(ValueError, match="one shape"):
        mechanism([1, 2], [1, 2, 3])


def test_mechanism_of_one_episode_is_zero_dimensional():
    m = mechanism([2, 0], [1, 0])
    assert (
        list(m)
        == list(MECHANISM)
        == ["gradient_rollouts", "informative_prompts", "informative_frac"]
    )
    assert all(v.shape == () and v.dtype == np.float64 for v in m.values())
    assert m["gradient_rollouts"] == 3.0 and m["informative_frac"] == 0.5


def test_mechanism_over_a_stack_of_stacks_matches_a_loop():
    rng = np.random.default_rng(0)
    s = rng.integers(0, 4, size=(2, 3, 5))
    f = rng.integers(0, 4, size=(2, 3, 5))
    m = mechanism(s, f)
    assert m["gradient_rollouts"].shape == (2, 3)
    for i in range(2):
        for j in range(3):
            mixed = [k for k in range(5) if s[i, j, k] > 0 and f[i, j, k] > 0]
            assert m["gradient_rollouts"][i, j] == sum(s[i, j, k] + f[i, j, k] for k in mixed)
            assert m["informative_prompts"][i, j] == len(mixed)
            assert m["informative_frac"][i, j] == pytest.approx(len(mixed) / 5)


def test_mechanism_refuses_a_scalar():
    with pytest.raises(ValueError) as info:
        mechanism(1, 2)
    assert str(info.value) == ("successes () and failures () must have one shape [..., B], B >= 1")
