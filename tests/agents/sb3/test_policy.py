"""Tests of agents.sb3.policy: the permutation-equivariant scorer and the SB3 policies built on
it (permuting the questions permutes the scores exactly; no weight depends on B)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")

import torch as th
from sb3_contrib import MaskablePPO
from stable_baselines3 import PPO
from torch import nn

import adaroll_env
from agents.sb3.features import N_CONTEXT, N_FEATURES
from agents.sb3.policy import (
    EquivariantActorCriticPolicy,
    EquivariantDQNPolicy,
    EquivariantMaskablePolicy,
    QuestionScorer,
    ScaledValue,
    num_questions_of,
    permutation_check,
    policy_class,
)
from agents.sb3.train import make_vec

gym.register_envs(adaroll_env)
th.set_num_threads(1)

ROUNDS = "AdaRoll/BetaBernoulliRounds-v0"
SEQ = "AdaRoll/BetaBernoulli-v0"


def _random_scorer(B, seed=0, hidden=16):
    th.manual_seed(seed)
    scorer = QuestionScorer(B, hidden=hidden)
    with th.no_grad():
        for p in scorer.parameters():
            p.normal_(0, 0.5)
    return scorer


@pytest.mark.parametrize("cls_space", ["box", "discrete", "maskable"])
def test_equivariance_permuting_questions_permutes_scores(cls_space):
    B = 6
    env_id = ROUNDS if cls_space == "box" else SEQ
    venv = make_vec(env_id, {"num_questions": B}, n_envs=1, seed=0)
    algo = MaskablePPO if cls_space == "maskable" else PPO
    policy_cls = (
        EquivariantMaskablePolicy if cls_space == "maskable" else (EquivariantActorCriticPolicy)
    )
    model = algo(policy_cls, venv, n_steps=16, batch_size=16, seed=0, device="cpu")
    # Random weights everywhere (the output layer starts near zero).
    with th.no_grad():
        for p in model.policy.parameters():
            p.normal_(0, 0.5)
    rng = np.random.default_rng(0)
    x = rng.random((3, B * N_FEATURES + N_CONTEXT)).astype(np.float32)
    perm = rng.permutation(B)
    xp = x.copy()
    xp[:, : B * N_FEATURES] = (
        x[:, : B * N_FEATURES].reshape(3, B, N_FEATURES)[:, perm].reshape(3, -1)
    )
    pol = model.policy
    with th.no_grad():
        d = pol.get_distribution(th.as_tensor(x)).distribution
        dp = pol.get_distribution(th.as_tensor(xp)).distribution
        s, sp = (d.logits, dp.logits) if cls_space != "box" else (d.mean, dp.mean)
        v = pol.predict_values(th.as_tensor(x))
        vp = pol.predict_values(th.as_tensor(xp))
    np.testing.assert_allclose(sp.numpy(), s.numpy()[:, perm], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(vp.numpy(), v.numpy(), rtol=1e-5, atol=1e-6)
    assert float(s.std()) > 1e-3  # the scores do depend on the questions


def test_dqn_equivariant_q_values():
    from stable_baselines3 import DQN

    B = 5
    venv = make_vec(SEQ, {"num_questions": B}, n_envs=1, seed=0)
    model = DQN(EquivariantDQNPolicy, venv, buffer_size=100, learning_starts=10, device="cpu")
    rng = np.random.default_rng(1)
    x = rng.random((2, B * N_FEATURES + N_CONTEXT)).astype(np.float32)
    perm = rng.permutation(B)
    xp = x.copy()
    xp[:, : B * N_FEATURES] = (
        x[:, : B * N_FEATURES].reshape(2, B, N_FEATURES)[:, perm].reshape(2, -1)
    )
    with th.no_grad():
        q = model.q_net(th.as_tensor(x)).numpy()
        qp = model.q_net(th.as_tensor(xp)).numpy()
    np.testing.assert_allclose(qp, q[:, perm], rtol=1e-5, atol=1e-6)


def test_num_questions_of_the_action_space():
    assert num_questions_of(gym.spaces.Discrete(5)) == 5
    assert num_questions_of(gym.spaces.Box(-1, 1, shape=(3,))) == 3
    for space in (gym.spaces.Box(-1, 1, shape=(2, 2)), gym.spaces.MultiBinary(3)):
        with pytest.raises(TypeError, match="needs Discrete\\(B\\) or Box\\(B\\) actions, got"):
            num_questions_of(space)


def test_scorer_splits_the_flat_layout():
    B = 3
    scorer = QuestionScorer(B, hidden=8)
    x = th.arange(2 * (B * N_FEATURES + N_CONTEXT), dtype=th.float32).reshape(2, -1)
    q, ctx = scorer.split(x)
    assert q.shape == (2, B, N_FEATURES) and ctx.shape == (2, N_CONTEXT)
    assert q[1, 2, 0].item() == x[1, 2 * N_FEATURES].item()
    assert th.equal(ctx, x[:, B * N_FEATURES :])
    assert scorer.latent_dim_pi == B and scorer.latent_dim_vf == 8


def test_scorer_is_equivariant_and_its_value_latent_invariant():
    B = 5
    scorer = _random_scorer(B)
    rng = np.random.default_rng(0)
    x = rng.random(B * N_FEATURES + N_CONTEXT).astype(np.float32)
    perm = rng.permutation(B)
    assert permutation_check(scorer, x, perm) < 1e-6
    xt = th.as_tensor(x).reshape(1, -1)
    q, ctx = scorer.split(xt)
    xp = th.cat([q[:, perm].reshape(1, -1), ctx], dim=-1)
    with th.no_grad():
        s, v = scorer(xt)
        assert th.allclose(s, scorer.scores(xt)) and th.allclose(v, scorer.value_latent(xt))
        assert th.allclose(scorer.forward_actor(xt), s)
        assert th.allclose(scorer.forward_critic(xt), v)
        assert th.allclose(scorer.value_latent(xp), v, atol=1e-6)
        assert float(s.std()) > 1e-3  # the scores depend on the questions
    # the same weights score another B: no weight depends on it
    wide = QuestionScorer(7, hidden=16)
    wide.load_state_dict(scorer.state_dict())
    x7 = th.as_tensor(rng.random((1, 7 * N_FEATURES + N_CONTEXT)).astype(np.float32))
    assert wide.scores(x7).shape == (1, 7)


def test_permutation_check_sees_a_broken_scorer():
    class Leaky(QuestionScorer):
        """Adds the question's position to its score: not equivariant."""

        def scores(self, features):
            return super().scores(features) + th.arange(self.num_questions, dtype=th.float32)

    th.manual_seed(0)
    leaky = Leaky(4, hidden=8)
    x = np.random.default_rng(1).random(4 * N_FEATURES + N_CONTEXT).astype(np.float32)
    assert permutation_check(leaky, x, np.array([3, 2, 1, 0])) == pytest.approx(3.0, abs=1e-5)


