"""The planners of the literature allocators (``agents.literature.allocators``): VIP's and Knapsack
RL's final group sizes, the level fill of Reinforce-Ada and Pilot-Commit, GRESO's skip probability.

Pure functions of arrays (formulas: each allocator's docstring, docs: allocators), so tests and
benchmarks call them directly; ``agents.literature.allocators`` re-exports them.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from numpy.typing import ArrayLike, NDArray

from adaroll_env.model import posterior_mean, split_round


def level_fill(rollouts: ArrayLike, room: ArrayLike, total: int) -> NDArray[np.int64]:
    """Hand out up to ``total`` rollouts one at a time, each to the question with the fewest
    rollouts so far (``rollouts`` plus what this call gave) among those with ``room`` left, ties
    to the lower index. Returns the counts; they sum to min(total, Σ room).

    Computed without a loop: the fill level L is the largest with Σ clip(L − n, 0, room) ≤ total,
    and what is left goes one each to the questions standing at L, lowest index first.
    """
    n = np.asarray(rollouts, dtype=np.int64)
    r = np.maximum(np.asarray(room, dtype=np.int64), 0)
    total = int(total)
    if total <= 0:
        return np.zeros(n.shape[0], dtype=np.int64)
    if int(r.sum()) <= total:
        return r.copy()
    open_ = r > 0
    levels = np.arange(int(n[open_].min()), int((n + r)[open_].max()) + 1)  # [L]
    need = np.clip(levels[:, None] - n[None, :], 0, r[None, :]).sum(axis=1)  # [L]
    level = int(levels[int(np.searchsorted(need, total, side="right")) - 1])
    counts = np.clip(level - n, 0, r)
    rest = total - int(counts.sum())
    if rest > 0:
        at_level = np.flatnonzero((n + counts == level) & (counts < r))
        counts[at_level[:rest]] += 1
    return counts


def _vip_f(t: NDArray[np.int64]) -> NDArray[np.float64]:
    """(t − 1)/t², the GRPO gradient-variance factor of a group of t (0 at t = 0)."""
    tf = t.astype(np.float64)
    return np.asarray(np.where(tf > 0, (tf - 1.0) / np.maximum(tf, 1.0) ** 2, 0.0))


def vip_objective(p_hat: ArrayLike, sizes: ArrayLike) -> float:
    """VIP's GRPO objective Σ_i a_i (n_i − 1)/n_i², a_i = p̂_i(1 − p̂_i), p̂ clipped to
    [1e-6, 1 − 1e-6] as in VIP's code (questions with n_i = 0 add nothing)."""
    p = np.clip(np.asarray(p_hat, dtype=np.float64), 1e-6, 1.0 - 1e-6)
    return float(np.sum(p * (1.0 - p) * _vip_f(np.asarray(sizes, dtype=np.int64))))


