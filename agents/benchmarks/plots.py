"""PNG plots of a benchmark run (matplotlib, imported only when plotting).

Every line of a plot has its own style (colour, line style and marker together: 120 distinct
combinations), legends sit outside the axes, and bar labels are horizontal, one per row, so
that fifteen or more allocators stay readable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from agents.benchmarks.config import MEAN_BINS
from agents.benchmarks.mechanism import MECHANISM

_COLORS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
_LINES = ("-", "--", "-.", ":")
_MARKERS = ("o", "s", "^", "D", "v", "P")


def line_styles(n: int) -> list[dict[str, Any]]:
    """``n`` matplotlib styles (colour, line style, marker): line i takes colour i mod 10, and
    each block of ten changes marker and line style together, so no two of the first
    10·lcm(6, 4) = 120 lines look alike (past that the styles repeat)."""
    out = []
    for i in range(n):
        block = i // len(_COLORS)
        out.append(
            {
                "color": _COLORS[i % len(_COLORS)],
                "linestyle": _LINES[block % len(_LINES)],
                "marker": _MARKERS[block % len(_MARKERS)],
            }
        )
    return out


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _legend_outside(fig: Any, ax: Any) -> None:
    """One legend to the right of the axes (never over the lines)."""
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)


def figure_bars(rows: list[dict[str, Any]]) -> Any:
    """Horizontal bars of mean utility with 95 % CIs, one panel per setting, one allocator a
    row (names never overlap however many allocators there are)."""
    plt = _pyplot()
    keys = list(dict.fromkeys(r["setting"] for r in rows))
    n_max = max(sum(1 for r in rows if r["setting"] == k) for k in keys)
    height = 0.3 * n_max + 1.0
    fig, axes = plt.subplots(len(keys), 1, figsize=(9, height * len(keys)), squeeze=False)
    for ax, key in zip(axes[:, 0], keys, strict=True):
        sub = [r for r in rows if r["setting"] == key]
        names = [r["allocator"] + (" (ref)" if r["reference_only"] else "") for r in sub]
        y = np.arange(len(sub))
        ax.barh(
            y,
            [r["mean_utility"] for r in sub],
            xerr=[r["ci95"] for r in sub],
            capsize=3,
            color=[
                "#888888"
                if r["allocator"] == "uniform"
                else "#d08c2f"
                if r["reference_only"]
                else "#3b75af"
                for r in sub
            ],
        )
        ax.set_yticks(y, names, fontsize=9)
        ax.invert_yaxis()  # the first allocator (uniform) on top
        ax.set_title(key, fontsize=10)
        ax.set_xlabel("mean utility")
        lo = min(r["mean_utility"] - r["ci95"] for r in sub)
        hi = max(r["mean_utility"] + r["ci95"] for r in sub)
        pad = 0.15 * (hi - lo + 1e-9)
        ax.set_xlim(max(0.0, lo - pad), hi + pad)
    fig.tight_layout()
    return fig


def plot_bars(rows: list[dict[str, Any]], path: Path) -> None:
    """Write ``figure_bars(rows)`` to ``path`` (PNG)."""
    fig = figure_bars(rows)
    fig.savefig(path, dpi=120)
    _pyplot().close(fig)


def figure_group_sizes(rows: list[dict[str, Any]]) -> Any:
    """Mean utility per question against G, one line per allocator, one panel per
    (env, difficulty, utility, rounds)."""
    plt = _pyplot()

    def panel_of(r: dict[str, Any]) -> tuple[str, ...]:
        rounds = r.get("rounds")
        tail = () if rounds is None else (f"rounds={rounds}",)
        return (r["env"], r["difficulty"], r["utility_name"], *tail)

    panels = list(dict.fromkeys(panel_of(r) for r in rows))
    names = list(dict.fromkeys(r["allocator"] for r in rows))
    styles = dict(zip(names, line_styles(len(names)), strict=True))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels) + 2, 4), squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        sub = [r for r in rows if panel_of(r) == panel]
        for name in dict.fromkeys(r["allocator"] for r in sub):
            pts = sorted(
                (r["group_size"], r["mean_utility"], r["ci95"])
                for r in sub
                if r["allocator"] == name
            )
            g, m, ci = (np.array(x) for x in zip(*pts, strict=True))
            ax.errorbar(g, m, yerr=ci, capsize=3, label=name, **styles[name])
        ax.set_xscale("log", base=2)
        ax.set_xlabel("G = N / B")
        ax.set_ylabel("mean utility")
        ax.set_title("/".join(panel), fontsize=10)
    _legend_outside(fig, axes[0, -1])
    fig.tight_layout()
    return fig


def plot_group_sizes(rows: list[dict[str, Any]], path: Path) -> None:
    """Write ``figure_group_sizes(rows)`` to ``path`` (PNG)."""
    fig = figure_group_sizes(rows)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    _pyplot().close(fig)


def figure_rollouts_by_mean(rows: list[dict[str, Any]]) -> Any:
    """Average rollouts a question received against its final posterior mean, per allocator."""
    plt = _pyplot()
    keys = list(dict.fromkeys(r["setting"] for r in rows))
    names = list(dict.fromkeys(r["allocator"] for r in rows))
    styles = dict(zip(names, line_styles(len(names)), strict=True))
    fig, axes = plt.subplots(1, len(keys), figsize=(5.5 * len(keys) + 2, 4), squeeze=False)
    centers = (np.arange(MEAN_BINS) + 0.5) / MEAN_BINS
    for ax, key in zip(axes[0], keys, strict=True):
        for r in (r for r in rows if r["setting"] == key):
            ax.plot(
                centers,
                r["rollouts_by_mean"],
                label=r["allocator"],
                markersize=4,
                **styles[r["allocator"]],
            )
        ax.set_xlabel("final posterior mean of the question")
        ax.set_ylabel("rollouts per question")
        ax.set_title(key, fontsize=10)
    _legend_outside(fig, axes[0, -1])
    fig.tight_layout()
    return fig


def plot_rollouts_by_mean(rows: list[dict[str, Any]], path: Path) -> None:
    """Write ``figure_rollouts_by_mean(rows)`` to ``path`` (PNG)."""
    fig = figure_rollouts_by_mean(rows)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    _pyplot().close(fig)


def figure_rounds(rows: list[dict[str, Any]]) -> Any:
    """Mean utility and the mechanism figures against decision rounds per episode, one line per
    allocator with 95 % CIs; one row of panels per (env, difficulty, utility, G). Equal rounds
    only: rounds schedules ("384+128") have no place on the axis and are left to the tables."""
    plt = _pyplot()
    metrics = {
        "mean_utility": "mean utility",
        **{k: f"{v} / episode" for k, v in MECHANISM.items()},
    }
    cis = {"mean_utility": "ci95", **{k: f"{k}_ci95" for k in MECHANISM}}
    rows = [r for r in rows if isinstance(r.get("rounds"), int)]
    groups = list(
        dict.fromkeys((r["env"], r["difficulty"], r["utility_name"], r["group_size"]) for r in rows)
    )
    names = list(dict.fromkeys(r["allocator"] for r in rows))
    styles = dict(zip(names, line_styles(len(names)), strict=True))
    fig, axes = plt.subplots(
        len(groups),
        len(metrics),
        figsize=(4.2 * len(metrics) + 2, 3.5 * len(groups)),
        squeeze=False,
    )
    for axrow, group in zip(axes, groups, strict=True):
        sub = [
            r
            for r in rows
            if (r["env"], r["difficulty"], r["utility_name"], r["group_size"]) == group
        ]
        for ax, (key, title) in zip(axrow, metrics.items(), strict=True):
            for name in dict.fromkeys(r["allocator"] for r in sub):
                pts = sorted(
                    (r["rounds"], r[key], r[cis[key]]) for r in sub if r["allocator"] == name
                )
                k, m, ci = (np.array(x) for x in zip(*pts, strict=True))
                ax.errorbar(k, m, yerr=ci, capsize=3, label=name, **styles[name])
            ax.set_xscale("log", base=2)
            ticks = sorted({r["rounds"] for r in sub})
            ax.set_xticks(ticks, [str(k) for k in ticks])
            ax.set_xlabel("decision rounds per episode")
            ax.set_ylabel(title)
            ax.set_title("/".join(str(x) for x in group[:3]) + f"/G={group[3]}", fontsize=9)
    _legend_outside(fig, axes[0, -1])
    fig.tight_layout()
    return fig


def plot_rounds(rows: list[dict[str, Any]], path: Path) -> None:
    """Write ``figure_rounds(rows)`` to ``path`` (PNG)."""
    fig = figure_rounds(rows)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    _pyplot().close(fig)
