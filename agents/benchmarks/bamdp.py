"""The bamdp report behind ``scripts/bench_bamdp.py``: quality against every allocator and the
certified bound, decision costs, and the two ways of handling priors from history.

It lives with the benchmarks, not in ``agents.bamdp``: the solver package does not depend on the
benchmark harness."""

from __future__ import annotations

import json
import math
import shutil
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import adaroll_env
from adaroll_env.priors import fit_beta
from adaroll_env.stats import mean_ci
from agents.bamdp.allocator import BAMDPAllocator
from agents.bamdp.cache import clear_memory
from agents.bamdp.index import TableSpec, build_table
from agents.benchmarks.config import BenchConfig
from agents.benchmarks.runner import run_benchmark
from agents.registry import make_allocator


@dataclass
class BamdpBenchConfig:
    """Configuration of ``scripts/bench_bamdp.py``."""

    episodes: int = field(default=400, metadata={"help": "paired episodes per setting at B=64"})
    big_episodes: int = field(default=400, metadata={"help": "paired episodes at B=512, N=4096"})
    allocators: str = field(
        default="all", metadata={"help": "competitors at B=64 ('all': every registered one)"}
    )
    envs: str = field(default="rounds,sequential", metadata={"help": "env kinds at B=64"})
    seed: int = field(default=0, metadata={"help": "master seed"})
    workers: int = field(default=0, metadata={"help": "worker processes (0: one per core)"})
    out: str = field(default="runs", metadata={"help": "folder for the run directories"})
    timing_acts: int = field(default=3000, metadata={"help": "sequential acts timed at B=512"})
    history_episodes: int = field(
        default=40, metadata={"help": "paired episodes per history step in the priors part"}
    )
    parts: str = field(default="quality,big,timing,priors", metadata={"help": "which parts to run"})


def bayes_settings() -> list[str]:
    """The difficulty specs of the Bayes settings and the rlvr mixture."""
    a, b = fit_beta("rlvr")
    return ["u-shaped", f"beta({a:.6g},{b:.6g})", "rlvr"]


def _bench_config(
    cfg: BamdpBenchConfig,
    allocators: str,
    difficulties: list[str],
    B: int,
    episodes: int,
    prefix: str,
    *,
    exact: bool,
) -> BenchConfig:
    """A benchmark of the informative utility at G = 8 in the given settings."""
    return BenchConfig(
        allocators=allocators,
        envs=cfg.envs,
        difficulties=",".join(difficulties),
        utilities="informative",
        num_questions=B,
        group_sizes="8",
        episodes=episodes,
        seed=cfg.seed,
        workers=cfg.workers,
        out=cfg.out,
        name=time.strftime(f"{prefix}-%Y%m%d-%H%M%S"),
        exact=exact,
    )


def quality(cfg: BamdpBenchConfig) -> list[dict[str, Any]]:
    """B=64, N=512, informative: every allocator, paired, with the bound where it applies."""
    bench = _bench_config(
        cfg, cfg.allocators, bayes_settings(), 64, cfg.episodes, "bench-bamdp", exact=True
    )
    result = run_benchmark(bench)
    return _with_bamdp_differences(result.rows, result.episodes)


