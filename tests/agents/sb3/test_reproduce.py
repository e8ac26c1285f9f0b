"""Tests of agents.sb3.reproduce (``scripts/train_pretrained.py``): the shipped model's setting,
the paired score of a spec, and the choice of the better of the final and best models (with the
training itself replaced: the real one takes ten minutes)."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

import adaroll_env
from adaroll_env.actions import encode_counts
from adaroll_env.utilities import get_utility
from agents.benchmarks.runner import episode_seeds
from agents.sb3 import PRETRAINED, reproduce
from agents.sb3.allocator import read_meta
from agents.sb3.reproduce import ENV_ID, ENV_KWARGS, ReproduceConfig
from agents.sb3.train import TrainResult


def test_the_setting_is_the_shipped_models():
    meta = read_meta(PRETRAINED)
    assert meta["env_id"] == ENV_ID == "AdaRoll/BetaBernoulliRounds-v0"
    params = meta["params"]
    assert params["num_questions"] == ENV_KWARGS["num_questions"] == 16
    assert params["budget"] == ENV_KWARGS["budget"] == 128
    assert params["utility"] == ENV_KWARGS["utility"]


def test_mean_utility_of_uniform_by_hand():
    # uniform gives each of the 16 questions one rollout a round for 8 rounds of R = 16: the
    # episode's utility is Σ u(s_i, 8 − s_i) of the outcomes the env draws from its seed
    gym.register_envs(adaroll_env)
    u = get_utility(ENV_KWARGS["utility"])
    env = gym.make(ENV_ID, **ENV_KWARGS)
    totals = []
    for i in range(3):
        env.reset(seed=episode_seeds(11, i)[0])
        done = False
        while not done:
            obs, _, done, _, _ = env.step(encode_counts([1] * 16))
        s = np.asarray(obs["successes"], dtype=np.int64)
        assert np.asarray(obs["rollouts"]).tolist() == [8] * 16
        totals.append(float(np.sum(u(s, 8 - s))))
    assert reproduce.mean_utility("uniform", 3, 11) == pytest.approx(np.mean(totals), abs=1e-9)


def test_main_ships_the_better_model(tmp_path, monkeypatch):
    final, best = tmp_path / "model.zip", tmp_path / "best_model.zip"
    final.write_bytes(b"final model")
    best.write_bytes(b"best model")
    seen = {}

    cloned = tmp_path / "cloned.zip"
    cloned.write_bytes(b"cloned model")

    def fake_train(cfg):
        seen["cfg"] = cfg
        return TrainResult(tmp_path, final, best, 1000, 1.0, 1000.0, [], cloned_path=cloned)

    # per B: final 0.40 / 0.40, best 0.45 / 0.40, cloned 0.39 / 0.48 (utility per question)
    scores = {(f"sb3:{final}", 16): 0.40, (f"sb3:{final}", 64): 0.40,
              (f"sb3:{best}", 16): 0.45, (f"sb3:{best}", 64): 0.40,
              (f"sb3:{cloned}", 16): 0.39, (f"sb3:{cloned}", 64): 0.48}  # fmt: skip

    def fake_score(spec, episodes, seed, num_questions):
        seen.setdefault("scored", []).append((spec, episodes, seed, num_questions))
        return scores[(spec, num_questions)] * num_questions

    monkeypatch.setattr(reproduce, "train", fake_train)
    monkeypatch.setattr(reproduce, "mean_utility", fake_score)
    dest = tmp_path / "shipped" / "rounds.zip"
    cfg = ReproduceConfig(time_limit_s=5.0, seed=3, out=str(tmp_path), dest=str(dest),
                          policy="equivariant", clone_loss="squared", hidden=None)  # fmt: skip
    assert reproduce.main(cfg) == dest
    # the best mean per-question utility over B = 16 and 64: cloned (0.435) over best (0.425)
    assert dest.read_bytes() == b"cloned model"
    train_cfg = seen["cfg"]
    assert (train_cfg.algo, train_cfg.env, train_cfg.policy) == ("ppo", ENV_ID, "equivariant")
    assert json.loads(train_cfg.env_kwargs) == ENV_KWARGS
    assert train_cfg.seed == 3 and train_cfg.time_limit_s == 5.0
    assert (train_cfg.clone, train_cfg.clone_sizes) == ("bamdp", "16,64")
    # every candidate scored on the same paired episodes at both sizes, seeds apart from the
    # benchmark's
    assert seen["scored"] == [(f"sb3:{p}", 1000, 10_007, b) for p in (final, best, cloned)
                              for b in (16, 64)]  # fmt: skip
    # without a best model or a clone the final one ships
    monkeypatch.setattr(
        reproduce, "train", lambda cfg: TrainResult(tmp_path, final, None, 1, 1.0, 1.0, [])
    )
    reproduce.main(cfg)
    assert dest.read_bytes() == b"final model"


def test_by_default_the_curve_policy_is_cloned_and_ships_as_it_is(tmp_path, monkeypatch):
    """The defaults reproduce the shipped model: the curve policy, width 128, cloned from
    ``bamdp``'s curves (400 epochs, three DAgger iterations, B = 16 and 64); nothing is scored,
    the model (its clone) is copied."""
    model = tmp_path / "model.zip"
    model.write_bytes(b"curve model")
    seen = {}

    def fake_train(cfg):
        seen["cfg"] = cfg
        return TrainResult(tmp_path, model, None, 0, 0.0, float("nan"), [], cloned_path=model)

    def no_score(*args, **kwargs):
        raise AssertionError("nothing to choose between: no episodes are scored")

    monkeypatch.setattr(reproduce, "train", fake_train)
    monkeypatch.setattr(reproduce, "mean_utility", no_score)
    dest = tmp_path / "shipped.zip"
    assert reproduce.main(ReproduceConfig(out=str(tmp_path), dest=str(dest))) == dest
    assert dest.read_bytes() == b"curve model"
    c = seen["cfg"]
    assert (c.policy, c.hidden, c.clone, c.clone_loss) == ("curves", 128, "bamdp", "curves")
    assert (c.clone_episodes, c.clone_epochs, c.clone_dagger, c.clone_sizes) == (
        600,
        400,
        3,
        "16,64",
    )
    assert c.total_timesteps is None
    assert read_meta(PRETRAINED)["policy"] == "curves"
