"""The rounds-aware relaxation (``agents.bamdp.rounds``): its tables against brute force, the
bound against the exact BAMDP, the round split against enumeration, and the policy."""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import pytest
from scipy.special import betaln, comb

from adaroll_env import AllocationParams
from adaroll_env.utilities import get_utility
from agents.bamdp import rounds as R
from agents.bamdp.allocator import BAMDPAllocator
from agents.bamdp.bound import certified_bound, upper_bound
from agents.bamdp.exact import solve_exact
from agents.policy_value import exact_value


def bb(k: int, m: int, a: float, b: float) -> float:
    return float(comb(m, k) * math.exp(betaln(a + k, b + m - k) - betaln(a, b)))


def brute_values(spec: R.RoundsSpec, rounds: tuple[int, ...], prices: list[float]):
    """W_t(n, s) by direct recursion over the rounds, choices and Beta-binomial outcomes
    (the cap is within the horizon: no optimistic values)."""
    u = get_utility(spec.utility)

    @functools.cache
    def W(t: int, n: int, s: int) -> float:
        if t == len(rounds):
            return float(u(s, n - s))
        best = -math.inf
        for m in range(min(rounds[t], spec.cap - n) + 1):
            a, b = spec.alpha + s, spec.beta + n - s
            v = sum(bb(k, m, a, b) * W(t + 1, n + m, s + k) for k in range(m + 1))
            best = max(best, v - prices[t] * m)
        return best

    return W


@pytest.mark.parametrize(
    ("utility", "rounds", "prices"),
    [("informative", (3, 2), [0.05, 0.1]), ("snr(4)", (2, 4, 1), [0.02, -0.01, 0.03]),
     ("hit", (5,), [0.2])],
)  # fmt: skip
def test_backward_equals_brute_force(utility, rounds, prices) -> None:
    spec = R.RoundsSpec.make(0.7, 1.3, utility, cap=8, max_horizon=8)
    W, _ = R.backward(spec, rounds, np.array(prices))
    brute = brute_values(spec, rounds, prices)
    for t in range(len(rounds) + 1):
        for n in range(spec.horizon + 1):
            for s in range(n + 1):
                assert W[t, n, s] == pytest.approx(brute(t, n, s), abs=1e-12), (t, n, s)


def test_numpy_and_compiled_backward_agree() -> None:
    spec = R.RoundsSpec.make(0.3, 0.3, "snr(8)", cap=40, max_horizon=30)  # truncated horizon
    U, P, u_bar = R._arrays(spec)
    rounds = np.array([12, 7, 30])
    lam = np.array([0.01, -0.02, 0.03])
    ub = R._optimistic(u_bar, rounds, lam)
    W1, c1 = R._backward_py(U, P, rounds, lam, spec.cap, ub)
    W2, c2 = R._backward_np(U, P, rounds, lam, spec.cap, ub)
    tri = np.tril(np.ones_like(U, dtype=bool))
    assert np.array_equal(W1[:, tri], W2[:, tri]) and np.array_equal(c1[:, tri], c2[:, tri])
    W3, _ = R.backward(spec, tuple(rounds.tolist()), lam)  # the kernel in use
    assert np.array_equal(W3[:, tri], W1[:, tri])


SMALL = [
    dict(num_questions=2, budget=6, round_size=3, utility="informative"),
    dict(num_questions=2, budget=7, round_schedule=(4, 3), utility="snr(4)", max_group=5),
    dict(num_questions=3, budget=8, pilot=1, round_size=3, utility="informative",
         prior_alpha=0.7, prior_beta=1.3),
    dict(num_questions=2, budget=8, round_size=4, utility="snr(8)", prior_alpha=0.3,
         prior_beta=0.3),
    dict(num_questions=2, budget=6, round_size=2, utility="hit", prior_alpha=(0.5, 2.0),
         prior_beta=(1.0, 1.0)),
    dict(num_questions=3, budget=9, pilot=1, round_size=3, utility="snr(4)",  # one skips the
         prior_alpha=(1.0, 0.02, 1.0), prior_beta=(1.0, 40.0, 1.0), pilot_threshold=0.05),  # pilot
]  # fmt: skip


