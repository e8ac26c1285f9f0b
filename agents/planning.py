"""Shared planning pieces for allocators that score questions by the value of more rollouts.

Allocators that plan write a value table ``values[i, k]`` — the (expected) utility of question i
after ``k`` more rollouts, k = 0..K — with ``binomial_values`` (a point estimate of p: a
Thompson sample, a quantile, the true p) or ``posterior_values`` (the exact Bayesian expectation,
through ``adaroll_env.utilities.expected_utility``), then hand out a decision's rollouts with
``bundle_fill``. Allocators that plan final group sizes hand out a decision with
``deficit_split``.

``bundle_fill`` ranks questions by their best *bundle ratio*, max over k of
(V(m + k) − V(m)) / k, not by the one-step gain V(m + 1) − V(m): utilities are not concave
(``informative`` gains nothing from a single rollout at n = 0 and a lot from the second), so the
one-step gain would never open a fresh question. With a concave V both rules agree.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from adaroll_env.model import split_round
from adaroll_env.utilities import UtilityFn, expected_utility, get_utility, log_binomial
from agents.base import Beliefs


def horizon(b: Beliefs, max_horizon: int) -> int:
    """How many more rollouts a value table needs to look ahead: at most the budget left, the
    largest capacity and ``max_horizon``."""
    cap = int(b.capacity.max()) if b.capacity.size else 0
    return max(0, min(max_horizon, b.budget_left, cap))


def binomial_values(
    utility: str | UtilityFn, p: ArrayLike, s: ArrayLike, f: ArrayLike, K: int
) -> NDArray[np.float64]:
    """``values[i, k] = E[u(s_i + X, f_i + k − X)]``, X ~ Binomial(k, p_i), k = 0..K."""
    fn = get_utility(utility) if isinstance(utility, str) else utility
    p = np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0)[:, None, None]  # [B, 1, 1]
    s = np.asarray(s, dtype=np.int64)[:, None, None]  # [B, 1, 1]
    f = np.asarray(f, dtype=np.int64)[:, None, None]  # [B, 1, 1]
    k = np.arange(K + 1)[None, :, None]  # [1, K+1, 1]
    x = np.arange(K + 1)[None, None, :]  # [1, 1, K+1]
    valid = x <= k  # [1, K+1, K+1]
    log_choose = log_binomial(k, np.minimum(x, k))  # [1, K+1, K+1]; masked where x > k
    with np.errstate(divide="ignore", invalid="ignore"):
        logp = np.where(x > 0, x * np.log(p), 0.0) + np.where(
            k - x > 0, (k - x) * np.log1p(-p), 0.0
        )
    pmf = np.where(valid, np.exp(log_choose + logp), 0.0)  # [B, K+1, K+1]
    u = np.asarray(fn(s + x, f + np.maximum(k - x, 0)), dtype=np.float64)  # [B, K+1, K+1]
    return np.asarray(np.sum(np.where(valid, pmf * u, 0.0), axis=-1), dtype=np.float64)


def posterior_values(utility: str | UtilityFn, b: Beliefs, K: int) -> NDArray[np.float64]:
    """``values[i, k]``: the exact posterior-expected utility after k more rollouts, k = 0..K."""
    cols = [
        expected_utility(utility, b.prior_alpha, b.prior_beta, b.successes, b.failures, k)
        for k in range(K + 1)
    ]
    return np.stack(cols, axis=1)  # [B, K+1]


def _best_ratio(row: NDArray[np.float64], m: int, limit: int) -> float:
    """max over k in (m, limit] of (row[k] − row[m]) / (k − m); −inf when nothing is left."""
    if limit <= m:
        return -np.inf
    ks = np.arange(m + 1, limit + 1)
    return float(np.max((row[m + 1 : limit + 1] - row[m]) / (ks - m)))


def bundle_fill(values: ArrayLike, total: int, capacity: ArrayLike) -> NDArray[np.int64]:
    """Hand out ``total`` rollouts one at a time, each to the question with the largest best
    bundle ratio given what this decision already gave it (ties to the lower index).

    ``values[i, k]`` is question i's value after k more rollouts (k = 0..K). A question takes at
    most min(capacity_i, K) rollouts while another has room in its table; past that the rest go
    by capacity (``split_round``), so the decision always hands out ``total``.
    """
    v = np.asarray(values, dtype=np.float64)
    cap = np.asarray(capacity, dtype=np.int64)
    B, K1 = v.shape
    limit = np.minimum(np.maximum(cap, 0), K1 - 1)
    m = np.zeros(B, dtype=np.int64)
    ratio = np.array([_best_ratio(v[i], 0, int(limit[i])) for i in range(B)])
    given = 0
    while given < total:
        i = int(np.argmax(ratio))
        if ratio[i] == -np.inf:
            break
        m[i] += 1
        given += 1
        ratio[i] = _best_ratio(v[i], int(m[i]), int(limit[i]))
    if given < total:
        m += split_round(np.ones(B), total - given, cap - m)
    return m


def deficit_split(target: ArrayLike, b: Beliefs) -> NDArray[np.int64]:
    """This decision's rollouts toward planned final group sizes ``target``: in proportion to
    each question's deficit ``target_i − n_i`` (largest remainder, ties to the lower index),
    caps respected; evenly among open questions once no deficit is left."""
    deficit = np.maximum(np.asarray(target, dtype=np.int64) - b.rollouts, 0)
    return split_round(deficit, b.round_size, b.capacity)
