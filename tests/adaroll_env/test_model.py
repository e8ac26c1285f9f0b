"""Tests of adaroll_env.model: params, states, transitions, observation, rounds decoding.

As long as the model it tests (one module on purpose, see its docstring): one test file per
module keeps each test next to the others on the same function.
"""

from __future__ import annotations

import json
import math
import pickle

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import adaroll_env  # noqa: F401  (registers the env ids)
from adaroll_env import model as am
from adaroll_env.model import (
    OBS_KEYS,
    AllocationParams,
    apply,
    apply_counts,
    budget_left,
    capacity,
    decode_action,
    encode_counts,
    feasible,
    initial_state,
    make_state,
    observation_space,
    observe,
    posterior,
    posterior_variance,
    predictive,
    utility_value,
)

# --- AllocationParams ---------------------------------------------------------------------------


def test_params_defaults():
    p = AllocationParams()
    assert p.num_questions == 16
    assert p.budget == 128 and p.total_budget == 128
    assert p.prior_alpha == 1.0 and p.prior_beta == 1.0
    assert p.pilot == 0 and p.max_group is None
    assert p.mode == "sequential" and p.round_size == 1
    assert p.utility == "informative"
    assert p.group_size == 8.0
    assert AllocationParams(num_questions=3).budget == 24


def test_params_hashable_and_equal():
    p1 = AllocationParams(num_questions=3, budget=12, prior_alpha=[1, 2, 3], pilot=1)
    p2 = AllocationParams(num_questions=3, budget=12, prior_alpha=(1.0, 2.0, 3.0), pilot=1)
    p3 = AllocationParams(num_questions=3, budget=12, prior_alpha=(1.0, 2.0, 4.0), pilot=1)
    assert p1 == p2 and hash(p1) == hash(p2)
    assert p1 != p3
    cache = {p1: "a", p3: "b"}
    assert cache[p2] == "a"
    # budget None and its default are the same params
    assert AllocationParams(num_questions=2) == AllocationParams(num_questions=2, budget=16)
    assert (
        len({AllocationParams(num_questions=2), AllocationParams(num_questions=2, budget=16)}) == 1
    )


def test_params_frozen():
    p = AllocationParams(num_questions=2, budget=4)
    with pytest.raises(AttributeError):
        p.budget = 5  # type: ignore[misc]


def test_params_pickle_round_trip():
    p = AllocationParams(
        num_questions=3,
        budget=15,
        prior_alpha=(0.5, 1.0, 2.0),
        prior_beta=3.0,
        pilot=2,
        mode="rounds",
        round_size=4,
        utility="grpo_signal",
    )
    q = pickle.loads(pickle.dumps(p))
    assert q == p and hash(q) == hash(p)
    assert q.cap == p.cap == 15 - 2 * 2
    assert q.total_budget == 15
    state = make_state(q, [1, 0, 2], [1, 2, 0])
    np.testing.assert_allclose(predictive(q, state), [1.5 / 5.5, 1.0 / 6.0, 4.0 / 7.0])
    pm = AllocationParams(num_questions=2, budget=6, max_group=4)
    assert pickle.loads(pickle.dumps(pm)).cap == 4


def test_params_priors_become_tuples():
    p = AllocationParams(num_questions=3, budget=6, prior_alpha=[1, 2, 3], prior_beta=np.ones(3))
    assert p.prior_alpha == (1.0, 2.0, 3.0)
    assert isinstance(p.prior_alpha, tuple)
    assert all(type(x) is float for x in p.prior_alpha)
    # An all-equal sequence is one shared prior: stored as a float, so it is the same params.
    assert p.prior_beta == 1.0 and type(p.prior_beta) is float
    assert AllocationParams(num_questions=3, prior_alpha=(2.0,) * 3) == AllocationParams(
        num_questions=3, prior_alpha=2.0
    )
    q = AllocationParams(num_questions=3, budget=6, prior_alpha=2, prior_beta=np.float32(0.5))
    assert type(q.prior_alpha) is float and q.prior_alpha == 2.0
    assert type(q.prior_beta) is float and q.prior_beta == 0.5
    assert type(AllocationParams(num_questions=2, budget=np.int64(6)).budget) is int


