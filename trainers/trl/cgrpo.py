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

Rollouts generated (``CGRPOMeter``), counted where C-GRPO generates them: every row its
sampling stages draw in a training batch (``_sample``: a prompt that stops at budget k drew exactly
k completions, one that never resolves drew max(budget_grid); the one-token padding rows are not
generated and not counted) and every completion a calibration draws (``calibrate``: its own
``cgrpo/calibration_rollouts``, n × max(budget_grid)). Its conformal state (thresholds, δ, the step
of the last calibration, the random generator of its APS scores) is not in TRL's checkpoints:
``cgrpo_state`` and ``load_cgrpo_state`` carry it, so a resumed run neither recalibrates early
nor draws other APS tie-breaks; and one resumed in a later epoch reads the prompts in the
unstopped run's order (``trainers.trl.data_order``).

Needs the ``cgrpo`` extra: trl-cgrpo 0.2 requires the TRL 1.14 line, so it installs in an
environment of its own (``pip install -e ".[cgrpo]"``; ``make test-trl114`` builds one,
``.venv-trl114``). Importing this module needs neither (nor torch).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

__all__ = [
    "CGRPO",
    "CGRPO_LOSS_TYPES",
    "CGRPO_TRL",
    "CGRPOMeter",
    "answer_extractor",
    "arithmetic_answer",
    "build_cgrpo",
    "cgrpo_state",
    "cgrpo_width",
    "load_cgrpo_state",
    "require_cgrpo",
]

#: the entrant's name in the TRL competition
CGRPO = "cgrpo"

#: the TRL line the ``cgrpo`` extra installs (trl-cgrpo 0.2 requires trl>=1.12,<1.15; 1.14.2 is
#: the release tested here, and one that ``trainers.trl.trainer`` supports too)
CGRPO_TRL = "trl>=1.14.2,<1.15"

#: the loss types ``CGRPOTrainer`` accepts (token-normalised losses, from which its padded rows
#: drop out exactly; trl-cgrpo 0.2 refuses the others)
CGRPO_LOSS_TYPES = ("dapo", "bnpo", "cispo", "vespo")


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


def answer_extractor(task_name: str) -> Callable[[str], str | None]:
    """C-GRPO's ``answer_extractor`` for an adaroll task: the stripped completion where the task
    scores the stripped completion itself (``arithmetic``; reasoning-gym ``rg:`` tasks, whose
    ``score_answer`` gets ``completion.strip()``), else the final answer its verifier extracts
    (``trainers.tasks.extract_answer``: jsonl files, ``sample``)."""
    if task_name == "arithmetic" or task_name.startswith("rg:"):
        return arithmetic_answer
    from trainers.tasks import extract_answer

    return extract_answer


def cgrpo_width() -> int:
    """C-GRPO's group width at its defaults: max(budget_grid) (32 in trl-cgrpo 0.2)."""
    trl_cgrpo = require_cgrpo()
    grid = trl_cgrpo.CGRPOConfig.__dataclass_fields__["budget_grid"].default_factory()
    return int(max(grid))


@dataclass
class CGRPOMeter:
    """What a ``CGRPOTrainer`` generates, counted at its own calls (see the module docstring),
    and per training batch the figures ``AllocatingGRPOTrainer`` logs under ``allocation/``:
    informative fraction and prompts (prompts whose drawn completions hold both a success and a
    failure), rollouts with non-zero advantage, sampling stages (``rounds``) and the
    generate-and-score wall time."""

    success_threshold: float = 0.5
    train_rollouts: int = 0  #: completions drawn for training batches, all batches so far
    calibration_rollouts: int = 0  #: completions drawn by calibrations so far
    prompts: list[int] = field(default_factory=list)  #: prompts of each training batch
    informative: list[float] = field(default_factory=list)  #: one per training batch
    informative_prompts: list[int] = field(default_factory=list)  #: one per training batch
    gradient_rollouts: list[float] = field(default_factory=list)  #: one per training batch
    rounds: list[int] = field(default_factory=list)  #: sampling stages, one per training batch
    seconds: list[float] = field(default_factory=list)  #: generate-and-score wall time per batch
    _stages: int = 0

    def attach(self, trainer: Any) -> None:
        """Wrap the trainer's sampling, calibration, reward and generate-and-score calls
        (C-GRPO's own overrides, which stay in force) to count and record; evaluation batches
        are left out."""
        rewards_call = trainer._calculate_rewards
        batch_call = trainer._generate_and_score_completions
        sample_call = trainer._sample
        calibrate_call = trainer.calibrate
        width = int(trainer.num_generations)
        weights = trainer.reward_weights.cpu()

        def sample(prompt_ids: Any, *args: Any, **kwargs: Any) -> Any:
            out = sample_call(prompt_ids, *args, **kwargs)
            self.train_rollouts += len(prompt_ids)  # one completion per row
            self._stages += 1
            return out

        def calibrate(*args: Any, **kwargs: Any) -> Any:
            out = calibrate_call(*args, **kwargs)
            drawn = trainer._metrics["train"]["cgrpo/calibration_rollouts"][-1]
            self.calibration_rollouts += int(drawn)
            return out

        def calculate_rewards(*args: Any, **kwargs: Any) -> Any:
            rewards = rewards_call(*args, **kwargs)  # [N, F], C-GRPO's padded rows all NaN
            if trainer.model.training:
                total = (rewards.cpu() * weights.unsqueeze(0)).nansum(dim=1).numpy()  # [N]
                drawn = ~np.isnan(rewards.cpu().numpy()).all(axis=1)  # [N]
                good = (total >= self.success_threshold).reshape(-1, width)  # [prompts, width]
                real = drawn.reshape(-1, width)
                mixed = (good & real).any(axis=1) & (~good & real).any(axis=1)  # [prompts]
                self.prompts.append(int(mixed.size))
                self.informative.append(float(mixed.mean()))
                self.informative_prompts.append(int(mixed.sum()))
            return rewards

        def generate_and_score(inputs: Any) -> Any:
            start = time.perf_counter()
            self._stages = 0
            output = batch_call(inputs)
            if trainer.model.training:
                self.seconds.append(time.perf_counter() - start)
                self.rounds.append(self._stages)
                self.gradient_rollouts.append(float((output["advantages"] != 0).sum().item()))
            return output

        trainer._sample = sample
        trainer.calibrate = calibrate
        trainer._calculate_rewards = calculate_rewards
        trainer._generate_and_score_completions = generate_and_score


