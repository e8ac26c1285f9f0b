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

>>> cfg = TrainerBenchConfig(batch_size=2, group_size=2, slices=1, steps_per_slice=1)
>>> result = main(cfg)  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata as md
import io
import json
import math
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from trainers.grpo import GRPOConfig, LossType

Peer = Literal["trl", "none"]

#: the JSON file written into ``out``
RESULTS_FILE = "bench_trainer.json"


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass
class TrainerBenchConfig:
    """Configuration of the trainer speed benchmark (ours against TRL, same run)."""

    batch_size: int = field(default=16, metadata=_help("B: prompts per step (both trainers)"))
    group_size: int = field(default=8, metadata=_help("G: completions per prompt (both)"))
    max_completion_length: int = field(default=8, metadata=_help("L: new tokens at most"))
    slices: int = field(default=5, metadata=_help("alternating timed slices per trainer"))
    steps_per_slice: int = field(default=4, metadata=_help("steps per slice"))
    warmup_steps: int = field(default=1, metadata=_help("untimed steps per trainer first"))
    seed: int = field(default=0, metadata=_help("seed (task, data order, sampling)"))
    model: str = field(default="tiny", metadata=_help("'tiny' or a local model directory"))
    lr: float = field(default=GRPOConfig.lr, metadata=_help("learning rate (both, constant)"))
    loss_type: LossType = field(default="dapo", metadata=_help("loss normalisation (both)"))
    round_size: int | None = field(
        default=None,
        metadata=_help("our rollouts per allocation round (default: the trainer's, B)"),
    )
    compare_one_round: bool = field(
        default=True,
        metadata=_help("also time ours with the whole budget in one round, as TRL generates"),
    )
    peer: Peer = field(default="trl", metadata=_help("'trl', or 'none' to time ours only"))
    threads: int = field(
        default=1,
        metadata=_help(
            "torch threads (0: torch's default); 1 keeps OpenMP from spin-waiting on a busy "
            "machine, and the tiny model's kernels gain nothing from more"
        ),
    )
    out: str = field(default="runs/bench_trainer", metadata=_help("where the JSON goes"))

    def __post_init__(self) -> None:
        for name, opts in (("peer", Peer), ("loss_type", LossType)):
            value = getattr(self, name)
            if value not in get_args(opts):
                raise ValueError(
                    f"{name} must be one of {list(get_args(opts))}, got {value!r}: pick one of them"
                )
        for name in ("batch_size", "group_size", "max_completion_length"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        for name in ("slices", "steps_per_slice"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        for name in ("warmup_steps", "threads"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
        if self.peer == "trl" and self.group_size < 2:
            raise ValueError(
                f"group_size ({self.group_size}) must be >= 2 to compare with TRL (it needs two "
                "generations per prompt): raise group_size or use peer='none'"
            )

    @property
    def total_steps(self) -> int:
        """Steps each trainer makes: warm-up plus the timed slices."""
        return self.warmup_steps + self.slices * self.steps_per_slice

    @property
    def rollouts(self) -> int:
        """Completions per step, ``B·G``."""
        return self.batch_size * self.group_size


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
    trained_rollouts: int = -1
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
            "trained_rollouts": med([float(s.trained_rollouts) for s in steps]),
            "reward": statistics.fmean(s.reward for s in steps) if steps else float("nan"),
            "alloc_overhead": med(
                [s.alloc_seconds / s.step_seconds for s in steps if s.step_seconds > 0]
            ),
        }


# --- our side ---------------------------------------------------------------------------------
def our_config(cfg: TrainerBenchConfig, *, round_size: int | None) -> GRPOConfig:
    """The ``GRPOConfig`` of our side: uniform allocation of ``G`` per prompt, TRL's settings."""
    return GRPOConfig(
        model=cfg.model,
        allocator="uniform",
        batch_size=cfg.batch_size,
        group_size=cfg.group_size,
        round_size=round_size,
        max_completion_length=cfg.max_completion_length,
        temperature=1.0,
        top_p=1.0,
        loss_type=cfg.loss_type,
        scale_rewards="group",
        beta=0.0,
        num_iterations=1,
        lr=cfg.lr,
        weight_decay=0.0,
        max_grad_norm=1.0,
        micro_batch_size=cfg.rollouts,  # one forward/backward over the batch, as TRL here
        generation_batch_size=cfg.rollouts,  # one generate call per round at most
        eval_every=0,
        save_every=0,
        tensorboard=False,
        progress=False,
        seed=cfg.seed,
        device="cpu",
        dtype="float32",
    )


def build_ours(cfg: TrainerBenchConfig, task: Any, *, round_size: int | None) -> Any:
    """Our trainer on a fresh copy of the model."""
    from trainers.models import load_policy
    from trainers.trainer import GRPOTrainer

    model, tokenizer = load_policy(cfg.model)
    return GRPOTrainer(
        our_config(cfg, round_size=round_size), task=task, model=model, tokenizer=tokenizer
    )


def prompt_schedule(trainer: Any, steps: int) -> list[list[Any]]:
    """The batches of examples ``trainer`` will draw in its next ``steps`` steps, in order.

    Draws them through the trainer's own sampler and puts its data cursor back, so the trainer
    then sees exactly these batches.
    """
    saved = (trainer.epoch, trainer.cursor, trainer._order.copy())
    try:
        return [trainer._next_batch() for _ in range(steps)]
    finally:
        trainer.epoch, trainer.cursor, trainer._order = saved


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
        trained_rollouts=int(report.trained_rollouts),
        prompts=[e.prompt for e in trainer.examples],
    )


# --- TRL's side -------------------------------------------------------------------------------
def _require_trl() -> None:
    try:
        import datasets  # noqa: F401
        import trl  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            'the TRL peer needs trl and datasets: pip install -e ".[trl]" (or peer="none")'
        ) from exc