def test_params_replace():
    p = AllocationParams(num_questions=4, budget=20, pilot=1)
    q = p.replace(budget=24, utility="hit")
    assert q.budget == 24 and q.utility == "hit" and q.pilot == 1
    assert p.budget == 20  # the original is untouched
    with pytest.raises(ValueError, match="pilot·B"):
        p.replace(budget=4)


def test_params_to_dict_json():
    p = AllocationParams(num_questions=2, budget=10, prior_alpha=(1.0, 2.5), max_group=6)
    d = p.to_dict()
    assert d == {
        "num_questions": 2,
        "budget": 10,
        "prior_alpha": [1.0, 2.5],
        "prior_beta": 1.0,
        "pilot": 0,
        "max_group": 6,
        "mode": "sequential",
        "round_size": 1,
        "utility": "informative",
    }
    assert AllocationParams(**json.loads(json.dumps(d))) == p


@pytest.mark.parametrize(
    ("kwargs", "cap"),
    [
        ({"num_questions": 4, "budget": 20, "max_group": 7}, 7),
        ({"num_questions": 4, "budget": 20, "pilot": 2}, 20 - 2 * 3),
        ({"num_questions": 4, "budget": 20}, 20),
        ({"num_questions": 1, "budget": 5, "pilot": 3}, 5),
    ],
)
def test_params_cap(kwargs, cap):
    assert AllocationParams(**kwargs).cap == cap


@pytest.mark.parametrize(
    ("kwargs", "exc", "fragments"),
    [
        ({"num_questions": 4, "budget": 8, "pilot": 2}, ValueError, ["budget (8)", "pilot·B"]),
        ({"num_questions": 4, "budget": 3, "pilot": 1}, ValueError, ["budget (3)", "pilot·B"]),
        ({"num_questions": 4, "budget": 17, "max_group": 4}, ValueError, ["17", "B·max_group"]),
        ({"num_questions": 2, "prior_alpha": 0.0}, ValueError, ["prior_alpha", "0.0"]),
        ({"num_questions": 2, "prior_alpha": -1.5}, ValueError, ["prior_alpha", "-1.5"]),
        ({"num_questions": 2, "prior_beta": float("nan")}, ValueError, ["prior_beta", "nan"]),
        ({"num_questions": 2, "prior_beta": float("inf")}, ValueError, ["prior_beta", "inf"]),
        ({"num_questions": 2, "prior_alpha": 1e7}, ValueError, ["prior_alpha", "10000000"]),
        ({"num_questions": 2, "prior_alpha": (1.0, -2.0)}, ValueError, ["prior_alpha[1]", "-2"]),
        ({"num_questions": 2, "prior_beta": [1.0, np.nan]}, ValueError, ["prior_beta[1]", "nan"]),
        ({"num_questions": 3, "prior_alpha": (1.0, 2.0)}, ValueError, ["prior_alpha", "(2,)", "3"]),
        ({"num_questions": 2, "prior_alpha": [[1.0, 1.0]]}, ValueError, ["prior_alpha", "(1, 2)"]),
        ({"num_questions": 2, "prior_alpha": "a"}, TypeError, ["prior_alpha", "'a'"]),
        ({"num_questions": 2, "prior_alpha": True}, TypeError, ["prior_alpha", "bool"]),
        ({"num_questions": 2, "utility": "nope"}, ValueError, ["'nope'"]),
        ({"num_questions": True}, TypeError, ["num_questions", "True"]),
        ({"num_questions": 4.0}, TypeError, ["num_questions", "4.0"]),
        ({"num_questions": 0}, ValueError, ["num_questions", "0"]),
        ({"num_questions": 2, "budget": 6.0}, TypeError, ["budget", "6.0"]),
        ({"num_questions": 2, "budget": True}, TypeError, ["budget", "True"]),
        ({"num_questions": 2, "pilot": 1.0}, TypeError, ["pilot", "1.0"]),
        ({"num_questions": 2, "pilot": -1}, ValueError, ["pilot", "-1"]),
        ({"num_questions": 2, "max_group": 4.5}, TypeError, ["max_group", "4.5"]),
        ({"num_questions": 2, "max_group": False}, TypeError, ["max_group", "False"]),
        ({"num_questions": 2, "max_group": 0}, ValueError, ["max_group", "0"]),
        ({"num_questions": 2, "mode": "rounds", "round_size": 2.0}, TypeError, ["round_size"]),
        ({"num_questions": 2, "mode": "rounds", "round_size": 0}, ValueError, ["round_size"]),
        ({"num_questions": 2, "round_size": 3}, ValueError, ["round_size is 3", "sequential"]),
        ({"num_questions": 2, "mode": "batch"}, ValueError, ["mode", "'batch'"]),
    ],
)
def test_params_validation(kwargs, exc, fragments):
    with pytest.raises(exc) as info:
        AllocationParams(**kwargs)
    for frag in fragments:
        assert frag in str(info.value), (frag, str(info.value))


