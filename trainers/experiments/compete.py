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
of the simulator). Each run directory also gets ``steps.csv``, the step records the tables read.

``--trainer trl`` runs each (entrant, seed) as one TRL training instead
(``trainers.experiments.trl_run``: ``AllocatingGRPOTrainer`` with the entrant's allocator, plain
TRL for ``uniform``, trl-cgrpo's C-GRPO for ``cgrpo``) writing the same run directory, so that
everything below reads it unchanged; the TRL version goes into each run's provenance and one
competition directory holds one TRL version's runs.

``--resume DIR`` continues a stopped competition with the settings ``DIR/config.json`` recorded
(rerunning the command that started it does the same). ``--tabulate DIR`` rebuilds a competition
from ``DIR/config.json`` and tabulates its runs without running any; ``--evidence DEST`` beside
it copies the small files every table is made from (``EVIDENCE_RUN_FILES`` of each run, the
configs and the command: ``copy_evidence``) to ``DEST`` and tabulates there, so that ``DEST``
can be committed and the tables regenerated from it alone.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import json
import os
import shlex
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar, Literal

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
    STEPS_FILE,
    accuracy_row,
    load_entrant_runs,
    markdown,
    mechanism,
    paired,
    paired_row,
    rollouts_to_reach,
    step_records,
)
from trainers.experiments.trl_run import TRL_FIELDS, LrSchedule, TrlRunConfig, trl_checkpoints
from trainers.grpo import GRPOConfig, field_help
from trainers.grpo.config import ABSENT_MEANS, check_config_int
from trainers.run import stopping
from trainers.trl.cgrpo import CGRPO

__all__ = [
    "CompeteConfig",
    "Entrant",
    "copy_evidence",
    "main",
    "restore_evidence",
    "rollouts_to_reach",
    "tabulate",
    "tabulate_recorded",
]

