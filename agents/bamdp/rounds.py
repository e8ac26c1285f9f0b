"""The rounds-aware relaxation: one price per round, each question's problem over the round grid.

In rounds mode a decision hands out a whole round (``R_t`` rollouts, the schedule's t-th round
after the pilot) and no outcome of the round is seen before it ends. Relax each round's budget
with its own price λ_t: the questions decouple, and each one alone is a small dynamic programme
over the round boundaries,

    W_T(n, s) = u(s, n − s),
    W_t(n, s) = max_{0 ≤ m ≤ min(R_t, cap − n)}  E_m[W_{t+1}](n, s) − λ_t·m,

where E_m[W](n, s) = Σ_k BetaBin(k; m, α + s, β + n − s)·W(n + m, s + k) is the value of taking m
rollouts now and seeing their outcomes at the end of the round (computed by the recursion
E_m(n, s) = p·E_{m−1}(n + 1, s + 1) + (1 − p)·E_{m−1}(n + 1, s), p the posterior mean).

**Bound.** A policy spends exactly R_t in round t, so for every price vector λ

    V* ≤ Σ_i E_pilot[W^i_0(λ)] + Σ_t λ_t·R_t,

and the bound is the minimum over λ (``rounds_bound``). It keeps the round structure, so it is
tighter than the one-price bound of ``agents.bamdp.bound`` (which lets every question stop after
any single rollout); every value evaluated is itself certified and the smallest is returned.

**Policy.** ``RoundsPlan`` holds the prices of the minimum and the continuation tables W_{t+1}
at those prices; a round's decision then maximises Σ_i E_{m_i}[W_{t+1}](n_i, s_i) subject to
Σ_i m_i = R_t exactly: a multiple-choice knapsack, solved exactly by dynamic programming over the
questions (``split_round_exact``) where B·R·M is small enough, else by the concave hulls of each
question's values with an integer repair on the marginal values. The last round's continuation is
the final utility itself, so the last decision is exactly optimal given the state.

**Horizon.** Tables cover n ≤ H = min(cap, ``max_horizon``). A state past H gets the optimistic
value ū + Σ_{τ>t} max(0, −λ_τ)·R_τ (ū: the largest utility to the cap), so no value is
underestimated and the bound stays certified.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from adaroll_env.model import (
    AllocationParams,
    distinct_priors,
    posterior_mean,
    round_size_at,
)
from adaroll_env.utilities import beta_binomial_logpmf, get_utility
from agents.bamdp._jit import AVAILABLE as JIT_AVAILABLE
from agents.bamdp._jit import numba as _numba
from agents.bamdp.index import level_arrays, utility_range

__all__ = [
    "RoundsPlan",
    "RoundsSpec",
    "decide_last_round",
    "dual_rounds",
    "plan_rounds",
    "round_sizes",
    "rounds_bound",
    "split_round_exact",
]

#: Largest n covered by a rounds table when the cap is larger.
MAX_ROUNDS_HORIZON = 128
#: Dual evaluations of the derivative-free polish, per round of the schedule (40 per round
#: before: the same bound in four of five settings checked, 0.011 % looser in the fifth, eight
#: rounds of informative at B = 64, and a plan three times faster).
POLISH_EVALS = 10
#: The exact knapsack is used while B·R·M stays under this many cells.
EXACT_SPLIT_CELLS = 20_000_000


def round_sizes(params: AllocationParams, spent: int | None = None) -> tuple[int, ...]:
    """The sizes of the rounds still to come once ``spent`` rollouts are spent (default: right
    after the pilot), in order, as the env hands them out."""
    done = params.pilot_rollouts if spent is None else int(spent)
    out = []
    while done < params.total_budget:
        r = round_size_at(params, done)
        out.append(r)
        done += r
    return tuple(out)


@dataclass(frozen=True)
class RoundsSpec:
    """What one question's round tables depend on: its prior, the utility, the cap, the horizon."""

    alpha: float
    beta: float
    utility: str
    cap: int
    horizon: int

    @classmethod
    def make(
        cls, alpha: float, beta: float, utility: str, cap: int, max_horizon: int
    ) -> RoundsSpec:
        """A spec with the horizon min(cap, max_horizon)."""
        return cls(float(alpha), float(beta), utility, int(cap), int(min(cap, max_horizon)))