def test_params_validation_boundaries_accepted():
    # budget = pilot·B + 1 and budget = B·max_group are both valid
    assert AllocationParams(num_questions=4, budget=9, pilot=2).budget == 9
    assert AllocationParams(num_questions=4, budget=16, max_group=4).cap == 4
    assert AllocationParams(num_questions=2, mode="rounds", round_size=5).round_size == 5
    assert AllocationParams(num_questions=2, prior_alpha=1e6).prior_alpha == 1e6


# --- states and transitions -------------------------------------------------------------------


@pytest.fixture
def params3():
    return AllocationParams(
        num_questions=3, budget=9, prior_alpha=(1.0, 2.0, 0.5), prior_beta=(3.0, 1.0, 2.0)
    )


def test_initial_state(params3):
    st0 = initial_state(params3)
    for arr in (st0.successes, st0.failures, st0.rollouts):
        assert arr.dtype == np.int64 and arr.shape == (3,)
        np.testing.assert_array_equal(arr, 0)
        assert not arr.flags.writeable
    assert st0.spent == 0
    assert budget_left(params3, st0) == 9


def test_apply_is_immutable(params3):
    st0 = initial_state(params3)
    st1 = apply(params3, st0, 1, True)
    st2 = apply(params3, st1, 1, 0)
    st3 = apply(params3, st2, 2, 1)
    # old states unchanged
    np.testing.assert_array_equal(st0.successes, [0, 0, 0])
    np.testing.assert_array_equal(st0.rollouts, [0, 0, 0])
    np.testing.assert_array_equal(st1.successes, [0, 1, 0])
    np.testing.assert_array_equal(st1.failures, [0, 0, 0])
    # new counts
    np.testing.assert_array_equal(st3.successes, [0, 1, 1])
    np.testing.assert_array_equal(st3.failures, [0, 1, 0])
    np.testing.assert_array_equal(st3.rollouts, [0, 2, 1])
    assert st3.spent == 3 and budget_left(params3, st3) == 6
    for state in (st0, st1, st2, st3):
        for arr in (state.successes, state.failures, state.rollouts):
            assert not arr.flags.writeable
            with pytest.raises(ValueError):
                arr[0] = 7
    assert st3 == make_state(params3, [0, 1, 1], [0, 1, 0])
    assert st3 != st2


def test_apply_errors():
    p = AllocationParams(num_questions=2, budget=3, max_group=2)
    st0 = initial_state(p)
    with pytest.raises(ValueError, match="question 2"):
        apply(p, st0, 2, 1)
    with pytest.raises(ValueError, match="question -1"):
        apply(p, st0, -1, 1)
    st2 = apply(p, apply(p, st0, 0, 1), 0, 0)
    with pytest.raises(ValueError, match="cap of 2"):
        apply(p, st2, 0, 1)
    st3 = apply(p, st2, 1, 1)
    with pytest.raises(ValueError, match="budget is already spent"):
        apply(p, st3, 1, 1)


