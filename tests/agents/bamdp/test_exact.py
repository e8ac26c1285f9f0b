"""Tests for the exact BAMDP solver (agents.bamdp.exact).

The reference is a brute force written here from the problem statement alone: unfolded states
(one (s, f) per question), its own probabilities from the Beta function (math.gamma), its own
enumeration of every counts vector, a plain memoised recursion. It shares no code with the solver
beyond the utility functions themselves.
"""

import itertools
import math

import numpy as np
import pytest

from adaroll_env import AllocationParams
from adaroll_env.model import pilot_counts
from adaroll_env.utilities import get_utility
from agents.bamdp.exact import TIE_TOL, ExactSolution, estimate_states, solve_exact
from agents.base import BaseAllocator
from agents.policy_value import exact_value

CUSTOM_MODULE = "adaroll_test_bamdp_custom_utility"
CUSTOM = f"{CUSTOM_MODULE}:wiggle"
CUSTOM_SOURCE = '''
import numpy as np


def wiggle(s, f):
    """Non-monotone, signed, 0 at n = 0."""
    s = np.asarray(s, dtype=np.float64)
    f = np.asarray(f, dtype=np.float64)
    n = s + f
    return np.where(n > 0, np.sin(1.3 * s - 0.7 * f) + 0.25 * (s == f) - 0.1 * (n > 4), 0.0)
'''


