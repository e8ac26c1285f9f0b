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
    rounds_b: str = field(
        default="64,512",
        metadata={"help": "B values of the rounds grid (N = 8·B), comma-separated"},
    )
    rounds_schedules: str = field(
        default="2,4,8,0.75+0.25",
        metadata={
            "help": "schedules of the rounds grid: a number of equal rounds, or fractions of the "
            "budget joined by '+' (0.75+0.25 is 384+128 at B = 64)"
        },
    )
    rounds_utilities: str = field(
        default="informative,snr(4),snr(8),snr(16)",
        metadata={"help": "utilities of the rounds grid (';'-free, comma-separated)"},
    )
    rounds_allocators: str = field(
        default="uniform,bamdp,vip,variance,knowledge_gradient,random",
        metadata={"help": "allocators of the rounds grid (bamdp is compared with each)"},
    )
    rounds_episodes: str = field(
        default="200,100", metadata={"help": "paired episodes per setting, one per B value"}
    )
    rounds_mixture: bool = field(
        default=True,
        metadata={"help": "add the rlvr mixture (no bound) to the Bayes settings at B = 64"},
    )
    rounds_allocator_kwargs: str = field(
        default="",
        metadata={
            "help": "JSON object from allocator spec to its keyword arguments in the rounds "
            'grid, e.g. \'{"bamdp": {"round_split": "even"}}\' (as adaroll bench '
            "--allocator-kwargs)"
        },
    )
    parts: str = field(
        default="quality,big,timing,priors",
        metadata={"help": "which parts to run: quality, big, rounds, timing, priors"},
    )


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


def _by_episode(episodes: list[dict[str, Any]]) -> dict[tuple[str, str], dict[int, float]]:
    """(setting, allocator) -> episode -> utility: what paired differences are taken over."""
    by: dict[tuple[str, str], dict[int, float]] = {}
    for e in episodes:
        by.setdefault((e["setting"], e["allocator"]), {})[e["episode"]] = e["utility"]
    return by


