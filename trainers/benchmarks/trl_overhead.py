"""The cost of ``AllocatingGRPOTrainer`` against plain ``trl.GRPOTrainer``, in one run.

What ``scripts/bench_trl_overhead.py`` runs. Four variants train the tiny model on the
arithmetic task with the same TRL settings (``B`` prompts × ``G`` completions per step, one
optimizer step per generation batch):

- ``trl``: plain ``trl.GRPOTrainer``;
- ``uniform``: ``AllocatingGRPOTrainer(allocator="uniform")``, which generates as TRL does (one
  round, ``G`` per prompt, TRL's row order). Every block of both starts from the same weights
  with the same seed, so they generate the very same completions: the difference in step time
  is the subclass's own cost (gathering the rows, the allocator, the belief store, the metrics);
- ``bamdp``: ``AllocatingGRPOTrainer(allocator="bamdp")`` at its defaults (a pilot of
  2 completions a prompt, then two equal rounds, ``snr(8)``, belief priors fitted per group),
  which costs one generate call and one scoring call per round, the pilot's included;
- ``prior_filter``: ``AllocatingGRPOTrainer(allocator="prior_filter")`` with a pool, the
  default allocator of the README and ``scripts/trl_example.py`` since 2026-12-07: 2·``B``
  prompts of ``G``/2 completions (the same budget), groups of ``G`` to the prompts the grouped
  prior does not call hopeless or solved, one round (``G`` even and at least 4).

The variants run in alternating blocks (``blocks`` × (``warmup_steps`` untimed + ``steps``
timed) each, a fresh trainer per block), so machine noise falls on all alike. A step is timed
from the end of the previous one to its own end (a ``TrainerCallback``); its breakdown comes from
timing TRL's ``_generate_and_score_completions`` (everything before the loss: generation,
scoring, allocation, old log-probs), inside it the generate calls
(``_generate_single_turn``) and the reward calls (``_calculate_rewards``), and the allocator's
own seconds (``AllocationRecord.alloc_seconds``). The rest of the step is TRL's loss, backward
and optimizer step. The overhead is the median over blocks of
``uniform s/step ÷ trl s/step − 1`` (the subclass's own cost) and of ``prior_filter s/step ÷
trl s/step`` (what a user of the default allocator pays), likewise for ``bamdp`` (rounds and
pilot included); the allocation share is
the allocator's seconds (its priors and their refits included) over the step's.

>>> result = main(TrlOverheadConfig(blocks=1, steps=2))  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata as md
import io
import json
import statistics
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: the JSON file written into ``out``
RESULTS_FILE = "bench_trl_overhead.json"

VARIANTS = ("trl", "uniform", "bamdp", "prior_filter")


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass
class TrlOverheadConfig:
    """Configuration of the TRL overhead benchmark."""

    batch_size: int = field(default=64, metadata=_help("B: prompts per step"))
    group_size: int = field(default=8, metadata=_help("G: TRL's num_generations"))
    max_completion_length: int = field(default=8, metadata=_help("L: new tokens at most"))
    blocks: int = field(default=5, metadata=_help("alternating blocks per variant"))
    steps: int = field(default=6, metadata=_help("timed steps per block"))
    warmup_steps: int = field(default=1, metadata=_help("untimed steps at each block's start"))
    seed: int = field(default=0, metadata=_help("seed (the same for every block)"))
    threads: int = field(default=1, metadata=_help("torch threads (0: torch's default)"))
    out: str = field(default="runs/bench_trl_overhead", metadata=_help("where the JSON goes"))
    variants: str = field(
        default=",".join(VARIANTS),
        metadata=_help(f"comma-separated variants timed, 'trl' among them ({', '.join(VARIANTS)})"),
    )

    def __post_init__(self) -> None:
        for name in ("batch_size", "max_completion_length", "blocks", "steps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        for name in ("warmup_steps", "threads"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
        if isinstance(self.group_size, bool) or not isinstance(self.group_size, int):
            raise ValueError(f"group_size must be an integer >= 2, got {self.group_size!r}")
        if self.group_size < 2:
            raise ValueError(f"group_size must be >= 2 (TRL needs two), got {self.group_size}")
        names = self.variant_list
        unknown = [v for v in names if v not in VARIANTS]
        if unknown or "trl" not in names:
            raise ValueError(
                f"variants must name some of {', '.join(VARIANTS)}, 'trl' among them (the "
                f"reference), got {self.variants!r}"
            )
        if "prior_filter" in names and (self.group_size % 2 or self.group_size < 4):
            raise ValueError(
                f"the prior_filter variant hands TRL 2·B prompts of group_size/2 completions, "
                f"which needs an even group_size >= 4, got {self.group_size}: raise it or leave "
                "prior_filter out of --variants"
            )

    @property
    def variant_list(self) -> list[str]:
        """``variants`` as a list, in ``VARIANTS``' order."""
        given = {v.strip() for v in self.variants.split(",") if v.strip()}
        return [v for v in VARIANTS if v in given] + sorted(given - set(VARIANTS))