def _with_bamdp_differences(
    rows: list[dict[str, Any]], episodes: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    by: dict[tuple[str, str], dict[int, float]] = {}
    for e in episodes:
        by.setdefault((e["setting"], e["allocator"]), {})[e["episode"]] = e["utility"]
    for r in rows:
        mine = by.get((r["setting"], "bamdp"))
        theirs = by[(r["setting"], r["allocator"])]
        if mine is None:
            r["bamdp_minus"], r["bamdp_minus_ci"] = math.nan, math.nan
            continue
        diff = [mine[i] - theirs[i] for i in sorted(theirs)]
        r["bamdp_minus"], r["bamdp_minus_ci"] = mean_ci(diff)
    return rows


def big(cfg: BamdpBenchConfig) -> list[dict[str, Any]]:
    """B=512, N=4096 in the Bayes settings: uniform and bamdp against the bound."""
    bench = _bench_config(
        cfg,
        "uniform,bamdp",
        bayes_settings()[:2],
        512,
        cfg.big_episodes,
        "bench-bamdp-big",
        exact=False,
    )
    return run_benchmark(bench).rows


def timing(cfg: BamdpBenchConfig) -> dict[str, float]:
    """Table build at cap 256 (fresh), a round of 512 at B=512, a sequential act at B=512."""
    out: dict[str, float] = {}
    from agents.bamdp import _jit

    for jit in (False, True) if _jit.AVAILABLE else (False,):
        builds = []
        build_table(TableSpec.make(0.3, 0.3, "informative", 8), jit=jit)  # compile once
        for _ in range(3):
            t0 = time.perf_counter()
            build_table(TableSpec.make(0.3, 0.3, "informative", 256), jit=jit)
            builds.append(time.perf_counter() - t0)
        out[f"table_build_cap256_{'numba' if jit else 'numpy'}_s"] = statistics.median(builds)
    gym.register_envs(adaroll_env)
    env = gym.make(
        "AdaRoll/BetaBernoulliRounds-v0", num_questions=512, budget=4096, difficulty=(0.3, 0.3)
    )
    alloc = make_allocator("bamdp", env)
    rounds = []
    for ep in range(5):
        obs, _ = env.reset(seed=ep)
        done = False
        while not done:
            t0 = time.perf_counter()
            counts = alloc.allocate(obs)
            rounds.append(time.perf_counter() - t0)
            obs, _, done, _, _ = env.step(adaroll_env.encode_counts(counts))
    out["round_512_at_B512_ms_median"] = 1e3 * statistics.median(rounds)
    env = gym.make(
        "AdaRoll/BetaBernoulli-v0", num_questions=512, budget=4096, difficulty=(0.3, 0.3)
    )
    alloc = make_allocator("bamdp", env)
    obs, _ = env.reset(seed=0)
    acts = []
    for _ in range(cfg.timing_acts):
        t0 = time.perf_counter()
        a = alloc.act(obs)
        acts.append(time.perf_counter() - t0)
        obs, _, done, _, _ = env.step(a)
        if done:
            obs, _ = env.reset()
    out["sequential_act_at_B512_us_median"] = 1e6 * statistics.median(acts)
    return out


def priors_from_history(cfg: BamdpBenchConfig) -> list[dict[str, Any]]:
    """Per-question priors (as a trainer's belief store hands them over): one table per distinct
    prior against interpolation on a grid of tables — time and agreement of decisions."""
    rng = np.random.default_rng(cfg.seed)
    B, N = 64, 512
    gym.register_envs(adaroll_env)
    env = gym.make(
        "AdaRoll/BetaBernoulliRounds-v0", num_questions=B, budget=N, difficulty=(0.3, 0.3)
    )
    # History: each question seen in ~1-3 earlier steps of 8 rollouts, with forgetting.
    steps = []
    for _ in range(5):
        p = rng.beta(0.3, 0.3, B)
        n = 8 * rng.integers(1, 4, B)
        s = rng.binomial(n, p)
        steps.append((0.3 + 0.7 * s, 0.3 + 0.7 * (n - s)))
    rows: list[dict[str, Any]] = []
    decisions: dict[str, list[np.ndarray]] = {}
    utilities: dict[str, list[float]] = {}
    for mode in ("tables", "interpolate"):
        clear_memory()
        cold = tempfile.mkdtemp(prefix=f"adaroll-priors-{mode}-")  # a cold cache for each mode
        alloc = BAMDPAllocator(prior_mode=mode, cache_dir=cold)
        alloc.reset(env.unwrapped.params)  # type: ignore[attr-defined]
        first: list[float] = []
        later: list[float] = []
        out: list[np.ndarray] = []
        util: list[float] = []
        for a, b in steps:
            for seed in range(cfg.history_episodes):
                obs, _ = env.reset(
                    seed=seed, options={"prior_alpha": tuple(a), "prior_beta": tuple(b)}
                )
                done, k, total = False, 0, 0.0
                while not done:
                    t0 = time.perf_counter()
                    counts = alloc.allocate(obs)
                    if seed == 0:
                        (first if k == 0 else later).append(time.perf_counter() - t0)
                        out.append(counts)
                    obs, reward, done, _, _ = env.step(adaroll_env.encode_counts(counts))
                    total += float(reward)
                    k += 1
                util.append(total)
        shutil.rmtree(cold, ignore_errors=True)
        decisions[mode] = out
        utilities[mode] = util
        rows.append(
            {
                "mode": mode,
                "first_decision_s_median": statistics.median(first),
                "later_decision_ms_median": 1e3 * statistics.median(later),
                "mean_utility": float(np.mean(util)),
            }
        )
    # Share of rollouts placed on the same questions by the two modes, decision by decision.
    overlap = [
        float(np.minimum(x, y).sum() / max(1, x.sum()))
        for x, y in zip(decisions["tables"], decisions["interpolate"], strict=True)
    ]
    diff, ci = mean_ci(list(np.subtract(utilities["interpolate"], utilities["tables"])))
    for r in rows:
        r["same_rollouts"] = float(np.mean(overlap))
        r["interpolate_minus_tables"] = diff
        r["interpolate_minus_tables_ci"] = ci
    return rows


def main(cfg: BamdpBenchConfig) -> dict[str, Any]:
    """Run the parts, print their tables and write ``bench_bamdp.json`` to the out folder."""
    from rich.console import Console
    from rich.table import Table

    console = Console() if Console().is_terminal else Console(width=140)
    parts = {p.strip() for p in cfg.parts.split(",")}
    report: dict[str, Any] = {"config": asdict(cfg)}

    def quality_table(rows: list[dict[str, Any]], title: str) -> None:
        t = Table(title=title)
        for col in (
            "setting",
            "allocator",
            "mean ± CI",
            "gain vs uniform",
            "bamdp − it",
            "gap to bound ± CI",
        ):
            t.add_column(col, justify="left" if col in ("setting", "allocator") else "right")
        for r in rows:
            t.add_row(
                r["setting"],
                r["allocator"],
                f"{r['mean_utility']:.3f} ± {r['ci95']:.3f}",
                f"{r['gain_pct']:+.2f}% ({r['gain']:+.3f} ± {r['gain_ci95']:.3f})",
                ""
                if math.isnan(r.get("bamdp_minus", math.nan))
                else f"{r['bamdp_minus']:+.3f} ± {r['bamdp_minus_ci']:.3f}",
                "—" if r["bound"] is None else f"{r['gap_pct']:.2f}% ± {r['gap_ci_pct']:.2f}%",
            )
        console.print(t)

    if "quality" in parts:
        rows = quality(cfg)
        report["quality"] = rows
        quality_table(rows, "B=64, N=512, informative (paired episodes)")
    if "big" in parts:
        rows = big(cfg)
        report["big"] = rows
        quality_table(rows, "B=512, N=4096, informative")
    if "timing" in parts:
        tm = timing(cfg)
        report["timing"] = tm
        t = Table(title="bamdp decision costs (one core)")
        t.add_column("what")
        t.add_column("measured", justify="right")
        t.add_column("target", justify="right")
        for kind in ("numpy", "numba"):
            if f"table_build_cap256_{kind}_s" in tm:
                t.add_row(
                    f"table build, max group 256 ({kind})",
                    f"{tm[f'table_build_cap256_{kind}_s']:.3f} s",
                    "< 1 s",
                )
        t.add_row(
            "round of 512 at B=512 (median)",
            f"{tm['round_512_at_B512_ms_median']:.2f} ms",
            "< 2 ms",
        )
        t.add_row(
            "sequential act at B=512 (median)",
            f"{tm['sequential_act_at_B512_us_median']:.1f} µs",
            "< 50 µs",
        )
        console.print(t)
    if "priors" in parts:
        pr = priors_from_history(cfg)
        report["priors"] = pr
        t = Table(title="priors from history: a table per prior vs interpolation (B=64, 5 steps)")
        for col in (
            "mode",
            "first decision of a step",
            "later decisions",
            "mean utility",
            "rollouts placed alike",
        ):
            t.add_column(col, justify="left" if col == "mode" else "right")
        for r in pr:
            t.add_row(
                r["mode"],
                f"{r['first_decision_s_median']:.3f} s",
                f"{r['later_decision_ms_median']:.2f} ms",
                f"{r['mean_utility']:.3f}",
                f"{100 * r['same_rollouts']:.1f}%",
            )
        console.print(
            f"interpolate − tables (paired): {pr[0]['interpolate_minus_tables']:+.3f} "
            f"± {pr[0]['interpolate_minus_tables_ci']:.3f}"
        )
        console.print(t)
    Path(cfg.out).mkdir(parents=True, exist_ok=True)
    path = Path(cfg.out) / "bench_bamdp.json"
    path.write_text(json.dumps(report, indent=2, default=str) + "\n")
    console.print(f"report: {path}")
    return report