class _TokenCounter:
    """TRL-style exact-match reward that also counts the completion tokens it is shown."""

    __name__ = "exact_match"

    def __init__(self) -> None:
        self.tokens = 0
        self.rewards: list[float] = []
        self.prompts: list[str] = []

    def __call__(
        self,
        prompts: list[str],
        completions: list[str],
        completion_ids: list[list[int]],
        answer: list[str],
        **kwargs: Any,
    ) -> list[float | None]:
        self.tokens += sum(len(ids) for ids in completion_ids)
        for p in prompts:  # each prompt comes G times in a row
            if not self.prompts or self.prompts[-1] != p:
                self.prompts.append(p)
        out = [1.0 if c.strip() == a else 0.0 for c, a in zip(completions, answer, strict=True)]
        self.rewards.extend(out)
        return list(out)

    def pop(self) -> tuple[int, float, list[str]]:
        """Tokens, mean reward and prompts since the last call."""
        tokens, rewards, prompts = self.tokens, self.rewards, self.prompts
        self.tokens, self.rewards, self.prompts = 0, [], []
        return tokens, statistics.fmean(rewards) if rewards else float("nan"), prompts


def trl_arguments(cfg: TrainerBenchConfig, output_dir: str) -> dict[str, Any]:
    """``trl.GRPOConfig`` keyword arguments that match our side (recorded in the JSON)."""
    return {
        "output_dir": output_dir,
        # batch: B prompts × G completions per step, one optimizer step per generation
        "per_device_train_batch_size": cfg.rollouts,  # counts completions
        "generation_batch_size": cfg.rollouts,
        "num_generations": cfg.group_size,
        "gradient_accumulation_steps": 1,
        "num_iterations": 1,
        "max_steps": cfg.total_steps,
        "shuffle_dataset": False,  # the dataset already holds our order
        # sampling
        "max_completion_length": cfg.max_completion_length,
        "temperature": 1.0,
        "top_k": 0,
        "top_p": 1.0,
        "min_p": None,
        "repetition_penalty": 1.0,
        "use_vllm": False,
        # loss and optimizer
        "loss_type": cfg.loss_type,
        "scale_rewards": "group",
        "beta": 0.0,
        "epsilon": 0.2,
        "mask_truncated_completions": False,
        "learning_rate": cfg.lr,
        "lr_scheduler_type": "constant",
        "warmup_steps": 0,
        "weight_decay": 0.0,
        "max_grad_norm": 1.0,
        "optim": "adamw_torch",
        "activation_checkpointing": False,  # TRL defaults it (as gradient_checkpointing) on
        # machine
        "use_cpu": True,
        "bf16": False,  # TRL's GRPOConfig defaults bf16 to True
        "fp16": False,
        "seed": cfg.seed,
        "dataloader_num_workers": 0,
        # no logging, saving or reporting
        "report_to": "none",
        "logging_strategy": "no",
        "save_strategy": "no",
        "eval_strategy": "no",
        "disable_tqdm": True,
        "log_completions": False,
    }


