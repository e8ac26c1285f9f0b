"""Tests of agents.sb3.train (``adaroll train-sb3``): config checks, hyperparameter files, the
run directory and resume, the learning curve, and a clean stop on SIGINT/SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import gymnasium as gym
import matplotlib.image
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")

import adaroll_env
from agents.sb3.allocator import read_meta
from agents.sb3.train import (
    SignalStop,
    TrainConfig,
    _resume_line,
    load_hyperparams,
    main,
    make_env,
    plot_learning_curve,
)

gym.register_envs(adaroll_env)

ROUNDS = "AdaRoll/BetaBernoulliRounds-v0"
SEQ = "AdaRoll/BetaBernoulli-v0"
SMALL = {"num_questions": 4, "budget": 16, "difficulty": "u-shaped"}


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


def _small(tmp_path, **kw):
    base = dict(env=ROUNDS, env_kwargs=json.dumps(SMALL), total_timesteps=256, n_envs=2,
                eval_freq=128, eval_episodes=3, save_freq=0, out=str(tmp_path), name="run",
                progress=False, references=False, tensorboard=False)  # fmt: skip
    return TrainConfig(**{**base, **kw})


def test_a_finished_run_is_done_a_rerun_sets_it_aside_a_resume_continues(tmp_path, capsys):
    run = tmp_path / "run"
    first = main(_small(tmp_path))
    done = json.loads((run / "DONE").read_text())
    assert done["timesteps"] == first.timesteps and "finished" in done
    before = np.load(run / "evaluations.npz")["timesteps"].tolist()
    assert before == [128 * k for k in range(1, len(before) + 1)] and before
    model_bytes = (run / "model.zip").read_bytes()
    capsys.readouterr()

    # the same command again: a fresh start; the first run's files are kept, not overwritten
    main(_small(tmp_path))
    out = capsys.readouterr().out
    (kept,) = (run / "superseded").iterdir()
    assert f"held an earlier run: its files are kept in {kept}" in out
    assert (kept / "model.zip").read_bytes() == model_bytes
    assert {"DONE", "result.json", "evaluations.npz", "config.json"} <= {
        p.name for p in kept.iterdir()
    }

    # a resume continues in place: the evaluations go on, done again at the end
    resumed = main(_small(tmp_path, resume=str(run / "model.zip"), total_timesteps=128))
    after = np.load(run / "evaluations.npz")["timesteps"].tolist()
    assert after[: len(before)] == before and len(after) == len(before) + 1
    assert after[-1] == resumed.timesteps
    assert json.loads((run / "DONE").read_text())["timesteps"] == resumed.timesteps
    assert json.loads((run / "config-1.json").read_text())["resume"] == ""  # the first config
    assert json.loads((run / "config.json").read_text())["resume"] == str(run / "model.zip")
    assert len(list((run / "superseded").iterdir())) == 1  # a resume sets nothing aside
    with pytest.raises(ValueError, match="no such model zip"):
        main(_small(tmp_path, resume=str(tmp_path / "nothing.zip")))


def test_train_config_rejects_bad_input():
    with pytest.raises(ValueError, match="JSON"):
        TrainConfig(env_kwargs="{num_questions: 4}")
    with pytest.raises(ValueError, match="dqn needs Discrete"):
        TrainConfig(algo="dqn", env=ROUNDS)


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
    assert not (run / "DONE").exists()  # stopped, not done
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


# --- TrainConfig ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kw", "error", "message"),
    [
        ({"algo": "ppp"}, ValueError, "unknown algo 'ppp'. Did you mean 'ppo'?"),
        ({"total_timesteps": 0}, ValueError, "total_timesteps must be >= 1 (or none), got 0"),
        ({"n_envs": -1}, ValueError, "n_envs must be >= 1 (or none), got -1"),
        ({"eval_episodes": 0}, ValueError, "eval_episodes must be >= 1, got 0"),
        ({"time_limit_s": 0.0}, ValueError, "time_limit_s must be > 0 (or none), got 0.0"),
        ({"env_kwargs": "[1, 2]"}, ValueError, "env_kwargs must be a JSON object, got '[1, 2]'"),
        (
            {"algo": "maskable_ppo", "env": ROUNDS},
            ValueError,
            "maskable_ppo masks Discrete actions, but AdaRoll/BetaBernoulliRounds-v0 has Box",
        ),
    ],
)
def test_train_config_errors_name_the_value(kw, error, message):
    with pytest.raises(error) as info:
        TrainConfig(**kw)
    assert str(info.value).startswith(message)


def test_env_kwargs_lists_become_tuples():
    cfg = TrainConfig(env_kwargs='{"num_questions": 2, "prior_alpha": [0.5, 2.0]}')
    assert cfg.env_kwargs_dict() == {"num_questions": 2, "prior_alpha": (0.5, 2.0)}
    assert TrainConfig(env_kwargs="").env_kwargs_dict() == {}
    assert TrainConfig(algo="maskable_ppo", env=SEQ).algo == "maskable_ppo"


# --- load_hyperparams -----------------------------------------------------------------------------


def test_load_hyperparams_from_a_file(tmp_path):
    path = tmp_path / "hp.yml"
    path.write_text(
        "AdaRoll/BetaBernoulli-v0:\n  n_steps: 32\n  learning_rate: lin_0.001\n"
        "default:\n  n_steps: 8\n  clip_range: lin_0.2\n  gamma: 1.0\n"
    )
    hp = load_hyperparams("ppo", SEQ, path)
    assert hp["n_steps"] == 32
    lr = hp["learning_rate"]  # a linear schedule of SB3's progress (1 at the start, 0 at the end)
    assert lr(1.0) == pytest.approx(1e-3) and lr(0.5) == pytest.approx(5e-4) and lr(0.0) == 0.0
    other = load_hyperparams("ppo", ROUNDS, path)  # no entry for it: the default
    assert other["n_steps"] == 8 and other["gamma"] == 1.0
    assert other["clip_range"](0.25) == pytest.approx(0.05)


def test_load_hyperparams_shipped_and_errors(tmp_path):
    shipped = load_hyperparams("ppo", ROUNDS)
    assert shipped["n_steps"] == 64 and shipped["policy_kwargs"] == {
        "hidden": 64,
        "log_std_init": -0.5,
    }
    assert shipped["learning_rate"](1.0) == pytest.approx(3e-4)
    with pytest.raises(ValueError, match=r"no hyperparameter file .*nope\.yml: give --hyperparams"):
        load_hyperparams("ppo", SEQ, tmp_path / "nope.yml")
    (tmp_path / "only.yml").write_text("Other-v0:\n  n_steps: 8\n")
    with pytest.raises(ValueError, match=r"has no entry for 'AdaRoll/BetaBernoulli-v0' and no"):
        load_hyperparams("ppo", SEQ, tmp_path / "only.yml")


# --- pieces of a run ------------------------------------------------------------------------------


def test_make_env_builds_the_adaroll_env():
    env = make_env(ROUNDS, {"num_questions": 3, "budget": 9})
    assert env.spec.id == ROUNDS and env.unwrapped.params.num_questions == 3
    assert env.unwrapped.params.total_budget == 9


def test_resume_line_is_a_command_to_paste(tmp_path):
    cfg = TrainConfig(env=ROUNDS, env_kwargs='{"num_questions": 4}', out="runs dir")
    line = _resume_line(cfg, tmp_path / "model.zip", signal.SIGTERM, 1234)
    assert line == (
        f"stopped by SIGTERM at 1234 env steps; saved {tmp_path / 'model.zip'}; resume with: "
        f"adaroll train-sb3 --resume {tmp_path / 'model.zip'} --algo ppo --env {ROUNDS} "
        "--env-kwargs '{\"num_questions\": 4}' --out 'runs dir' "
        "(--total-timesteps counts the steps still to train)"
    )


def test_signal_stop_records_the_first_signal_and_raises_on_the_second():
    before = signal.getsignal(signal.SIGINT)
    with SignalStop() as stop:
        assert stop.signum is None
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.signum == signal.SIGTERM
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is before


def test_plot_learning_curve_draws_the_evaluations(tmp_path):
    npz = tmp_path / "evaluations.npz"
    np.savez(npz, timesteps=np.array([100, 200, 300]), results=np.ones((3, 4)))
    out = tmp_path / "curve.png"
    plot_learning_curve(npz, out, "a title", {"uniform": 0.5, "bamdp": 0.7})
    assert matplotlib.image.imread(out).shape[:2] == (440, 704)  # 6.4 x 4.0 inches at 110 dpi