#: the allocators that compete when neither ``--allocators`` nor ``--entrants`` is given
DEFAULT_ALLOCATORS = "uniform,bamdp,thompson,sb3:pretrained"
#: what trains each run: the trainer's own loop (``adaroll grpo``) or TRL
Trainer = Literal["adaroll", "trl"]
#: the competition's TRL settings (``--trainer trl`` only; ``TrlRunConfig`` fields)
TRL_OPTIONS: tuple[str, ...] = ("lr_schedule", "steps_per_generation", "calibration_size")


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
            "pilot_threshold",
            "max_group",
            "utility",
            "belief_prior",
            "belief_decay",
            "belief_fit",
            "belief_group",
            "lr",
            "loss_type",
            "dynamic_sampling",
            "scale_rewards",
            "beta",
            "num_iterations",
            "micro_batch_size",
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
    trainer: Trainer = field(
        default="adaroll",
        metadata=field_help(
            "what trains each run: 'adaroll' (the trainer's own loop, adaroll grpo) or 'trl' "
            "(one TRL training per run, the trl extra: AllocatingGRPOTrainer with the entrant's "
            "allocator, which for 'uniform' is plain trl.GRPOTrainer bit for bit; the entrant "
            "'cgrpo' is trl-cgrpo's C-GRPO, the cgrpo extra, TRL 1.14 only: .venv-trl114). A "
            "TRL run writes the same run directory (eval.jsonl against the rollouts it "
            "generated, C-GRPO's calibrations included; metrics.jsonl per step; TRL checkpoints "
            "that a rerun resumes), records its TRL version, and pairs with plain TRL of that "
            "version: one competition directory per TRL version. TRL runs take --lr-schedule, "
            "--steps-per-generation and --calibration-size, refuse the settings TRL cannot "
            "honour (dynamic sampling, pools, fixed priors other than Beta(1,1), snr(auto)), and "
            "measure no gradient noise"
        ),
    )
    lr_schedule: LrSchedule = field(
        default="constant",
        metadata=field_help(
            "--trainer trl: the learning-rate schedule over the run (TRL's lr_scheduler_type; "
            "the adaroll trainer's lr is constant)"
        ),
    )
    steps_per_generation: int = field(
        default=1,
        metadata=field_help(
            "--trainer trl: optimizer steps each generation batch feeds (k·B prompts generated "
            "every k steps; TRL's steps_per_generation is k × the gradient accumulation steps)"
        ),
    )
    calibration_size: int = field(
        default=200,
        metadata=field_help(
            "--trainer trl: training prompts held out from training for every entrant, on which "
            "'cgrpo' calibrates (never evaluated on: evaluations read the test or validation "
            "split); held out whether or not cgrpo competes, so it can join later"
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
    tabulate: str | None = field(
        default=None,
        metadata=field_help(
            "tabulate the competition directory DIR without running anything: its settings "
            "(entrants, seeds, shared run settings) come from DIR/config.json, its finished "
            "runs from DIR/runs/<entrant>/seed<k>/ (metrics.jsonl or steps.csv, eval.jsonl, "
            "summary.json, provenance.json); writes table.md, results.csv, summary.json and "
            "the plots into DIR. Only --baseline, --allow-mixed and --evidence go with it"
        ),
    )
    resume: str | None = field(
        default=None,
        metadata=field_help(
            "continue the competition DIR after a stop (Ctrl-C, SIGTERM, a closed session, a "
            "hard kill): every setting (entrants, seeds, shared run settings, trainer) comes "
            "from DIR/config.json, the finished runs are skipped and the others resume from "
            "their last checkpoints; the same as rerunning the command that started it. Only "
            "--workers, --stop-grace, --progress, --baseline, --allow-mixed and --evidence go "
            "with it (its recorded --evidence is kept)"
        ),
    )
    evidence: str | None = field(
        default=None,
        metadata=field_help(
            "DEST for the small files every table is made from (the competition's config.json, "
            "the entrants file, command.txt, and per run config.json, eval.jsonl, steps.csv, "
            "summary.json, provenance.json; no metrics.jsonl, checkpoints, beliefs.json, logs), "
            "tabulated there so that DEST alone regenerates the tables (the calibration plot "
            "needs beliefs.json and is left out). With --tabulate DIR: copy DIR's finished runs. "
            "While a competition runs (or --resume): copy each run as it finishes, and first "
            "restore into --out the finished runs DEST holds and --out lacks, so that a "
            "competition whose DEST is committed continues on a fresh clone"
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
        if self.tabulate is not None and self.resume is not None:
            raise ValueError(
                f"--tabulate ({self.tabulate}) and --resume ({self.resume}) both given: "
                "--resume DIR runs what is left of a competition and tabulates it at the end; "
                "--tabulate DIR only tabulates. Give one"
            )
        if self.tabulate is not None:
            self._read_recorded(Path(self.tabulate), "tabulate")
            return
        if self.resume is not None:
            self._read_recorded(Path(self.resume), "resume")
        elif self.entrants is not None:
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
        if self.evidence is not None and Path(self.evidence).resolve() == Path(self.out).resolve():
            raise ValueError(
                f"--evidence {self.evidence} is the competition directory (--out) itself: give "
                "another directory (e.g. results/<stage>/evidence)"
            )
        self._check_trainer()
        for e in self.resolved_entrants:  # the trainer's own checks (names, files, keywords)
            try:
                self.run_config(e.name, 0)
            except ValueError as exc:
                raise ValueError(f"entrant {e.name!r}: {exc}") from None

    def _check_trainer(self) -> None:
        """``trainer`` and its settings: the TRL ones only with ``trl``, TRL importable, and
        ``cgrpo`` only in TRL with its extra (``require_cgrpo`` names it)."""
        if self.trainer not in ("adaroll", "trl"):
            raise ValueError(f"trainer must be 'adaroll' or 'trl', got {self.trainer!r}")
        cgrpo = [e.name for e in self.resolved_entrants if e.allocator == CGRPO]
        if self.trainer == "adaroll":
            defaults = type(self).__dataclass_fields__
            set_here = [
                f"--{k.replace('_', '-')} {getattr(self, k)!r}"
                for k in TRL_OPTIONS
                if getattr(self, k) != defaults[k].default
            ]
            if set_here:
                raise ValueError(
                    f"{', '.join(set_here)}: TRL settings, which the adaroll trainer does not "
                    "have: add --trainer trl, or drop them"
                )
            if cgrpo:
                raise ValueError(
                    f"entrant {cgrpo[0]!r} is C-GRPO, which trains with trl-cgrpo's trainer: run "
                    "the competition with --trainer trl (C-GRPO needs the cgrpo extra, TRL 1.14: "
                    ".venv-trl114)"
                )
            return
        import importlib.util

        if importlib.util.find_spec("trl") is None:
            raise ImportError(
                '--trainer trl needs TRL: pip install -e ".[trl]" (it pins the supported '
                "releases), or run in .venv-trl114"
            )
        if cgrpo:
            from trainers.trl.cgrpo import require_cgrpo

            require_cgrpo()  # the extra and the TRL line it needs, named

    def _read_recorded(self, directory: Path, flag: Literal["tabulate", "resume"]) -> None:
        """``--tabulate DIR`` or ``--resume DIR`` (``flag``): every setting of the competition
        from ``DIR/config.json`` (the config ``main`` wrote when it ran), ``out`` set to ``DIR``.
        A setting given here that differs from both its default and the recorded value is
        refused (the table, or the runs resumed, would not be the competition's); ``baseline``,
        ``allow_mixed``, ``evidence`` (tabulate) and ``workers``, ``stop_grace``, ``progress``
        (not recorded as results) are this call's."""
        data = _recorded_competition(directory, flag)
        grpo = _recorded_grpo(data["grpo"], directory / "config.json")
        recorded: dict[str, Any] = {
            "allocators": data.get("allocators"),
            "entrants": data.get("entrants"),
            "allocator_kwargs": data.get("allocator_kwargs"),
            "seeds": data.get("seeds"),
            "first_seed": data.get("first_seed", 0),  # competitions before --first-seed: 0
            "trainer": data.get("trainer", "adaroll"),  # competitions before --trainer
            **{k: data.get(k, type(self).__dataclass_fields__[k].default) for k in TRL_OPTIONS},
            "out": str(directory),
        }
        defaults = {f.name: f.default for f in dataclasses.fields(self) if f.name in recorded}
        shared = _competition_defaults()
        given = [
            (name, getattr(self, name))
            for name, value in recorded.items()
            if getattr(self, name) not in (defaults[name], value)
        ] + [
            (name, getattr(self.grpo, name))
            for name in self.NESTED_FLAGS["grpo"]
            if getattr(self.grpo, name) not in (getattr(shared, name), getattr(grpo, name))
        ]
        if given:
            listed = ", ".join(f"--{n.replace('_', '-')} ({v!r})" for n, v in given)
            allowed = (
                "--baseline, --allow-mixed and --evidence go with --tabulate; to run other "
                "settings, run adaroll compete without it"
                if flag == "tabulate"
                else "--workers, --stop-grace, --progress, --baseline, --allow-mixed and "
                "--evidence go with --resume; to run other settings, start another competition "
                "with its own --out"
            )
            raise ValueError(
                f"--{flag} {directory} takes the competition's settings from its config.json; "
                f"drop {listed} (only {allowed})"
            )
        for name, value in recorded.items():
            setattr(self, name, value)
        self.grpo = grpo
        if self.baseline is None:
            self.baseline = data.get("baseline")
        if flag == "resume" and self.evidence is None:
            self.evidence = data.get("evidence")  # a resumed competition keeps its evidence
        self.resolved_entrants = _recorded_entrants(data, directory / "config.json")
        check_unique(self.resolved_entrants)
        check_config_int("seeds", self.seeds, 1)
        check_config_int("first_seed", self.first_seed, 0)
        if self.baseline is not None and self.baseline not in self.names():
            raise unknown_name("baseline entrant", self.baseline, self.names(),
                               f"The entrants of {directory}/config.json.")  # fmt: skip
        if self.evidence is not None and Path(self.evidence).resolve() == directory.resolve():
            raise ValueError(
                f"--evidence {self.evidence} is the competition directory itself: give another "
                "directory (e.g. results/<stage>/evidence)"
            )

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
        run at once (unless ``grpo.threads`` is set). With ``trainer`` ``trl`` it is a
        ``TrlRunConfig``: the same, with the competition's TRL settings (an entrant's own
        replace them) and no gradient-noise measurement (TRL has none)."""
        e = self.entrant(name)
        threads = self.grpo.threads
        if threads is None and self.workers > 1:
            threads = 1
        # an entrant's own round setting replaces the shared ones (they exclude each other)
        rounds = {k: None for k in ROUND_SETTINGS} if set(ROUND_SETTINGS) & set(e.settings) else {}
        own: dict[str, Any] = {
            "allocator": e.allocator,
            "allocator_kwargs": json.dumps(e.allocator_kwargs) if e.allocator_kwargs else None,
            "seed": seed,
            "out": str(self.run_dir(name, seed)),
            "resume": True,
            "progress": False,
            "threads": threads,
            "device": "cpu",
        }
        if self.trainer == "trl":
            shared = {**asdict(self.grpo), "gradient_noise_every": 0,
                      **{k: getattr(self, k) for k in TRL_OPTIONS}}  # fmt: skip
            return TrlRunConfig(**{**shared, **rounds, **e.settings, **own})
        trl_only = sorted(set(e.settings) & set(TRL_FIELDS))
        if trl_only:
            raise ValueError(
                f"{', '.join(trl_only)}: TRL settings, which the adaroll trainer does not have: "
                "run the competition with --trainer trl, or drop them from the entrant"
            )
        return dataclasses.replace(self.grpo, **{**rounds, **e.settings}, **own)


def _run_one(cfg: GRPOConfig) -> str:
    """One run (in a worker or in-process): ``"done"``, ``"stopped"`` (saved after a signal),
    or ``"skipped"`` (a stop was asked before it began)."""
    from trainers.experiments.trl_run import main as trl_main
    from trainers.run.grpo_command import main

    if stopping.requested() is not None:
        return "skipped"
    try:
        trl_main(cfg) if isinstance(cfg, TrlRunConfig) else main(cfg)
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
    """Whether the run of ``cfg`` is done: ``_finished_at`` its directory."""
    return _finished_at(Path(cfg.out), cfg.steps)


def _finished_at(run: Path, steps: int) -> bool:
    """Whether the run directory ``run`` holds a run done after ``steps`` steps: its ``DONE``
    marker (written last) says so; runs written before the marker, and evidence copies (which
    leave the marker out), count by a summary that ended by steps."""
    from trainers.run.grpo_command import read_done

    done = read_done(run)
    if done is not None:
        return bool(done["steps"] == steps)
    path = run / "summary.json"
    if not path.exists():
        return False
    summary = json.loads(path.read_text())
    return bool(summary.get("steps") == steps and summary.get("stopped_by") == "steps")


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
    included (or ``--resume OUT``), skips the finished runs and resumes the others from their
    last checkpoints. On SIGINT/SIGTERM every running run finishes its step and saves, no new
    run starts, a run still busy ``stop_grace`` seconds later is killed and named, and
    ``stopping.RunInterrupted`` is raised. The output is mirrored to ``compete.log``; each run's
    own to its ``run.log``.
    """
    from trainers.models.loading import resolve_model_dir
    from trainers.run.grpo_command import check_model_path

    if cfg.tabulate is not None:
        return tabulate_recorded(cfg)
    check_model_path(cfg.grpo.model)  # before the competition directory is written
    out = Path(cfg.out)
    keys = [(name, s) for s in cfg.seed_list() for name in cfg.names()]
    jobs = [cfg.run_config(name, s) for name, s in keys]
    restored = restore_evidence(cfg, dict(zip(keys, jobs, strict=True)))
    _check_recorded(jobs)
    _check_trainer_version(cfg)
    resolve_model_dir(cfg.grpo.model)  # builds the tiny warm start once, before workers start
    out.mkdir(parents=True, exist_ok=True)
    # the competition's settings, the same however it was (re)started
    recorded = {**asdict(cfg), "resume": None}
    (out / "config.json").write_text(json.dumps(recorded, indent=2) + "\n")
    _record_command(out, recorded)
    todo = [j for j in jobs if not _finished(j)]
    threads = jobs[0].torch_threads()
    with guarded_output(out / COMPETE_LOG):
        console = _console()
        console.print(
            f"compete: {len(jobs)} runs ({len(jobs) - len(todo)} already done), {cfg.workers} at "
            f"a time, {threads or 'default'} torch thread(s) each; log: {out / COMPETE_LOG}",
            highlight=False,
            soft_wrap=True,  # one line: the log path is never cut in two
        )
        if restored:
            console.print(
                f"restored from the evidence in {cfg.evidence}: {', '.join(restored)}",
                highlight=False,
                soft_wrap=True,  # one line, however long the path: the runs stay greppable
            )
        start = time.perf_counter()
        by_out = {job.out: key for key, job in zip(keys, jobs, strict=True)}

        def keep(job: GRPOConfig) -> None:  # a finished run's small files, into the evidence
            if cfg.evidence is not None:
                name, seed = by_out[job.out]
                step_records(job.out)  # its steps.csv, which stands in for metrics.jsonl
                copy_evidence(cfg, Path(cfg.evidence), {name: [seed]})

        runner = _Runner(cfg, console, on_done=keep)
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
                f"interrupted run saved a checkpoint{stuck}: to continue, rerun the same command "
                f"or adaroll compete --resume {out}"
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
        if cfg.evidence is not None:
            _evidence_tables(cfg, summary, console)
    return summary


def _check_trainer_version(cfg: CompeteConfig) -> None:
    """With ``--trainer trl``: refuse a competition directory whose runs were trained by
    another TRL version than this environment's (their entrants pair with plain TRL of their own
    version: one directory per TRL version)."""
    if cfg.trainer != "trl":
        return
    from trainers.experiments.trl_run import trainer_label
    from trainers.run.provenance import read_provenance

    here = trainer_label()
    other: dict[str, list[str]] = {}
    for name in cfg.names():
        for s in cfg.seed_list():
            for start in read_provenance(cfg.run_dir(name, s)) or []:
                label = start.get("trainer") or "adaroll"
                if label != here:
                    other.setdefault(label, []).append(f"{name} seed {s}")
    if other:
        found = "; ".join(f"{k}: {', '.join(sorted(set(v)))}" for k, v in other.items())
        raise ValueError(
            f"{cfg.out} holds runs of another trainer ({found}) and this environment trains with "
            f"{here}: each TRL version's entrants pair with plain TRL of the same version, so give "
            f"this version its own competition directory (--out {cfg.out}-{here.replace(' ', '')})"
        )


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

    found = trl_checkpoints(job.out) if isinstance(job, TrlRunConfig) else checkpoint_dirs(job.out)
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
        + (
            "\nthe other runs are kept; fix the cause and rerun the same command (or adaroll "
            "compete --resume with the competition directory) to continue"
        )
    )


class _Runner:
    """Runs a competition's runs, ``cfg.workers`` at a time, each in a process of its own
    (``_worker``), or in this process with one worker.

    The scheduler only waits on its workers' exit (never on a pipe or a queue), so nothing a
    reader of the output does can stop it. A stop signal is passed on to every worker (each
    finishes its step and saves), no new run starts, and a worker still alive ``stop_grace``
    seconds later is killed and named in ``stuck``. A run that fails stops the competition the
    same way; it is named in ``failed``."""

    def __init__(
        self, cfg: CompeteConfig, console: Any, on_done: Callable[[GRPOConfig], None] | None = None
    ) -> None:
        self.cfg = cfg
        self.console = console
        self.on_done = on_done  # called with each run that finished
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
                    self._finished(job, outcomes[job.out])
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
                    self._finished(job, outcome)
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

    def _finished(self, job: GRPOConfig, outcome: str) -> None:
        """``on_done`` for a run that finished; a failure there is logged, not raised (the
        other runs go on)."""
        if outcome != "done" or self.on_done is None:
            return
        try:
            self.on_done(job)
        except (OSError, ValueError) as exc:
            self._log(f"warning: {job.out} finished, but keeping its evidence failed: {exc}")

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
#: the files of a run directory that ``--evidence`` copies: every table is made from them
EVIDENCE_RUN_FILES = ("config.json", "eval.jsonl", STEPS_FILE, "summary.json", "provenance.json")
#: the competition's record of the commands that ran it (one line per start)
COMMAND_FILE = "command.txt"


def _recorded_competition(directory: Path, flag: str) -> dict[str, Any]:
    """``directory/config.json``, the config ``main`` wrote, checked to be a competition's
    (``flag``: the option that named the directory, for the messages)."""
    path = directory / "config.json"
    if not path.is_file():
        raise ValueError(
            f"--{flag} {directory}: no config.json there, so it is not a competition directory "
            "of adaroll compete (config.json and runs/<entrant>/seed<k>/): give the --out of a "
            "competition"
        )
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc.msg}, line {exc.lineno})") from None
    if not (isinstance(data, dict) and isinstance(data.get("grpo"), dict) and data.get("seeds")):
        raise ValueError(
            f"{path} is not the config.json of adaroll compete (it needs 'grpo' and 'seeds'): "
            "is it a run directory of adaroll grpo? Give the competition directory above it"
        )
    return data