def test_scaled_value_multiplies_by_b():
    head = ScaledValue(hidden=2, num_questions=6)
    with th.no_grad():
        head.linear.weight.copy_(th.tensor([[1.0, -2.0]]))
        head.linear.bias.copy_(th.tensor([0.5]))
    out = head(th.tensor([[3.0, 1.0]]))
    assert out.tolist() == [[6 * (3.0 - 2.0 + 0.5)]]


@pytest.mark.parametrize(
    ("algo", "kind", "want"),
    [
        ("ppo", "mlp", "MlpPolicy"),
        ("dqn", "mlp", "MlpPolicy"),
        ("ppo", "equivariant", EquivariantActorCriticPolicy),
        ("a2c", "equivariant", EquivariantActorCriticPolicy),
        ("maskable_ppo", "equivariant", EquivariantMaskablePolicy),
        ("dqn", "equivariant", EquivariantDQNPolicy),
    ],
)
def test_policy_class(algo, kind, want):
    assert policy_class(algo, kind) is want


def test_built_policy_heads_and_initial_scores():
    B = 4
    venv = make_vec(ROUNDS, {"num_questions": B}, n_envs=1, seed=0)
    model = PPO(
        EquivariantActorCriticPolicy,
        venv,
        n_steps=16,
        batch_size=16,
        device="cpu",
        policy_kwargs={"hidden": 8, "log_std_init": -0.7},
    )
    pol = model.policy
    assert isinstance(pol.action_net, nn.Identity)
    assert isinstance(pol.value_net, ScaledValue) and pol.value_net.num_questions == B
    assert pol.log_std.shape == (1,) and pol.log_std.item() == pytest.approx(-0.7)
    last = pol.mlp_extractor.score[-1]
    assert th.count_nonzero(last.bias).item() == 0
    # orthogonal with gain 0.01: the last layer's single row has norm 0.01
    assert th.linalg.norm(last.weight).item() == pytest.approx(0.01, rel=1e-5)
    # the optimizer covers the final parameters (the replaced heads included)
    in_optimizer = {id(p) for g in pol.optimizer.param_groups for p in g["params"]}
    assert {id(p) for p in pol.parameters()} == in_optimizer
    assert pol._get_constructor_parameters()["hidden"] == 8
