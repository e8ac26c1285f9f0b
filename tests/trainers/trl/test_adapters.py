"""The TRL-free parts of the TRL subclass (``trainers.trl.adapters``)."""

from __future__ import annotations

import pytest
import torch

from trainers.tasks import make_task
from trainers.trl.adapters import (
    check_allocation_arguments,
    merge_generated,
    prompt_key,
    task_dataset,
    task_reward,
    unsupported,
    zero_std_fraction,
)


def test_prompt_key_is_stable_63_bit_and_tells_prompts_apart() -> None:
    chat = [{"role": "user", "content": "2+2?"}]
    assert prompt_key(chat) == prompt_key([{"content": "2+2?", "role": "user"}])  # key order
    assert prompt_key("2+2?") != prompt_key("2+3?") and prompt_key(chat) != prompt_key("2+2?")
    assert 0 <= prompt_key("x") < 2**63
    assert prompt_key("x") == 7354003295028623286  # the same key in every process and release


def test_merge_generated_joins_rounds() -> None:
    a = ([1, 2], None, {}, ["a"])
    b = ([3], None, {}, ["b", "c"])
    assert merge_generated([a, b]) == ([1, 2, 3], None, {}, ["a", "b", "c"])
    with pytest.raises(RuntimeError, match="rollout_func only"):
        merge_generated([([1], {"x": 1}), ([2], {})])
    with pytest.raises(RuntimeError, match="cannot join"):
        merge_generated([([1],), ((2,),)])
    with pytest.raises(ValueError):  # rounds of different shapes are a bug, not data
        merge_generated([([1], None), ([2],)])


def test_zero_std_fraction_over_ragged_groups() -> None:
    # two reward functions weighted 1 and 0.5; groups: q0 (3 varied), q1 (2 equal), q2 (1 alone)
    rewards = torch.tensor([[1.0, 0.0], [0.0, 0.0], [1.0, 0.0], [1.0, 2.0], [0.0, 4.0], [0.0, 0.0]])
    weights = torch.tensor([1.0, 0.5])
    groups = [0, 0, 0, 1, 1, 2]
    # totals: q0 = 1, 0, 1 (varied); q1 = 2, 2 (flat); q2 = 0 (a group of one is flat)
    assert zero_std_fraction(rewards, weights, groups) == pytest.approx(3 / 6)
    assert zero_std_fraction(rewards[:3], weights, groups[:3]) == 0.0


class Mine:
    """An allocator instance (the protocol's two methods)."""

    def reset(self, params: object) -> None: ...

    def allocate(self, obs: object, remaining: int) -> list[int]:
        return []


def test_allocation_arguments_are_checked_before_trl() -> None:
    assert check_allocation_arguments("bamdp", None, 8, 0, None, {}) == (8, 0, None)
    assert check_allocation_arguments("bamdp", {"horizon": 2}, None, 2, 16, {}) == (None, 2, 16)
    with pytest.raises(ValueError, match="pilot"):
        check_allocation_arguments("bamdp", None, None, -1, None, {})
    with pytest.raises(ValueError, match="round_size"):
        check_allocation_arguments("bamdp", None, 0, 0, None, {})
    with pytest.raises(TypeError, match="allocator_kwargs must be a dict"):
        check_allocation_arguments("bamdp", [1], None, 0, None, {})  # type: ignore[arg-type]
    instance = Mine()
    with pytest.raises(ValueError, match="build it with those arguments yourself"):
        check_allocation_arguments(instance, {"x": 1}, None, 0, None, {})
    assert check_allocation_arguments(instance, None, None, 0, None, {}) == (None, 0, None)
    with pytest.raises(TypeError, match="lacks reset, allocate"):
        check_allocation_arguments(object(), None, None, 0, None, {})
    with pytest.raises(ValueError, match=r"TRL's rollout_func"):
        check_allocation_arguments("bamdp", None, None, 0, None, {"rollout_func": print})
    assert check_allocation_arguments("bamdp", None, None, 0, None, {"tools": []}) == (
        None, 0, None,
    )  # fmt: skip
    assert "use trl.GRPOTrainer" in unsupported("tools")


def test_task_dataset_and_reward_score_with_the_task() -> None:
    task = make_task("arithmetic", seed=0, num_train=8, num_test=8)
    ds = task_dataset(task, "test")
    assert ds.column_names == ["prompt", "answer", "level", "example_id"]
    assert ds["example_id"] == [e.id for e in task.test]
    assert len(task_dataset(task, "validation")) == 0  # arithmetic has no validation split
    with pytest.raises(ValueError, match="split must be one of train, validation, test"):
        task_dataset(task, "valid")
    reward = task_reward(task)
    assert reward.__name__ == "arithmetic_reward"
    rows = task.test[:2]
    right, wrong = rows[0].answer, rows[1].answer + "9"
    chat = [{"role": "assistant", "content": right}]
    scores = reward([r.prompt for r in rows] * 2, [right, wrong, chat, wrong], [[1], [1], [1], [1]],
                    example_id=[rows[0].id, rows[1].id, rows[0].id, rows[1].id])  # fmt: skip
    assert scores == [1.0, 0.0, 1.0, 0.0]


def test_task_dataset_of_chosen_examples_with_conversation_prompts() -> None:
    from trainers.models.prompts import prompt_messages

    task = make_task("arithmetic", seed=0, num_train=8, num_test=8)
    held_out = task.train[6:]  # e.g. prompts held out from training for a calibration
    ds = task_dataset(task, examples=held_out, prompt=prompt_messages)
    assert ds["example_id"] == [e.id for e in held_out]
    assert ds["prompt"][0] == [{"role": "user", "content": held_out[0].prompt}]
    scores = task_reward(task)([None], [held_out[0].answer], [[1]], example_id=[held_out[0].id])
    assert scores == [1.0]  # the task's own examples are scored wherever they come from


def test_task_dataset_carries_every_split_and_the_metadata_columns() -> None:
    pytest.importorskip("reasoning_gym")
    task = make_task("rg:chain_sum?min_terms=2&max_terms=3", num_train=12, num_validation=6,
                     num_test=8)  # fmt: skip
    val = task_dataset(task, "validation")
    assert len(val) == 6 and val["example_id"] == [e.id for e in task.validation]
    # the item's scalar metadata rides along, for reward functions' keyword arguments
    for column in ("num_terms", "num_digits", "expression", "source_dataset"):
        assert val[column] == [e.columns[column] for e in task.validation]
    assert val.column_names[:4] == ["prompt", "answer", "level", "example_id"]
    reward = task_reward(task)
    rows = [task.validation[0], task.test[0], task.train[0]]
    texts = [rows[0].answer, rows[1].answer, "nope"]
    assert reward([r.prompt for r in rows], texts, [[1]] * 3,
                  example_id=[r.id for r in rows]) == [1.0, 1.0, 0.0]  # fmt: skip


def test_task_dataset_columns_of_mixed_types_and_names() -> None:
    from trainers.tasks import Example, Task

    train = [Example(0, "a", "1", columns={"n": 1, "tag": "x", "only": 1, "level": "L1"}),
             Example(1, "b", "2", columns={"n": 2.5, "tag": 3, "level": "L2"})]  # fmt: skip
    ds = task_dataset(Task("t", train, [], verifier=lambda c, e: 0.0))
    # ints with floats become floats, other mixtures text; a column some row lacks, or one
    # named like a fixed column ("level"), is left out
    assert ds.column_names == ["prompt", "answer", "level", "example_id", "n", "tag"]
    assert ds["n"] == [1.0, 2.5] and ds["tag"] == ["x", "3"] and ds["level"] == [0, 0]