@pytest.fixture
def custom_utility(tmp_path, monkeypatch):
    (tmp_path / f"{CUSTOM_MODULE}.py").write_text(CUSTOM_SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return CUSTOM


# --------------------------------------------------------------------------------------------
# Independent brute force
# --------------------------------------------------------------------------------------------


def _beta_fn(x, y):
    return math.gamma(x) * math.gamma(y) / math.gamma(x + y)


def _bb_prob(c, k, a, b):
    """P(k successes in c rollouts) under Beta(a, b): C(c, k) B(a + k, b + c - k) / B(a, b)."""
    return math.comb(c, k) * _beta_fn(a + k, b + c - k) / _beta_fn(a, b)


class BruteForce:
    """The BAMDP over unfolded states, straight from the definition."""

    def __init__(
        self, B, N, alpha, beta, utility, *, pilot=0, max_group=None, mode="sequential", R=1,
        threshold=0.0,
    ):  # fmt: skip
        self.B, self.N, self.mode, self.R = B, N, mode, R
        self.a = list(alpha) if isinstance(alpha, tuple) else [alpha] * B
        self.b = list(beta) if isinstance(beta, tuple) else [beta] * B
        # the selective pilot, from its definition: a question whose prior gives its pilot less
        # than `threshold` chance of a success, or of a failure, gets none of it
        self.pilots = [
            pilot if pilot and min(1 - _bb_prob(pilot, 0, a, b), 1 - _bb_prob(pilot, pilot, a, b))
            >= threshold else 0
            for a, b in zip(self.a, self.b, strict=True)
        ]  # fmt: skip
        self.skipped = pilot * B - sum(self.pilots)  # the first round after the pilot takes them
        # without max_group the model's cap: N less the others' whole pilots (never binding
        # without a selective pilot; with one, the others' skipped pilots still count)
        self.cap = N - pilot * (B - 1) if max_group is None else max_group
        self.u = get_utility(utility)
        self.memo = {}

    def actions(self, s, f):
        n = [si + fi for si, fi in zip(s, f, strict=True)]
        first = sum(n) == sum(self.pilots)
        R = self.R + (self.skipped if first else 0)
        r = 1 if self.mode == "sequential" else min(R, self.N - sum(n))
        out = []
        for c in itertools.product(range(r + 1), repeat=self.B):
            if sum(c) == r and all(n[i] + c[i] <= self.cap for i in range(self.B)):
                out.append(c)
        return out

    def q(self, s, f, c):
        touched = [i for i in range(self.B) if c[i] > 0]
        total = 0.0
        for ks in itertools.product(*(range(c[i] + 1) for i in touched)):
            prob = 1.0
            s1, f1 = list(s), list(f)
            for i, k in zip(touched, ks, strict=True):
                prob *= _bb_prob(c[i], k, self.a[i] + s[i], self.b[i] + f[i])
                s1[i] += k
                f1[i] += c[i] - k
            total += prob * self.value(tuple(s1), tuple(f1))
        return total

    def value(self, s, f):
        key = (s, f)
        if key in self.memo:
            return self.memo[key]
        if sum(s) + sum(f) == self.N:
            v = float(np.sum(self.u(np.array(s), np.array(f))))
        else:
            v = max(self.q(s, f, c) for c in self.actions(s, f))
        self.memo[key] = v
        return v

    def start(self):
        zero = (0,) * self.B
        if not any(self.pilots):
            return self.value(zero, zero)
        return self.q(zero, zero, tuple(self.pilots))

    def fold(self, s, f):
        """Multiset of (s, f) per prior group (independent of the solver's encoding)."""
        groups = {}
        for i in range(self.B):
            groups.setdefault((self.a[i], self.b[i]), []).append((s[i], f[i]))
        return tuple(sorted((k, tuple(sorted(v))) for k, v in groups.items()))


# (B, N, pilot, max_group, prior_alpha, prior_beta, utility, mode, R)
CASES = [
    # sequential
    (1, 6, 0, None, 0.5, 0.5, "informative", "sequential", 1),
    (2, 5, 0, None, 1.0, 1.0, "informative", "sequential", 1),
    (2, 6, 1, None, 0.5, 0.5, "hit", "sequential", 1),
    (2, 8, 0, 5, 0.7, 1.9, "grpo_signal", "sequential", 1),
    (2, 12, 0, None, (0.5, 2.0), (1.5, 1.0), "dr_grpo_signal", "sequential", 1),
    (2, 9, 2, None, (1.0, 3.0), (2.0, 1.0), "informative", "sequential", 1),
    (2, 7, 0, None, 1.0, 1.0, "custom", "sequential", 1),
    (2, 10, 1, 6, 0.6, 0.6, "grpo_signal", "sequential", 1),
    (3, 7, 0, None, 1.0, 1.0, "grpo_signal", "sequential", 1),
    (3, 8, 1, 4, 0.4, 0.9, "custom", "sequential", 1),
    (3, 9, 0, 4, (0.5, 0.5, 2.0), (0.5, 0.5, 1.0), "informative", "sequential", 1),
    (3, 10, 0, None, 2.0, 3.0, "hit", "sequential", 1),
    (3, 6, 1, None, (1.0, 2.0, 3.0), (3.0, 2.0, 1.0), "dr_grpo_signal", "sequential", 1),
    (3, 8, 2, None, 1.0, 1.0, "informative", "sequential", 1),
    (3, 9, 0, None, 0.5, 0.5, "dr_grpo_signal", "sequential", 1),
    (4, 6, 0, None, 1.0, 1.0, "informative", "sequential", 1),
    (4, 8, 1, None, 0.3, 0.6, "grpo_signal", "sequential", 1),
    (4, 8, 0, 3, 1.5, 0.8, "hit", "sequential", 1),
    (4, 7, 0, None, (1.0, 1.0, 2.0, 2.0), (1.0, 1.0, 0.5, 0.5), "custom", "sequential", 1),
    (4, 8, 1, 3, (0.5, 1.0, 0.5, 1.0), (1.0, 1.0, 1.0, 1.0), "informative", "sequential", 1),
    (4, 8, 0, 3, 0.9, 0.9, "dr_grpo_signal", "sequential", 1),
    # rounds
    (1, 5, 0, None, 1.0, 1.0, "informative", "rounds", 2),
    (2, 6, 0, None, 1.0, 1.0, "informative", "rounds", 2),
    (2, 7, 0, None, 0.5, 1.5, "grpo_signal", "rounds", 3),
    (2, 8, 1, 5, (1.0, 2.0), (2.0, 1.0), "hit", "rounds", 2),
    (2, 12, 0, None, 1.0, 1.0, "grpo_signal", "rounds", 2),
    (2, 9, 0, None, 0.8, 0.8, "custom", "rounds", 3),
    (3, 9, 0, None, 1.0, 1.0, "dr_grpo_signal", "rounds", 3),
    (3, 8, 1, None, 0.4, 0.4, "custom", "rounds", 2),
    (3, 10, 0, 4, (1.0, 1.0, 3.0), (1.0, 1.0, 1.0), "informative", "rounds", 3),
    (3, 7, 0, None, (1.0, 2.0, 3.0), (1.0, 1.0, 1.0), "hit", "rounds", 2),
    (3, 12, 0, None, 1.0, 1.0, "informative", "rounds", 3),
    (4, 8, 0, None, 1.0, 1.0, "informative", "rounds", 4),
    (4, 8, 1, None, 0.7, 1.3, "grpo_signal", "rounds", 2),
    (4, 10, 0, 3, 1.0, 1.0, "hit", "rounds", 4),
    (4, 9, 1, None, (0.5, 0.5, 1.0, 1.0), (1.0, 1.0, 2.0, 2.0), "custom", "rounds", 3),
    (4, 8, 0, 3, 2.0, 1.0, "dr_grpo_signal", "rounds", 3),
    (4, 12, 0, 3, 0.5, 0.5, "informative", "rounds", 4),
    (4, 10, 2, None, 1.0, 1.0, "grpo_signal", "rounds", 4),
    # a selective pilot (pilot_threshold, the tenth entry): near-certain priors skip it
    (3, 8, 1, None, (1.0, 0.02, 1.0), (1.0, 40.0, 1.0), "informative", "sequential", 1, 0.05),
    (3, 9, 2, None, (0.5, 30.0, 0.05), (0.5, 0.01, 20.0), "informative", "sequential", 1, 0.1),
    (3, 9, 1, None, (1.0, 0.02, 1.0), (1.0, 40.0, 1.0), "informative", "rounds", 3, 0.05),
    (4, 11, 1, None, (0.7, 0.7, 0.01, 0.01), (0.9, 0.9, 9.0, 9.0), "custom", "rounds", 2, 0.01),
    (4, 12, 2, 5, (1.0, 0.03, 50.0, 1.0), (2.0, 30.0, 0.02, 1.0), "hit", "rounds", 2, 0.05),
]


def _case_id(case):
    B, N, pilot, cap, a, _b, utility, mode, R, *threshold = case
    prior = "per-q" if isinstance(a, tuple) else f"{a}"
    skip = f"-skip{threshold[0]}" if threshold else ""
    return f"{mode[:3]}-B{B}-N{N}-R{R}-p{pilot}{skip}-cap{cap}-{prior}-{utility}"


def _params(case, custom):
    B, N, pilot, cap, a, b, utility, mode, R, *threshold = case
    utility = custom if utility == "custom" else utility
    return AllocationParams(
        num_questions=B,
        budget=N,
        pilot=pilot,
        max_group=cap,
        prior_alpha=a,
        prior_beta=b,
        utility=utility,
        mode=mode,
        round_size=R,
        pilot_threshold=threshold[0] if threshold else 0.0,
    )


def _brute(case, custom):
    B, N, pilot, cap, a, b, utility, mode, R, *threshold = case
    utility = custom if utility == "custom" else utility
    return BruteForce(B, N, a, b, utility, pilot=pilot, max_group=cap, mode=mode, R=R,
                      threshold=threshold[0] if threshold else 0.0)  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_matches_independent_brute_force(case, custom_utility):
    params = _params(case, custom_utility)
    sol = solve_exact(params)
    bf = _brute(case, custom_utility)
    v = bf.start()
    assert sol.value == pytest.approx(v, rel=0, abs=1e-12)
    assert pilot_counts(params).tolist() == bf.pilots
    if len(case) > 9:
        assert 0 < bf.skipped < params.pilot * params.num_questions  # some skip, some do not

    # Every state the brute force reached: same value, and the solver's action (unfolded to
    # question indices) is optimal, feasible and the lexicographically largest optimal one.
    for (s, f), v_state in bf.memo.items():
        assert sol.state_value(s, f) == pytest.approx(v_state, rel=0, abs=1e-12)
        if sum(s) + sum(f) == params.total_budget:
            continue
        act = sol.action(np.array(s), np.array(f))
        assert act.dtype == np.int64 and act.shape == (params.num_questions,)
        feasible = bf.actions(s, f)
        assert tuple(act.tolist()) in feasible
        qs = {c: bf.q(s, f, c) for c in feasible}
        best = max(qs.values())
        assert qs[tuple(act.tolist())] == pytest.approx(best, rel=0, abs=1e-12)
        # ties as the solver counts them (TIE_TOL): a selective-pilot case has two actions
        # 1.6e-10 apart, which a looser tolerance would call tied
        optimal = [c for c, q in qs.items() if q >= best - TIE_TOL * max(1.0, abs(best))]
        assert tuple(act.tolist()) == max(optimal)

    # The folded states the brute force reached are exactly the ones the solver counts.
    folded = {bf.fold(s, f) for s, f in bf.memo}
    assert len(folded) == estimate_states(params) == sol.num_states


# --------------------------------------------------------------------------------------------
# Hand-worked cases
# --------------------------------------------------------------------------------------------


def test_two_questions_three_rollouts_informative_by_hand():
    # Beta(1,1): the number of successes in n rollouts is uniform on 0..n, so a question is
    # informative after n rollouts with probability (n - 1)/(n + 1): 0, 1/3, 1/2 for n = 1, 2, 3.
    # First rollout: the questions are exchangeable, q0 by the lowest-index rule. Say it
    # succeeds, q0 = (1,0) (failure is symmetric):
    #   - q0 again: F (1/3) -> (1,1), informative whatever the last rollout does: 1;
    #               S (2/3) -> (2,0), last on q0 is informative iff F (1/4), on q1 gives 0: 1/4.
    #     Q = 1/3 + 2/3 * 1/4 = 1/2.
    #   - q1: then the third on q0 is informative iff F (1/3), on q1 iff its second outcome
    #     differs from its first (1/3 under Beta(1,1)): Q = 1/3.
    # So V = 1/2 (as the open-loop (3, 0)) and the policy keeps drilling q0.
    params = AllocationParams(num_questions=2, budget=3, prior_alpha=1.0, prior_beta=1.0)
    sol = solve_exact(params)
    assert sol.value == pytest.approx(0.5, abs=1e-14)
    assert sol.action([0, 0], [0, 0]).tolist() == [1, 0]
    assert sol.action([1, 0], [0, 0]).tolist() == [1, 0]
    q = sol.q_values([1, 0], [0, 0])
    assert q[(1, 0)] == pytest.approx(1 / 2, abs=1e-14)
    assert q[(0, 1)] == pytest.approx(1 / 3, abs=1e-14)
    q = sol.q_values([2, 0], [0, 0])
    assert q == {(1, 0): pytest.approx(1 / 4, abs=1e-14), (0, 1): pytest.approx(0.0, abs=1e-14)}
    # Ties resolve to the lowest question index, also when the folded order disagrees:
    # q1 = (1,1) is informative, the last rollout changes nothing, and q0 = (0,0) sorts first in
    # the folded state but the rule is on question indices.
    assert sol.action([1, 0], [1, 0]).tolist() == [1, 0]
    assert sol.action([0, 1], [0, 1]).tolist() == [1, 0]
    assert sol.action([0, 0], [0, 0]).tolist() == [1, 0]


def test_two_questions_three_rollouts_hit_by_hand():
    # hit under Beta(1,1): P(at least one success in n) = n/(n + 1).
    # First rollout on q0 (symmetric). S (1/2): q0 is hit; both remaining on q1: 2/3. V = 5/3.
    # F (1/2): q0 = (0,1).
    #   - next on q1: S (1/2) -> q1 hit, last on q0 (P(S | Beta(1,2)) = 1/3): 4/3;
    #                 F (1/2) -> both (0,1), last anywhere: 1/3.           Q = 5/6.
    #   - next on q0: S (1/3) -> q0 hit, last on q1: 1/2 -> 3/2;
    #                 F (2/3) -> q0 = (0,2), last on q1: 1/2 (q0: 1/4).     Q = 1/2 + 1/3 = 5/6.
    #   A true tie: the lowest index (q0) is chosen.
    # V = 1/2 * 5/3 + 1/2 * 5/6 = 5/4 (the best open-loop split, (2, 1), gives 2/3 + 1/2 = 7/6).
    params = AllocationParams(num_questions=2, budget=3, utility="hit")
    sol = solve_exact(params)
    assert sol.value == pytest.approx(5 / 4, abs=1e-14)
    assert sol.action([0, 0], [0, 0]).tolist() == [1, 0]
    q = sol.q_values([0, 0], [1, 0])
    assert q[(1, 0)] == pytest.approx(5 / 6, abs=1e-14)
    assert q[(0, 1)] == pytest.approx(5 / 6, abs=1e-14)
    assert sol.action([0, 0], [1, 0]).tolist() == [1, 0]
    # After a success on q0, q1 gets the rest: Q(q1) = 1 + 2/3 > Q(q0) = 1 + 1/2.
    assert sol.action([1, 0], [0, 0]).tolist() == [0, 1]
    assert sol.q_values([1, 0], [0, 0])[(0, 1)] == pytest.approx(5 / 3, abs=1e-14)


def test_rounds_two_questions_by_hand():
    # B=2, N=4, R=2, Beta(1,1), informative.
    # Round 1 = (1,1): each question holds one outcome; round 2 = (1,1) makes each informative
    # with P(other outcome) = 1/3: 2/3; (2,0) gives 1 - (2/3)(3/4) = 1/2. Q(1,1) = 2/3.
    # Round 1 = (2,0): q0 = (1,1) w.p. 1/3 -> round 2 on q1: 1 + 1/3 = 4/3;
    #                  q0 = (2,0) or (0,2) w.p. 2/3 -> round 2 on q0: 1 - (3/4)(4/5) = 2/5
    #                  (on q1: 1/3; split: 1/4).
    #   Q(2,0) = 1/3 * 4/3 + 2/3 * 2/5 = 4/9 + 4/15 = 32/45 > 2/3 = 30/45.
    params = AllocationParams(num_questions=2, budget=4, mode="rounds", round_size=2)
    sol = solve_exact(params)
    assert sol.value == pytest.approx(32 / 45, abs=1e-14)
    assert sol.action([0, 0], [0, 0]).tolist() == [2, 0]
    q = sol.q_values([0, 0], [0, 0])
    assert set(q) == {(2, 0), (1, 1)}  # (0, 2) is the same folded decision as (2, 0)
    assert q[(1, 1)] == pytest.approx(2 / 3, abs=1e-14)
    assert sol.action([1, 0], [1, 0]).tolist() == [0, 2]
    assert sol.action([2, 0], [0, 0]).tolist() == [2, 0]
    assert sol.q_values([2, 0], [0, 0])[(2, 0)] == pytest.approx(2 / 5, abs=1e-14)


def test_folding_same_prior_versus_different_priors():
    # One rollout, hit: V = the largest prior mean. Same prior: one class, ties to q0;
    # different priors: no folding, q1 (mean 3/4) wins.
    same = solve_exact(AllocationParams(num_questions=2, budget=1, utility="hit"))
    assert same.value == pytest.approx(0.5)
    assert same.action([0, 0], [0, 0]).tolist() == [1, 0]
    diff = solve_exact(
        AllocationParams(
            num_questions=2, budget=1, utility="hit", prior_alpha=(1.0, 3.0), prior_beta=1.0
        )
    )
    assert diff.value == pytest.approx(0.75)
    assert diff.action([0, 0], [0, 0]).tolist() == [0, 1]
    # States: level 0 has one; level 1 has {(0,0),(1,0)} and {(0,0),(0,1)} when folded, and
    # the four (question, outcome) pairs otherwise.
    assert same.num_states == estimate_states(same.params) == 3
    assert diff.num_states == estimate_states(diff.params) == 5
    # Equal priors written per question fold the same way as a shared float.
    tup = AllocationParams(num_questions=3, budget=6, prior_alpha=(2.0, 2.0, 2.0), prior_beta=1.5)
    flt = AllocationParams(num_questions=3, budget=6, prior_alpha=2.0, prior_beta=1.5)
    assert estimate_states(tup) == estimate_states(flt)
    assert solve_exact(tup).value == pytest.approx(solve_exact(flt).value, abs=1e-14)
    # Partial folding: two questions share a prior, the third does not.
    part = AllocationParams(num_questions=3, budget=6, prior_alpha=(2.0, 2.0, 1.0), prior_beta=1.5)
    dist = AllocationParams(num_questions=3, budget=6, prior_alpha=(2.0, 3.0, 1.0), prior_beta=1.5)
    assert estimate_states(flt) < estimate_states(part) < estimate_states(dist)


def test_non_monotone_utility_is_not_assumed_monotone():
    # grpo_signal at (1,1) is 1 and falls at (2,1): with Beta(1,1), B=1, N=3 sequential, the
    # only policy spends all 3; check the value is E[u] at n = 3 (uniform successes 0..3:
    # u = 0, 2√2/3, 2√2/3, 0 -> mean √2/3).
    sol = solve_exact(AllocationParams(num_questions=1, budget=3, utility="grpo_signal"))
    assert sol.value == pytest.approx(math.sqrt(2) / 3, abs=1e-14)


# --------------------------------------------------------------------------------------------
# The policy evaluated by the outcome-tree evaluator
# --------------------------------------------------------------------------------------------


class SolutionAllocator(BaseAllocator):
    """Looks the decision up in an ExactSolution."""

    name = "exact-solution"

    def __init__(self, solution: ExactSolution) -> None:
        super().__init__()
        self.solution = solution

    def allocate(self, obs):
        s = np.rint(np.asarray(obs["successes"], dtype=np.float64)).astype(np.int64)
        n = np.rint(np.asarray(obs["rollouts"], dtype=np.float64)).astype(np.int64)
        return self.solution.action(s, n - s)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(
            num_questions=3,
            budget=7,
            pilot=1,
            prior_alpha=0.5,
            prior_beta=0.5,
            utility="grpo_signal",
        ),
        dict(num_questions=2, budget=8, max_group=5, utility="informative"),
        dict(num_questions=4, budget=9, prior_alpha=2.0, prior_beta=1.0, utility="hit"),
        dict(
            num_questions=3,
            budget=9,
            mode="rounds",
            round_size=3,
            prior_alpha=2.0,
            prior_beta=1.0,
            utility="hit",
        ),
        dict(
            num_questions=4,
            budget=8,
            mode="rounds",
            round_size=2,
            pilot=1,
            prior_alpha=0.7,
            prior_beta=1.3,
        ),
        dict(
            num_questions=4,
            budget=11,
            mode="rounds",
            round_size=4,
            max_group=4,
            utility="dr_grpo_signal",
        ),
    ],
)
def test_policy_value_by_exact_evaluator(kwargs):
    params = AllocationParams(**kwargs)
    sol = solve_exact(params)
    a, b = float(params.prior_alpha), float(params.prior_beta)
    v = exact_value(SolutionAllocator(sol), params, (a, b), max_states=200_000)
    assert v is not None
    assert v == pytest.approx(sol.value, rel=0, abs=1e-9)
    # And the optimum beats (or ties) uniform under the same evaluator.
    import agents

    uniform = exact_value(
        agents.make_allocator("uniform", params), params, (a, b), max_states=200_000
    )
    assert sol.value >= uniform - 1e-12


