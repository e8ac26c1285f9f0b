"""The allocator benchmark behind ``adaroll bench``.

Allocators × env kinds × difficulty profiles × utilities × group sizes G = N/B × episodes, run in
parallel over the cores from one master seed. Episodes are *paired*: episode i of every allocator
in a setting uses the same env seed, hence the same true pass rates, so differences against
``uniform`` are measured on common instances. A run directory keeps the exact config, library
versions, every episode (CSV), the summary (JSON/CSV), the printed table and PNG plots.
"""

from __future__ import annotations

import csv
import dataclasses
import importlib.util
import itertools
import json
import math
import os
import platform
import re
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from scipy import stats

import adaroll_env
from adaroll_env.model import AllocationParams, prior_arrays, prior_matches
from adaroll_env.priors import BetaMixture, resolve_difficulty
from adaroll_env.utilities import get_utility
from agents.exact import exact_value
from agents.registry import list_allocators, make_allocator

ENV_KINDS = {"sequential": "AdaRoll/BetaBernoulli-v0", "rounds": "AdaRoll/BetaBernoulliRounds-v0"}
#: Allocators that read the hidden truth: reported as references, never ranked.
REFERENCE_ONLY = frozenset({"oracle"})
#: Bins of the final posterior mean for the "rollouts placed" plot.
MEAN_BINS = 10


def _split(text: str) -> list[str]:
    """Split a comma-separated list, keeping commas inside parentheses: "rlvr,beta(1,2)"."""
    return [t.strip() for t in re.split(r",(?![^(]*\))", str(text)) if t.strip()]


@dataclass
class BenchConfig:
    """Configuration of ``adaroll bench`` (every list is one comma-separated string)."""

    allocators: str = field(
        default="all",
        metadata={
            "help": "comma-separated allocator specs (names, 'module:Class', 'sb3:<zip>'), or "
            "'all' (every registered one, and sb3:pretrained when the sb3 extra is installed)"
        },
    )
    envs: str = field(
        default="rounds",
        metadata={"help": "env kinds: 'sequential' (BetaBernoulli-v0), 'rounds' (-Rounds-v0)"},
    )
    difficulties: str = field(
        default="rlvr", metadata={"help": "difficulty profiles or pass-rate files, comma-separated"}
    )
    utilities: str = field(default="informative", metadata={"help": "utilities, comma-separated"})
    num_questions: int = field(default=64, metadata={"help": "B, questions per batch"})
    group_sizes: str = field(
        default="8", metadata={"help": "G values (budget N = G·B), comma-separated"}
    )
    pilot: int = field(default=0, metadata={"help": "rollouts every question gets first"})
    max_group: int | None = field(
        default=None, metadata={"help": "cap on rollouts per question (none: no cap)"}
    )
    round_size: int | None = field(
        default=None, metadata={"help": "R for the rounds env (none: R = B)"}
    )
    belief: str = field(
        default="matched",
        metadata={"help": "'matched' (Beta fitted to the difficulty) or 'a,b' for Beta(a, b)"},
    )
    episodes: int = field(default=300, metadata={"help": "episodes per allocator and setting"})
    seed: int = field(default=0, metadata={"help": "master seed; every other seed derives from it"})
    workers: int = field(default=0, metadata={"help": "worker processes (0: one per core)"})
    out: str = field(default="runs", metadata={"help": "folder under which the run directory goes"})
    name: str = field(default="", metadata={"help": "run directory name ('': bench-<time>)"})
    plots: bool = field(default=True, metadata={"help": "write PNG plots"})
    exact: bool = field(
        default=True,
        metadata={"help": "add exact outcome-tree values where the instance is small enough"},
    )
    exact_max_states: int = field(
        default=50_000, metadata={"help": "largest outcome tree (states) to evaluate exactly"}
    )
    progress: bool = field(default=True, metadata={"help": "show a progress bar"})

    def __post_init__(self) -> None:
        for kind in self.env_kinds:
            if kind not in ENV_KINDS:
                raise ValueError(
                    f"env kind {kind!r} is unknown: use {', '.join(ENV_KINDS)} (comma-separated)"
                )
        for d in self.difficulty_list:
            resolve_difficulty(d)
        for u in self.utility_list:
            get_utility(u)
        if not self.group_size_list:
            raise ValueError("group_sizes is empty: give at least one G, e.g. '8'")
        if self.episodes < 2:
            raise ValueError(
                f"episodes must be >= 2 for a confidence interval, got {self.episodes}"
            )
        if self.num_questions < 1:
            raise ValueError(f"num_questions must be >= 1, got {self.num_questions}")
        if self.workers < 0:
            raise ValueError(f"workers must be >= 0 (0: one per core), got {self.workers}")
        self.belief_value()
        if not self.allocator_list:
            raise ValueError("allocators is empty: give specs like 'uniform,random' or 'all'")

    @property
    def env_kinds(self) -> list[str]:
        """Env kinds to run."""
        return _split(self.envs)

    @property
    def difficulty_list(self) -> list[str]:
        """Difficulty specs to run."""
        return _split(self.difficulties)

    @property
    def utility_list(self) -> list[str]:
        """Utilities to run."""
        return _split(self.utilities)

    @property
    def group_size_list(self) -> list[int]:
        """G values to run."""
        out = []
        for g in _split(self.group_sizes):
            try:
                out.append(int(g))
            except ValueError:
                raise ValueError(
                    f"group size {g!r} is not an integer: give e.g. '4,8,16'"
                ) from None
        return out

    @property
    def allocator_list(self) -> list[str]:
        """Allocator specs, ``uniform`` first (it is the baseline of every gain)."""
        specs = _split(self.allocators)
        if specs == ["all"]:
            specs = list_allocators()
            if importlib.util.find_spec("stable_baselines3") is not None:
                specs.append("sb3:pretrained")  # the shipped learned allocator (sb3 extra)
        return ["uniform", *[s for s in specs if s != "uniform"]]

    def belief_value(self) -> str | tuple[float, float]:
        """The ``belief`` env argument."""
        if self.belief.strip() == "matched":
            return "matched"
        parts = _split(self.belief)
        try:
            a, b = (float(x) for x in parts)
        except ValueError:
            raise ValueError(
                f"belief {self.belief!r} must be 'matched' or 'a,b' (e.g. '0.5,0.5')"
            ) from None
        return (a, b)


