"""One TRL training writing an ``adaroll grpo`` run directory: what ``adaroll compete --trainer
trl`` runs for each (entrant, seed), so that its tables, statistics, evidence, plots and
provenance checks read TRL runs exactly as they read the trainer's own.

Trainers. An allocator spec trains with ``trainers.trl.AllocatingGRPOTrainer``; ``uniform`` with
it is plain ``trl.GRPOTrainer`` bit for bit (one round, TRL's own layout and advantages:
``tests/trainers/trl/test_trainer.py::test_uniform_reproduces_plain_trl_exactly`` checks the
completions, rewards, losses and weights). ``cgrpo`` trains with trl-cgrpo's ``CGRPOTrainer`` at
its documented defaults (``trainers.trl.cgrpo``; the ``cgrpo`` extra, TRL 1.14 only).

Settings (``TrlRunConfig``, a ``GRPOConfig`` with three TRL fields). A step is one optimizer
step over B·G completions (C-GRPO: B prompts in groups of its width), in micro-batches of
``micro_batch_size`` rows (TRL's gradient accumulation); ``lr`` with ``lr_schedule`` (TRL's
``lr_scheduler_type``), ``loss_type``, ``scale_rewards``, ``beta``, ``epsilon`` (and
``epsilon_high``), ``num_iterations``, ``max_completion_length``, ``temperature``, ``top_p``,
``weight_decay`` and ``max_grad_norm`` are TRL's settings of the same meaning;
``steps_per_generation`` counts optimizer steps per generation batch (TRL's
``steps_per_generation`` is that times the gradient accumulation steps). The allocation and
belief settings go to ``AllocatingGRPOTrainer`` (``rounds`` as a round size of
ceil(budget / rounds)); ``pool_size`` P, for an adaptive allocator, hands TRL P prompts of
B·G / P rows (``TrlRunConfig.pooled``). Settings TRL cannot honour are refused, naming the fix.

Data. The task is the trainer's (``build_task``: ``task_size``, ``validation_size``,
``task_seed``). The last ``calibration_size`` training prompts are held out from training for
every entrant, so that C-GRPO calibrates on prompts no entrant trains on and that no evaluation
reads (the evaluations read the test or the validation split), and every entrant of a
competition trains on the same prompts whether ``cgrpo`` runs or not. Prompts are plain text, or
a conversation in the tokenizer's chat template (``chat_template``, ``system_prompt``: what the
evaluation encodes too).

Evaluation: the trainer's one evaluation function (``trainers.grpo.evaluation.evaluate_examples``
through ``HFEngine``): ``eval_size`` prompts of ``eval_split`` (``held_out_subset``), ``eval_k``
samples each at the training temperature, the same sampling seed at every evaluation
(``derive_seed(seed, EVALUATION, 0)``, as the trainer's own), in a forked random state, so the
training draws nothing else than without it. ``eval_train`` adds training prompts under
``train/``.

The run directory is ``adaroll grpo``'s: ``config.json`` (``asdict`` of the ``TrlRunConfig``)
and ``configs/``, ``versions.json`` (TRL and trl-cgrpo included), ``task.json`` (with the
calibration prompts held out), ``provenance.json`` (every start, with ``trainer``: ``"trl
<version>"``), ``metrics.jsonl`` (one record per step: ``trainers.experiments.trl_callback``),
``eval.jsonl`` (``step``, ``rollouts_total``: completions generated so far, calibration included,
``seconds``: training seconds so far, pass@1, pass@k, per level), ``tb/``, ``checkpoints/``
(TRL's ``checkpoint-<step>`` with the belief store, the run's counters, C-GRPO's conformal state
and a ``COMPLETE`` marker), then ``summary.json``, ``beliefs.json`` (allocators), ``curve.png``
and, last, ``DONE``. Rerunning with ``resume`` continues from the newest complete checkpoint
through TRL's own resume (weights, optimizer, scheduler, random states, data order).

>>> summary = main(TrlRunConfig(allocator="bamdp", steps=4, out="runs/trl/bamdp"))  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import json
import math
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from trainers.grpo.config import GRPOConfig, check_config_int, field_help
from trainers.trl.cgrpo import CGRPO, CGRPO_LOSS_TYPES

__all__ = [
    "LrSchedule",
    "RunTask",
    "TrlRunConfig",
    "evaluate",
    "main",
    "run_task",
    "trl_arguments",
    "trl_checkpoints",
]

LrSchedule = Literal["constant", "linear", "cosine"]
#: the ``TrlRunConfig`` fields ``GRPOConfig`` lacks (settings only TRL runs have)
TRL_FIELDS: tuple[str, ...] = ("trainer", "lr_schedule", "steps_per_generation", "calibration_size")


@dataclass
class TrlRunConfig(GRPOConfig):
    """One TRL run: every ``GRPOConfig`` field TRL can honour, plus TRL's own settings."""

    trainer: Literal["trl"] = field(
        default="trl", metadata=field_help("the trainer: TRL (recorded in config.json)")
    )
    lr_schedule: LrSchedule = field(
        default="constant",
        metadata=field_help("learning-rate schedule over the run (TRL's lr_scheduler_type)"),
    )
    steps_per_generation: int = field(
        default=1,
        metadata=field_help(
            "optimizer steps each generation batch feeds: k·B prompts are generated every k "
            "steps (TRL's steps_per_generation is this × the gradient accumulation steps)"
        ),
    )
    calibration_size: int = field(
        default=200,
        metadata=field_help(
            "training prompts held out from training for every entrant, C-GRPO's calibration "
            "set (200 as trl-cgrpo's example holds out)"
        ),
    )

    def __post_init__(self) -> None:
        early = trl_refusals(self, early=True)  # before GRPOConfig's own messages
        if early:
            raise ValueError(
                f"TRL runs cannot honour these settings: {'; '.join(early)} (or run with the "
                "trainer's own loop: adaroll compete --trainer adaroll)"
            )
        if self.allocator.strip() == CGRPO:  # not an allocator spec: GRPOConfig would refuse it
            self.allocator = "uniform"
            try:
                super().__post_init__()
            finally:
                self.allocator = CGRPO
        else:
            super().__post_init__()
        if self.lr_schedule not in get_args(LrSchedule):
            raise ValueError(
                f"lr_schedule must be one of {list(get_args(LrSchedule))}, got "
                f"{self.lr_schedule!r}: pick one of them"
            )
        check_config_int("steps_per_generation", self.steps_per_generation, 1)
        check_config_int("calibration_size", self.calibration_size, 0)
        refused = trl_refusals(self)
        if refused:
            raise ValueError(
                "TRL runs cannot honour these settings: " + "; ".join(refused) + " (or run "
                "with the trainer's own loop: adaroll compete --trainer adaroll)"
            )

    @property
    def is_cgrpo(self) -> bool:
        """Whether this run is C-GRPO's (``allocator`` ``"cgrpo"``)."""
        return self.allocator == CGRPO

    @property
    def pooled(self) -> bool:
        """Whether the allocator sees a pool of ``pool_size`` prompts a step: TRL then hands it
        ``pool_size`` prompts with ``num_generations`` = B·G / ``pool_size`` (the same budget;
        the allocator may give some none), as the trainer's own pool; an outcome-blind allocator
        (``uniform``) keeps B prompts of G, as there."""
        from agents.registry import is_adaptive

        return self.pool_size is not None and not self.is_cgrpo and is_adaptive(self.allocator)

    @property
    def trl_group(self) -> int:
        """TRL's ``num_generations``: G, or B·G / ``pool_size`` with a pool (``pooled``)."""
        if self.pooled:
            return self.batch_size * self.group_size // int(self.pool_size or 1)
        return self.group_size

    @property
    def pilot_rollouts(self) -> int:
        """The pilot (``GRPOConfig.pilot_rollouts``); C-GRPO samples in its own steps: 0."""
        return 0 if self.is_cgrpo else super().pilot_rollouts

    def round_arguments(self) -> dict[str, Any]:
        """``AllocatingGRPOTrainer``'s ``round_size`` and ``round_schedule`` for this config:
        ``rounds`` becomes a round size of ceil(budget / rounds) over a generation batch."""
        if self.rounds is not None:
            budget = self.steps_per_generation * self.batch_size * self.group_size
            return {"round_size": -(-budget // self.rounds), "round_schedule": None}
        return {"round_size": self.round_size, "round_schedule": self.round_schedule}


def trl_refusals(cfg: TrlRunConfig, *, early: bool = False) -> list[str]:
    """What a ``TrlRunConfig`` sets that a TRL run cannot honour, each with its fix (``early``:
    only those whose ``GRPOConfig`` check would otherwise speak first, and wrongly for TRL)."""
    if early:
        refused = []
        if cfg.utility == "snr(auto)":
            refused.append("utility 'snr(auto)' (kappa is measured by adaroll's trainer only)")
        if cfg.allocator.strip() == CGRPO and cfg.allocator_kwargs:
            refused.append("allocator_kwargs for 'cgrpo' (C-GRPO runs at its documented defaults)")
        return refused
    refused = []
    if cfg.group_size < 2 and not cfg.is_cgrpo:
        refused.append(
            f"group_size {cfg.group_size} (TRL's groups need two: --group-size 2 or more)"
        )
    if cfg.engine != "hf":
        refused.append(f"engine {cfg.engine!r} (TRL generates through its own path: --engine hf)")
    if cfg.old_logprobs != "recompute":
        refused.append("old_logprobs 'engine' (TRL computes its own: --old-logprobs recompute)")
    if cfg.dynamic_sampling:
        refused.append("dynamic_sampling (TRL has no DAPO dynamic sampling at a fixed budget)")
    if cfg.pool_size is not None and cfg.is_cgrpo:
        refused.append(f"pool_size {cfg.pool_size} for 'cgrpo' (C-GRPO samples B prompts)")
    elif cfg.pooled:
        P, N = int(cfg.pool_size or 0), cfg.batch_size * cfg.group_size
        if N % P or N // P < 2:
            refused.append(
                f"pool_size {P} (TRL generates num_generations = B·G / pool_size rows per prompt "
                f"of the pool, a whole number >= 2; B·G = {N}: e.g. pool_size 2·B = "
                f"{2 * cfg.batch_size} when G is even)"
            )
    if cfg.budget is not None and cfg.budget != cfg.group_size * cfg.batch_size:
        refused.append(
            f"budget {cfg.budget} (TRL's budget is B·G = {cfg.batch_size * cfg.group_size}: "
            "set it through --group-size)"
        )
    if (cfg.prior_alpha, cfg.prior_beta) != (1.0, 1.0):
        refused.append(
            f"prior_alpha/prior_beta {cfg.prior_alpha}/{cfg.prior_beta} (AllocatingGRPOTrainer's "
            "fixed prior is Beta(1, 1))"
        )
    if cfg.gradient_noise_every:
        refused.append(
            f"gradient_noise_every {cfg.gradient_noise_every} (measured by adaroll's trainer "
            "only: 0)"
        )
    if cfg.is_cgrpo:
        if cfg.loss_type not in CGRPO_LOSS_TYPES:
            refused.append(
                f"loss_type {cfg.loss_type!r} for 'cgrpo' (trl-cgrpo needs a token-normalised "
                f"loss: {', '.join(CGRPO_LOSS_TYPES)}; --loss-type dapo)"
            )
        if cfg.calibration_size < 1:
            refused.append("calibration_size 0 for 'cgrpo' (it calibrates on held-out prompts)")
    return refused


def trl_arguments(
    cfg: TrlRunConfig, output_dir: str, *, width: int | None = None
) -> dict[str, Any]:
    """The ``trl.GRPOConfig`` arguments of a run (``width``: the rows per prompt, C-GRPO's
    when given, else ``group_size``); raises ``ValueError`` when ``micro_batch_size`` does not
    divide a step's rows."""
    import torch

    G = int(width if width is not None else cfg.group_size)
    rows = cfg.batch_size * G  # a pool (cfg.pooled) has as many: pool_size × trl_group
    micro = min(cfg.micro_batch_size, rows)
    if rows % micro:
        raise ValueError(
            f"micro_batch_size ({cfg.micro_batch_size}) must divide a step's rows, B × G = "
            f"{cfg.batch_size} × {G} = {rows} (TRL's gradient accumulation takes equal "
            "micro-batches): pick a divisor"
        )
    generations = G if width is not None else cfg.trl_group
    accumulation = rows // micro
    gpu = cfg.device != "cpu" and torch.cuda.is_available()
    bf16 = gpu and (
        cfg.dtype == "bfloat16" or (cfg.dtype == "auto" and torch.cuda.is_bf16_supported())
    )
    return {
        "output_dir": output_dir,
        "per_device_train_batch_size": micro,
        "gradient_accumulation_steps": accumulation,
        "steps_per_generation": cfg.steps_per_generation * accumulation,
        "num_generations": generations,
        "num_iterations": cfg.num_iterations,
        "max_completion_length": cfg.max_completion_length,
        "max_steps": cfg.steps,
        "learning_rate": cfg.lr,
        "lr_scheduler_type": cfg.lr_schedule,
        "weight_decay": cfg.weight_decay,
        "max_grad_norm": cfg.max_grad_norm,
        "loss_type": cfg.loss_type,
        "scale_rewards": cfg.scale_rewards,
        "beta": cfg.beta,
        "epsilon": cfg.epsilon,
        "epsilon_high": cfg.epsilon_high,
        "temperature": cfg.temperature,
        "top_p": cfg.top_p,
        "top_k": 0,
        "use_cpu": not gpu,
        "bf16": bf16,
        "activation_checkpointing": False,
        "report_to": "none",
        "save_strategy": "no",  # the run's callback asks for each checkpoint
        "save_total_limit": None,  # and keeps the newest complete ones itself
        "logging_steps": 1,  # one log per step completes each step record
        "disable_tqdm": True,
        "seed": cfg.seed,
        "dataloader_num_workers": 0,
        "log_completions": False,
    }


def trl_checkpoints(out: str | Path) -> list[Path]:
    """The complete TRL checkpoints of a run directory, oldest first."""
    from trainers.experiments.trl_callback import complete_checkpoints

    return complete_checkpoints(Path(out) / "checkpoints")


# --- the task, the prompts, the evaluation ----------------------------------------------------
@dataclass
class RunTask:
    """The task of a run, its training prompts and its held-out calibration prompts (the last
    ``calibration_size`` of the task's training split)."""

    task: Any
    train: list[Any]
    calibration: list[Any]

    def describe(self) -> dict[str, Any]:
        """``task.describe()`` with the prompts trained on and the calibration prompts."""
        return {
            **self.task.describe(),
            "num_train_used": len(self.train),
            "num_calibration_held_out": len(self.calibration),
            "calibration": "the last num_calibration_held_out training prompts, held out from "
            "training for every entrant (C-GRPO calibrates on them)",
        }


def run_task(cfg: TrlRunConfig) -> RunTask:
    """The run's task (the trainer's ``build_task``) with its calibration prompts held out;
    refuses a split the evaluation needs but the task lacks."""
    from trainers.grpo.trainer import build_task

    task = build_task(cfg)
    n = cfg.calibration_size
    if n >= len(task.train):
        raise ValueError(
            f"calibration_size ({n}) leaves no training prompts of task {task.name!r} "
            f"({len(task.train)} in all): lower --calibration-size or raise --task-size"
        )
    if cfg.eval_split == "validation" and cfg.eval_every and not task.validation:
        raise ValueError(
            f"eval_split='validation' but task {task.name!r} has no validation split: give "
            "--validation-size N (arithmetic), num_validation in an rg: spec, or --eval-split test"
        )
    cut = len(task.train) - n
    return RunTask(task, list(task.train[:cut]), list(task.train[cut:]))


def evaluate(
    model: Any,
    tokenizer: Any,
    examples: list[Any],
    cfg: GRPOConfig,
    score: Any,
) -> dict[str, float]:
    """pass@1, pass@k, prompts and per-level pass@1 of ``model`` on ``examples``: the trainer's
    one evaluation (``evaluate_examples``) through ``HFEngine``, prompts encoded as the run
    trains on them (``chat_template``, ``system_prompt``), ``eval_k`` samples each with the
    training sampling settings and the trainer's evaluation seed; the model is left in the mode
    it was in, and the global random state as it was (the engine forks it)."""
    from trainers.engines.base import SamplingSpec
    from trainers.engines.hf import HFEngine
    from trainers.grpo.data_order import EVALUATION, derive_seed
    from trainers.grpo.evaluation import evaluate_examples
    from trainers.models.prompts import PromptFormat

    fmt = PromptFormat(chat_template=cfg.chat_template, system_prompt=cfg.system_prompt)
    was_training = model.training
    model.eval()
    try:
        result = evaluate_examples(
            HFEngine(model, tokenizer),
            examples,
            encode=lambda e: fmt.encode(tokenizer, e.prompt),
            score=score,
            sampling=SamplingSpec(
                max_new_tokens=cfg.max_completion_length,
                temperature=cfg.temperature,
                top_p=cfg.top_p,
            ),
            k=cfg.eval_k,
            seed=derive_seed(cfg.seed, EVALUATION, 0),
        )
    finally:
        model.train(was_training)
    return result.figures


def _prompt_cell(cfg: GRPOConfig, tokenizer: Any) -> Any:
    """How a prompt's text becomes TRL's ``prompt`` cell: the conversation when the run uses
    the tokenizer's chat template (TRL applies it), else the plain (rendered) text."""
    from trainers.models.prompts import PromptFormat, prompt_messages

    fmt = PromptFormat(chat_template=cfg.chat_template, system_prompt=cfg.system_prompt)
    if fmt.uses_template(tokenizer):
        return lambda text: prompt_messages(text, system_prompt=cfg.system_prompt)
    return lambda text: fmt.render(tokenizer, text)


def build_trainer(
    cfg: TrlRunConfig, model: Any, tokenizer: Any, rt: RunTask, output_dir: str
) -> tuple[Any, Any]:
    """The TRL trainer of ``cfg`` and where its generated rollouts are counted
    (``trainers.experiments.trl_callback``'s ``AllocationSource`` or ``CGRPOSource``)."""
    from trainers.experiments.trl_callback import AllocationSource, CGRPOSource
    from trainers.trl.adapters import task_dataset, task_reward

    cell = _prompt_cell(cfg, tokenizer)
    reward = task_reward(rt.task)
    train = task_dataset(rt.task, examples=rt.train, prompt=cell)
    if cfg.is_cgrpo:
        from trainers.trl.cgrpo import answer_extractor, build_cgrpo, cgrpo_width

        trainer, meter = build_cgrpo(
            model=model,
            tokenizer=tokenizer,
            train_dataset=train,
            calibration_dataset=task_dataset(rt.task, examples=rt.calibration, prompt=cell),
            reward_funcs=reward,
            answer_extractor=answer_extractor(rt.task.name),
            train_args=trl_arguments(cfg, output_dir, width=cgrpo_width()),
        )
        return trainer, CGRPOSource(meter)
    import trl

    from trainers.trl.trainer import AllocatingGRPOTrainer

    group = cfg.group_column
    trainer = AllocatingGRPOTrainer(
        model=model,
        reward_funcs=reward,
        args=trl.GRPOConfig(**trl_arguments(cfg, output_dir)),
        train_dataset=train,
        processing_class=tokenizer,
        allocator=cfg.allocator,
        allocator_kwargs=cfg.allocator_options() or None,
        utility=cfg.utility,
        pilot=cfg.pilot_rollouts,
        pilot_threshold=cfg.pilot_threshold,
        max_group=cfg.max_group,
        belief_decay=cfg.belief_decay,
        belief_prior=cfg.belief_prior,
        belief_fit=cfg.belief_fit,
        belief_group=None if group == "none" else group,
        **cfg.round_arguments(),
    )
    return trainer, AllocationSource(trainer)


# --- the run ----------------------------------------------------------------------------------
def trainer_label() -> str:
    """``"trl <version>"``: what ``provenance.json`` records as a TRL run's trainer."""
    import trl

    return f"trl {trl.__version__}"


def _versions() -> dict[str, str]:
    from adaroll_env.stats import library_versions
    from trainers.run.grpo_command import TRAINER_PACKAGES

    return library_versions((*TRAINER_PACKAGES, "trl", "trl-cgrpo", "datasets"))


def _check_start(cfg: TrlRunConfig, existing: list[Path]) -> None:
    """Refuse a run directory with checkpoints but no ``resume``, and a resume whose config
    changes what a step computes (``trainers.run.checkpoints.config_changes``)."""
    from trainers.run.checkpoints import config_changes

    out = Path(cfg.out)
    if existing and not cfg.resume:
        raise ValueError(
            f"run directory {out} already holds checkpoints: resume it (resume=True, as adaroll "
            "compete does) or choose another directory"
        )
    path = out / "config.json"
    if existing and path.is_file() and not cfg.allow_config_change:
        changes = config_changes(json.loads(path.read_text()), cfg.to_dict())
        if changes:
            raise ValueError(
                f"resuming {out} with a different config: {'; '.join(changes)}. Resume with the "
                "config that ran (only the run length and logging may change), or choose another "
                "directory"
            )


def _open_run_dir(cfg: TrlRunConfig, rt: RunTask, resume_step: int | None) -> Any:
    """Write the configs, versions, task and provenance of this start; open the metrics log
    (records after the resumed checkpoint dropped)."""
    from adaroll_env.run_dirs import DONE_FILE
    from trainers.run.callbacks import MetricsLog
    from trainers.run.checkpoints import record_config
    from trainers.run.grpo_command import set_aside_results
    from trainers.run.provenance import record_start, start_record

    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / DONE_FILE).unlink(missing_ok=True)
    if resume_step is None:
        kept = set_aside_results(out)
        if kept is not None:
            print(f"trl run: {out} held results of an earlier run but no checkpoint: they are "
                  f"kept in {kept}, and this run starts from step 0", flush=True)  # fmt: skip
    record_config(out, cfg, resume_step or 0)
    versions = _versions()
    (out / "versions.json").write_text(json.dumps(versions, indent=2) + "\n")
    start = start_record(cfg, step=resume_step or 0)
    record_start(out, {**start, "trainer": trainer_label(), "versions": versions})
    (out / "task.json").write_text(json.dumps(rt.describe(), indent=2) + "\n")
    return MetricsLog(out, tensorboard=cfg.tensorboard, resume_step=resume_step)


def _drop_partial_checkpoints(out: Path, *, after: Path | None) -> None:
    """Remove the checkpoint directories a hard kill left without ``COMPLETE`` past the one
    resumed from (all of them on a fresh start): the rerun writes those steps afresh."""
    import shutil

    from trainers.experiments.trl_callback import CHECKPOINT_PREFIX, COMPLETE_FILE

    root = out / "checkpoints"
    if not root.is_dir():
        return
    last = -1 if after is None else int(after.name[len(CHECKPOINT_PREFIX) :])
    for d in root.glob(f"{CHECKPOINT_PREFIX}*"):
        number = d.name[len(CHECKPOINT_PREFIX) :]
        if number.isdigit() and int(number) > last and not (d / COMPLETE_FILE).exists():
            shutil.rmtree(d, ignore_errors=True)


def _resume_state(checkpoint: Path | None) -> tuple[Any, dict[str, Any] | None]:
    """The counters and extra state saved in ``checkpoint`` (fresh ones without one)."""
    from trainers.experiments.trl_callback import RUN_STATE_FILE, RunProgress

    if checkpoint is None:
        return RunProgress(), None
    saved = json.loads((checkpoint / RUN_STATE_FILE).read_text())
    return RunProgress(**saved["progress"]), saved.get("extra")


def _write_beliefs(trainer: Any, path: Path) -> None:
    """``beliefs.json`` of an allocating trainer's belief store (``write_beliefs``'s format)."""
    from types import SimpleNamespace

    from trainers.run.grpo_command import write_beliefs

    store = getattr(trainer, "belief_store", None)
    if store is not None:
        write_beliefs(SimpleNamespace(beliefs=store, step=int(trainer.state.global_step)), path)


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    """transformers' and TRL's warnings, info logs and progress bars (a bar per model load and
    per checkpoint) off for the block, as they were after it."""
    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def main(cfg: TrlRunConfig) -> dict[str, Any]:
    """Train ``cfg`` with TRL into the run directory ``cfg.out``; returns the summary (also in
    ``summary.json``). A run marked ``DONE`` with its steps is left as it is; with ``resume`` an
    unfinished one continues from its newest complete checkpoint. SIGINT/SIGTERM (or
    ``max_minutes``) stop it after the step in progress (at the end of a generation batch) with
    a checkpoint; a signal then raises ``stopping.RunInterrupted``."""
    import torch
    from transformers import PrinterCallback

    from trainers.experiments.trl_callback import RunDirectoryCallback
    from trainers.models.loading import load_policy
    from trainers.run import stopping
    from trainers.run.grpo_command import check_model_path, plot_curve, read_done, write_done
    from trainers.trl.cgrpo import cgrpo_state, load_cgrpo_state

    check_model_path(cfg.model)
    out = Path(cfg.out)
    done = read_done(out)
    if cfg.resume and done is not None and done["steps"] >= cfg.steps:
        print(f"trl run: {out} is done ({done['steps']} steps): nothing to train", flush=True)
        path = out / "summary.json"
        return dict(json.loads(path.read_text())) if path.is_file() else dict(done)
    existing = trl_checkpoints(out)
    _check_start(cfg, existing)
    threads = cfg.torch_threads()
    if threads:
        torch.set_num_threads(threads)
    rt = run_task(cfg)  # a bad task is refused before the model loads
    output_dir = str(out / "checkpoints")
    with _quiet_transformers():
        model, tokenizer = load_policy(cfg.model)
        trainer, source = build_trainer(cfg, model, tokenizer, rt, output_dir)
    checkpoint = existing[-1] if cfg.resume and existing else None
    _drop_partial_checkpoints(out, after=checkpoint)
    progress, extra = _resume_state(checkpoint)
    if cfg.is_cgrpo and extra is not None:
        load_cgrpo_state(trainer, extra)
    resume_step = progress.step if checkpoint is not None else None
    log = _open_run_dir(cfg, rt, resume_step)
    held_out = {"test": rt.task.test, "validation": rt.task.validation}[cfg.eval_split]
    from trainers.grpo.evaluation import held_out_subset

    examples = held_out_subset(held_out, cfg.eval_size)
    train_examples = held_out_subset(rt.train, cfg.eval_train) if cfg.eval_train else []

    def figures() -> dict[str, Any]:
        found = evaluate(trainer.model, tokenizer, examples, cfg, rt.task.score)
        if train_examples:
            train = evaluate(trainer.model, tokenizer, train_examples, cfg, rt.task.score)
            found.update({f"train/{k}": v for k, v in train.items()})
        return found

    callback = RunDirectoryCallback(
        cfg=cfg,
        trainer=trainer,
        source=source,
        log=log,
        evaluate=figures,
        progress=progress,
        fresh=checkpoint is None,
        extra_state=(lambda: cgrpo_state(trainer)) if cfg.is_cgrpo else None,
    )
    if checkpoint is not None:  # the evaluations kept from before the resume
        from trainers.run.callbacks import read_jsonl

        evals = read_jsonl(out / "eval.jsonl")
        if evals:
            callback.first_eval = evals[0] if evals[0]["step"] == 0 else None
            callback.last_eval = evals[-1]
    trainer.remove_callback(PrinterCallback)
    trainer.add_callback(callback)
    print(
        f"trl run: {cfg.allocator} ({trainer_label()}, {type(trainer).__name__}), B="
        f"{cfg.batch_size}, G={cfg.group_size}, {cfg.steps} steps, torch threads "
        f"{torch.get_num_threads()}, out {out}"
        + (f", resumed from {checkpoint.name}" if checkpoint is not None else ""),
        flush=True,
    )
    start = time.perf_counter()
    with stopping.StopSignals(), _quiet_transformers():
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    elapsed = time.perf_counter() - start
    step = int(trainer.state.global_step)
    stop = callback.stop or ("steps" if step >= cfg.steps else "time")
    last = callback.last_eval
    if not stop.startswith("SIG") and cfg.eval_every and (last is None or last["step"] != step):
        callback.run_evaluation()
    log.close()
    summary = _summary(cfg, callback, step, elapsed, stop)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    _write_beliefs(trainer, out / "beliefs.json")
    plot_curve(out)
    if stop == "steps":
        write_done(out, summary)  # last: the run is done once this exists
    print(
        f"trl run: {out}: {step} steps, {summary['rollouts_total']} rollouts generated, "
        f"stopped by {stop}"
        + (
            f", held-out pass@1 {summary['final_eval']['pass@1']:.3f}"
            if summary["final_eval"]
            else ""
        ),
        flush=True,
    )
    if stop.startswith("SIG"):
        stopping.clear()
        message = (
            f"trl run: stopped by {stop} after step {step}, checkpoint saved in {out}: rerun "
            "the same adaroll compete command to continue"
        )
        print(message, flush=True)
        raise stopping.RunInterrupted(stopping.signal_number(stop), message)
    return summary


def _mean(values: list[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return sum(finite) / len(finite) if finite else math.nan


def _summary(
    cfg: TrlRunConfig, callback: Any, step: int, elapsed: float, stop: str
) -> dict[str, Any]:
    """``summary.json``: ``adaroll grpo``'s keys, plus the trainer and the rollouts split into
    training and calibration."""
    reports = callback.reports
    p = callback.progress
    return {
        "out": str(cfg.out),
        "allocator": cfg.allocator,
        "trainer": trainer_label(),
        "steps": step,
        "steps_this_run": len(reports),
        "stopped_by": stop,
        "rollouts_total": p.rollouts_total,
        "train_rollouts": p.train_rollouts,
        "calibration_rollouts": p.calibration_rollouts,
        "minutes": elapsed / 60,
        "steps_per_s": len(reports) / elapsed if elapsed > 0 else math.nan,
        "informative_frac": _mean([r["informative_frac"] for r in reports]),
        "alloc_overhead": _mean([r["alloc_overhead"] for r in reports]),
        "first_eval": callback.first_eval,
        "final_eval": callback.last_eval,
    }
