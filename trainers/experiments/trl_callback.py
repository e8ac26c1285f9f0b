"""What a TRL run of ``adaroll compete --trainer trl`` does between its steps: the step records,
the held-out evaluations, the checkpoints and the stop (``trainers.experiments.trl_run`` builds it).

``RunDirectoryCallback`` is a ``transformers.TrainerCallback`` added to the TRL trainer. Around
each optimizer step (``on_step_begin`` .. ``on_step_end``) it measures the step's wall clock
(``step_seconds``; the evaluations, TRL's logging and the checkpoints fall outside it), the
rollouts generated during the step (from a ``GenerationSource``: training completions plus, for
C-GRPO, calibration ones), the rows the step trained on whose advantage is non-zero
(``gradient_rollouts``, counted at TRL's ``_prepare_inputs``) and, every ``update_norm_every``
steps, the norm of the parameter change. It evaluates after every ``eval_every`` steps (and at
step 0 of a fresh run) through ``evaluate``, completes the step's record with TRL's own log of the
step (``on_log``: loss, grad_norm, learning rate, reward, ...) into ``metrics.jsonl``, and asks
TRL to checkpoint every ``save_every`` steps, after ``save_minutes``, at the last step and on a
stop; each checkpoint gets the run's counters and the trainer's extra state (``RUN_STATE_FILE``)
and, written last, its ``COMPLETE`` marker, then only the newest ``keep_checkpoints`` complete
ones are kept.

Steps and generation batches. With ``steps_per_generation`` k and ``num_iterations`` μ one
generation batch (k·B prompts) feeds k·μ optimizer steps: the step that generates it records its
rollouts, rounds and allocation seconds (the others record 0), and every step it feeds records its
informative fraction and its informative prompts divided by k (the share of the batch a step trains
on). Checkpoints (and stops) wait for the end of a generation batch, where a resumed run generates
afresh exactly as the unstopped run does; with k = μ = 1 (the default) every step is one.
"""

from __future__ import annotations

import json
import math
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from transformers import TrainerCallback

from trainers.run import stopping

__all__ = [
    "CHECKPOINT_PREFIX",
    "COMPLETE_FILE",
    "RUN_STATE_FILE",
    "AllocationSource",
    "BatchFigures",
    "CGRPOSource",
    "GenerationSource",
    "RunDirectoryCallback",
    "RunProgress",
    "complete_checkpoints",
]

#: written last into a TRL checkpoint directory once it is whole
COMPLETE_FILE = "COMPLETE"
#: the run's counters and the trainer's extra state, in each TRL checkpoint directory
RUN_STATE_FILE = "adaroll_trl_run.json"
#: TRL's checkpoint directories: ``checkpoint-<step>``
CHECKPOINT_PREFIX = "checkpoint-"


def complete_checkpoints(root: str | Path) -> list[Path]:
    """The whole TRL checkpoints under ``root`` (``checkpoint-<step>`` with ``COMPLETE``), oldest
    first; one a hard kill cut short has no marker and is left out."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = [
        p
        for p in root.iterdir()
        if p.is_dir()
        and p.name.startswith(CHECKPOINT_PREFIX)
        and p.name[len(CHECKPOINT_PREFIX) :].isdigit()
        and (p / COMPLETE_FILE).is_file()
    ]
    return sorted(found, key=lambda p: int(p.name[len(CHECKPOINT_PREFIX) :]))


@dataclass
class BatchFigures:
    """One training generation batch: its prompts, the informative ones among them (a success
    and a failure), its generation rounds and its allocation seconds (NaN: not measured)."""

    prompts: int
    informative_prompts: int
    rounds: int
    alloc_seconds: float


class GenerationSource(Protocol):
    """Where a run's generated rollouts are counted."""

    def generated(self) -> tuple[int, int]:
        """Completions generated so far by this trainer object: (training, calibration)."""

    def batches(self) -> list[BatchFigures]:
        """The training generation batches completed since the last call."""