def _with_bamdp_differences(
    rows: list[dict[str, Any]], episodes: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    by = _by_episode(episodes)
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


def _schedule_value(spec: str, budget: int) -> str:
    """One ``--rounds`` grid value: a count of equal rounds as is, fractions as round sizes."""
    if "+" not in spec:
        return spec
    fractions = [float(x) for x in spec.split("+")]
    sizes = [round(f * budget) for f in fractions]
    sizes[-1] = budget - sum(sizes[:-1])
    return "+".join(str(x) for x in sizes)


def rounds_grid(cfg: BamdpBenchConfig) -> list[dict[str, Any]]:
    """The rounds grid: per B, schedule, utility and setting, every allocator (paired), the
    rounds-aware certified bound and bamdp's gap to it, and the smallest paired difference
    ``bamdp − other`` over the non-oracle competitors with its 95 % half-width."""
    bs = [int(x) for x in cfg.rounds_b.split(",") if x.strip()]
    episodes = [int(x) for x in cfg.rounds_episodes.split(",") if x.strip()]
    if len(episodes) == 1:
        episodes *= len(bs)
    if len(episodes) != len(bs):
        raise ValueError(
            f"rounds_episodes ({cfg.rounds_episodes!r}) needs one value or one per B "
            f"({cfg.rounds_b!r})"
        )
    out: list[dict[str, Any]] = []
    for B, n in zip(bs, episodes, strict=True):
        difficulties = bayes_settings()[:2] + (["rlvr"] if cfg.rounds_mixture and B <= 64 else [])
        schedules = [_schedule_value(x.strip(), 8 * B) for x in cfg.rounds_schedules.split(",")]
        bench = BenchConfig(
            allocators=cfg.rounds_allocators,
            envs="rounds",
            difficulties=",".join(difficulties),
            utilities=cfg.rounds_utilities,
            num_questions=B,
            group_sizes="8",
            rounds=",".join(schedules),
            episodes=n,
            seed=cfg.seed,
            workers=cfg.workers,
            out=cfg.out,
            name=time.strftime(f"bench-bamdp-rounds-b{B}-%Y%m%d-%H%M%S"),
            exact=False,
            plots=False,
            allocator_kwargs=cfg.rounds_allocator_kwargs,
        )
        result = run_benchmark(bench)
        summary = summarise_rounds(result.rows, result.episodes)
        for r in summary:
            r["B"] = B
            r["run_dir"] = str(result.run_dir) if result.run_dir else None
        out.extend(summary)
    return out


def summarise_rounds(
    rows: list[dict[str, Any]], episodes: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Per setting: the bound, each allocator's mean, bamdp's gap to the bound (± the 95 %
    half-width of its mean, relative), and the smallest paired difference bamdp − other among
    the non-oracle competitors (``uniform`` included) with its 95 % half-width."""
    utility = _by_episode(episodes)
    by: dict[str, dict[str, dict[str, Any]]] = {}
    for r in rows:
        by.setdefault(r["setting"], {})[r["allocator"]] = r
    out: list[dict[str, Any]] = []
    for setting, rs in by.items():
        if "bamdp" not in rs:
            continue
        mine = utility[(setting, "bamdp")]
        bound = rs["bamdp"].get("bound")
        worst: tuple[float, float, str] | None = None
        for name in rs:
            if name in ("bamdp", "oracle"):
                continue
            theirs = utility[(setting, name)]
            diff, half = mean_ci([mine[i] - theirs[i] for i in sorted(theirs)])
            if worst is None or diff < worst[0]:
                worst = (diff, half, name)
        mean = rs["bamdp"]["mean_utility"]
        out.append(
            {
                "setting": setting,
                "means": {name: r["mean_utility"] for name, r in rs.items()},
                "bound": bound,
                "gap_pct": None if bound is None else 100 * (bound - mean) / bound,
                "gap_ci_pct": None if bound is None else 100 * rs["bamdp"]["ci95"] / bound,
                "min_diff": None if worst is None else worst[0],
                "min_diff_ci": None if worst is None else worst[1],
                "min_diff_vs": None if worst is None else worst[2],
            }
        )
    return out


def _round_ms(round_size: int, episodes: int = 5) -> float:
    """Median ms of a bamdp round decision at B = 512, N = 4096 in rounds of ``round_size``."""
    gym.register_envs(adaroll_env)
    env = gym.make(
        "AdaRoll/BetaBernoulliRounds-v0",
        num_questions=512,
        budget=4096,
        difficulty=(0.3, 0.3),
        round_size=round_size,
    )
    alloc = make_allocator("bamdp", env)
    rounds = []
    for ep in range(episodes):
        obs, _ = env.reset(seed=ep)
        done = False
        while not done:
            t0 = time.perf_counter()
            counts = alloc.allocate(obs)
            rounds.append(time.perf_counter() - t0)
            obs, _, done, _, _ = env.step(adaroll_env.encode_counts(counts))
    return 1e3 * statistics.median(rounds)


def timing(cfg: BamdpBenchConfig) -> dict[str, float]:
    """Table build at cap 256 (fresh), a round of 512 and one of 2,048 at B=512, the rounds plan
    of a new prior, a sequential act at B=512."""
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
    # a round of 512 (eight rounds) and of 2,048 (two: the trainer's default schedule)
    out["round_512_at_B512_ms_median"] = _round_ms(512)
    out["round_2048_at_B512_ms_median"] = _round_ms(2048)
    # the plan a new prior needs (prices and continuation tables, once per prior and schedule)
    from adaroll_env.model import AllocationParams
    from agents.bamdp.rounds import _arrays, plan_rounds

    plans = []
    for pa, pb in [(0.31, 0.29), (0.62, 1.4), (2.2, 0.7)]:
        params = AllocationParams(
            num_questions=512,
            budget=4096,
            mode="rounds",
            round_size=2048,
            utility="snr(8)",
            prior_alpha=pa,
            prior_beta=pb,
        )
        _arrays.cache_clear()
        t0 = time.perf_counter()
        plan_rounds(params)
        plans.append(time.perf_counter() - t0)
    out["rounds_plan_new_prior_s_median"] = statistics.median(plans)
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


def rounds_table(rows: list[dict[str, Any]]) -> Any:
    """The rounds grid as a rich table (a row per B and setting)."""
    from rich.table import Table

    names: list[str] = []
    for r in rows:
        names += [n for n in r["means"] if n not in names]
    t = Table(title="bamdp in rounds: the rounds-aware bound and every allocator (paired)")
    t.add_column("B", justify="right")
    t.add_column("setting")
    t.add_column("bound", justify="right")
    for n in names:
        t.add_column(n, justify="right")
    t.add_column("gap of bamdp", justify="right")
    t.add_column("bamdp − closest other", justify="right")
    for r in rows:
        t.add_row(
            str(r["B"]),
            _short(r["setting"]),
            "—" if r["bound"] is None else f"{r['bound']:.3f}",
            *(f"{r['means'][n]:.3f}" if n in r["means"] else "" for n in names),
            "—" if r["gap_pct"] is None else f"{r['gap_pct']:.2f}% ± {r['gap_ci_pct']:.2f}%",
            "—"
            if r["min_diff"] is None
            else f"{r['min_diff']:+.3f} ± {r['min_diff_ci']:.3f} ({r['min_diff_vs']})",
        )
    return t


def _short(setting: str) -> str:
    """A grid setting without the env kind and G, the fitted Beta named as such."""
    a, b = fit_beta("rlvr")
    return (
        setting.removeprefix("rounds/")
        .replace("/G=8", "")
        .replace(f"beta({a:.6g},{b:.6g})", "Beta fit to rlvr")
    )


def rounds_verdict(rows: list[dict[str, Any]]) -> str:
    """How many settings meet the targets: within 1 % of the bound, no worse than any other."""
    bayes = [r for r in rows if r["gap_pct"] is not None]
    within = [r for r in bayes if r["gap_pct"] <= 1.0]
    no_worse = [r for r in rows if r["min_diff"] is None or r["min_diff"] + r["min_diff_ci"] >= 0]
    above = ", ".join(
        f"B={r['B']} {_short(r['setting'])} ({r['gap_pct']:.2f}% ± {r['gap_ci_pct']:.2f}%)"
        for r in bayes
        if r["gap_pct"] > 1.0
    )
    worse = ", ".join(
        f"B={r['B']} {_short(r['setting'])} (vs {r['min_diff_vs']}: "
        f"{r['min_diff']:+.3f} ± {r['min_diff_ci']:.3f})"
        for r in rows
        if r not in no_worse
    )
    return (
        f"bamdp within 1 % of the rounds-aware bound in {len(within)} of {len(bayes)} Bayes "
        f"settings{'; above: ' + above if above else ''}. No worse than any non-oracle "
        f"allocator (paired 95 % CI) in {len(no_worse)} of {len(rows)} settings"
        f"{'; worse: ' + worse if worse else ''}."
    )


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
    if "rounds" in parts:
        rows = rounds_grid(cfg)
        report["rounds"] = rows
        console.print(rounds_table(rows))
        console.print(rounds_verdict(rows))
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
        if "round_2048_at_B512_ms_median" in tm:
            t.add_row(
                "round of 2,048 at B=512, two rounds (median)",
                f"{tm['round_2048_at_B512_ms_median']:.2f} ms",
                "< 2 ms",
            )
            t.add_row(
                "rounds plan of a new prior, two rounds at B=512",
                f"{tm['rounds_plan_new_prior_s_median']:.3f} s",
                "< 1 s",
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