def test_apply_counts(params3):
    st0 = initial_state(params3)
    st1 = apply_counts(params3, st0, [2, 0, 3], [1, 0, 3])
    np.testing.assert_array_equal(st1.successes, [1, 0, 3])
    np.testing.assert_array_equal(st1.failures, [1, 0, 0])
    np.testing.assert_array_equal(st1.rollouts, [2, 0, 3])
    assert st1.spent == 5
    np.testing.assert_array_equal(st0.rollouts, [0, 0, 0])
    assert not st1.successes.flags.writeable
    st2 = apply_counts(params3, st1, [0, 4, 0], [0, 2, 0])
    np.testing.assert_array_equal(st2.rollouts, [2, 4, 3])
    assert budget_left(params3, st2) == 0


def test_advance_is_apply_counts_without_the_checks(params3):
    from adaroll_env.model import advance

    st0 = initial_state(params3)
    c, k = np.array([2, 0, 3]), np.array([1, 0, 3])
    a, b = advance(st0, c, k), apply_counts(params3, st0, c, k)
    for field in ("successes", "failures", "rollouts"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    assert a.spent == b.spent == 5 and not a.failures.flags.writeable


def test_apply_counts_errors():
    p = AllocationParams(num_questions=2, budget=6, max_group=4, mode="rounds", round_size=2)
    st0 = initial_state(p)
    with pytest.raises(ValueError, match="shape"):
        apply_counts(p, st0, [1, 1, 1], [0, 0, 0])
    with pytest.raises(ValueError, match="successes <= counts"):
        apply_counts(p, st0, [1, 1], [2, 0])
    with pytest.raises(ValueError, match="successes <= counts"):
        apply_counts(p, st0, [-1, 2], [0, 0])
    with pytest.raises(ValueError, match="exceeds the 6 left"):
        apply_counts(p, st0, [4, 3], [0, 0])
    with pytest.raises(ValueError, match="cap of 4"):
        apply_counts(p, st0, [5, 0], [0, 0])


def test_make_state(params3):
    st = make_state(params3, [1, 0, 2], [0, 3, 1])
    np.testing.assert_array_equal(st.rollouts, [1, 3, 3])
    assert st.spent == 7
    with pytest.raises(ValueError, match="shape"):
        make_state(params3, [1, 0], [0, 3])
    with pytest.raises(ValueError, match="non-negative"):
        make_state(params3, [1, -1, 0], [0, 3, 0])
    with pytest.raises(ValueError, match="budget 9"):
        make_state(params3, [5, 0, 0], [0, 5, 0])
    pc = AllocationParams(num_questions=2, budget=6, max_group=3)
    with pytest.raises(ValueError, match="cap of 3"):
        make_state(pc, [2, 0], [2, 0])
    # make_state copies: mutating the input does not change the state
    s = np.array([1, 0, 0])
    st = make_state(params3, s, [0, 0, 0])
    s[0] = 5
    assert st.successes[0] == 1


def test_posterior_predictive_variance_utility(params3):
    st = make_state(params3, [1, 0, 2], [0, 3, 1])
    a, b = posterior(params3, st)
    np.testing.assert_array_equal(a, [2.0, 2.0, 2.5])
    np.testing.assert_array_equal(b, [3.0, 4.0, 3.0])
    np.testing.assert_allclose(predictive(params3, st), [2 / 5, 2 / 6, 2.5 / 5.5])
    np.testing.assert_allclose(
        posterior_variance(params3, st),
        [2 * 3 / (25 * 6), 2 * 4 / (36 * 7), 2.5 * 3 / (5.5**2 * 6.5)],
    )
    # informative: (1,0) no, (0,3) no, (2,1) yes
    assert utility_value(params3, st) == 1.0
    pg = params3.replace(utility="grpo_signal")
    assert utility_value(pg, st) == pytest.approx(2 * math.sqrt(2) / 3)
    assert utility_value(params3, initial_state(params3)) == 0.0


def test_capacity_and_feasible():
    p = AllocationParams(num_questions=3, budget=7, max_group=3)
    st = make_state(p, [3, 1, 0], [0, 0, 0])
    np.testing.assert_array_equal(capacity(p, st), [0, 2, 3])
    np.testing.assert_array_equal(feasible(p, st), [False, True, True])


# --- observe ----------------------------------------------------------------------------------


def test_observe_keys_shapes_values(params3):
    st = make_state(params3, [1, 0, 2], [0, 3, 1])
    obs = observe(params3, st)
    assert tuple(obs) == OBS_KEYS
    assert set(obs) == {"alpha", "beta", "successes", "rollouts", "budget_left", "mean", "std"}
    for key, arr in obs.items():
        assert arr.dtype == np.float32, key
        assert arr.ndim == 1, key
        assert arr.shape == ((1,) if key == "budget_left" else (3,)), key
    np.testing.assert_array_equal(obs["alpha"], [2.0, 2.0, 2.5])
    np.testing.assert_array_equal(obs["beta"], [3.0, 4.0, 3.0])
    np.testing.assert_array_equal(obs["successes"], [1, 0, 2])
    np.testing.assert_array_equal(obs["rollouts"], [1, 3, 3])
    np.testing.assert_array_equal(obs["budget_left"], [2.0])
    a, b = np.array([2.0, 2.0, 2.5]), np.array([3.0, 4.0, 3.0])
    np.testing.assert_allclose(obs["mean"], a / (a + b), rtol=1e-6)
    np.testing.assert_allclose(obs["std"], np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1))), rtol=1e-6)
    assert observation_space(params3).contains(obs)


