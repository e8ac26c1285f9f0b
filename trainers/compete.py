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

import contextlib
import csv
import dataclasses
import json
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from adaroll_env.stats import mean_ci
from trainers import stopping
from trainers.compete_plots import plot_accuracy, plot_calibration, plot_informative
from trainers.config import check_config_int
from trainers.grpo import GRPOConfig, field_help


def _competition_defaults() -> GRPOConfig:
    """The shared run settings of a competition when none are given: longer runs, rarer and
    larger evaluations than a single ``adaroll grpo`` run's defaults."""
    return GRPOConfig(steps=1200, eval_every=300, eval_size=400)


@dataclass
class CompeteConfig:
    """Allocators compete in real GRPO training (same checkpoint, data, seed and budget).

    ``grpo`` holds the settings every run shares; each run's own ``GRPOConfig`` is ``grpo`` with
    the allocator, its keyword arguments, the seed and the run directory filled in
    (``run_config``). On the command line the shared settings are plain options
    (``--steps``, ``--batch-size``, ...: ``NESTED_FLAGS``).
    """

    #: the ``GRPOConfig`` fields ``adaroll compete`` exposes as options
    NESTED_FLAGS: ClassVar[dict[str, tuple[str, ...]]] = {
        "grpo": (
            "task",
            "task_size",
            "model",
            "steps",
            "batch_size",
            "group_size",
            "round_size",
            "rounds",
            "pool_size",
            "pilot",
            "max_group",
            "utility",
            "belief_prior",
            "belief_decay",
            "belief_group",
            "lr",
            "loss_type",
            "scale_rewards",
            "max_completion_length",
            "chat_template",
            "system_prompt",
            "eval_every",
            "eval_size",
            "eval_k",
            "gradient_noise_every",
            "threads",
        )
    }
    #: fields of ``grpo`` the competition sets for each run itself
    PER_RUN: ClassVar[tuple[str, ...]] = ("allocator", "allocator_kwargs", "seed", "out")

    allocators: str = field(
        default="uniform,bamdp,thompson,sb3:pretrained",
        metadata=field_help("comma-separated allocator specs"),
    )
    allocator_kwargs: str | None = field(
        default=None,
        metadata=field_help(
            "JSON object from allocator spec to its constructor's keyword arguments, e.g. "
            '\'{"bamdp": {"max_horizon": 4}}\' (validated like adaroll grpo\'s)'
        ),
    )
    seeds: int = field(default=3, metadata=field_help("seeds per allocator (0, 1, ...)"))
    workers: int = field(default=2, metadata=field_help("runs in parallel (processes)"))
    out: str = field(default="runs/compete", metadata=field_help("competition directory"))
    progress: bool = field(default=True, metadata=field_help("show progress"))
    grpo: GRPOConfig = field(default_factory=_competition_defaults)

    def __post_init__(self) -> None:
        specs = self.allocator_list()
        if not specs:
            raise ValueError("allocators is empty: give e.g. --allocators uniform,bamdp")
        if len(set(specs)) != len(specs):
            raise ValueError(f"allocators has duplicates: {specs}")
        for name in ("seeds", "workers"):
            check_config_int(name, getattr(self, name), 1)
        if self.grpo.eval_every < 1:
            raise ValueError(
                f"eval_every must be >= 1 in a competition (its table compares held-out "
                f"curves), got {self.grpo.eval_every!r}"
            )
        kwargs = self.kwargs_by_allocator()
        unknown = sorted(set(kwargs) - set(specs))
        if unknown:
            raise ValueError(
                f"allocator_kwargs names {unknown}, which are not among the allocators {specs}"
            )
        for spec in specs:  # the trainer's own checks (names, files, keywords), now
            self.run_config(spec, 0)

    def allocator_list(self) -> list[str]:
        """The allocator specs, in order."""
        return [s.strip() for s in self.allocators.split(",") if s.strip()]

    def kwargs_by_allocator(self) -> dict[str, dict[str, Any]]:
        """``allocator_kwargs`` parsed: spec -> keyword arguments."""
        if self.allocator_kwargs is None:
            return {}
        try:
            parsed = json.loads(self.allocator_kwargs)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"allocator_kwargs {self.allocator_kwargs!r} is not valid JSON ({exc.msg})"
            ) from None
        if not isinstance(parsed, dict) or not all(isinstance(v, dict) for v in parsed.values()):
            raise ValueError(
                "allocator_kwargs must map allocator specs to objects of keyword arguments, e.g. "
                '\'{"bamdp": {"max_horizon": 4}}\''
            )
        return parsed

    def run_dir(self, allocator: str, seed: int) -> Path:
        """Where the run of ``allocator`` with ``seed`` lives."""
        safe = allocator.replace(":", "_").replace("/", "_")
        return Path(self.out) / "runs" / safe / f"seed{seed}"

    def run_config(self, allocator: str, seed: int) -> GRPOConfig:
        """The ``GRPOConfig`` of one run: ``grpo`` with this allocator, seed and directory; one
        torch thread per run when several run at once (unless ``grpo.threads`` is set)."""
        kwargs = self.kwargs_by_allocator().get(allocator)
        threads = self.grpo.threads
        if threads is None and self.workers > 1:
            threads = 1
        return dataclasses.replace(
            self.grpo,
            allocator=allocator,
            allocator_kwargs=json.dumps(kwargs) if kwargs else None,
            seed=seed,
            out=str(self.run_dir(allocator, seed)),
            save_every=0,
            resume=True,
            progress=False,
            threads=threads,
            device="cpu",
        )


