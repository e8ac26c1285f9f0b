"""Pure pieces of the bandit allocators (``agents.bandits.allocators``): value tables over credible
points, the variance split, the concave majorant of a value row and the clearing price of a budget.

Functions of arrays only, so tests and benchmarks call them directly; ``agents.bandits.allocators``
re-exports them. ``RowMemo`` is the memo of value rows the table allocators share.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import betaincinv

from adaroll_env.model import beta_learnability, posterior_mean, variance_reduction
from agents.planning import binomial_values

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]

#: The memo is cleared when it would hold more rows than this (a row is K+1 floats).
_MEMO_LIMIT = 50_000


def posterior_learnability(alpha: ArrayLike, beta: ArrayLike) -> F64:
    """E[p(1−p)] under Beta(α, β): αβ / ((α+β)(α+β+1)) — the posterior-expected Bernoulli
    variance (CERO's Bayesian value of rollouts; LILO's learnability p(1−p))."""
    a = np.asarray(alpha, dtype=np.float64)
    b = np.asarray(beta, dtype=np.float64)
    return np.asarray(beta_learnability(a, b), dtype=np.float64)


def variance_split(alpha: ArrayLike, beta: ArrayLike, total: int, capacity: ArrayLike) -> I64:
    """Hand out ``total`` rollouts one at a time, each to the question with room whose next
    rollout most reduces the expected posterior variance of its pass rate, ties to the lower
    index.

    Under Beta(α, β), with w = E[p(1−p)] (``posterior_learnability``) and t = α + β, the
    expected posterior variance after m more rollouts is w/(t + m), so the (m+1)-th removes
    ``w / ((t + m)(t + m + 1))``: E_post[p(1−p)] discounted by the rollouts the question has
    (t = prior strength + n) and those this call already gave it (m).

    Vectorised: every candidate gain for m below the room is ranked at once (by value, then
    index); since a question's gains fall with m, the first ``total`` of that ranking are
    exactly the one-at-a-time choices.
    """
    a = np.asarray(alpha, dtype=np.float64)
    b = np.asarray(beta, dtype=np.float64)
    room = np.maximum(np.asarray(capacity, dtype=np.int64), 0)
    B = a.shape[0]
    total = int(total)
    if total <= 0:
        return np.zeros(B, dtype=np.int64)
    J = min(total, int(room.max()))
    m = np.arange(J)
    gain = variance_reduction(a[:, None], b[:, None], m[None, :])  # [B, J]
    valid = m[None, :] < room[:, None]  # [B, J]
    g = gain[valid]
    owner = np.broadcast_to(np.arange(B)[:, None], (B, J))[valid]
    order = np.lexsort((owner, -g))[:total]
    return np.bincount(owner[order], minlength=B).astype(np.int64)


def credible_points(alpha: ArrayLike, beta: ArrayLike, quantile: float, points: int) -> F64:
    """Pass rates at which ``bayes_ucb`` evaluates each question: ``points`` evenly spaced over
    the central credible interval [Q(1 − quantile), Q(quantile)] of Beta(α, β) (Q its quantile
    function, ``scipy.stats.beta.ppf``), plus the posterior mean and 0.5, each clipped into the
    interval. Shape [B, points + 2].
    """
    a = np.asarray(alpha, dtype=np.float64)
    b = np.asarray(beta, dtype=np.float64)
    lo = betaincinv(a, b, 1.0 - quantile)  # = scipy.stats.beta.ppf(1 - quantile, a, b)
    hi = betaincinv(a, b, quantile)
    grid = lo[:, None] + (hi - lo)[:, None] * np.linspace(0.0, 1.0, points)[None, :]
    mean = np.clip(posterior_mean(a, b), lo, hi)
    half = np.clip(0.5, lo, hi)
    return np.concatenate([grid, mean[:, None], half[:, None]], axis=1)


def optimistic_values(
    utility: str,
    alpha: ArrayLike,
    beta: ArrayLike,
    s: ArrayLike,
    f: ArrayLike,
    K: int,
    quantile: float,
    points: int,
) -> F64:
    """``values[i, k]``: the largest ``binomial_values`` of question i over the pass rates
    ``credible_points(alpha, beta, quantile, points)`` of its posterior Beta(alpha_i, beta_i);
    ``s, f`` are its counts. Shape [B, K+1]."""
    pts = credible_points(alpha, beta, quantile, points)  # [B, P]
    B, P = pts.shape
    s_rep = np.repeat(np.asarray(s, dtype=np.int64), P)  # [B·P]
    f_rep = np.repeat(np.asarray(f, dtype=np.int64), P)  # [B·P]
    vals = binomial_values(utility, pts.reshape(-1), s_rep, f_rep, K)  # [B·P, K+1]
    return np.asarray(vals.reshape(B, P, K + 1).max(axis=1), dtype=np.float64)


def concave_increments(values: ArrayLike) -> F64:
    """Increments of each row's least concave majorant: ``out[i, j]`` is the slope of the
    majorant of ``values[i, 0..K]`` between j and j + 1 (non-increasing in j).

    The best bundle ratio from 0, max_k (V(k) − V(0))/k, is ``out[i, 0]``; and for a price λ per
    rollout, argmax_k V(k) − λk takes exactly the increments above λ. A row may end in −inf
    (entries past its own horizon): its increments are −inf from there on.
    """
    v = np.asarray(values, dtype=np.float64)
    M, K1 = v.shape
    K = K1 - 1
    out = np.zeros((M, K), dtype=np.float64)
    if K == 0:
        return out
    ks = np.arange(K1)
    rows = np.arange(M)
    m = np.zeros(M, dtype=np.int64)
    while True:
        active = m < K
        if not active.any():
            return out
        ahead = ks[None, :] > m[:, None]  # [M, K+1]
        with np.errstate(divide="ignore", invalid="ignore"):
            slope = (v - v[rows, m][:, None]) / (ks[None, :] - m[:, None])  # [M, K+1]
        slope = np.where(ahead, slope, -np.inf)
        best = slope.max(axis=1)  # [M]
        # The farthest k reaching the best slope: the majorant's next vertex.
        far = K - np.argmax((slope == best[:, None])[:, ::-1], axis=1)
        span = (ks[None, :K] >= m[:, None]) & (ks[None, :K] < far[:, None]) & active[:, None]
        out = np.where(span, best[:, None], out)
        m = np.where(active, far, m)


def clearing_price(increments: ArrayLike, limit: ArrayLike, budget: int) -> float:
    """The price λ at which the rows' demands spend ``budget`` rollouts: the ``budget``-th
    largest of the increments ``increments[i, j]`` with j < ``limit[i]`` (the smallest of them
    when there are fewer; 0.0 when there are none)."""
    inc = np.asarray(increments, dtype=np.float64)
    lim = np.asarray(limit, dtype=np.int64)
    pool = inc[np.arange(inc.shape[1])[None, :] < lim[:, None]]
    if pool.size == 0:
        return 0.0
    rank = min(int(budget), pool.size) - 1
    return float(-np.partition(-pool, rank)[rank])


Key = tuple[float, float, int, int]


class RowMemo:
    """Rows of a value table keyed by (x0, x1, s, f) — a question's prior (or true p) and its
    counts — computed in one batch on a miss. A cache that never changes a decision: the row
    stored for a key is the row ``compute`` gives for it.

    ``compute(x0, x1, s, f) -> rows[M, W]`` must depend on each key alone. The memo is emptied
    when its ``signature`` (utility, horizon, settings) changes or it grows past its limit.
    """

    def __init__(self, compute: Callable[[F64, F64, I64, I64], F64]) -> None:
        self._compute = compute
        self._rows: dict[Key, F64] = {}
        self._signature: tuple[Any, ...] = ()

    def configure(self, signature: tuple[Any, ...]) -> None:
        """Keep the rows while the signature is unchanged; empty the memo otherwise."""
        if signature != self._signature:
            self._rows = {}
            self._signature = signature

    def get(self, x0: F64, x1: F64, s: I64, f: I64, *, prefetch: int = 0) -> F64:
        """Rows for the flat key arrays (shape [n, W]); on a miss, also compute the rows of
        the counts up to ``prefetch`` rollouts ahead of each missing key."""
        keys: list[Key] = list(zip(x0.tolist(), x1.tolist(), s.tolist(), f.tolist(), strict=True))
        rows = self._rows
        missing = [k for k in dict.fromkeys(keys) if k not in rows]
        if missing:
            if len(rows) + len(missing) * (1 + prefetch) ** 2 > _MEMO_LIMIT:
                rows.clear()
                missing = list(dict.fromkeys(keys))
            todo = dict.fromkeys(missing)
            for a, b, s0, f0 in missing if prefetch > 0 else ():
                for d in range(1, prefetch + 1):
                    for y in range(d + 1):
                        key = (a, b, s0 + y, f0 + d - y)
                        if key not in rows:
                            todo[key] = None
            batch = list(todo)
            xa = np.array([k[0] for k in batch], dtype=np.float64)
            xb = np.array([k[1] for k in batch], dtype=np.float64)
            ks = np.array([k[2] for k in batch], dtype=np.int64)
            kf = np.array([k[3] for k in batch], dtype=np.int64)
            out = self._compute(xa, xb, ks, kf)
            for key, row in zip(batch, out, strict=True):
                rows[key] = row
        return np.stack([rows[k] for k in keys])