def test_observe_fresh_arrays(params3):
    st = make_state(params3, [1, 0, 2], [0, 3, 1])
    o1, o2 = observe(params3, st), observe(params3, st)
    for key in o1:
        assert o1[key] is not o2[key]
        assert not np.shares_memory(o1[key], o2[key])
        o1[key][...] = -5.0  # writing into one observation touches nothing else
    o3 = observe(params3, st)
    for key in o2:
        np.testing.assert_array_equal(o2[key], o3[key])
    np.testing.assert_array_equal(st.successes, [1, 0, 2])
    assert params3.prior_alpha == (1.0, 2.0, 0.5)


def test_observe_true_p(params3):
    obs = observe(params3, initial_state(params3), true_p=[0.1, 0.5, 0.9])
    assert obs["true_p"].dtype == np.float32
    np.testing.assert_allclose(obs["true_p"], [0.1, 0.5, 0.9], rtol=1e-7)
    assert observation_space(params3, reveal_truth=True).contains(obs)
    assert "true_p" not in observation_space(params3).spaces


def test_observe_matches_env_observation():
    env = gym.make(
        "AdaRoll/BetaBernoulli-v0",
        num_questions=3,
        budget=10,
        pilot=2,
        prior_alpha=(1.0, 2.0, 0.5),
        prior_beta=(3.0, 1.0, 2.0),
    )
    obs, _ = env.reset(seed=7)
    for action in (0, 2, 2, 1):
        u = env.unwrapped
        want = observe(u.episode_params, u.state)
        assert set(obs) == set(want)
        for key in want:
            assert obs[key].dtype == want[key].dtype and obs[key].shape == want[key].shape
            np.testing.assert_array_equal(obs[key], want[key])
        obs, *_ = env.step(action)


# --- encode_counts / decode_action ----------------------------------------------------------


def _rounds_params(b, total, cap=None):
    return AllocationParams(
        num_questions=b, budget=total, mode="rounds", round_size=total, max_group=cap
    )


