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
    N_CONTEXT,
    N_FEATURES,
    QuestionFeatures,
)
from agents.sb3.policy import (
    EquivariantActorCriticPolicy,
    EquivariantDQNPolicy,
    EquivariantMaskablePolicy,
)
from agents.sb3.train import TrainConfig, main, make_vec

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
    kw = {"num_questions": 4, "budget": 16, "difficulty": "hard", "utility": "hit"}
    untrained = _ppo(env_kwargs=kw, seed=1)
    before = _save(untrained, tmp_path / "before.zip", env_kwargs=kw)
    trained = _ppo(env_kwargs=kw, seed=1, learning_rate=1e-3)
    trained.learn(6_000)
    after = _save(trained, tmp_path / "after.zip", env_kwargs=kw)
    u0 = _mean_return(f"sb3:{before}", kw)
    u1 = _mean_return(f"sb3:{after}", kw)
    diff = u1 - u0  # paired: same seeds, same true pass rates
    se = diff.std(ddof=1) / np.sqrt(diff.size)
    assert diff.mean() > 3 * se, (u0.mean(), u1.mean(), se)


def test_train_cli_writes_model_curve_and_resumes(tmp_path):
    kw = json.dumps(SMALL)
    cfg = TrainConfig(
        env=ROUNDS,
        env_kwargs=kw,
        total_timesteps=512,
        n_envs=2,
        eval_freq=256,
        eval_episodes=5,
        save_freq=256,
        out=str(tmp_path),
        name="run",
        progress=False,
        references=False,
    )
    res = main(cfg)
    assert res.model_path.is_file() and (res.run_dir / "learning_curve.png").is_file()
    assert list((res.run_dir / "checkpoints").glob("model_*_steps.zip"))
    assert (res.run_dir / "best_model.zip").is_file()
    assert read_meta(res.model_path)["params"]["num_questions"] == 4
    first = res.timesteps
    cfg2 = TrainConfig(
        env=ROUNDS,
        env_kwargs=kw,
        total_timesteps=256,
        n_envs=2,
        eval_freq=0,
        save_freq=0,
        out=str(tmp_path),
        name="resumed",
        progress=False,
        resume=str(res.model_path),
        tensorboard=False,
    )
    res2 = main(cfg2)
    assert res2.timesteps >= first + 256
    bad = TrainConfig(
        env=ROUNDS,
        env_kwargs=json.dumps({**SMALL, "utility": "hit"}),
        total_timesteps=64,
        n_envs=1,
        out=str(tmp_path),
        name="bad",
        progress=False,
        resume=str(res.model_path),
    )
    with pytest.raises(ValueError, match="cannot resume"):
        main(bad)


def test_train_config_rejects_bad_input():
    with pytest.raises(ValueError, match="JSON"):
        TrainConfig(env_kwargs="{num_questions: 4}")
    with pytest.raises(ValueError, match="dqn needs Discrete"):
        TrainConfig(algo="dqn", env=ROUNDS)


def test_cli_has_train_sb3():
    from trainers.cli import build_parser

    args = build_parser().parse_args(["train-sb3", "--algo", "maskable_ppo", "--env", SEQ])
    assert args.algo == "maskable_ppo"


def test_pretrained_ships_and_acts():
    from agents.sb3 import PRETRAINED

    assert PRETRAINED.is_file(), "run scripts/train_pretrained.py to rebuild sb3:pretrained"
    assert PRETRAINED.stat().st_size < 2_000_000
    meta = read_meta(PRETRAINED)
    assert meta["params"]["num_questions"] == 16 and meta["policy"] == "equivariant"
    env = gym.make(ROUNDS, num_questions=16)
    alloc = agents.make_allocator("sb3:pretrained", env, seed=0)
    assert alloc.name == "sb3:pretrained"
    agents.check_allocator(alloc, env, episodes=1)


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


_TRAIN_FOREVER = """
import sys
from agents.sb3.train import TrainConfig, main

main(TrainConfig(env={env!r}, env_kwargs={kw!r}, total_timesteps=10**8, n_envs=2, eval_freq=0,
                 save_freq=0, out={out!r}, name="run", progress=False, references=False,
                 tensorboard=False))
"""


@pytest.mark.parametrize(
    ("sig", "status", "wait"),
    [("SIGINT", 130, 3.0), ("SIGTERM", 143, 3.0), ("SIGINT", 130, 0.0)],  # 0: during set-up
)
def test_train_sb3_stops_on_a_signal_with_a_resumable_model(tmp_path, sig, status, wait):
    import os
    import signal
    import time

    code = _TRAIN_FOREVER.format(env=ROUNDS, kw=json.dumps(SMALL), out=str(tmp_path))
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    run = tmp_path / "run"
    deadline = time.monotonic() + 120
    while not (run / "hyperparams.json").is_file() and proc.poll() is None:
        assert time.monotonic() < deadline, "training never started"
        time.sleep(0.2)
    time.sleep(wait)  # 3 s: inside learn(); 0 s: while the model is being built
    proc.send_signal(getattr(signal, sig))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == status, err[-2000:]
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"stopped by {sig} at ")
    assert "resume with: adaroll train-sb3 --resume" in lines[0]
    assert "Traceback" not in err
    result = json.loads((run / "result.json").read_text())
    assert result["stopped_by"] == sig and result["timesteps"] > 0
    assert read_meta(run / "model.zip")["params"]["num_questions"] == 4
    resumed = main(
        TrainConfig(
            env=ROUNDS,
            env_kwargs=json.dumps(SMALL),
            total_timesteps=128,
            n_envs=2,
            eval_freq=0,
            save_freq=0,
            out=str(tmp_path),
            name="resumed",
            progress=False,
            references=False,
            tensorboard=False,
            resume=str(run / "model.zip"),
        )
    )
    assert resumed.timesteps >= result["timesteps"] + 128
