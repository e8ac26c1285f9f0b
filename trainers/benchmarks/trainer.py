"""Our ``GRPOTrainer`` against TRL's ``GRPOTrainer`` on the same run: steps/s and tokens/s.

What ``scripts/bench_trainer.py`` runs. Both trainers start from the same weights (two copies
loaded from the same directory), with the same tokenizer files, the same prompts in the same
order, ``B`` prompts and ``G`` completions per prompt per step, the same sampling (temperature,
no top-k/top-p), the same loss (``loss_type``, ``beta = 0``, one optimizer step per generation,
constant learning rate, gradient clipping at 1) and the whole batch in one forward/backward (ours
leaves out zero-advantage completions, whose gradient is exactly zero). Prompts go to TRL as
plain strings (the tiny tokenizer has no chat template, so TRL tokenizes them as ours does, with
``<s>`` first) and TRL pads them on the left. The results record checks that both sides saw the
same prompts, the same prompt token ids and the same initial weights.

Timing alternates in slices, in one process: TRL's ``train()`` drives the run and a
``TrainerCallback`` runs our trainer's slices between TRL's, so machine noise falls on both
sides alike. Each side first makes ``warmup_steps`` untimed steps. A TRL step is timed from the
end of the previous one to its own end (data loading, generation, scoring, update, logging
hooks); one of ours is timed around ``train_step()``. Tokens are the completion tokens generated
(end-of-sequence token included), counted on our side by the report and on TRL's side by the
reward function, which receives every completion's ids.

Ours runs as configured (``round_size``: by default the trainer's rounds of ``B`` rollouts, which
adaptive allocators need); with ``compare_one_round`` a second copy hands out the whole budget in
one round, which is how TRL generates. torch runs one thread by default: the tiny model's
kernels gain nothing from more, and on a shared machine OpenMP threads that wait on each other
make every small kernel slow (``threads=0`` keeps torch's default).

>>> grpo = GRPOConfig(batch_size=2, group_size=2)
>>> cfg = TrainerBenchConfig(grpo=grpo, slices=1, steps_per_slice=1)
>>> result = main(cfg)  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, get_args

from trainers.grpo import GRPOConfig, field_help
from trainers.grpo.config import check_config_int

Peer = Literal["trl", "none"]

#: the JSON file written into ``out``
RESULTS_FILE = "bench_trainer.json"


def _bench_defaults() -> GRPOConfig:
    """Our side's settings when none are given: B = 16, G = 8, one torch thread."""
    return GRPOConfig(batch_size=16, group_size=8, threads=1)


@dataclass
class TrainerBenchConfig:
    """Configuration of the trainer speed benchmark (ours against TRL, same run).

    ``grpo`` holds the run both trainers make (``batch_size``, ``group_size``,
    ``max_completion_length``, ``seed``, ``model``, ``lr``, ``loss_type``, ``round_size``,
    ``threads``: the options ``NESTED_FLAGS`` exposes); ``our_config`` pins the rest to TRL's
    settings. ``threads`` defaults to 1: it keeps OpenMP from spin-waiting on a busy machine, and
    the tiny model's kernels gain nothing from more (0: torch's default).
    """

    NESTED_FLAGS: ClassVar[dict[str, tuple[str, ...]]] = {
        "grpo": (
            "batch_size",
            "group_size",
            "max_completion_length",
            "seed",
            "model",
            "lr",
            "loss_type",
            "round_size",
            "threads",
        )
    }

    slices: int = field(default=5, metadata=field_help("alternating timed slices per trainer"))
    steps_per_slice: int = field(default=4, metadata=field_help("steps per slice"))
    warmup_steps: int = field(default=1, metadata=field_help("untimed steps per trainer first"))
    compare_one_round: bool = field(
        default=True,
        metadata=field_help("also time ours with the whole budget in one round, as TRL generates"),
    )
    peer: Peer = field(default="trl", metadata=field_help("'trl', or 'none' to time ours only"))
    out: str = field(default="runs/bench_trainer", metadata=field_help("where the JSON goes"))
    grpo: GRPOConfig = field(default_factory=_bench_defaults)

    def __post_init__(self) -> None:
        if self.peer not in get_args(Peer):
            raise ValueError(
                f"peer must be one of {list(get_args(Peer))}, got {self.peer!r}: pick one of them"
            )
        for name, minimum in (("slices", 1), ("steps_per_slice", 1), ("warmup_steps", 0)):
            check_config_int(name, getattr(self, name), minimum)
        if self.peer == "trl" and self.grpo.group_size < 2:
            raise ValueError(
                f"group_size ({self.grpo.group_size}) must be >= 2 to compare with TRL (it needs "
                "two generations per prompt): raise group_size or use peer='none'"
            )

    @property
    def total_steps(self) -> int:
        """Steps each trainer makes: warm-up plus the timed slices."""
        return self.warmup_steps + self.slices * self.steps_per_slice

    @property
    def rollouts(self) -> int:
        """Completions per step, ``B·G``."""
        return self.grpo.batch_size * self.grpo.group_size