def build_trl(
    cfg: TrainerBenchConfig,
    batches: list[list[Any]],
    output_dir: str,
    callbacks: list[Any],
) -> tuple[Any, _TokenCounter, dict[str, Any]]:
    """TRL's trainer on a fresh copy of the model, over exactly ``batches`` in order."""
    _require_trl()
    import trl
    from datasets import Dataset

    from trainers.models import load_policy

    model, tokenizer = load_policy(cfg.model)
    if getattr(tokenizer, "chat_template", None) is not None:
        raise ValueError(
            f"model {cfg.model!r} has a chat template; this benchmark feeds plain-text prompts "
            "and expects none: use a base model"
        )
    rows = [e for batch in batches for e in batch]
    dataset = Dataset.from_dict(
        {"prompt": [e.prompt for e in rows], "answer": [e.answer for e in rows]}
    )
    counter = _TokenCounter()
    kwargs = trl_arguments(cfg, output_dir)
    names = {f.name for f in dataclasses.fields(trl.GRPOConfig)}
    if "activation_checkpointing" not in names:  # transformers before the rename
        kwargs["gradient_checkpointing"] = kwargs.pop("activation_checkpointing")
    trainer = trl.GRPOTrainer(
        model=model,
        reward_funcs=counter,
        args=trl.GRPOConfig(**kwargs),
        train_dataset=dataset,
        processing_class=tokenizer,
        callbacks=callbacks,
    )
    return trainer, counter, kwargs


def _timed_generation(trainer: Any, sink: list[float]) -> None:
    """Wrap TRL's generate-and-score call to record its seconds (nothing else changes)."""
    inner = trainer._generate_and_score_completions

    def wrapped(inputs: Any) -> Any:
        start = time.perf_counter()
        try:
            return inner(inputs)
        finally:
            sink.append(time.perf_counter() - start)

    trainer._generate_and_score_completions = wrapped


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


def _trl_callback(
    cfg: TrainerBenchConfig,
    schedule: _Schedule,
    trl_side: SideTimings,
    counter: Callable[[], tuple[int, float, list[str]]],
    gen_seconds: list[float],
) -> Any:
    from transformers import TrainerCallback

    class SliceCallback(TrainerCallback):  # type: ignore[misc]
        """Times TRL's steps and runs our slices between TRL's."""

        mark = 0.0

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.mark = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            now = time.perf_counter()
            g = int(state.global_step)
            tokens, reward, prompts = counter()
            gen = sum(gen_seconds)
            gen_seconds.clear()
            if g > cfg.warmup_steps:
                k = (g - cfg.warmup_steps - 1) // cfg.steps_per_slice
                if len(trl_side.slices) <= k:
                    trl_side.slices.append([])
                trl_side.slices[k].append(
                    StepTiming(
                        seconds=now - self.mark,
                        tokens=tokens,
                        reward=reward,
                        gen_seconds=gen,
                        trained_rollouts=cfg.rollouts,  # TRL back-propagates every completion
                        prompts=prompts,
                    )
                )
            if g == cfg.warmup_steps:
                schedule.warmup()
            elif g > cfg.warmup_steps and (g - cfg.warmup_steps) % cfg.steps_per_slice == 0:
                schedule.slice()
            self.mark = time.perf_counter()

    return SliceCallback()


