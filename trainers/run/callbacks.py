"""What ``adaroll grpo`` does around the steps, as callbacks: metrics, evaluation, checkpoints,
progress.

``trainers.run.grpo_command.main`` builds a ``RunContext`` (config, trainer, run directory, log, the
evaluations so far) and calls each callback's ``on_start`` before the first step, ``on_step``
after every step with the step's report, and ``on_end`` after the last (also after a stop by a
signal, with ``ctx.stop`` naming it). ``default_callbacks(cfg)`` is the standard list; pass your
own list to ``main(cfg, callbacks=...)`` to add or replace one.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainers.grpo.config import GRPOConfig
from trainers.run.checkpoints import CHECKPOINT_PREFIX, checkpoint_dirs, save_checkpoint


@dataclass
class RunContext:
    """What callbacks see of a run (``log`` and output only on rank 0)."""

    cfg: GRPOConfig
    trainer: Any
    out: Path
    console: Any
    log: MetricsLog | None
    resume_step: int | None
    first_eval: dict[str, Any] | None = None
    last_eval: dict[str, Any] | None = None
    reports: list[dict[str, Any]] = field(default_factory=list)
    stop: str = "steps"

    @property
    def main_rank(self) -> bool:
        """True on the process that writes files and prints."""
        return bool(self.trainer.rank == 0)


class Callback:
    """Base of the run's callbacks: each hook does nothing unless overridden."""

    def on_start(self, ctx: RunContext) -> None:
        """Before the first step of this run (after a resume's checkpoint loaded)."""

    def on_step(self, ctx: RunContext, report: dict[str, Any]) -> None:
        """After each step; ``report`` is the step's ``StepReport.as_dict()``."""

    def on_end(self, ctx: RunContext) -> None:
        """After the last step of this run (``ctx.stop``: ``steps``, ``time`` or a signal)."""


class MetricsCallback(Callback):
    """One line per step in ``metrics.jsonl`` (and TensorBoard under ``train/``)."""

    def on_step(self, ctx: RunContext, report: dict[str, Any]) -> None:
        """After each step."""
        if ctx.log is not None:
            ctx.log.write("metrics.jsonl", report, prefix="train")


class EvaluationCallback(Callback):
    """Held-out evaluation at the start of a fresh run, every ``eval_every`` steps and at the end
    (not after a stop by a signal: the stop stays quick, the resumed run evaluates).

    Each record of ``eval.jsonl`` holds ``step``, ``rollouts_total``, ``seconds`` (training
    wall-clock so far: the sum of the steps' ``step_seconds``, so time spent evaluating and
    saving is left out; a resumed run continues the sum of the steps it kept) and the
    evaluation's numbers (``GRPOTrainer.evaluate``); with ``eval_train`` the same numbers on
    that many training prompts, under ``train/``.
    """

    def __init__(self, every: int) -> None:
        self.every = every
        self.seconds = 0.0

    def _evaluate(self, ctx: RunContext) -> None:
        t = ctx.trainer
        rec = {"step": t.step, "rollouts_total": t.rollouts_total, "seconds": self.seconds,
               **t.evaluate()}  # fmt: skip
        if t.cfg.eval_train:
            train = t.evaluate(size=t.cfg.eval_train, split="train")
            rec.update({f"train/{key}": value for key, value in train.items()})
        if ctx.log is not None:
            ctx.log.write("eval.jsonl", rec, prefix="eval")
        if ctx.first_eval is None and ctx.resume_step is None and t.step == 0:
            ctx.first_eval = rec
        ctx.last_eval = rec

    def on_start(self, ctx: RunContext) -> None:
        """Before the first step."""
        kept = read_jsonl(ctx.out / "metrics.jsonl") if ctx.resume_step is not None else []
        self.seconds = float(sum(m["step_seconds"] for m in kept))
        if ctx.resume_step is not None:  # the evaluations kept from before the resume
            evals = read_jsonl(ctx.out / "eval.jsonl")
            if evals:
                ctx.first_eval = evals[0] if evals[0]["step"] == 0 else None
                ctx.last_eval = evals[-1]
        if self.every and ctx.resume_step is None:
            self._evaluate(ctx)

    def on_step(self, ctx: RunContext, report: dict[str, Any]) -> None:
        """After each step."""
        self.seconds += float(report["step_seconds"])
        if self.every and ctx.trainer.step % self.every == 0:
            self._evaluate(ctx)

    def on_end(self, ctx: RunContext) -> None:
        """After the last step."""
        if ctx.stop.startswith("SIG") or not self.every:
            return
        if ctx.last_eval is None or ctx.last_eval["step"] != ctx.trainer.step:
            self._evaluate(ctx)


