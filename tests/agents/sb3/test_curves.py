"""Tests of agents.sb3.curves (the curve policy: predicted value curves split exactly) and of
``adaroll train-sb3 --policy curves``."""

from __future__ import annotations

import itertools
import json

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

import torch as th
from stable_baselines3 import PPO

import adaroll_env
from adaroll_env import model as m
from agents.registry import make_allocator
from agents.sb3.curves import (
    NOT_TRAINABLE,
    EquivariantCurvePolicy,
    cap_at,
    counts_action,
    room_and_round,
    split_predicted,
)
from agents.sb3.features import N_CONTEXT, N_FEATURES, flat_features
from agents.sb3.train import TrainConfig, main, make_vec

gym.register_envs(adaroll_env)
th.set_num_threads(1)
ROUNDS = "AdaRoll/BetaBernoulliRounds-v0"
SMALL = {"num_questions": 4, "budget": 16, "difficulty": "u-shaped", "reward_mode": "dense"}


def _brute(marginals, room, R):
    """Best total of the summed marginals over every split of R within ``room``."""
    best = -np.inf
    for counts in itertools.product(*(range(int(r) + 1) for r in room)):
        if sum(counts) == R:
            v = sum(marginals[i, :c].sum() for i, c in enumerate(counts))
            best = max(best, v)
    return best


def test_the_split_is_the_best_split_of_the_predicted_curves_within_the_room():
    rng = np.random.default_rng(0)
    for _ in range(30):
        B, M = 4, 3
        marginals = rng.normal(size=(B, M))
        capacity = rng.integers(0, 6, size=B)
        R = int(rng.integers(1, 6))
        if int(np.minimum(capacity, R).sum()) < R:
            continue
        counts = split_predicted(marginals, capacity, R)
        assert counts.sum() == R
        assert np.all(counts <= np.minimum(capacity, R))
        inside = np.minimum(np.minimum(capacity, R), M)
        room = inside if inside.sum() >= R else np.minimum(capacity, R)
        assert np.all(counts <= room)
        got = sum(marginals[i, : min(c, M)].sum() for i, c in enumerate(counts))
        assert got == pytest.approx(_brute(np.pad(marginals, ((0, 0), (0, 8))), room, R))


def test_past_its_last_marginal_a_curve_is_flat_where_the_round_needs_it():
    # two questions, 3 marginals each, a round of 8: max_take alone cannot spend it, so the
    # room is the capacity and the counts past 3 are free
    counts = split_predicted(np.array([[1.0, 1.0, 1.0], [2.0, 0.5, 0.1]]), np.array([8, 5]), 8)
    assert counts.sum() == 8 and counts[1] <= 5
    assert counts.min() >= 3  # each curve's rising part taken before the flat part


def test_the_counts_action_decodes_to_exactly_the_counts():
    rng = np.random.default_rng(1)
    for _ in range(300):
        B = int(rng.integers(1, 40))
        R = int(rng.integers(1, 200))
        counts = rng.multinomial(R, rng.dirichlet(np.ones(B) * 0.3))
        params = m.AllocationParams(num_questions=B, budget=R * 3, mode="rounds",
                                    round_size=R)  # fmt: skip
        state = m.make_state(params, np.zeros(B), np.zeros(B))
        assert np.array_equal(m.decode_action(params, state, counts_action(counts, R)), counts)


@pytest.mark.parametrize(
    "kw",
    [{}, {"max_group": 7}, {"pilot": 1}, {"pilot": 2, "budget": 40}],
)
def test_cap_and_room_are_read_from_the_features(kw):
    """``cap_at`` gives the env's cap at the size it was built for and at another B; capacity
    and R read from the features are the env's."""
    env = gym.make(ROUNDS, **{"num_questions": 4, "budget": 24, **kw})
    p = env.unwrapped.params
    rule = (p.max_group, p.total_budget / p.num_questions, p.pilot)
    assert cap_at(rule, 4) == p.cap
    other = gym.make(ROUNDS, **{"num_questions": 8, "budget": 48, **kw}).unwrapped.params
    if "budget" not in kw:
        assert cap_at(rule, 8) == other.cap
    obs, _ = env.reset(seed=3)
    done = False
    while not done:
        capacity, R = room_and_round(flat_features(p, obs), 4, p.cap)
        state = env.unwrapped.state
        assert np.array_equal(capacity, m.capacity(p, state))
        assert m.next_round_size(p, state) == R
        # weights on the first question: the env fills it to its cap, then splits the rest
        obs, _, done, _, _ = env.step(np.array([1.0, -0.9, -0.9, -0.9], dtype=np.float32))


