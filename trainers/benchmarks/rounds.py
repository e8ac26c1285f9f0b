"""Wall time of a training step against the number of allocation rounds.

What ``scripts/bench_rounds.py`` runs.

A round costs one generation call (on a GPU with long completions, the latency of the longest
completion of the round), so an adaptive allocator's gain in gradient-carrying rollouts has a
wall-clock price. This benchmark builds one ``GRPOTrainer`` per setting — ``uniform`` (one round)
and the adaptive allocator with each number of equal rounds (or rounds schedule) in ``rounds`` —
from the same weights, task and seed, and times them in alternating slices in one process (so
machine noise falls on all alike), after ``warmup_steps`` untimed steps each. Per setting it reports
seconds per step and its parts (generation, update, allocation), the allocation's share of the step,
gradient rollouts and distinct informative prompts per step, and the step time relative to
``uniform``. Every trainer trains as it goes (its own copy of the weights), so later slices see
later policies; the slices interleave, so all settings see policies of the same age.

>>> cfg = RoundsBenchConfig(rounds="1,2", slices=1, steps_per_slice=1)
>>> result = main(cfg)  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from trainers.grpo import GRPOConfig, field_help
from trainers.grpo.config import check_config_int

#: the JSON file written into ``out``
RESULTS_FILE = "bench_rounds.json"


def _defaults() -> GRPOConfig:
    """The competition's adaptive settings: bamdp, snr(8), level-grouped fitted priors."""
    return GRPOConfig(
        allocator="bamdp",
        utility="snr(8)",
        belief_prior="fitted",
        belief_group="level",
        threads=1,
        eval_every=0,
        tensorboard=False,
        progress=False,
        device="cpu",
    )


@dataclass
class RoundsBenchConfig:
    """Configuration of the rounds benchmark (``grpo``: the adaptive setting's run)."""

    NESTED_FLAGS: ClassVar[dict[str, tuple[str, ...]]] = {
        "grpo": (
            "allocator",
            "utility",
            "belief_prior",
            "belief_group",
            "batch_size",
            "group_size",
            "pool_size",
            "model",
            "seed",
            "threads",
        )
    }

    rounds: str = field(
        default="1,2,3,4,8",
        metadata=field_help(
            "comma-separated numbers of equal rounds; a value with '+' is a rounds schedule "
            "(round sizes in rollouts summing to the budget after the pilot, e.g. "
            "'1,2,384+128' at N = 512, as --round-schedule)"
        ),
    )
    slices: int = field(default=4, metadata=field_help("alternating timed slices per setting"))
    steps_per_slice: int = field(default=5, metadata=field_help("steps per slice"))
    warmup_steps: int = field(default=3, metadata=field_help("untimed steps per setting first"))
    out: str = field(default="runs/bench_rounds", metadata=field_help("where the JSON goes"))
    grpo: GRPOConfig = field(default_factory=_defaults)

    def __post_init__(self) -> None:
        for name in ("slices", "steps_per_slice"):
            check_config_int(name, getattr(self, name), 1)
        check_config_int("warmup_steps", self.warmup_steps, 0)
        self.round_list()

    def round_list(self) -> list[int | str]:
        """The numbers of rounds (ints) and rounds schedules ("384+128"), checked (each
        number >= 1, each schedule a valid spec for the budget, no duplicates)."""
        values: list[int | str] = []
        for x in (x.strip() for x in self.rounds.split(",")):
            if not x:
                continue
            if "+" in x:
                values.append(x.replace(" ", ""))
                continue
            try:
                values.append(int(x))
            except ValueError:
                raise ValueError(
                    f"rounds must be comma-separated integers or schedules such as "
                    f"'1,2,384+128', got {self.rounds!r}"
                ) from None
        ints = [v for v in values if isinstance(v, int)]
        if not values or (ints and min(ints) < 1) or len(set(values)) != len(values):
            raise ValueError(
                f"rounds must be distinct integers >= 1 or schedules such as '1,2,384+128', "
                f"got {self.rounds!r}"
            )
        for v in values:  # each setting's GRPOConfig checks its schedule against the budget
            self._config(v)
        return values

    def _config(self, r: int | str) -> GRPOConfig:
        if isinstance(r, str):
            return dataclasses.replace(
                self.grpo, rounds=None, round_size=None, round_schedule=r.replace("+", ",")
            )
        return dataclasses.replace(self.grpo, rounds=r, round_size=None, round_schedule=None)

    def settings(self) -> dict[str, GRPOConfig]:
        """Setting name -> its run: ``uniform``, then ``<allocator> ×<r>`` for each number of
        rounds r, or ``<allocator> <schedule>`` for each schedule."""
        out = {
            "uniform": dataclasses.replace(
                self.grpo, allocator="uniform", rounds=None, round_schedule=None
            )
        }
        for r in self.round_list():
            name = (
                f"{self.grpo.allocator} {r}"
                if isinstance(r, str)
                else f"{self.grpo.allocator} ×{r}"
            )
            out[name] = self._config(r)
        return out


