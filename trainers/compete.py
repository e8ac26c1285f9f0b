"""``adaroll compete``: allocators compete in real GRPO training from the same starting point.

Every (allocator, seed) pair is one ``adaroll grpo`` run with the same model checkpoint, task,
data order (the seed), rollout budget per step and number of steps; only the allocator differs.
The competition directory holds ``runs/<allocator>/seed<k>/`` (each a full run directory, so a
rerun skips finished runs and nothing is lost), then ``results.csv``, ``table.md``,
``summary.json``, ``accuracy.png`` (held-out pass@1 against rollouts spent, mean over seeds with a
95 % band), ``informative.png`` (informative fraction per step) and ``calibration.png`` (the pass
rates the trainer observed against the ``rlvr`` profile of the simulator).
"""

from __future__ import annotations

import csv
import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from trainers.grpo import BeliefPrior, GRPOConfig, LossType, ScaleRewards, field_help


@dataclass
class CompeteConfig:
    """Allocators compete in real GRPO training (same checkpoint, data, seed and budget)."""

    allocators: str = field(
        default="uniform,bamdp,thompson,sb3:pretrained",
        metadata=field_help("comma-separated allocator specs"),
    )
    seeds: int = field(default=3, metadata=field_help("seeds per allocator (0, 1, ...)"))
    task: str = field(default="arithmetic", metadata=field_help("task (see adaroll grpo)"))
    model: str = field(
        default="tiny", metadata=field_help("starting checkpoint (see adaroll grpo)")
    )
    steps: int = field(default=1200, metadata=field_help("GRPO steps per run"))
    batch_size: int = field(default=64, metadata=field_help("B: prompts per step"))
    group_size: int = field(default=8, metadata=field_help("G: rollout budget per step is G·B"))
    round_size: int | None = field(
        default=None, metadata=field_help("R per round (default B; uniform takes one round)")
    )
    pilot: int = field(default=0, metadata=field_help("rollouts every prompt gets first"))
    max_group: int | None = field(default=None, metadata=field_help("cap per prompt and step"))
    utility: str = field(default="informative", metadata=field_help("utility allocators maximise"))
    belief_prior: BeliefPrior = field(
        default="fixed", metadata=field_help("prior of unseen prompts: 'fixed' or 'fitted'")
    )
    belief_decay: float = field(default=0.95, metadata=field_help("per-step forgetting of beliefs"))
    lr: float = field(default=2e-4, metadata=field_help("learning rate"))
    loss_type: LossType = field(default="dapo", metadata=field_help("loss normalisation"))
    scale_rewards: ScaleRewards = field(default="group", metadata=field_help("advantage scaling"))
    max_completion_length: int = field(default=8, metadata=field_help("new tokens per completion"))
    eval_every: int = field(default=300, metadata=field_help("held-out evaluation every N steps"))
    eval_size: int | None = field(default=400, metadata=field_help("held-out prompts (none: all)"))
    eval_k: int = field(default=4, metadata=field_help("samples per held-out prompt"))
    workers: int = field(default=2, metadata=field_help("runs in parallel (processes)"))
    threads: int = field(default=1, metadata=field_help("torch threads per run"))
    out: str = field(default="runs/compete", metadata=field_help("competition directory"))
    progress: bool = field(default=True, metadata=field_help("show progress"))

    def __post_init__(self) -> None:
        specs = self.allocator_list()
        if not specs:
            raise ValueError("allocators is empty: give e.g. --allocators uniform,bamdp")
        if len(set(specs)) != len(specs):
            raise ValueError(f"allocators has duplicates: {specs}")
        for name in ("seeds", "steps", "workers", "eval_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)!r}")
        self.run_config("uniform", 0)  # the trainer's own checks, now rather than in a worker

    def allocator_list(self) -> list[str]:
        """The allocator specs, in order."""
        return [s.strip() for s in self.allocators.split(",") if s.strip()]

    def run_dir(self, allocator: str, seed: int) -> Path:
        """Where the run of ``allocator`` with ``seed`` lives."""
        safe = allocator.replace(":", "_").replace("/", "_")
        return Path(self.out) / "runs" / safe / f"seed{seed}"

    def run_config(self, allocator: str, seed: int) -> GRPOConfig:
        """The ``GRPOConfig`` of one run: everything shared, but the allocator and seed."""
        return GRPOConfig(
            task=self.task,
            model=self.model,
            allocator=allocator,
            batch_size=self.batch_size,
            group_size=self.group_size,
            round_size=self.round_size,
            pilot=self.pilot,
            max_group=self.max_group,
            utility=self.utility,
            belief_prior=self.belief_prior,
            belief_decay=self.belief_decay,
            steps=self.steps,
            lr=self.lr,
            loss_type=self.loss_type,
            scale_rewards=self.scale_rewards,
            max_completion_length=self.max_completion_length,
            eval_every=self.eval_every,
            eval_size=self.eval_size,
            eval_k=self.eval_k,
            save_every=0,
            out=str(self.run_dir(allocator, seed)),
            resume=True,
            progress=False,
            seed=seed,
            threads=self.threads,
            device="cpu",
        )


