"""TRL's side of the trainer benchmark (``trainers.benchmarks.trainer``): the same run in
``trl.GRPOTrainer``, timed step by step, with our slices run between TRL's by a callback.

Needs the ``trl`` extra (``pip install -e ".[trl]"``); imported only when ``peer="trl"``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from trainers.benchmarks.trainer import (
    SideTimings,
    StepTiming,
    TrainerBenchConfig,
    _Schedule,
)


def require_trl() -> None:
    """Raise ``ImportError`` naming the extra when trl or datasets is missing."""
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
        "num_generations": cfg.grpo.group_size,
        "gradient_accumulation_steps": 1,
        "num_iterations": 1,
        "max_steps": cfg.total_steps,
        "shuffle_dataset": False,  # the dataset already holds our order
        # sampling
        "max_completion_length": cfg.grpo.max_completion_length,
        "temperature": 1.0,
        "top_k": 0,
        "top_p": 1.0,
        "min_p": None,
        "repetition_penalty": 1.0,
        "use_vllm": False,
        # loss and optimizer
        "loss_type": cfg.grpo.loss_type,
        "scale_rewards": "group",
        "beta": 0.0,
        "epsilon": 0.2,
        "mask_truncated_completions": False,
        "learning_rate": cfg.grpo.lr,
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
        "seed": cfg.grpo.seed,
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
    require_trl()
    import trl
    from datasets import Dataset

    from trainers.models.loading import load_policy

    model, tokenizer = load_policy(cfg.grpo.model)
    if getattr(tokenizer, "chat_template", None) is not None:
        raise ValueError(
            f"model {cfg.grpo.model!r} has a chat template; this benchmark feeds plain-text "
            "prompts and expects none: use a base model"
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
                        gradient_rollouts=cfg.rollouts,  # TRL back-propagates every completion
                        prompts=prompts,
                    )
                )
            if g == cfg.warmup_steps:
                schedule.warmup()
            elif g > cfg.warmup_steps and (g - cfg.warmup_steps) % cfg.steps_per_slice == 0:
                schedule.slice()
            self.mark = time.perf_counter()

    return SliceCallback()


def run_trl_side(
    cfg: TrainerBenchConfig, ours: dict[str, Any], batches: list[list[Any]], schedule: _Schedule
) -> dict[str, Any]:
    """TRL's ``train()`` over ``batches``, our ``schedule`` run between its steps; TRL's timings
    (``side``), its config (``kwargs``) and the same-weights and same-prompt-ids checks."""
    import torch

    trl_side = SideTimings("TRL")
    gen_seconds: list[float] = []
    first = next(iter(ours.values()))
    with tempfile.TemporaryDirectory(prefix="bench-trl-") as tmp:
        holder: list[Any] = []
        callback = _trl_callback(cfg, schedule, trl_side, lambda: holder[0].pop(), gen_seconds)
        trainer, counter, trl_kwargs = build_trl(cfg, batches, tmp, [callback])
        holder.append(counter)
        mine = first.policy.state_dict()
        theirs = trainer.model.state_dict()
        same_weights = mine.keys() == theirs.keys() and all(
            torch.equal(mine[k], theirs[k]) for k in mine
        )
        # what TRL's _tokenize_prompts computes for plain-string prompts
        plain = getattr(trainer.processing_class, "chat_template", None) is None
        same_ids = plain and all(
            trainer.processing_class(text=[e.prompt for e in b])["input_ids"]
            == [first.prompt_ids(e) for e in b]
            for b in batches
        )
        _timed_generation(trainer, gen_seconds)
        with contextlib.redirect_stdout(io.StringIO()):  # the Trainer prints its final log
            trainer.train()
    return {
        "side": trl_side,
        "kwargs": {k: v for k, v in trl_kwargs.items() if k != "output_dir"},
        "same_weights": same_weights,
        "same_ids": same_ids,
    }
