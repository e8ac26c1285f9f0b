"""The runner of ``adaroll bench``: paired episodes over the grid, in parallel worker processes.

Allocators × env kinds × difficulty profiles × utilities × group sizes G = N/B (× decision
rounds, with ``--rounds``) × episodes, run in parallel over the cores from one master seed.
Episodes are *paired*: episode i of every allocator in a setting uses the same env seed, hence the
same true pass rates, so differences against ``uniform`` are measured on common instances. Each
episode's record carries the mechanism figures of its final counts beside its utility."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from adaroll_env.model import AllocationParams
from agents.benchmarks.config import (
    MEAN_BINS,
    REFERENCE_ONLY,
    BenchConfig,
    Setting,
    env_kwargs,
    make_env,
    settings,
)
from agents.benchmarks.files import write_run
from agents.benchmarks.mechanism import mechanism
from agents.benchmarks.statistics import summarise
from agents.benchmarks.tables import format_tables
from agents.policy_value import exact_value
from agents.registry import make_allocator
from agents.rounds import EnvRoundLoop


def episode_seeds(master: int, episode: int) -> tuple[int, int]:
    """(env seed, allocator seed) of episode ``episode``: the same for every allocator."""
    env_seed, alloc_seed = np.random.SeedSequence([master, episode]).generate_state(2)
    return int(env_seed), int(alloc_seed)


def run_episodes(
    env: gym.Env,
    spec: str,
    episodes: Iterable[int],
    master_seed: int,
    allocator_kwargs: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Run ``spec`` (built with ``allocator_kwargs``) on ``env`` for the given episode indices;
    one record per episode: its utility, the mechanism figures of its final counts
    (``agents.benchmarks.mechanism``), decisions, timings and where the rollouts went.

    An episode is the trainer's round loop over the env (``agents.rounds.EnvRoundLoop``): the
    env draws the outcomes and pays the rewards, the loop asks the allocator and checks its
    decisions against the allocation contract, as in training."""
    allocator = make_allocator(spec, env, **(allocator_kwargs or {}))
    records = []
    for i in episodes:
        env_seed, alloc_seed = episode_seeds(master_seed, i)
        t_start = time.perf_counter()
        env.reset(seed=env_seed)
        loop = EnvRoundLoop(env, allocator=allocator, seed=alloc_seed)
        loop.run()
        obs, info = loop.obs, loop.info
        wall = time.perf_counter() - t_start
        alloc = np.asarray(info["allocation"])
        successes = np.asarray(obs["successes"], dtype=np.int64)
        mech = mechanism(successes, np.asarray(obs["rollouts"], dtype=np.int64) - successes)
        bins = np.minimum((np.asarray(obs["mean"]) * MEAN_BINS).astype(int), MEAN_BINS - 1)
        records.append(
            {
                "episode": i,
                "env_seed": env_seed,
                "utility": loop.total_reward,
                **{k: float(v) for k, v in mech.items()},
                "decisions": loop.decisions,
                "decision_seconds": loop.alloc_seconds,
                "episode_seconds": wall,
                "max_group_used": int(alloc.max()),
                "questions_used": int(np.count_nonzero(alloc)),
                "rollouts_by_mean": np.bincount(bins, weights=alloc, minlength=MEAN_BINS).tolist(),
                "questions_by_mean": np.bincount(bins, minlength=MEAN_BINS).tolist(),
            }
        )
    return records


#: (setting, env kwargs, allocator spec, episode indices, master seed, allocator kwargs)
Task = tuple[Setting, dict[str, Any], str, list[int], int, dict[str, Any]]
#: (setting, env kwargs, allocator spec, largest tree, allocator kwargs)
ExactTask = tuple[Setting, dict[str, Any], str, int, dict[str, Any]]


def _run_task(task: Task) -> tuple[Setting, str, list[dict[str, Any]]]:
    setting, kwargs, spec, episodes, master, alloc_kwargs = task
    env = make_env(setting.env, kwargs)
    try:
        return setting, spec, run_episodes(env, spec, episodes, master, alloc_kwargs)
    finally:
        env.close()


@dataclass
class BenchResult:
    """What ``run_benchmark`` returns."""

    rows: list[dict[str, Any]]
    episodes: list[dict[str, Any]]
    run_dir: Path | None


def _tasks(cfg: BenchConfig, workers: int) -> list[Task]:
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
                tasks.append((setting, kwargs, spec, eps, cfg.seed, cfg.allocator_kwargs_of(spec)))
    return tasks


def tree_is_small(params: AllocationParams, max_states: int) -> bool:
    """A cheap upper bound on the outcome tree (count vectors with Σ ≤ N) against a limit."""
    B, N = params.num_questions, params.total_budget
    return math.comb(N + 2 * B, 2 * B) <= 20 * max_states


def _exact_tasks(cfg: BenchConfig) -> list[ExactTask]:
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
            alloc_kwargs = cfg.allocator_kwargs_of(spec)
            allocator = make_allocator(spec, env, **alloc_kwargs)
            stochastic = bool(getattr(allocator, "stochastic", False))
            env.close()
            if not stochastic and tree_is_small(params, cfg.exact_max_states):
                out.append((setting, kwargs, spec, cfg.exact_max_states, alloc_kwargs))
    return out


def _exact_task(task: ExactTask) -> tuple[Setting, str, float | None]:
    setting, kwargs, spec, max_states, alloc_kwargs = task
    env = make_env(setting.env, kwargs)
    try:
        params = env.unwrapped.params  # type: ignore[attr-defined]
        allocator = make_allocator(spec, env, **alloc_kwargs)
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
            make_allocator(spec, env, **cfg.allocator_kwargs_of(spec))
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
    run_dir = write_run(cfg, rows, episodes) if write else None
    return BenchResult(rows=rows, episodes=episodes, run_dir=run_dir)


def main(cfg: BenchConfig) -> BenchResult:
    """Run the benchmark, print the table and say where the run directory is.

    ``cfg.from_run`` (trainer run directories) is the trainers layer's
    ``trainers.experiments.sim_to_real.main``, where ``adaroll bench --from-run`` goes."""
    from rich.console import Console

    if cfg.from_run:
        raise ValueError(
            f"from_run ({cfg.from_run}) replays trainer runs, which the trainers layer reads: "
            "call trainers.experiments.sim_to_real.main(cfg), as `adaroll bench --from-run` does"
        )
    console = Console() if Console().is_terminal else Console(width=120)
    result = run_benchmark(cfg)
    for table in format_tables(result.rows, cfg, width=console.width, wide=cfg.wide):
        console.print(table)
    if result.run_dir is not None:
        console.print(f"run directory: {result.run_dir}")
    return result
