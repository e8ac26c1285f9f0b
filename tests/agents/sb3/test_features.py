"""Tests of agents.sb3.features: the per-question features a learned allocator sees, worked out
by hand from a known state, and the wrapper that hands them to SB3."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import adaroll_env
from adaroll_env import model
from agents.sb3.features import (
    FEATURES_VERSION,
    N_CONTEXT,
    N_FEATURES,
    QuestionFeatures,
    feature_config,
    feature_dim,
    feature_space,
    flat_features,
    question_features,
)

gym.register_envs(adaroll_env)
ROUNDS = "AdaRoll/BetaBernoulliRounds-v0"
SEQ = "AdaRoll/BetaBernoulli-v0"


def test_features_shape_and_values():
    env = QuestionFeatures(gym.make(ROUNDS, num_questions=5, budget=20, pilot=1))
    obs, _ = env.reset(seed=0)
    assert obs.shape == (5 * N_FEATURES + N_CONTEXT,) == env.observation_space.shape
    assert env.observation_space.contains(obs)
    q = obs[: 5 * N_FEATURES].reshape(5, N_FEATURES)
    raw = env.unwrapped._obs()
    np.testing.assert_allclose(q[:, 0], raw["mean"])
    np.testing.assert_allclose(q[:, 2], 1 / 4)  # one pilot rollout, G = 4
    np.testing.assert_array_equal(q[:, 4] + q[:, 5], 1.0)  # each pilot was a success or not
    ctx = obs[5 * N_FEATURES :]
    np.testing.assert_allclose(ctx[0], 15 / 20)


def test_question_features_by_hand():
    # B = 2, N = 16 (G = 8, cap 16), prior Beta(1, 1); counts (s, f) = (1, 1) and (0, 3)
    params = model.AllocationParams(num_questions=2, budget=16)
    obs = model.observe(params, model.make_state(params, [1, 0], [1, 3]))
    q, ctx = question_features(params, obs)
    assert q.shape == (2, N_FEATURES) and q.dtype == np.float32
    mean = [2 / 4, 1 / 5]
    std = [math.sqrt(2 * 2 / (16 * 5)), math.sqrt(1 * 4 / (25 * 6))]
    want = np.array(
        [
            [mean[0], 4 * std[0], 2 / 8, 1.5 / 3, 1, 1, 14 / 16, math.log1p(4) / 5, 0, 1 / 2],
            [mean[1], 4 * std[1], 3 / 8, 0.5 / 4, 0, 1, 13 / 16, math.log1p(5) / 5, 0, 1 / 2],
        ]
    )
    np.testing.assert_allclose(q, want, rtol=1e-6)
    # 11 left of 16; a sequential decision is one rollout
    np.testing.assert_allclose(ctx, [11 / 16, 1 / 11, 1 / 2, 11 / 16], rtol=1e-6)


def test_context_in_rounds_and_at_the_end():
    params = model.AllocationParams(num_questions=2, budget=16, mode="rounds", round_size=4)
    obs = model.observe(params, model.make_state(params, [1, 0], [1, 3]))
    _, ctx = question_features(params, obs)
    np.testing.assert_allclose(ctx, [11 / 16, 4 / 11, 4 / 2, 11 / 16], rtol=1e-6)
    done = model.observe(params, model.make_state(params, [8, 0], [0, 8]))
    _, ctx = question_features(params, done)
    assert ctx[0] == 0.0 and ctx[1] == 0.0  # no budget left: no division by zero


def test_flat_features_questions_first_then_context():
    params = model.AllocationParams(num_questions=3, budget=12)
    obs = model.observe(params, model.make_state(params, [1, 0, 2], [0, 1, 0]))
    q, ctx = question_features(params, obs)
    flat = flat_features(params, obs)
    assert flat.shape == (feature_dim(3),) == (3 * N_FEATURES + N_CONTEXT,)
    np.testing.assert_array_equal(flat[: 3 * N_FEATURES].reshape(3, N_FEATURES), q)
    np.testing.assert_array_equal(flat[3 * N_FEATURES :], ctx)


def test_features_refuse_another_batch_size():
    small = model.AllocationParams(num_questions=2, budget=8)
    big = model.AllocationParams(num_questions=3, budget=12)
    with pytest.raises(ValueError) as info:
        question_features(small, model.observe(big, model.initial_state(big)))
    assert str(info.value) == (
        "observation has (3,) questions but the features were built for B=2: use the params of "
        "the env that produced the observation"
    )


def test_feature_space_and_config():
    box = feature_space(4)
    assert box.shape == (44,) and box.dtype == np.float32
    assert float(box.high[0]) == 10.0 and float(box.low[0]) == -10.0
    assert float(feature_space(20).high[0]) == 21.0  # a count ratio can reach B
    assert feature_config() == {"n_features": 10, "n_context": 4, "version": FEATURES_VERSION}


def test_questions_in_one_state_get_their_place_among_equals():
    # B = 6: three fresh questions, two at (1, 0), one at (0, 1); places by index among equals
    params = model.AllocationParams(num_questions=6, budget=24)
    obs = model.observe(params, model.make_state(params, [0, 1, 0, 0, 1, 0], [0, 0, 0, 1, 0, 0]))
    q, _ = question_features(params, obs)
    np.testing.assert_allclose(q[:, 8], [0, 0, 1 / 3, 0, 1 / 2, 2 / 3])
    np.testing.assert_allclose(q[:, 9], [3 / 6, 2 / 6, 3 / 6, 1 / 6, 2 / 6, 3 / 6])
    # a permutation of the questions permutes every feature but the place among equals, whose
    # values within each state are the same set
    perm = np.array([5, 3, 1, 0, 4, 2])
    obs_p = {k: v[perm] if v.shape == (6,) else v for k, v in obs.items()}
    q_p, _ = question_features(params, obs_p)
    np.testing.assert_allclose(q_p[:, [0, 1, 2, 3, 4, 5, 6, 7, 9]],
                               q[perm][:, [0, 1, 2, 3, 4, 5, 6, 7, 9]])  # fmt: skip
    for state in ((0, 0), (1, 0)):
        rows = [i for i in range(6) if (obs["successes"][i], obs["rollouts"][i]) == state]
        rows_p = [i for i in range(6) if (obs_p["successes"][i], obs_p["rollouts"][i]) == state]
        assert sorted(q[rows, 8]) == sorted(q_p[rows_p, 8])


def test_wrapper_refuses_other_envs_and_passes_the_mask():
    with pytest.raises(TypeError, match=r"wraps an adaroll env \(env.unwrapped.params\)"):
        QuestionFeatures(gym.make("CartPole-v1"))
    env = QuestionFeatures(gym.make(SEQ, num_questions=3, budget=6, max_group=2))
    env.reset(seed=0)
    for a in (0, 0):
        env.step(a)
    assert env.action_masks().tolist() == [False, True, True]
    assert env.params is env.unwrapped.params