@dataclass(frozen=True)
class Setting:
    """One cell of the grid (everything but the allocator)."""

    env: str
    difficulty: str
    utility: str
    group_size: int

    @property
    def key(self) -> str:
        """A short label."""
        return f"{self.env}/{self.difficulty}/{self.utility}/G={self.group_size}"


def settings(cfg: BenchConfig) -> list[Setting]:
    """The grid of settings, in a stable order."""
    return [
        Setting(e, d, u, g)
        for e, d, u, g in itertools.product(
            cfg.env_kinds, cfg.difficulty_list, cfg.utility_list, cfg.group_size_list
        )
    ]


def env_kwargs(cfg: BenchConfig, setting: Setting, spec: str = "") -> dict[str, Any]:
    """Arguments of ``gym.make`` for a setting (with the truth revealed for reference-only
    allocators such as ``oracle``; revealing changes no random draw, so pairing holds)."""
    kw: dict[str, Any] = {
        "num_questions": cfg.num_questions,
        "budget": setting.group_size * cfg.num_questions,
        "pilot": cfg.pilot,
        "max_group": cfg.max_group,
        "utility": setting.utility,
        "difficulty": setting.difficulty,
        "belief": cfg.belief_value(),
    }
    if setting.env == "rounds" and cfg.round_size is not None:
        kw["round_size"] = cfg.round_size
    if spec in REFERENCE_ONLY:
        kw["reveal_truth"] = True
    return kw


def episode_seeds(master: int, episode: int) -> tuple[int, int]:
    """(env seed, allocator seed) of episode ``episode``: the same for every allocator."""
    env_seed, alloc_seed = np.random.SeedSequence([master, episode]).generate_state(2)
    return int(env_seed), int(alloc_seed)