# --------------------------------------------------------------------------------------------
# State limits (the counting itself: test_states.py)
# --------------------------------------------------------------------------------------------


def test_too_many_states_raises_with_count_and_fix():
    params = AllocationParams(num_questions=8, budget=32)
    with pytest.raises(ValueError, match=r"max_states=1000000.*raise max_states"):
        solve_exact(params)
    small = AllocationParams(num_questions=4, budget=12)
    with pytest.raises(ValueError, match=r"7\.04e\+03"):
        solve_exact(small, max_states=1000)
    assert solve_exact(small, max_states=7036).num_states == 7036


def test_lookup_errors():
    params = AllocationParams(num_questions=2, budget=4, pilot=1)
    sol = solve_exact(params)
    with pytest.raises(ValueError, match="not a decision state"):
        sol.action([0, 0], [0, 0])  # before the pilot
    with pytest.raises(ValueError, match="not a decision state"):
        sol.action([2, 1], [0, 1])  # budget spent
    with pytest.raises(ValueError, match="shape"):
        sol.action([0, 0, 0], [0, 0, 0])
    with pytest.raises(ValueError, match="whole numbers"):
        sol.action([0.5, 1.0], [0.5, 0.0])
    assert sol.action([1.0, 0.0], [0.0, 1.0]).tolist() in ([1, 0], [0, 1])
    rounds = solve_exact(params.replace(mode="rounds", round_size=2))
    with pytest.raises(ValueError, match="not a decision state"):
        rounds.action([1, 1], [1, 0])  # 3 rollouts spent: off the rounds grid (2, 4)
