"""trainers.tasks.base: ``Example``, ``Task`` and scoring by a verifier or TRL reward functions."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from trainers.tasks import Example, Task, arithmetic_task, make_task

EX = [Example(0, "1+1=", "2", 0), Example(1, "2+2=", "4", 1), Example(2, "3+3=", "6", 2)]


def test_trl_reward_funcs_summed_with_columns():
    seen: dict[str, Any] = {}

    def correct(prompts, completions, completion_ids=None, answer=None, **kwargs):
        seen.update(prompts=prompts, ids=completion_ids, answer=answer, **kwargs)
        return [1.0 if c == a else 0.0 for c, a in zip(completions, answer, strict=True)]

    def short(prompts, completions, **kwargs):
        return [0.5 if len(c) == 1 else None for c in completions]

    task = arithmetic_task(num_train=8, num_test=8, reward_funcs=[correct, short])
    scores = task.score(EX, ["2", "5", "66"], completion_ids=[[1], [2], [3, 3]])
    assert scores.rewards.tolist() == [1.5, 0.5, 0.0] and scores.errors == 0
    assert seen == {
        "prompts": ["1+1=", "2+2=", "3+3="],
        "ids": [[1], [2], [3, 3]],
        "answer": ["2", "4", "6"],
        "level": [0, 1, 2],
        "id": [0, 1, 2],
    }
    assert "correct + short" in task.describe()["reward"]
    single = make_task("arithmetic", num_train=8, num_test=8, reward_funcs=short)
    assert single.score(EX, ["2", "44", "6"]).rewards.tolist() == [0.5, 0.0, 0.5]


def test_trl_reward_func_raising_counts_errors():
    def ok(prompts, completions, **kwargs):
        return [1.0] * len(completions)

    def broken(prompts, completions, **kwargs):
        raise RuntimeError("boom")

    task = Task("t", EX, [], reward_funcs=[ok, broken])
    scores = task.score(EX, ["2", "4", "6"])
    assert scores.rewards.tolist() == [0.0, 0.0, 0.0] and scores.errors == 3


def test_trl_reward_func_wrong_length():
    def short_list(prompts, completions, **kwargs):
        return [1.0]

    task = Task("t", EX, [], reward_funcs=short_list)
    with pytest.raises(ValueError, match=r"'short_list' returned 1 rewards for 3 completions"):
        task.score(EX, ["2", "4", "6"])
    with pytest.raises(TypeError, match="must be callables"):
        Task("t", EX, [], reward_funcs=[short_list, "nope"])  # type: ignore[list-item]


def test_raising_verifier_counted():
    def picky(completion: str, example: Example) -> float:
        if completion == "boom":
            raise ValueError("cannot parse")
        return float(completion.strip() == example.answer)

    task = Task("t", EX, [], verifier=picky)
    scores = task.score(EX, ["2", "boom", "6"])
    assert scores.rewards.tolist() == [1.0, 0.0, 1.0] and scores.errors == 1


def test_task_validates_ids():
    with pytest.raises(ValueError, match="both train and test"):
        Task("t", EX, EX[:1], verifier=lambda c, e: 0.0)
    with pytest.raises(ValueError, match="duplicate train ids"):
        Task("t", [EX[0], EX[0]], [], verifier=lambda c, e: 0.0)
    with pytest.raises(ValueError, match="no verifier"):
        Task("t", EX, [])


# --- added with the mirrored layout ----------------------------------------------------------


def test_example_group_key_and_columns_outside_equality():
    a = Example(7, "q", "1", level=3, columns={"subject": "algebra"})
    b = Example(7, "q", "1", level=3, columns={"subject": "geometry"})
    assert a.group_key("level") == 3 and a.group_key("subject") == "algebra"
    assert a == b and hash(a) == hash(b)  # columns take no part in equality or hashing
    assert "algebra" not in repr(a)
    with pytest.raises(KeyError, match="topic"):
        a.group_key("topic")


def test_error_messages_name_the_numbers_and_the_fix():
    task = Task("t", EX, [], verifier=lambda c, e: 1.0)
    with pytest.raises(ValueError) as exc:
        task.score(EX[:2], ["2", "4", "6"])
    assert str(exc.value) == (
        "score got 2 examples and 3 completions: pass one example per completion (repeat an "
        "example for each of its samples)"
    )
    with pytest.raises(ValueError, match=r"score got 2 completion_ids for 3 completions: pass "
                       r"one token-id list per completion, or None"):  # fmt: skip
        task.score(EX, ["2", "4", "6"], completion_ids=[[1], [2]])
    with pytest.raises(ValueError, match=r"task 'x': duplicate test ids \[5\]; ids are unique"):
        Task("x", [], [Example(5, "a", "1"), Example(5, "b", "2")], verifier=lambda c, e: 0.0)
    with pytest.raises(ValueError, match=r"ids \[0, 1\] are in both train and test; offset "
                       r"test ids \(e.g. by 1000000\)"):  # fmt: skip
        Task("x", EX, EX[:2], verifier=lambda c, e: 0.0)
    with pytest.raises(TypeError, match=r"got str: pass a function or a list"):
        Task("x", EX, [], reward_funcs=["nope"])  # type: ignore[list-item]


def test_describe_sorts_level_histograms_and_names_the_reward():
    train = [Example(i, f"p{i}", "1", level=lv) for i, lv in enumerate([2, 0, 2, 1, 2])]
    test = [Example(10, "t", "1", level=5)]
    task = Task("mine", train, test, verifier=lambda c, e: 0.0, reward_source="by hand")
    d = task.describe()
    assert d == {
        "name": "mine",
        "num_train": 5,
        "num_validation": 0,
        "num_test": 1,
        "levels": {"train": {0: 1, 1: 1, 2: 3}, "validation": {}, "test": {5: 1}},
        "reward": "by hand",
        "longest_prompt_answer_chars": 3,  # "p0" + "1"
    }
    assert list(d["levels"]["train"]) == [0, 1, 2]
    assert repr(task) == "Task('mine', train=5, test=1)"
    val = [Example(20, "a longer prompt", "12345", level=1)]
    task = Task("mine", train, test, verifier=lambda c, e: 0.0, validation=val,
                details={"source": "by hand"})  # fmt: skip
    d = task.describe()
    assert d["num_validation"] == 1 and d["levels"]["validation"] == {1: 1}
    assert d["longest_prompt_answer_chars"] == 20 and d["details"] == {"source": "by hand"}
    assert repr(task) == "Task('mine', train=5, validation=1, test=1)"


def test_validation_ids_are_unique_and_disjoint_from_train_and_test():
    val = [Example(10 + i, f"v{i}", "1") for i in range(2)]
    assert Task("x", EX, [], validation=val, verifier=lambda c, e: 0.0).validation == val
    with pytest.raises(ValueError, match=r"duplicate validation ids \[10\]"):
        Task("x", EX, [], validation=[val[0], val[0]], verifier=lambda c, e: 0.0)
    with pytest.raises(ValueError, match=r"ids \[1\] are in both train and validation; "
                       r"offset validation ids \(e.g. by 2000000\)"):  # fmt: skip
        Task("x", EX, [], validation=[EX[1]], verifier=lambda c, e: 0.0)
    with pytest.raises(ValueError, match=r"ids \[10\] are in both validation and test"):
        Task("x", EX, val[:1], validation=val, verifier=lambda c, e: 0.0)


def test_reward_funcs_replace_the_verifier_and_none_scores_zero():
    class Scorer:  # a callable object without __name__: named by its type
        def __call__(self, prompts, completions, **kwargs):
            return [None, 0.25, 2]

    task = Task("t", EX, [], verifier=lambda c, e: 1.0, reward_funcs=Scorer())
    assert task.reward_source == "reward_funcs: Scorer"
    scores = task.score(EX, ["a", "b", "c"])
    assert scores.rewards.dtype == np.float64
    assert scores.rewards.tolist() == [0.0, 0.25, 2.0] and scores.errors == 0


def test_a_verifier_sees_each_completion_with_its_own_example():
    calls = []

    def record(completion, example):
        calls.append((completion, example.id))
        return len(completion) / 10

    task = Task("t", EX, [], verifier=record)
    scores = task.score([EX[2], EX[0], EX[2]], ["abc", "", "x"])
    assert calls == [("abc", 2), ("", 0), ("x", 2)]
    assert scores.rewards.tolist() == pytest.approx([0.3, 0.0, 0.1])
    empty = task.score([], [])
    assert empty.rewards.shape == (0,) and empty.errors == 0