def _recorded_grpo(data: dict[str, Any], where: Path) -> GRPOConfig:
    """The shared run settings recorded in a competition's config.json (fields this version no
    longer has are ignored; fields it added since take what such a competition ran with,
    ``ABSENT_MEANS``, else their competition defaults)."""
    known = {f.name for f in dataclasses.fields(GRPOConfig) if f.init}
    absent = {k: v for k, v in ABSENT_MEANS.items() if k not in data}
    try:
        return dataclasses.replace(
            _competition_defaults(), **absent, **{k: v for k, v in data.items() if k in known}
        )
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: its shared run settings ('grpo') are invalid: {exc}") from None


def _recorded_entrants(data: dict[str, Any], where: Path) -> list[Entrant]:
    """The entrants that ran: ``resolved_entrants`` of the config, or for competitions written
    before entrants were recorded, one per spec of ``allocators`` (its default when unset)."""
    recorded = data.get("resolved_entrants")
    if recorded is None:
        specs = [s.strip() for s in (data.get("allocators") or DEFAULT_ALLOCATORS).split(",")]
        kwargs = json.loads(data["allocator_kwargs"]) if data.get("allocator_kwargs") else {}
        return entrants_from_allocators([s for s in specs if s], kwargs)
    if not isinstance(recorded, list) or not all(
        isinstance(e, dict) and e.get("name") and e.get("allocator") for e in recorded
    ):
        raise ValueError(
            f"{where}: resolved_entrants must be a list of entrants, each with a name and an "
            f"allocator; got {str(recorded)[:200]}"
        )
    return [
        Entrant(str(e["name"]), str(e["allocator"]), dict(e.get("allocator_kwargs") or {}),
                dict(e.get("settings") or {}))
        for e in recorded
    ]  # fmt: skip