@pytest.mark.parametrize("kw", SMALL)
def test_the_bound_is_certified_and_tighter_than_one_price(kw) -> None:
    params = AllocationParams(mode="rounds", **kw)
    optimum = solve_exact(params).value
    _, rounds_bound = R.rounds_bound(params)
    one_price = upper_bound(params)
    assert optimum <= rounds_bound + 1e-9 <= one_price + 2e-9
    assert certified_bound(params) == pytest.approx(min(rounds_bound, one_price))


def test_the_rounds_bound_is_strictly_tighter_where_rounds_bind() -> None:
    # two rounds of 256 at B = 64 under snr(8): the measured 14.17 -> 14.00
    params = AllocationParams(num_questions=64, budget=512, prior_alpha=0.3, prior_beta=0.3,
                              mode="rounds", round_size=256, utility="snr(8)")  # fmt: skip
    _, bound = R.rounds_bound(params)
    assert bound < upper_bound(params) - 0.1
    assert 13.9 < bound < 14.05


@pytest.mark.parametrize("kw", SMALL[:4])  # one shared prior: the Bayes law is that Beta
def test_the_relaxed_policy_is_near_the_exact_optimum(kw) -> None:
    params = AllocationParams(mode="rounds", **kw)
    optimum = solve_exact(params).value
    a, b = params.prior_alpha, params.prior_beta
    relaxed = BAMDPAllocator(exact=False, round_policy="relaxed")
    index = BAMDPAllocator(exact=False, round_policy="index")
    assert isinstance(a, float) and isinstance(b, float)
    difficulty = (a, b)
    v_relaxed = exact_value(relaxed, params, difficulty, max_states=500_000)
    v_index = exact_value(index, params, difficulty, max_states=500_000)
    assert v_relaxed is not None and v_index is not None
    assert v_relaxed <= optimum + 1e-9
    # the relaxation's own gap is largest at tiny B (two questions: 6 % below the optimum on the
    # 4+3 schedule, where it ties uniform); never below the index rule
    assert v_relaxed >= 0.93 * optimum
    assert v_relaxed >= v_index - 1e-9
    if kw["utility"] == "snr(8)":  # the index rule's loss here, the relaxation's optimum
        assert v_index < optimum - 1e-3 and v_relaxed == pytest.approx(optimum, abs=1e-12)


def test_round_values_are_beta_binomial_expectations() -> None:
    spec = R.RoundsSpec.make(0.6, 1.7, "snr(4)", cap=20, max_horizon=20)
    W, _ = R.backward(spec, (5, 5), np.array([0.03, 0.02]))
    s, f = np.array([0, 2, 1]), np.array([0, 1, 4])
    top = np.array([5, 3, 5])
    values = R.round_values(W[1], spec.alpha, spec.beta, 9.0, s, f, top, 5)
    for i in range(3):
        for m in range(6):
            if m > top[i]:
                assert values[i, m] == -np.inf
                continue
            a, b = spec.alpha + s[i], spec.beta + f[i]
            n = s[i] + f[i]
            want = sum(bb(k, m, a, b) * W[1, n + m, s[i] + k] for k in range(m + 1))
            assert values[i, m] == pytest.approx(want, abs=1e-12)
    # past the horizon a value is the optimistic one
    beyond = R.round_values(
        W[1], spec.alpha, spec.beta, 9.0, np.array([10]), np.array([8]), np.array([4]), 4
    )
    assert beyond[0, 3:].tolist() == [9.0, 9.0] and beyond[0, 2] < 9.0  # n = 21, 22 > H = 20
    # per-question priors: each row reads its own (the same numbers as one prior at a time)
    a2, b2 = np.array([0.6, 2.0, 0.6]), np.array([1.7, 0.5, 1.7])
    mixed = R.round_values(W[1], a2, b2, 9.0, s, f, top, 5)
    alone = R.round_values(W[1], 2.0, 0.5, 9.0, s[1:2], f[1:2], top[1:2], 5)
    assert np.array_equal(mixed[[0, 2]], values[[0, 2]]) and np.array_equal(mixed[1], alone[0])
    assert not np.array_equal(mixed[1], values[1])


