"""C-GRPO as a peer of the allocators: trl-cgrpo's ``CGRPOTrainer`` at its documented defaults,
built on the TRL competition's settings, with the rollouts it generates counted.

C-GRPO (trl-cgrpo 0.2; Fayyazi et al., "conformal adaptive rollout budgets for GRPO",
OpenReview TrdqzzvFCs) samples each prompt in steps along ``budget_grid`` (default
2, 4, 8, 16, 32) and stops at the first budget k whose split-conformal prediction set over the
answers drawn so far is a singleton: the randomized APS set of the empirical answer distribution
with threshold q̂_k, each q̂_k the ⌈(n+1)(1−δ)⌉-th smallest APS score of the reference answer on n
held-out calibration prompts, δ = (1 − solve rate at max(budget_grid)) + 0.05 (``delta=None``,
``delta_margin=0.05``). The thresholds are fitted with the current policy before the first step
and every ``recalibrate_every`` (50) steps, each fit generating n × max(budget_grid) completions
(``num_calibration_samples=None``: the whole calibration set). Its group width is max(budget_grid):
a prompt that stops early is padded with one-token rows that get a NaN reward, zero advantage and
no loss; they are not generated.

Rollouts generated (``cgrpo_rollouts``), from C-GRPO's own documented metrics, one log per
step: a training step generates ``cgrpo/mean_k`` × its prompts (a prompt that stops at budget k
drew exactly k completions, one that never resolves drew max(budget_grid)), and a step that
calibrates adds ``cgrpo/calibration_rollouts``.

Needs the ``cgrpo`` extra: trl-cgrpo 0.2 requires the TRL 1.14 line, so it installs in an
environment of its own (``pip install -e ".[cgrpo]"``; ``make test-trl114`` builds one,
``.venv-trl114``). Importing this module needs neither (nor torch).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

__all__ = [
    "CGRPO",
    "CGRPO_TRL",
    "CGRPOMeter",
    "arithmetic_answer",
    "build_cgrpo",
    "cgrpo_rollouts",
    "require_cgrpo",
]

#: the entrant's name in the TRL competition
CGRPO = "cgrpo"

#: the TRL line the ``cgrpo`` extra installs (trl-cgrpo 0.2 requires trl>=1.12,<1.15; 1.14.2 is
#: the release tested here, and one that ``trainers.trl.trainer`` supports too)
CGRPO_TRL = "trl>=1.14.2,<1.15"


def require_cgrpo() -> ModuleType:
    """``trl_cgrpo``, or an ``ImportError`` naming the extra and the TRL line it needs."""
    try:
        import trl_cgrpo
    except ImportError as exc:
        raise ImportError(
            f"entrant {CGRPO!r} runs C-GRPO from trl-cgrpo, which is not installed ({exc}): it "
            f'needs the TRL 1.14 line ({CGRPO_TRL}), so install it with pip install -e ".[cgrpo]" '
            "in an environment of its own (make test-trl114 builds one, .venv-trl114), or leave "
            f"{CGRPO!r} out of --allocators"
        ) from exc
    return trl_cgrpo


def arithmetic_answer(text: str) -> str:
    """The answer a completion gives on ``arithmetic``: the completion itself, stripped (what the
    task's exact match compares), C-GRPO's ``answer_extractor``."""
    return text.strip()


@dataclass
class CGRPOMeter:
    """Per training batch of a ``CGRPOTrainer``: its informative fraction (prompts whose drawn
    completions hold both a success and a failure) and its rollouts with non-zero advantage, the
    figures ``AllocatingGRPOTrainer`` logs under ``allocation/``."""

    success_threshold: float = 0.5
    informative: list[float] = field(default_factory=list)  #: one per training batch
    gradient_rollouts: list[float] = field(default_factory=list)  #: one per training batch
    seconds: list[float] = field(default_factory=list)  #: generate-and-score wall time per batch

    def attach(self, trainer: Any) -> None:
        """Wrap the trainer's reward and generate-and-score calls (C-GRPO's own overrides, which
        stay in force) to record the batch figures; evaluation batches are left out."""
        rewards_call = trainer._calculate_rewards
        batch_call = trainer._generate_and_score_completions
        width = int(trainer.num_generations)
        weights = trainer.reward_weights.cpu()

        def calculate_rewards(*args: Any, **kwargs: Any) -> Any:
            rewards = rewards_call(*args, **kwargs)  # [N, F], C-GRPO's padded rows all NaN
            if trainer.model.training:
                total = (rewards.cpu() * weights.unsqueeze(0)).nansum(dim=1).numpy()  # [N]
                drawn = ~np.isnan(rewards.cpu().numpy()).all(axis=1)  # [N]
                good = (total >= self.success_threshold).reshape(-1, width)  # [prompts, width]
                real = drawn.reshape(-1, width)
                mixed = (good & real).any(axis=1) & (~good & real).any(axis=1)
                self.informative.append(float(mixed.mean()))
            return rewards

        def generate_and_score(inputs: Any) -> Any:
            start = time.perf_counter()
            output = batch_call(inputs)
            if trainer.model.training:
                self.seconds.append(time.perf_counter() - start)
                self.gradient_rollouts.append(float((output["advantages"] != 0).sum().item()))
            return output

        trainer._calculate_rewards = calculate_rewards
        trainer._generate_and_score_completions = generate_and_score


def build_cgrpo(
    *,
    model: Any,
    tokenizer: Any,
    task: Any,
    train_args: Mapping[str, Any],
    prompts_per_step: int,
) -> tuple[Any, CGRPOMeter]:
    """A ``CGRPOTrainer`` at C-GRPO's defaults on ``task``: training on its train split,
    calibrating on its validation split (held out from train and test), ``prompts_per_step``
    prompts per step, each in a group of max(budget_grid) rows; ``train_args`` are the
    ``trl.GRPOConfig`` arguments every entrant shares (``num_generations`` and the per-device
    batch are C-GRPO's own). Returns the trainer and its attached :class:`CGRPOMeter`."""
    trl_cgrpo = require_cgrpo()
    from trainers.trl.adapters import task_dataset, task_reward  # torch and datasets, when used

    if not task.validation:
        raise ValueError(
            f"C-GRPO calibrates on held-out prompts, but task {task.name!r} has no validation "
            "split: build it with some (arithmetic's num_validation, the competition's "
            "--calibration-size)"
        )
    grid = trl_cgrpo.CGRPOConfig.__dataclass_fields__["budget_grid"].default_factory()
    width = max(grid)
    kwargs = {k: v for k, v in train_args.items() if k != "num_generations"}
    kwargs["per_device_train_batch_size"] = prompts_per_step * width
    trainer = trl_cgrpo.CGRPOTrainer(
        model=model,
        reward_funcs=task_reward(task),
        args=trl_cgrpo.CGRPOConfig(**kwargs),
        train_dataset=task_dataset(task),
        calibration_dataset=task_dataset(task, "validation"),
        answer_extractor=arithmetic_answer,
        processing_class=tokenizer,
    )
    meter = CGRPOMeter()
    meter.attach(trainer)
    return trainer, meter


def cgrpo_rollouts(
    log_history: list[dict[str, Any]], prompts_per_step: int, steps: int
) -> tuple[list[int], list[int]]:
    """Completions C-GRPO generated at each optimizer step: ``(training, calibration)``, from its
    logged ``cgrpo/mean_k`` (× ``prompts_per_step``) and ``cgrpo/calibration_rollouts``. Needs one
    log per step (``logging_steps=1``, one generation batch per step)."""
    logs = [h for h in log_history if "cgrpo/mean_k" in h]
    if len(logs) != steps:
        raise RuntimeError(
            f"C-GRPO logged cgrpo/mean_k {len(logs)} times in {steps} steps: its rollouts are "
            "counted from one log per step (logging_steps=1, one generation batch per step)"
        )
    train = [round(h["cgrpo/mean_k"] * prompts_per_step) for h in logs]
    calibration = [round(h.get("cgrpo/calibration_rollouts", 0)) for h in logs]
    return train, calibration
