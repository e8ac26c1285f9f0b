"""One allocator against another across two benchmark runs of the same settings and seed: an
option of an allocator measured against its default (``scripts/bench_ab.py``).

Two ``adaroll bench`` (or ``scripts/bench_bamdp.py``) runs with the same master seed draw the
same truths for episode k of a setting, whatever the allocators' options, so their episodes pair
exactly (each episode's ``env_seed`` is checked). Per setting both runs hold: the mean utility
of the allocator in each run, their paired difference (B − A) with its 95 % t-interval and the
sign count (wins, ties, losses of B).
"""

from __future__ import annotations

import csv
import gzip
import io
from collections import defaultdict
from pathlib import Path
from typing import Any

from adaroll_env.stats import mean_ci

__all__ = ["ab_markdown", "paired_between_runs", "read_episodes"]


def read_episodes(run_dir: str | Path) -> list[dict[str, str]]:
    """The rows of a benchmark run's ``episodes.csv`` (or its gzipped ``episodes.csv.gz``)."""
    d = Path(run_dir)
    for name in ("episodes.csv", "episodes.csv.gz"):
        path = d / name
        if path.is_file():
            raw = gzip.decompress(path.read_bytes()) if name.endswith(".gz") else path.read_bytes()
            return list(csv.DictReader(io.StringIO(raw.decode())))
    raise ValueError(
        f"{d} has no episodes.csv or episodes.csv.gz: give the run directory of adaroll bench "
        "or scripts/bench_bamdp.py (the folder its table.md is in)"
    )


def _by_setting(
    rows: list[dict[str, str]], allocator: str
) -> dict[str, dict[int, tuple[str, float]]]:
    out: dict[str, dict[int, tuple[str, float]]] = defaultdict(dict)
    for r in rows:
        if r["allocator"] == allocator:
            out[r["setting"]][int(r["episode"])] = (r["env_seed"], float(r["utility"]))
    return out


def paired_between_runs(
    run_a: str | Path, run_b: str | Path, allocator: str, allocator_b: str | None = None
) -> list[dict[str, Any]]:
    """Per setting that both runs hold: ``allocator`` of run A against ``allocator_b`` (default
    the same name) of run B, episode by episode. Raises ``ValueError`` when an allocator is in
    neither run, or when a paired episode drew another env seed (the runs' seeds differ)."""
    other = allocator if allocator_b is None else allocator_b
    a = _by_setting(read_episodes(run_a), allocator)
    b = _by_setting(read_episodes(run_b), other)
    for name, runs, run in ((allocator, a, run_a), (other, b, run_b)):
        if not runs:
            raise ValueError(f"allocator {name!r} has no episodes in {run}")
    rows = []
    for setting in [s for s in a if s in b]:
        eps = sorted(set(a[setting]) & set(b[setting]))
        for k in eps:
            if a[setting][k][0] != b[setting][k][0]:
                raise ValueError(
                    f"{setting}, episode {k}: env seed {a[setting][k][0]} in {run_a} but "
                    f"{b[setting][k][0]} in {run_b}: the runs did not draw the same episodes "
                    "(give runs of the same --seed)"
                )
        ua = [a[setting][k][1] for k in eps]
        ub = [b[setting][k][1] for k in eps]
        delta = [y - x for x, y in zip(ua, ub, strict=True)]
        mean, half = mean_ci(delta)
        rows.append({
            "setting": setting,
            "episodes": len(eps),
            "mean_a": sum(ua) / len(ua),
            "mean_b": sum(ub) / len(ub),
            "delta": mean,
            "delta_ci95": half,
            "signs": [sum(d > 0 for d in delta), sum(d == 0 for d in delta),
                      sum(d < 0 for d in delta)],
        })  # fmt: skip
    if not rows:
        raise ValueError(f"{run_a} and {run_b} have no setting in common")
    return rows


def ab_markdown(rows: list[dict[str, Any]], label_a: str, label_b: str) -> str:
    """The rows as a markdown table."""
    lines = [
        f"| setting | episodes | {label_a} | {label_b} | B − A ± 95 % CI | W/T/L of B |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['setting']} | {r['episodes']} | {r['mean_a']:.3f} | {r['mean_b']:.3f} | "
            f"{r['delta']:+.3f} ± {r['delta_ci95']:.3f} | {'/'.join(map(str, r['signs']))} |"
        )
    return "\n".join(lines) + "\n"
