"""Property tests (hypothesis): whatever the params and actions, the invariants of design §2–3 hold.

Budget spent exactly, caps respected, successes ≤ rollouts, posteriors valid, observations in
the observation space, every round's allocation summing to the round.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adaroll_env.envs import BetaBernoulliEnv, BetaBernoulliRoundsEnv
from adaroll_env.model import (
    AllocationParams,
    apply,
    apply_counts,
    capacity,
    decode_action,
    initial_state,
    observation_space,
    observe,
    split_round,
)

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SEQ_POLICIES = ("random_redirect", "masked", "always_first_redirect", "last_masked_redirect")
ROUND_POLICIES = ("uniform_box", "all_minus_one", "extremes", "one_hot", "tiny_weights")


@st.composite
def env_setups(draw):
    """Valid env kwargs (both kinds), a policy name and a seed."""
    b = draw(st.integers(1, 12))
    pilot = draw(st.integers(0, 3))
    max_group = draw(st.one_of(st.none(), st.integers(pilot + 1, pilot + 8)))
    hi = b * max_group if max_group is not None else pilot * b + 6 * b
    budget = draw(st.integers(pilot * b + 1, hi))
    kind = draw(st.sampled_from(("sequential", "rounds")))
    prior = st.floats(1e-3, 1e3)
    per_question = draw(st.booleans())
    if per_question:
        pa = tuple(draw(st.lists(prior, min_size=b, max_size=b)))
        pb = tuple(draw(st.lists(prior, min_size=b, max_size=b)))
    else:
        pa, pb = draw(prior), draw(prior)
    kwargs = {
        "num_questions": b,
        "budget": budget,
        "pilot": pilot,
        "max_group": max_group,
        "prior_alpha": pa,
        "prior_beta": pb,
        "utility": draw(st.sampled_from(("informative", "hit", "grpo_signal", "dr_grpo_signal"))),
        "difficulty": draw(st.sampled_from(("rlvr", "u-shaped", "uniform", (0.2, 5.0)))),
        "reward_mode": draw(st.sampled_from(("dense", "terminal"))),
        "reveal_truth": True,
    }
    if kind == "rounds":
        kwargs["round_size"] = draw(st.one_of(st.none(), st.integers(1, 2 * b + 3)))
        policy = draw(st.sampled_from(ROUND_POLICIES))
    else:
        policy = draw(st.sampled_from(SEQ_POLICIES))
        kwargs["invalid_action"] = "raise" if policy == "masked" else "redirect"
    return kind, kwargs, policy, draw(st.integers(0, 2**31 - 1))


def _seq_action(policy, rng, env):
    b = env.params.num_questions
    mask = env.action_masks()
    if policy == "random_redirect":
        return int(rng.integers(b))
    if policy == "masked":
        return int(rng.choice(np.flatnonzero(mask)))
    if policy == "always_first_redirect":
        return 0
    # the last masked question when there is one (forces a redirect), else a random one
    closed = np.flatnonzero(~mask)
    return int(closed[-1]) if closed.size else int(rng.integers(b))


def _rounds_action(policy, rng, b):
    if policy == "uniform_box":
        return rng.uniform(-1.0, 1.0, b).astype(np.float32)
    if policy == "all_minus_one":
        return np.full(b, -1.0, dtype=np.float32)
    if policy == "extremes":
        return rng.choice(np.array([-1.0, 1.0], dtype=np.float32), size=b)
    if policy == "one_hot":
        a = np.full(b, -1.0)
        a[rng.integers(b)] = 1.0
        return a  # float64, accepted after the cast
    return (-1.0 + rng.uniform(0, 1e-6, b)).astype(np.float32)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(setup=env_setups())
def test_env_invariants(setup):
    kind, kwargs, policy, seed = setup
    env = BetaBernoulliEnv(**kwargs) if kind == "sequential" else BetaBernoulliRoundsEnv(**kwargs)
    p = env.params
    b, n_total, cap = p.num_questions, p.total_budget, p.cap
    space = env.observation_space
    prior_a = np.broadcast_to(np.asarray(p.prior_alpha, dtype=np.float32), (b,))
    prior_b = np.broadcast_to(np.asarray(p.prior_beta, dtype=np.float32), (b,))
    rng = np.random.default_rng(seed)

    obs, info = env.reset(seed=seed)
    assert space.contains(obs)
    assert obs["budget_left"][0] == n_total - p.pilot * b
    total_reward, steps, redirected = 0.0, 0, 0
    alloc = np.asarray(info["allocation"]).copy()
    terminated = False
    while not terminated:
        left = n_total - int(alloc.sum())
        if kind == "sequential":
            action = _seq_action(policy, rng, env)
            was_masked = not env.action_masks()[action]
        else:
            action = _rounds_action(policy, rng, b)
        obs, reward, terminated, truncated, info = env.step(action)
        steps += 1
        total_reward += reward
        new_alloc = np.asarray(info["allocation"])
        delta = new_alloc - alloc
        assert np.all(delta >= 0)
        if kind == "sequential":
            assert delta.sum() == 1
            redirected += int(was_masked)
            assert info["redirected"] == redirected
            assert delta[action] == (0 if was_masked else 1)
        else:
            assert delta.sum() == min(p.round_size, left)  # the round is spent exactly
        alloc = new_alloc.copy()
        # invariants of every observation
        assert not truncated
        assert space.contains(obs)
        assert np.all(new_alloc <= cap)
        assert np.all(obs["successes"] <= obs["rollouts"])
        np.testing.assert_array_equal(obs["rollouts"], new_alloc)
        for key in ("alpha", "beta", "mean", "std"):
            assert np.all(np.isfinite(obs[key])), key
        assert np.all(obs["alpha"] >= prior_a) and np.all(obs["beta"] >= prior_b)
        assert obs["budget_left"][0] == n_total - alloc.sum()
        assert steps <= n_total  # no endless episode
    assert alloc.sum() == n_total
    assert obs["budget_left"][0] == 0
    assert abs(total_reward - info["utility"]) < 1e-9
    if kind == "sequential":
        assert steps == n_total - p.pilot * b
    else:
        r = p.round_size
        assert steps == -(-(n_total - p.pilot * b) // r)


@SETTINGS
@given(
    b=st.integers(1, 12),
    cap=st.integers(1, 10),
    r=st.integers(1, 30),
    seed=st.integers(0, 2**31 - 1),
    weights=st.sampled_from(("uniform", "all_minus_one", "extremes", "sparse")),
)
def test_model_rounds_spend_budget(b, cap, r, seed, weights):
    """Pure-model episode in rounds: decode_action + apply_counts always spend the round."""
    rng = np.random.default_rng(seed)
    budget = int(rng.integers(1, b * cap + 1))
    p = AllocationParams(num_questions=b, budget=budget, max_group=cap, mode="rounds", round_size=r)
    state = initial_state(p)
    space = observation_space(p)
    while state.spent < budget:
        if weights == "uniform":
            a = rng.uniform(-1, 1, b)
        elif weights == "all_minus_one":
            a = -np.ones(b)
        elif weights == "extremes":
            a = rng.choice([-1.0, 1.0], size=b)
        else:
            a = np.where(rng.random(b) < 0.8, -1.0, rng.uniform(-1, 1, b))
        room = capacity(p, state)
        counts = decode_action(p, state, a)
        assert counts.sum() == min(r, budget - state.spent)
        assert np.all(counts <= room) and np.all(counts >= 0)
        state = apply_counts(p, state, counts, rng.binomial(counts, rng.random(b)))
        obs = observe(p, state)
        assert space.contains(obs)
    assert state.spent == budget
    assert np.all(state.rollouts <= cap)


@SETTINGS
@given(
    b=st.integers(1, 10),
    seed=st.integers(0, 2**31 - 1),
    prior=st.floats(1e-3, 1e4),
)
def test_model_sequential_posterior_valid(b, seed, prior):
    rng = np.random.default_rng(seed)
    p = AllocationParams(num_questions=b, budget=int(rng.integers(1, 8 * b + 1)), prior_alpha=prior)
    state = initial_state(p)
    space = observation_space(p)
    for _ in range(p.total_budget):
        q = int(rng.integers(b))
        new = apply(p, state, q, bool(rng.integers(2)))
        assert new.spent == state.spent + 1
        assert new.rollouts[q] == state.rollouts[q] + 1
        state = new
        obs = observe(p, state)
        assert space.contains(obs)
        assert np.all(obs["alpha"] >= np.float32(prior)) and np.all(obs["beta"] >= 1.0)
        assert np.all((obs["mean"] >= 0) & (obs["mean"] <= 1))
    assert state.spent == p.total_budget


@SETTINGS
@given(data=st.data(), b=st.integers(1, 16))
def test_split_round_sums_to_round(data, b):
    weights = np.array(
        data.draw(
            st.lists(
                st.one_of(st.just(0.0), st.floats(0.0, 1.0), st.floats(1e-300, 1e-200)),
                min_size=b,
                max_size=b,
            )
        )
    )
    cap = np.array(data.draw(st.lists(st.integers(0, 12), min_size=b, max_size=b)))
    total = data.draw(st.integers(0, int(cap.sum())))
    counts = split_round(weights, total, cap)
    assert counts.dtype == np.int64
    assert counts.sum() == total
    assert np.all((counts >= 0) & (counts <= cap))
