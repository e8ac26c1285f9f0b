"""Tests of agents.bandits.value_tables: the variance split, credible points and optimistic
values, the concave majorant of a value row, the clearing price and the row memo."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from agents.bandits.value_tables import (
    RowMemo,
    clearing_price,
    concave_increments,
    credible_points,
    optimistic_values,
    posterior_learnability,
    variance_split,
)
from agents.planning import binomial_values

# --- posterior_learnability and variance_split ----------------------------------------------------


def test_posterior_learnability_by_hand():
    # αβ / ((α+β)(α+β+1)): Beta(1, 1) 1/6, Beta(2, 2) 4/20, Beta(1, 3) 3/20
    got = posterior_learnability([1.0, 2.0, 1.0], [1.0, 2.0, 3.0])
    np.testing.assert_allclose(got, [1 / 6, 1 / 5, 3 / 20])
    assert got.dtype == np.float64


def test_variance_split_hand_worked():
    # Gains w/((t+m)(t+m+1)): q0 Beta(1, 1) 1/36, 1/72, 1/120; q1 Beta(2, 2) 1/100, 1/150;
    # q2 Beta(1, 3) 3/400. Three rollouts: 1/36 (q0), 1/72 (q0), then the largest of 1/120,
    # 1/100 and 3/400 (q1); a fourth: 1/120 (q0) beats 1/150 and 3/400.
    a, b = [1.0, 2.0, 1.0], [1.0, 2.0, 3.0]
    assert variance_split(a, b, 3, [9, 9, 9]).tolist() == [2, 1, 0]
    assert variance_split(a, b, 4, [9, 9, 9]).tolist() == [3, 1, 0]
    # q0 full after one: then 1/100 (q1), then 3/400 (q2) beats 1/150 (q1)
    assert variance_split(a, b, 3, [1, 9, 9]).tolist() == [1, 1, 1]
    assert variance_split(a, b, 0, [9, 9, 9]).tolist() == [0, 0, 0]
    assert variance_split(a, b, 2, [0, -1, 5]).tolist() == [0, 0, 2]  # negative room is none


def test_variance_split_equals_one_at_a_time():
    rng = np.random.default_rng(0)
    for _ in range(50):
        B = int(rng.integers(1, 7))
        a = rng.choice([0.5, 1.0, 2.0, 3.0], size=B) + rng.integers(0, 3, size=B)
        b = rng.choice([0.5, 1.0, 2.0], size=B) + rng.integers(0, 3, size=B)
        cap = rng.integers(0, 5, size=B)
        total = int(rng.integers(0, cap.sum() + 1))
        w, t = posterior_learnability(a, b), a + b
        expected = np.zeros(B, dtype=np.int64)
        for _ in range(total):
            m = expected
            gain = np.where(m < cap, w / ((t + m) * (t + m + 1)), -np.inf)
            expected[int(np.argmax(gain))] += 1
        assert variance_split(a, b, total, cap).tolist() == expected.tolist()


def test_bayes_ucb_optimism_is_over_the_value():
    # Informative utility, a fresh question with posterior Beta(1, 3): the interval
    # [1 − 0.9^(1/3), 1 − 0.1^(1/3)] = [0.035, 0.536] holds 0.5, where 2p(1 − p) peaks: V(2) = 0.5,
    # more than at the upper quantile itself.
    hi = 1 - 0.1 ** (1 / 3)
    values = optimistic_values("informative", [1.0], [3.0], [0], [0], 2, 0.9, 5)
    assert values[0, 2] == pytest.approx(0.5)
    assert values[0, 2] > 2 * hi * (1 - hi) + 1e-3


def _hull_brute(V):
    """Increments of each row's least concave majorant, from all pairs of points."""
    out = []
    for row in V:
        K = len(row) - 1
        top = [
            max(
                row[i] + (row[j] - row[i]) * (k - i) / (j - i) if j > i else row[i]
                for i in range(k + 1)
                for j in range(k, K + 1)
            )
            for k in range(K + 1)
        ]
        out.append(np.diff(top))
    return np.array(out)


def test_concave_increments_brute_force():
    rng = np.random.default_rng(1)
    for _ in range(30):
        V = np.cumsum(rng.normal(size=(3, 7)), axis=1)
        assert concave_increments(V) == pytest.approx(_hull_brute(V))


# --- credible_points and optimistic_values --------------------------------------------------------


def test_credible_points_layout():
    a, b = np.array([1.0, 30.0]), np.array([9.0, 270.0])
    pts = credible_points(a, b, 0.9, 5)
    assert pts.shape == (2, 7)
    lo, hi = scipy.stats.beta.ppf(0.1, a, b), scipy.stats.beta.ppf(0.9, a, b)
    for j in range(5):  # evenly spaced over the central 80 % interval
        np.testing.assert_allclose(pts[:, j], lo + (hi - lo) * j / 4, rtol=1e-9)
    np.testing.assert_allclose(pts[:, 5], [0.1, 0.1])  # the posterior means, inside
    np.testing.assert_allclose(pts[:, 6], hi, rtol=1e-9)  # 0.5 clipped into the interval
    # a posterior centred on 0.5 keeps 0.5 itself
    assert credible_points([4.0], [4.0], 0.9, 3)[0, 4] == 0.5


