"""The former TRL competition's options, now run by ``adaroll compete --trainer trl``.

``scripts/trl_compete.py`` used to train each allocator inside TRL and report held-out pass@1
before and after, on the test split, without resume, in its own JSON. ``adaroll compete
--trainer trl`` replaced it (``trainers.experiments.compete`` running
``trainers.experiments.trl_run``): resumable run directories, held-out curves against the
rollouts generated, paired statistics, C-GRPO as the entrant ``cgrpo``, validation splits. Its
building blocks moved there: the TRL
arguments (``trl_run.trl_arguments``), the task and its calibration prompts (``trl_run.run_task``),
the held-out evaluation (``trl_run.evaluate``) and C-GRPO's rollout count
(``trainers.trl.cgrpo.CGRPOMeter``).

``TrlCompeteConfig`` keeps the script's options so that its command lines still run: ``main``
turns them into the equivalent ``CompeteConfig`` (``compete_config``: the old competition
evaluated before and after training, so ``eval_every`` is the run length), prints the
``adaroll compete`` command that replaces it, and runs that competition.

>>> summary = main(TrlCompeteConfig(steps=10, seeds=1))  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from trainers.experiments.compete import CompeteConfig, equivalent_command


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass
class TrlCompeteConfig:
    """The options of ``scripts/trl_compete.py`` (each maps onto ``adaroll compete``'s)."""

    allocators: str = field(
        default="uniform,bamdp",
        metadata=_help(
            "comma-separated allocator specs; 'cgrpo' runs C-GRPO (the cgrpo extra, TRL 1.14)"
        ),
    )
    seeds: int = field(default=2, metadata=_help("seeds per allocator (0, 1, ...)"))
    steps: int = field(default=400, metadata=_help("optimizer steps per run"))
    batch_size: int = field(default=16, metadata=_help("B: prompts per step"))
    group_size: int = field(default=8, metadata=_help("G: TRL's num_generations"))
    max_completion_length: int = field(default=8, metadata=_help("L: new tokens at most"))
    lr: float = field(default=2e-4, metadata=_help("learning rate (constant)"))
    task_size: int = field(
        default=50_000,
        metadata=_help("arithmetic training prompts (50,000 as adaroll grpo; few repeat them)"),
    )
    eval_size: int = field(default=400, metadata=_help("held-out prompts evaluated"))
    eval_k: int = field(default=4, metadata=_help("samples per held-out prompt"))
    workers: int = field(default=1, metadata=_help("runs at a time (processes)"))
    out: str = field(default="runs/trl_compete", metadata=_help("the competition directory"))
    utility: str = field(
        default="snr(8)", metadata=_help("the allocators' utility, e.g. 'informative'")
    )
    belief_prior: str = field(
        default="fitted", metadata=_help("prior of unseen prompts: 'fitted' or 'fixed'")
    )
    belief_group: str = field(
        default="level",
        metadata=_help("a dataset column grouping fitted priors (e.g. 'level'), or 'none'"),
    )
    calibration_size: int = field(
        default=200,
        metadata=_help(
            "training prompts held out for every entrant, on which cgrpo calibrates (200 as "
            "trl-cgrpo's example holds out)"
        ),
    )
    round_schedule: str = field(
        default="auto",
        metadata=_help(
            "the adaptive allocators' rounds: 'auto' (two equal rounds), 'none' (one rollout "
            "per prompt a round on average, the first TRL competitions) or a spec such as "
            "'0.75,0.25'"
        ),
    )

    def __post_init__(self) -> None:
        self.compete_config()  # every check of adaroll compete --trainer trl, now

    def compete_config(self) -> CompeteConfig:
        """The ``adaroll compete --trainer trl`` competition these options describe."""
        from trainers.experiments.compete import _competition_defaults

        grpo = dataclasses.replace(
            _competition_defaults(),
            steps=self.steps,
            batch_size=self.batch_size,
            group_size=self.group_size,
            max_completion_length=self.max_completion_length,
            lr=float(self.lr),
            task_size=self.task_size,
            eval_size=self.eval_size,
            eval_k=self.eval_k,
            eval_every=self.steps,  # before and after training, as the script did
            utility=self.utility,
            belief_prior=self.belief_prior,  # type: ignore[arg-type]
            belief_group=self.belief_group,
            round_schedule=None if self.round_schedule == "none" else self.round_schedule,
        )
        return CompeteConfig(
            trainer="trl",
            allocators=self.allocators,
            seeds=self.seeds,
            workers=self.workers,
            out=self.out,
            calibration_size=self.calibration_size,
            grpo=grpo,
        )


def main(cfg: TrlCompeteConfig) -> dict[str, Any]:
    """Say what replaced the script, then run ``adaroll compete --trainer trl`` with these
    options; returns the competition's summary."""
    from dataclasses import asdict

    from trainers.experiments.compete import main as compete

    competition = cfg.compete_config()
    print(
        "scripts/trl_compete.py is replaced by adaroll compete --trainer trl (resumable run "
        "directories, held-out curves against the rollouts generated, paired tables); running "
        f"the equivalent competition:\n  {equivalent_command(asdict(competition))}",
        flush=True,
    )
    return compete(competition)


def parse_args(argv: list[str] | None = None) -> TrlCompeteConfig:
    """``TrlCompeteConfig`` from command-line flags (one per field, ``--batch-size`` ...)."""
    from adaroll_env.arguments import parse_config

    return parse_config(TrlCompeteConfig, __doc__.split("\n")[0], argv)  # type: ignore[no-any-return]
