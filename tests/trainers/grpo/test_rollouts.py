"""trainers.grpo.rollouts: a step's rollouts per question and the round's allocation contract."""

from __future__ import annotations

import numpy as np
import pytest

from adaroll_env import model as am
from trainers.engines.base import Generation
from trainers.grpo.rollouts import SUCCESS_THRESHOLD, Rollouts, check_counts


def _gen(index, ids, truncated, seconds):
    return Generation(
        prompt_index=np.array(index, dtype=np.int64),
        completion_ids=ids,
        texts=[""] * len(ids),
        logprobs=[np.full(len(c), -0.5, dtype=np.float32) for c in ids],
        truncated=np.array(truncated, dtype=bool),
        seconds=seconds,
    )


def test_add_files_each_completion_under_its_question_and_counts_successes():
    ro = Rollouts(3)
    first = _gen([0, 0, 2], [[5, 2], [6], [7, 8, 9]], [False, True, True], 0.25)
    s1 = ro.add(first, np.array([1.0, SUCCESS_THRESHOLD - 1e-9, SUCCESS_THRESHOLD]), errors=1)
    assert SUCCESS_THRESHOLD == 0.5
    assert s1.tolist() == [1, 0, 1] and s1.dtype == np.int64  # a reward of 0.5 is a success
    second = _gen([1, 2], [[4], [3, 2]], [True, False], 0.5)
    s2 = ro.add(second, np.array([0.0, 0.75]), errors=0)
    assert s2.tolist() == [0, 0, 1]
    assert ro.completion_ids == [[[5, 2], [6]], [[4]], [[7, 8, 9], [3, 2]]]
    assert ro.rewards == [[1.0, 0.5 - 1e-9], [0.0], [0.5, 0.75]]
    assert ro.truncated == [[False, True], [True], [True, False]]
    assert [[lp.tolist() for lp in q] for q in ro.logprobs] == [
        [[-0.5, -0.5], [-0.5]],
        [[-0.5]],
        [[-0.5, -0.5, -0.5], [-0.5, -0.5]],
    ]
    assert (ro.errors, ro.tokens, ro.gen_seconds, ro.rounds) == (
        1,
        9,
        0.75,
        2,
    )  # tokens: 2 + 1 + 3 + 1 + 2
    assert ro.alloc_seconds == 0.0  # the trainer adds the allocator's own time


def test_an_empty_round_changes_only_the_round_count():
    ro = Rollouts(2)
    s = ro.add(_gen([], [], [], 0.0), np.zeros(0), errors=0)
    assert s.tolist() == [0, 0]
    assert ro.completion_ids == [[], []] and ro.rounds == 1 and ro.tokens == 0


def _params(**kw):
    base = dict(num_questions=3, budget=10, mode="rounds", round_size=4, max_group=4)
    return am.AllocationParams(**{**base, **kw})


def test_check_counts_accepts_a_valid_round_as_int64():
    p = _params()
    s = am.make_state(p, [1, 0, 2], [1, 1, 0])  # 5 spent: the next round is min(4, 5) = 4
    out = check_counts(p, s, [2, 1, 1])
    assert out.dtype == np.int64 and out.tolist() == [2, 1, 1]
    late = am.make_state(p, [2, 1, 2], [1, 2, 0])  # 8 spent: only 2 left
    assert check_counts(p, late, np.array([0, 1, 1], dtype=np.int32)).tolist() == [0, 1, 1]


@pytest.mark.parametrize(
    ("counts", "message"),
    [
        ([1, 1, 1], "handed out 3 rollouts, but this decision must hand out min(R, budget "
                    "left) = 4"),
        ([5, -1, 0], "are negative at question 1 (-1)"),
        ([2, 2], "counts have shape (2,), expected (3,)"),
        ([2.0, 1.0, 1.0], "have dtype float64, expected integer counts"),
        ([3, 1, 0], "beyond its cap of 4"),
    ],
)  # fmt: skip
def test_check_counts_names_the_caller_the_rule_and_the_numbers(counts, message):
    p = _params()
    s = am.make_state(p, [1, 0, 2], [1, 1, 0])
    with pytest.raises(ValueError) as exc:
        check_counts(p, s, counts)
    text = str(exc.value)
    assert text.startswith("allocator passed to run_round() broke the allocation contract: ")
    assert message in text
    with pytest.raises(ValueError, match=r"^allocator 'mine' broke"):
        check_counts(p, s, counts, name="'mine'")