def _run_one(cfg: GRPOConfig) -> str:
    """One run (in a worker or in-process): ``"done"``, ``"stopped"`` (saved after a signal),
    or ``"skipped"`` (a stop was asked before it began)."""
    from trainers.run import main

    if stopping.requested() is not None:
        return "skipped"
    try:
        main(cfg)
    except stopping.RunInterrupted:
        return "stopped"
    return "done"


def _finished(cfg: GRPOConfig) -> bool:
    path = Path(cfg.out) / "summary.json"
    return path.exists() and json.loads(path.read_text()).get("steps") == cfg.steps


def main(cfg: CompeteConfig) -> dict[str, Any]:
    """Run every (allocator, seed) not yet finished, then tabulate and plot.

    On SIGINT/SIGTERM every running run finishes its step and saves a checkpoint, no new run
    starts, and ``stopping.RunInterrupted`` is raised: rerunning the same command resumes.
    """
    from rich.console import Console

    from trainers.models import resolve_model_dir
    from trainers.run import check_model_path

    check_model_path(cfg.grpo.model)  # before the competition directory is written
    console = Console()
    out = Path(cfg.out)
    resolve_model_dir(cfg.grpo.model)  # builds the tiny warm start once, before workers start
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(asdict(cfg), indent=2) + "\n")
    jobs = [cfg.run_config(a, s) for s in range(cfg.seeds) for a in cfg.allocator_list()]
    todo = [j for j in jobs if not _finished(j)]
    threads = jobs[0].torch_threads()
    console.print(
        f"compete: {len(jobs)} runs ({len(jobs) - len(todo)} already done), {cfg.workers} at a "
        f"time, {threads or 'default'} torch thread(s) each"
    )
    start = time.perf_counter()
    forward = _Forward()
    with stopping.StopSignals(on_signal=forward):
        outcomes = _run_all(cfg, todo, console, forward, total=len(jobs))
    signum = stopping.requested()
    if signum is not None or "stopped" in outcomes:
        stopping.clear()
        name = stopping.signal_name(signum or stopping.signal_number("SIGTERM"))
        message = (
            f"adaroll compete: stopped by {name}; finished runs are kept and each interrupted "
            f"run saved a checkpoint: rerun the same command to continue ({out})"
        )
        print(message, flush=True)  # one line, never wrapped
        raise stopping.RunInterrupted(signum or stopping.signal_number("SIGTERM"), message)
    summary = tabulate(cfg)
    summary["wall_minutes"] = (time.perf_counter() - start) / 60
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    console.print((out / "table.md").read_text())
    return summary


def _run_all(
    cfg: CompeteConfig, todo: list[GRPOConfig], console: Any, forward: _Forward, *, total: int
) -> list[str]:
    """Run ``todo`` in-process or in ``cfg.workers`` worker processes; each run's outcome."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    outcomes: list[str] = []
    with Progress(
        "{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=not cfg.progress,
    ) as progress:
        bar = progress.add_task("runs", total=total, completed=total - len(todo))
        if cfg.workers == 1:
            for job in todo:
                outcomes.append(_run_one(job))
                progress.advance(bar)
                if outcomes[-1] == "stopped":
                    break  # the stop was for the whole competition
            return outcomes
        import multiprocessing as mp

        # workers stop cleanly on a signal (stopping.worker_mode)
        pool = mp.get_context("spawn").Pool(cfg.workers, initializer=stopping.worker_mode)
        forward.pool = pool
        try:
            for outcome in pool.imap_unordered(_run_one, todo):
                outcomes.append(outcome)
                progress.advance(bar)
            pool.close()
        except BaseException:
            pool.terminate()
            raise
        finally:
            pool.join()
    return outcomes


class _Forward:
    """Passes a stop signal this process received on to the pool's workers, so that a SIGTERM
    sent to the competition alone reaches its runs (a terminal's Ctrl-C reaches them anyway;
    workers ignore a second signal)."""

    def __init__(self) -> None:
        self.pool: Any = None

    def __call__(self, signum: int) -> None:
        for proc in getattr(self.pool, "_pool", None) or []:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signum)


# --- analysis ---------------------------------------------------------------------------------
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
        mean, half = mean_ci(finals)
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
    plot_accuracy(out, curves, cfg)
    plot_informative(out, runs)
    calib = plot_calibration(out, runs)
    return {"baseline": base, "target_pass@1": target, "rows": rows, "calibration": calib}


def _fmt(x: float | None, spec: str) -> str:
    return "—" if x is None else format(x, spec)


def _pm(mean: float, half: float) -> str:
    """``"31.2 ± 1.4 %"``, or ``"31.2 % (± —)"`` when the interval is undefined (one seed)."""
    if not math.isfinite(half):
        return f"{mean:.1f} % (± —)"
    return f"{mean:.1f} ± {half:.1f} %"


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
            f"{_pm(100 * r['final_pass@1'], 100 * r['ci95'])} | "
            f"{_fmt(r['rollouts_to_target'], ',.0f')} ({r['reached']}) | "
            f"{_fmt(None if r['rollout_saving'] is None else 100 * r['rollout_saving'], '+.1f')}"
            f"{'' if r['rollout_saving'] is None else ' %'} | "
            f"{r['informative_frac']:.3f} | {r['trained_per_step']:.1f} | "
            f"{100 * r['alloc_overhead']:.1f} % | {r['minutes']:.1f} |"
        )
    return "\n".join(lines) + "\n"
