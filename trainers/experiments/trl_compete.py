"""A short competition inside TRL: ``AllocatingGRPOTrainer`` with several allocators and seeds,
and C-GRPO as a peer.

What ``scripts/trl_compete.py`` runs. Every run trains the warm-started ``tiny`` model on the
``arithmetic`` task with the same TRL settings (``B`` prompts × ``G`` completions per step, TRL's
data order for the seed, lr, steps); only the allocator differs. Held-out pass@1 is measured on
the same ``eval_size`` test prompts (spread evenly over the split) with ``eval_k`` samples each,
before training and after, with a fixed sampling seed. Besides accuracy each run reports its mean
training reward over the first and the last quarter of the steps (over the rollouts the
allocator chose, so not comparable across allocators), its informative fraction and its rollouts
with non-zero advantage per step (TRL's metrics, ``allocation/...``), and the rollouts it
generated per step (``rollouts_per_step``; B·G for every allocator).

The entrant ``cgrpo`` is C-GRPO (``trainers.trl.cgrpo``: trl-cgrpo's ``CGRPOTrainer`` at its
documented defaults, the ``cgrpo`` extra, TRL 1.14 only) on the same B prompts per step, TRL
settings, data order and evaluation; ``G`` does not apply to it (its group width is
max(budget_grid) = 32, each prompt sampled until its answers agree). Its budget varies per
prompt, and its calibrations generate ``calibration_size`` × 32 completions each, so it reports
``rollouts_per_step`` (training and calibration), ``train_rollouts_per_step``,
``calibration_rollouts`` and ``rollouts_by_step``, against which its pass@1 is to be read. When
``cgrpo`` runs, the task gets a validation split of ``calibration_size`` prompts (held out from
train and test; C-GRPO calibrates on it) for every entrant, so that all train on the same prompts.

>>> result = main(TrlCompeteConfig(steps=10, seeds=1))  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import statistics
import tempfile
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainers.trl.cgrpo import CGRPO, require_cgrpo

RESULTS_FILE = "trl_compete.json"


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass
class TrlCompeteConfig:
    """Configuration of the TRL competition."""

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
    out: str = field(default="runs/trl_compete", metadata=_help("where the JSON goes"))
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
            "cgrpo: held-out prompts it calibrates on (a validation split, drawn for every "
            "entrant when cgrpo runs; 200 as trl-cgrpo's example holds out)"
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
        for name in (
            "seeds",
            "steps",
            "batch_size",
            "max_completion_length",
            "eval_size",
            "task_size",
            "calibration_size",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        for name in ("eval_k", "workers"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if self.group_size < 2:
            raise ValueError(f"group_size must be >= 2 (TRL needs two), got {self.group_size}")
        if not self.entrants:
            raise ValueError("allocators is empty: name at least one, e.g. 'uniform,bamdp'")
        if CGRPO in self.entrants:
            require_cgrpo()  # before any run: the extra and the TRL line it needs
        from adaroll_env.utilities import get_utility

        get_utility(self.utility)  # an unknown name raises, suggesting the closest
        if self.belief_prior not in ("fixed", "fitted"):
            raise ValueError(f"belief_prior must be 'fixed' or 'fitted', got {self.belief_prior!r}")
        if self.round_schedule not in ("auto", "none"):
            from adaroll_env.schedules import parse_round_schedule

            try:  # the budget of one generation batch: B prompts × G
                parse_round_schedule(self.round_schedule, self.batch_size * self.group_size)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"round_schedule: {exc}") from None
        if self.belief_group != "none" and self.belief_prior != "fitted":
            raise ValueError(
                f"belief_group {self.belief_group!r} needs --belief-prior fitted (one fitted "
                "prior per group)"
            )

    @property
    def entrants(self) -> list[str]:
        """The allocator specs (and ``cgrpo``) of ``allocators``, in order."""
        return [a.strip() for a in self.allocators.split(",") if a.strip()]


def competition_task(cfg: TrlCompeteConfig) -> Any:
    """The arithmetic task every run trains on (``task_size`` training prompts), with a
    validation split of ``calibration_size`` held-out prompts when ``cgrpo`` runs."""
    from trainers.tasks import make_task

    validation = cfg.calibration_size if CGRPO in cfg.entrants else 0
    return make_task("arithmetic", seed=0, num_train=cfg.task_size, num_validation=validation)


def held_out_pass_at_1(model: Any, tokenizer: Any, task: Any, cfg: TrlCompeteConfig) -> float:
    """pass@1 on ``eval_size`` test prompts (``held_out_subset``), ``eval_k`` samples each at
    temperature 1: the trainer's one evaluation (``evaluate_examples``) through ``HFEngine``, on
    the plain prompts TRL trains on, with the same sampling seed before and after training and
    for every run."""
    from trainers.engines.base import SamplingSpec
    from trainers.engines.hf import HFEngine
    from trainers.grpo.data_order import EVALUATION, derive_seed
    from trainers.grpo.evaluation import evaluate_examples, held_out_subset
    from trainers.models.prompts import encode_prompt

    model.eval()
    try:
        result = evaluate_examples(
            HFEngine(model, tokenizer),
            held_out_subset(task.test, cfg.eval_size),
            encode=lambda e: encode_prompt(tokenizer, e.prompt, chat_template="none"),
            score=task.score,
            sampling=SamplingSpec(max_new_tokens=cfg.max_completion_length, temperature=1.0),
            k=cfg.eval_k,
            seed=derive_seed(0, EVALUATION, 0),
        )
    finally:
        model.train()
    return result.figures["pass@1"]


def trl_arguments(cfg: TrlCompeteConfig, output_dir: str, seed: int) -> dict[str, Any]:
    """The ``trl.GRPOConfig`` arguments every entrant shares."""
    return {
        "output_dir": output_dir,
        "per_device_train_batch_size": cfg.batch_size * cfg.group_size,
        "num_generations": cfg.group_size,
        "max_completion_length": cfg.max_completion_length,
        "max_steps": cfg.steps,
        "learning_rate": cfg.lr,
        "lr_scheduler_type": "constant",
        "top_k": 0,
        "use_cpu": True,
        "bf16": False,
        "activation_checkpointing": False,
        "report_to": "none",
        "save_strategy": "no",
        "logging_steps": 1,  # cgrpo's rollouts are counted from one log per step
        "disable_tqdm": True,
        "seed": seed,
        "dataloader_num_workers": 0,
        "log_completions": False,
    }


def run_one(cfg: TrlCompeteConfig, allocator: str, seed: int) -> dict[str, Any]:
    """Train one run; its held-out accuracy before and after, its training metrics and the
    rollouts it generated."""
    import torch
    import trl

    from trainers.models.loading import load_policy
    from trainers.trl.cgrpo import build_cgrpo, cgrpo_rollouts

    torch.set_num_threads(1)
    task = competition_task(cfg)
    model, tokenizer = load_policy("tiny")
    before = held_out_pass_at_1(model, tokenizer, task, cfg)
    start = time.perf_counter()
    meter = None
    with tempfile.TemporaryDirectory(prefix="trl-compete-") as tmp:
        arguments = trl_arguments(cfg, tmp, seed)
        if allocator == CGRPO:
            trainer, meter = build_cgrpo(
                model=model,
                tokenizer=tokenizer,
                task=task,
                train_args=arguments,
                prompts_per_step=cfg.batch_size,
            )
        else:
            from trainers.trl.trainer import AllocatingGRPOTrainer, task_dataset, task_reward

            trainer = AllocatingGRPOTrainer(
                model=model,
                reward_funcs=task_reward(task),
                args=trl.GRPOConfig(**arguments),
                train_dataset=task_dataset(task),
                processing_class=tokenizer,
                allocator=allocator,
                utility=cfg.utility,
                belief_prior=cfg.belief_prior,
                belief_group=None if cfg.belief_group == "none" else cfg.belief_group,
                round_schedule=None if cfg.round_schedule == "none" else cfg.round_schedule,
            )
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trainer.train()
    minutes = (time.perf_counter() - start) / 60
    after = held_out_pass_at_1(trainer.model, tokenizer, task, cfg)
    logs = [h for h in trainer.state.log_history if "reward" in h]
    quarter = max(1, len(logs) // 4)
    steps = int(trainer.state.global_step)
    figures: dict[str, float | None]
    if meter is None:
        train = [sum(r.counts) for r in trainer.allocations]  # one generation batch a step
        calibration = [0] * len(train)
        figures = {
            "informative_frac": statistics.fmean(h["allocation/informative_frac"] for h in logs),
            "gradient_rollouts": statistics.fmean(h["allocation/gradient_rollouts"] for h in logs),
            "alloc_overhead": statistics.fmean(h["allocation/overhead"] for h in logs),
        }
    else:
        train, calibration = cgrpo_rollouts(trainer.state.log_history, cfg.batch_size, steps)
        figures = {
            "informative_frac": statistics.fmean(meter.informative),
            "gradient_rollouts": statistics.fmean(meter.gradient_rollouts),
            "alloc_overhead": None,  # its stopping rule is not timed apart from its generation
        }
    by_step = [t + c for t, c in zip(train, calibration, strict=True)]
    return {
        "allocator": allocator,
        "seed": seed,
        "pass@1_before": before,
        "pass@1_after": after,
        "train_reward_first_quarter": statistics.fmean(h["reward"] for h in logs[:quarter]),
        "train_reward_last_quarter": statistics.fmean(h["reward"] for h in logs[-quarter:]),
        **figures,
        "rollouts_per_step": sum(by_step) / max(steps, 1),
        "train_rollouts_per_step": sum(train) / max(steps, 1),
        "calibration_rollouts": sum(calibration),
        "rollouts_by_step": by_step,
        "minutes": minutes,
    }


def main(cfg: TrlCompeteConfig) -> dict[str, Any]:
    """Run every allocator × seed, print a table, write ``RESULTS_FILE`` into ``cfg.out``."""
    names = cfg.entrants
    jobs = [(a, s) for s in range(cfg.seeds) for a in names]
    if cfg.workers > 1:
        with ProcessPoolExecutor(cfg.workers) as pool:
            runs = list(pool.map(run_one, [cfg] * len(jobs), *zip(*jobs, strict=True)))
    else:
        runs = [run_one(cfg, a, s) for a, s in jobs]
    summary: dict[str, dict[str, float | None]] = {}
    for name in dict.fromkeys(a for a, _ in jobs):
        mine = [r for r in runs if r["allocator"] == name]
        summary[name] = {}
        for key in mine[0]:
            values = [r[key] for r in mine if r[key] is not None]
            if key in ("allocator", "seed") or any(isinstance(v, list) for v in values):
                continue  # names, and series such as rollouts_by_step
            summary[name][key] = statistics.fmean(values) if values else None  # None: not measured
    print(
        f"TRL competition: tiny model, arithmetic, B={cfg.batch_size}, G={cfg.group_size}, "
        f"{cfg.steps} steps, {cfg.seeds} seeds (means); held-out pass@1 on {cfg.eval_size} "
        f"prompts × {cfg.eval_k}"
    )
    keys = list(dict.fromkeys(k for row in summary.values() for k in row))
    print(f"{'allocator':<12}" + "".join(f"{k[:18]:>20}" for k in keys))
    for name, row in summary.items():
        cells = (row.get(k) for k in keys)
        print(f"{name:<12}" + "".join(f"{'-':>20}" if v is None else f"{v:>20.4f}" for v in cells))
    result = {"config": dataclasses.asdict(cfg), "runs": runs, "summary": summary}
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / RESULTS_FILE).write_text(json.dumps(result, indent=2) + "\n")
    print(f"results: {out / RESULTS_FILE}")
    return result


def parse_args(argv: list[str] | None = None) -> TrlCompeteConfig:
    """``TrlCompeteConfig`` from command-line flags (one per field, ``--batch-size`` ...)."""
    from adaroll_env.arguments import parse_config

    return parse_config(TrlCompeteConfig, __doc__.split("\n")[0], argv)  # type: ignore[no-any-return]
