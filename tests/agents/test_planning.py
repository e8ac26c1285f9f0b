"""Tests of agents.planning: value tables (binomial and posterior), the look-ahead horizon, the
bundle-ratio fill and the deficit split, against direct sums and hand-worked cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from adaroll_env.utilities import get_utility
from agents.base import Beliefs
from agents.planning import binomial_values, bundle_fill, deficit_split, horizon, posterior_values

UTILITIES = ["informative", "hit", "grpo_signal", "dr_grpo_signal"]


def _beliefs(successes, failures, *, prior=(1.0, 1.0), budget_left=10, round_size=1, cap=10):
    s = np.asarray(successes, dtype=np.int64)
    f = np.asarray(failures, dtype=np.int64)
    n = s + f
    return Beliefs(
        alpha=prior[0] + s.astype(float),
        beta=prior[1] + f.astype(float),
        successes=s,
        failures=f,
        rollouts=n,
        budget_left=budget_left,
        round_size=round_size,
        capacity=cap - n,
    )


def _u(utility, s, f):
    return float(get_utility(utility)(np.array([s]), np.array([f]))[0])


# --- horizon --------------------------------------------------------------------------------------


def test_horizon_is_the_smallest_of_budget_capacity_and_max():
    b = _beliefs([0, 2], [0, 3], budget_left=4, cap=8)  # capacities 8 and 3
    assert horizon(b, 10) == 4
    assert horizon(b, 2) == 2
    assert horizon(_beliefs([0, 2], [0, 3], budget_left=20, cap=8), 50) == 8
    assert horizon(_beliefs([], [], budget_left=5), 10) == 0
    assert horizon(_beliefs([5], [0], budget_left=5, cap=5), 10) == 0  # no room left


# --- binomial_values and posterior_values ---------------------------------------------------------


@pytest.mark.parametrize("utility", UTILITIES)
def test_binomial_values_equal_the_binomial_sum(utility):
    p = [0.0, 0.3, 0.85, 1.0]
    s, f, K = [0, 2, 1, 3], [0, 1, 4, 0], 5
    got = binomial_values(utility, p, s, f, K)
    assert got.shape == (4, K + 1)
    for i in range(4):
        for k in range(K + 1):
            want = sum(
                math.comb(k, x)
                * p[i] ** x
                * (1 - p[i]) ** (k - x)
                * _u(utility, s[i] + x, f[i] + k - x)
                for x in range(k + 1)
            )
            assert got[i, k] == pytest.approx(want, abs=1e-12), (i, k)


def test_binomial_values_clip_p_and_take_a_function():
    fn = get_utility("hit")
    a = binomial_values(fn, [1.5, -0.5], [0, 0], [0, 0], 3)
    b = binomial_values("hit", [1.0, 0.0], [0, 0], [0, 0], 3)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(b, [[0, 1, 1, 1], [0, 0, 0, 0]])


@pytest.mark.parametrize("utility", UTILITIES)
def test_posterior_values_equal_the_beta_binomial_sum(utility):
    prior = (0.5, 2.0)
    b = _beliefs([0, 3], [2, 1], prior=prior)
    K = 4
    got = posterior_values(utility, b, K)
    assert got.shape == (2, K + 1)

    def betaln(x, y):
        return math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y)

    for i in range(2):
        a, bb = prior[0] + b.successes[i], prior[1] + b.failures[i]
        for k in range(K + 1):
            want = sum(
                math.comb(k, y)
                * math.exp(betaln(a + y, bb + k - y) - betaln(a, bb))
                * _u(utility, int(b.successes[i]) + y, int(b.failures[i]) + k - y)
                for y in range(k + 1)
            )
            assert got[i, k] == pytest.approx(want, abs=1e-12), (i, k)


# --- bundle_fill ----------------------------------------------------------------------------------


def test_bundle_fill_opens_a_question_whose_value_comes_in_a_bundle():
    # q0 gains 0.3 then 0.1; q1 gains nothing from one rollout, 0.8 from two.
    # One rollout: best ratios 0.3 (q0) and 0.8/2 = 0.4 (q1): q1, though its one-step gain is 0.
    values = [[0.0, 0.3, 0.4], [0.0, 0.0, 0.8]]
    assert bundle_fill(values, 1, [2, 2]).tolist() == [0, 1]
    # then q1's ratio from one rollout is 0.8: q1 again; a third goes to q0 (q1's table is done)
    assert bundle_fill(values, 2, [2, 2]).tolist() == [0, 2]
    assert bundle_fill(values, 3, [2, 2]).tolist() == [1, 2]


def test_bundle_fill_ties_go_to_the_lower_index():
    values = [[0.0, 0.5], [0.0, 0.5], [0.0, 0.5]]
    assert bundle_fill(values, 2, [3, 3, 3]).tolist() == [1, 1, 0]


def test_bundle_fill_past_the_table_splits_by_capacity():
    # K = 1: each question takes one rollout by ratio (q0 first), then the 2 left are split
    # evenly over the room left ([4, 4]): [1, 1] more.
    assert bundle_fill([[0.0, 1.0], [0.0, 0.5]], 4, [5, 5]).tolist() == [2, 2]
    # a question without capacity gets nothing, even with the best values
    assert bundle_fill([[0.0, 9.0], [0.0, 0.1]], 2, [0, 3]).tolist() == [0, 2]


def _fill_one_at_a_time(values, total, cap):
    """The documented rule, written out: each rollout to the largest best ratio
    max_k (V(m + k) − V(m)) / k over k <= limit − m, ties to the lower index."""
    v = np.asarray(values, dtype=float)
    B, K1 = v.shape
    limit = [min(max(int(c), 0), K1 - 1) for c in cap]
    m = [0] * B
    for _ in range(total):
        best, pick = -math.inf, None
        for i in range(B):
            for k in range(1, limit[i] - m[i] + 1):
                r = (v[i, m[i] + k] - v[i, m[i]]) / k
                if r > best:
                    best, pick = r, i
        if pick is None:
            return None  # the table runs out: the capacity split takes over
        m[pick] += 1
    return m


def test_bundle_fill_equals_the_rule_written_out():
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(200):
        B, K = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        values = np.round(np.cumsum(rng.normal(size=(B, K + 1)), axis=1), 1)
        cap = rng.integers(0, 5, size=B)
        total = int(rng.integers(0, cap.sum() + 1))
        want = _fill_one_at_a_time(values, total, cap)
        if want is None:
            continue
        checked += 1
        assert bundle_fill(values, total, cap).tolist() == want
    assert checked > 100


# --- deficit_split --------------------------------------------------------------------------------


def test_deficit_split_by_largest_remainder_of_the_deficits():
    # targets [5, 2, 3] from rollouts [1, 2, 0]: deficits [4, 0, 3]; a round of 4 has quotas
    # 16/7, 0, 12/7 -> floors 2, 0, 1; the last one to the larger remainder (q2: 5/7)
    b = _beliefs([1, 1, 0], [0, 1, 0], round_size=4)
    assert deficit_split([5, 2, 3], b).tolist() == [2, 0, 2]


def test_deficit_split_without_deficits_is_even_over_open_questions():
    b = _beliefs([2, 0, 1], [0, 2, 0], round_size=1, cap=2)  # q0 and q1 are full
    assert deficit_split([1, 1, 1], b).tolist() == [0, 0, 1]
    b = _beliefs([0, 0, 0], [0, 0, 0], round_size=5)
    assert deficit_split([0, 0, 0], b).tolist() == [2, 2, 1]