def test_optimistic_values_are_the_best_over_the_credible_points():
    a, b, s, f = [1.0, 3.0], [3.0, 2.0], [0, 2], [0, 1]
    got = optimistic_values("grpo_signal", a, b, s, f, 4, 0.8, 6)
    pts = credible_points(a, b, 0.8, 6)
    for i in range(2):
        table = binomial_values("grpo_signal", pts[i], [s[i]] * 8, [f[i]] * 8, 4)
        np.testing.assert_allclose(got[i], table.max(axis=0), atol=1e-12)


# --- concave_increments and clearing_price --------------------------------------------------------


def test_concave_increments_of_a_concave_row_are_its_increments():
    V = np.array([[0.0, 0.5, 0.8, 0.9, 0.95]])
    np.testing.assert_allclose(concave_increments(V), np.diff(V, axis=1))


def test_concave_increments_hand_worked_and_edge_cases():
    # 0, 0, 1: the majorant is the chord 0 -> 1 over two steps, slope 1/2 twice
    np.testing.assert_allclose(concave_increments([[0.0, 0.0, 1.0]]), [[0.5, 0.5]])
    # a row ending in -inf (past its horizon): -inf increments from there on
    got = concave_increments([[0.0, 0.4, -np.inf, -np.inf]])
    assert got[0, 0] == pytest.approx(0.4) and np.all(got[0, 1:] == -np.inf)
    assert concave_increments(np.zeros((3, 1))).shape == (3, 0)


def test_clearing_price_is_the_budget_th_largest_increment_within_the_limits():
    inc = [[0.5, 0.3, 0.1], [0.4, 0.2, 0.0]]
    # within limits [3, 2]: 0.5, 0.3, 0.1, 0.4, 0.2 (q1's 0.0 is past its limit)
    assert clearing_price(inc, [3, 2], 1) == 0.5
    assert clearing_price(inc, [3, 2], 3) == 0.3
    assert clearing_price(inc, [3, 2], 10) == 0.1  # fewer than the budget: the smallest
    assert clearing_price(inc, [0, 0], 2) == 0.0  # none at all


# --- RowMemo --------------------------------------------------------------------------------------


class Recorder:
    """A row computer that records every batch of keys it is asked for."""

    def __init__(self):
        self.batches = []

    def __call__(self, x0, x1, s, f):
        self.batches.append(
            list(zip(x0.tolist(), x1.tolist(), s.tolist(), f.tolist(), strict=True))
        )
        return np.stack([x0 + 10 * s, x1 + 100 * f], axis=1)  # [n, 2], each row from its key


def _keys(*rows):
    x0, x1, s, f = (np.array(c) for c in zip(*rows, strict=True))
    return x0.astype(float), x1.astype(float), s.astype(np.int64), f.astype(np.int64)


def test_row_memo_computes_each_key_once():
    rec = Recorder()
    memo = RowMemo(rec)
    memo.configure(("u", 4))
    rows = memo.get(*_keys((1, 2, 0, 1), (1, 2, 0, 1), (3, 4, 2, 0)))
    np.testing.assert_array_equal(rows, [[1, 102], [1, 102], [23, 4]])
    assert rec.batches == [[(1.0, 2.0, 0, 1), (3.0, 4.0, 2, 0)]]  # duplicates computed once
    again = memo.get(*_keys((3, 4, 2, 0), (1, 2, 0, 1)))
    np.testing.assert_array_equal(again, [[23, 4], [1, 102]])
    assert len(rec.batches) == 1  # all hits


def test_row_memo_prefetches_the_counts_ahead():
    rec = Recorder()
    memo = RowMemo(rec)
    memo.get(*_keys((1, 1, 0, 0)), prefetch=2)
    assert rec.batches == [
        [(1.0, 1.0, 0, 0), (1.0, 1.0, 0, 1), (1.0, 1.0, 1, 0),
         (1.0, 1.0, 0, 2), (1.0, 1.0, 1, 1), (1.0, 1.0, 2, 0)],
    ]  # fmt: skip
    memo.get(*_keys((1, 1, 1, 1), (1, 1, 2, 0)))
    assert len(rec.batches) == 1


def test_row_memo_empties_on_a_new_signature_or_past_its_limit(monkeypatch):
    rec = Recorder()
    memo = RowMemo(rec)
    memo.configure(("u", 4))
    memo.get(*_keys((1, 1, 0, 0)))
    memo.configure(("u", 4))  # unchanged: kept
    memo.get(*_keys((1, 1, 0, 0)))
    assert len(rec.batches) == 1
    memo.configure(("u", 5))  # changed: emptied
    memo.get(*_keys((1, 1, 0, 0)))
    assert len(rec.batches) == 2
    from agents.bandits import value_tables

    monkeypatch.setattr(value_tables, "_MEMO_LIMIT", 2)
    memo.get(*_keys((2, 2, 0, 0), (3, 3, 0, 0)))  # 1 + 2 > 2: cleared, recomputed together
    assert rec.batches[-1] == [(2.0, 2.0, 0, 0), (3.0, 3.0, 0, 0)]
    memo.get(*_keys((1, 1, 0, 0)))
    assert rec.batches[-1] == [(1.0, 1.0, 0, 0)]  # forgotten by the clear
