"""``adaroll compete``: allocators compete in real GRPO training from the same starting point.

Who competes is a list of entrants (``trainers.experiments.entrants``): ``--allocators a,b`` (one
entrant per spec) or ``--entrants FILE`` (each entrant a name, an allocator, its keyword
arguments and its own allocation and belief settings). Every (entrant, seed) pair is one
``adaroll grpo`` run with the same model checkpoint, task, data order (the seed), rollout budget
per step and number of steps. The competition directory holds ``runs/<entrant>/seed<k>/`` (each a
full run directory, so a rerun skips finished runs and nothing is lost), then ``results.csv``,
``table.md`` (accuracy, paired differences against ``--baseline`` and mechanism:
``trainers.experiments.statistics``), ``summary.json``, ``accuracy.png`` (held-out pass@1 against
rollouts spent, mean over seeds with a 95 % band), ``informative.png`` (informative fraction per
step) and ``calibration.png`` (the pass rates the trainer observed against the ``rlvr`` profile
of the simulator).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import json
import os
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from adaroll_env.errors import unknown_name
from adaroll_env.output import guarded_output
from trainers.experiments.entrants import (
    ROUND_SETTINGS,
    Entrant,
    check_unique,
    entrants_from_allocators,
    load_entrants,
)
from trainers.experiments.plots import plot_accuracy, plot_calibration, plot_informative
from trainers.experiments.statistics import (
    accuracy_row,
    markdown,
    mechanism,
    paired,
    rollouts_to_reach,
)
from trainers.grpo import GRPOConfig, field_help
from trainers.grpo.config import check_config_int
from trainers.run import stopping

__all__ = ["CompeteConfig", "Entrant", "main", "rollouts_to_reach", "tabulate"]

#: the allocators that compete when neither ``--allocators`` nor ``--entrants`` is given
DEFAULT_ALLOCATORS = "uniform,bamdp,thompson,sb3:pretrained"


def _competition_defaults() -> GRPOConfig:
    """The shared run settings of a competition when none are given: longer runs, rarer and
    larger evaluations than a single ``adaroll grpo`` run's defaults, and a checkpoint every 100
    steps or 10 minutes, whichever comes first, so that a hard kill loses minutes, not a run."""
    return GRPOConfig(steps=1200, eval_every=300, eval_size=400, save_every=100, save_minutes=10.0)


@dataclass
class CompeteConfig:
    """Allocators compete in real GRPO training (same checkpoint, data, seed and budget).

    ``grpo`` holds the settings every run shares; each run's own ``GRPOConfig`` is ``grpo`` with
    the entrant's settings, its allocator and keyword arguments, the seed and the run directory
    filled in (``run_config``). On the command line the shared settings are plain options
    (``--steps``, ``--batch-size``, ...: ``NESTED_FLAGS``). The entrants come from
    ``allocators`` or from an ``entrants`` file, never both; ``resolved_entrants`` is the list
    either gives (written into the competition's ``config.json``).
    """

    #: the ``GRPOConfig`` fields ``adaroll compete`` exposes as options
    NESTED_FLAGS: ClassVar[dict[str, tuple[str, ...]]] = {
        "grpo": (
            "task",
            "task_size",
            "validation_size",
            "model",
            "steps",
            "batch_size",
            "group_size",
            "round_size",
            "rounds",
            "round_schedule",
            "pool_size",
            "pilot",
            "max_group",
            "utility",
            "belief_prior",
            "belief_decay",
            "belief_group",
            "lr",
            "loss_type",
            "dynamic_sampling",
            "scale_rewards",
            "max_completion_length",
            "chat_template",
            "system_prompt",
            "eval_every",
            "eval_split",
            "eval_size",
            "eval_k",
            "eval_train",
            "gradient_noise_every",
            "update_norm_every",
            "save_every",
            "save_minutes",
            "keep_checkpoints",
            "threads",
        )
    }
    #: fields of ``grpo`` the competition sets for each run itself
    PER_RUN: ClassVar[tuple[str, ...]] = ("allocator", "allocator_kwargs", "seed", "out")

    allocators: str | None = field(
        default=None,
        metadata=field_help(
            f"comma-separated allocator specs, one entrant each (default: {DEFAULT_ALLOCATORS};"
            " not with --entrants)"
        ),
    )
    entrants: str | None = field(
        default=None,
        metadata=field_help(
            "YAML or JSON file listing the entrants, each a name, an allocator, its "
            "allocator_kwargs and its own allocation and belief settings (example: "
            "docs/compete/entrants.yaml; not with --allocators)"
        ),
    )
    allocator_kwargs: str | None = field(
        default=None,
        metadata=field_help(
            "JSON object from allocator spec to its constructor's keyword arguments, e.g. "
            '\'{"bamdp": {"max_horizon": 4}}\' (validated like adaroll grpo\'s; with --entrants '
            "they go in the file)"
        ),
    )
    baseline: str | None = field(
        default=None,
        metadata=field_help(
            "the entrant the others are paired against, seed by seed (default: 'uniform' when "
            "it competes, else the first)"
        ),
    )
    seeds: int = field(
        default=3,
        metadata=field_help("seeds per entrant (first_seed, first_seed + 1, ...)"),
    )
    first_seed: int = field(
        default=0,
        metadata=field_help(
            "the first seed: a screen and the final it chooses for should not share seeds "
            "(e.g. screen with --first-seed 100, run the final from 0)"
        ),
    )
    workers: int = field(default=2, metadata=field_help("runs in parallel (processes)"))
    out: str = field(default="runs/compete", metadata=field_help("competition directory"))
    progress: bool = field(default=True, metadata=field_help("show progress"))
    allow_mixed: bool = field(
        default=False,
        metadata=field_help(
            "tabulate runs even when their recorded code commit, task or warm-start weights "
            "differ (refused by default; the table then lists what differs)"
        ),
    )
    stop_grace: float = field(
        default=300.0,
        metadata=field_help(
            "after SIGINT/SIGTERM, seconds a run may take to finish its step and save before "
            "it is killed as stuck (it then resumes from its last periodic checkpoint)"
        ),
    )
    grpo: GRPOConfig = field(default_factory=_competition_defaults)
    resolved_entrants: list[Entrant] = field(
        init=False,
        default_factory=list,
        metadata=field_help("the entrants, from allocators or the entrants file (derived)"),
    )

    def __post_init__(self) -> None:
        if self.entrants is not None:
            if self.allocators is not None:
                raise ValueError(
                    f"--entrants ({self.entrants}) and --allocators ({self.allocators}) both "
                    "given: the entrants file names each entrant's allocator; drop --allocators"
                )
            if self.allocator_kwargs is not None:
                raise ValueError(
                    "--allocator-kwargs with --entrants: give each entrant's keyword arguments "
                    "as allocator_kwargs in the entrants file"
                )
            self.resolved_entrants = load_entrants(self.entrants)
        else:
            specs = self.allocator_list()
            if not specs:
                raise ValueError("allocators is empty: give e.g. --allocators uniform,bamdp")
            if len(set(specs)) != len(specs):
                raise ValueError(f"allocators has duplicates: {specs}")
            kwargs = self.kwargs_by_allocator()
            unknown = sorted(set(kwargs) - set(specs))
            if unknown:
                raise ValueError(
                    f"allocator_kwargs names {unknown}, which are not among the allocators {specs}"
                )
            self.resolved_entrants = entrants_from_allocators(specs, kwargs)
            check_unique(self.resolved_entrants)  # e.g. "a:b" and "a_b" share a directory
        for name in ("seeds", "workers"):
            check_config_int(name, getattr(self, name), 1)
        check_config_int("first_seed", self.first_seed, 0)
        if isinstance(self.stop_grace, bool) or not (
            isinstance(self.stop_grace, (int, float)) and self.stop_grace > 0
        ):
            raise ValueError(
                f"stop_grace must be a positive number of seconds, got {self.stop_grace!r}"
            )
        if self.grpo.eval_every < 1:
            raise ValueError(
                f"eval_every must be >= 1 in a competition (its table compares held-out "
                f"curves), got {self.grpo.eval_every!r}"
            )
        if self.baseline is not None and self.baseline not in self.names():
            raise unknown_name("baseline entrant", self.baseline, self.names(),
                               "The baseline is one of the entrants.")  # fmt: skip
        for e in self.resolved_entrants:  # the trainer's own checks (names, files, keywords)
            try:
                self.run_config(e.name, 0)
            except ValueError as exc:
                raise ValueError(f"entrant {e.name!r}: {exc}") from None

    def allocator_list(self) -> list[str]:
        """The allocator specs of ``allocators`` (its default when neither it nor ``entrants``
        is given), in order; with an entrants file, the entrants' allocators."""
        if self.entrants is not None:
            return [e.allocator for e in self.resolved_entrants]
        text = DEFAULT_ALLOCATORS if self.allocators is None else self.allocators
        return [s.strip() for s in text.split(",") if s.strip()]

    def seed_list(self) -> list[int]:
        """The seeds every entrant runs: ``first_seed`` .. ``first_seed + seeds - 1``."""
        return list(range(self.first_seed, self.first_seed + self.seeds))

    def names(self) -> list[str]:
        """The entrants' names, in order (with ``allocators``, the specs)."""
        return [e.name for e in self.resolved_entrants]

    def entrant(self, name: str) -> Entrant:
        """The entrant called ``name``."""
        for e in self.resolved_entrants:
            if e.name == name:
                return e
        raise unknown_name("entrant", name, self.names())

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

    def run_dir(self, name: str, seed: int) -> Path:
        """Where the run of entrant ``name`` with ``seed`` lives."""
        return Path(self.out) / "runs" / Entrant(name, "").directory_name / f"seed{seed}"

    def run_config(self, name: str, seed: int) -> GRPOConfig:
        """The ``GRPOConfig`` of one run: ``grpo`` with entrant ``name``'s settings, allocator
        and keyword arguments, this seed and directory; one torch thread per run when several
        run at once (unless ``grpo.threads`` is set)."""
        e = self.entrant(name)
        threads = self.grpo.threads
        if threads is None and self.workers > 1:
            threads = 1
        # an entrant's own round setting replaces the shared ones (they exclude each other)
        rounds = {k: None for k in ROUND_SETTINGS} if set(ROUND_SETTINGS) & set(e.settings) else {}
        return dataclasses.replace(
            self.grpo,
            **{**rounds, **e.settings},
            allocator=e.allocator,
            allocator_kwargs=json.dumps(e.allocator_kwargs) if e.allocator_kwargs else None,
            seed=seed,
            out=str(self.run_dir(name, seed)),
            resume=True,
            progress=False,
            threads=threads,
            device="cpu",
        )


def _run_one(cfg: GRPOConfig) -> str:
    """One run (in a worker or in-process): ``"done"``, ``"stopped"`` (saved after a signal),
    or ``"skipped"`` (a stop was asked before it began)."""
    from trainers.run.grpo_command import main

    if stopping.requested() is not None:
        return "skipped"
    try:
        main(cfg)
    except stopping.RunInterrupted:
        return "stopped"
    return "done"


#: a worker's exit status for each outcome (anything else: the run failed, see its run.log)
EXIT_STATUS = {"done": 0, "stopped": 3, "skipped": 4}
#: each run's own log in its run directory: everything its worker printed
RUN_LOG = "run.log"
#: the competition's log: everything the competition printed, whether or not anyone reads it
COMPETE_LOG = "compete.log"


def _worker(cfg: GRPOConfig) -> None:
    """A worker process: one run, its output (file descriptors 1 and 2, so C libraries' too)
    going to the run's ``run.log`` and never to the competition's standard output, which may be
    a pipe whose reader is gone; the outcome is the exit status (``EXIT_STATUS``)."""
    import sys
    import traceback

    stopping.worker_mode()
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    with (out / RUN_LOG).open("a", buffering=1) as log:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        print(f"--- {datetime.now(timezone.utc):%Y-%m-%d %H:%M:%S} UTC: worker {os.getpid()}",
              flush=True)  # fmt: skip
        try:
            outcome = _run_one(cfg)
        except BaseException:
            traceback.print_exc()
            status = 1
        else:
            status = EXIT_STATUS[outcome]
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
    os._exit(status)  # no interpreter teardown: nothing left to wait for


def _finished(cfg: GRPOConfig) -> bool:
    """Whether the run of ``cfg`` is done: its ``DONE`` marker (written last) says all its
    steps; runs written before the marker count by a summary that ended by steps."""
    from trainers.run.grpo_command import read_done

    done = read_done(cfg.out)
    if done is not None:
        return bool(done["steps"] == cfg.steps)
    path = Path(cfg.out) / "summary.json"
    if not path.exists():
        return False
    summary = json.loads(path.read_text())
    return bool(summary.get("steps") == cfg.steps and summary.get("stopped_by") == "steps")


def _check_recorded(jobs: list[GRPOConfig]) -> None:
    """Refuse a run directory that ran with other settings than its entrant now has (an edited
    entrants file or other shared options with the same ``--out``): its numbers would be
    tabulated, or continued, under the wrong name."""
    from trainers.run.checkpoints import config_changes

    for job in jobs:
        path = Path(job.out) / "config.json"
        if not path.exists():
            continue
        changes = config_changes(json.loads(path.read_text()), job.to_dict())
        if changes:
            raise ValueError(
                f"{job.out} ran with other settings ({'; '.join(changes)}): rename the entrant, "
                "choose another --out, or remove that run directory"
            )


def main(cfg: CompeteConfig) -> dict[str, Any]:
    """Run every (entrant, seed) not yet finished, then tabulate and plot.

    Every run checkpoints periodically (``save_every`` steps, ``save_minutes``) and is done
    only by its ``DONE`` marker, so rerunning the same command after any stop, a hard kill
    included, skips the finished runs and resumes the others from their last checkpoints. On
    SIGINT/SIGTERM every running run finishes its step and saves, no new run starts, a run still
    busy ``stop_grace`` seconds later is killed and named, and ``stopping.RunInterrupted`` is
    raised. The output is mirrored to ``compete.log``; each run's own to its ``run.log``.
    """
    from trainers.models.loading import resolve_model_dir
    from trainers.run.grpo_command import check_model_path

    check_model_path(cfg.grpo.model)  # before the competition directory is written
    out = Path(cfg.out)
    jobs = [cfg.run_config(name, s) for s in cfg.seed_list() for name in cfg.names()]
    _check_recorded(jobs)
    resolve_model_dir(cfg.grpo.model)  # builds the tiny warm start once, before workers start
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(asdict(cfg), indent=2) + "\n")
    todo = [j for j in jobs if not _finished(j)]
    threads = jobs[0].torch_threads()
    with guarded_output(out / COMPETE_LOG):
        console = _console()
        console.print(
            f"compete: {len(jobs)} runs ({len(jobs) - len(todo)} already done), {cfg.workers} at "
            f"a time, {threads or 'default'} torch thread(s) each; log: {out / COMPETE_LOG}"
        )
        start = time.perf_counter()
        runner = _Runner(cfg, console)
        with stopping.StopSignals(on_signal=runner.forward):
            outcomes = runner.run(todo, total=len(jobs))
        signum = stopping.requested()
        if signum is not None or "stopped" in outcomes.values() or runner.stuck:
            stopping.clear()
            name = stopping.signal_name(signum or stopping.signal_number("SIGTERM"))
            stuck = "".join(
                f"; {job.out} was stuck after step {_last_step(job)} and was killed after "
                f"{cfg.stop_grace:g} s: it resumes from {_last_checkpoint(job)}"
                for job in runner.stuck
            )
            message = (
                f"adaroll compete: stopped by {name}; finished runs are kept and each "
                f"interrupted run saved a checkpoint{stuck}: rerun the same command to continue "
                f"({out})"
            )
            print(message, flush=True)  # one line, never wrapped
            raise stopping.RunInterrupted(signum or stopping.signal_number("SIGTERM"), message)
        if runner.failed:
            raise RuntimeError(_failure_message(runner.failed))
        summary = tabulate(cfg)
        summary["wall_minutes"] = (time.perf_counter() - start) / 60
        (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        console.print((out / "table.md").read_text())
        console.print(f"competition directory: {out} (table.md, results.csv, summary.json, plots)")
    return summary


def _console() -> Any:
    """A rich console on the (guarded) standard output, 120 columns wide unless a terminal."""
    import sys

    from rich.console import Console

    wide = sys.stdout.isatty()
    return Console(file=sys.stdout, force_terminal=wide or None, width=None if wide else 120)


def _last_step(job: GRPOConfig) -> int:
    from trainers.run.callbacks import read_jsonl

    metrics = read_jsonl(Path(job.out) / "metrics.jsonl")
    return int(metrics[-1]["step"]) if metrics else 0


def _last_checkpoint(job: GRPOConfig) -> str:
    from trainers.run.checkpoints import checkpoint_dirs

    found = checkpoint_dirs(job.out)
    return f"its checkpoint of step {int(found[-1].name.split('-')[-1])}" if found else "step 0"


def _failure_message(failed: list[GRPOConfig]) -> str:
    parts = []
    for job in failed:
        log = Path(job.out) / RUN_LOG
        tail = log.read_text().splitlines()[-12:] if log.exists() else []
        parts.append(f"run {job.out} failed (its log: {log}):\n  " + "\n  ".join(tail))
    return (
        "adaroll compete: "
        + "\n".join(parts)
        + ("\nthe other runs are kept; fix the cause and rerun the same command to continue")
    )


class _Runner:
    """Runs a competition's runs, ``cfg.workers`` at a time, each in a process of its own
    (``_worker``), or in this process with one worker.

    The scheduler only waits on its workers' exit (never on a pipe or a queue), so nothing a
    reader of the output does can stop it. A stop signal is passed on to every worker (each
    finishes its step and saves), no new run starts, and a worker still alive ``stop_grace``
    seconds later is killed and named in ``stuck``. A run that fails stops the competition the
    same way; it is named in ``failed``."""

    def __init__(self, cfg: CompeteConfig, console: Any) -> None:
        self.cfg = cfg
        self.console = console
        self.running: dict[Any, GRPOConfig] = {}  # process -> its run
        self.stop_at: float | None = None
        self.stuck: list[GRPOConfig] = []
        self.failed: list[GRPOConfig] = []

    def forward(self, signum: int) -> None:
        """At the first stop signal: pass it on to the workers and start the stop clock."""
        if self.stop_at is None:
            self.stop_at = time.monotonic()
        for proc in list(self.running):
            with contextlib.suppress(ProcessLookupError, ValueError, AttributeError):
                os.kill(proc.pid, signum)

    def run(self, todo: list[GRPOConfig], *, total: int) -> dict[str, str]:
        """Each run's outcome by run directory (``done``, ``stopped``, ``skipped``,
        ``failed``, ``killed``)."""
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        outcomes: dict[str, str] = {}
        with Progress(
            "{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.console,
            disable=not self.cfg.progress,
        ) as progress:
            bar = progress.add_task("runs", total=total, completed=total - len(todo))
            if self.cfg.workers == 1:
                for job in todo:
                    outcomes[job.out] = _run_one(job)
                    progress.advance(bar)
                    if outcomes[job.out] == "stopped":
                        break  # the stop was for the whole competition
                return outcomes
            self._pool(todo, outcomes, lambda: progress.advance(bar))
        return outcomes

    def _pool(self, todo: list[GRPOConfig], outcomes: dict[str, str], advance: Any) -> None:
        import multiprocessing as mp
        from multiprocessing.connection import wait

        ctx = mp.get_context("spawn")
        queue = list(todo)
        try:
            while queue or self.running:
                while queue and len(self.running) < self.cfg.workers and not self._stopping:
                    job = queue.pop(0)
                    proc = ctx.Process(target=_worker, args=(job,), name=f"run {job.out}")
                    proc.start()
                    self.running[proc] = job
                    self._log(f"started {job.out} (worker {proc.pid})")
                if not self.running:
                    break
                wait([p.sentinel for p in self.running], timeout=0.5)
                for proc in [p for p in self.running if not p.is_alive()]:
                    job = self.running.pop(proc)
                    proc.join()
                    outcome = _outcome(proc.exitcode)
                    outcomes[job.out] = outcome
                    self._log(f"{outcome}: {job.out}")
                    advance()
                    if outcome == "failed":
                        self.failed.append(job)
                        self.forward(stopping.signal_number("SIGTERM"))
                self._watchdog(outcomes)
        finally:
            for proc in list(self.running):  # an error in this process: leave no worker behind
                proc.kill()
                proc.join()
            self.running.clear()

    @property
    def _stopping(self) -> bool:
        return self.stop_at is not None or stopping.requested() is not None

    def _watchdog(self, outcomes: dict[str, str]) -> None:
        if self.stop_at is None and stopping.requested() is not None:
            self.stop_at = time.monotonic()
        if self.stop_at is None or time.monotonic() - self.stop_at < self.cfg.stop_grace:
            return
        for proc, job in list(self.running.items()):
            proc.kill()
            proc.join()
            del self.running[proc]
            self.stuck.append(job)
            outcomes[job.out] = "killed"
            self._log(f"killed: {job.out} did not stop within {self.cfg.stop_grace:g} s")

    def _log(self, text: str) -> None:
        self.console.log(text) if self.cfg.progress else self.console.print(text, highlight=False)


def _outcome(exitcode: int | None) -> str:
    by_status = {status: outcome for outcome, status in EXIT_STATUS.items()}
    return by_status.get(exitcode if exitcode is not None else -1, "failed")


# --- analysis ---------------------------------------------------------------------------------
def _load(cfg: CompeteConfig) -> dict[str, list[dict[str, Any]]]:
    """The finished runs under ``cfg.out``: entrant name -> its runs (``load_run``)."""
    from trainers.experiments.statistics import load_run
    from trainers.run.grpo_command import read_jsonl

    runs: dict[str, list[dict[str, Any]]] = {}
    for name in cfg.names():
        for s in cfg.seed_list():
            d = cfg.run_dir(name, s)
            if not (d / "summary.json").exists():
                continue
            beliefs = d / "beliefs.json"
            runs.setdefault(name, []).append(
                load_run(
                    s,
                    json.loads((d / "summary.json").read_text()),
                    read_jsonl(d / "eval.jsonl"),
                    read_jsonl(d / "metrics.jsonl"),
                    json.loads(beliefs.read_text()) if beliefs.exists() else None,
                )
            )
    return runs


def provenance(cfg: CompeteConfig) -> dict[str, Any]:
    """What produced the tables: the warm start (``model`` as given and a short sha256 of its
    weight files: ``trainers.models.loading.weights_sha256``), the date, the command line (the
    ``adaroll`` command that ran, or ``(called from Python)``), and what the runs themselves
    recorded (``runs``: their commits, tasks and warm-start hashes, checked to agree by
    ``trainers.run.provenance.compare`` unless ``allow_mixed``)."""
    from trainers.cli import invoked_command
    from trainers.models.loading import resolve_model_dir, weights_sha256
    from trainers.run.provenance import compare, read_provenance

    recorded = {
        f"{name} seed {s}": read_provenance(cfg.run_dir(name, s))
        for name in cfg.names()
        for s in cfg.seed_list()
        if (cfg.run_dir(name, s) / "summary.json").exists()
    }
    return {
        "model": cfg.grpo.model,
        "weights_sha256": weights_sha256(resolve_model_dir(cfg.grpo.model)),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": invoked_command() or "(called from Python)",
        "runs": compare(recorded, allow_mixed=cfg.allow_mixed),
    }


def baseline_of(cfg: CompeteConfig, present: list[str]) -> str:
    """The baseline among the entrants with finished runs: ``cfg.baseline``, else ``uniform``
    when present, else the first."""
    if cfg.baseline is not None:
        if cfg.baseline not in present:
            raise ValueError(
                f"baseline {cfg.baseline!r} has no finished runs under {cfg.out}/runs "
                f"(finished: {', '.join(present)}): run it, or pick another --baseline"
            )
        return cfg.baseline
    return "uniform" if "uniform" in present else present[0]


#: the paired columns of a row (empty on the baseline's) -> their key in ``paired``'s result
PAIRED_COLUMNS = {
    "delta_final": "delta_final_mean",
    "delta_final_ci95": "delta_final_ci95",
    "delta_auc": "delta_auc_mean",
    "delta_auc_ci95": "delta_auc_ci95",
    "rollouts_ratio": "rollouts_ratio",
    "seconds_ratio": "seconds_ratio",
    "paired_reached": "reached",
    "wins": "wins",
}


def tabulate(cfg: CompeteConfig) -> dict[str, Any]:
    """Tables, CSV and plots of the finished runs under ``cfg.out``; the summary."""
    runs = _load(cfg)
    out = Path(cfg.out)
    if not runs:
        raise ValueError(f"no finished runs under {out}/runs: run adaroll compete first")
    prov = provenance(cfg)  # refuses runs produced unalike before anything is written
    base = baseline_of(cfg, list(runs))
    target = float(np.mean([r["curve"][-1][1] for r in runs[base]]))
    rows: list[dict[str, Any]] = []
    pairs: dict[str, dict[str, Any]] = {}
    for name, rs in runs.items():
        row = accuracy_row(name, cfg.entrant(name).allocator, rs, target)
        row.update(mechanism(rs))
        row.update(dict.fromkeys(PAIRED_COLUMNS), paired_seeds=0)
        if name != base:
            p = pairs[name] = paired(runs[base], rs)
            row.update({col: p[key] for col, key in PAIRED_COLUMNS.items()})
            row["paired_seeds"] = len(p["seeds"])
        rows.append(row)
    base_reach = next(r["rollouts_to_target"] for r in rows if r["entrant"] == base)
    for row in rows:
        r = row["rollouts_to_target"]
        row["rollout_saving"] = 1.0 - r / base_reach if r is not None and base_reach else None
    with (out / "results.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    (out / "table.md").write_text(markdown(rows, base, target, prov))
    plot_accuracy(out, {name: [r["curve"] for r in rs] for name, rs in runs.items()}, cfg)
    plot_informative(out, runs)
    calib = plot_calibration(out, runs)
    return {
        "provenance": prov,
        "baseline": base,
        "target_pass@1": target,
        "entrants": [asdict(cfg.entrant(name)) for name in runs],
        "rows": rows,
        "paired": pairs,
        "calibration": calib,
    }