def build_cgrpo(
    *,
    model: Any,
    tokenizer: Any,
    train_dataset: Any,
    calibration_dataset: Any,
    reward_funcs: Any,
    answer_extractor: Callable[[str], str | None],
    train_args: Mapping[str, Any],
) -> tuple[Any, CGRPOMeter]:
    """A ``CGRPOTrainer`` at C-GRPO's defaults: training on ``train_dataset``, calibrating on
    ``calibration_dataset`` (prompts held out from training and from every evaluation, with an
    ``answer`` column), each prompt in a group of max(budget_grid) rows (``cgrpo_width``);
    ``train_args`` are the ``trl.GRPOConfig`` arguments of the run, the batch sized for that
    width (``num_generations`` is C-GRPO's own and is dropped). Returns the trainer and its
    attached :class:`CGRPOMeter`."""
    trl_cgrpo = require_cgrpo()
    from trainers.trl.data_order import keep_data_order

    if len(calibration_dataset) == 0:
        raise ValueError(
            "C-GRPO calibrates on held-out prompts, but its calibration set is empty: hold some "
            "out (adaroll compete --trainer trl --calibration-size N)"
        )
    loss_type = train_args.get("loss_type", "dapo")
    if loss_type not in CGRPO_LOSS_TYPES:
        raise ValueError(
            f"C-GRPO pads the prompts that stop early with masked rows, which only a token-"
            f"normalised loss leaves out exactly: loss_type {loss_type!r} is refused by "
            f"trl-cgrpo; use one of {', '.join(CGRPO_LOSS_TYPES)} (--loss-type dapo)"
        )
    kwargs = {k: v for k, v in train_args.items() if k != "num_generations"}
    trainer = trl_cgrpo.CGRPOTrainer(
        model=model,
        reward_funcs=reward_funcs,
        args=trl_cgrpo.CGRPOConfig(**kwargs),
        train_dataset=train_dataset,
        calibration_dataset=calibration_dataset,
        answer_extractor=answer_extractor,
        processing_class=tokenizer,
    )
    keep_data_order(trainer)  # resumed in a later epoch, it reads the unstopped run's prompts
    meter = CGRPOMeter()
    meter.attach(trainer)
    return trainer, meter


def cgrpo_state(trainer: Any) -> dict[str, Any]:
    """C-GRPO's conformal state, which TRL's checkpoints lack: thresholds ``qhats``, ``delta``,
    the step of the last calibration and its random generator's state (JSON-ready)."""
    version, internal, gauss = trainer._rng.getstate()
    qhats = trainer.qhats
    return {
        "qhats": None if qhats is None else {str(k): float(v) for k, v in qhats.items()},
        "delta": trainer.delta,
        "last_calibration_step": trainer._last_calibration_step,
        "rng": [version, list(internal), gauss],
    }


def load_cgrpo_state(trainer: Any, state: Mapping[str, Any]) -> None:
    """Restore what ``cgrpo_state`` returned."""
    qhats = state["qhats"]
    trainer.qhats = None if qhats is None else {int(k): float(v) for k, v in qhats.items()}
    trainer.delta = state["delta"]
    trainer._last_calibration_step = state["last_calibration_step"]
    version, internal, gauss = state["rng"]
    trainer._rng.setstate((version, tuple(internal), gauss))
