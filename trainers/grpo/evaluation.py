"""Held-out evaluation: pass@1 and pass@k of a trainer's policy on its task's test split.

``evaluate(trainer)`` samples ``k`` completions of each of ``size`` held-out prompts at the
training temperature, with the same seeds at every evaluation (so curves compare the policy, not
the sampling noise); ranks split the prompts and their counts are summed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trainers.grpo.data_order import EVALUATION, derive_seed
from trainers.grpo.rollouts import SUCCESS_THRESHOLD
from trainers.grpo.step_report import all_reduce
from trainers.tasks import Example, pass_at_k


def held_out_subset(test: list[Example], size: int | None) -> list[Example]:
    """``size`` held-out examples spread evenly over the split (all levels), always the same."""
    if size is None or size >= len(test):
        return list(test)
    pick = np.linspace(0, len(test) - 1, size).round().astype(int)
    return [test[i] for i in np.unique(pick)]


def evaluate(
    t: Any, *, size: int | None = None, k: int | None = None, split: str = "test"
) -> dict[str, float]:
    """Held-out pass@1 and pass@k overall and per level (``pass@1/level<L>``), and ``prompts``.

    ``split="train"`` evaluates ``size`` prompts of the training set instead (spread over it
    the same way, always the same ones): beside the held-out figures it shows memorisation,
    e.g. when a small ``task_size`` makes the run revisit its prompts.
    """
    cfg = t.cfg
    k = cfg.eval_k if k is None else k
    size = cfg.eval_size if size is None else size
    if split not in ("test", "train"):
        raise ValueError(f"split must be 'test' or 'train', got {split!r}")
    test = held_out_subset(t.task.test if split == "test" else t.task.train, size)
    if not test:
        raise ValueError(f"task {t.task.name!r} has no {split} prompts to evaluate")
    mine = test[t.rank :: t.world]
    prompts = [t.prompt_ids(e) for e in mine]
    seed = derive_seed(cfg.seed, EVALUATION, t.rank)  # the same samples' seeds every time
    with t.autocast():
        gen = t.engine.generate(prompts, [k] * len(mine), t.sampling, seed=seed)
    scores = t.task.score([mine[i] for i in gen.prompt_index], gen.texts, gen.completion_ids)
    correct = np.bincount(
        gen.prompt_index,
        weights=(np.asarray(scores.rewards) >= SUCCESS_THRESHOLD).astype(float),
        minlength=len(mine),
    )
    levels = sorted({e.level for e in test})
    sums: dict[str, float] = {"n": float(len(mine)), "c": float(correct.sum())}
    sums["pk"] = float(sum(pass_at_k(k, int(c), k) for c in correct))
    for lv in levels:
        sel = [i for i, e in enumerate(mine) if e.level == lv]
        sums[f"n{lv}"] = float(len(sel))
        sums[f"c{lv}"] = float(correct[sel].sum()) if sel else 0.0
    if t.world > 1:
        sums = all_reduce(t, sums)
    out = {
        "pass@1": sums["c"] / (sums["n"] * k),
        f"pass@{k}": sums["pk"] / sums["n"],
        "prompts": sums["n"],
    }
    for lv in levels:
        if sums[f"n{lv}"]:
            out[f"pass@1/level{lv}"] = sums[f"c{lv}"] / (sums[f"n{lv}"] * k)
    return out