@dataclass
class StepTiming:
    """One timed step of one trainer."""

    seconds: float
    tokens: int
    reward: float
    gen_seconds: float = float("nan")
    train_seconds: float = float("nan")
    alloc_seconds: float = float("nan")
    step_seconds: float = float("nan")
    gradient_rollouts: int = -1
    prompts: list[str] = field(default_factory=list)


@dataclass
class SideTimings:
    """The timed steps of one trainer, slice by slice."""

    name: str
    slices: list[list[StepTiming]] = field(default_factory=list)

    def slice_rates(self) -> list[dict[str, float]]:
        """Steps/s and tokens/s of each slice."""
        out = []
        for steps in self.slices:
            seconds = sum(s.seconds for s in steps)
            tokens = sum(s.tokens for s in steps)
            out.append(
                {
                    "steps": float(len(steps)),
                    "seconds": seconds,
                    "tokens": float(tokens),
                    "steps_per_s": len(steps) / max(seconds, 1e-12),
                    "tokens_per_s": tokens / max(seconds, 1e-12),
                }
            )
        return out

    def summary(self) -> dict[str, float]:
        """Medians over slices (rates) and over steps (phases)."""
        rates = self.slice_rates()
        steps = [s for sl in self.slices for s in sl]

        def med(values: list[float]) -> float:
            values = [v for v in values if v == v]  # drop NaN (phases a side does not report)
            return statistics.median(values) if values else float("nan")

        return {
            "steps_per_s": med([r["steps_per_s"] for r in rates]),
            "tokens_per_s": med([r["tokens_per_s"] for r in rates]),
            "seconds_per_step": med([s.seconds for s in steps]),
            "tokens_per_step": med([float(s.tokens) for s in steps]),
            "gen_seconds": med([s.gen_seconds for s in steps]),
            "train_seconds": med([s.train_seconds for s in steps]),
            "gradient_rollouts": med([float(s.gradient_rollouts) for s in steps]),
            "reward": statistics.fmean(s.reward for s in steps) if steps else float("nan"),
            "alloc_overhead": med(
                [s.alloc_seconds / s.step_seconds for s in steps if s.step_seconds > 0]
            ),
        }


# --- our side ---------------------------------------------------------------------------------
def our_config(cfg: TrainerBenchConfig, *, round_size: int | None) -> GRPOConfig:
    """The ``GRPOConfig`` of our side: ``cfg.grpo`` with uniform allocation of ``G`` per prompt
    and TRL's settings (sampling, loss, optimizer, the whole batch in one forward/backward)."""
    return dataclasses.replace(
        cfg.grpo,
        allocator="uniform",
        allocator_kwargs=None,
        round_size=round_size,
        temperature=1.0,
        top_p=1.0,
        scale_rewards="group",
        beta=0.0,
        num_iterations=1,
        weight_decay=0.0,
        max_grad_norm=1.0,
        micro_batch_size=cfg.rollouts,  # one forward/backward over the batch, as TRL here
        generation_batch_size=cfg.rollouts,  # one generate call per round at most
        chat_template="none",  # TRL gets plain-string prompts
        eval_every=0,
        save_every=0,
        tensorboard=False,
        progress=False,
        device="cpu",
        dtype="float32",
    )