def main(cfg: RoundsBenchConfig) -> dict[str, Any]:
    """Time every setting in alternating slices; print the table, write ``bench_rounds.json``."""
    rows = time_in_slices(cfg.settings(), cfg.warmup_steps, cfg.slices, cfg.steps_per_slice)
    result = {"config": dataclasses.asdict(cfg), "rows": rows}
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / RESULTS_FILE).write_text(json.dumps(result, indent=2) + "\n")
    print(markdown_table(rows), flush=True)
    return result


def time_in_slices(
    settings: dict[str, GRPOConfig], warmup_steps: int, slices: int, steps_per_slice: int
) -> list[dict[str, Any]]:
    """One ``GRPOTrainer`` per setting, ``warmup_steps`` untimed steps each, then ``slices``
    rounds of ``steps_per_slice`` steps per setting in turn (machine noise falls on all alike):
    one ``step_row`` per setting, in order, each with its step time relative to the first's.
    The trainers are closed at the end."""
    from rich.console import Console
    from rich.progress import track

    from trainers.grpo.trainer import GRPOTrainer

    trainers = {name: GRPOTrainer(c) for name, c in settings.items()}
    try:
        reports: dict[str, list[Any]] = {name: [] for name in trainers}
        for t in trainers.values():
            for _ in range(warmup_steps):
                t.train_step()
        for _ in track(range(slices), description="slices", console=Console()):
            for name, t in trainers.items():
                for _ in range(steps_per_slice):
                    reports[name].append(t.train_step())
    finally:
        for t in trainers.values():
            t.close()
    rows = [step_row(name, reps) for name, reps in reports.items()]
    for row in rows:
        row["relative_step_time"] = row["step_seconds"] / rows[0]["step_seconds"]
    return rows


def step_row(name: str, reps: list[Any]) -> dict[str, Any]:
    """Means over the timed steps (``StepReport``s) of one setting."""

    def mean(key: str) -> float:
        return float(statistics.fmean(getattr(r, key) for r in reps))

    step = mean("step_seconds")
    return {
        "setting": name,
        "steps": len(reps),
        "rounds": mean("rounds"),
        "step_seconds": step,
        "gen_seconds": mean("gen_seconds"),
        "train_seconds": mean("train_seconds"),
        "alloc_seconds": mean("alloc_seconds"),
        "alloc_share": mean("alloc_seconds") / step,
        "gradient_rollouts": mean("gradient_rollouts"),
        "informative_prompts": mean("informative_prompts"),
    }


def markdown_table(
    rows: list[dict[str, Any]], base: str = "uniform", label: str = "setting"
) -> str:
    """The results as a markdown table (``base``: the setting the step times are relative to;
    ``label``: the first column's name)."""
    lines = [
        f"| {label} | rounds | s/step | × {base} | generate s | update s | allocate s | "
        "allocation share | gradient rollouts | informative prompts |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['setting']} | {r['rounds']:.0f} | {r['step_seconds']:.3f} | "
            f"{r['relative_step_time']:.2f} | {r['gen_seconds']:.3f} | {r['train_seconds']:.3f} | "
            f"{r['alloc_seconds']:.4f} | {100 * r['alloc_share']:.1f} % | "
            f"{r['gradient_rollouts']:.1f} | {r['informative_prompts']:.1f} |"
        )
    return "\n".join(lines) + "\n"
