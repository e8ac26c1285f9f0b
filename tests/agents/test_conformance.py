"""Every registered allocator (built-ins, plug-ins, entry points) against the protocol."""

import re

import gymnasium as gym
import numpy as np
import pytest

import adaroll_env
import agents
from agents.benchmarks import REFERENCE_ONLY

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
def test_evaluate_policy(name, env_id, evaluate_matches_replay):
    """SB3's evaluate_policy gives the hand replay's returns (each the final utility of a
    budget spent exactly within the caps)."""
    evaluate_matches_replay(
        lambda: _env(env_id, name), lambda env: agents.make_allocator(name, env, seed=0), 3
    )


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


#: The source each built-in allocator's docstring must name (docs: design §4).
SOURCES = {
    "uniform": r"DeepSeekMath GRPO \(Shao et al\., 2024\)",
    "bamdp": r"Duff \(2002\)",
    "thompson": r"Thompson, 1933",
    "bayes_ucb": r"Kaufmann, Cappé & Garivier, 2012",
    "knowledge_gradient": r"Frazier, Powell & Dayanik, 2008",
    "greedy": r"HORA \(arXiv 2605\.07114\) / CoBA-RL \(arXiv 2602\.03048\)",
    "variance": r"CERO \(arXiv 2606\.05606\)",
    "vip": r"arXiv 2602\.01601",
    "knapsack": r"arXiv 2509\.25849",
    "reinforce_ada": r"arXiv 2510\.04996",
    "pilot_commit": r"arXiv 2605\.26606",
    "greso": r"arXiv 2506\.02177",
}
#: Reference points with no literature source: the docstring must say what they are instead.
REFERENCES = {"random": r"A floor that learned agents must beat", "oracle": r"upper reference"}
#: A citation: an arXiv id, or an author with a year ("Thompson, 1933", "Duff (2002)").
CITATION = re.compile(r"arXiv \d{4}\.\d{4,5}|[A-Z][\w-]+(?: et al\.)?,? \(?(?:19|20)\d\d\b")


@pytest.mark.parametrize("name", NAMES)
def test_docstring_names_its_source(name):
    alloc = agents.make_allocator(name, _env(IDS[0], name))
    doc = " ".join((type(alloc).__doc__ or "").split())
    if name in REFERENCES:
        assert re.search(REFERENCES[name], doc), f"{name}: the docstring must say it is a reference"
        return
    assert CITATION.search(doc), f"{name}: the docstring cites no paper (arXiv id or author, year)"
    if name in SOURCES:
        assert re.search(SOURCES[name], doc), f"{name}: the docstring must name {SOURCES[name]}"


def test_citation_pattern_rejects_a_docstring_without_a_source():
    assert CITATION.search("Thompson sampling (Thompson, 1933), as MoPPS (arXiv 2507.04632)")
    assert not CITATION.search("Draws a sample from each posterior and plans as if it were true.")


@pytest.mark.parametrize("name", NAMES)
def test_every_allocator_follows_a_round_schedule(name):
    # B = 4, N = 16, pilot 1 -> 12 left in rounds of 1, 8, 3: the one-rollout first round
    # catches allocators that take R = 1 for "one rollout at a time" from the params
    env = _env(adaroll_env.ENV_IDS[1], name, round_schedule="1,8,3")
    alloc = agents.make_allocator(name, env, seed=0)
    for seed in range(2):
        obs, info = env.reset(seed=seed)
        alloc.reset(env.unwrapped.params, seed=seed)
        assert alloc.beliefs(obs).round_size == 1
        sizes, prev, done = [], int(info["allocation"].sum()), False
        while not done:
            counts = np.asarray(alloc.allocate(obs))
            obs, _, done, _, info = env.step(adaroll_env.encode_counts(counts))
            sizes.append(int(info["allocation"].sum()) - prev)
            prev = int(info["allocation"].sum())
        assert sizes == [1, 8, 3], name
