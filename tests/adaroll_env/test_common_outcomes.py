"""``outcomes="common"``: common random numbers, so that paired episodes stay paired."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import adaroll_env

gym.register_envs(adaroll_env)
ROUNDS = "AdaRoll/BetaBernoulliRounds-v0"


def _play(counts_per_round: list[list[int]], *, outcomes: str, seed: int = 7) -> np.ndarray:
    """Successes per question after the rounds, on one seed."""
    env = gym.make(ROUNDS, num_questions=4, budget=16, round_size=4, outcomes=outcomes,
                   reveal_truth=True)  # fmt: skip
    env.reset(seed=seed)
    obs = None
    for counts in counts_per_round:
        obs, *_ = env.step(adaroll_env.encode_counts(counts))
    assert obs is not None
    return np.asarray(obs["successes"])


def test_a_question_given_the_same_rollouts_gets_the_same_outcomes() -> None:
    # question 0 gets 4 rollouts under both plans; the others are split differently
    a = [[1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1]]
    b = [[1, 3, 0, 0], [1, 0, 3, 0], [1, 0, 0, 3], [1, 1, 1, 1]]
    common_a, common_b = _play(a, outcomes="common"), _play(b, outcomes="common")
    assert common_a[0] == common_b[0]
    # the same holds seed after seed, where the binomial stream desynchronises
    same = [_play(a, outcomes="common", seed=s)[0] == _play(b, outcomes="common", seed=s)[0]
            for s in range(40)]  # fmt: skip
    desync = [_play(a, outcomes="binomial", seed=s)[0] == _play(b, outcomes="binomial", seed=s)[0]
              for s in range(40)]  # fmt: skip
    assert all(same) and not all(desync)


def test_the_order_of_rollouts_does_not_matter() -> None:
    # question 1's rollouts 0-3 in one round or spread over four: the same successes
    once = _play([[0, 4, 0, 0], [4, 0, 0, 0], [0, 0, 4, 0], [0, 0, 0, 4]], outcomes="common")
    spread = _play([[1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1]], outcomes="common")
    assert np.array_equal(once, spread)


def test_outcomes_are_bernoulli_at_the_true_pass_rate() -> None:
    env = gym.make(ROUNDS, num_questions=64, budget=64 * 40, round_size=64 * 40,
                   max_group=40, outcomes="common", reveal_truth=True)  # fmt: skip
    hits, expected, n = 0.0, 0.0, 0
    for seed in range(20):
        _, info = env.reset(seed=seed)
        obs, *_ = env.step(adaroll_env.encode_counts([40] * 64))
        hits += float(obs["successes"].sum())
        expected += 40 * float(info["true_p"].sum())
        n += 64 * 40
    # 51,200 Bernoulli draws: the total is within 4 standard deviations of its mean
    assert abs(hits - expected) < 4 * np.sqrt(n / 4)


def test_the_sequential_env_shares_the_draws_and_the_default_draws_as_before() -> None:
    seq = gym.make("AdaRoll/BetaBernoulli-v0", num_questions=4, budget=16, outcomes="common")
    seq.reset(seed=7)
    for q in [0, 1, 2, 3] * 4:
        obs, *_ = seq.step(q)
    assert np.array_equal(obs["successes"], _play([[1, 1, 1, 1]] * 4, outcomes="common"))
    # the default draws as before the option existed: the pass rates, then one binomial a
    # round, all from the env's seeded stream (replayed here by hand)
    from gymnasium.utils.seeding import np_random

    env = gym.make(ROUNDS, num_questions=4, budget=16, round_size=4)
    assert env.unwrapped.outcomes == "binomial"
    env.reset(seed=7)
    rng, _ = np_random(7)
    p = env.unwrapped.difficulty.sample(rng, 4)
    for _ in range(4):
        obs, *_ = env.step(adaroll_env.encode_counts([1, 1, 1, 1]))
    expected = sum(rng.binomial(np.ones(4, dtype=np.int64), p) for _ in range(4))
    assert np.array_equal(obs["successes"], expected)


def test_an_unknown_outcomes_value_names_the_choices() -> None:
    with pytest.raises(ValueError, match=r"outcomes must be one of \['binomial', 'common'\]"):
        gym.make(ROUNDS, outcomes="crn")


def test_both_envs_pass_the_checkers_with_common_outcomes() -> None:
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    for env_id in (ROUNDS, "AdaRoll/BetaBernoulli-v0"):
        env = gym.make(env_id, num_questions=4, budget=16, pilot=1, outcomes="common")
        check_env(env.unwrapped, skip_render_check=True)
        sb3_check_env(env.unwrapped)
