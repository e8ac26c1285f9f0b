"""Worker of the TRL multi-process test: ``accelerate launch --cpu --num_processes 2
trl_worker.py MODEL OUT [parity]``.

Each process trains 3 steps of ``AllocatingGRPOTrainer`` with ``bamdp`` (gloo on CPU), then
writes a hash of its parameters, its belief store, the allocations and its local batch sizes.
"""

from __future__ import annotations

import hashlib
import json
import sys
import warnings
from pathlib import Path
from typing import Any

import torch
import trl
from datasets import Dataset

from trainers.models.loading import load_policy
from trainers.tasks import make_task
from trainers.trl.trainer import AllocatingGRPOTrainer


def exact(prompts: list[str], completions: list[str], answer: list[str], **kw: Any) -> list[float]:
    return [1.0 if c.strip() == a else 0.0 for c, a in zip(completions, answer, strict=True)]


def parity(prompts: list[str], completions: list[str], **kw: Any) -> list[float]:
    """An odd length succeeds: the model families' smoke warm starts solve almost no sum."""
    return [float(len(c) % 2) for c in completions]


def main(model_dir: str, out: str, reward: str = "exact") -> None:
    task = make_task("arithmetic", seed=0, num_train=256, num_test=8)
    data = Dataset.from_dict(
        {"prompt": [e.prompt for e in task.train], "answer": [e.answer for e in task.train]}
    )
    args = trl.GRPOConfig(
        output_dir=str(Path(out) / "run"),
        # 2 processes × 10 = 20 completions: 5 prompts × 4, so TRL's sampler splits the third
        # prompt's group across the processes; rounds of 6 (5 prompts rounded up to 3 × 2)
        per_device_train_batch_size=10,
        num_generations=4,
        max_completion_length=6,
        max_steps=3,
        learning_rate=1e-3,
        top_k=0,
        use_cpu=True,
        bf16=False,
        ddp_backend="gloo",
        report_to="none",
        save_strategy="no",
        logging_steps=1,
        disable_tqdm=True,
        seed=0,
        activation_checkpointing=False,
        dataloader_num_workers=0,
        log_completions=False,
    )
    model, tok = load_policy(model_dir)
    start = [p.detach().clone() for p in model.parameters()]
    trainer = AllocatingGRPOTrainer(
        model=model,
        reward_funcs=parity if reward == "parity" else exact,
        args=args,
        train_dataset=data,
        processing_class=tok,
        allocator="bamdp",
    )
    local_rows: list[int] = []
    inner = trainer._generate_and_score_completions

    def wrapped(inputs: Any) -> Any:
        result = inner(inputs)
        local_rows.append(int(result["completion_ids"].shape[0]))
        return result

    trainer._generate_and_score_completions = wrapped
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.train()
    params = list(trainer.accelerator.unwrap_model(trainer.model).parameters())
    digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in params)).hexdigest()
    changed = any(not torch.equal(a, b.detach()) for a, b in zip(start, params, strict=True))
    rank = trainer.accelerator.process_index
    record = {
        "rank": rank,
        "world": trainer.accelerator.num_processes,
        "digest": digest,
        "changed": changed,
        "beliefs": trainer.belief_store.state_dict(),
        "counts": [r.counts for r in trainer.allocations],
        "rounds": [r.rounds for r in trainer.allocations],
        "local_rows": local_rows,
    }
    Path(out, f"rank{rank}.json").write_text(json.dumps(record))
    # Leave the process group before the interpreter exits: a gloo thread still alive at exit
    # can abort the process ("terminate called without an active exception", exit -6), seen
    # once in a full suite run on 2026-12-07 after the worker had written its record.
    if torch.distributed.is_initialized():
        trainer.accelerator.wait_for_everyone()
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main(*sys.argv[1:4])