class AllocationSource:
    """An ``AllocatingGRPOTrainer``'s counts: its ``rollouts_generated`` and its allocation
    records (``uniform`` included: plain TRL's layout)."""

    def __init__(self, trainer: Any) -> None:
        self.trainer = trainer
        self.seen = 0

    def generated(self) -> tuple[int, int]:
        """(training, 0): these trainers calibrate nothing."""
        return int(self.trainer.rollouts_generated), 0

    def batches(self) -> list[BatchFigures]:
        """The allocation records added since the last call."""
        new = int(self.trainer.batches_generated) - self.seen
        self.seen += new
        kept = self.trainer.allocations  # a deque: the newest at its end
        records = [kept[-i] for i in range(min(new, len(kept)), 0, -1)]
        out = []
        for r in records:
            mixed = sum(1 for n, s in zip(r.counts, r.successes, strict=True) if 0 < s < n)
            out.append(BatchFigures(len(r.counts), mixed, r.rounds, float(r.alloc_seconds)))
        return out


class CGRPOSource:
    """A ``CGRPOTrainer``'s counts from its ``trainers.trl.cgrpo.CGRPOMeter``; its stopping
    rule is not timed apart from its generation, so allocation seconds are NaN."""

    def __init__(self, meter: Any) -> None:
        self.meter = meter
        self.seen = 0

    def generated(self) -> tuple[int, int]:
        """(training, calibration) completions the meter counted."""
        return int(self.meter.train_rollouts), int(self.meter.calibration_rollouts)

    def batches(self) -> list[BatchFigures]:
        """The training batches the meter recorded since the last call."""
        m = self.meter
        new = range(self.seen, len(m.prompts))
        self.seen = len(m.prompts)
        return [
            BatchFigures(m.prompts[i], m.informative_prompts[i], m.rounds[i], math.nan) for i in new
        ]


@dataclass
class RunProgress:
    """The run's counters, carried across resumes in each checkpoint: the last step, rollouts
    generated (training and calibration) and training seconds so far."""

    step: int = 0
    rollouts_total: int = 0
    train_rollouts: int = 0
    calibration_rollouts: int = 0
    seconds: float = 0.0


