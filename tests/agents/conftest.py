"""What SB3's ``evaluate_policy`` of an allocator must equal, computed without SB3."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from stable_baselines3.common.evaluation import evaluate_policy

from adaroll_env import model as am


def replay(make_env: Callable[[], object], make_alloc: Callable[[object], object], seed: int,
           episodes: int) -> list[float]:  # fmt: skip
    """Each episode's return when the allocator acts on the env by hand, as ``evaluate_policy``
    does after ``env.reset(seed=seed)`` (episodes continue the env's stream). Checks on the way
    that a return is the final utility of the counts (the reward telescopes) and that every
    episode spends exactly its budget within the caps."""
    env = make_env()
    alloc = make_alloc(env)
    env.reset(seed=seed)
    returns = []
    for _ in range(episodes):
        obs, _ = env.reset()
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(alloc.act(obs))
            total += float(reward)
            done = terminated or truncated
        p, u = env.unwrapped.episode_params, env.unwrapped
        state = u._state
        assert int(np.sum(state.rollouts)) == p.total_budget  # the budget, exactly
        assert np.all(state.rollouts <= p.cap)
        assert total == pytest.approx(am.utility_value(p, state), abs=1e-9)
        returns.append(total)
    return returns


@pytest.fixture
def evaluate_matches_replay():
    """``check(make_env, make_alloc, episodes)``: SB3's ``evaluate_policy`` mean equals the mean
    of the hand replay, which checks each episode's return, budget and caps; returns it."""

    def check(make_env, make_alloc, episodes: int, seed: int = 7) -> list[float]:
        env = make_env()
        alloc = make_alloc(env)
        env.reset(seed=seed)
        mean, std = evaluate_policy(alloc, env, n_eval_episodes=episodes, warn=False)
        returns = replay(make_env, make_alloc, seed, episodes)
        # (a Monitor wrapper reports returns rounded to 6 decimals)
        assert mean == pytest.approx(np.mean(returns), rel=1e-6, abs=1e-5)
        assert std == pytest.approx(np.std(returns), rel=1e-6, abs=1e-5)
        return returns

    return check
