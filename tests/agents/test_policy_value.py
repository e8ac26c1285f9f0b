import itertools
import math

import numpy as np
import pytest
from scipy.special import betaln

import agents
from adaroll_env import AllocationParams
from adaroll_env.utilities import get_utility
from agents.policy_value import exact_value


def _brute_force(policy, B, N, a, b, utility, pilot=0):
    """Independent enumeration: every outcome sequence, probabilities from Beta integrals,
    the policy asked at each history (sequential: one rollout per decision)."""
    u = get_utility(utility)

    def seq_prob(s, f):
        return math.exp(betaln(a + s, b + f) - betaln(a, b))

    def rec(s, f):
        n = [si + fi for si, fi in zip(s, f, strict=True)]
        if sum(n) == N:
            return float(np.sum(u(np.array(s), np.array(f))))
        q = policy(s, f)
        p_succ = seq_prob(s[q] + 1, f[q]) / seq_prob(s[q], f[q])
        s1 = list(s)
        s1[q] += 1
        f1 = list(f)
        f1[q] += 1
        return p_succ * rec(s1, f) + (1 - p_succ) * rec(s, f1)

    if pilot == 0:
        return rec([0] * B, [0] * B)
    total = 0.0
    for ks in itertools.product(range(pilot + 1), repeat=B):
        prob = 1.0
        for k in ks:
            prob *= math.comb(pilot, k) * seq_prob(k, pilot - k)
        total += prob * rec(list(ks), [pilot - k for k in ks])
    return total


def test_single_question_by_hand():
    # Beta(1,1), two rollouts: P(one success and one failure) = 1/3.
    p = AllocationParams(num_questions=1, budget=2)
    assert exact_value(agents.make_allocator("uniform", p), p, (1.0, 1.0)) == pytest.approx(1 / 3)


@pytest.mark.parametrize("utility", ["informative", "hit", "grpo_signal", "dr_grpo_signal"])
@pytest.mark.parametrize(("B", "N", "pilot"), [(2, 5, 0), (3, 7, 1), (2, 6, 2)])
def test_uniform_sequential_against_brute_force(utility, B, N, pilot):
    a, b = 0.6, 1.7
    p = AllocationParams(
        num_questions=B, budget=N, pilot=pilot, prior_alpha=a, prior_beta=b, utility=utility
    )
    alloc = agents.make_allocator("uniform", p)
    target = [N // B + (1 if i < N % B else 0) for i in range(B)]

    def policy(s, f):
        d = [t - (si + fi) for t, si, fi in zip(target, s, f, strict=True)]
        return int(np.argmax(d))

    assert exact_value(alloc, p, (a, b)) == pytest.approx(
        _brute_force(policy, B, N, a, b, utility, pilot), abs=1e-12
    )


def test_rounds_equals_sequential_for_a_fixed_schedule():
    seq = AllocationParams(num_questions=3, budget=9, prior_alpha=0.5, prior_beta=0.5)
    rnd = seq.replace(mode="rounds", round_size=3)
    v1 = exact_value(agents.make_allocator("uniform", seq), seq, (0.5, 0.5))
    v2 = exact_value(agents.make_allocator("uniform", rnd), rnd, (0.5, 0.5))
    # E[p^3] = 0.3125 under Beta(0.5, 0.5): 3 * (1 - 2 * 0.3125)
    assert v1 == pytest.approx(1.125) and v2 == pytest.approx(1.125)


def test_mixture_difficulty_matches_closed_form():
    p = AllocationParams(num_questions=2, budget=8)
    v = exact_value(agents.make_allocator("uniform", p), p, "rlvr")
    from adaroll_env.priors import PROFILES

    assert v == pytest.approx(2 * (1 - PROFILES["rlvr"].degenerate_probability(4)))


def test_gives_up_past_max_states():
    p = AllocationParams(num_questions=4, budget=16)
    assert exact_value(agents.make_allocator("uniform", p), p, (1.0, 1.0), max_states=10) is None
