"""`bamdp`'s kept rounds plan against a plan for every step, on a training-like sequence of steps.

A trainer refits its grouped priors every step; with at most four distinct priors in a step
`bamdp` decides rounds with the rounds-aware plan, and building one costs about 0.2 s on a CPU
(7.7 % of a `rg:letter_counting` step). `plan_tolerance` (default 0.1) keeps a plan while every
prior stays within 10 % of the one it was made for and each prior's share of the questions
within 1/8. This script measures what that costs in utility and saves in time:

- **steps**: `--steps` consecutive steps of B = 64 questions, budget 512, a pilot of 2, then
  two rounds of 192, `snr(8)` — the letters cell's setting; four group priors that drift
  between steps by a factor exp(N(0, σ)) on each α and β (`--drift`, several values), each
  question's group drawn uniformly;
- **truth** p_i ~ Beta(prior_i) (the Bayes setting: the belief is right by construction, so the
  difference is the policy's), with the same outcomes for both allocators (coupled draws);
- **priors**: `letters` (the letters cell's four fitted group priors at step 600, U-shaped,
  α, β ≈ 0.02-0.14) and `arithmetic` (four of the arithmetic level priors of
  `agents.benchmarks.per_prompt`);
- **rows**: mean utility of each, the paired difference (kept − every step) with a 95 %
  t-interval over steps, plans built per 100 steps, and allocation time per step.

    python scripts/bench_plan_reuse.py [--steps 150] [--drift 0.005,0.02] [--seed 0]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

from adaroll_env import AllocationParams
from agents.bamdp.allocator import BAMDPAllocator
from agents.benchmarks.per_prompt import DEFAULT_LEVEL_PRIORS
from agents.benchmarks.per_prompt import episode as per_prompt_episode
from trainers.experiments.statistics import mean_ci

#: the letters cell's group priors at step 600 (a `bamdp` run's `beliefs.json`, seed 1)
LETTERS = ((0.0718, 0.01795), (0.09665, 0.04738), (0.1088, 0.07181), (0.1353, 0.1155))
PRIORS = {"letters": LETTERS, "arithmetic": tuple(DEFAULT_LEVEL_PRIORS[2:6])}
B, BUDGET, PILOT, ROUND = 64, 512, 2, 192


def episode(alloc: BAMDPAllocator, params: AllocationParams, truth: Any, draws: Any) -> float:
    """One step: the pilot, then the allocator's rounds (``agents.benchmarks.per_prompt.episode``);
    rollout j of question i succeeds when ``draws[i, j] < truth[i]``. The final utility."""
    alloc.reset(params)
    alpha, beta = np.asarray(params.prior_alpha), np.asarray(params.prior_beta)
    return per_prompt_episode(alloc, params, alpha, beta, truth, draws, params.utility, pilot=PILOT)


def run(name: str, drift: float, steps: int, seed: int) -> dict[str, Any]:
    """One row: both allocators over the same drifting sequence of steps."""
    import agents.bamdp.allocator as module

    rng = np.random.default_rng([seed, int(drift * 1e6)])
    groups = np.array(PRIORS[name], dtype=np.float64)  # [G, 2]
    allocators = {"kept": BAMDPAllocator(exact=False), "every step": BAMDPAllocator(
        exact=False, plan_tolerance=None)}  # fmt: skip
    utility: dict[str, list[float]] = {k: [] for k in allocators}
    seconds: dict[str, list[float]] = {k: [] for k in allocators}
    built = dict.fromkeys(allocators, 0)
    real = module.plan_rounds
    for _ in range(steps):
        groups = groups * np.exp(rng.normal(0.0, drift, groups.shape))
        g = rng.integers(0, len(groups), B)
        params = AllocationParams(num_questions=B, budget=BUDGET,
                                  prior_alpha=tuple(groups[g, 0].tolist()),
                                  prior_beta=tuple(groups[g, 1].tolist()), pilot=PILOT,
                                  mode="rounds", round_size=ROUND, utility="snr(8)")  # fmt: skip
        truth = rng.beta(groups[g, 0], groups[g, 1])
        draws = rng.random((B, BUDGET))
        for key, alloc in allocators.items():
            count = [0]

            def counted(p: AllocationParams, _c: list[int] = count, **kw: Any) -> Any:
                _c[0] += 1
                return real(p, **kw)

            module.plan_rounds = counted  # type: ignore[assignment]
            try:
                t0 = time.perf_counter()
                utility[key].append(episode(alloc, params, truth, draws))
                seconds[key].append(time.perf_counter() - t0)
            finally:
                module.plan_rounds = real  # type: ignore[assignment]
            built[key] += count[0]
    diff, half = mean_ci(list(np.subtract(utility["kept"], utility["every step"])))
    return {
        "priors": name,
        "drift": drift,
        "utility": {k: float(np.mean(v)) for k, v in utility.items()},
        "difference": (diff, half),
        "plans_per_100": {k: 100.0 * v / steps for k, v in built.items()},
        "ms_per_step": {k: 1e3 * statistics.mean(v) for k, v in seconds.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=150, help="steps per row (default 150)")
    parser.add_argument("--drift", default="0.005,0.02",
                        help="σ of the priors' log change per step, comma-separated")  # fmt: skip
    parser.add_argument("--priors", default="letters,arithmetic",
                        help=f"prior sets, comma-separated, of {sorted(PRIORS)}")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    names = [n for n in args.priors.split(",") if n]
    for n in names:
        if n not in PRIORS:
            parser.error(f"--priors: unknown prior set {n!r}; choose from {sorted(PRIORS)}")
    drifts = [float(d) for d in args.drift.split(",") if d]
    print(
        "| priors | drift σ | utility, kept plan | utility, plan every step | Δ (95 % CI) "
        "| plans per 100 steps, kept / every | allocation ms a step, kept / every |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in names:
        for drift in drifts:
            r = run(name, drift, args.steps, args.seed)
            u, (d, h) = r["utility"], r["difference"]
            p, ms = r["plans_per_100"], r["ms_per_step"]
            print(
                f"| {name} | {drift:g} | {u['kept']:.3f} | {u['every step']:.3f} "
                f"| {d:+.4f} ± {h:.4f} | {p['kept']:.0f} / {p['every step']:.0f} "
                f"| {ms['kept']:.1f} / {ms['every step']:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
