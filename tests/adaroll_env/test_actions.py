"""Tests of adaroll_env.actions: the largest-remainder split of a round and the action that
encodes exact counts (``encode_counts``, ``encoded_counts``)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adaroll_env.actions import CountsAction, encode_counts, encoded_counts, split_round

# --- split_round ----------------------------------------------------------------------------------

BIG = [100, 100, 100, 100]


@pytest.mark.parametrize(
    ("weights", "total", "cap", "want"),
    [
        # largest remainder: quotas 3.5, 2.1, 1.4 -> floors 3, 2, 1; the extra one to q0
        ([0.5, 0.3, 0.2], 7, [100] * 3, [4, 2, 1]),
        # equal remainders go to the lower index
        ([1, 1, 1], 1, [100] * 3, [1, 0, 0]),
        ([1, 1, 1], 2, [100] * 3, [1, 1, 0]),
        ([1, 1, 1], 4, [100] * 3, [2, 1, 1]),
        ([0, 1, 0, 1], 3, BIG, [0, 2, 0, 1]),
        # quotas 1.5, 1.5, 3 -> floors 1, 1, 3; the extra one to q0 (tie, lower index)
        ([1, 1, 2, 0], 6, BIG, [2, 1, 3, 0]),
        # exact proportions
        ([2, 1, 1, 0], 8, BIG, [4, 2, 2, 0]),
        # cap: q0 takes only 1; its 2 extra go to the next-largest weight (q1)
        ([3, 2, 1], 6, [1, 10, 10], [1, 4, 1]),
        # the spill follows the weights, not the index: q2 capped at 1, its 2 extra go to q1
        ([1, 2, 3], 6, [10, 10, 1], [1, 4, 1]),
        ([2, 0.5, 1], 7, [2, 10, 10], [2, 1, 4]),
        # cap spill cascades: q0 capped at 1, q1 capped at 1, rest to q2
        ([4, 3, 1], 8, [1, 1, 10], [1, 1, 6]),
        # spill goes to zero-weight questions only when positive ones are full
        ([1, 0], 4, [2, 5], [2, 2]),
        # all-zero weights: even split among open questions, ties to lower index
        ([0, 0, 0, 0], 5, [10, 0, 10, 10], [2, 0, 2, 1]),
        ([0, 0, 0], 6, [5, 5, 5], [2, 2, 2]),
        # the only positive weight is on a closed question: even split among open ones
        ([1, 0, 0], 3, [0, 5, 5], [0, 2, 1]),
        # negative weights count as zero
        ([-1, 2, -3], 4, [9, 9, 9], [0, 4, 0]),
        # total 0
        ([1, 2, 3], 0, [9, 9, 9], [0, 0, 0]),
    ],
)
def test_split_round_hand_worked(weights, total, cap, want):
    got = split_round(weights, total, cap)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)
    assert got.sum() == total


def test_split_round_errors():
    with pytest.raises(ValueError, match="does not fit"):
        split_round([1, 1], 5, [2, 2])
    with pytest.raises(ValueError, match=">= 0"):
        split_round([1, 1], -1, [2, 2])


@settings(max_examples=100, deadline=None)
@given(
    data=st.data(),
    b=st.integers(1, 12),
)
def test_split_round_properties(data, b):
    weights = data.draw(st.lists(st.floats(0.0, 1.0), min_size=b, max_size=b))
    cap = np.array(data.draw(st.lists(st.integers(0, 9), min_size=b, max_size=b)))
    total = data.draw(st.integers(0, int(cap.sum())))
    counts = split_round(weights, total, cap)
    assert counts.sum() == total
    assert np.all(counts >= 0) and np.all(counts <= cap)
    w = np.asarray(weights)
    w_open = np.where(cap > 0, w, 0.0)
    if w_open.sum() > 0 and total <= cap[w_open > 0].sum():
        # questions without weight get nothing while weighted ones have room
        assert np.all(counts[w_open == 0] == 0)
    if np.all(cap >= total) and w.sum() > 0:
        # no caps bind: every count is within one of its proportional quota
        quota = total * w / w.sum()
        assert np.all(np.abs(counts - quota) < 1.0 + 1e-9)


def test_split_round_error_messages_name_the_numbers():
    with pytest.raises(ValueError) as info:
        split_round([1, 1], 5, [2, 2])
    assert str(info.value) == "round of 5 rollouts does not fit the remaining capacity 4"
    with pytest.raises(ValueError) as info:
        split_round([1, 1], -1, [2, 2])
    assert str(info.value) == "round size must be >= 0, got -1"
    with pytest.raises(ValueError) as info:  # a negative cap is no room, not less room
        split_round([1, 1, 1], 4, [3, -5, 0])
    assert str(info.value) == "round of 4 rollouts does not fit the remaining capacity 3"


@pytest.mark.parametrize(
    ("weights", "total"),
    [([0.5, 0.3, 0.2], 7), ([3, 1, 1, 1], 5), ([0.1, 0.2, 0.3, 0.4], 9), ([5, 0, 2], 4)],
)
def test_split_round_uncapped_is_the_closest_integer_split(weights, total):
    # Largest remainder (Hamilton's method) minimises Σ (c_i − q_i)² over every integer split
    # of the total: checked against all of them.
    w = np.asarray(weights, dtype=float)
    quota = total * w / w.sum()
    got = split_round(weights, total, [total] * len(weights))
    splits = [c for c in itertools.product(range(total + 1), repeat=len(w)) if sum(c) == total]
    best = min(float(np.sum((np.array(c) - quota) ** 2)) for c in splits)
    assert float(np.sum((got - quota) ** 2)) == pytest.approx(best, abs=1e-12)


# --- encode_counts / encoded_counts ---------------------------------------------------------------


def test_encode_counts_values():
    np.testing.assert_array_equal(encode_counts([4, 0, 2]), np.array([1.0, -1.0, 0.0], np.float32))
    np.testing.assert_array_equal(encode_counts([0, 0]), [-1.0, -1.0])
    assert encode_counts([3, 1]).dtype == np.float32
    with pytest.raises(ValueError, match="non-negative integers"):
        encode_counts([1.5, 2])
    with pytest.raises(ValueError, match="non-negative integers"):
        encode_counts([-1, 2])
    with pytest.raises(ValueError, match="non-negative integers"):
        encode_counts([[1, 2]])


def test_encode_counts_remembers_the_counts():
    a = encode_counts([3, 1, 0])
    assert isinstance(a, CountsAction) and a.dtype == np.float32
    np.testing.assert_allclose(a, [1.0, -1 / 3, -1.0], rtol=1e-6)  # 2·c/max − 1
    assert a.counts == (3, 1, 0) and all(type(c) is int for c in a.counts)
    assert encoded_counts(a) == (3, 1, 0)
    assert encoded_counts(encode_counts(np.array([2.0, 2.0]))) == (2, 2)
    empty = encode_counts([])
    assert empty.shape == (0,) and encoded_counts(empty) == ()


def test_arrays_derived_from_an_encoded_action_are_plain_weights():
    a = encode_counts([4, 0, 2])
    assert encoded_counts(np.asarray(a)) is None
    assert encoded_counts(a[:2]) is None  # a view carries no counts
    assert encoded_counts(a * 1.0) is None
    assert encoded_counts(np.array([1.0, -1.0, 0.0], dtype=np.float32)) is None
    assert encoded_counts([1.0, 0.0]) is None


def test_encode_counts_error_names_the_value():
    with pytest.raises(ValueError) as info:
        encode_counts([1.5, 2])
    assert str(info.value) == "counts must be a 1-D array of non-negative integers, got [1.5, 2]"