def _run_one(cfg: GRPOConfig) -> dict[str, Any]:
    from trainers.run import main

    return main(cfg)


def _finished(cfg: GRPOConfig) -> bool:
    path = Path(cfg.out) / "summary.json"
    return path.exists() and json.loads(path.read_text()).get("steps") == cfg.steps


def main(cfg: CompeteConfig) -> dict[str, Any]:
    """Run every (allocator, seed) not yet finished, then tabulate and plot."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from trainers.models import resolve_model_dir

    console = Console()
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    resolve_model_dir(cfg.model)  # builds the tiny warm start once, before the workers start
    (out / "config.json").write_text(json.dumps(asdict(cfg), indent=2) + "\n")
    jobs = [cfg.run_config(a, s) for s in range(cfg.seeds) for a in cfg.allocator_list()]
    todo = [j for j in jobs if not _finished(j)]
    console.print(
        f"compete: {len(jobs)} runs ({len(jobs) - len(todo)} already done), {cfg.workers} at a time"
    )
    start = time.perf_counter()
    with Progress(
        "{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=not cfg.progress,
    ) as progress:
        bar = progress.add_task("runs", total=len(jobs), completed=len(jobs) - len(todo))
        if cfg.workers == 1:
            for job in todo:
                _run_one(job)
                progress.advance(bar)
        else:
            import multiprocessing as mp
            import signal

            def _stop(signum: int, frame: Any) -> None:
                raise KeyboardInterrupt(f"signal {signum}")

            # a killed competition takes its worker processes with it (finished runs are kept;
            # a rerun resumes with the rest)
            previous = signal.signal(signal.SIGTERM, _stop)
            pool = mp.get_context("spawn").Pool(cfg.workers)
            try:
                for _ in pool.imap_unordered(_run_one, todo):
                    progress.advance(bar)
                pool.close()
            except BaseException:
                pool.terminate()
                raise
            finally:
                pool.join()
                signal.signal(signal.SIGTERM, previous)
    summary = tabulate(cfg)
    summary["wall_minutes"] = (time.perf_counter() - start) / 60
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    console.print((out / "table.md").read_text())
    return summary


# --- analysis ---------------------------------------------------------------------------------
def _ci95(values: list[float]) -> tuple[float, float]:
    """Mean and half-width of a t-based 95 % interval (0 for a single value)."""
    from scipy import stats

    arr = np.asarray(values, dtype=np.float64)
    if arr.size < 2:
        return float(arr.mean()) if arr.size else float("nan"), 0.0
    half = stats.t.ppf(0.975, arr.size - 1) * arr.std(ddof=1) / math.sqrt(arr.size)
    return float(arr.mean()), float(half)


def rollouts_to_reach(curve: list[tuple[float, float]], target: float) -> float | None:
    """Rollouts from which the (rollouts, accuracy) curve reaches ``target`` and stays there to
    the end (interpolated linearly into the last upward crossing), so that a noisy evaluation
    that touches the target and falls back does not count; None if the curve ends below it."""
    if not curve or curve[-1][1] < target:
        return None
    below = [i for i, (_, y) in enumerate(curve) if y < target]
    if not below:
        return curve[0][0]
    (x0, y0), (x1, y1) = curve[below[-1]], curve[below[-1] + 1]
    return x0 + (x1 - x0) * (target - y0) / (y1 - y0)


def _load(cfg: CompeteConfig) -> dict[str, list[dict[str, Any]]]:
    from trainers.run import read_jsonl

    runs: dict[str, list[dict[str, Any]]] = {}
    for a in cfg.allocator_list():
        for s in range(cfg.seeds):
            d = cfg.run_dir(a, s)
            if not (d / "summary.json").exists():
                continue
            runs.setdefault(a, []).append(
                {
                    "seed": s,
                    "summary": json.loads((d / "summary.json").read_text()),
                    "eval": read_jsonl(d / "eval.jsonl"),
                    "metrics": read_jsonl(d / "metrics.jsonl"),
                    "beliefs": json.loads((d / "beliefs.json").read_text())
                    if (d / "beliefs.json").exists()
                    else None,
                }
            )
    return runs


def tabulate(cfg: CompeteConfig) -> dict[str, Any]:
    """Table, CSV and plots of the finished runs under ``cfg.out``."""
    runs = _load(cfg)
    out = Path(cfg.out)
    if not runs:
        raise ValueError(f"no finished runs under {out}/runs: run adaroll compete first")
    curves = {
        a: [[(e["rollouts_total"], e["pass@1"]) for e in r["eval"]] for r in rs]
        for a, rs in runs.items()
    }
    base = "uniform" if "uniform" in runs else next(iter(runs))
    target = float(np.mean([c[-1][1] for c in curves[base]]))
    rows: list[dict[str, Any]] = []
    base_reach: float | None = None
    for a, rs in runs.items():
        finals = [c[-1][1] for c in curves[a]]
        mean, half = _ci95(finals)
        reach = [rollouts_to_reach(c, target) for c in curves[a]]
        reached = [r for r in reach if r is not None]
        mean_reach = float(np.mean(reached)) if len(reached) == len(reach) else None
        if a == base:
            base_reach = mean_reach
        rows.append(
            {
                "allocator": a,
                "seeds": len(rs),
                "final_pass@1": mean,
                "ci95": half,
                "start_pass@1": float(np.mean([c[0][1] for c in curves[a]])),
                "rollouts_to_target": mean_reach,
                "reached": f"{len(reached)}/{len(reach)}",
                "informative_frac": float(
                    np.mean([m["informative_frac"] for r in rs for m in r["metrics"]])
                ),
                "trained_per_step": float(
                    np.mean([m["trained_rollouts"] for r in rs for m in r["metrics"]])
                ),
                "alloc_overhead": float(
                    np.median([m["alloc_overhead"] for r in rs for m in r["metrics"]])
                ),
                "minutes": float(np.mean([r["summary"]["minutes"] for r in rs])),
                "rollouts": int(np.mean([r["summary"]["rollouts_total"] for r in rs])),
            }
        )
    for row in rows:
        r = row["rollouts_to_target"]
        row["rollout_saving"] = 1.0 - r / base_reach if r is not None and base_reach else None
    with (out / "results.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    (out / "table.md").write_text(_markdown(rows, base, target))
    _plot_accuracy(out, curves, cfg)
    _plot_informative(out, runs)
    calib = _plot_calibration(out, runs)
    return {"baseline": base, "target_pass@1": target, "rows": rows, "calibration": calib}


def _fmt(x: float | None, spec: str) -> str:
    return "—" if x is None else format(x, spec)


def _markdown(rows: list[dict[str, Any]], base: str, target: float) -> str:
    lines = [
        f"Target: {base}'s final held-out pass@1, {100 * target:.1f} % (mean over seeds); "
        "rollouts to target: from where the curve reaches it and stays there to the end.",
        "",
        "| allocator | seeds | start pass@1 | final pass@1 (95 % CI) | rollouts to target "
        f"(reached) | saving vs {base} | informative fraction | rollouts with gradient per "
        "step | allocation overhead | minutes per run |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['allocator']} | {r['seeds']} | {100 * r['start_pass@1']:.1f} % | "
            f"{100 * r['final_pass@1']:.1f} ± {100 * r['ci95']:.1f} % | "
            f"{_fmt(r['rollouts_to_target'], ',.0f')} ({r['reached']}) | "
            f"{_fmt(None if r['rollout_saving'] is None else 100 * r['rollout_saving'], '+.1f')}"
            f"{'' if r['rollout_saving'] is None else ' %'} | "
            f"{r['informative_frac']:.3f} | {r['trained_per_step']:.1f} | "
            f"{100 * r['alloc_overhead']:.1f} % | {r['minutes']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _plot_accuracy(out: Path, curves: dict[str, list[list[tuple[float, float]]]], cfg: Any) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for a, cs in curves.items():
        n = min(len(c) for c in cs)
        x = np.array([c[:n] for c in cs])[..., 0].mean(0)
        y = 100 * np.array([c[:n] for c in cs])[..., 1]  # [seeds, evals]
        mean = y.mean(0)
        ax.plot(x, mean, label=a)
        if y.shape[0] > 1:
            half = np.array([_ci95(list(col))[1] for col in y.T])
            ax.fill_between(x, mean - half, mean + half, alpha=0.15)
    ax.set_xlabel("rollouts spent")
    ax.set_ylabel("held-out pass@1 (%)")
    ax.set_title(f"{cfg.task}, {cfg.model}: mean of {cfg.seeds} seeds, 95 % band")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "accuracy.png", dpi=120)
    plt.close(fig)


def _plot_informative(out: Path, runs: dict[str, list[dict[str, Any]]]) -> None:
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


def _plot_calibration(out: Path, runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any] | None:
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
