"""The run directory of a benchmark: config, versions, summary and episodes (JSON, CSV),
the Markdown table and the plots."""

from __future__ import annotations

import csv
import dataclasses
import json
import time
from pathlib import Path
from typing import Any

from adaroll_env.stats import library_versions
from agents.benchmarks.config import BenchConfig
from agents.benchmarks.plots import plot_bars, plot_group_sizes, plot_rollouts_by_mean, plot_rounds
from agents.benchmarks.tables import markdown_table


def versions() -> dict[str, str]:
    """Library versions recorded beside every run (``adaroll_env.stats.library_versions``)."""
    return library_versions()


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    # Per-bin lists live in the JSON files; the CSVs keep the scalar columns.
    fields = [k for k, v in rows[0].items() if not isinstance(v, list)]
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def write_run(cfg: BenchConfig, rows: list[dict[str, Any]], episodes: list[dict[str, Any]]) -> Path:
    """Write the run directory of a benchmark and return its path."""
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
        if sum(isinstance(k, int) for k in cfg.rounds_list) > 1:
            plot_rounds(rows, run_dir / "rounds.png")
    return run_dir
