"""Held-out evaluation, written once: pass@1 and pass@k of a policy on a set of prompts.

``evaluate_examples(engine, examples, ...)`` samples ``k`` completions of each example through
the engine, scores them with the caller's verifier (a success is a reward ≥ ``threshold``,
``SUCCESS_THRESHOLD`` by default) and returns an ``Evaluation``: the successes per prompt and the
figures ``pass@1``, ``pass@k``, ``prompts`` and ``pass@1/level<L>`` per level. Under data
parallelism each rank takes every ``world``-th prompt and the counts are summed (``Ranks``).

Everything that evaluates calls it: the trainer (``GRPOTrainer.evaluate``: ``held_out_subset``
of the test split, the training temperature, the same seed at every evaluation, so curves compare
the policy, not the sampling noise), the warm start's report per level
(``trainers.models.warm_start_report``) and the TRL competition
(``trainers.experiments.trl_compete``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from trainers.grpo.parallel import Ranks
from trainers.grpo.rollouts import SUCCESS_THRESHOLD
from trainers.tasks import Example, pass_at_k

__all__ = ["Evaluation", "evaluate_examples", "held_out_subset"]


def held_out_subset(test: list[Example], size: int | None) -> list[Example]:
    """``size`` held-out examples spread evenly over the split (all levels), always the same."""
    if size is None or size >= len(test):
        return list(test)
    pick = np.linspace(0, len(test) - 1, size).round().astype(int)
    return [test[i] for i in np.unique(pick)]


@dataclass
class Evaluation:
    """What ``evaluate_examples`` measured."""

    examples: list[Any]  # this rank's examples, in order
    correct: NDArray[np.int64]  # [n] successes among the k samples of each
    k: int
    figures: dict[str, float]  # pass@1, pass@k, prompts, pass@1/level<L>: over all ranks


def evaluate_examples(
    engine: Any,
    examples: Sequence[Any],
    *,
    encode: Callable[[Any], list[int]],
    score: Callable[[list[Any], list[str], list[list[int]]], Any],
    sampling: Any,
    k: int,
    seed: int,
    threshold: float = SUCCESS_THRESHOLD,
    ranks: Ranks = Ranks(),  # noqa: B008 (frozen)
    autocast: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext,
) -> Evaluation:
    """Sample ``k`` completions of each of ``examples`` (``encode(example)``: its prompt ids)
    with ``sampling`` and ``seed``, score them (``score(examples, texts, completion_ids)``: one
    reward per completion, or a task's ``Scores``) and count the successes; the figures are
    summed over ``ranks``."""
    mine = list(examples)[ranks.rank :: ranks.world]
    prompts = [encode(e) for e in mine]
    with autocast():
        gen = engine.generate(prompts, [k] * len(mine), sampling, seed=seed)
    scored = score([mine[i] for i in gen.prompt_index], gen.texts, gen.completion_ids)
    rewards = np.asarray(getattr(scored, "rewards", scored), dtype=float)  # Scores or rewards
    correct = np.bincount(
        np.asarray(gen.prompt_index, dtype=np.int64),
        weights=(rewards >= threshold).astype(float),
        minlength=len(mine),
    )
    levels = sorted({e.level for e in examples})
    sums: dict[str, float] = {"n": float(len(mine)), "c": float(correct.sum())}
    sums["pk"] = float(sum(pass_at_k(k, int(c), k) for c in correct))
    for lv in levels:
        sel = [i for i, e in enumerate(mine) if e.level == lv]
        sums[f"n{lv}"] = float(len(sel))
        sums[f"c{lv}"] = float(correct[sel].sum()) if sel else 0.0
    sums = ranks.sum(sums)
    figures = {
        "pass@1": sums["c"] / (sums["n"] * k),
        f"pass@{k}": sums["pk"] / sums["n"],
        "prompts": sums["n"],
    }
    for lv in levels:
        if sums[f"n{lv}"]:
            figures[f"pass@1/level{lv}"] = sums[f"c{lv}"] / (sums[f"n{lv}"] * k)
    return Evaluation(mine, correct.round().astype(np.int64), k, figures)
