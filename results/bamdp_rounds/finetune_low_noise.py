"""PPO from the shipped ``sb3:pretrained`` with little exploration noise: does it gain on the clone?

The shipped recipe's PPO (``agents/sb3/hyperparams/ppo.yml``: log-std −0.5, a Gaussian of
std 0.61 on actions where one rollout of a question is about 0.22) never beat the clone it
started from. Here PPO continues the shipped model in its own setting (``rlvr``, B = 16, G = 8,
rounds of 16, ``snr(8)``, dense rewards, 8 envs) with the log-std set to ``--log-std`` (−2.5:
std 0.08), a constant learning rate ``--lr`` and a clip range of 0.1, for ``--seconds`` of wall
time; the result is scored as ``scripts/train_pretrained.py`` selects models (mean utility per
question over 1,000 paired episodes of master seed 10,007 at B = 16 and 64) beside the shipped
model's own score. Writes ``finetune_low_noise.json`` beside this file; the model goes to
``runs/sb3-finetune-low-noise.zip``.

    python results/bamdp_rounds/finetune_low_noise.py [--log-std -2.5] [--lr 1e-5] [--seconds 300]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch as th
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback

from agents.sb3 import PRETRAINED
from agents.sb3.allocator import read_meta, save_model
from agents.sb3.reproduce import ENV_ID, ENV_KWARGS, mean_utility
from agents.sb3.train import make_vec


class _WallClock(BaseCallback):  # type: ignore[misc]
    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds
        self.start = time.time()

    def _on_step(self) -> bool:
        return time.time() - self.start < self.seconds


def score(path: str) -> list[float]:
    """Selection score per B (mean utility per question, 1,000 episodes, seed 10,007)."""
    return [mean_utility(f"sb3:{path}", 1000, 10_007, b) / b for b in (16, 64)]


def main() -> None:
    """Fine-tune, score both models, print and write the JSON."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--log-std", type=float, default=-2.5, help="policy log-std (-2.5)")
    ap.add_argument("--lr", type=float, default=1e-5, help="constant learning rate (1e-5)")
    ap.add_argument("--seconds", type=float, default=300.0, help="wall time of PPO (300)")
    args = ap.parse_args()
    th.set_num_threads(1)
    env_kwargs = {**ENV_KWARGS, "reward_mode": "dense"}
    venv = make_vec(ENV_ID, env_kwargs, n_envs=8, seed=123, vec_env="dummy")
    lr = args.lr
    model = PPO.load(str(PRETRAINED), env=venv, device="cpu", custom_objects={
        "learning_rate": lr, "lr_schedule": lambda _: lr, "clip_range": lambda _: 0.1})  # fmt: skip
    model.policy.log_std.data[:] = args.log_std
    for group in model.policy.optimizer.param_groups:
        group["lr"] = lr
    model.learn(total_timesteps=10**9, callback=_WallClock(args.seconds), reset_num_timesteps=False)
    out = Path("runs") / "sb3-finetune-low-noise.zip"
    out.parent.mkdir(parents=True, exist_ok=True)
    save_model(model, out, read_meta(PRETRAINED))
    tuned, shipped = score(str(out)), score(str(PRETRAINED))
    result = {
        "log_std": args.log_std, "lr": args.lr, "seconds": args.seconds,
        "ppo_steps": int(model.num_timesteps),
        "fine_tuned": {"b16": tuned[0], "b64": tuned[1], "mean": float(np.mean(tuned))},
        "shipped": {"b16": shipped[0], "b64": shipped[1], "mean": float(np.mean(shipped))},
    }  # fmt: skip
    print(json.dumps(result, indent=2))
    path = Path(__file__).with_name("finetune_low_noise.json")
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written: {path}")


if __name__ == "__main__":
    main()