def _untrained(B=6, seed=0, **env_kw):
    venv = make_vec(ROUNDS, {"num_questions": B, **env_kw}, n_envs=1, seed=0)
    p = venv.get_attr("params")[0]
    rule = (p.max_group, p.total_budget / p.num_questions, p.pilot)
    model = PPO(EquivariantCurvePolicy, venv, n_steps=16, batch_size=16, seed=seed,
                device="cpu", policy_kwargs={"hidden": 16, "cap_rule": rule})  # fmt: skip
    with th.no_grad():
        for q in model.policy.parameters():
            q.normal_(0, 0.5)
    return model, p


def test_permuting_the_questions_permutes_the_curves():
    model, _ = _untrained()
    B = 6
    x = th.randn(1, B * N_FEATURES + N_CONTEXT)
    perm = np.random.default_rng(0).permutation(B)
    q = x[:, : B * N_FEATURES].reshape(1, B, N_FEATURES)
    xp = th.cat([q[:, perm].reshape(1, -1), x[:, B * N_FEATURES :]], dim=-1)
    with th.no_grad():
        a, b = model.policy.marginals(x), model.policy.marginals(xp)
    assert a.shape == (1, B, 16)
    assert th.allclose(b, a[:, perm], atol=1e-6)


def test_predict_is_the_exact_split_of_the_policys_curves_and_the_env_plays_it():
    model, p = _untrained(max_group=12, budget=48)
    env = gym.make(ROUNDS, num_questions=6, max_group=12, budget=48)
    obs, _ = env.reset(seed=0)
    done = False
    while not done:
        x = flat_features(p, obs)
        action, _ = model.predict(x, deterministic=True)
        with th.no_grad():
            d = model.policy.marginals(th.as_tensor(x[None]))[0].numpy().astype(np.float64)
        state = env.unwrapped.state
        want = split_predicted(d, m.capacity(p, state), m.next_round_size(p, state))
        assert np.array_equal(m.decode_action(p, state, action), want)
        assert np.all(want <= m.capacity(p, state))
        obs, _, done, _, _ = env.step(action)


def test_ppo_cannot_train_the_curve_policy():
    model, _ = _untrained()
    with pytest.raises(ValueError, match="fitted by cloning only"):
        model.learn(16)
    obs = th.zeros(1, 6 * N_FEATURES + N_CONTEXT)
    with pytest.raises(ValueError, match="no gradient"):
        model.policy.evaluate_actions(obs, th.zeros(1, 6))
    assert "train the 'equivariant' policy" in NOT_TRAINABLE


def _curves_run(tmp_path, name="curves", **kw):
    cfg = TrainConfig(env=ROUNDS, env_kwargs=json.dumps(SMALL), policy="curves", hidden=32,
                      clone="bamdp", clone_loss="curves", n_envs=1, eval_freq=0, save_freq=0,
                      out=str(tmp_path), name=name, progress=False, references=False,
                      tensorboard=False, **kw)  # fmt: skip
    res = main(cfg)
    return res, json.loads((res.run_dir / "clone.json").read_text())


def test_train_sb3_fits_the_curve_policy_by_cloning_alone(tmp_path):
    res, report = _curves_run(tmp_path, clone_episodes=30, clone_epochs=150, clone_sizes="4,8")
    # 30 expert episodes a size, then three DAgger iterations of 15 driven by the policy
    assert report["loss"] == "curves" and report["decisions"] == 2 * (30 + 3 * 15) * 4
    assert report["action_mse_after"] < 0.2 * report["action_mse_before"]
    assert report["value_lost_before"] > 0.0
    assert report["value_lost_after"] < 0.5 * report["value_lost_before"]
    assert json.loads((res.run_dir / "result.json").read_text())["timesteps"] == 0
    assert res.model_path.is_file() and res.timesteps == 0
    # the saved model acts at both sizes as its SB3 predict does, spending every round
    for b in (4, 8):
        env = gym.make(ROUNDS, **{**SMALL, "num_questions": b, "budget": 4 * b})
        alloc = make_allocator(f"sb3:{res.model_path}", env)
        p = env.unwrapped.params
        obs, _ = env.reset(seed=1)
        done = False
        while not done:
            counts = alloc.allocate(obs)
            action, _ = alloc.model.predict(flat_features(p, obs), deterministic=True)
            state = env.unwrapped.state
            assert counts.sum() == m.next_round_size(p, state)
            assert np.array_equal(m.decode_action(p, state, action), counts)
            obs, _, done, _, _ = env.step(action)