def _trl_args(cfg: TrlOverheadConfig, out: str, *, pooled: bool = False) -> Any:
    """TRL's settings of a block (``pooled``: twice the prompts, half the completions each)."""
    import trl

    rollouts = cfg.batch_size * cfg.group_size
    return trl.GRPOConfig(
        output_dir=out,
        per_device_train_batch_size=rollouts,  # one generation batch per optimizer step
        num_generations=cfg.group_size // 2 if pooled else cfg.group_size,
        max_completion_length=cfg.max_completion_length,
        max_steps=cfg.warmup_steps + cfg.steps,
        learning_rate=2e-4,
        lr_scheduler_type="constant",
        top_k=0,
        use_cpu=True,
        bf16=False,
        activation_checkpointing=False,
        report_to="none",
        save_strategy="no",
        logging_strategy="no",
        disable_tqdm=True,
        seed=cfg.seed,
        dataloader_num_workers=0,
        log_completions=False,
    )


def _timer(trainer: Any, name: str, sink: list[float]) -> None:
    """Wrap the instance's method ``name`` to add its seconds to ``sink``."""
    inner = getattr(trainer, name)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            sink.append(time.perf_counter() - start)

    setattr(trainer, name, wrapped)


def run_block(cfg: TrlOverheadConfig, variant: str, task: Any) -> list[dict[str, float]]:
    """One fresh trainer of ``variant`` for ``warmup_steps + steps``; the timed steps."""
    import trl
    from transformers import TrainerCallback

    from trainers.models.loading import load_policy
    from trainers.trl.trainer import AllocatingGRPOTrainer, task_dataset, task_reward

    phases: dict[str, list[float]] = {"gen_score": [], "generate": [], "reward": []}
    steps: list[dict[str, float]] = []

    class StepClock(TrainerCallback):  # type: ignore[misc]
        mark = 0.0

        def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self.mark = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            now = time.perf_counter()
            sums = {k: sum(v) for k, v in phases.items()}
            for v in phases.values():
                v.clear()
            if state.global_step > cfg.warmup_steps:
                alloc = trainer.allocations[-1] if variant != "trl" else None
                steps.append(
                    {
                        "seconds": now - self.mark,
                        "gen_score_seconds": sums["gen_score"],
                        "generate_seconds": sums["generate"],
                        "reward_seconds": sums["reward"],
                        "alloc_seconds": alloc.alloc_seconds if alloc else 0.0,
                        "own_seconds": alloc.own_seconds if alloc else 0.0,
                        "rounds": float(alloc.rounds) if alloc else 1.0,
                    }
                )
            self.mark = time.perf_counter()

    model, tokenizer = load_policy("tiny")
    with tempfile.TemporaryDirectory(prefix="bench-trl-") as tmp:
        kwargs: dict[str, Any] = {
            "model": model,
            "reward_funcs": task_reward(task),
            "args": _trl_args(cfg, tmp, pooled=variant == "prior_filter"),
            "train_dataset": task_dataset(task),
            "processing_class": tokenizer,
            "callbacks": [StepClock()],
        }
        trainer: Any
        if variant == "trl":
            trainer = trl.GRPOTrainer(**kwargs)
        elif variant == "prior_filter":  # a pool of 2·B prompts, groups of G to some of them
            trainer = AllocatingGRPOTrainer(
                **kwargs, allocator=variant, allocator_kwargs={"group": cfg.group_size}
            )
        else:  # the package's defaults: what a user who names the allocator gets
            trainer = AllocatingGRPOTrainer(**kwargs, allocator=variant)
        _timer(trainer, "_generate_and_score_completions", phases["gen_score"])
        _timer(trainer, "_generate_single_turn", phases["generate"])
        _timer(trainer, "_calculate_rewards", phases["reward"])
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trainer.train()
    return steps


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _block_ratios(blocks: dict[str, list[list[dict[str, float]]]], variant: str) -> list[float]:
    """Per block: ``variant``'s mean s/step over plain TRL's in the same block."""
    return [
        statistics.fmean(s["seconds"] for s in v) / statistics.fmean(s["seconds"] for s in t)
        for t, v in zip(blocks["trl"], blocks[variant], strict=True)
    ]