@pytest.mark.parametrize("counts", [[4, 0, 0, 0], [1, 1, 1, 1], [0, 3, 1, 0], [5, 4, 3, 2]])
def test_encode_decode_hand(counts):
    p = _rounds_params(len(counts), sum(counts))
    got = decode_action(p, initial_state(p), encode_counts(counts))
    np.testing.assert_array_equal(got, counts)


@settings(max_examples=100, deadline=None)
@given(counts=st.lists(st.integers(0, 300), min_size=1, max_size=24))
def test_encode_decode_round_trip_lists(counts):
    if sum(counts) == 0:
        counts = [*counts[:-1], 1]
    p = _rounds_params(len(counts), sum(counts))
    got = decode_action(p, initial_state(p), encode_counts(counts))
    np.testing.assert_array_equal(got, counts)


@settings(max_examples=60, deadline=None)
@given(
    b=st.integers(1, 512),
    total=st.integers(1, 4096),
    sparsity=st.floats(0.0, 0.95),
    seed=st.integers(0, 2**32 - 1),
)
def test_encode_decode_round_trip_large(b, total, sparsity, seed):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(b, 0.3)) * (rng.random(b) >= sparsity)
    if probs.sum() == 0:
        probs[rng.integers(b)] = 1.0
    counts = rng.multinomial(total, probs / probs.sum())
    p = _rounds_params(b, total)
    got = decode_action(p, initial_state(p), encode_counts(counts))
    np.testing.assert_array_equal(got, counts)


@settings(max_examples=60, deadline=None)
@given(
    b=st.integers(1, 16),
    cap=st.integers(2, 12),
    r=st.integers(1, 20),
    seed=st.integers(0, 2**32 - 1),
)
def test_encode_decode_round_trip_mid_episode(b, cap, r, seed):
    """Round trip from a state with rollouts spent and caps in force."""
    rng = np.random.default_rng(seed)
    p = AllocationParams(
        num_questions=b, budget=b * cap, max_group=cap, mode="rounds", round_size=r
    )
    n = rng.integers(0, cap + 1, size=b)
    if n.sum() == b * cap:
        n[0] -= 1
    s = rng.binomial(n, 0.5)
    state = make_state(p, s, n - s)
    room = cap - n
    size = min(r, budget_left(p, state))
    # a random feasible allocation of `size` under the room left
    counts = np.zeros(b, dtype=np.int64)
    for _ in range(size):
        i = rng.choice(np.flatnonzero(counts < room))
        counts[i] += 1
    got = decode_action(p, state, encode_counts(counts))
    np.testing.assert_array_equal(got, counts)


@pytest.mark.parametrize(
    "action",
    [
        np.array([0.0, np.nan, 0.0], dtype=np.float32),
        np.array([0.0, 1.001, 0.0], dtype=np.float32),
        np.array([-1.5, 0.0, 0.0]),
        np.array([0.0, 0.0, np.inf]),
        np.zeros(4, dtype=np.float32),
        np.zeros((3, 1), dtype=np.float32),
        np.zeros((1, 3), dtype=np.float32),
        np.array(["a", "b", "c"]),
        0.5,
    ],
)
def test_decode_action_rejects(action):
    p = _rounds_params(3, 6)
    with pytest.raises(ValueError, match="action"):
        decode_action(p, initial_state(p), action)


def test_decode_action_accepts_float64_and_lists():
    p = _rounds_params(3, 6)
    st0 = initial_state(p)
    want = [4, 2, 0]
    a64 = encode_counts(want).astype(np.float64)
    np.testing.assert_array_equal(decode_action(p, st0, a64), want)
    np.testing.assert_array_equal(decode_action(p, st0, a64.tolist()), want)
    # float64 values a hair outside [-1, 1] cast to float32 ±1 and are accepted
    edge = np.array([1.0 + 1e-12, -1.0 - 1e-12, -1.0], dtype=np.float64)
    np.testing.assert_array_equal(decode_action(p, st0, edge), [6, 0, 0])
    # all -1: even split
    np.testing.assert_array_equal(decode_action(p, st0, -np.ones(3)), [2, 2, 2])