class CheckpointCallback(Callback):
    """A checkpoint every ``every`` steps (0: only at the end), after any step that ends
    ``minutes`` or more after the last checkpoint (None: by steps only), and at the end of the
    run. All ranks of a data-parallel run save at the same step (the slowest clock decides)."""

    def __init__(self, every: int, minutes: float | None = None) -> None:
        self.every = every
        self.minutes = minutes
        self.last_save = time.monotonic()

    def on_start(self, ctx: RunContext) -> None:
        """Before the first step: the clock of ``minutes`` starts."""
        self.last_save = time.monotonic()

    def _due_by_time(self, ctx: RunContext) -> bool:
        if self.minutes is None:
            return False
        late = 1.0 if time.monotonic() - self.last_save >= 60.0 * self.minutes else 0.0
        if ctx.trainer.world > 1:
            late = ctx.trainer.ranks.sum({"late": late})["late"]
        return late > 0

    def on_step(self, ctx: RunContext, report: dict[str, Any]) -> None:
        """After each step."""
        by_steps = bool(self.every) and ctx.trainer.step % self.every == 0
        if by_steps or self._due_by_time(ctx):
            save_checkpoint(ctx.trainer, ctx.out)
            self.last_save = time.monotonic()

    def on_end(self, ctx: RunContext) -> None:
        """After the last step."""
        existing = checkpoint_dirs(ctx.out)
        here = f"{CHECKPOINT_PREFIX}{ctx.trainer.step:06d}"
        if not existing or existing[-1].name != here:
            save_checkpoint(ctx.trainer, ctx.out)


class ProgressCallback(Callback):
    """A rich progress bar with the step's reward, informative fraction and last pass@1."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.progress: Any = None
        self.task_id: Any = None

    def on_start(self, ctx: RunContext) -> None:
        """Before the first step."""
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=ctx.console,
            disable=not (self.enabled and ctx.main_rank),
            transient=False,
        )
        self.progress.start()
        self.task_id = self.progress.add_task(
            "grpo", total=ctx.cfg.steps, completed=ctx.trainer.step
        )

    def on_step(self, ctx: RunContext, report: dict[str, Any]) -> None:
        """After each step."""
        last = ctx.last_eval
        self.progress.update(
            self.task_id,
            advance=1,
            description=(
                f"grpo reward {report['reward']:.2f} informative {report['informative_frac']:.2f}"
                + (f" pass@1 {last['pass@1']:.3f}" if last else "")
            ),
        )

    def on_end(self, ctx: RunContext) -> None:
        """After the last step."""
        if self.progress is not None:
            self.progress.stop()


def default_callbacks(cfg: GRPOConfig) -> list[Callback]:
    """Metrics, evaluation, checkpoints and progress, as ``cfg`` sets them."""
    return [
        MetricsCallback(),
        EvaluationCallback(cfg.eval_every),
        CheckpointCallback(cfg.save_every, cfg.save_minutes),
        ProgressCallback(cfg.progress),
    ]


# --- the metrics files ------------------------------------------------------------------------
class MetricsLog:
    """Appends one JSON object per line and mirrors numbers to TensorBoard (rank 0 only)."""

    def __init__(self, out: Path, *, tensorboard: bool, resume_step: int | None) -> None:
        self.out = out
        self.writer: Any = None
        for name in ("metrics.jsonl", "eval.jsonl"):
            path = out / name
            if resume_step is not None and path.exists():
                records = read_jsonl(path)
                kept = [r for r in records if r["step"] <= resume_step]
                path.write_text("".join(json.dumps(r) + "\n" for r in kept))
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
    """The records of a run's JSONL file (``trainers.run.run_files.read_records``: a torn last
    line skipped, older metric names and step numbers brought up to date)."""
    from trainers.run.run_files import read_records

    return read_records(path)