def build_ours(cfg: TrainerBenchConfig, task: Any, *, round_size: int | None) -> Any:
    """Our trainer on a fresh copy of the model."""
    from trainers.grpo.trainer import GRPOTrainer
    from trainers.models.loading import load_policy

    model, tokenizer = load_policy(cfg.grpo.model)
    return GRPOTrainer(
        our_config(cfg, round_size=round_size), task=task, model=model, tokenizer=tokenizer
    )


def prompt_schedule(trainer: Any, steps: int) -> list[list[Any]]:
    """The batches of examples ``trainer`` will draw in its next ``steps`` steps, in order
    (``GRPOTrainer.peek_batches``: the trainer then sees exactly these batches)."""
    return list(trainer.peek_batches(steps))


def time_our_step(trainer: Any) -> StepTiming:
    """One step of ours, timed around ``train_step()``."""
    start = time.perf_counter()
    report = trainer.train_step()
    seconds = time.perf_counter() - start
    return StepTiming(
        seconds=seconds,
        tokens=int(report.tokens),
        reward=float(report.reward),
        gen_seconds=float(report.gen_seconds),
        train_seconds=float(report.train_seconds),
        alloc_seconds=float(report.alloc_seconds),
        step_seconds=float(report.step_seconds),
        gradient_rollouts=int(report.gradient_rollouts),
        prompts=[e.prompt for e in trainer.examples],
    )


# --- the alternating schedule -----------------------------------------------------------------
class _Schedule:
    """Runs our trainers' warm-up and slices; TRL's callback (or a plain loop) drives it."""

    def __init__(self, cfg: TrainerBenchConfig, ours: dict[str, Any]) -> None:
        self.cfg = cfg
        self.ours = ours
        self.timings = {name: SideTimings(name) for name in ours}

    def warmup(self) -> None:
        for trainer in self.ours.values():
            for _ in range(self.cfg.warmup_steps):
                trainer.train_step()

    def slice(self) -> None:
        for name, trainer in self.ours.items():
            self.timings[name].slices.append(
                [time_our_step(trainer) for _ in range(self.cfg.steps_per_slice)]
            )


def versions(peer: str) -> dict[str, str]:
    """Library versions of this run (``adaroll_env.stats.library_versions``)."""
    from adaroll_env.stats import library_versions

    names = ["torch", "transformers", "accelerate", "tokenizers"]
    if peer == "trl":
        names += ["trl", "datasets"]
    return library_versions(names)


def measure(cfg: TrainerBenchConfig) -> dict[str, Any]:
    """Run the benchmark; returns the results (what ``main`` prints and writes).

    torch's thread count is set to ``cfg.grpo.threads`` for the run and put back afterwards.
    """
    import torch

    threads = torch.get_num_threads()
    if cfg.grpo.torch_threads():
        torch.set_num_threads(cfg.grpo.torch_threads())
    try:
        with warnings.catch_warnings():
            # TRL 1.x calls transformers' deprecated gradient_checkpointing* aliases
            warnings.filterwarnings("ignore", message=r".*gradient_checkpointing.*")
            return _measure(cfg)
    finally:
        torch.set_num_threads(threads)


