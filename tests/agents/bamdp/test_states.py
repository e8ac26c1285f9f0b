"""Tests of agents.bamdp.states: the prior groups, the decision levels and the count of folded
belief states, against direct enumeration."""

from __future__ import annotations

import itertools

import pytest

from adaroll_env import AllocationParams
from agents.bamdp.states import decision_levels, estimate_states, prior_groups

# --- estimate_states ------------------------------------------------------------------------------


def _enumerate_folded(B, N, pilot, cap, mode, R):
    """Folded states at the visited levels, by direct enumeration (equal priors)."""
    pairs = [(s, n - s) for n in range(pilot, cap + 1) for s in range(n + 1)]
    if mode == "sequential":
        levels = set(range(pilot * B, N + 1))
    else:
        levels, t = {N}, pilot * B
        while t < N:
            levels.add(t)
            t = min(t + R, N)
    count = 0

    def rec(first, left, total):  # multisets as non-decreasing index sequences into pairs
        nonlocal count
        if left == 0:
            count += total in levels
            return
        for k in range(first, len(pairs)):
            n = sum(pairs[k])
            if total + n <= N:
                rec(k, left - 1, total + n)

    rec(0, B, 0)
    return count


@pytest.mark.parametrize(
    ("B", "N", "pilot", "cap", "mode", "R"),
    [
        (4, 12, 0, None, "sequential", 1),
        (5, 10, 1, 4, "sequential", 1),
        (3, 14, 2, 6, "rounds", 3),
        (6, 12, 0, None, "rounds", 6),
    ],
)
def test_estimate_states_by_enumeration(B, N, pilot, cap, mode, R):
    params = AllocationParams(
        num_questions=B, budget=N, pilot=pilot, max_group=cap, mode=mode, round_size=R
    )
    expected = _enumerate_folded(B, N, pilot, params.cap, mode, R)
    assert estimate_states(params) == expected
    assert estimate_states(params, limit=10 * expected) == expected


def test_design_state_counts():
    # docs: design §4: B=4, N=12 ~7·10³; B=8, N=32 ~10⁸; B=16, N=128 ~10²¹.
    assert estimate_states(AllocationParams(num_questions=4, budget=12)) == 7036
    assert 1e8 < estimate_states(AllocationParams(num_questions=8, budget=32)) < 1e9
    assert 1e20 < estimate_states(AllocationParams(num_questions=16, budget=128)) < 1e22
    # With a limit, production sizes answer at once with a lower bound past the limit.
    big = AllocationParams(num_questions=512, budget=4096)
    assert estimate_states(big, limit=1_000_000) > 1_000_000


def _enumerate_unfolded(params):
    """Folded states at the visited levels from every unfolded joint state: each question's
    (s, f) with pilot <= s + f <= cap, folded by sorting the pairs within each prior group."""
    pairs = [(s, n - s) for n in range(params.pilot, params.cap + 1) for s in range(n + 1)]
    levels = set(decision_levels(params))
    groups = prior_groups(params)
    seen = set()
    for joint in itertools.product(pairs, repeat=params.num_questions):
        if sum(s + f for s, f in joint) in levels:
            seen.add(tuple(tuple(sorted(joint[i] for i in g)) for g in groups))
    return len(seen)


@pytest.mark.parametrize(
    "kw",
    [
        {"num_questions": 3, "budget": 6, "prior_alpha": (0.5, 2.0, 0.5), "prior_beta": 1.0},
        {"num_questions": 3, "budget": 7, "pilot": 1, "max_group": 4,
         "prior_alpha": (1.0, 1.0, 3.0), "prior_beta": (2.0, 2.0, 1.0)},
        {"num_questions": 3, "budget": 8, "mode": "rounds", "round_size": 3,
         "prior_alpha": (0.5, 0.6, 0.7)},
        {"num_questions": 2, "budget": 9, "mode": "rounds", "round_schedule": (5, 2)},
    ],
)  # fmt: skip
def test_estimate_states_with_prior_groups_by_unfolded_enumeration(kw):
    params = AllocationParams(**kw)
    assert estimate_states(params) == _enumerate_unfolded(params)


def test_the_count_depends_on_the_group_sizes_not_the_prior_values():
    a = AllocationParams(num_questions=3, budget=6, prior_alpha=(0.5, 2.0, 0.5), prior_beta=1.0)
    b = AllocationParams(num_questions=3, budget=6, prior_alpha=(3.0, 3.0, 9.0), prior_beta=1.0)
    assert estimate_states(a) == estimate_states(b) == _enumerate_unfolded(b)


def test_a_limit_answers_more_than_the_limit_with_a_lower_bound():
    params = AllocationParams(num_questions=4, budget=12)
    lb = estimate_states(params, limit=10)
    assert 10 < lb <= 7036  # more than the limit, never more than the true count


def test_estimate_states_needs_params():
    with pytest.raises(TypeError) as info:
        estimate_states({"num_questions": 2})
    assert str(info.value) == "estimate_states needs AllocationParams, got dict"


# --- prior_groups and decision_levels -------------------------------------------------------------


def test_prior_groups_by_first_index():
    params = AllocationParams(
        num_questions=5, budget=10, prior_alpha=(0.5, 2.0, 0.5, 2.0, 1.0), prior_beta=1.0
    )
    assert prior_groups(params) == [(0, 2), (1, 3), (4,)]
    # the same alpha with another beta is another prior
    params = AllocationParams(num_questions=2, budget=4, prior_alpha=1.0, prior_beta=(1.0, 2.0))
    assert prior_groups(params) == [(0,), (1,)]
    assert prior_groups(AllocationParams(num_questions=3, budget=6)) == [(0, 1, 2)]


@pytest.mark.parametrize(
    ("kw", "levels"),
    [
        ({"num_questions": 2, "budget": 5, "pilot": 1}, [2, 3, 4, 5]),
        ({"num_questions": 2, "budget": 10, "mode": "rounds", "round_size": 3}, [0, 3, 6, 9, 10]),
        ({"num_questions": 2, "budget": 10, "pilot": 2, "mode": "rounds", "round_size": 4},
         [4, 8, 10]),
        ({"num_questions": 4, "budget": 20, "mode": "rounds", "round_schedule": (10, 4)},
         [0, 10, 14, 18, 20]),
    ],
)  # fmt: skip
def test_decision_levels(kw, levels):
    assert decision_levels(AllocationParams(**kw)) == levels
