"""Reproduce the shipped ``sb3:pretrained`` allocator (behind ``scripts/train_pretrained.py``).

The shipped model (since 2026-12-07) is the curve policy (``agents.sb3.curves``, width 128) for
``AdaRoll/BetaBernoulliRounds-v0`` (rlvr difficulty with the matched belief, B = 16, G = 8,
rounds of R = 16, the default ``snr(8)`` utility): a clone of ``bamdp``'s value curves on 600
expert episodes at each of B = 16 and 64, 400 epochs, three DAgger iterations, no PPO step
(about an hour on one core of the 2-core reference machine); the defaults here. The model
before it: ``--policy equivariant --clone-loss squared --hidden none --clone-epochs 200``, PPO
with the equivariant policy from the clone (hyperparameters from
``agents/sb3/hyperparams/ppo.yml``, stopped after ``time_limit_s`` of wall time); the clone,
the final and the best-evaluated model are then compared on ``select_episodes`` paired episodes
(seeds disjoint from the benchmark's) and the best is copied to ``dest``
(``agents/sb3/pretrained/rounds_rlvr_b16.zip``).

    python scripts/train_pretrained.py [--seed 0] [--dest runs/candidate.zip]
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym
import numpy as np

import adaroll_env
from agents.benchmarks.runner import run_episodes
from agents.sb3 import PRETRAINED
from agents.sb3.train import TrainConfig
from agents.sb3.train import main as train

ENV_ID = "AdaRoll/BetaBernoulliRounds-v0"
ENV_KWARGS: dict[str, Any] = {
    "num_questions": 16,
    "budget": 128,
    "difficulty": "rlvr",
    "utility": "snr(8)",
}


@dataclass
class ReproduceConfig:
    """Configuration of ``scripts/train_pretrained.py``."""

    time_limit_s: float = field(default=600.0, metadata={"help": "wall-time limit of training"})
    seed: int = field(default=0, metadata={"help": "training seed"})
    clone: str = field(
        default="bamdp",
        metadata={"help": "behaviour-clone this allocator first ('': PPO from scratch)"},
    )
    clone_episodes: int = field(
        default=600, metadata={"help": "expert episodes to clone, per batch size"}
    )
    clone_sizes: str = field(
        default="16,64", metadata={"help": "batch sizes of the cloned episodes"}
    )
    clone_loss: Literal["squared", "value", "curves"] = field(
        default="curves",
        metadata={
            "help": "what the clone fits: 'squared' (counts), 'value' (value given up) or "
            "'curves' (bamdp's value curves; --policy curves)"
        },
    )
    policy: Literal["equivariant", "curves"] = field(
        default="curves",
        metadata={
            "help": "'equivariant' (weights; cloned, then PPO) or 'curves' (value curves split "
            "exactly; cloned only)"
        },
    )
    hidden: int | None = field(
        default=128, metadata={"help": "network width (none: the hyperparameter file's, 64)"}
    )
    clone_epochs: int = field(default=400, metadata={"help": "passes over the cloned decisions"})
    clone_dagger: int = field(default=3, metadata={"help": "DAgger iterations of the clone"})
    total_timesteps: int | None = field(
        default=None, metadata={"help": "env steps (None: the hyperparameter file's n_timesteps)"}
    )
    out: str = field(default="runs", metadata={"help": "folder of the training run"})
    name: str = field(default="pretrained-rounds-rlvr-b16", metadata={"help": "run name"})
    select_episodes: int = field(
        default=1000, metadata={"help": "paired episodes comparing the final and best models"}
    )
    select_sizes: str = field(
        default="16,64", metadata={"help": "batch sizes of the selection episodes"}
    )
    dest: str = field(default=str(PRETRAINED), metadata={"help": "where the winner is copied"})
    progress: bool = field(default=False, metadata={"help": "show a progress bar"})


def mean_utility(spec: str, episodes: int, master_seed: int, num_questions: int = 16) -> float:
    """Mean utility of ``spec`` over paired episodes of the shipped model's setting (at another
    B: the same rollouts per question)."""
    gym.register_envs(adaroll_env)
    per_question = ENV_KWARGS["budget"] // ENV_KWARGS["num_questions"]
    kw = {**ENV_KWARGS, "num_questions": num_questions, "budget": per_question * num_questions}
    env = gym.make(ENV_ID, **kw)
    return float(
        np.mean([r["utility"] for r in run_episodes(env, spec, range(episodes), master_seed)])
    )


def main(cfg: ReproduceConfig) -> Path:
    """Train, pick the better of the final and best models, copy it to ``cfg.dest``."""
    res = train(
        TrainConfig(
            algo="ppo",
            env=ENV_ID,
            env_kwargs=json.dumps(ENV_KWARGS),
            policy=cfg.policy,
            hidden=cfg.hidden,
            seed=cfg.seed,
            eval_freq=50_000,
            eval_episodes=200,
            save_freq=200_000,
            out=cfg.out,
            name=cfg.name,
            time_limit_s=cfg.time_limit_s,
            total_timesteps=cfg.total_timesteps,
            clone=cfg.clone,
            clone_episodes=cfg.clone_episodes,
            clone_epochs=cfg.clone_epochs,
            clone_dagger=cfg.clone_dagger,
            clone_sizes=cfg.clone_sizes,
            clone_loss=cfg.clone_loss,
            progress=cfg.progress,
        )
    )
    candidates = [res.model_path]
    if cfg.policy != "curves":  # the curve policy's model is its clone: nothing to choose
        candidates += [p for p in (res.best_path, res.cloned_path) if p]
    select_seed = 10_007  # disjoint from the benchmark's master seeds
    sizes = [int(x) for x in cfg.select_sizes.split(",") if x.strip()]
    # per-question utility, averaged over the sizes: the model is used at any B
    scores = {
        p: float(np.mean([mean_utility(f"sb3:{p}", cfg.select_episodes, select_seed, b) / b
                          for b in sizes]))
        for p in candidates
    } if len(candidates) > 1 else {res.model_path: float("nan")}  # fmt: skip
    best = max(scores, key=lambda p: scores[p])
    for p, s in scores.items() if len(candidates) > 1 else ():
        print(f"{p}: mean utility per question {s:.5f} over {cfg.select_episodes} episodes at "
              f"B = {', '.join(map(str, sizes))}")  # fmt: skip
    dest = Path(cfg.dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(best, dest)
    print(f"shipped {best} -> {dest} ({dest.stat().st_size / 1024:.0f} KiB)")
    return dest