class RunDirectoryCallback(TrainerCallback):  # type: ignore[misc]
    """Step records, evaluations and checkpoints of one TRL run (see the module docstring).

    ``cfg`` is the run's ``TrlRunConfig``; ``log`` its ``trainers.run.callbacks.MetricsLog``;
    ``evaluate()`` returns the evaluation's figures; ``extra_state()`` what goes into each
    checkpoint beside the counters (C-GRPO's conformal state); ``progress`` the counters the run
    resumes from; ``fresh`` whether it starts at step 0 (then step 0 is evaluated)."""

    def __init__(
        self,
        *,
        cfg: Any,
        trainer: Any,
        source: GenerationSource,
        log: Any,
        evaluate: Callable[[], dict[str, Any]],
        progress: RunProgress,
        fresh: bool,
        extra_state: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        self.cfg = cfg
        self.trainer = trainer
        self.source = source
        self.log = log
        self.evaluate_figures = evaluate
        self.progress = progress
        self.fresh = fresh
        self.extra_state = extra_state
        self.first_eval: dict[str, Any] | None = None
        self.last_eval: dict[str, Any] | None = None
        self.stop: str | None = None  #: "time" or a signal's name once the run stops early
        self.reports: list[dict[str, Any]] = []  #: this start's step records
        self.pending: dict[str, Any] | None = None
        self.batch = BatchFigures(1, 0, 0, 0.0)
        self.last_counts = source.generated()
        self.gradient_rows = 0
        self.step_start = time.perf_counter()
        self.start = time.monotonic()
        self.last_save = time.monotonic()
        self.save_due = False
        self.before: list[Any] | None = None
        self._wrap_prepare_inputs()

    # --- what the trainer computes ------------------------------------------------------------
    def _wrap_prepare_inputs(self) -> None:
        """Count the rows with non-zero advantage each training micro-batch hands the loss."""
        trainer = self.trainer
        inner = trainer._prepare_inputs

        def prepare(generation_batch: Any) -> Any:
            inputs = inner(generation_batch)
            if trainer.model.training:
                adv = inputs["advantages"]  # [n] (or [n, T])
                nonzero = adv != 0
                if nonzero.dim() > 1:
                    nonzero = nonzero.flatten(1).any(dim=1)
                self.gradient_rows += int(nonzero.sum().item())
            return inputs

        trainer._prepare_inputs = prepare

    def _params(self) -> list[Any]:
        return [p for p in self.trainer.model.parameters() if p.requires_grad]

    @property
    def generation_steps(self) -> int:
        """Optimizer steps one generation batch feeds (k·μ)."""
        return int(self.cfg.steps_per_generation) * int(self.cfg.num_iterations)

    # --- evaluation ---------------------------------------------------------------------------
    def run_evaluation(self) -> dict[str, Any]:
        """Evaluate now and append the record to ``eval.jsonl``: ``step``, ``rollouts_total``
        (generated so far), ``seconds`` (training seconds so far) and the figures."""
        p = self.progress
        record = {"step": p.step, "rollouts_total": p.rollouts_total, "seconds": p.seconds,
                  **self.evaluate_figures()}  # fmt: skip
        self.log.write("eval.jsonl", record, prefix="eval")
        if self.first_eval is None and self.fresh and p.step == 0:
            self.first_eval = record
        self.last_eval = record
        return record

    # --- TRL's hooks --------------------------------------------------------------------------
    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        """Before the first step of this start: step 0's evaluation on a fresh run."""
        self.progress.step = int(state.global_step)
        self.last_counts = self.source.generated()
        if self.fresh and self.cfg.eval_every and state.global_step == 0:
            self.run_evaluation()
        self.start = self.last_save = time.monotonic()
        return control

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        """The step's clock starts; the weights are copied when its update norm is due."""
        every = int(self.cfg.update_norm_every)
        due = every > 0 and (int(state.global_step) + 1) % every == 0
        self.before = [p.detach().clone() for p in self._params()] if due else None
        self.gradient_rows = 0
        self.step_start = time.perf_counter()
        return control

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        """The step's record (completed by ``on_log``), its evaluation, and whether to save or
        stop."""
        import torch

        seconds = time.perf_counter() - self.step_start
        update_norm = math.nan
        if self.before is not None:
            with torch.no_grad():
                sq = sum(
                    float((p.detach() - b).float().pow(2).sum())
                    for p, b in zip(self._params(), self.before, strict=True)
                )
            update_norm = math.sqrt(sq)
            self.before = None
        train, calibration = self.source.generated()
        d_train, d_calibration = train - self.last_counts[0], calibration - self.last_counts[1]
        self.last_counts = (train, calibration)
        batches = self.source.batches()
        if batches:
            self.batch = BatchFigures(
                sum(b.prompts for b in batches),
                sum(b.informative_prompts for b in batches),
                sum(b.rounds for b in batches),
                sum(b.alloc_seconds for b in batches),
            )
        alloc_seconds = sum(b.alloc_seconds for b in batches)
        p = self.progress
        p.step = int(state.global_step)
        p.train_rollouts += d_train
        p.calibration_rollouts += d_calibration
        p.rollouts_total += d_train + d_calibration
        p.seconds += seconds
        k = int(self.cfg.steps_per_generation)
        self.pending = {
            "step": p.step,
            "rollouts": d_train + d_calibration,
            "rollouts_total": p.rollouts_total,
            "calibration_rollouts": d_calibration,
            "gradient_rollouts": self.gradient_rows,
            "informative_prompts": self.batch.informative_prompts / k,
            "informative_frac": self.batch.informative_prompts / max(self.batch.prompts, 1),
            "rounds": sum(b.rounds for b in batches),
            "step_seconds": seconds,
            "alloc_seconds": alloc_seconds,
            "alloc_overhead": alloc_seconds / max(seconds, 1e-9),
            "update_norm": update_norm,
        }
        if self.cfg.eval_every and p.step % int(self.cfg.eval_every) == 0:
            self.run_evaluation()
        self._decide_save(control, p.step)
        return control

    def _decide_save(self, control: Any, step: int) -> None:
        """Save every ``save_every`` steps, after ``save_minutes``, at the last step and on a
        stop (a signal, or ``max_minutes``); saves and stops wait for the end of a generation
        batch (see the module docstring)."""
        cfg = self.cfg
        now = time.monotonic()
        if cfg.save_every and step % int(cfg.save_every) == 0:
            self.save_due = True
        if cfg.save_minutes is not None and now - self.last_save >= 60.0 * cfg.save_minutes:
            self.save_due = True
        signum = stopping.requested()
        if signum is not None and self.stop is None:
            self.stop = stopping.signal_name(signum)
        elif cfg.max_minutes is not None and now - self.start > 60.0 * cfg.max_minutes:
            self.stop = self.stop or "time"
        boundary = step % self.generation_steps == 0
        if step >= cfg.steps:
            control.should_save = True
            self.stop = None  # it ended by its steps, whatever came during the last one
        elif boundary and (self.save_due or self.stop is not None):
            control.should_save = True
            if self.stop is not None:
                control.should_training_stop = True
        if control.should_save:
            self.save_due = False

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> Any:
        """TRL's log of the step completes its record, written to ``metrics.jsonl``."""
        logs = logs or {}
        if (
            self.pending is not None
            and "loss" in logs
            and self.pending["step"] == state.global_step
        ):
            self._write({**_trl_figures(logs), **self.pending})
        return control

    def _write(self, record: dict[str, Any]) -> None:
        self.log.write("metrics.jsonl", record, prefix="train")
        self.reports.append(record)
        self.pending = None

    def flush(self) -> None:
        """Write a step record TRL's log never completed (none with one log per step)."""
        if self.pending is not None:
            self._write(dict(self.pending))

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        """After TRL's checkpoint: the counters and extra state, then ``COMPLETE``, then the
        oldest complete checkpoints beyond ``keep_checkpoints`` go."""
        self.flush()
        folder = Path(args.output_dir) / f"{CHECKPOINT_PREFIX}{state.global_step}"
        record = {"progress": asdict(self.progress), "extra": self.extra_state() if
                  self.extra_state is not None else None}  # fmt: skip
        (folder / RUN_STATE_FILE).write_text(json.dumps(record) + "\n")
        (folder / COMPLETE_FILE).write_text(json.dumps({"step": int(state.global_step)}) + "\n")
        for old in complete_checkpoints(args.output_dir)[: -int(self.cfg.keep_checkpoints)]:
            shutil.rmtree(old, ignore_errors=True)
        self.last_save = time.monotonic()
        self.save_due = False
        return control

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        """After the last step of this start."""
        self.flush()
        return control


#: TRL log keys kept under their own names in a step record (the rest go under ``trl/``)
_NAMED = {"loss": "loss", "grad_norm": "grad_norm", "learning_rate": "learning_rate",
          "reward": "reward", "reward_std": "reward_std", "kl": "kl", "entropy": "entropy",
          "frac_reward_zero_std": "frac_reward_zero_std",
          "completions/mean_length": "mean_length",
          "completions/clipped_ratio": "clipped_ratio"}  # fmt: skip


def _trl_figures(logs: dict[str, Any]) -> dict[str, float]:
    """TRL's numbers of one step's log: the common ones by the trainer's names, the others
    (``allocation/...``, ``cgrpo/...``, rewards per function) under ``trl/``."""
    out: dict[str, float] = {}
    for key, value in logs.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        out[_NAMED.get(key, f"trl/{key}")] = float(value)
    return out