def test_split_is_the_best_split_by_enumeration() -> None:
    rng = np.random.default_rng(3)
    for _ in range(30):
        Q, M, total = 4, 5, int(rng.integers(1, 12))
        values = rng.normal(size=(Q, M + 1)).cumsum(axis=1)
        values[:, 0] = 0.0
        for i, top in enumerate(rng.integers(1, M + 1, size=Q)):  # each question's cap
            values[i, top + 1 :] = -np.inf
        best = -np.inf
        for c in itertools.product(range(M + 1), repeat=Q):
            if sum(c) == total:
                best = max(best, sum(values[i, m] for i, m in enumerate(c)))
        if best == -np.inf:
            continue
        exact = R.split_round_exact(values, total)
        assert exact.sum() == total
        assert values[np.arange(Q), exact].sum() == pytest.approx(best)
        price = R.split_round_price(values, total)
        assert price.sum() == total and np.all(values[np.arange(Q), price] > -np.inf)


def test_price_split_is_exact_on_concave_values() -> None:
    rng = np.random.default_rng(0)
    gains = np.sort(rng.random((40, 16)), axis=1)[:, ::-1]  # decreasing marginal values
    values = np.concatenate([np.zeros((40, 1)), gains.cumsum(axis=1)], axis=1)
    for total in (1, 37, 200, 640):
        a, b = R.split_round_exact(values, total), R.split_round_price(values, total)
        got = values[np.arange(40), b].sum()
        assert b.sum() == total and got == pytest.approx(values[np.arange(40), a].sum())


def test_round_sizes_follow_the_schedule() -> None:
    p = AllocationParams(num_questions=4, budget=20, pilot=1, mode="rounds",
                         round_schedule=(10, 6))  # fmt: skip
    assert R.round_sizes(p) == (10, 6)
    assert R.round_sizes(p, spent=14) == (6,)
    assert R.round_sizes(AllocationParams(num_questions=4, budget=10, mode="rounds",
                                          round_size=4)) == (4, 4, 2)  # fmt: skip


def test_the_allocator_spends_each_round_exactly_and_checks_its_option() -> None:
    import gymnasium as gym

    import adaroll_env
    from agents.checker import check_allocator

    gym.register_envs(adaroll_env)
    env = gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=16, budget=128,
                   round_size=64, utility="snr(8)", difficulty="u-shaped")  # fmt: skip
    check_allocator(BAMDPAllocator(exact=False), env)
    with pytest.raises(ValueError, match="round_policy must be 'relaxed'"):
        BAMDPAllocator(round_policy="greedy")  # type: ignore[arg-type]