def equivalent_command(config: dict[str, Any]) -> str:
    """An ``adaroll compete`` command that runs the competition ``config`` (a recorded
    ``asdict(CompeteConfig)``): every option whose value differs from its default. Settings no
    option sets (a Python caller's) follow on a comment line."""
    defaults = CompeteConfig.__dataclass_fields__
    shared = dataclasses.asdict(_competition_defaults())
    grpo = config.get("grpo", {})
    flags = CompeteConfig.NESTED_FLAGS["grpo"]
    items = [
        (name, config[name], f.default)
        for name, f in defaults.items()
        if f.init and name in config and name not in ("grpo", "tabulate", "evidence", "resume")
    ] + [(name, grpo[name], shared[name]) for name in flags if name in grpo]
    argv = ["adaroll", "compete"]
    for name, value, default in items:
        if value == default:
            continue
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            argv.append(flag if value else "--no-" + name.replace("_", "-"))
        else:
            argv += [flag, "none" if value is None else str(value)]
    unset = {
        k: v
        for k, v in grpo.items()
        if k in shared and k not in flags and k not in CompeteConfig.PER_RUN and v != shared[k]
    }
    extra = f"\n# and, set from Python (no option): {unset}" if unset else ""
    return shlex.join(argv) + extra


def _record_command(out: Path, config: dict[str, Any]) -> None:
    """Append this start's command line (or, called from Python, an equivalent one) to the
    competition's ``command.txt``."""
    from trainers.cli import invoked_command

    command = invoked_command() or f"(called from Python) {equivalent_command(config)}"
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with (out / COMMAND_FILE).open("a") as fh:
        fh.write(f"{date}: {command}\n")


