"""The plots of ``adaroll compete``: accuracy against rollouts, informative fraction, calibration.

``plot_accuracy`` (held-out pass@1 against rollouts spent, mean over seeds with a 95 % band),
``plot_informative`` (informative fraction per step, smoothed) and ``plot_calibration`` (the
per-prompt pass rates the trainer observed against the simulator's ``rlvr`` profile sampled at the
same numbers of rollouts) write PNGs into the competition directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from adaroll_env.stats import mean_ci


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_accuracy(out: Path, curves: dict[str, list[list[tuple[float, float]]]], cfg: Any) -> None:
    """``accuracy.png``: held-out pass@1 against rollouts, mean over seeds with a 95 % band."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for a, cs in curves.items():
        n = min(len(c) for c in cs)
        x = np.array([c[:n] for c in cs])[..., 0].mean(0)
        y = 100 * np.array([c[:n] for c in cs])[..., 1]  # [seeds, evals]
        mean = y.mean(0)
        ax.plot(x, mean, label=a)
        if y.shape[0] > 1:
            half = np.array([mean_ci(list(col))[1] for col in y.T])
            ax.fill_between(x, mean - half, mean + half, alpha=0.15)
    ax.set_xlabel("rollouts spent")
    ax.set_ylabel("held-out pass@1 (%)")
    ax.set_title(f"{cfg.grpo.task}, {cfg.grpo.model}: mean of {cfg.seeds} seeds, 95 % band")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "accuracy.png", dpi=120)
    plt.close(fig)


def plot_informative(out: Path, runs: dict[str, list[dict[str, Any]]]) -> None:
    """``informative.png``: the informative fraction per step (moving average)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for a, rs in runs.items():
        n = min(len(r["metrics"]) for r in rs)
        y = np.array([[m["informative_frac"] for m in r["metrics"][:n]] for r in rs]).mean(0)
        w = max(1, n // 20)
        smooth = np.convolve(y, np.ones(w) / w, mode="valid")
        ax.plot(np.arange(smooth.size) + w // 2, smooth, label=a)
    ax.set_xlabel("step")
    ax.set_ylabel("informative fraction of prompts")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "informative.png", dpi=120)
    plt.close(fig)


def plot_calibration(out: Path, runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any] | None:
    """Observed per-prompt pass rates (all runs pooled) against the ``rlvr`` profile, sampled at
    the same numbers of rollouts so that the two histograms carry the same binomial noise."""
    from adaroll_env.priors import PROFILES, EmpiricalPassRates, fit_beta

    rates, weights = [], []
    for rs in runs.values():
        for r in rs:
            if r["beliefs"]:
                rates.extend(r["beliefs"]["rates"])
                weights.extend(r["beliefs"]["rollouts"])
    if not rates:
        return None
    obs = np.asarray(rates, dtype=np.float64)
    n = np.maximum(np.rint(np.asarray(weights)).astype(np.int64), 1)
    rng = np.random.default_rng(0)
    p = PROFILES["rlvr"].sample(rng, obs.size)
    sim = rng.binomial(n, p) / n
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    bins = np.linspace(0, 1, 21)
    ax.hist(obs, bins=bins, alpha=0.6, density=True, label="observed in training")
    ax.hist(sim, bins=bins, alpha=0.6, density=True, label="rlvr profile, same rollouts")
    ax.set_xlabel("per-prompt pass rate (discounted successes / rollouts)")
    ax.set_ylabel("density")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "calibration.png", dpi=120)
    plt.close(fig)
    a, b = fit_beta(EmpiricalPassRates(tuple(obs.tolist())))
    return {
        "prompts": int(obs.size),
        "observed_mean": float(obs.mean()),
        "observed_frac_zero": float(np.mean(obs == 0)),
        "observed_frac_one": float(np.mean(obs == 1)),
        "rlvr_frac_zero": float(np.mean(sim == 0)),
        "rlvr_frac_one": float(np.mean(sim == 1)),
        "fitted_beta": [a, b],
    }