def test_price_split_over_shared_rows_equals_the_split_over_every_row() -> None:
    """Questions in one state share a row of values: the split over distinct rows with each
    question's row named gives the very counts of the split over the expanded matrix."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        U, M = int(rng.integers(1, 6)), 8
        distinct = rng.normal(size=(U, M + 1)).cumsum(axis=1)
        distinct[:, 0] = 0.0
        for i, top in enumerate(rng.integers(1, M + 1, size=U)):
            distinct[i, top + 1 :] = -np.inf
        rows = rng.integers(0, U, size=int(rng.integers(U, 40)))
        rows[:U] = np.arange(U)  # every row used
        total = int(rng.integers(1, 3 * rows.size))
        shared = R.split_round_price(distinct, total, rows)
        expanded = R.split_round_price(distinct[rows], total)
        assert np.array_equal(shared, expanded)
        assert shared.sum() <= total and np.all(distinct[rows, shared] > -np.inf)


def test_a_round_decision_equals_the_split_of_every_questions_own_values() -> None:
    """decide_round computes one row of values per distinct state: its counts must equal the
    split of the values computed question by question (price split and exact split)."""
    p = AllocationParams(num_questions=48, budget=384, mode="rounds", round_size=192,
                         utility="snr(8)", prior_alpha=0.3, prior_beta=0.3)  # fmt: skip
    plan = R.plan_rounds(p)
    rng = np.random.default_rng(0)
    s = rng.integers(0, 4, size=48)
    f = rng.integers(0, 4, size=48)
    cap = np.full(48, 64) - s - f
    spec_of = np.zeros(48, dtype=np.int64)
    spec = plan.specs[0]
    top = np.minimum(cap, 192)
    W, ub = plan.tables[0][2], float(plan.ub[1])
    own = R.round_values(W, spec.alpha, spec.beta, ub, s, f, top, int(top.max()))
    old = R.EXACT_SPLIT_CELLS
    try:
        for cells, split in ((0, R.split_round_price), (old, R.split_round_exact)):
            R.EXACT_SPLIT_CELLS = cells
            got = R.decide_round(plan, spec_of, 1, s, f, cap, 192)
            assert got.sum() == 192 and np.array_equal(got, split(own, 192))
    finally:
        R.EXACT_SPLIT_CELLS = old


def test_the_last_round_is_the_exact_knapsack_for_any_priors():
    import itertools

    from scipy.stats import betabinom

    from adaroll_env.utilities import get_utility
    from agents.bamdp.rounds import decide_last_round

    u = get_utility("snr(8)")
    a = np.array([0.3, 1.0, 2.5])
    b = np.array([0.7, 1.0, 0.4])
    s = np.array([1, 0, 2])
    f = np.array([0, 2, 0])
    R = 5

    def value(counts):
        total = 0.0
        for i, m in enumerate(counts):
            k = np.arange(m + 1)
            pk = betabinom.pmf(k, m, a[i] + s[i], b[i] + f[i])
            total += float(np.sum(pk * u(s[i] + k, f[i] + m - k)))
        return total

    splits = [c for c in itertools.product(range(R + 1), repeat=3) if sum(c) == R]
    best = max(value(c) for c in splits)
    got = decide_last_round(a, b, s, f, np.full(3, 20), R, utility="snr(8)", cap=24)
    assert int(got.sum()) == R
    assert value(got) == pytest.approx(best, rel=1e-9)
    # a capacity binds: question 1 may take at most one
    capped = decide_last_round(a, b, s, f, np.array([20, 1, 20]), R, utility="snr(8)", cap=24)
    assert capped[1] <= 1 and int(capped.sum()) == R
    best_capped = max(value(c) for c in splits if c[1] <= 1)
    assert value(capped) == pytest.approx(best_capped, rel=1e-9)


def test_bamdp_splits_the_last_round_exactly_with_many_distinct_priors():
    import gymnasium as gym

    import agents
    from agents.bamdp.rounds import decide_last_round

    B = 6
    a = (0.2, 0.5, 1.0, 1.5, 2.0, 3.0)
    b = (2.0, 1.0, 1.0, 0.5, 0.3, 0.2)
    env = gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=B, budget=24, round_size=12,
                   utility="snr(8)", prior_alpha=a, prior_beta=b)  # fmt: skip
    params = env.unwrapped.params
    exact = agents.make_allocator("bamdp", env, exact=False)
    index = agents.make_allocator("bamdp", env, exact=False, last_round="index")
    obs, _ = env.reset(seed=0)
    for al in (exact, index):
        al.reset(params, seed=0)
    obs, *_ = env.step(exact.act(obs))  # the first round: the index rule (six distinct priors)
    bel = exact.beliefs(obs)
    state = (bel.prior_alpha, bel.prior_beta, bel.successes, bel.failures, bel.capacity)
    want = decide_last_round(*state, bel.round_size, utility="snr(8)", cap=params.cap)
    assert exact.allocate(obs).tolist() == want.tolist()
    assert int(index.allocate(obs).sum()) == 12
    with pytest.raises(ValueError, match="last_round must be"):
        agents.make_allocator("bamdp", env, last_round="best")


def test_round_split_even_shares_a_round_evenly_among_identical_questions():
    """Two rounds of 256 at B = 64 under snr(4) with one prior: the relaxation's values put
    identical questions at extremes; ``round_split="even"`` gives each class of identical
    questions its total evenly, keeps the round's size and leaves the last round (exact) alone."""
    import gymnasium as gym

    import agents
    from agents.bamdp.allocator import even_within_classes

    env = gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=64, budget=512, round_size=256,
                   utility="snr(4)", prior_alpha=0.474835, prior_beta=0.571057)  # fmt: skip
    values = agents.make_allocator("bamdp", env, exact=False)
    even = agents.make_allocator("bamdp", env, exact=False, round_split="even")
    obs, _ = env.reset(seed=0)
    first = values.allocate(obs)
    assert int(first.sum()) == 256 and int(first.max() - first.min()) > 1  # at extremes
    spread = even.allocate(obs)
    assert int(spread.sum()) == 256 and int(spread.max() - spread.min()) <= 1
    obs, *_ = env.step(even.act(obs))
    last = even.allocate(obs)  # the last round: the exact split, as without the option
    assert last.tolist() == values.allocate(obs).tolist() and int(last.sum()) == 256
    # per class: each class's total kept and spread; a class of one keeps its count
    spec = np.array([0, 0, 0, 1, 1, 0], dtype=np.int64)
    s = np.array([1, 1, 1, 1, 1, 2], dtype=np.int64)
    f = np.zeros(6, dtype=np.int64)
    got = even_within_classes(np.array([9, 0, 0, 5, 2, 6]), spec, s, f)
    assert got.tolist() == [3, 3, 3, 4, 3, 6]
    with pytest.raises(ValueError, match="round_split must be"):
        agents.make_allocator("bamdp", env, round_split="odd")