def test_decode_action_last_round_is_what_is_left():
    p = AllocationParams(num_questions=2, budget=10, mode="rounds", round_size=4)
    st = make_state(p, [4, 2], [0, 2])  # 8 spent, 2 left
    got = decode_action(p, st, np.array([1.0, 1.0]))
    np.testing.assert_array_equal(got, [1, 1])


def test_posterior_arithmetic_has_one_empty_case():
    # No data: the posterior mean is the prior mean (never 0 or NaN), worked out by hand.
    assert am.posterior_mean(2.0, 6.0) == pytest.approx(0.25)
    assert am.failure_probability(2.0, 6.0) == pytest.approx(0.75)
    assert am.posterior_mean(1.0, 1.0, 3, 1) == pytest.approx(4 / 6)
    assert am.failure_probability(1.0, 1.0, 3, 1) == pytest.approx(2 / 6)
    # Beta(2, 2): E[p(1-p)] = 4/20 = 0.2; variance 0.2/4; after 2 more rollouts 0.2/6.
    assert am.expected_posterior_variance(2.0, 2.0) == pytest.approx(0.05)
    assert am.expected_posterior_variance(2.0, 2.0, 2) == pytest.approx(0.2 / 6)
    step = am.expected_posterior_variance(2.0, 2.0, 1) - am.expected_posterior_variance(2.0, 2.0, 2)
    assert am.variance_reduction(2.0, 2.0, 1) == pytest.approx(step)


def test_prior_matches_float32_observation_only():
    params = am.AllocationParams(num_questions=2, budget=8, prior_alpha=0.3, prior_beta=1.7)
    s = np.array([1000, 3])
    f = np.array([0, 997])
    obs_a = (np.float32(0.3) + s.astype(np.float32)).astype(np.float64) - s
    obs_b = (np.float32(1.7) + f.astype(np.float32)).astype(np.float64) - f
    pa, pb = am.prior_arrays(params)
    assert am.prior_matches(pa, pb, obs_a, obs_b, s, f).all()
    # A real change of prior (one part in 1e5) is seen, with or without counts.
    assert not am.prior_matches(0.3, 1.7, 0.3 * (1 + 1e-5), 1.7)
    assert am.prior_matches(0.3, 1.7, 0.3 * (1 + 1e-7), 1.7)
    assert not am.prior_matches(pa, pb, pa * (1 + 1e-4), pb, s, f).all()


# --- rounds schedules ----------------------------------------------------------------------------


def _round_sizes(params: AllocationParams) -> list[int]:
    """Sizes of the decisions of one episode, every round given to question 0 first (any split
    spends the same), outcomes all failures."""
    state = am.initial_state(params)
    B = params.num_questions
    if params.pilot:
        state = am.apply_counts(params, state, [params.pilot] * B, [0] * B)
    sizes = []
    while not am.is_done(params, state):
        r = am.next_round_size(params, state)
        counts = am.split_round(np.ones(B), r, am.capacity(params, state))
        state = am.apply_counts(params, state, counts, np.zeros(B, dtype=np.int64))
        sizes.append(r)
    return sizes


@pytest.mark.parametrize(
    ("schedule", "budget", "pilot", "sizes"),
    [
        ((384, 128), 512, 0, [384, 128]),
        ((384, 64), 512, 0, [384, 64, 64]),  # the last entry repeats
        ((10, 3), 20, 1, [10, 3, 3]),  # after the pilot's 4 rollouts (B = 4)
        ((10, 4), 20, 0, [10, 4, 4, 2]),  # the last round is capped by the budget left
        ((30,), 20, 0, [20]),  # one round larger than the budget: the whole budget
    ],
)
def test_round_schedule_hands_out_its_sizes(schedule, budget, pilot, sizes):
    B = 64 if budget == 512 else 4
    p = AllocationParams(
        num_questions=B, budget=budget, pilot=pilot, mode="rounds", round_schedule=schedule
    )
    assert _round_sizes(p) == sizes
    state = am.make_state(p, [0] * B, [pilot] * B)
    assert am.round_size_at(p, state.spent) == am.next_round_size(p, state) == sizes[0]