def versions(peer: str) -> dict[str, str]:
    """Library versions of this run."""
    import platform

    out = {"python": platform.python_version()}
    names = ["adaroll", "numpy", "torch", "transformers", "accelerate", "tokenizers"]
    if peer == "trl":
        names += ["trl", "datasets"]
    for name in names:
        with contextlib.suppress(md.PackageNotFoundError):
            out[name] = md.version(name)
    return out


def measure(cfg: TrainerBenchConfig) -> dict[str, Any]:
    """Run the benchmark; returns the results (what ``main`` prints and writes).

    torch's thread count is set to ``cfg.threads`` for the run and put back afterwards.
    """
    import torch

    threads = torch.get_num_threads()
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
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
        _require_trl()
    task = make_task("arithmetic", seed=cfg.seed)
    variants: dict[str, int | None] = {"ours": cfg.round_size}
    if cfg.compare_one_round and cfg.round_size != cfg.rollouts:
        variants["ours (one round)"] = cfg.rollouts
    ours = {name: build_ours(cfg, task, round_size=rs) for name, rs in variants.items()}
    batches = prompt_schedule(next(iter(ours.values())), cfg.total_steps)
    schedule = _Schedule(cfg, ours)
    sides: list[SideTimings] = []
    trl_kwargs: dict[str, Any] | None = None
    same_weights: bool | None = None
    same_ids: bool | None = None
    if cfg.peer == "trl":
        trl_side = SideTimings("TRL")
        gen_seconds: list[float] = []
        with tempfile.TemporaryDirectory(prefix="bench-trl-") as tmp:
            holder: list[Any] = []
            callback = _trl_callback(cfg, schedule, trl_side, lambda: holder[0].pop(), gen_seconds)
            trainer, counter, trl_kwargs = build_trl(cfg, batches, tmp, [callback])
            holder.append(counter)
            mine = next(iter(ours.values())).policy.state_dict()
            theirs = trainer.model.state_dict()
            same_weights = mine.keys() == theirs.keys() and all(
                torch.equal(mine[k], theirs[k]) for k in mine
            )
            # what TRL's _tokenize_prompts computes for plain-string prompts
            first = next(iter(ours.values()))
            plain = getattr(trainer.processing_class, "chat_template", None) is None
            same_ids = plain and all(
                trainer.processing_class(text=[e.prompt for e in b])["input_ids"]
                == [first.prompt_ids(e) for e in b]
                for b in batches
            )
            _timed_generation(trainer, gen_seconds)
            with contextlib.redirect_stdout(io.StringIO()):  # the Trainer prints its final log
                trainer.train()
        trl_kwargs = {k: v for k, v in trl_kwargs.items() if k != "output_dir"}
        sides.append(trl_side)
    else:
        schedule.warmup()
        for _ in range(cfg.slices):
            schedule.slice()
    sides = [*schedule.timings.values(), *sides]
    step_prompts = {s.name: [t.prompts for sl in s.slices for t in sl] for s in sides}
    same_prompts = all(p == step_prompts["ours"] for p in step_prompts.values())
    summary = {s.name: s.summary() for s in sides}
    result: dict[str, Any] = {
        "config": dataclasses.asdict(cfg),
        "ours_config": {name: dataclasses.asdict(t.cfg) for name, t in ours.items()},
        "trl_config": trl_kwargs,
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
            "same_prompts": same_prompts,
            "same_prompt_ids": same_ids,
            "same_initial_weights": same_weights,
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

    cfg = result["config"]
    table = Table(
        title=(
            f"GRPO steps on CPU: B={cfg['batch_size']}, G={cfg['group_size']}, "
            f"L={cfg['max_completion_length']}; medians of {cfg['slices']} alternating slices "
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
            f"{s['trained_rollouts']:.0f}",
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
