"""Tests of agents.literature.planners: the level fill, VIP's and Knapsack RL's planned group
sizes and GRESO's skip probability, against brute force over every plan and hand-worked cases."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from agents.literature.planners import (
    greso_skip_probability,
    knapsack_plan,
    knapsack_values,
    level_fill,
    vip_objective,
    vip_plan,
)

# ---------------------------------------------------------------- level_fill


def test_level_fill_fewest_first_ties_to_lower_index():
    # n = [3, 0, 1, 0], rooms [5, 1, 5, 5], 6 rollouts: fill q1 and q3 to 1 (2), then q2, q3
    # (levels 1 -> 2: q1 is full, so 2 more: q2 and q3 to 2), then level 2 -> 3: q2, q3 (2 more)
    # = 6: counts [0, 1, 2, 3]; the 7th would go to q0 (fewest at 3, lowest index).
    c = level_fill([3, 0, 1, 0], [5, 1, 5, 5], 6)
    assert c.tolist() == [0, 1, 2, 3]
    assert level_fill([3, 0, 1, 0], [5, 1, 5, 5], 7).tolist() == [1, 1, 2, 3]
    assert level_fill([0, 0], [1, 2], 10).tolist() == [1, 2]  # room runs out
    assert level_fill([2, 2], [0, 0], 3).tolist() == [0, 0]


# ---------------------------------------------------------------- vip


def test_vip_plan_matches_brute_force_hand_case():
    # p = [0.5, 0.2, 0.95]: a = [0.25, 0.16, 0.0475]; N = 15 in [4, 8]^3.
    p = np.array([0.5, 0.2, 0.95])
    plan = vip_plan(p, [0, 0, 0], 15, cap=100, lower=4, upper=8)
    best = min(
        (c for c in itertools.product(range(4, 9), repeat=3) if sum(c) == 15),
        key=lambda c: vip_objective(p, np.array(c)),
    )
    assert plan.tolist() == list(best) == [6, 5, 4]


def test_vip_plan_matches_brute_force_random_small():
    rng = np.random.default_rng(0)
    for _ in range(60):
        B = int(rng.integers(2, 4))
        cap = int(rng.integers(6, 11))
        n = np.where(rng.random(B) < 0.5, 0, rng.integers(0, cap + 1, size=B))
        lo, hi = np.maximum(n, 4), np.maximum(n, min(8, cap))
        N = int(rng.integers(lo.sum(), hi.sum() + 1))
        p = rng.random(B)
        plan = vip_plan(p, n, N, cap, lower=4, upper=8)
        feas = [
            c
            for c in itertools.product(*[range(a, b + 1) for a, b in zip(lo, hi, strict=True)])
            if sum(c) == N
        ]
        best = min(vip_objective(p, np.array(c)) for c in feas)
        assert plan.sum() == N and np.all(plan >= n) and np.all(plan <= cap)
        assert vip_objective(p, plan) == pytest.approx(best, abs=1e-12)


def test_vip_zero_or_min_rule():
    # N = 9 < 3·4: open the two largest a (q0: 0.25, q2: 0.21) at 4 each; the last rollout to the
    # larger marginal decrease a(f(4) − f(5)) = a·0.0275, i.e. q0. q1 stays at 0.
    plan = vip_plan([0.5, 0.1, 0.3], [0, 0, 0], 9, cap=100)
    assert plan.tolist() == [5, 0, 4]


def test_vip_equal_beliefs_split_evenly_and_upper_raised():
    assert vip_plan([0.3] * 4, [0] * 4, 30, cap=100).tolist() == [8, 8, 7, 7]
    # 2 questions, N = 80: upper 32 cannot spend it, so it is raised to 40.
    assert vip_plan([0.5, 0.2], [0, 0], 80, cap=100).tolist() == [40, 40]
    # cap 5 below lower: bounds clip to [5, 5].
    assert vip_plan([0.5, 0.2, 0.1], [0, 0, 0], 15, cap=5).tolist() == [5, 5, 5]


def test_vip_never_plans_below_current_counts():
    # q0 already has 20 (> upper is allowed: it keeps them); the rest of 40 split on the others.
    plan = vip_plan([0.5, 0.5, 0.5], [20, 0, 1], 40, cap=100)
    assert plan.tolist() == [20, 10, 10]


# ---------------------------------------------------------------- knapsack


def test_knapsack_value_by_hand():
    # p = 0.5, n = 2: (1 − 0.25 − 0.25)·0.5·0.25 = 0.0625; n = 0 and n = 1 are worth nothing.
    assert knapsack_values([0.5], [2])[0] == pytest.approx(0.0625)
    assert knapsack_values([0.3, 0.3], [0, 1]).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("solver", ["auto", "dp"])
def test_knapsack_plan_matches_brute_force(solver):
    # 3 questions with 0, 1 and 2 rollouts, 6 rollouts left, cap 5: enumerate every plan.
    p = np.array([0.3, 0.05, 0.6])
    n = np.array([0, 1, 2])
    plan = knapsack_plan(p, n, 6, cap=5, solver=solver)
    best, arg = -1.0, None
    for ks in itertools.product(range(6), range(5), range(4)):
        if sum(ks) <= 6:
            v = knapsack_values(p, n + np.array(ks)).sum()
            if v > best + 1e-15:
                best, arg = v, n + np.array(ks)
    assert plan.sum() == 9 and np.all(plan <= 5)
    assert knapsack_values(p, plan).sum() == pytest.approx(best, abs=1e-14)
    assert plan.tolist() == arg.tolist() == [4, 1, 4]


def test_knapsack_auto_equals_dp_value_random():
    rng = np.random.default_rng(1)
    for _ in range(200):
        B = int(rng.integers(1, 6))
        cap = int(rng.integers(2, 12))
        n = np.where(rng.random(B) < 0.5, 0, rng.integers(0, cap + 1, size=B))
        room = int((cap - n).sum())
        if room == 0:
            continue
        W = int(rng.integers(1, room + 1))
        p = rng.random(B)
        size = int(rng.integers(1, 14))
        auto = knapsack_plan(p, n, W, cap, max_size=size)
        dp = knapsack_plan(p, n, W, cap, max_size=size, solver="dp")
        for plan in (auto, dp):
            assert plan.sum() == n.sum() + W and np.all(plan >= n) and np.all(plan <= cap)
        assert knapsack_values(p, auto).sum() == pytest.approx(
            knapsack_values(p, dp).sum(), abs=1e-13
        )


def test_knapsack_flat_values_spread_evenly():
    # p̂ at 0 or 1: every value is 0, the knapsack spends nothing, the fallback spreads evenly.
    assert knapsack_plan([0.0, 1.0, 0.0], [0, 0, 0], 7, cap=10).tolist() == [3, 2, 2]
    # menus capped by max_size: what they cannot take is spread over the questions with room.
    plan = knapsack_plan([0.5, 0.5], [0, 0], 10, cap=10, max_size=3)
    assert plan.tolist() == [5, 5]


# ---------------------------------------------------------------- greso


def test_greso_skip_probability_by_hand():
    # easy: mean 0.99, strength 16 -> z = 2 -> 1 − 0.5² = 0.75; hard: mean 0.05, strength 8 ->
    # z = 1 -> 0.5; ordinary mean 0.5 -> 0; very strong easy prior: floor 1 − 0.01.
    prob, kind, z = greso_skip_probability([15.84, 0.4, 4.0, 990.0], [0.16, 7.6, 4.0, 10.0])
    assert kind.tolist() == [1, -1, 0, 1]
    assert z.tolist() == [2, 1, 1, 125]
    assert prob == pytest.approx([0.75, 0.5, 0.0, 0.99])


# ---------------------------------------------------------------- more level_fill


def _level_fill_one_at_a_time(rollouts, room, total):
    n, r = list(rollouts), [max(0, x) for x in room]
    out = [0] * len(n)
    for _ in range(total):
        open_ = [i for i in range(len(n)) if out[i] < r[i]]
        if not open_:
            break
        i = min(open_, key=lambda j: (n[j] + out[j], j))
        out[i] += 1
    return out


def test_level_fill_equals_the_one_at_a_time_rule():
    rng = np.random.default_rng(5)
    for _ in range(300):
        B = int(rng.integers(1, 7))
        n = rng.integers(0, 6, size=B)
        room = rng.integers(-1, 5, size=B)
        total = int(rng.integers(0, 15))
        want = _level_fill_one_at_a_time(n, room, total)
        assert level_fill(n, room, total).tolist() == want, (n, room, total)


def test_level_fill_nothing_to_hand_out():
    assert level_fill([1, 2], [3, 3], 0).tolist() == [0, 0]
    assert level_fill([1, 2], [3, 3], -2).tolist() == [0, 0]


# ---------------------------------------------------------------- more vip


def test_vip_objective_by_hand():
    # a = 0.25 and 0.16; (n − 1)/n²: 3/16 at n = 4, nothing at n = 0
    assert vip_objective([0.5, 0.2], [4, 0]) == pytest.approx(0.25 * 3 / 16)
    assert vip_objective([0.5, 0.2], [1, 2]) == pytest.approx(0.16 * 1 / 4)
    # p̂ clipped to [1e-6, 1 − 1e-6]: a degenerate p̂ still counts a little
    assert vip_objective([0.0], [2]) == pytest.approx(1e-6 * (1 - 1e-6) / 4)


def test_vip_plan_with_gamma_matches_brute_force():
    # γ > 0 adds γ·log p̂·n to the objective: rollouts drift towards the questions with small
    # p̂ (log p̂ most negative). Brute force over [4, 8]^3 with Σ n = 15.
    p = np.array([0.5, 0.2, 0.9])
    gamma = 0.01

    def objective(c):
        return vip_objective(p, np.array(c)) + gamma * float(np.sum(np.log(p) * np.array(c)))

    plan = vip_plan(p, [0, 0, 0], 15, cap=100, lower=4, upper=8, gamma=gamma)
    feasible = [c for c in itertools.product(range(4, 9), repeat=3) if sum(c) == 15]
    best = min(objective(c) for c in feasible)
    assert objective(plan.tolist()) == pytest.approx(best, abs=1e-12)
    assert plan.tolist() != vip_plan(p, [0, 0, 0], 15, cap=100, lower=4, upper=8).tolist()


# ---------------------------------------------------------------- more knapsack


def test_knapsack_values_broadcast_a_table():
    p = np.array([0.5, 0.2])
    sizes = np.array([[0, 1, 2, 3], [0, 1, 2, 3]])
    got = knapsack_values(p, sizes)
    assert got.shape == (2, 4)
    for i in range(2):
        for j, n in enumerate(sizes[i]):
            q = p[i]
            want = 0.0 if n == 0 else (1 - q**n - (1 - q) ** n) * q * (1 - q) ** 2
            assert got[i, j] == pytest.approx(want, abs=1e-15)


def test_knapsack_plan_spends_exactly_the_budget_left():
    # 2 questions with 3 and 0 rollouts, 5 left, cap 4: the plan holds the old rollouts too
    plan = knapsack_plan([0.4, 0.4], [3, 0], 5, cap=4)
    assert plan.sum() == 8 and np.all(plan >= [3, 0]) and np.all(plan <= 4)
    assert plan.tolist() == [4, 4]


# ---------------------------------------------------------------- more greso


def test_greso_weak_priors_never_skip_and_the_floor_holds():
    # strength 2 rounds to z = 0 epochs: never skipped, however easy the mean
    prob, kind, z = greso_skip_probability([1.98], [0.02])
    assert kind.tolist() == [1] and z.tolist() == [0] and prob.tolist() == [0.0]
    # other settings: p_hard 0.8, 24 rollouts an epoch -> z = round(48/24) = 2: 1 − 0.64
    prob, kind, z = greso_skip_probability([2.0], [46.0], p_hard=0.8, epoch_rollouts=24.0)
    assert kind.tolist() == [-1] and z.tolist() == [2]
    assert prob[0] == pytest.approx(1 - 0.8**2)
    # the exploration floor: 1 − max(0.5^z, min_explore)
    prob, _, _ = greso_skip_probability([800.0], [1.0], min_explore=0.2)
    assert prob[0] == pytest.approx(0.8)
    assert math.isclose(greso_skip_probability([800.0], [1.0])[0][0], 0.99)
