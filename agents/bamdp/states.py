"""How many folded belief states the exact solver (``agents.bamdp.exact``) would visit.

``estimate_states`` counts the reachable folded states of an instance level by level with a
generating function, without solving (a cheap lower bound answers "more than limit" first);
``prior_groups`` and ``decision_levels`` are the folding and the levels the solver shares.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from adaroll_env.model import AllocationParams, pilot_counts, prior_arrays, round_size_at

__all__ = ["decision_levels", "estimate_states", "prior_groups"]


def prior_groups(params: AllocationParams) -> list[tuple[int, ...]]:
    """Question indices grouped by identical prior (a_i, b_i), groups by first index."""
    a, b = prior_arrays(params)
    groups: dict[tuple[float, float], list[int]] = {}
    for i in range(params.num_questions):
        groups.setdefault((float(a[i]), float(b[i])), []).append(i)
    return [tuple(g) for g in groups.values()]


def decision_levels(params: AllocationParams) -> list[int]:
    """Σ n of the states the solver visits: the decision levels, then N."""
    start = params.pilot_rollouts
    N = params.total_budget
    if params.mode == "sequential":
        return list(range(start, N + 1))
    out = []
    t = start
    while t < N:
        out.append(t)
        t += round_size_at(params, t)
    out.append(N)
    return out


# ---------------------------------------------------------------------------------------------


def group_pilots(params: AllocationParams) -> list[tuple[int, int]]:
    """(questions, pilot) of each prior group, in ``prior_groups`` order (the pilot's size is a
    function of the prior: ``pilot_counts``)."""
    pilots = pilot_counts(params)
    return [(len(g), int(pilots[g[0]])) for g in prior_groups(params)]


def _level_lower_bound(params: AllocationParams, groups: list[tuple[int, int]], t: int) -> int:
    """Folded states at level t with a single rollout profile: a cheap lower bound."""
    cap = params.cap
    big = max(range(len(groups)), key=lambda i: groups[i][0])
    m = groups[big][0]
    others = params.pilot_rollouts - m * groups[big][1]  # the other groups' pilots at least
    tg = min(m * cap, t - others)
    w, m1 = divmod(tg, m)
    # m − m1 questions at n = w (multisets of s in 0..w), m1 at n = w + 1.
    return math.comb(w + m - m1, m - m1) * math.comb(w + 1 + m1, m1)


_SATURATE = 1e300


def _group_counts(m: int, P: int, cap: int, T: int, exact: bool) -> tuple[NDArray[Any], float]:
    """counts[t]: multisets of m pairs (s, f) with P <= s+f <= cap and Σ(s+f) = t, t = 0..T.

    Generating function Π_{w=P}^{cap} (1 − y·x^w)^{−(w+1)}: weight w has w + 1 pairs, and i of
    them with repetition can be chosen in C(w + i, i) ways. ``exact``: int64 (the caller
    checked that every entry stays below 2**60); else float64 saturating at 1e300. Also
    returns the largest entry seen.
    """
    dp: NDArray[Any] = np.zeros((m + 1, T + 1), dtype=np.int64 if exact else np.float64)  # [j, t]
    dp[0, 0] = 1
    top = 1.0
    for w in range(P, cap + 1):
        imax = m if w == 0 else min(m, T // w)
        if imax == 0:
            break
        new = dp.copy()
        for i in range(1, imax + 1):
            src = dp[: m + 1 - i, : T + 1 - i * w]
            coef = math.comb(w + i, i)
            if exact:
                if coef >= 2**62:  # only zero entries can meet it (every product < 2**60)
                    assert not src.any()
                    continue
                new[i:, i * w :] += coef * src
            else:
                new[i:, i * w :] += min(float(min(coef, 10**300)), _SATURATE) * src
                np.minimum(new, _SATURATE, out=new)
        dp = new
        top = max(top, float(dp.max()))
    return dp[m], top


def _count_states(params: AllocationParams, exact: bool) -> tuple[int, float]:
    """Folded states over the visited levels (int64 or saturating float64), and the largest
    intermediate count."""
    N, cap = params.total_budget, params.cap
    joint: NDArray[Any] = np.zeros(N + 1, dtype=np.int64 if exact else np.float64)
    joint[0] = 1
    top = 1.0
    with np.errstate(over="ignore"):
        for m, P in group_pilots(params):
            T = min(m * cap, N - (params.pilot_rollouts - m * P))
            counts, tg = _group_counts(m, P, cap, T, exact)
            top = max(top, tg)
            new = np.zeros_like(joint)
            for t in np.flatnonzero(counts):
                new[t:] += counts[t] * joint[: N + 1 - t]
                if not exact:
                    np.minimum(new, _SATURATE, out=new)
            joint = new
            top = max(top, float(joint.max()))
        total = joint[decision_levels(params)].sum()
    return int(min(float(total), _SATURATE)) if not exact else int(total), top


def estimate_states(params: AllocationParams, *, limit: int | None = None) -> int:
    """The number of folded joint belief states ``solve_exact`` visits (terminal ones included).

    Exact: states at each visited level (Σ n = pilot·B, then every rollout or every round, then
    N), per prior group the multisets of (s, f) pairs with pilot <= s + f <= cap, counted by a
    generating function in O(cap · B · min(B, N) · N) array operations — without solving.
    Counts past 2**60 are float approximations (they saturate at 10**300).

    With ``limit``, a cheap lower bound is tried first and returned as soon as it exceeds
    ``limit`` (then the answer is only "more than limit"), which keeps the check instant on
    production-size batches.
    """
    if not isinstance(params, AllocationParams):
        raise TypeError(f"estimate_states needs AllocationParams, got {type(params).__name__}")
    # the count depends on the prior groups' sizes, not on the prior values: memoised by shape
    # (a trainer resets bamdp every step with fresh per-prompt priors of the same shape)
    key = (
        tuple(sorted(group_pilots(params))),
        params.num_questions,
        params.total_budget,
        params.pilot,
        params.cap,
        params.mode,
        params.round_size,
        params.round_schedule,
        limit,
    )
    found = _ESTIMATES.get(key)
    if found is None:
        found = _estimate_states(params, limit=limit)
        if len(_ESTIMATES) > 4096:
            _ESTIMATES.clear()
        _ESTIMATES[key] = found
    return found


_ESTIMATES: dict[tuple[Any, ...], int] = {}


def _estimate_states(params: AllocationParams, *, limit: int | None) -> int:
    if limit is not None:
        groups = group_pilots(params)
        lb = 0
        for t in decision_levels(params):
            lb += _level_lower_bound(params, groups, t)
            if lb > limit:
                return lb
    approx, top = _count_states(params, exact=False)
    if top < 2.0**60:
        return _count_states(params, exact=True)[0]
    return approx
