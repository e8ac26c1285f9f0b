"""Worker for the data-parallel test: ``torchrun --nproc_per_node 2 dp_worker.py MODEL OUT
[parity]``.

Each rank trains a few GRPO steps on its shard of the prompts through accelerate (gloo on CPU),
writes a checkpoint, then records a hash of its parameters, its prompt ids and its reports.
With ``parity`` the rollouts are rewarded for an odd length (the model families' smoke warm
starts solve almost no sum, and a step without mixed groups would not train).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import torch

from trainers.grpo import GRPOConfig
from trainers.grpo.trainer import GRPOTrainer
from trainers.run.grpo_command import save_checkpoint
from trainers.tasks import make_task


def parity(prompts: list[str], completions: list[str], **kw: Any) -> list[float]:
    return [float(len(c) % 2) for c in completions]


def main(model_dir: str, out: str, reward: str = "exact") -> None:
    cfg = GRPOConfig(
        model=model_dir,
        allocator="bamdp",
        batch_size=8,
        group_size=4,
        round_size=8,
        lr=1e-3,
        device="cpu",
        eval_every=0,
        tensorboard=False,
        progress=False,
        seed=3,
    )
    task = None
    if reward == "parity":
        task = make_task("arithmetic", seed=0, num_train=2000, reward_funcs=parity)
    trainer = GRPOTrainer(cfg, task=task)
    start = [p.detach().clone() for p in trainer.policy.parameters()]
    reports, prompt_ids = [], []
    for _ in range(3):
        reports.append(trainer.train_step().as_dict())
        prompt_ids.append([e.id for e in trainer.examples])
    evaluation = trainer.evaluate(size=16, k=2)
    save_checkpoint(trainer, out)
    params = list(trainer.policy.parameters())
    digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in params)).hexdigest()
    changed = any(not torch.equal(a, b.detach()) for a, b in zip(start, params, strict=True))
    record = {
        "rank": trainer.rank,
        "world": trainer.world,
        "digest": digest,
        "changed": changed,
        "prompt_ids": prompt_ids,
        "reports": reports,
        "eval": evaluation,
    }
    Path(out, f"rank{trainer.rank}.json").write_text(json.dumps(record))


if __name__ == "__main__":
    main(*sys.argv[1:4])