def test_round_schedule_normalises_and_pickles():
    p = AllocationParams(num_questions=4, budget=16, mode="rounds", round_schedule=[8, 4, 4])
    assert p.round_schedule == (8, 4) and p.round_size == 8
    assert not p.unit_rounds
    assert pickle.loads(pickle.dumps(p)) == p
    assert p.to_dict()["round_schedule"] == [8, 4]
    # equal rounds are one entry, i.e. round_size: the same params as today's
    q = AllocationParams(num_questions=4, budget=16, mode="rounds", round_schedule=(4, 4))
    assert q == AllocationParams(num_questions=4, budget=16, mode="rounds", round_size=4)
    assert "round_schedule" not in q.to_dict()


@pytest.mark.parametrize(
    ("kw", "error", "match"),
    [
        ({"round_schedule": (8, 8)}, ValueError, "mode is 'sequential'"),
        ({"mode": "rounds", "round_schedule": (8, 0)}, ValueError, r"round_schedule\[1\] = 0"),
        ({"mode": "rounds", "round_schedule": (8, 2.5)}, TypeError, "not an integer"),
        ({"mode": "rounds", "round_schedule": "8,8"}, TypeError, "parse_round_schedule"),
        ({"mode": "rounds", "round_size": 4, "round_schedule": (8, 2)}, ValueError, "both set"),
    ],
)
def test_round_schedule_validation(kw, error, match):
    with pytest.raises(error, match=match):
        AllocationParams(num_questions=4, budget=16, **kw)


def test_step_round_plan_is_the_shared_rule():
    assert am.step_round_plan(512, 64, adaptive=True) == (64, ())
    assert am.step_round_plan(512, 64, adaptive=True, rounds=3) == (171, ())
    assert am.step_round_plan(512, 64, adaptive=True, round_schedule="384,128") == (
        384,
        (384, 128),
    )
    # outcome-blind allocators keep one round; the pilot's rollouts come off the budget
    assert am.step_round_plan(512, 64, adaptive=False, round_schedule="384,128") == (512, ())
    assert am.step_round_plan(
        512, 64, adaptive=True, round_schedule="0.75,0.25", pilot_rollouts=64
    ) == (336, (336, 112))
    with pytest.raises(ValueError, match="give one of the three"):
        am.step_round_plan(512, 64, adaptive=True, rounds=2, round_schedule="384,128")


@pytest.fixture
def forget_test_utility():
    """Remove the utility a test registers: the registry is process-wide, and a run in the same
    test process would log it among its utilities."""
    from adaroll_env import utilities

    yield
    utilities._REGISTRY.pop("adaroll_test_u", None)
    utilities.get_utility.cache_clear()


def test_question_utility_is_the_utilitys_own_value_and_follows_re_registration(
    forget_test_utility,
):
    from adaroll_env import model
    from adaroll_env.utilities import register_utility

    params = model.AllocationParams(num_questions=3, budget=12, utility="snr(8)")
    state = model.make_state(params, [2, 0, 1], [3, 0, 0])
    for q in range(3):
        assert (
            model.question_utility(params, state, q) == model.question_utilities(params, state)[q]
        )
    register_utility("adaroll_test_u", lambda s, f: np.asarray(s, dtype=np.float64), overwrite=True)
    p2 = params.replace(utility="adaroll_test_u")
    assert model.question_utility(p2, state, 0) == 2.0
    register_utility("adaroll_test_u", lambda s, f: 10.0 + np.asarray(f), overwrite=True)
    assert model.question_utility(p2, state, 0) == 13.0  # the new function, not a stale value