def _load(cfg: CompeteConfig) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    """The finished runs under ``cfg.out`` (entrant name -> its runs: ``load_run_dir``, which
    writes each run's ``steps.csv``), and the runs left out because a signal stopped them
    before their last step."""
    runs: dict[str, list[dict[str, Any]]] = {}
    left_out = []
    for name in cfg.names():
        found, stopped = load_entrant_runs(cfg.run_dir(name, 0).parent, cfg.seed_list())
        if found:
            runs[name] = found
        left_out += [f"{name} {what}" for what in stopped]
    return runs, left_out


def provenance(cfg: CompeteConfig, labels: list[tuple[str, int]] | None = None) -> dict[str, Any]:
    """What produced the tables: the warm start (``model`` as given and a short sha256 of its
    weight files: the one the runs recorded, else that of ``model`` here:
    ``trainers.models.loading.weights_sha256``), the date, the command line (the ``adaroll``
    command that ran, or ``(called from Python)``), and what the runs (``labels``: entrant and
    seed; default every run with a summary) recorded (``runs``: their commits, tasks and
    warm-start hashes, checked to agree by ``trainers.run.provenance.compare``, and their
    trainers, ``"adaroll"`` or ``"trl <version>"``, by ``_compare_trainers``, unless
    ``allow_mixed``)."""
    from trainers.cli import invoked_command
    from trainers.run.provenance import compare, read_provenance

    if labels is None:
        labels = [
            (name, s)
            for name in cfg.names()
            for s in cfg.seed_list()
            if (cfg.run_dir(name, s) / "summary.json").exists()
        ]
    recorded = {f"{name} seed {s}": read_provenance(cfg.run_dir(name, s)) for name, s in labels}
    runs = compare(recorded, allow_mixed=cfg.allow_mixed)
    runs["trainer"] = _compare_trainers(recorded, allow_mixed=cfg.allow_mixed)
    return {
        "model": cfg.grpo.model,
        "weights_sha256": _weights_hash(cfg, runs),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": invoked_command() or "(called from Python)",
        "runs": runs,
    }


