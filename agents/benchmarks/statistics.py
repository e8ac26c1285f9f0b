"""Summary statistics of a benchmark run: paired gains over ``uniform`` with confidence intervals,
the certified bound of Beta Bayes settings."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from adaroll_env.model import prior_arrays, prior_matches
from adaroll_env.priors import BetaMixture, resolve_difficulty
from adaroll_env.stats import mean_ci
from agents.benchmarks.config import (
    REFERENCE_ONLY,
    BenchConfig,
    Setting,
    env_kwargs,
    make_env,
    settings,
)
from agents.benchmarks.mechanism import MECHANISM

__all__ = ["bayes_bound", "mean_ci", "summarise"]


def bayes_bound(cfg: BenchConfig, setting: Setting) -> float | None:
    """The certified bound of a Beta Bayes setting (true pass rates drawn from the belief
    prior, a single Beta; rounds-aware in the rounds env: ``certified_bound``), or None in any
    other setting."""
    from agents.bamdp.bound import certified_bound

    d = resolve_difficulty(setting.difficulty)
    if not isinstance(d, BetaMixture) or len(d.components) != 1:
        return None
    _, a, b = d.components[0]
    env = make_env(setting.env, env_kwargs(cfg, setting))
    params = env.unwrapped.params  # type: ignore[attr-defined]
    env.close()
    pa, pb = prior_arrays(params)
    if not np.all(prior_matches(pa, pb, a, b)):
        return None
    return certified_bound(params)


def summarise(
    results: dict[tuple[Setting, str], list[dict[str, Any]]],
    cfg: BenchConfig,
    exact: dict[tuple[Setting, str], float | None] | None = None,
) -> list[dict[str, Any]]:
    """One row per (setting, allocator): mean utility with CI, paired gain over uniform, the
    mechanism figures with CIs (gradient-carrying rollouts, informative prompts and fraction per
    episode: ``agents.benchmarks.mechanism``), cost, throughput and (where computed) the exact
    outcome-tree value."""
    exact = exact or {}
    rows = []
    for setting in settings(cfg):
        bound = bayes_bound(cfg, setting)
        default_r = cfg.num_questions if setting.env == "rounds" else 1
        kw = env_kwargs(cfg, setting)
        round_size = kw.get("round_size", default_r)
        if "round_schedule" in kw:  # the first round's size (the schedule is in "rounds")
            round_size = int(str(kw["round_schedule"]).split("+")[0])
        base = {r["episode"]: r["utility"] for r in results[(setting, "uniform")]}
        for spec in cfg.allocator_list:
            recs = sorted(results[(setting, spec)], key=lambda r: r["episode"])
            u = [r["utility"] for r in recs]
            mean, ci = mean_ci(u)
            diff = [r["utility"] - base[r["episode"]] for r in recs]
            gain, gain_ci = mean_ci(diff)
            base_mean = float(np.mean(list(base.values())))
            rows.append(
                {
                    "setting": setting.key,
                    "env": setting.env,
                    "difficulty": setting.difficulty,
                    "utility_name": setting.utility,
                    "group_size": setting.group_size,
                    "rounds": setting.rounds,
                    "round_size": round_size,
                    "allocator": spec,
                    "reference_only": spec in REFERENCE_ONLY,
                    "episodes": len(u),
                    "mean_utility": mean,
                    "ci95": ci,
                    "gain": gain,
                    "gain_ci95": gain_ci,
                    "gain_pct": 100.0 * gain / base_mean if base_mean else math.nan,
                    **_mechanism_columns(recs),
                    "decisions": float(np.mean([r["decisions"] for r in recs])),
                    "ms_per_batch": 1e3 * float(np.mean([r["decision_seconds"] for r in recs])),
                    "episodes_per_s": len(recs) / sum(r["episode_seconds"] for r in recs),
                    "exact_value": exact.get((setting, spec)),
                    "bound": bound,
                    "gap_pct": math.nan if bound is None else 100.0 * (bound - mean) / bound,
                    "gap_ci_pct": math.nan if bound is None else 100.0 * ci / bound,
                    "rollouts_by_mean": [
                        float(x) / max(1.0, float(y))
                        for x, y in zip(
                            np.sum([r["rollouts_by_mean"] for r in recs], axis=0),
                            np.sum([r["questions_by_mean"] for r in recs], axis=0),
                            strict=True,
                        )
                    ],
                }
            )
    return rows


def _mechanism_columns(recs: list[dict[str, Any]]) -> dict[str, float]:
    """Mean and 95 % CI half-width of each mechanism figure over the episodes ``recs``."""
    out = {}
    for key in MECHANISM:
        mean, ci = mean_ci([r[key] for r in recs])
        out[key] = mean
        out[f"{key}_ci95"] = ci
    return out