def test_on_held_out_states_the_clone_gives_up_less_of_bamdps_value(tmp_path):
    """On episodes the clone never saw, the rounds it decides give up on ``bamdp``'s own value
    curves a fraction of what the same network gave up before fitting."""
    res, _ = _curves_run(tmp_path, clone_episodes=30, clone_epochs=600, clone_dagger=1)
    env = gym.make(ROUNDS, **SMALL)
    expert = make_allocator("bamdp", env)
    fitted = make_allocator(f"sb3:{res.model_path}", env)
    unfitted, _ = _untrained(B=4, **{k: v for k, v in SMALL.items() if k != "num_questions"})
    p = env.unwrapped.params
    rows = np.arange(4)
    lost = {"fitted": 0.0, "unfitted": 0.0}
    for seed in range(500, 530):
        obs, _ = env.reset(seed=seed)
        done = False
        while not done:
            b = expert.allocate(obs)
            v = expert.round_value_curves(obs)
            for key, c in (
                ("fitted", fitted.allocate(obs)),
                ("unfitted", unfitted.policy.decide(flat_features(p, obs))),
            ):
                lost[key] += float(v[rows, b].sum() - v[rows, c].sum())  # fmt: skip
            obs, _, done, _, _ = env.step(adaroll_env.encode_counts(b))
    assert lost["unfitted"] > 0.0
    assert lost["fitted"] < 0.25 * lost["unfitted"]


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"policy": "curves"}, "give --clone bamdp --clone-loss curves"),
        ({"policy": "curves", "clone": "bamdp"}, "give --clone bamdp --clone-loss curves"),
        (
            {"policy": "curves", "clone": "bamdp", "clone_loss": "curves", "total_timesteps": 5},
            "--total-timesteps 5: --policy curves takes no PPO steps",
        ),
        (
            {"policy": "curves", "clone": "bamdp", "clone_loss": "curves", "algo": "dqn"},
            "--policy curves needs --algo ppo or a2c, got 'dqn'",
        ),
        ({"clone": "bamdp", "clone_loss": "curves"}, "--clone-loss curves fits a network"),
        ({"clone_loss": "curves"}, "--clone-loss curves says what a clone fits"),
        ({"policy": "mlp", "hidden": 32}, "hidden (32) is the width"),
        ({"hidden": 0}, "hidden (0) is the width"),
        ({"clone": "bamdp", "clone_dagger": -1}, "clone_dagger must be >= 0, got -1"),
    ],
)
def test_curve_policy_config_errors(kw, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        TrainConfig(**kw)


def test_the_curves_loss_and_the_curve_policy_go_together():
    from agents.sb3.imitation import behaviour_clone

    venv = make_vec(ROUNDS, SMALL, n_envs=1, seed=0)
    model = PPO("MlpPolicy", venv, n_steps=16, batch_size=16, device="cpu")
    with pytest.raises(ValueError, match="loss='curves' fits the curve policy"):
        behaviour_clone(model, ROUNDS, SMALL, loss="curves", episodes=1, epochs=1)
    curve_model, _ = _untrained(B=4, **{k: v for k, v in SMALL.items() if k != "num_questions"})
    with pytest.raises(ValueError, match="loss='curves' fits the curve policy"):
        behaviour_clone(curve_model, ROUNDS, SMALL, loss="squared", episodes=1, epochs=1)


def test_the_clones_progress_bar_changes_nothing(tmp_path, capsys):
    """``progress=True`` (what ``train-sb3`` passes unless ``--no-progress``) fits the same
    clone as without it."""
    from agents.sb3.imitation import behaviour_clone

    reports = []
    for progress in (False, True):
        model, _ = _untrained(B=4, **{k: v for k, v in SMALL.items() if k != "num_questions"})
        reports.append(behaviour_clone(model, ROUNDS, SMALL, loss="curves", episodes=4, epochs=3,
                                       dagger=1, progress=progress))  # fmt: skip
    assert reports[0] == reports[1] and reports[0].decisions == (4 + 2) * 4