def make_env(env: str, kwargs: dict[str, Any]) -> gym.Env:
    """An adaroll env of the given kind (sequential or rounds)."""
    gym.register_envs(adaroll_env)
    return gym.make(ENV_KINDS[env], **kwargs)


def run_episodes(
    env: gym.Env, spec: str, episodes: Iterable[int], master_seed: int
) -> list[dict[str, Any]]:
    """Run ``spec`` on ``env`` for the given episode indices; one record per episode."""
    allocator = make_allocator(spec, env)
    params = env.unwrapped.params  # type: ignore[attr-defined]
    records = []
    for i in episodes:
        env_seed, alloc_seed = episode_seeds(master_seed, i)
        t_start = time.perf_counter()
        obs, info = env.reset(seed=env_seed)
        allocator.reset(params, seed=alloc_seed)
        total = 0.0
        decide = 0.0
        decisions = 0
        done = False
        while not done:
            t0 = time.perf_counter()
            action = allocator.act(obs)
            decide += time.perf_counter() - t0
            decisions += 1
            obs, reward, terminated, truncated, info = env.step(action)
            total += float(reward)
            done = terminated or truncated
        wall = time.perf_counter() - t_start
        alloc = np.asarray(info["allocation"])
        bins = np.minimum((np.asarray(obs["mean"]) * MEAN_BINS).astype(int), MEAN_BINS - 1)
        records.append(
            {
                "episode": i,
                "env_seed": env_seed,
                "utility": total,
                "decisions": decisions,
                "decision_seconds": decide,
                "episode_seconds": wall,
                "max_group_used": int(alloc.max()),
                "questions_used": int(np.count_nonzero(alloc)),
                "rollouts_by_mean": np.bincount(bins, weights=alloc, minlength=MEAN_BINS).tolist(),
                "questions_by_mean": np.bincount(bins, minlength=MEAN_BINS).tolist(),
            }
        )
    return records


def _run_task(
    task: tuple[Setting, dict[str, Any], str, list[int], int],
) -> tuple[Setting, str, list[dict[str, Any]]]:
    setting, kwargs, spec, episodes, master = task
    env = make_env(setting.env, kwargs)
    try:
        return setting, spec, run_episodes(env, spec, episodes, master)
    finally:
        env.close()


