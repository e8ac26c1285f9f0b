"""The report of one training step (``StepReport``) and how it is computed from the step.

``build_report`` turns a step's rollouts, final counts and update statistics into a
``StepReport``: allocation (informative / all-correct / all-wrong / empty fractions), every
registered training utility of the final counts, reward statistics, the update's numbers,
lengths and speed. Under data parallelism the per-rank sums are added (``Ranks.sum``), so every
rank reports the whole batch. ``TrainingUtility`` is the deprecated former name of ``StepReport``.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from adaroll_env.utilities import get_utility, list_utilities
from trainers.grpo.parallel import Ranks
from trainers.grpo.rollouts import Rollouts


@dataclass
class StepReport:
    """The report of one training step (docs: design §7): allocation, utilities, optimisation,
    speed.

    Formerly ``TrainingUtility`` (still importable, deprecated): it reports a step, of which
    the training utilities are one part.

    ``step`` numbers the step from 1: the trainer's step count once it is done, the number
    that the evaluation after it and its checkpoint (``step-NNNNNN``) carry.
    """

    step: int
    rollouts: int
    rollouts_total: int
    questions: int
    informative_frac: float
    informative_prompts: int
    all_correct_frac: float
    all_wrong_frac: float
    empty_frac: float
    utilities: dict[str, float]
    reward: float
    reward_std: float
    frac_reward_zero_std: float
    loss: float
    kl: float
    entropy: float
    clip_ratio_low: float
    clip_ratio_high: float
    grad_norm: float
    #: ``||theta_after - theta_before||`` of the update (the effective step; NaN when
    #: ``update_norm_every`` skips the step, 0 when nothing carried gradient)
    update_norm: float
    gradient_rollouts: int
    mean_length: float
    clipped_ratio: float
    tokens: int
    tokens_per_s: float
    step_seconds: float
    gen_seconds: float
    train_seconds: float
    alloc_seconds: float
    alloc_overhead: float
    rounds: int
    verifier_errors: int
    skipped_update: bool
    nan_skipped_total: int
    abandoned_steps: int
    logprob_diff: float
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def trained_rollouts(self) -> int:
        """Deprecated name of ``gradient_rollouts`` (one name per metric since version 4)."""
        warnings.warn(
            "StepReport.trained_rollouts is renamed gradient_rollouts; the old name will go",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.gradient_rollouts

    def as_dict(self) -> dict[str, Any]:
        """A flat dict of numbers (utilities as ``utility/<name>``), for JSONL and TensorBoard."""
        d = asdict(self)
        utilities = d.pop("utilities")
        extra = d.pop("extra")
        d.update({f"utility/{k}": v for k, v in utilities.items()})
        d.update(extra)
        return d


def build_report(
    ro: Rollouts,
    s: NDArray[np.int64],
    f: NDArray[np.int64],
    train: dict[str, float],
    train_seconds: float,
    *,
    step: int,
    rollouts_total: int,
    utility: str,
    step_start: float,
    nan_skipped: int = 0,
    abandoned: int = 0,
    ranks: Ranks = Ranks(),  # noqa: B008 (frozen)
) -> StepReport:
    """The report of step ``step`` from its rollouts, successes ``s`` and failures ``f`` per
    question, the update's statistics ``train`` and timings (the step began at ``step_start``,
    a ``time.perf_counter()``); summed over ``ranks``. ``rollouts_total``, ``nan_skipped`` and
    ``abandoned`` are the run's counters as they stand."""
    world = ranks.world
    sums = _step_sums(ro, s, f, train, utility)
    if world > 1:
        sums = ranks.sum(sums)
        for k in train:
            sums[f"t/{k}"] /= world
    step_seconds = time.perf_counter() - step_start
    if world > 1:
        step_seconds = ranks.sum({"x": step_seconds})["x"] / world
    q = max(sums["questions"], 1.0)
    m = max(sums["rollouts"], 1.0)
    mean = sums["reward_sum"] / m
    var = max(sums["reward_sq"] / m - mean * mean, 0.0)
    return StepReport(
        step=step,
        rollouts=int(sums["rollouts"]),
        rollouts_total=rollouts_total,
        questions=int(sums["questions"]),
        informative_frac=sums["informative"] / q,
        informative_prompts=int(sums["informative"]),
        all_correct_frac=sums["all_correct"] / q,
        all_wrong_frac=sums["all_wrong"] / q,
        empty_frac=sums["empty"] / q,
        utilities={name: sums[f"u/{name}"] for name in _reported_utilities(utility)},
        reward=mean,
        reward_std=math.sqrt(var),
        frac_reward_zero_std=sums["zero_std"] / max(sums["groups"], 1.0),
        loss=sums["t/loss"],
        kl=sums["t/kl"],
        entropy=sums["t/entropy"],
        clip_ratio_low=sums["t/low"],
        clip_ratio_high=sums["t/high"],
        grad_norm=sums["t/grad_norm"],
        update_norm=sums.get("t/update_norm", math.nan),
        gradient_rollouts=round(sums["t/trained"] * world),
        mean_length=sums["length_sum"] / m,
        clipped_ratio=sums["truncated"] / m,
        tokens=int(sums["tokens"]),
        tokens_per_s=sums["tokens"] / max(step_seconds, 1e-9),
        step_seconds=step_seconds,
        gen_seconds=ro.gen_seconds,
        train_seconds=train_seconds,
        alloc_seconds=ro.alloc_seconds,
        alloc_overhead=ro.alloc_seconds / max(step_seconds, 1e-9),
        rounds=ro.rounds,
        verifier_errors=int(sums["errors"]),
        skipped_update=bool(sums["t/skipped"] > 0),
        nan_skipped_total=nan_skipped,
        abandoned_steps=abandoned,
        logprob_diff=sums["t/lp_diff"],
    )


