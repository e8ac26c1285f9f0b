"""Env throughput measurement behind ``scripts/bench_env.py``: steps per second of the adaroll
envs beside ``CartPole-v1``, single (``gymnasium.make``) and vectorised (``gymnasium.make_vec``),
in the same run."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

import adaroll_env


@dataclass
class EnvBenchConfig:
    """Configuration of the env throughput benchmark."""

    seconds: float = field(default=2.0, metadata={"help": "measuring time per row"})
    sizes: str = field(default="16,512", metadata={"help": "values of B, comma-separated"})
    num_envs: int = field(default=8, metadata={"help": "sub-environments for make_vec"})
    vector_modes: str = field(
        default="sync,async", metadata={"help": "make_vec modes to measure, comma-separated"}
    )
    seed: int = field(default=0, metadata={"help": "seed of envs and pre-drawn actions"})
    repeats: int = field(
        default=4, metadata={"help": "alternating CartPole/env slices per row (noise control)"}
    )

    def __post_init__(self) -> None:
        if self.seconds <= 0:
            raise ValueError(f"seconds must be > 0, got {self.seconds}")
        if self.repeats < 1:
            raise ValueError(f"repeats must be >= 1, got {self.repeats}")
        if self.num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {self.num_envs}")


def _actions(space: gym.Space, n: int, seed: int) -> list[Any]:
    space.seed(seed)
    return [space.sample() for _ in range(n)]


def single_steps_per_second(
    env_id: str, kwargs: dict[str, Any], seconds: float, seed: int
) -> float:
    """Steps per second of one env made with ``gymnasium.make`` under pre-drawn random actions."""
    env = gym.make(env_id, **kwargs)
    actions = _actions(env.action_space, 1024, seed)
    env.reset(seed=seed)
    steps = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        for a in actions:
            _, _, terminated, truncated, _ = env.step(a)
            if terminated or truncated:
                env.reset()
        steps += len(actions)
    rate = steps / (time.perf_counter() - start)
    env.close()
    return rate


def vector_steps_per_second(
    env_id: str, kwargs: dict[str, Any], num_envs: int, mode: str, seconds: float, seed: int
) -> float:
    """Env steps per second (sub-env steps, not batch steps) under ``gymnasium.make_vec``."""
    envs = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode=mode, **kwargs)
    actions = _actions(envs.action_space, 256, seed)
    envs.reset(seed=seed)
    steps = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        for a in actions:
            envs.step(a)
        steps += len(actions) * num_envs
    rate = steps / (time.perf_counter() - start)
    envs.close()
    return rate


def measure(cfg: EnvBenchConfig) -> list[dict[str, Any]]:
    """One row per (env, B, how): steps per second, and the ratio to CartPole measured alike.

    This machine is shared and noisy, so each row alternates ``repeats`` slices of CartPole and
    of the env (same way of making and stepping) and reports the ratio of the summed rates.
    """
    gym.register_envs(adaroll_env)
    sizes = [int(s) for s in cfg.sizes.split(",") if s.strip()]
    modes = [m.strip() for m in cfg.vector_modes.split(",") if m.strip()]
    hows = ["make", *[f"make_vec({cfg.num_envs}, {m})" for m in modes]]
    slice_s = cfg.seconds / cfg.repeats

    def run(env_id: str, kwargs: dict[str, Any], how: str) -> float:
        if how == "make":
            return single_steps_per_second(env_id, kwargs, slice_s, cfg.seed)
        mode = how.split(", ")[1].rstrip(")")
        return vector_steps_per_second(env_id, kwargs, cfg.num_envs, mode, slice_s, cfg.seed)

    rows: list[dict[str, Any]] = []
    for env_id in adaroll_env.ENV_IDS:
        for B in sizes:
            for how in hows:
                ours, cart = [], []
                for _ in range(cfg.repeats):
                    cart.append(run("CartPole-v1", {}, how))
                    ours.append(run(env_id, {"num_questions": B}, how))
                rows.append(
                    {
                        "env": env_id,
                        "B": B,
                        "how": how,
                        "steps_per_s": float(np.mean(ours)),
                        "cartpole_steps_per_s": float(np.mean(cart)),
                        "vs_cartpole": float(np.sum(ours) / np.sum(cart)),
                    }
                )
    return rows


def main(cfg: EnvBenchConfig) -> list[dict[str, Any]]:
    """Measure and print the table."""
    from rich.console import Console
    from rich.table import Table

    rows = measure(cfg)
    table = Table(
        title=f"env steps per second ({cfg.seconds:g} s per side and row, "
        f"{cfg.repeats} alternating slices, same run)"
    )
    for col in ("env", "B", "how", "steps/s", "CartPole steps/s", "vs CartPole"):
        table.add_column(col, justify="left" if col in ("env", "how") else "right")
    for r in rows:
        table.add_row(
            r["env"],
            str(r["B"]),
            r["how"],
            f"{r['steps_per_s']:,.0f}",
            f"{r['cartpole_steps_per_s']:,.0f}",
            f"{r['vs_cartpole']:.2f}",
        )
    console = Console() if Console().is_terminal else Console(width=120)
    console.print(table)
    return rows
