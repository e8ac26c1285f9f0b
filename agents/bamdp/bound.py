"""The certified upper bound on the BAMDP value, by Lagrangian (weak) duality.

For any price λ, a policy that spends exactly N' = N − pilot·B rollouts after the pilot earns

    E[Σ_i u_i] = E[Σ_i (u_i − λ·n_i)] + λ·N' ≤ Σ_i V_i(λ) + λ·N',

because each question, on its own outcomes, follows some (randomised) stopping rule and V_i(λ)
is the best any stopping rule earns at price λ (questions are independent). So

    V* ≤ min_λ  Σ_i V_i(λ) + λ·N'.

The right side is convex in λ (each V_i is a maximum of affine functions of λ); it is minimised
with a bounded scalar search, and every value it evaluates is itself a valid bound, so the
smallest one seen is returned. The budget is spent exactly (an equality), so λ may be negative;
the minimum over all λ is at most the minimum over λ ≥ 0.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize_scalar

from adaroll_env.model import AllocationParams, distinct_priors
from adaroll_env.utilities import beta_binomial_logpmf, get_utility
from agents.bamdp.index import MAX_HORIZON, TableSpec, start_values, utility_range


def _groups(params: AllocationParams, max_horizon: int) -> list[tuple[TableSpec, int, int]]:
    """(spec, questions, pilot) per distinct prior (the pilot's size is a function of the prior,
    ``pilot_counts``)."""
    return [
        (TableSpec.make(ai, bi, params.utility, params.cap, max_horizon=max_horizon), c, P)
        for ai, bi, c, P in distinct_priors(params)
    ]


def dual_value(params: AllocationParams, lam: float, *, max_horizon: int = MAX_HORIZON) -> float:
    """Σ_i V_i(λ) + λ·N' — an upper bound on the BAMDP value for every real λ."""
    total = 0.0
    groups = _groups(params, max_horizon)
    for P in sorted({p for _, _, p in groups}):
        same = [(spec, count) for spec, count, p in groups if p == P]
        values = start_values([spec for spec, _ in same], lam, P)
        for (spec, count), v in zip(same, values, strict=True):
            k = np.arange(P + 1)
            w = np.exp(beta_binomial_logpmf(k, P, spec.alpha, spec.beta))  # pilot outcomes
            total += count * float(np.dot(w, v[k]))
    return total + lam * (params.total_budget - params.pilot_rollouts)


def upper_bound(params: AllocationParams, *, max_horizon: int = MAX_HORIZON) -> float:
    """The certified bound min over λ of Σ_i V_i(λ) + λ·N' (see the module docstring): one
    price for the whole budget, every question free to stop after any rollout."""
    return dual_minimum(params, max_horizon=max_horizon)[1]


def certified_bound(params: AllocationParams) -> float:
    """The tightest certified bound of ``params``: in rounds mode the smaller of the one-price
    bound and the rounds-aware one (``agents.bamdp.rounds.rounds_bound``: a price per round,
    each question's problem over the round grid), else the one-price bound."""
    bound = upper_bound(params)
    if params.unit_rounds:
        return bound
    from agents.bamdp.rounds import rounds_bound

    return min(bound, rounds_bound(params)[1])


def dual_minimum(
    params: AllocationParams, *, max_horizon: int = MAX_HORIZON
) -> tuple[float, float]:
    """(λ̂, bound): the price where the dual is smallest, and the bound there."""
    lo, hi = utility_range(get_utility(params.utility), params.cap)
    delta = max(hi - lo, 1e-12)
    seen: list[tuple[float, float]] = []

    def g(lam: float) -> float:
        v = dual_value(params, lam, max_horizon=max_horizon)
        seen.append((v, lam))
        return v

    res = minimize_scalar(
        g, bounds=(-1.01 * delta, 1.01 * delta), method="bounded", options={"xatol": 1e-12 * delta}
    )
    g(0.0)  # where monotone utilities with a tight budget often have the kink
    g(float(res.x))
    best, lam = min(seen)
    return float(lam), (best if math.isfinite(best) else math.inf)
