"""The TRL-free parts of :mod:`trainers.trl.trainer`: prompt keys, an adaroll task as a TRL dataset
and reward function, the per-batch allocation record, joining TRL's per-round outputs, and the
argument checks ``AllocatingGRPOTrainer`` runs before TRL's constructor.

Importing this module needs neither TRL nor ``datasets`` (``task_dataset`` imports the latter
when called), so these pieces are testable and reusable on their own.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from adaroll_env.errors import check_int
from trainers.tasks import Example, Task

__all__ = [
    "AllocationRecord",
    "check_allocation_arguments",
    "merge_generated",
    "prompt_key",
    "task_dataset",
    "task_reward",
    "unsupported",
    "zero_std_fraction",
]


def unsupported(name: str) -> str:
    """The error for a TRL feature whose per-row state TRL builds before generation."""
    return (
        f"AllocatingGRPOTrainer does not support TRL's {name} (TRL builds its per-row state "
        "before generation, which the allocation rounds reorder): drop it, or use "
        "trl.GRPOTrainer for this run"
    )


def check_allocation_arguments(
    allocator: Any,
    allocator_kwargs: dict[str, Any] | None,
    round_size: int | None,
    pilot: int | None,
    max_group: int | None,
    trl_kwargs: dict[str, Any],
) -> tuple[int | None, int | None, int | None]:
    """Validate ``AllocatingGRPOTrainer``'s own arguments before TRL's constructor runs;
    returns ``(round_size, pilot, max_group)`` as checked integers."""
    if pilot is not None:
        pilot = check_int("pilot", pilot, 0)
    if round_size is not None:
        round_size = check_int("round_size", round_size, 1)
    if max_group is not None:
        max_group = check_int("max_group", max_group, 1)
    if allocator_kwargs is not None and not isinstance(allocator_kwargs, dict):
        raise TypeError(
            f"allocator_kwargs must be a dict of keyword arguments, got "
            f"{type(allocator_kwargs).__name__}"
        )
    if allocator_kwargs and not isinstance(allocator, str):
        raise ValueError(
            "allocator_kwargs are for building an allocator from a spec, but allocator is an "
            f"instance ({type(allocator).__name__}): build it with those arguments yourself"
        )
    if not isinstance(allocator, str):
        missing = [m for m in ("reset", "allocate") if not callable(getattr(allocator, m, None))]
        if missing:
            raise TypeError(
                f"allocator {allocator!r} lacks {', '.join(missing)}: pass a spec such as "
                "'bamdp' or an object meeting agents' Allocator protocol"
            )
    for name in ("tools", "environment_factory", "rollout_func"):
        if trl_kwargs.get(name):
            raise ValueError(unsupported(name))
    return round_size, pilot, max_group


def prompt_key(prompt: Any) -> int:
    """A stable 63-bit id of a prompt (text or conversation): the belief store's key."""
    text = json.dumps(prompt, sort_keys=True, default=str, ensure_ascii=False)
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little") >> 1


#: the columns :func:`task_dataset` always writes; an example column of the same name is left out
_DATASET_COLUMNS = ("prompt", "answer", "level", "example_id")
_SPLITS = ("train", "validation", "test")


def _uniform(values: list[Any]) -> list[Any]:
    """``values`` as one Arrow type: as they are when they share one, ints with floats as
    floats, anything else mixed as text."""
    kinds = {type(v) for v in values}
    if len(kinds) <= 1:
        return values
    if kinds <= {int, float}:
        return [float(v) for v in values]
    return [str(v) for v in values]