def _measure(cfg: TrainerBenchConfig) -> dict[str, Any]:
    import torch

    from trainers.tasks import make_task

    if cfg.peer == "trl":
        from trainers.benchmarks.trl_peer import require_trl

        require_trl()
    task = make_task("arithmetic", seed=cfg.grpo.seed)
    variants: dict[str, int | None] = {"ours": cfg.grpo.round_size}
    if cfg.compare_one_round and cfg.grpo.round_size != cfg.rollouts:
        variants["ours (one round)"] = cfg.rollouts
    ours = {name: build_ours(cfg, task, round_size=rs) for name, rs in variants.items()}
    batches = prompt_schedule(next(iter(ours.values())), cfg.total_steps)
    schedule = _Schedule(cfg, ours)
    peer: dict[str, Any] = {"side": None, "kwargs": None, "same_weights": None, "same_ids": None}
    if cfg.peer == "trl":
        from trainers.benchmarks.trl_peer import run_trl_side

        peer = run_trl_side(cfg, ours, batches, schedule)
    else:
        schedule.warmup()
        for _ in range(cfg.slices):
            schedule.slice()
    sides = [*schedule.timings.values(), *([peer["side"]] if peer["side"] else [])]
    step_prompts = {s.name: [t.prompts for sl in s.slices for t in sl] for s in sides}
    summary = {s.name: s.summary() for s in sides}
    result: dict[str, Any] = {
        "config": dataclasses.asdict(cfg),
        "ours_config": {name: dataclasses.asdict(t.cfg) for name, t in ours.items()},
        "trl_config": peer["kwargs"],
        "versions": versions(cfg.peer),
        "torch_threads": torch.get_num_threads(),
        "slices": {
            s.name: [
                {"rates": r, "steps": [dataclasses.asdict(t) for t in steps]}
                for r, steps in zip(s.slice_rates(), s.slices, strict=True)
            ]
            for s in sides
        },
        "summary": summary,
        "alloc_overhead": summary["ours"]["alloc_overhead"],
        "ratio": None,
        "checks": {
            "same_prompts": all(p == step_prompts["ours"] for p in step_prompts.values()),
            "same_prompt_ids": peer["same_ids"],
            "same_initial_weights": peer["same_weights"],
        },
    }
    if "TRL" in summary:
        trl_rate = summary["TRL"]["steps_per_s"]
        result["ratio"] = summary["ours"]["steps_per_s"] / trl_rate
        result["ratios"] = {
            name: summary[name]["steps_per_s"] / trl_rate for name in summary if name != "TRL"
        }
    for t in ours.values():
        t.close()
    return result


def print_results(result: dict[str, Any]) -> None:
    """The rich table, the ``ratio:`` line and our allocation overhead."""
    from rich.console import Console
    from rich.table import Table

    cfg, run = result["config"], result["config"]["grpo"]
    table = Table(
        title=(
            f"GRPO steps on CPU: B={run['batch_size']}, G={run['group_size']}, "
            f"L={run['max_completion_length']}; medians of {cfg['slices']} alternating slices "
            f"× {cfg['steps_per_slice']} steps, same run"
        )
    )
    cols = (
        "trainer",
        "steps/s",
        "tokens/s",
        "s/step",
        "gen s/step",
        "tokens/step",
        "trained/step",
        "reward",
    )
    for col in cols:
        table.add_column(col, justify="left" if col == "trainer" else "right")
    for name, s in result["summary"].items():
        table.add_row(
            name,
            f"{s['steps_per_s']:.3f}",
            f"{s['tokens_per_s']:,.0f}",
            f"{s['seconds_per_step']:.3f}",
            f"{s['gen_seconds']:.3f}",
            f"{s['tokens_per_step']:.0f}",
            f"{s['gradient_rollouts']:.0f}",
            f"{s['reward']:.3f}",
        )
    console = Console() if Console().is_terminal else Console(width=120)
    console.print(table)
    console.print(
        "gen s/step: ours = engine generation; TRL = generate + score + advantages "
        "(_generate_and_score_completions); trained/step: completions back-propagated (ours "
        "skips zero-advantage ones, whose gradient is 0)",
        style="dim",
    )
    if result["ratio"] is not None:
        for name, r in result["ratios"].items():
            if name != "ours":
                print(f"ratio ({name.removeprefix('ours ').strip('()')}): {r:.2f}")
        print(f"ratio: {result['ratio']:.2f}")
    print(f"allocation overhead (ours, median alloc/step seconds): {result['alloc_overhead']:.2%}")
    checks = ", ".join(f"{k}={v}" for k, v in result["checks"].items() if v is not None)
    print(f"checks: {checks}")


def _finite(x: Any) -> Any:
    """``x`` with NaN/inf floats as None, so the JSON is standard."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_finite(v) for v in x]
    return x


def main(cfg: TrainerBenchConfig) -> dict[str, Any]:
    """Measure, print the table and write ``RESULTS_FILE`` into ``cfg.out``."""
    result = measure(cfg)
    print_results(result)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / RESULTS_FILE
    path.write_text(json.dumps(_finite(result), indent=2) + "\n")
    print(f"results: {path}")
    return result