def mean_ci(x: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """Mean and the half-width of its Student-t confidence interval."""
    arr = np.asarray(x, dtype=np.float64)
    n = arr.size
    if n < 2:
        return float(arr.mean()) if n else math.nan, math.nan
    sem = float(arr.std(ddof=1)) / math.sqrt(n)
    return float(arr.mean()), float(stats.t.ppf(0.5 + level / 2, n - 1)) * sem


def bayes_bound(cfg: BenchConfig, setting: Setting) -> float | None:
    """The certified bound of a Beta Bayes setting (true pass rates drawn from the belief
    prior, a single Beta), or None in any other setting."""
    from agents.bamdp.bound import upper_bound

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
    return upper_bound(params)


def summarise(
    results: dict[tuple[Setting, str], list[dict[str, Any]]],
    cfg: BenchConfig,
    exact: dict[tuple[Setting, str], float | None] | None = None,
) -> list[dict[str, Any]]:
    """One row per (setting, allocator): mean utility with CI, paired gain over uniform, cost,
    throughput and (where computed) the exact outcome-tree value."""
    exact = exact or {}
    rows = []
    for setting in settings(cfg):
        bound = bayes_bound(cfg, setting)
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
                    "allocator": spec,
                    "reference_only": spec in REFERENCE_ONLY,
                    "episodes": len(u),
                    "mean_utility": mean,
                    "ci95": ci,
                    "gain": gain,
                    "gain_ci95": gain_ci,
                    "gain_pct": 100.0 * gain / base_mean if base_mean else math.nan,
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


def _cells(r: dict[str, Any], with_exact: bool, with_gap: bool = False) -> list[str]:
    is_base = r["allocator"] == "uniform"
    cells = [
        r["allocator"] + (" (ref)" if r["reference_only"] else ""),
        f"{r['mean_utility']:.3f} ± {r['ci95']:.3f}",
        "—" if is_base else f"{r['gain']:+.3f} ± {r['gain_ci95']:.3f}",
        "—" if is_base else f"{r['gain_pct']:+.1f}%",
        f"{r['ms_per_batch']:.2f}",
        f"{r['episodes_per_s']:.0f}",
    ]
    if with_exact:
        cells.append("n/a" if r["exact_value"] is None else f"{r['exact_value']:.4f}")
    if with_gap:
        cells.append(f"{r['gap_pct']:.2f}% ± {r['gap_ci_pct']:.2f}%")
    return cells


_HEADERS = [
    "allocator",
    "mean utility ± 95% CI",
    "gain vs uniform ± 95% CI",
    "gain %",
    "ms/batch",
    "episodes/s",
]


def format_tables(rows: list[dict[str, Any]], cfg: BenchConfig) -> list[Any]:
    """One rich Table per setting: mean utility with CI, paired gain over uniform, cost, and the
    exact outcome-tree value where it was computed."""
    from rich.table import Table

    tables = []
    for key in dict.fromkeys(r["setting"] for r in rows):
        sub = [r for r in rows if r["setting"] == key]
        with_exact = any(r["exact_value"] is not None for r in sub)
        with_gap = any(r["bound"] is not None for r in sub)
        about = f"B={cfg.num_questions}, {cfg.episodes} paired episodes, seed {cfg.seed}"
        if with_gap:
            about += f"; certified bound {sub[0]['bound']:.3f}"
        table = Table(title=f"{key}  ({about})", title_justify="left")
        heads = [
            *_HEADERS,
            *(["exact value"] if with_exact else []),
            *(["gap to bound ± CI"] if with_gap else []),
        ]
        for i, head in enumerate(heads):
            table.add_column(head, justify="left" if i == 0 else "right")
        for r in sub:
            table.add_row(*_cells(r, with_exact, with_gap))
        tables.append(table)
    return tables


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """The summary as a Markdown table (for READMEs and papers)."""
    with_exact = any(r["exact_value"] is not None for r in rows)
    with_gap = any(r["bound"] is not None for r in rows)
    heads = [
        "setting",
        *_HEADERS,
        *(["exact value"] if with_exact else []),
        *(["gap to bound ± CI"] if with_gap else []),
    ]
    lines = ["| " + " | ".join(heads) + " |", "|---|---|" + "---:|" * (len(heads) - 2)]
    for r in rows:
        gap = with_gap and r["bound"] is not None
        cells = _cells(r, with_exact, gap) + ([] if gap or not with_gap else ["—"])
        lines.append("| " + " | ".join([r["setting"], *cells]) + " |")
    return "\n".join(lines) + "\n"


def versions() -> dict[str, str]:
    """Library versions recorded beside every run."""
    import gymnasium
    import scipy

    return {
        "adaroll": adaroll_env.__version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "gymnasium": gymnasium.__version__,
        "platform": platform.platform(),
    }


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_bars(rows: list[dict[str, Any]], path: Path) -> None:
    """Bars of mean utility with 95 % CIs, one panel per setting."""
    plt = _pyplot()
    keys = list(dict.fromkeys(r["setting"] for r in rows))
    fig, axes = plt.subplots(len(keys), 1, figsize=(9, 2.8 * len(keys) + 0.6), squeeze=False)
    for ax, key in zip(axes[:, 0], keys, strict=True):
        sub = [r for r in rows if r["setting"] == key]
        names = [r["allocator"] for r in sub]
        ax.bar(
            names,
            [r["mean_utility"] for r in sub],
            yerr=[r["ci95"] for r in sub],
            capsize=4,
            color=[
                "#888888" if n == "uniform" else "#d08c2f" if r["reference_only"] else "#3b75af"
                for n, r in zip(names, sub, strict=True)
            ],
        )
        ax.set_title(key, fontsize=10)
        ax.set_ylabel("mean utility")
        lo = min(r["mean_utility"] - r["ci95"] for r in sub)
        hi = max(r["mean_utility"] + r["ci95"] for r in sub)
        pad = 0.15 * (hi - lo + 1e-9)
        ax.set_ylim(max(0.0, lo - pad), hi + pad)
        ax.tick_params(axis="x", labelrotation=30)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_group_sizes(rows: list[dict[str, Any]], path: Path) -> None:
    """Mean utility per question against G, one line per allocator, one panel per
    (env, difficulty, utility)."""
    plt = _pyplot()
    panels = list(dict.fromkeys((r["env"], r["difficulty"], r["utility_name"]) for r in rows))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4), squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        sub = [r for r in rows if (r["env"], r["difficulty"], r["utility_name"]) == panel]
        for name in dict.fromkeys(r["allocator"] for r in sub):
            pts = sorted(
                (r["group_size"], r["mean_utility"], r["ci95"])
                for r in sub
                if r["allocator"] == name
            )
            g, m, ci = (np.array(x) for x in zip(*pts, strict=True))
            ax.errorbar(g, m, yerr=ci, marker="o", capsize=3, label=name)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("G = N / B")
        ax.set_ylabel("mean utility")
        ax.set_title("/".join(panel), fontsize=10)
    axes[0, -1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_rollouts_by_mean(rows: list[dict[str, Any]], path: Path) -> None:
    """Average rollouts a question received against its final posterior mean, per allocator."""
    plt = _pyplot()
    keys = list(dict.fromkeys(r["setting"] for r in rows))
    fig, axes = plt.subplots(1, len(keys), figsize=(5.5 * len(keys), 4), squeeze=False)
    centers = (np.arange(MEAN_BINS) + 0.5) / MEAN_BINS
    for ax, key in zip(axes[0], keys, strict=True):
        for r in (r for r in rows if r["setting"] == key):
            ax.plot(centers, r["rollouts_by_mean"], marker=".", label=r["allocator"])
        ax.set_xlabel("final posterior mean of the question")
        ax.set_ylabel("rollouts per question")
        ax.set_title(key, fontsize=10)
    axes[0, -1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


@dataclass
class BenchResult:
    """What ``run_benchmark`` returns."""

    rows: list[dict[str, Any]]
    episodes: list[dict[str, Any]]
    run_dir: Path | None


def _tasks(
    cfg: BenchConfig, workers: int
) -> list[tuple[Setting, dict[str, Any], str, list[int], int]]:
    grid = settings(cfg)
    n_cells = len(grid) * len(cfg.allocator_list)
    chunks = max(1, math.ceil(4 * workers / n_cells))
    size = max(1, math.ceil(cfg.episodes / chunks))
    tasks = []
    for setting in grid:
        for spec in cfg.allocator_list:
            kwargs = env_kwargs(cfg, setting, spec)
            for start in range(0, cfg.episodes, size):
                eps = list(range(start, min(cfg.episodes, start + size)))
                tasks.append((setting, kwargs, spec, eps, cfg.seed))
    return tasks


def tree_is_small(params: AllocationParams, max_states: int) -> bool:
    """A cheap upper bound on the outcome tree (count vectors with Σ ≤ N) against a limit."""
    B, N = params.num_questions, params.total_budget
    return math.comb(N + 2 * B, 2 * B) <= 20 * max_states


def _exact_tasks(cfg: BenchConfig) -> list[tuple[Setting, dict[str, Any], str, int]]:
    if not cfg.exact:
        return []
    out = []
    for setting in settings(cfg):
        for spec in cfg.allocator_list:
            if spec in REFERENCE_ONLY:
                continue
            kwargs = env_kwargs(cfg, setting, spec)
            env = make_env(setting.env, kwargs)
            params = env.unwrapped.params  # type: ignore[attr-defined]
            stochastic = bool(getattr(make_allocator(spec, env), "stochastic", False))
            env.close()
            if not stochastic and tree_is_small(params, cfg.exact_max_states):
                out.append((setting, kwargs, spec, cfg.exact_max_states))
    return out


def _exact_task(
    task: tuple[Setting, dict[str, Any], str, int],
) -> tuple[Setting, str, float | None]:
    setting, kwargs, spec, max_states = task
    env = make_env(setting.env, kwargs)
    try:
        params = env.unwrapped.params  # type: ignore[attr-defined]
        allocator = make_allocator(spec, env)
        difficulty = env.unwrapped.difficulty  # type: ignore[attr-defined]
        return setting, spec, exact_value(allocator, params, difficulty, max_states=max_states)
    finally:
        env.close()


def run_benchmark(cfg: BenchConfig, *, write: bool = True) -> BenchResult:
    """Run the grid, write the run directory (if ``write``) and return the summary rows."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    workers = cfg.workers or (os.cpu_count() or 1)
    # Fail fast, in this process, on bad settings or specs.
    for setting in settings(cfg):
        for spec in cfg.allocator_list:
            env = make_env(setting.env, env_kwargs(cfg, setting, spec))
            make_allocator(spec, env)
            env.close()
    tasks = _tasks(cfg, workers)
    exact_tasks = _exact_tasks(cfg)
    results: dict[tuple[Setting, str], list[dict[str, Any]]] = {}
    total = sum(len(t[3]) for t in tasks)
    progress = Progress(
        TextColumn("[bold]bench"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("episodes"),
        TimeRemainingColumn(),
        disable=not cfg.progress,
        transient=True,
    )
    with progress:
        bar = progress.add_task("bench", total=total)
        exact: dict[tuple[Setting, str], float | None] = {}
        if workers == 1 or len(tasks) == 1:
            for task in tasks:
                setting, spec, recs = _run_task(task)
                results.setdefault((setting, spec), []).extend(recs)
                progress.advance(bar, len(recs))
            for etask in exact_tasks:
                setting, spec, value = _exact_task(etask)
                exact[(setting, spec)] = value
        else:
            with ProcessPoolExecutor(max_workers=workers) as pool:
                efutures = [pool.submit(_exact_task, e) for e in exact_tasks]
                futures = [pool.submit(_run_task, t) for t in tasks]
                for fut in as_completed(futures):
                    setting, spec, recs = fut.result()
                    results.setdefault((setting, spec), []).extend(recs)
                    progress.advance(bar, len(recs))
                for efut in efutures:
                    setting, spec, value = efut.result()
                    exact[(setting, spec)] = value
    rows = summarise(results, cfg, exact)
    episodes = [
        {"setting": s.key, "allocator": spec, **rec}
        for (s, spec), recs in sorted(results.items(), key=lambda kv: (kv[0][0].key, kv[0][1]))
        for rec in sorted(recs, key=lambda r: r["episode"])
    ]
    run_dir = _write_run(cfg, rows, episodes) if write else None
    return BenchResult(rows=rows, episodes=episodes, run_dir=run_dir)


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    # Per-bin lists live in the JSON files; the CSVs keep the scalar columns.
    fields = [k for k, v in rows[0].items() if not isinstance(v, list)]
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def _write_run(
    cfg: BenchConfig, rows: list[dict[str, Any]], episodes: list[dict[str, Any]]
) -> Path:
    name = cfg.name or time.strftime("bench-%Y%m%d-%H%M%S")
    run_dir = Path(cfg.out) / name
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(json.dumps(dataclasses.asdict(cfg), indent=2) + "\n")
    (run_dir / "versions.json").write_text(json.dumps(versions(), indent=2) + "\n")
    (run_dir / "summary.json").write_text(json.dumps(rows, indent=2) + "\n")
    _write_csv(run_dir / "summary.csv", rows)
    _write_csv(run_dir / "episodes.csv", episodes)
    (run_dir / "table.md").write_text(markdown_table(rows))
    if cfg.plots:
        plot_bars(rows, run_dir / "utility_bars.png")
        plot_rollouts_by_mean(rows, run_dir / "rollouts_by_mean.png")
        if len(cfg.group_size_list) > 1:
            plot_group_sizes(rows, run_dir / "utility_vs_group_size.png")
    return run_dir


def main(cfg: BenchConfig) -> BenchResult:
    """Run the benchmark, print the table and say where the run directory is."""
    from rich.console import Console

    console = Console() if Console().is_terminal else Console(width=120)
    result = run_benchmark(cfg)
    for table in format_tables(result.rows, cfg):
        console.print(table)
    if result.run_dir is not None:
        console.print(f"run directory: {result.run_dir}")
    return result