def summarise(blocks: dict[str, list[list[dict[str, float]]]]) -> dict[str, Any]:
    """Per variant: median s/step over blocks (each block's mean) and median phases per step."""
    out: dict[str, Any] = {}
    for variant, runs in blocks.items():
        per_block = [statistics.fmean(s["seconds"] for s in run) for run in runs]
        steps = [s for run in runs for s in run]
        row = {"seconds_per_step": _median(per_block)}
        for key in (
            "gen_score_seconds",
            "generate_seconds",
            "reward_seconds",
            "alloc_seconds",
            "own_seconds",
            "rounds",
        ):
            row[key] = _median([s[key] for s in steps])
        row["train_seconds"] = _median([s["seconds"] - s["gen_score_seconds"] for s in steps])
        row["alloc_share"] = _median([s["alloc_seconds"] / s["seconds"] for s in steps])
        row["other_gen_score_seconds"] = _median(
            [
                s["gen_score_seconds"]
                - s["generate_seconds"]
                - s["reward_seconds"]
                - s["alloc_seconds"]
                for s in steps
            ]
        )
        out[variant] = row
    if "trl" in blocks and "uniform" in blocks:
        ratios = _block_ratios(blocks, "uniform")
        out["uniform_overhead"] = _median(ratios) - 1.0
        out["uniform_overhead_per_block"] = [r - 1.0 for r in ratios]
        own = [s["own_seconds"] / s["seconds"] for run in blocks["uniform"] for s in run]
        out["uniform_own_share"] = _median(own)
    for variant in ("bamdp", "prior_filter"):
        if "trl" in blocks and variant in blocks:
            ratios = _block_ratios(blocks, variant)
            out[f"{variant}_ratio"] = _median(ratios)
            out[f"{variant}_ratio_per_block"] = ratios
    return out


def measure(cfg: TrlOverheadConfig) -> dict[str, Any]:
    """Run the alternating blocks; returns the results (what ``main`` prints and writes)."""
    import torch

    from trainers.tasks import make_task

    threads = torch.get_num_threads()
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    try:
        task = make_task("arithmetic", seed=cfg.seed)
        blocks: dict[str, list[list[dict[str, float]]]] = {v: [] for v in cfg.variant_list}
        for _ in range(cfg.blocks):
            for variant in cfg.variant_list:
                blocks[variant].append(run_block(cfg, variant, task))
    finally:
        torch.set_num_threads(threads)
    versions = {}
    for name in ("trl", "transformers", "torch", "accelerate"):
        with contextlib.suppress(md.PackageNotFoundError):
            versions[name] = md.version(name)
    return {
        "config": dataclasses.asdict(cfg),
        "versions": versions,
        "summary": summarise(blocks),
        "blocks": blocks,
    }


def print_results(result: dict[str, Any]) -> None:
    """A plain table of the summary and the overhead line."""
    cfg = result["config"]
    s = result["summary"]
    print(
        f"TRL GRPO steps on CPU: B={cfg['batch_size']}, G={cfg['group_size']}, "
        f"L={cfg['max_completion_length']}; medians over {cfg['blocks']} alternating blocks "
        f"× {cfg['steps']} steps"
    )
    cols = (
        ("s/step", "seconds_per_step"),
        ("gen+score", "gen_score_seconds"),
        ("generate", "generate_seconds"),
        ("reward", "reward_seconds"),
        ("allocator", "alloc_seconds"),
        ("subclass", "own_seconds"),
        ("other g+s", "other_gen_score_seconds"),
        ("loss+update", "train_seconds"),
        ("rounds", "rounds"),
    )
    print(f"{'variant':<12}" + "".join(f"{c:>12}" for c, _ in cols))
    for variant in (v for v in VARIANTS if v in s):
        row = s[variant]
        print(f"{variant:<12}" + "".join(f"{row[k]:>12.4f}" for _, k in cols))
    if "uniform_overhead" in s:
        per = ", ".join(f"{x:+.1%}" for x in s["uniform_overhead_per_block"])
        print(f"overhead (uniform vs trl, median of blocks): {s['uniform_overhead']:+.1%} ({per})")
        print(
            f"subclass's own code (uniform), median share of a step: {s['uniform_own_share']:.2%}"
        )
    for variant, what in (("bamdp", "bamdp (defaults)"), ("prior_filter", "prior_filter (pool)")):
        if f"{variant}_ratio" not in s:
            continue
        per = ", ".join(f"{x:.3f}" for x in s[f"{variant}_ratio_per_block"])
        ratio = s[f"{variant}_ratio"]
        print(f"step time, {what} / trl, median of blocks: {ratio:.3f}x ({per})")
        share = s[variant]["alloc_share"]
        print(f"{variant}'s allocation, median share of a step: {share:.2%}")


def main(cfg: TrlOverheadConfig) -> dict[str, Any]:
    """Measure, print the table and write ``RESULTS_FILE`` into ``cfg.out``."""
    result = measure(cfg)
    print_results(result)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / RESULTS_FILE
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"results: {path}")
    return result


def parse_args(argv: list[str] | None = None) -> TrlOverheadConfig:
    """``TrlOverheadConfig`` from command-line flags (one per field, ``--batch-size`` ...)."""
    from adaroll_env.arguments import parse_config

    return parse_config(TrlOverheadConfig, __doc__.split("\n")[0], argv)  # type: ignore[no-any-return]
