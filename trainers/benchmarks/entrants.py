"""Wall time of a training step for each entrant of a competition, on one otherwise idle process.

What ``scripts/bench_entrants.py`` runs.

A competition's own seconds per step come from runs that share the machine (two at a time on
two cores, evaluations in between), so its time ratios carry the neighbours' load. This benchmark
rebuilds every entrant's run from the competition's recorded ``config.json`` — the same warm
start, task, settings and allocator as its runs, seed ``seed`` — and times them in alternating
slices in one process after ``warmup_steps`` untimed steps each (as ``trainers.benchmarks.rounds``
does for numbers of rounds), with no evaluation and nothing written but the result. Per entrant:
seconds per step and its parts, the allocation's share of the step, gradient rollouts and
distinct informative prompts per step, and the step time relative to the baseline entrant
(``uniform`` unless the competition names another). The load average before and after is recorded
beside, so that "idle" can be checked. The steps timed are the first of a run (from the warm
start), not the late ones: a completion's length and the fitted priors change over a run.

>>> cfg = EntrantsBenchConfig(competition="results/attributed/cell_arith_qwen3/final")
>>> result = main(cfg)  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainers.benchmarks.rounds import markdown_table, time_in_slices
from trainers.grpo import GRPOConfig, field_help
from trainers.grpo.config import check_config_int

#: the JSON file written into ``out``
RESULTS_FILE = "bench_entrants.json"


@dataclass
class EntrantsBenchConfig:
    """Configuration of the entrants' step-time benchmark."""

    competition: str = field(
        default="",
        metadata=field_help(
            "a competition directory of adaroll compete, or its committed evidence folder "
            "(whatever holds its config.json): the entrants and settings timed"
        ),
    )
    entrants: str = field(
        default="", metadata=field_help("comma-separated entrant names ('': all)")
    )
    seed: int | None = field(
        default=None, metadata=field_help("the runs' seed (default: the competition's first)")
    )
    slices: int = field(default=4, metadata=field_help("alternating timed slices per entrant"))
    steps_per_slice: int = field(default=5, metadata=field_help("steps per slice"))
    warmup_steps: int = field(default=3, metadata=field_help("untimed steps per entrant first"))
    threads: int = field(default=1, metadata=field_help("torch threads (the competitions' 1)"))
    out: str = field(default="runs/bench_entrants", metadata=field_help("where the JSON goes"))

    def __post_init__(self) -> None:
        if not self.competition:
            raise ValueError(
                "competition is required: give the directory of an adaroll compete run or its "
                "evidence folder, e.g. --competition results/attributed/cell_arith_qwen3/final"
            )
        for name in ("slices", "steps_per_slice", "threads"):
            check_config_int(name, getattr(self, name), 1)
        check_config_int("warmup_steps", self.warmup_steps, 0)

    def settings(self, scratch: Path) -> tuple[str, dict[str, GRPOConfig]]:
        """``(baseline name, entrant name -> its run)`` from the competition's ``config.json``:
        each run as the competition built it, with this benchmark's seed and threads, a
        directory under ``scratch``, and no evaluation, TensorBoard or progress bar."""
        from adaroll_env.errors import unknown_name
        from trainers.experiments.compete import CompeteConfig
        from trainers.experiments.entrants import Entrant

        comp = CompeteConfig(tabulate=self.competition)
        if comp.trainer != "adaroll":
            raise ValueError(
                f"{self.competition} is a competition inside TRL (trainer {comp.trainer!r}): "
                "time TRL steps with scripts/bench_trl_overhead.py"
            )
        names = comp.names()
        chosen = [n.strip() for n in self.entrants.split(",") if n.strip()] or names
        for n in chosen:
            if n not in names:
                raise unknown_name("entrant", n, names, f"The entrants of {self.competition}.")
        base = comp.baseline or ("uniform" if "uniform" in names else names[0])
        if base not in chosen:
            chosen = [base, *chosen]
        seed = comp.first_seed if self.seed is None else self.seed
        runs = {}
        for n in sorted(chosen, key=lambda n: n != base):  # the baseline first
            run = comp.run_config(n, seed)
            runs[n] = dataclasses.replace(
                run, out=str(scratch / Entrant(n, "").directory_name), resume=False,
                eval_every=0, tensorboard=False, progress=False, threads=self.threads,
            )  # fmt: skip
        return base, runs


def main(cfg: EntrantsBenchConfig) -> dict[str, Any]:
    """Time every entrant in alternating slices; print the table, write ``bench_entrants.json``.
    The runs' directories are scratch, removed at the end."""
    scratch = Path(tempfile.mkdtemp(prefix="bench-entrants-"))
    try:
        return _time(cfg, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _time(cfg: EntrantsBenchConfig, scratch: Path) -> dict[str, Any]:
    base, runs = cfg.settings(scratch)
    load_before = os.getloadavg()
    rows = time_in_slices(runs, cfg.warmup_steps, cfg.slices, cfg.steps_per_slice)
    result = {
        "config": dataclasses.asdict(cfg),
        "baseline": base,
        "seed": next(iter(runs.values())).seed,
        "cpus": os.cpu_count(),
        "load_average_before": list(load_before),
        "load_average_after": list(os.getloadavg()),
        "rows": rows,
    }
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / RESULTS_FILE).write_text(json.dumps(result, indent=2) + "\n")
    print(markdown_table(rows, base=base, label="entrant"), flush=True)
    print(
        f"load average (1, 5, 15 min) before {_load(load_before)}, after "
        f"{_load(result['load_average_after'])}, {result['cpus']} CPUs",
        flush=True,
    )
    return result


def _load(values: Any) -> str:
    return ", ".join(f"{v:.2f}" for v in values)