def _reported_utilities(utility: str) -> list[str]:
    """Every registered utility, plus the run's own when it is a family member or custom."""
    names = list_utilities()
    return names if utility in names else [*names, utility]


def _step_sums(
    ro: Rollouts,
    s: NDArray[np.int64],
    f: NDArray[np.int64],
    train: dict[str, float],
    utility: str,
) -> dict[str, float]:
    """This rank's sums (what ranks add up) behind the report's fractions and means."""
    n = s + f
    sums: dict[str, float] = {
        "questions": float(n.size),
        "rollouts": float(n.sum()),
        "informative": float(np.sum((s > 0) & (f > 0))),
        "all_correct": float(np.sum((n > 0) & (f == 0))),
        "all_wrong": float(np.sum((n > 0) & (s == 0))),
        "empty": float(np.sum(n == 0)),
        "groups": float(np.sum(n > 0)),
        "zero_std": float(
            sum(1 for r in ro.rewards if len(r) > 0 and (len(r) < 2 or np.ptp(r) == 0))
        ),
        "reward_sum": float(sum(sum(r) for r in ro.rewards)),
        "reward_sq": float(sum(sum(x * x for x in r) for r in ro.rewards)),
        "length_sum": float(sum(len(c) for q in ro.completion_ids for c in q)),
        "truncated": float(sum(sum(t) for t in ro.truncated)),
        "errors": float(ro.errors),
        "tokens": float(ro.tokens),
    }
    for name in _reported_utilities(utility):
        sums[f"u/{name}"] = float(np.sum(get_utility(name)(s, f)))
    for k, v in train.items():
        sums[f"t/{k}"] = v
    return sums


def __getattr__(name: str) -> Any:
    if name == "TrainingUtility":
        warnings.warn(
            "TrainingUtility is renamed StepReport (trainers.grpo.step_report.StepReport); the "
            "old name will go",
            DeprecationWarning,
            stacklevel=2,
        )
        return StepReport
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
