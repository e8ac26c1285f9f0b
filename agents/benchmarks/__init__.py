"""The benchmarks of the ``agents`` layer: ``adaroll bench`` and the bamdp and SB3 reports.

The allocator benchmark behind ``adaroll bench`` is split by concern:

- ``config``: ``BenchConfig`` (the CLI options), the grid of ``Setting`` and the env of each;
- ``runner``: paired episodes over the grid in worker processes (``run_benchmark``, ``main``);
- ``statistics``: paired gains over ``uniform`` with CIs and the certified bound (``summarise``);
- ``tables`` and ``plots``: the printed/Markdown tables and the PNG plots;
- ``files``: the run directory (config, versions, summary, episodes, table, plots);
- ``mechanism``: what the final counts give GRPO (gradient-carrying rollouts, informative
  prompts and fraction), reported beside every utility;

``adaroll bench --from-run`` (the simulator's prediction of a training run's figures against the
live ones) reads trainer run directories, so it lives with the trainer:
``trainers.experiments.sim_to_real``; the ``adaroll bench`` command dispatches to it.

Reports built on it: ``bamdp`` (``scripts/bench_bamdp.py``) and ``sb3`` (``scripts/bench_sb3.py``).
A run directory keeps the exact config, library versions, every episode (CSV), the summary
(JSON/CSV), the printed table and PNG plots.
"""

from __future__ import annotations

from adaroll_env.stats import mean_ci
from agents.benchmarks.config import (
    ENV_KINDS,
    MEAN_BINS,
    REFERENCE_ONLY,
    BenchConfig,
    Setting,
    env_kwargs,
    make_env,
    settings,
)
from agents.benchmarks.files import versions, write_run
from agents.benchmarks.mechanism import MECHANISM, mechanism
from agents.benchmarks.plots import (
    plot_bars,
    plot_group_sizes,
    plot_rollouts_by_mean,
    plot_rounds,
)
from agents.benchmarks.runner import (
    BenchResult,
    episode_seeds,
    main,
    run_benchmark,
    run_episodes,
    tree_is_small,
)
from agents.benchmarks.statistics import bayes_bound, summarise
from agents.benchmarks.tables import format_tables, markdown_table

__all__ = [
    "ENV_KINDS",
    "MEAN_BINS",
    "MECHANISM",
    "REFERENCE_ONLY",
    "BenchConfig",
    "BenchResult",
    "Setting",
    "bayes_bound",
    "env_kwargs",
    "episode_seeds",
    "format_tables",
    "main",
    "make_env",
    "markdown_table",
    "mean_ci",
    "mechanism",
    "plot_bars",
    "plot_group_sizes",
    "plot_rollouts_by_mean",
    "plot_rounds",
    "run_benchmark",
    "run_episodes",
    "settings",
    "summarise",
    "tree_is_small",
    "versions",
    "write_run",
]