def vip_plan(
    p_hat: ArrayLike,
    rollouts: ArrayLike,
    total: int,
    cap: int,
    *,
    lower: int = 4,
    upper: int = 32,
    gamma: float = 0.0,
) -> NDArray[np.int64]:
    """VIP's planned final group sizes: minimise Σ a_i (n_i − 1)/n_i² (+ γ·log p̂_i·n_i) over
    integers with Σ n_i = ``total``, every n_i either 0 or in [lower, upper], never below
    ``rollouts``.

    Steps:
      1. ``upper`` is clipped to ``cap`` and ``lower`` to ``upper``; ``lower`` is lowered further
         only if the questions that already have rollouts cannot all reach it within ``total``.
      2. The 0-or-≥min rule: questions with rollouts start at max(n_i, lower); fresh questions are
         opened at ``lower``, largest a_i first (ties to the lower index), while the budget allows
         — so questions stay at 0 only when the budget cannot give every question ``lower``.
      3. ``upper`` is raised (up to ``cap``) to the smallest bound at which the opened questions
         can absorb ``total`` ("clipped to what the budget allows").
      4. The rest of the budget goes by the greedy on marginal decreases
         a_i[f(t) − f(t + 1)] − γ·log p̂_i, f(t) = (t − 1)/t², taken as the largest entries of the
         table of all admissible marginals (ties to the lower index, then the lower count). f is
         convex for t ≥ 3, so each row of marginals is non-increasing and this greedy is the exact
         integer optimum under the bounds whenever lower ≥ 3 (the default 4); below 3 it is VIP's
         greedy heuristic.
      5. Whatever caps still leave unplanned is spread evenly over the questions with room.
    """
    p = np.clip(np.asarray(p_hat, dtype=np.float64), 1e-6, 1.0 - 1e-6)
    a = p * (1.0 - p)
    n = np.asarray(rollouts, dtype=np.int64)
    B = n.shape[0]
    total, cap = int(total), int(cap)
    hi = max(1, min(int(upper), cap))
    lo = max(1, min(int(lower), hi))
    started = n > 0
    while lo > 1 and int(np.maximum(n[started], lo).sum()) > total:
        lo -= 1
    base = np.where(started, np.maximum(n, lo), 0)
    fresh = np.flatnonzero(~started)
    n_open = min(fresh.size, max(0, total - int(base.sum())) // lo)
    if n_open > 0:
        base[fresh[np.argsort(-a[fresh], kind="stable")[:n_open]]] = lo
    opened = base > 0

    def mass(u: int) -> int:
        return int(np.where(opened, np.maximum(base, u), 0).sum())

    if mass(hi) < total:
        lo_u, hi_u = hi + 1, cap
        while lo_u < hi_u:
            mid = (lo_u + hi_u) // 2
            if mass(mid) >= total:
                hi_u = mid
            else:
                lo_u = mid + 1
        hi = lo_u
    ub = np.where(opened, np.maximum(base, hi), 0)
    plan = base.copy()
    extra = total - int(base.sum())
    K = int((ub - base).max()) if B else 0
    if extra > 0 and K > 0:
        t = base[:, None] + np.arange(K)[None, :]  # [B, K]
        gain = a[:, None] * (_vip_f(t) - _vip_f(t + 1)) - float(gamma) * np.log(p)[:, None]
        gain = np.where(t < ub[:, None], gain, -np.inf)  # [B, K]
        take = min(extra, int(np.isfinite(gain).sum()))
        picked = np.argsort(-gain, axis=None, kind="stable")[:take]
        plan += np.bincount(picked // K, minlength=B)
    left = total - int(plan.sum())
    if left > 0:
        plan += split_round(np.ones(B), left, cap - plan)
    return plan


def knapsack_values(p_hat: ArrayLike, sizes: ArrayLike) -> NDArray[np.float64]:
    """Knapsack-RL value of groups of ``sizes``: (1 − p^n − (1 − p)^n)·p(1 − p)², 0 at n = 0.

    ``p_hat`` [B] broadcasts against ``sizes`` [B] or [B, K].
    """
    n = np.asarray(sizes, dtype=np.float64)
    p = np.asarray(p_hat, dtype=np.float64)
    if n.ndim == 2:
        p = p[:, None]
    nonzero = np.where(n > 0, 1.0 - p**n - (1.0 - p) ** n, 0.0)
    return np.asarray(nonzero * p * (1.0 - p) ** 2, dtype=np.float64)


def _knapsack_dp(vals: NDArray[np.float64], menu: NDArray[np.int64], W: int) -> NDArray[np.int64]:
    """Exact 0/1-choice knapsack: pick k_i ∈ [0, menu_i] per question, Σ k_i ≤ W, maximising
    Σ vals[i, k_i]. Ties go to the smaller k_i (so flat values leave budget unplanned)."""
    B = vals.shape[0]
    w = np.arange(W + 1)
    V = np.zeros(W + 1)
    choice = np.zeros((B, W + 1), dtype=np.int64)
    for i in range(B):
        K = int(min(menu[i], W))
        if K == 0:
            V = V + vals[i, 0]
            continue
        padded = np.concatenate([np.full(K, -np.inf), V])  # [K+W+1]
        M = sliding_window_view(padded, K + 1)[:, ::-1] + vals[i, : K + 1]  # [W+1, K+1]: V[w−k]+v_k
        c = np.argmax(M, axis=1)  # first maximum: the smallest k
        choice[i] = c
        V = M[w, c]
    extra = np.zeros(B, dtype=np.int64)
    rem = W
    for i in range(B - 1, -1, -1):
        extra[i] = choice[i, rem]
        rem -= int(extra[i])
    return extra


def _knapsack_hull_greedy(
    vals: NDArray[np.float64], menu: NDArray[np.int64], W: int
) -> tuple[NDArray[np.int64], bool]:
    """Greedy on the concave hull of each row: the W largest positive hull marginals (ties to
    the lower index, then the smaller k). Returns the extras and whether they are certified
    optimal — their true value reaches the hull optimum, an upper bound on the true optimum.

    Each row's hull replaces its first k* increments by the slope max_k (v(k) − v(0))/k from
    the origin (k* its first argmax) and keeps the true increments after k*. Knapsack values
    are concave from one rollout on, so this is the concave envelope; k* > 1 only for questions
    with no rollout yet (a single rollout is never informative, v(1) = v(0) = 0).
    """
    B, K1 = vals.shape
    K = K1 - 1
    ks = np.arange(1, K1)  # [K]
    inside = ks[None, :] <= menu[:, None]  # [B, K]
    gain = np.diff(vals, axis=1)  # [B, K]
    ratio = np.where(inside, (vals[:, 1:] - vals[:, :1]) / ks[None, :], -np.inf)  # [B, K]
    kstar = np.argmax(ratio, axis=1) + 1  # [B]
    slope = ratio[np.arange(B), kstar - 1]  # [B]
    hull = np.where(ks[None, :] <= kstar[:, None], slope[:, None], gain)  # [B, K]
    hull = np.where(inside & (hull > 0), hull, -np.inf)
    take = min(W, int(np.isfinite(hull).sum()))
    picked = np.argsort(-hull, axis=None, kind="stable")[:take]
    extra = np.bincount(picked // K, minlength=B).astype(np.int64)
    bound = float(np.sum(hull.reshape(-1)[picked]))
    value = float(np.sum(vals[np.arange(B), extra] - vals[:, 0]))
    return extra, value >= bound - 1e-12 * max(1.0, abs(bound))


def knapsack_plan(
    p_hat: ArrayLike,
    rollouts: ArrayLike,
    budget_left: int,
    cap: int,
    *,
    max_size: int = 64,
    solver: Literal["auto", "dp"] = "auto",
) -> NDArray[np.int64]:
    """Knapsack-RL planned final group sizes under the remaining budget.

    Each question is one item whose menu is a final size t ∈ [n_i, min(cap, max_size)] at cost
    t − n_i and value ``knapsack_values(p̂_i, t)``; the plan maximises the summed value with
    Σ (t_i − n_i) ≤ ``budget_left``, exactly. Fallback: budget the optimum leaves unspent (values
    flat in floating point — p̂ at 0 or 1 —, or every menu exhausted) is spread evenly over the
    questions with room, so the plan always sums to N.

    ``solver="dp"``: the dynamic programme over (question, budget), each step vectorised over
    budget × menu; O(B × budget × menu). ``solver="auto"`` (default) first solves the concave
    relaxation greedily (``_knapsack_hull_greedy``); when the greedy plan's true value reaches
    the relaxation's optimum — always, unless it leaves a fresh question at exactly one rollout —
    that plan is optimal (the relaxation bounds the true optimum from above), otherwise the DP
    runs. Both return an optimum; among equal-valued optima they may differ.
    """
    p = np.asarray(p_hat, dtype=np.float64)
    n = np.asarray(rollouts, dtype=np.int64)
    B = n.shape[0]
    W = int(budget_left)
    top = max(0, min(int(max_size), int(cap)))
    menu = np.clip(top - n, 0, W)  # [B]
    Kmax = int(menu.max()) if B else 0
    extra = np.zeros(B, dtype=np.int64)
    if Kmax > 0 and W > 0:
        sizes = n[:, None] + np.arange(Kmax + 1)[None, :]  # [B, Kmax+1]
        vals = knapsack_values(p, sizes)
        Wd = min(W, int(menu.sum()))
        certified = False
        if solver == "auto":
            extra, certified = _knapsack_hull_greedy(vals, menu, Wd)
        if not certified:
            extra = _knapsack_dp(vals, menu, Wd)
    plan = n + extra
    left = W - int(extra.sum())
    if left > 0:
        plan += split_round(np.ones(B), left, int(cap) - plan)
    return plan


def greso_skip_probability(
    prior_alpha: ArrayLike,
    prior_beta: ArrayLike,
    *,
    p_easy: float = 0.5,
    p_hard: float = 0.5,
    easy: float = 0.98,
    hard: float = 0.11,
    epoch_rollouts: float = 8.0,
    min_explore: float = 0.01,
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
    """GRESO's skip probability from each question's history, read from its Beta prior.

    Returns ``(prob, kind, z)``: ``kind`` is 1 (easy: prior mean ≥ ``easy``), −1 (hard: prior
    mean ≤ ``hard``) or 0; ``z`` = round((alpha + beta) / ``epoch_rollouts``) is the number of
    degenerate epochs the prior strength implies (a prior built from z epochs of
    ``epoch_rollouts`` rollouts, all of one outcome, has about that strength); and
    ``prob`` = 1 − max(p^z, ``min_explore``) with p = ``p_easy`` or ``p_hard`` for degenerate
    questions, 0 for the others (z = 0 never skips).
    """
    a = np.asarray(prior_alpha, dtype=np.float64)
    b = np.asarray(prior_beta, dtype=np.float64)
    strength = a + b
    mean = posterior_mean(a, b)
    kind = np.where(mean >= easy, 1, np.where(mean <= hard, -1, 0)).astype(np.int64)
    z = np.rint(strength / float(epoch_rollouts)).astype(np.int64)
    p = np.where(kind == 1, p_easy, p_hard)
    prob = np.where(kind != 0, 1.0 - np.maximum(p ** z.astype(np.float64), min_explore), 0.0)
    return np.asarray(prob, dtype=np.float64), kind, z
