"""AdaRoll/GRPOTraining-v0: the live env passes the checkers and runs every allocator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import adaroll_env
from agents import make_allocator


@pytest.fixture(scope="module")
def env(tiny_model_dir: Path) -> Any:
    gym.register_envs(adaroll_env)
    e = gym.make(
        adaroll_env.LIVE_ENV_ID,
        model=str(tiny_model_dir),
        batch_size=4,
        group_size=8,  # the shipped sb3:pretrained was trained at G = 8, R = B
        round_size=4,
        device="cpu",
        eval_every=0,
        tensorboard=False,
        progress=False,
    )
    yield e
    e.close()


def test_importing_adaroll_env_registers_the_live_env_lazily() -> None:
    spec = gym.spec(adaroll_env.LIVE_ENV_ID)
    assert (
        spec.nondeterministic and spec.entry_point == "trainers.allocation.live_env:GRPOTrainingEnv"
    )


def test_gymnasium_and_sb3_checkers(env: Any) -> None:
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    check_env(env.unwrapped, skip_render_check=True)
    sb3_check_env(env, warn=True)


def run_episode(env: Any, allocator: Any, seed: int) -> tuple[float, dict[str, Any], Any]:
    obs, info = env.reset(seed=seed)
    allocator.reset(env.unwrapped.params, seed=seed)
    total, done = 0.0, False
    while not done:
        obs, reward, terminated, truncated, info = env.step(allocator.act(obs))
        assert isinstance(reward, float) and isinstance(terminated, bool)
        total += reward
        done = terminated or truncated
    return total, info, obs


@pytest.mark.parametrize("spec", ["uniform", "bamdp", "thompson", "sb3:pretrained"])
def test_simulator_allocators_run_unchanged(env: Any, spec: str) -> None:
    trainer = env.unwrapped.trainer
    step = trainer.step
    total, info, obs = run_episode(env, make_allocator(spec, env), seed=1)
    report = info["report"]
    assert trainer.step == step + 1 and report["rollouts"] == 32
    # the return is the step's final utility, and the report agrees with the env
    assert total == pytest.approx(report[f"utility/{trainer.utility}"])
    assert np.asarray(info["allocation"]).sum() == 32 and obs["budget_left"][0] == 0


def test_reset_mid_step_abandons_it(env: Any) -> None:
    trainer = env.unwrapped.trainer
    env.reset(seed=0)
    env.step(adaroll_env.encode_counts([1, 1, 1, 1]))
    abandoned = trainer.abandoned
    obs, info = env.reset()
    assert trainer.abandoned == abandoned + 1 and info["abandoned_steps"] == abandoned + 1
    allocator, done = make_allocator("uniform", env, seed=0), False
    while not done:  # finish the step begun by that reset
        obs, _, done, _, info = env.step(allocator.act(obs))
    assert info["report"]["abandoned_steps"] == abandoned + 1


@pytest.mark.slow
def test_an_sb3_algorithm_learns_on_it(env: Any) -> None:
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback

    class Reports(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.reports: list[dict[str, Any]] = []

        def _on_step(self) -> bool:
            self.reports += [i["report"] for i in self.locals["infos"] if "report" in i]
            return True

    trainer = env.unwrapped.trainer
    step = trainer.step
    lm_before = [p.detach().clone() for p in trainer.policy.parameters()]
    model = PPO("MultiInputPolicy", env, n_steps=8, batch_size=8, n_epochs=1, seed=0)
    ppo_before = [p.detach().clone() for p in model.policy.parameters()]
    reports = Reports()
    model.learn(total_timesteps=32, callback=reports)  # four GRPO steps of eight rounds
    assert trainer.step >= step + 3 and len(reports.reports) == trainer.step - step
    # every GRPO step the agent drove spent exactly its budget, and updated the language model
    assert all(r["rollouts"] == 32 and not r["skipped_update"] for r in reports.reports)
    lm_after = list(trainer.policy.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(lm_before, lm_after, strict=True))
    # and PPO itself learned from those episodes: its policy's parameters moved
    ppo_after = list(model.policy.parameters())
    moved = [not torch.equal(a, b) for a, b in zip(ppo_before, ppo_after, strict=True)]
    assert sum(moved) >= len(moved) // 2, moved


@pytest.mark.parametrize(("kw", "sizes"), [({}, [16, 16]), ({"round_schedule": "24,8"}, [24, 8])])
def test_the_round_schedule_reaches_the_live_env(
    tiny_model_dir: Path, kw: dict[str, Any], sizes: list[int]
) -> None:
    """By default an episode is two equal rounds; a schedule sets each round's size, which the
    observation's budget and the env's own checks follow."""
    gym.register_envs(adaroll_env)
    e = gym.make(
        adaroll_env.LIVE_ENV_ID,
        model=str(tiny_model_dir),
        batch_size=4,
        group_size=8,
        device="cpu",
        eval_every=0,
        tensorboard=False,
        progress=False,
        threads=1,
        **kw,
    )
    try:
        obs, _ = e.reset(seed=0)
        seen, done = [], False
        while not done:
            left = int(obs["budget_left"][0])
            n = e.unwrapped.trainer.next_round_size
            seen.append(n)
            counts = np.bincount(np.arange(n) % 4, minlength=4)
            obs, _, done, _, info = e.step(adaroll_env.encode_counts(counts))
            assert int(obs["budget_left"][0]) == left - n
        assert seen == sizes and info["report"]["rounds"] == len(sizes)
    finally:
        e.close()