def test_even_within_classes_against_a_per_class_loop():
    from agents.bamdp.allocator import even_within_classes

    rng = np.random.default_rng(0)
    for _ in range(100):
        B = int(rng.integers(1, 40))
        spec, s, f = (rng.integers(0, 3, B) for _ in range(3))
        counts = rng.integers(0, 9, B)
        want = counts.copy()
        keys = list(zip(spec.tolist(), s.tolist(), f.tolist(), strict=True))
        for key in set(keys):
            members = [i for i in range(B) if keys[i] == key]
            total, k = int(counts[members].sum()), len(members)
            for j, i in enumerate(members):
                want[i] = total // k + (j < total % k)
        got = even_within_classes(counts, spec, s, f)
        assert got.tolist() == want.tolist() and int(got.sum()) == int(counts.sum())


def _grouped(priors: list[tuple[float, float]], counts: list[int]) -> AllocationParams:
    """A training step's params: per-question priors, ``counts[g]`` questions of prior g."""
    a = tuple(p[0] for p, c in zip(priors, counts, strict=True) for _ in range(c))
    b = tuple(p[1] for p, c in zip(priors, counts, strict=True) for _ in range(c))
    return AllocationParams(num_questions=len(a), budget=8 * len(a), prior_alpha=a,
                            prior_beta=b, pilot=2, mode="rounds", round_size=3 * len(a),
                            utility="snr(8)", max_group=24)  # fmt: skip


