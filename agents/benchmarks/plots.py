"""PNG plots of a benchmark run (matplotlib, imported only when plotting)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from agents.benchmarks.config import MEAN_BINS


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