def task_dataset(
    task: Task,
    split: str = "train",
    *,
    examples: Sequence[Example] | None = None,
    prompt: Callable[[str], Any] | None = None,
) -> Any:
    """A TRL dataset (``datasets.Dataset``) of an adaroll task's split (``"train"``,
    ``"validation"`` or ``"test"``): ``prompt``, ``answer``, ``level`` and ``example_id``
    columns, one row per example, in the task's order, then every column of the examples'
    ``columns`` (a jsonl row's fields, a reasoning-gym item's metadata) that all of the split's
    examples have, so that reward functions receive them as keyword arguments (a split with no
    examples, such as most tasks' validation, gives an empty dataset).

    ``examples`` replaces the split's rows by the caller's (a part of the split, e.g. the
    training prompts less some held out; :func:`task_reward` scores them when they are the
    task's own); ``prompt`` maps a prompt's text to the ``prompt`` cell (default: the text; a
    conversation such as ``trainers.models.prompts.prompt_messages(text)`` makes TRL apply the
    tokenizer's chat template)."""
    from datasets import Dataset

    if split not in _SPLITS:
        raise ValueError(f"split must be one of {', '.join(_SPLITS)}, got {split!r}")
    rows = (
        list(examples)
        if examples is not None
        else {"train": task.train, "validation": task.validation, "test": task.test}[split]
    )
    to_prompt = prompt if prompt is not None else (lambda text: text)
    data: dict[str, list[Any]] = {
        "prompt": [to_prompt(e.prompt) for e in rows],
        "answer": [e.answer for e in rows],
        "level": [e.level for e in rows],
        "example_id": [e.id for e in rows],
    }
    shared = set(rows[0].columns).intersection(*(e.columns for e in rows[1:])) if rows else set()
    for key in sorted(shared - set(_DATASET_COLUMNS)):
        data[key] = _uniform([e.columns[key] for e in rows])
    return Dataset.from_dict(data)


def task_reward(task: Task) -> Any:
    """A TRL reward function that scores with the task's own verifier (rows of
    :func:`task_dataset` of any split, matched by their ``example_id`` column)."""
    examples = {e.id: e for e in (*task.train, *task.validation, *task.test)}

    def reward(
        prompts: list[Any],
        completions: list[Any],
        completion_ids: list[list[int]],
        example_id: list[int],
        **kwargs: Any,
    ) -> list[float]:
        rows = [examples[int(i)] for i in example_id]
        texts = [c if isinstance(c, str) else c[-1]["content"] for c in completions]
        return [float(r) for r in task.score(rows, texts, completion_ids).rewards]

    reward.__name__ = f"{task.name}_reward"
    return reward


@dataclass
class AllocationRecord:
    """What one generation batch's allocation did (all processes together)."""

    step: int  #: TRL's ``global_step`` when the batch was generated
    counts: list[int]  #: rollouts each prompt got, in the batch's prompt order
    successes: list[int]  #: of which successes (reward >= ``success_threshold``)
    rounds: int  #: generation rounds, the pilot included
    alloc_seconds: float  #: allocator reset and decisions, belief-store priors and update
    seconds: float  #: wall time of the whole generate-and-score call
    #: time in this subclass's own code (gathering rows, allocating, grouping, beliefs,
    #: advantages, metrics): the call's wall time less TRL's generate, score and batch building
    own_seconds: float = 0.0
    prompts: list[Any] = field(default_factory=list)  #: the batch's prompts, in order


def merge_generated(parts: list[tuple[Any, ...]]) -> tuple[Any, ...]:
    """Concatenate per-round outputs of TRL's ``_generate`` (lists joined, ``None`` kept)."""
    merged: list[Any] = []
    for values in zip(*parts, strict=True):
        if all(v is None for v in values):
            merged.append(None)
        elif all(isinstance(v, dict) for v in values):
            if any(values):
                raise RuntimeError("TRL's _generate returned extra fields (rollout_func only)")
            merged.append({})
        elif all(isinstance(v, list) for v in values):
            merged.append([x for v in values for x in v])
        else:
            raise RuntimeError(
                f"cannot join TRL's per-round outputs of types {set(map(type, values))}"
            )
    return tuple(merged)


def zero_std_fraction(
    rewards_per_func: torch.Tensor, weights: torch.Tensor, group_ids: Any
) -> float:
    """TRL's ``frac_reward_zero_std`` over ragged groups: share of completions whose group's
    rewards do not vary (a group of one included)."""
    total = (rewards_per_func * weights.to(rewards_per_func.device).unsqueeze(0)).nansum(dim=1)
    r = total.detach().cpu().numpy()
    g = np.asarray(group_ids)
    flat = 0
    for q in np.unique(g):
        vals = r[g == q]
        if vals.size < 2 or np.ptp(vals) == 0:
            flat += vals.size
    return flat / max(r.size, 1)