@functools.lru_cache(maxsize=256)
def _arrays(spec: RoundsSpec) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
    """U[n, s] = u(s, n − s), P[n, s] = posterior mean at (s, n − s) for n ≤ H, and ū."""
    U, P = level_arrays(spec.alpha, spec.beta, spec.utility, spec.horizon)
    _, hi = utility_range(get_utility(spec.utility), spec.cap)
    return U, P, float(hi)


def _optimistic(u_bar: float, rounds: NDArray[np.int64], prices: NDArray[np.float64]) -> Any:
    """ub[t]: the value no state past the horizon can beat after round t (see the docstring)."""
    T = rounds.size
    rebate = np.maximum(0.0, -prices) * rounds
    return np.array([u_bar + float(rebate[t + 1 :].sum()) for t in range(T)], dtype=np.float64)


# --- the kernels (compiled by numba where installed; the same arithmetic in numpy otherwise) ---
def _backward_py(
    U: NDArray[np.float64],
    P: NDArray[np.float64],
    rounds: NDArray[np.int64],
    prices: NDArray[np.float64],
    cap: int,
    ub: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    H = U.shape[0] - 1
    T = rounds.shape[0]
    W = np.empty((T + 1, H + 1, H + 1))
    choice = np.zeros((T, H + 1, H + 1), dtype=np.int64)
    W[T] = U
    for t in range(T - 1, -1, -1):
        E = W[t + 1].copy()
        best = W[t + 1].copy()
        Mt = min(rounds[t], cap)
        mloop = min(Mt, H + 1)
        for m in range(1, mloop + 1):
            for n in range(H):
                for s in range(n + 1):
                    p = P[n, s]
                    E[n, s] = p * E[n + 1, s + 1] + (1.0 - p) * E[n + 1, s]
            for s in range(H + 1):
                E[H, s] = ub[t]
            lm = prices[t] * m
            top = min(H, cap - m)
            for n in range(top + 1):
                for s in range(n + 1):
                    v = E[n, s] - lm
                    if v > best[n, s]:
                        best[n, s] = v
                        choice[t, n, s] = m
        if Mt > mloop and prices[t] < 0.0:  # past the horizon: more rollouts earn the rebate
            for n in range(H + 1):
                mm = min(Mt, cap - n)
                if mm > mloop:
                    v = ub[t] - prices[t] * mm
                    for s in range(n + 1):
                        if v > best[n, s]:
                            best[n, s] = v
                            choice[t, n, s] = mm
        W[t] = best
    return W, choice


def _backward_np(
    U: NDArray[np.float64],
    P: NDArray[np.float64],
    rounds: NDArray[np.int64],
    prices: NDArray[np.float64],
    cap: int,
    ub: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """``_backward_py`` vectorised over the states (same arithmetic, same order per state)."""
    H = U.shape[0] - 1
    T = rounds.shape[0]
    W = np.empty((T + 1, H + 1, H + 1))
    choice = np.zeros((T, H + 1, H + 1), dtype=np.int64)
    W[T] = U
    tri = np.tril(np.ones((H + 1, H + 1), dtype=bool))
    n_of = np.arange(H + 1)[:, None]
    Pl = P[:H]
    for t in range(T - 1, -1, -1):
        E = W[t + 1].copy()
        best = W[t + 1].copy()
        ch = np.zeros((H + 1, H + 1), dtype=np.int64)
        Mt = min(int(rounds[t]), cap)
        mloop = min(Mt, H + 1)
        for m in range(1, mloop + 1):
            nxt = E[1:]
            E[:H, :H] = Pl[:, :H] * nxt[:, 1:] + (1.0 - Pl[:, :H]) * nxt[:, :H]
            E[H] = ub[t]
            v = E - prices[t] * m
            ok = tri & (n_of <= cap - m) & (v > best)
            best = np.where(ok, v, best)
            ch = np.where(ok, m, ch)
        if Mt > mloop and prices[t] < 0.0:
            mm = np.minimum(Mt, cap - np.arange(H + 1))[:, None]
            v = ub[t] - prices[t] * mm
            ok = tri & (mm > mloop) & (v > best)
            best = np.where(ok, v, best)
            ch = np.where(ok, np.broadcast_to(mm, ch.shape), ch)
        W[t] = np.where(tri, best, 0.0)
        choice[t] = ch
    return W, choice


def _spend_py(
    P: NDArray[np.float64],
    choice: NDArray[np.int64],
    start: NDArray[np.float64],
    level: int,
) -> NDArray[np.float64]:
    """Expected rollouts per round of the relaxed policy ``choice`` from the distribution
    ``start`` over the states of level ``level`` (mass past the horizon spends nothing more)."""
    T, H1, _ = choice.shape
    H = H1 - 1
    D = np.zeros((H1, H1))
    D[level, : level + 1] = start
    spend = np.zeros(T)
    row = np.zeros(H1 + 1)
    for t in range(T):
        Dn = np.zeros((H1, H1))
        for n in range(H1):
            for s in range(n + 1):
                w = D[n, s]
                if w == 0.0:
                    continue
                m = choice[t, n, s]
                spend[t] += w * m
                if m == 0:
                    Dn[n, s] += w
                    continue
                if n + m > H:
                    continue
                # the outcomes of m rollouts, by the same Bernoulli steps as the backward pass
                for k in range(m + 1):
                    row[k] = 0.0
                row[0] = w
                for j in range(m):
                    for k in range(j, -1, -1):
                        p = P[n + j, s + k]
                        row[k + 1] += row[k] * p
                        row[k] *= 1.0 - p
                for k in range(m + 1):
                    Dn[n + m, s + k] += row[k]
        D = Dn
    return spend


def _split_exact_py(values: NDArray[np.float64], R: int) -> NDArray[np.int64]:
    """The counts (Σ = R) maximising Σ_i values[i, m_i]; values[i, m] = −inf where infeasible;
    ties to fewer rollouts for the earlier questions."""
    B, M1 = values.shape
    dp = np.full(R + 1, -np.inf)
    dp[0] = 0.0
    pick = np.zeros((B, R + 1), dtype=np.int64)
    for i in range(B):
        new = np.full(R + 1, -np.inf)
        for r in range(R + 1):
            base = dp[r]
            if base == -np.inf:
                continue
            top = min(M1 - 1, R - r)
            for m in range(top + 1):
                v = values[i, m]
                if v == -np.inf:
                    continue
                x = base + v
                if x > new[r + m]:
                    new[r + m] = x
                    pick[i, r + m] = m
        dp = new
    counts = np.zeros(B, dtype=np.int64)
    r = R
    for i in range(B - 1, -1, -1):
        m = pick[i, r]
        counts[i] = m
        r -= m
    return counts


def backward(
    spec: RoundsSpec, rounds: tuple[int, ...], prices: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """(W, choice): W[t][n, s] the value at the start of round t (W[T] = u), choice[t][n, s] the
    rollouts the relaxed problem takes there, at the given per-round prices."""
    U, P, u_bar = _arrays(spec)
    r = np.asarray(rounds, dtype=np.int64)
    lam = np.asarray(prices, dtype=np.float64)
    ub = _optimistic(u_bar, r, lam)
    W, choice = _backward_kernel(U, P, r, lam, spec.cap, ub)
    return W, choice


# --- the dual and its minimum -----------------------------------------------------------------
Group = tuple[RoundsSpec, int, NDArray[np.float64]]  # (spec, level n, weights over s = 0..n)


def dual_rounds(
    groups: list[Group], rounds: tuple[int, ...], prices: NDArray[np.float64]
) -> tuple[float, NDArray[np.float64]]:
    """(D(λ), ∂D/∂λ): D = Σ_groups Σ_s weight·W_0(level, s) + Σ_t λ_t·R_t, a certified upper
    bound for every λ; the gradient is R_t less the relaxed policy's expected spend in round t."""
    lam = np.asarray(prices, dtype=np.float64)
    total = float(np.dot(lam, rounds))
    grad = np.asarray(rounds, dtype=np.float64).copy()
    for spec, level, w in groups:
        W, choice = backward(spec, rounds, lam)
        total += float(np.dot(w, W[0][level, : level + 1]))
        _, P, _ = _arrays(spec)
        grad -= _spend_kernel(P, choice, np.asarray(w, dtype=np.float64), int(level))
    return total, grad


def _pilot_groups(params: AllocationParams, max_horizon: int) -> list[Group]:
    """One group per distinct prior: its questions' pilot outcomes, weighted by their count (the
    pilot's size is a function of the prior, ``pilot_counts``: one per group)."""
    out = []
    for ai, bi, c, P in distinct_priors(params):
        spec = RoundsSpec.make(ai, bi, params.utility, params.cap, max_horizon)
        k = np.arange(P + 1)
        w = c * np.exp(beta_binomial_logpmf(k, P, ai, bi))
        out.append((spec, P, np.asarray(w, dtype=np.float64)))
    return out


def minimise_dual(
    groups: list[Group],
    rounds: tuple[int, ...],
    start: float,
    width: float,
    *,
    rtol: float = 1e-5,
    max_evals: int = 200,
) -> tuple[NDArray[np.float64], float]:
    """(λ̂, D(λ̂)): the per-round prices of the smallest dual value found, by Kelley's cutting
    planes in the box ``start ± width`` in every round (the dual is convex and piecewise smooth,
    with kinks where whole groups of identical questions change their choice, so a smooth
    minimiser stalls). It stops when the best value is within ``rtol`` of the planes' lower
    bound, then polishes the best point by Nelder-Mead. Every value evaluated is certified; the
    smallest is returned."""
    from scipy.optimize import linprog

    T = len(rounds)
    lo, hi = start - width, start + width
    xs: list[NDArray[np.float64]] = []
    vs: list[float] = []
    gs: list[NDArray[np.float64]] = []

    def f(x: NDArray[np.float64]) -> None:
        v, g = dual_rounds(groups, rounds, x)
        xs.append(x.copy())
        vs.append(v)
        gs.append(g)

    f(np.full(T, float(start)))
    for _ in range(max_evals - 1):
        # minimise z subject to z >= v_k + g_k·(x − x_k), x in the box
        G = np.array(gs)
        A = np.hstack([G, -np.ones((len(gs), 1))])
        b_ub = np.array([float(g @ x) - v for g, x, v in zip(gs, xs, vs, strict=True)])
        c = np.zeros(T + 1)
        c[-1] = 1.0
        bounds = [(lo, hi)] * T + [(None, None)]
        res = linprog(c, A_ub=A, b_ub=b_ub, bounds=bounds, method="highs")
        if res.status != 0:
            break
        best = min(vs)
        if best - float(res.fun) <= rtol * max(abs(best), 1e-12):
            break
        f(np.asarray(res.x[:T], dtype=np.float64))
    # The subgradient ignores what lies past the horizon, so a cut can be slightly off there:
    # a derivative-free polish from the best point (every value it evaluates is certified too).
    from scipy.optimize import minimize

    k = int(np.argmin(vs))
    x0 = xs[k]
    step = np.maximum(0.1 * np.abs(x0), 1e-3 * width)
    simplex = np.vstack([x0, x0 + np.diag(step)])

    def g(x: NDArray[np.float64]) -> float:
        f(np.clip(np.asarray(x, dtype=np.float64), lo, hi))
        return vs[-1]

    minimize(
        g,
        x0,
        method="Nelder-Mead",
        options={
            "initial_simplex": simplex,
            "maxfev": POLISH_EVALS * T,
            "xatol": 1e-7,
            "fatol": 1e-9,
        },
    )
    k = int(np.argmin(vs))
    return xs[k], float(vs[k])


def rounds_bound(
    params: AllocationParams, *, max_horizon: int = MAX_ROUNDS_HORIZON
) -> tuple[NDArray[np.float64], float]:
    """(λ̂, bound): the rounds-aware certified bound of ``params`` (rounds mode: its schedule
    after the pilot; sequential mode: rounds of one) and the prices where it is attained."""
    from agents.bamdp.bound import dual_minimum

    rounds = round_sizes(params)
    lam0, _ = dual_minimum(params)
    lo, hi = utility_range(get_utility(params.utility), params.cap)
    groups = _pilot_groups(params, max_horizon)
    return minimise_dual(groups, rounds, lam0, 1.01 * max(hi - lo, 1e-12))


# --- the policy -------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class RoundsPlan:
    """The prices of one episode's schedule and the continuation tables at those prices, per
    distinct prior: what a round's decision reads."""

    rounds: tuple[int, ...]
    prices: NDArray[np.float64]
    bound: float
    specs: tuple[RoundsSpec, ...]
    tables: tuple[NDArray[np.float64], ...]  #: per spec: W[t][n, s], t = 0..T
    ub: NDArray[np.float64]  #: per round: the optimistic value past the horizon


def plan_rounds(params: AllocationParams, *, max_horizon: int = MAX_ROUNDS_HORIZON) -> RoundsPlan:
    """The plan of ``params``: prices at the rounds-aware dual minimum, then W at those prices
    for each distinct prior of the params."""
    prices, value = rounds_bound(params, max_horizon=max_horizon)
    rounds = round_sizes(params)
    specs = tuple(spec for spec, _, _ in _pilot_groups(params, max_horizon))
    tables = tuple(backward(spec, rounds, prices)[0] for spec in specs)
    u_bar = max(_arrays(s)[2] for s in specs)
    ub = _optimistic(u_bar, np.asarray(rounds, dtype=np.int64), prices)
    return RoundsPlan(rounds, prices, value, specs, tables, ub)


def _values_py(
    W: NDArray[np.float64],
    a: NDArray[np.float64],
    b: NDArray[np.float64],
    ub: float,
    s: NDArray[np.int64],
    f: NDArray[np.int64],
    top: NDArray[np.int64],
    M: int,
) -> NDArray[np.float64]:
    H = W.shape[0] - 1
    Q = s.shape[0]
    out = np.full((Q, M + 1), -np.inf)
    D = np.zeros(M + 2)
    for i in range(Q):
        n0, s0 = s[i] + f[i], s[i]
        ai, bi = a[i], b[i]
        for k in range(M + 2):
            D[k] = 0.0
        D[0] = 1.0
        for j in range(top[i] + 1):
            n = n0 + j
            if n > H:  # past the horizon: the optimistic value
                out[i, j] = ub
                continue
            v = 0.0
            for k in range(j + 1):
                v += D[k] * W[n, s0 + k]
            out[i, j] = v
            if n < H:  # one more Bernoulli step, at the posterior mean of (s0 + k, n − s0 − k)
                for k in range(j, -1, -1):
                    sk = float(s0 + k)
                    moved = D[k] * _posterior_mean(ai, bi, sk, float(n) - sk)
                    D[k + 1] += moved
                    D[k] -= moved
    return out


def round_values(
    W: NDArray[np.float64],
    alpha: NDArray[np.float64] | float,
    beta: NDArray[np.float64] | float,
    ub: float,
    s: NDArray[np.int64],
    f: NDArray[np.int64],
    top: NDArray[np.int64],
    M: int,
) -> NDArray[np.float64]:
    """values[i, m] = E_m[W](n_i, s_i) for m = 0..M (−inf past ``top[i]``): the expected
    continuation of giving question i m rollouts this round, by forward Bernoulli steps (the
    outcome distribution of m rollouts is built one rollout at a time, as in the backward pass)
    at the posterior means of question i's prior Beta(``alpha[i]``, ``beta[i]``) (scalars
    broadcast), computed where they are read: no table of them per prior."""
    Q = np.shape(s)[0]
    return np.asarray(
        _values_kernel(
            W, np.broadcast_to(np.asarray(alpha, np.float64), (Q,)).copy(),
            np.broadcast_to(np.asarray(beta, np.float64), (Q,)).copy(), float(ub),
            np.asarray(s, np.int64), np.asarray(f, np.int64), np.asarray(top, np.int64), int(M),
        ),
        dtype=np.float64,
    )  # fmt: skip


def _choose_py(
    values: NDArray[np.float64], weight: NDArray[np.int64], mu: float, out: NDArray[np.int64]
) -> int:
    """Each row's argmax of values[i, m] − μ·m (the largest m on ties) into ``out``; Σ of the
    choices, row i counted ``weight[i]`` times (rows are distinct question states)."""
    Q, M1 = values.shape
    total = 0
    for i in range(Q):
        best, arg = -np.inf, 0
        for m in range(M1):
            v = values[i, m]
            if v == -np.inf:
                continue
            x = v - mu * m
            if x >= best:
                best, arg = x, m
        out[i] = arg
        total += arg * weight[i]
    return total


def _split_price_py(
    values: NDArray[np.float64], weight: NDArray[np.int64], rows: NDArray[np.int64], R: int
) -> NDArray[np.int64]:
    """Σ = R by a price on rollouts: bisection on μ for the per-question argmax of
    values[i, m] − μ·m (largest m on ties), then, from the counts at the price just above the
    one where Σ reaches R, the questions whose choice jumps at that price move to their larger
    choice by the best value per rollout, and any rollouts left go one at a time to the best
    marginal value.

    ``values`` holds one row per distinct question state, ``weight`` how many questions share
    it and ``rows[q]`` question q's row: questions in one state choose alike under a price, so
    the bisection runs over the distinct rows only (the result is the same as over all rows)."""
    U, M1 = values.shape
    Q = rows.shape[0]
    lo, hi = -1.0, 1.0
    for i in range(U):
        for m in range(1, M1):
            if values[i, m] > -np.inf:
                d = (values[i, m] - values[i, 0]) / m
                lo = min(lo, d - 1.0)
                hi = max(hi, d + 1.0)
    at_hi = np.zeros(U, dtype=np.int64)
    at_lo = np.zeros(U, dtype=np.int64)

    for _ in range(60):  # Σ is non-increasing in μ: keep Σ(hi) <= R <= Σ(lo)
        mid = 0.5 * (lo + hi)
        if _choose(values, weight, mid, at_hi) > R:
            lo = mid
        else:
            hi = mid
    total = _choose(values, weight, hi, at_hi)
    _choose(values, weight, lo, at_lo)
    counts = np.zeros(Q, dtype=np.int64)
    high = np.zeros(Q, dtype=np.int64)
    for q in range(Q):
        counts[q] = at_hi[rows[q]]
        high[q] = at_lo[rows[q]]
    left = R - total
    # questions whose choice jumps between hi and lo, by value gained per rollout
    while left > 0:
        best_q, best_r = -1, -np.inf
        for q in range(Q):
            step = high[q] - counts[q]
            if step <= 0 or step > left:
                continue
            i = rows[q]
            r = (values[i, high[q]] - values[i, counts[q]]) / step
            if r > best_r:
                best_q, best_r = q, r
        if best_q < 0:
            break
        left -= high[best_q] - counts[best_q]
        counts[best_q] = high[best_q]
    while left > 0:  # the rest one at a time, by marginal value
        best_q, best_g = -1, -np.inf
        for q in range(Q):
            m = counts[q]
            i = rows[q]
            if m + 1 < M1 and values[i, m + 1] > -np.inf:
                g = values[i, m + 1] - values[i, m]
                if g > best_g:
                    best_q, best_g = q, g
        if best_q < 0:
            break  # no room left: the caller sees Σ < R
        counts[best_q] += 1
        left -= 1
    return counts


def split_round_exact(values: NDArray[np.float64], R: int) -> NDArray[np.int64]:
    """The counts (Σ = R) maximising Σ_i values[i, m_i] (a multiple-choice knapsack, exact)."""
    return np.asarray(_split_kernel(np.ascontiguousarray(values), int(R)), dtype=np.int64)


def split_round_price(
    values: NDArray[np.float64], R: int, rows: NDArray[np.int64] | None = None
) -> NDArray[np.int64]:
    """Σ = R by a price on rollouts with an integer repair (``_split_price_py``): for rounds too
    large for the exact split. ``rows[q]`` names question q's row of ``values`` where questions
    share rows (default: a row per question)."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    if rows is None:
        rows = np.arange(values.shape[0], dtype=np.int64)
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    weight = np.bincount(rows, minlength=values.shape[0]).astype(np.int64)
    return np.asarray(_split_price_kernel(values, weight, rows, int(R)), dtype=np.int64)


def decide_round(
    plan: RoundsPlan,
    spec_of: NDArray[np.int64],
    t: int,
    s: NDArray[np.int64],
    f: NDArray[np.int64],
    capacity: NDArray[np.int64],
    R: int,
) -> NDArray[np.int64]:
    """Round t's counts: each question's values E_m[W_{t+1}] under the plan
    (``round_value_curves``), then the split (exact where B·R·M is small enough, else by a
    price with an integer repair)."""
    values, rows = round_value_curves(plan, spec_of, t, s, f, capacity, R)
    return split_curves(values, R, rows)


def round_value_curves(
    plan: RoundsPlan,
    spec_of: NDArray[np.int64],
    t: int,
    s: NDArray[np.int64],
    f: NDArray[np.int64],
    capacity: NDArray[np.int64],
    R: int,
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """``(values [states, M + 1], rows [B])``: for each distinct question state the expected
    continuation E_m[W_{t+1}] of giving it m = 0..M of round t's rollouts under the plan, and each
    question's row; ``values[rows]`` is question i's curve, −inf past what it may take (at most
    the round, its capacity and what keeps it within the tables' horizon, past which the values
    are only optimistic, unless the round cannot be spent so). Round t's counts maximise the sum
    of the questions' values at their counts under Σ = R (``decide_round``)."""
    H = plan.tables[0].shape[1] - 1
    top = _room(capacity, R, H, s, f)
    M = int(top.max())
    first, rows = _state_rows(spec_of, s, f, top)  # one row per (spec, s, f, room)
    values = np.full((first.size, M + 1), -np.inf)
    u_spec = spec_of[first]
    for g, spec in enumerate(plan.specs):
        sel = np.flatnonzero(u_spec == g)
        if sel.size == 0:
            continue
        W = plan.tables[g][t + 1]
        q = first[sel]
        ub = float(plan.ub[t])
        values[sel] = round_values(W, spec.alpha, spec.beta, ub, s[q], f[q], top[q], M)
    return values, rows


def _room(
    capacity: NDArray[np.int64], R: int, H: int, s: NDArray[np.int64], f: NDArray[np.int64]
) -> NDArray[np.int64]:
    """What each question may take this round: at most the round and its capacity, and what
    keeps it within the tables' horizon ``H`` (past it values are only optimistic) unless the
    round cannot be spent so."""
    top = np.minimum(capacity, R)
    inside = np.minimum(top, np.maximum(H - (s + f), 0))
    return inside if int(inside.sum()) >= R else top


def _state_rows(
    group: NDArray[np.int64], s: NDArray[np.int64], f: NDArray[np.int64], top: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Questions in the same state (group, s, f, room) have the same values: the first question
    of each state and each question's state row."""
    key = np.stack([group, s, f, top]).astype(np.int64)
    width = int(key.max(initial=0)) + 1
    code = ((key[0] * width + key[1]) * width + key[2]) * width + key[3]
    first, rows = np.unique(code, return_index=True, return_inverse=True)[1:]
    return first, rows.reshape(-1).astype(np.int64)


def split_curves(
    values: NDArray[np.float64], R: int, rows: NDArray[np.int64] | None = None
) -> NDArray[np.int64]:
    """Σ = R over the questions' rows of ``values`` (value curves, −inf where a count is not
    allowed; default: a row per question): exact where B·R·M is small enough, else by a price
    with an integer repair (exact again if the repair misses)."""
    if rows is None:
        rows = np.arange(values.shape[0], dtype=np.int64)
    if rows.size * (R + 1) * values.shape[1] > EXACT_SPLIT_CELLS:
        counts = split_round_price(values, R, rows)
        if int(counts.sum()) == R:
            return counts
    return split_round_exact(values[rows], R)


@functools.lru_cache(maxsize=16)
def _utility_table(utility: str, cap: int, horizon: int) -> tuple[NDArray[np.float64], float]:
    """U[n, s] = u(s, n − s) for n ≤ ``horizon`` (what every prior's last round reads) and ū,
    the largest utility up to the cap."""
    fn = get_utility(utility)
    U = np.zeros((horizon + 1, horizon + 1))
    for n in range(horizon + 1):
        k = np.arange(n + 1)
        U[n, : n + 1] = np.asarray(fn(k, n - k), dtype=np.float64)
    U.flags.writeable = False
    _, hi = utility_range(fn, cap)
    return U, float(hi)


def decide_last_round(
    alpha: NDArray[np.float64],
    beta: NDArray[np.float64],
    s: NDArray[np.int64],
    f: NDArray[np.int64],
    capacity: NDArray[np.int64],
    R: int,
    *,
    utility: str,
    cap: int,
    max_horizon: int = MAX_ROUNDS_HORIZON,
) -> NDArray[np.int64]:
    """The last round's counts (Σ = ``R``, the whole budget left), exactly optimal given the
    state for **any** priors: with no round after it the continuation is the final utility, so
    question i's value of m rollouts is E_m[u](n_i, s_i) under its own posterior (``alpha``,
    ``beta``: its prior; ``s``, ``f``: its counts so far), and the split is the exact
    multiple-choice knapsack (``split_round_exact``; by a price with an integer repair when
    B·R·M is too large). No plan or price is needed, so it applies however many distinct priors
    the questions have (the relaxation's plan is built for at most a few). States past the
    horizon min(cap, ``max_horizon``) read the optimistic ū, as in ``decide_round``."""
    H = int(min(cap, max_horizon))
    U, u_bar = _utility_table(utility, int(cap), H)
    s = np.asarray(s, dtype=np.int64)
    f = np.asarray(f, dtype=np.int64)
    top = _room(np.asarray(capacity, dtype=np.int64), R, H, s, f)
    M = int(top.max(initial=0))
    a = np.asarray(alpha, dtype=np.float64)
    b = np.asarray(beta, dtype=np.float64)
    _, prior_of = np.unique(np.stack([a, b], axis=1), axis=0, return_inverse=True)
    prior_of = prior_of.reshape(-1)
    first, rows = _state_rows(prior_of, s, f, top)  # one row per (prior, s, f, room)
    q = first  # one row per state: its question's own prior
    values = round_values(U, a[q], b[q], u_bar, s[q], f[q], top[q], M)
    return split_curves(values, R, rows)


# --- compiled where numba is installed --------------------------------------------------------
def _compiled(fn: Any, fallback: Any) -> Any:
    return _numba.njit(cache=True)(fn) if JIT_AVAILABLE else fallback


#: the project's posterior mean, callable from the compiled kernels (``_values_py`` reads it)
_posterior_mean: Any = _compiled(posterior_mean, posterior_mean)
_backward_kernel: Any = _compiled(_backward_py, _backward_np)
_spend_kernel: Any = _compiled(_spend_py, _spend_py)
_split_kernel: Any = _compiled(_split_exact_py, _split_exact_py)
_values_kernel: Any = _compiled(_values_py, _values_py)
_choose: Any = _compiled(_choose_py, _choose_py)
_split_price_kernel: Any = _compiled(_split_price_py, _split_price_py)
