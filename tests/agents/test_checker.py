import gymnasium as gym
import numpy as np
import pytest

import agents
from agents import AllocatorCheckError, BaseAllocator


class _Uniformish(BaseAllocator):
    name = "test"

    def allocate(self, obs):
        b = self.beliefs(obs)
        from adaroll_env import split_round

        return split_round(np.ones(b.rollouts.size), b.round_size, b.capacity)


class OverSpends(_Uniformish):
    def allocate(self, obs):
        c = super().allocate(obs)
        c[0] += 1
        return c


class FloatCounts(_Uniformish):
    def allocate(self, obs):
        return super().allocate(obs).astype(float)


class IgnoresCap(BaseAllocator):
    name = "ignores_cap"

    def allocate(self, obs):
        b = self.beliefs(obs)
        c = np.zeros(b.rollouts.size, dtype=np.int64)
        c[0] = b.round_size
        return c


class GlobalRandom(BaseAllocator):
    """Draws from numpy's global generator: breaks the memory rule."""

    name = "global_random"

    def allocate(self, obs):
        b = self.beliefs(obs)
        c = np.zeros(b.rollouts.size, dtype=np.int64)
        open_ = np.flatnonzero(b.capacity > 0)
        c[np.random.choice(open_)] = b.round_size  # noqa: NPY002 (the point of the test)
        return c


class Remembers(_Uniformish):
    """Changes its decision with a counter it never resets: breaks the memory rule."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def allocate(self, obs):
        self.calls += 1
        b = self.beliefs(obs)
        c = np.zeros(b.rollouts.size, dtype=np.int64)
        open_ = np.flatnonzero(b.capacity > 0)
        c[open_[self.calls % min(3, open_.size)]] = b.round_size
        return c


def _env(kind="rounds", **kw):
    env_id = "AdaRoll/BetaBernoulliRounds-v0" if kind == "rounds" else "AdaRoll/BetaBernoulli-v0"
    return gym.make(env_id, num_questions=4, budget=16, **kw)


@pytest.mark.parametrize(
    ("cls", "kind", "kw", "match"),
    [
        (OverSpends, "rounds", {}, "handed out"),
        (FloatCounts, "rounds", {}, "dtype"),
        (IgnoresCap, "rounds", {"max_group": 5}, "cap"),
        (GlobalRandom, "sequential", {}, "deterministic"),
        (Remembers, "sequential", {}, "deterministic"),
    ],
)
def test_check_allocator_catches(cls, kind, kw, match):
    env = _env(kind, **kw)
    alloc = cls()
    alloc.reset(env.unwrapped.params, seed=0)
    with pytest.raises(AllocatorCheckError, match=match):
        agents.check_allocator(alloc, env)


def test_check_allocator_passes_good_one():
    env = _env("rounds", max_group=6, pilot=1)
    alloc = _Uniformish()
    alloc.reset(env.unwrapped.params)
    agents.check_allocator(alloc, env)


def test_check_allocator_needs_name():
    env = _env()
    alloc = _Uniformish()
    alloc.name = None
    with pytest.raises(AllocatorCheckError, match="name"):
        agents.check_allocator(alloc, env)


def test_sequential_act_rejects_multi_rollout_counts():
    env = _env("sequential")
    alloc = OverSpends()
    alloc.reset(env.unwrapped.params)
    obs, _ = env.reset(seed=0)
    with pytest.raises(ValueError, match="sequential"):
        alloc.act(obs)
