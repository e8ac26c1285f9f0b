"""Tests of agents.base: ``read_beliefs``, and ``BaseAllocator``'s ``reset``, ``act`` and
``predict`` derived from a subclass's ``allocate``."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import adaroll_env
import agents
from adaroll_env import model
from adaroll_env.actions import encoded_counts
from agents import AllocationError
from agents.base import Allocator, BaseAllocator, Beliefs, read_beliefs

gym.register_envs(adaroll_env)


class Fixed(BaseAllocator):
    """Hands out the counts it was given, whatever the observation."""

    name = "fixed"

    def __init__(self, counts=None):
        super().__init__()
        self.counts = counts

    def allocate(self, obs):
        return np.asarray(self.counts)


def test_predict_batched_shapes():
    env = gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=4)
    alloc = agents.make_allocator("uniform", env)
    obs, _ = env.reset(seed=0)
    batch = {k: np.stack([v, v, v]) for k, v in obs.items()}
    actions, state = alloc.predict(batch)
    assert actions.shape == (3, 4) and actions.dtype == np.float32 and state is None
    single, _ = alloc.predict(obs)
    assert single.shape == (4,)


def test_act_requires_reset():
    from agents.baselines import UniformAllocator

    alloc = UniformAllocator()
    env = gym.make("AdaRoll/BetaBernoulli-v0")
    obs, _ = env.reset(seed=0)
    with pytest.raises(RuntimeError, match="reset"):
        alloc.act(obs)


def test_act_rejects_wrong_batch_size():
    env4 = gym.make("AdaRoll/BetaBernoulli-v0", num_questions=4)
    env5 = gym.make("AdaRoll/BetaBernoulli-v0", num_questions=5)
    alloc = agents.make_allocator("uniform", env4)
    obs, _ = env5.reset(seed=0)
    with pytest.raises(ValueError, match="questions"):
        alloc.act(obs)


def test_beliefs_recover_prior():
    env = gym.make(
        "AdaRoll/BetaBernoulli-v0", num_questions=3, prior_alpha=0.7, prior_beta=2.5, pilot=2
    )
    obs, _ = env.reset(seed=0)
    b = agents.read_beliefs(env.unwrapped.params, obs)
    assert np.allclose(b.prior_alpha, 0.7, atol=1e-5)
    assert np.allclose(b.prior_beta, 2.5, atol=1e-5)
    assert b.budget_left == model.budget_left(env.unwrapped.params, env.unwrapped.state)
    assert b.rollouts.tolist() == [2, 2, 2]


def test_read_beliefs_of_a_hand_built_state():
    params = model.AllocationParams(
        num_questions=3, budget=20, max_group=8, prior_alpha=(1.0, 0.5, 2.0), prior_beta=1.5,
        mode="rounds", round_size=4,
    )  # fmt: skip
    obs = model.observe(params, model.make_state(params, [2, 0, 5], [1, 3, 0]))
    b = read_beliefs(params, obs)
    assert isinstance(b, Beliefs)
    assert b.successes.tolist() == [2, 0, 5] and b.failures.tolist() == [1, 3, 0]
    assert b.rollouts.tolist() == [3, 3, 5] and b.rollouts.dtype == np.int64
    assert b.budget_left == 20 - 11
    assert b.round_size == 4
    assert b.capacity.tolist() == [5, 5, 3]
    np.testing.assert_allclose(b.alpha, [3.0, 0.5, 7.0], rtol=1e-6)
    np.testing.assert_allclose(b.beta, [2.5, 4.5, 1.5], rtol=1e-6)
    np.testing.assert_allclose(b.mean, [3 / 5.5, 0.5 / 5.0, 7 / 8.5], rtol=1e-6)
    np.testing.assert_allclose(b.prior_alpha, [1.0, 0.5, 2.0], rtol=1e-6)
    np.testing.assert_allclose(b.prior_beta, [1.5, 1.5, 1.5], rtol=1e-6)
    # the last round is what is left of the budget: 9 left, then 1 left
    late = model.observe(params, model.make_state(params, [8, 0, 5], [0, 6, 0]))
    assert read_beliefs(params, late).round_size == 1


def test_read_beliefs_refuses_another_batch_size():
    params = model.AllocationParams(num_questions=3, budget=9)
    other = model.AllocationParams(num_questions=2, budget=9)
    obs = model.observe(other, model.initial_state(other))
    with pytest.raises(ValueError) as info:
        read_beliefs(params, obs)
    assert str(info.value) == (
        "observation has 2 questions but the allocator was reset for 3: call reset(params) "
        "with the env's params"
    )


def test_reset_needs_params_and_params_needs_reset():
    alloc = Fixed()
    with pytest.raises(RuntimeError) as info:
        _ = alloc.params
    assert str(info.value) == (
        "allocator 'fixed' has not been reset: call reset(params, seed=...) or build it with "
        "agents.make_allocator(spec, env)"
    )
    with pytest.raises(TypeError) as info:
        alloc.reset({"num_questions": 2})
    assert str(info.value) == "reset() needs AllocationParams, got dict: pass env.unwrapped.params"


def test_reset_reseeds_the_generator():
    params = model.AllocationParams(num_questions=2, budget=4)
    alloc = Fixed()
    alloc.reset(params, seed=3)
    first = alloc.rng.random(4)
    alloc.rng.random(10)
    alloc.reset(params, seed=3)
    np.testing.assert_array_equal(alloc.rng.random(4), first)
    np.testing.assert_array_equal(first, np.random.default_rng(3).random(4))
    assert alloc.params is params


def test_allocate_is_for_subclasses():
    alloc = BaseAllocator()
    alloc.reset(model.AllocationParams(num_questions=2, budget=4))
    with pytest.raises(NotImplementedError):
        alloc.allocate({})


def test_act_sequential_is_the_question_index():
    env = gym.make("AdaRoll/BetaBernoulli-v0", num_questions=3, budget=6)
    obs, _ = env.reset(seed=0)
    alloc = Fixed([0, 0, 1])
    alloc.reset(env.unwrapped.params)
    a = alloc.act(obs)
    assert a == 2 and type(a) is int
    # float counts take the checked path, which wants integers (never rounds them)
    alloc.counts = np.array([0.0, 1.0, 0.0])
    with pytest.raises(AllocationError, match="expected integer counts"):
        alloc.act(obs)


def test_act_rounds_encodes_the_counts():
    env = gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=3, budget=12, round_size=6)
    obs, _ = env.reset(seed=0)
    alloc = Fixed(np.array([4, 0, 2], dtype=np.int64))
    alloc.reset(env.unwrapped.params)
    a = alloc.act(obs)
    assert a.dtype == np.float32 and encoded_counts(a) == (4, 0, 2)
    np.testing.assert_allclose(a, [1.0, -1.0, 0.0])
    _, _, _, _, info = env.step(a)
    assert info["allocation"].tolist() == [4, 0, 2]


@pytest.mark.parametrize(
    ("counts", "rule"),
    [
        (
            [4, 0, 1],
            "handed out 5 rollouts, but this decision must hand out min(R, budget left) = 6",
        ),
        ([7, -1, 0], "are negative at question 1 (-1): need >= 0"),
        ([6, 0], "counts have shape (2,), expected (3,): one count per question"),
    ],
)
def test_act_refuses_broken_counts_naming_the_allocator(counts, rule):
    env = gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=3, budget=12, round_size=6)
    obs, _ = env.reset(seed=0)
    alloc = Fixed(np.array(counts, dtype=np.int64))
    alloc.reset(env.unwrapped.params)
    with pytest.raises(AllocationError) as info:
        alloc.act(obs)
    msg = str(info.value)
    assert msg.startswith("allocator 'fixed' (Fixed) broke the allocation contract: ")
    assert rule in msg


def test_act_sequential_refuses_a_full_question():
    params = model.AllocationParams(num_questions=2, budget=6, max_group=3)
    obs = model.observe(params, model.make_state(params, [2, 0], [1, 0]))
    alloc = Fixed(np.array([1, 0], dtype=np.int64))
    alloc.reset(params)
    with pytest.raises(AllocationError, match="beyond its cap of 3"):
        alloc.act(obs)


def test_predict_batched_acts_on_each_observation():
    env = gym.make("AdaRoll/BetaBernoulli-v0", num_questions=3, budget=9)
    alloc = agents.make_allocator("uniform", env)
    params = env.unwrapped.params
    states = [model.make_state(params, [0, 0, 0], [1, 1, 0]), model.make_state(params, [1, 0, 0],
              [1, 0, 0])]  # fmt: skip
    obs = [model.observe(params, st) for st in states]
    batch = {k: np.stack([o[k] for o in obs]) for k in obs[0]}
    actions, state = alloc.predict(batch, state="kept")
    assert actions.tolist() == [alloc.act(obs[0]), alloc.act(obs[1])] == [2, 1]
    assert state == "kept"


def test_protocol_and_repr():
    assert isinstance(Fixed(), Allocator)
    assert not isinstance(object(), Allocator)
    assert repr(Fixed()) == "Fixed(name='fixed')"
