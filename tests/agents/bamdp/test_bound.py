"""Tests of agents.bamdp.bound: the Lagrangian dual Σ_i V_i(λ) + λ·N' and its minimum, the
certified upper bound on the BAMDP value."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import agents
from adaroll_env import AllocationParams
from adaroll_env.model import pilot_counts
from adaroll_env.utilities import get_utility
from agents.bamdp import cache as bamdp_cache
from agents.bamdp.bound import dual_minimum, dual_value, upper_bound
from agents.policy_value import exact_value

UTILITIES = ["informative", "hit", "grpo_signal", "dr_grpo_signal"]


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ADAROLL_CACHE_DIR", str(tmp_path / "cache"))
    bamdp_cache.clear_memory()
    yield
    bamdp_cache.clear_memory()


@pytest.mark.parametrize("utility", UTILITIES)
def test_bound_is_tight_when_the_budget_forces_the_allocation(utility):
    # B = 1: the whole budget goes to the one question, so V* is E[u] after N rollouts.
    p = AllocationParams(
        num_questions=1, budget=5, prior_alpha=0.4, prior_beta=0.9, utility=utility
    )
    v = exact_value(agents.make_allocator("uniform", p), p, (0.4, 0.9))
    assert upper_bound(p) == pytest.approx(v, abs=1e-7)


@pytest.mark.parametrize("utility", UTILITIES)
@pytest.mark.parametrize(("B", "N", "pilot", "cap"), [(2, 6, 0, None), (3, 9, 1, 4), (2, 8, 0, 5)])
def test_bound_dominates_policies(utility, B, N, pilot, cap):
    p = AllocationParams(
        num_questions=B,
        budget=N,
        pilot=pilot,
        max_group=cap,
        prior_alpha=0.5,
        prior_beta=0.5,
        utility=utility,
    )
    ub = upper_bound(p)
    for spec in ("uniform", "bamdp"):
        v = exact_value(agents.make_allocator(spec, p), p, (0.5, 0.5))
        assert v <= ub + 1e-9
    # Every λ gives a valid bound; the minimum is below each.
    for lam in (-0.5, 0.0, 0.1, 0.7):
        assert ub <= dual_value(p, lam) + 1e-9


def test_bound_per_question_priors():
    p = AllocationParams(num_questions=2, budget=6, prior_alpha=(0.5, 3.0), prior_beta=(0.5, 1.0))
    q = AllocationParams(num_questions=1, budget=3, prior_alpha=0.5, prior_beta=0.5)
    r = AllocationParams(num_questions=1, budget=3, prior_alpha=3.0, prior_beta=1.0)
    # Splitting the pair's budget in halves is one feasible relaxation point: the bound of the
    # pair is at most the sum of the single bounds plus the value of moving budget across.
    assert upper_bound(p) >= max(upper_bound(q), upper_bound(r))


@pytest.mark.parametrize(
    ("utility", "lam", "want"),
    [
        # B = 1, N = 1, Beta(1, 1): V(0, 0; λ) = max(0, E[u after one rollout] − λ), so the dual
        # is max(0, E[u(1)] − λ) + λ = max(λ, E[u(1)]); a single rollout is never mixed.
        ("informative", 0.3, 0.3),
        ("informative", -0.2, 0.0),
        ("hit", 0.3, 0.5),
        ("hit", 0.8, 0.8),
        ("hit", -1.0, 0.5),
    ],
)
def test_dual_value_one_question_one_rollout_by_hand(utility, lam, want):
    p = AllocationParams(num_questions=1, budget=1, utility=utility)
    assert dual_value(p, lam) == pytest.approx(want, abs=1e-12)


def _dual_by_recursion(params, lam):
    """Σ_i E_pilot[V_i(s, f; λ)] + λ·(N − pilot·B), every question on its own, by recursion
    and Beta-binomial weights from math.lgamma."""
    u = get_utility(params.utility)
    cap = params.cap
    pilots = pilot_counts(params).tolist()  # the selective pilot's rule: test_exact's brute force
    a_all = np.broadcast_to(params.prior_alpha, (params.num_questions,))
    b_all = np.broadcast_to(params.prior_beta, (params.num_questions,))

    def betaln(x, y):
        return math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y)

    total = 0.0
    for a, b, P in zip(a_all.tolist(), b_all.tolist(), pilots, strict=True):

        @functools.cache
        def V(s, f, a=a, b=b):
            stop = float(u(np.array([s]), np.array([f]))[0])
            if s + f >= cap:
                return stop
            q = (a + s) / (a + b + s + f)
            return max(stop, -lam + q * V(s + 1, f) + (1 - q) * V(s, f + 1))

        for k in range(P + 1):
            w = math.comb(P, k) * math.exp(betaln(a + k, b + P - k) - betaln(a, b))
            total += w * V(k, P - k)
    return total + lam * (params.total_budget - sum(pilots))


@pytest.mark.parametrize("utility", UTILITIES)
@pytest.mark.parametrize(
    "kw",
    [
        {"num_questions": 2, "budget": 6},
        {"num_questions": 3, "budget": 9, "pilot": 1, "max_group": 4},
        {"num_questions": 3, "budget": 8, "pilot": 2, "prior_alpha": (0.5, 2.0, 0.5),
         "prior_beta": (0.5, 1.0, 0.5)},
        {"num_questions": 3, "budget": 9, "pilot": 2, "prior_alpha": (1.0, 0.02, 1.0),
         "prior_beta": (1.0, 40.0, 1.0), "pilot_threshold": 0.05},  # one skips the pilot
    ],
)  # fmt: skip
def test_dual_value_equals_an_independent_recursion(utility, kw):
    p = AllocationParams(utility=utility, **kw)
    for lam in (-0.3, 0.0, 0.04, 0.25):
        assert dual_value(p, lam) == pytest.approx(_dual_by_recursion(p, lam), abs=1e-10)


@pytest.mark.parametrize("utility", ["informative", "grpo_signal"])
def test_dual_minimum_is_the_smallest_dual_on_a_fine_grid(utility):
    p = AllocationParams(
        num_questions=3, budget=9, prior_alpha=0.5, prior_beta=0.5, utility=utility
    )
    lam, bound = dual_minimum(p)
    assert bound == pytest.approx(dual_value(p, lam), abs=1e-12)
    assert upper_bound(p) == bound
    grid = min(dual_value(p, x) for x in np.linspace(-1.0, 1.0, 401))
    # (to the bounded search's tolerance, about sqrt(eps)·|λ| in λ times a slope of at most N)
    assert bound <= grid + 1e-7
    # convex in λ: a local minimum is the global one
    for step in (1e-3, 1e-5):
        assert dual_value(p, lam - step) >= bound - 1e-7
        assert dual_value(p, lam + step) >= bound - 1e-7


def test_upper_bound_one_question_one_rollout():
    # min over λ of max(λ, 1/2) is 1/2, the value of the only policy
    assert upper_bound(AllocationParams(num_questions=1, budget=1, utility="hit")) == (
        pytest.approx(0.5, abs=1e-9)
    )