def _compare_trainers(
    recorded: dict[str, list[dict[str, Any]] | None], *, allow_mixed: bool
) -> list[str]:
    """The trainers the runs recorded (``"adaroll"`` where a start names none, ``"trl 1.16.0"``
    for a TRL run); refuses more than one unless ``allow_mixed``, naming the runs of each."""
    holders: dict[str, list[str]] = {}
    for label, starts in recorded.items():
        for start in starts or []:
            names = holders.setdefault(str(start.get("trainer") or "adaroll"), [])
            if label not in names:
                names.append(label)
    if len(holders) > 1 and not allow_mixed:
        listed = "; ".join(
            f"{t!r}: {', '.join(v[:4])}{' …' if len(v) > 4 else ''}" for t, v in holders.items()
        )
        raise ValueError(
            f"these runs were trained by different trainers ({listed}), so their table would "
            "compare more than the entrants: each TRL version's entrants pair with plain TRL of "
            "the same version (one competition directory per TRL version); rerun the odd ones "
            "out, or pass --allow-mixed to tabulate them anyway"
        )
    return list(holders)


def _weights_hash(cfg: CompeteConfig, runs: dict[str, Any]) -> str | None:
    """The short warm-start hash every run recorded; where they did not all record one, that
    of ``cfg.grpo.model`` here ("not recorded" when it is not here either)."""
    from trainers.models.loading import resolve_model_dir, weights_sha256

    hashes = runs["weights_sha256"]
    if len(hashes) == 1 and hashes[0] and not runs["unknown"]:
        return str(hashes[0])[:12]
    try:
        return weights_sha256(resolve_model_dir(cfg.grpo.model))
    except (OSError, ValueError):
        return f"not recorded, and {cfg.grpo.model} is not here"


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


