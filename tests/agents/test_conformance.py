"""Every registered allocator (built-ins, plug-ins, entry points) against the protocol."""

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.evaluation import evaluate_policy

import adaroll_env
import agents
from agents.benchmark import REFERENCE_ONLY

NAMES = agents.list_allocators()
IDS = list(adaroll_env.ENV_IDS)


def _env(env_id, name, **kw):
    base = dict(num_questions=4, budget=16, pilot=1, max_group=8)
    base.update(kw)
    return gym.make(env_id, reveal_truth=name in REFERENCE_ONLY, **base)


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("name", NAMES)
def test_check_allocator(name, env_id):
    env = _env(env_id, name)
    agents.check_allocator(agents.make_allocator(name, env, seed=0), env, episodes=2)


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("name", NAMES)
def test_memory_rule_across_episodes(name, env_id):
    # After other episodes, reset(params, seed=s) on the same observations gives the same actions.
    env = _env(env_id, name, num_questions=5, budget=25, pilot=0, max_group=None)
    params = env.unwrapped.params
    fresh = agents.make_allocator(name, env)
    used = agents.make_allocator(name, env)
    for seed in range(3):
        obs, _ = env.reset(seed=100 + seed)
        used.reset(params, seed=seed)
        done = False
        while not done:
            obs, _, done, _, _ = env.step(used.act(obs))
    obs, _ = env.reset(seed=7)
    fresh.reset(params, seed=11)
    used.reset(params, seed=11)
    done = False
    while not done:
        a, b = np.asarray(fresh.act(obs)), np.asarray(used.act(obs))
        assert np.array_equal(a, b)
        obs, _, done, _, _ = env.step(a)


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("name", NAMES)
def test_evaluate_policy(name, env_id):
    env = _env(env_id, name)
    mean, _ = evaluate_policy(
        agents.make_allocator(name, env, seed=0), env, n_eval_episodes=3, warn=False
    )
    assert 0.0 <= mean <= 4.0


def test_registry_lists_every_documented_allocator():
    expected = {
        "uniform",
        "random",
        "bamdp",
        "oracle",
        "thompson",
        "bayes_ucb",
        "knowledge_gradient",
        "greedy",
        "variance",
        "vip",
        "knapsack",
        "reinforce_ada",
        "pilot_commit",
        "greso",
    }
    assert expected <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_docstring_names_its_source(name):
    alloc = agents.make_allocator(name, _env(IDS[0], name))
    doc = type(alloc).__doc__ or ""
    assert len(doc) > 80, f"{name}: the docstring must name its source and formula"