def _first_round(alloc: BAMDPAllocator, params: AllocationParams, seed: int = 0) -> np.ndarray:
    """The allocator's first decision after a pilot of 2 (outcomes drawn from the priors)."""
    import adaroll_env.model as am

    rng = np.random.default_rng(seed)
    alloc.reset(params)
    a, b = np.asarray(params.prior_alpha), np.asarray(params.prior_beta)
    s = rng.binomial(2, rng.beta(a, b))
    obs = am.observe(params, am.apply_counts(params, am.initial_state(params),
                                             np.full(a.size, 2), s))  # fmt: skip
    return np.asarray(alloc.allocate(obs))


def test_a_kept_plan_serves_steps_whose_priors_barely_moved(monkeypatch) -> None:
    """Grouped priors refitted every step: within ``plan_tolerance`` the kept plan decides (no
    new plan); a prior moved further or a share moved by more than ``SHARE_TOLERANCE`` build
    one; ``plan_tolerance=None`` builds one for every new set of priors."""
    built: list[AllocationParams] = []
    real = R.plan_rounds
    monkeypatch.setattr("agents.bamdp.allocator.plan_rounds",
                        lambda p, **kw: built.append(p) or real(p, **kw))  # fmt: skip
    base = [(0.5, 1.5), (1.5, 0.5), (0.3, 0.3)]
    alloc = BAMDPAllocator(exact=False)
    first = _first_round(alloc, _grouped(base, [6, 5, 5]))
    assert len(built) == 1 and first.sum() == 48
    moved = [(0.52, 1.47), (1.45, 0.51), (0.31, 0.3)]  # within 10 %
    _first_round(alloc, _grouped(moved, [5, 6, 5]))  # shares within 1/8
    assert len(built) == 1
    _first_round(alloc, _grouped([(0.6, 1.5), *base[1:]], [6, 5, 5]))  # α 20 % away
    assert len(built) == 2
    _first_round(alloc, _grouped([(0.6, 1.5), *base[1:]], [10, 1, 5]))  # shares 1/4 away
    assert len(built) == 2
    _first_round(alloc, _grouped([(0.6, 1.5), *base[1:]], [11, 1, 4]))  # a share 5/16 away
    assert len(built) == 3
    _first_round(alloc, _grouped([(0.6, 1.5), *base[1:]], [11, 1, 4]).replace(utility="snr(4)"))
    assert len(built) == 4  # another setting
    exact = BAMDPAllocator(exact=False, plan_tolerance=None)
    built.clear()
    _first_round(exact, _grouped(base, [6, 5, 5]))
    _first_round(exact, _grouped(moved, [5, 6, 5]))
    assert len(built) == 2
    with pytest.raises(ValueError, match="plan_tolerance"):
        BAMDPAllocator(plan_tolerance=1.5)


def test_a_kept_plan_comes_back_from_its_state() -> None:
    """A resumed run decides as an uninterrupted one: the kept plan's problem is the state, and
    a new allocator loaded with it makes the same decision where a fresh one would not."""
    base, moved = [(0.5, 1.5), (1.5, 0.5)], [(0.54, 1.4), (1.4, 0.54)]
    going = BAMDPAllocator(exact=False)
    _first_round(going, _grouped(base, [8, 8]))
    state = going.state_dict()
    import json

    state = json.loads(json.dumps(state))  # as TRL's checkpoint keeps it
    resumed = BAMDPAllocator(exact=False)
    resumed.load_state_dict(state)
    fresh = BAMDPAllocator(exact=False)
    a = _first_round(going, _grouped(moved, [8, 8]), seed=3)
    b = _first_round(resumed, _grouped(moved, [8, 8]), seed=3)
    assert np.array_equal(a, b)
    assert resumed.state_dict() == going.state_dict() == state
    _first_round(fresh, _grouped(moved, [8, 8]), seed=3)
    assert fresh.state_dict() != state  # a fresh one keeps this step's problem instead
    fresh.load_state_dict({"plan_anchor": None})
    assert fresh.state_dict() == {"plan_anchor": None}