def tabulate(cfg: CompeteConfig) -> dict[str, Any]:
    """Tables, CSV and plots of the finished runs under ``cfg.out``; the summary."""
    runs, left_out = _load(cfg)
    out = Path(cfg.out)
    if not runs:
        raise ValueError(f"no finished runs under {out}/runs: run adaroll compete first")
    labels = [(name, r["seed"]) for name, rs in runs.items() for r in rs]
    prov = provenance(cfg, labels)  # refuses runs produced unalike before anything is written
    base = baseline_of(cfg, list(runs))
    target = float(np.mean([r["curve"][-1][1] for r in runs[base]]))
    rows: list[dict[str, Any]] = []
    pairs: dict[str, dict[str, Any]] = {}
    for name, rs in runs.items():
        row = accuracy_row(name, cfg.entrant(name).allocator, rs, target)
        row.update(mechanism(rs))
        if name != base:
            pairs[name] = paired(runs[base], rs)
        row.update(paired_row(pairs.get(name)))
        rows.append(row)
    base_reach = next(r["rollouts_to_target"] for r in rows if r["entrant"] == base)
    for row in rows:
        r = row["rollouts_to_target"]
        row["rollout_saving"] = 1.0 - r / base_reach if r is not None and base_reach else None
    with (out / "results.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    plot_accuracy(out, {name: [r["curve"] for r in rs] for name, rs in runs.items()}, cfg)
    plot_informative(out, runs)
    calib = plot_calibration(out, runs)
    notes = []
    if left_out:
        notes.append(f"Left out, unfinished: {'; '.join(left_out)}.")
    if calib is None:
        notes.append(
            "No calibration plot: no run holds beliefs.json (an evidence copy leaves it out; "
            "the competition directory's runs hold it)."
        )
    (out / "table.md").write_text(markdown(rows, base, target, prov, notes))
    return {
        "provenance": prov,
        "baseline": base,
        "target_pass@1": target,
        "entrants": [asdict(cfg.entrant(name)) for name in runs],
        "runs": {name: [r["seed"] for r in rs] for name, rs in runs.items()},
        "left_out": left_out,
        "rows": rows,
        "paired": pairs,
        "calibration": calib,
    }


def copy_evidence(cfg: CompeteConfig, dest: Path, runs: dict[str, list[int]]) -> list[Path]:
    """Copy to ``dest`` the small files the tables of the competition ``cfg`` are made from:
    its ``config.json``, its entrants file (when it still lists the entrants that ran),
    ``command.txt`` (the recorded commands, or one rebuilt from the config:
    ``equivalent_command``) and, for each run of ``runs`` (entrant -> seeds), the
    ``EVIDENCE_RUN_FILES`` it has. Returns the files written."""
    src = Path(cfg.out)
    _check_evidence_dir(dest)
    dest.mkdir(parents=True, exist_ok=True)
    written = [Path(shutil.copy2(src / "config.json", dest / "config.json"))]
    config = json.loads((src / "config.json").read_text())
    command = src / COMMAND_FILE
    if command.is_file():
        text = command.read_text()
    else:
        text = (
            "# No command was recorded (competitions before command.txt); this one, rebuilt "
            "from config.json (every option that differs from its default), runs the same "
            f"competition:\n{equivalent_command(config)}\n"
        )
    entrants = Path(cfg.entrants) if cfg.entrants else None
    if entrants is not None and entrants.is_file():
        try:
            same = load_entrants(entrants) == cfg.resolved_entrants
        except ValueError:
            same = False
        if same:
            written.append(Path(shutil.copy2(entrants, dest / entrants.name)))
        else:
            text += (
                f"# {entrants} no longer lists the entrants that ran: not copied; config.json's "
                "resolved_entrants holds them\n"
            )
    (dest / COMMAND_FILE).write_text(text)
    written.append(dest / COMMAND_FILE)
    for name, seeds in runs.items():
        for s in seeds:
            run = cfg.run_dir(name, s)
            to = dest / run.relative_to(src)
            to.mkdir(parents=True, exist_ok=True)
            for file in EVIDENCE_RUN_FILES:
                if (run / file).is_file():
                    written.append(Path(shutil.copy2(run / file, to / file)))
    return written


def _check_evidence_dir(dest: Path) -> None:
    """Refuse an evidence destination that holds other files than an evidence copy."""
    if dest.exists() and any(dest.iterdir()) and not (dest / "config.json").is_file():
        found = sorted(p.name for p in dest.iterdir())[:8]
        raise ValueError(
            f"--evidence {dest} already holds other files ({', '.join(found)}): give a new or "
            "empty directory, or an earlier evidence copy to refresh"
        )


def restore_evidence(cfg: CompeteConfig, jobs: dict[tuple[str, int], GRPOConfig]) -> list[str]:
    """Before a competition runs with ``--evidence DEST``: copy into ``--out`` every finished
    run ``DEST`` holds whose directory under ``--out`` is missing or empty (a fresh clone, where
    only the committed evidence survived), so that it is not run again. ``jobs``: (entrant,
    seed) -> its run config. A run ``DEST`` holds with other settings than its entrant has now,
    or one that ``--out`` has started while ``DEST`` holds it finished, is refused with the
    fix. ``DEST``'s ``command.txt`` comes along when ``--out`` has none, so that the commands of
    the earlier starts stay on record when this one's is appended. Returns the runs restored,
    as "entrant seed k"."""
    from trainers.run.checkpoints import config_changes

    if cfg.evidence is None:
        return []
    dest, out = Path(cfg.evidence), Path(cfg.out)
    _check_evidence_dir(dest)  # before hours of runs, not after the first
    found: list[tuple[str, Path, Path]] = []  # checked first, copied only if all pass
    for (name, seed), job in jobs.items():
        run = Path(job.out)
        kept = dest / run.relative_to(out)
        if _finished(job) or not _finished_at(kept, job.steps):
            continue
        recorded = kept / "config.json"
        changes = (
            config_changes(json.loads(recorded.read_text()), job.to_dict())
            if recorded.is_file()
            else ["it has no config.json"]
        )
        if changes:
            raise ValueError(
                f"--evidence {dest}: {kept} ran with other settings than entrant {name!r} has "
                f"now ({'; '.join(changes)}): rename the entrant, or give another --evidence"
            )
        if run.is_dir() and any(run.iterdir()):
            raise ValueError(
                f"{run} holds a started run of entrant {name!r}, seed {seed}, and --evidence "
                f"{kept} holds the same run finished: remove {run} to use the finished one, or "
                f"remove {kept} to finish this one"
            )
        found.append((f"{name} seed {seed}", kept, run))
    history = out / COMMAND_FILE
    if (dest / COMMAND_FILE).is_file() and not history.is_file():
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy2(dest / COMMAND_FILE, history)
    for _, kept, run in found:
        run.mkdir(parents=True, exist_ok=True)
        for file in EVIDENCE_RUN_FILES:
            if (kept / file).is_file():
                shutil.copy2(kept / file, run / file)
    return [label for label, _, _ in found]


def _evidence_tables(cfg: CompeteConfig, summary: dict[str, Any], console: Any) -> None:
    """Copy the finished runs of ``summary`` to ``cfg.evidence`` (``copy_evidence``) and
    tabulate the copy; its summary goes under ``evidence`` of ``summary``."""
    assert cfg.evidence is not None
    dest = Path(cfg.evidence)
    files = copy_evidence(cfg, dest, summary["runs"])
    copy = CompeteConfig(tabulate=str(dest), baseline=cfg.baseline, allow_mixed=cfg.allow_mixed)
    summary["evidence"] = tabulate(copy)
    _write_summary(dest, summary["evidence"])
    size = sum(f.stat().st_size for f in files)
    console.print(
        f"evidence: {dest} ({len(files)} files, {size / 1e6:.2f} MB, tables regenerated from "
        "them alone)",
        soft_wrap=True,
    )


def _write_summary(out: Path, summary: dict[str, Any]) -> None:
    """``summary.json``, keeping the ``wall_minutes`` of the run that wrote it first."""
    path = out / "summary.json"
    if path.is_file() and "wall_minutes" not in summary:
        with contextlib.suppress(json.JSONDecodeError, AttributeError):
            wall = json.loads(path.read_text()).get("wall_minutes")
            if wall is not None:
                summary["wall_minutes"] = wall
    path.write_text(json.dumps(summary, indent=2) + "\n")


def tabulate_recorded(cfg: CompeteConfig) -> dict[str, Any]:
    """``adaroll compete --tabulate DIR [--evidence DEST]``: tabulate DIR's finished runs (no
    run starts); with ``evidence``, copy the small files (``copy_evidence``) and tabulate the
    copy too, its summary under ``evidence`` of the returned one."""
    out = Path(cfg.out)
    summary = tabulate(cfg)
    _write_summary(out, summary)
    console = _console()
    console.print((out / "table.md").read_text())
    console.print(f"tabulated: {out} (table.md, results.csv, summary.json, plots)")
    if cfg.evidence is not None:
        _evidence_tables(cfg, summary, console)
    return summary
