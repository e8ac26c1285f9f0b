"""Bandit-style allocators: ``oracle``, ``thompson``, ``bayes_ucb``, ``knowledge_gradient``,
``greedy`` and ``variance`` (docs: design §4; the formula in each docstring).

All but ``variance`` plan with a value table ``values[i, k]``, question i's (expected) utility
after k more rollouts, k = 0..K, and hand a decision's rollouts out with
``agents.planning.bundle_fill`` (largest best bundle ratio first, ties to the lower index). They
differ in the table:

| name | ``values[i, k]`` |
|---|---|
| ``oracle`` | ``binomial_values`` at the true p (``reveal_truth=True``) |
| ``thompson`` | ``binomial_values`` at p̃ ~ Beta(α_i, β_i), drawn each decision from ``self.rng`` |
| ``bayes_ucb`` | the largest ``binomial_values`` over p in the central credible interval |
| ``greedy`` | ``posterior_values``: the exact posterior expectation |
| ``knowledge_gradient`` | a one-step look-ahead on ``posterior_values`` at the budget's price |

``variance`` hands rollouts out by the expected reduction of posterior variance, built from
E_post[p(1−p)].

Look-ahead is bounded: K = ``planning.horizon(beliefs, max_horizon)`` (at most the budget left,
the largest capacity and ``max_horizon``). Memory rule: a decision depends on the observation (and,
for ``thompson``, on ``self.rng``) only. The allocators whose table rows are fixed functions of
a question's belief — ``oracle``, ``bayes_ucb``, ``greedy``, ``knowledge_gradient`` — keep a memo
of rows keyed by (prior, s, f): a cache that never changes a decision (a row is computed once
and is what computing it again would give), kept across episodes while the utility and the
memo's horizon stay the same. In the sequential env each miss also computes the rows of the
next few counts of that question, so most decisions are look-ups.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from adaroll_env.errors import check_int
from adaroll_env.model import (
    AllocationParams,
    prior_arrays,
    prior_matches,
    split_round,
)
from adaroll_env.utilities import beta_binomial_logpmf
from agents.bandits.value_tables import (
    RowMemo,
    clearing_price,
    concave_increments,
    credible_points,
    optimistic_values,
    posterior_learnability,
    variance_split,
)
from agents.base import BaseAllocator, Beliefs, Obs
from agents.planning import binomial_values, bundle_fill, horizon, posterior_values

__all__ = [
    "DEFAULT_MAX_HORIZON",
    "THOMPSON_MAX_HORIZON",
    "BayesUCBAllocator",
    "GreedyAllocator",
    "KnowledgeGradientAllocator",
    "OracleAllocator",
    "ThompsonAllocator",
    "VarianceAllocator",
    "clearing_price",
    "concave_increments",
    "credible_points",
    "optimistic_values",
    "posterior_learnability",
    "variance_split",
]

#: Default cap on the look-ahead of a value table (rollouts past the current count).
DEFAULT_MAX_HORIZON = 32

#: Thompson's default: it recomputes its whole table every decision (cost O(B·K²)), and the
#: bundle ratios of point-estimate tables peak within a few rollouts for the built-in
#: utilities (decisions were identical at K = 8, 16 and 32 on the simulator settings tried).
THOMPSON_MAX_HORIZON = 16

#: Sequential env: on a memo miss, also compute the rows of the next counts up to this depth.
_PREFETCH_DEPTH = 3

#: Knowledge-gradient scores this close to the best count as ties (float noise of the sums).
_TIE = 1e-9

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]


# --- pure pieces -------------------------------------------------------------------------------


def _fill(values: F64, total: int, capacity: I64) -> I64:
    """``bundle_fill``, with a vectorised path for a single rollout (the sequential env) that
    gives exactly its answer: the largest best bundle ratio, ties to the lower index."""
    if total != 1:
        return bundle_fill(values, total, capacity)
    B, K1 = values.shape
    limit = np.minimum(np.maximum(capacity, 0), K1 - 1)
    ks = np.arange(1, K1)
    ratio = (values[:, 1:] - values[:, :1]) / ks  # [B, K]
    ratio = np.where(ks[None, :] <= limit[:, None], ratio, -np.inf)
    best = ratio.max(axis=1) if K1 > 1 else np.full(B, -np.inf)
    i = int(np.argmax(best))
    if best[i] == -np.inf:
        return split_round(np.ones(B), 1, capacity)
    counts = np.zeros(B, dtype=np.int64)
    counts[i] = 1
    return counts


# --- the memo of value rows (``agents.bandits.value_tables.RowMemo``) -----------------------------


def _memo_priors(params: AllocationParams, b: Beliefs) -> tuple[F64, F64]:
    """Each question's prior as a memo key: the params' prior where the observation agrees with
    it (exact, so the rows of later counts are found again), else ``alpha − successes`` as
    observed (per-episode priors set through ``reset(options=...)``)."""
    pa, pb = prior_arrays(params)
    ra, rb = b.prior_alpha, b.prior_beta
    ok = prior_matches(pa, pb, ra, rb, b.successes, b.failures)
    return np.where(ok, pa, ra), np.where(ok, pb, rb)


def _posterior_rows(utility: str, K: int, a0: F64, b0: F64, s: I64, f: I64) -> F64:
    """``posterior_values`` rows for questions with prior (a0, b0) and counts (s, f)."""
    beliefs = Beliefs(
        alpha=a0 + s,
        beta=b0 + f,
        successes=s,
        failures=f,
        rollouts=s + f,
        budget_left=0,
        round_size=0,
        capacity=np.zeros_like(s),
    )
    return posterior_values(utility, beliefs, K)


class _MemoRows:
    """What the memo-backed allocators share: the memo, its horizon and its keys."""

    def __init__(self, compute: Callable[[F64, F64, I64, I64], F64], max_horizon: int) -> None:
        self.max_horizon = max_horizon
        self.memo = RowMemo(compute)
        self.K = 0

    def configure(self, params: AllocationParams, *settings: Any) -> None:
        self.K = min(self.max_horizon, params.cap)
        self.memo.configure((params.utility, self.K, *settings))

    def prefetch(self, b: Beliefs) -> int:
        return _PREFETCH_DEPTH if b.round_size == 1 else 0


class _TableAllocator(BaseAllocator):
    """Base of the allocators that plan on value tables kept in a ``_MemoRows`` memo: it holds
    the horizon and re-keys the memo at ``reset`` (the memo never changes a decision)."""

    def __init__(self, *, max_horizon: int) -> None:
        super().__init__()
        self.max_horizon = check_int("max_horizon", max_horizon, 1)
        self._rows = _MemoRows(self._compute, self.max_horizon)

    def _memo_settings(self) -> tuple[Any, ...]:
        """Settings besides utility and horizon that change the rows."""
        return ()

    def reset(self, params: AllocationParams, *, seed: int | None = None) -> None:
        """Take the params and keep the memo of rows while utility and settings agree."""
        super().reset(params, seed=seed)
        self._rows.configure(params, *self._memo_settings())

    def _compute(self, a: F64, b: F64, s: I64, f: I64) -> F64:
        raise NotImplementedError


# --- allocators --------------------------------------------------------------------------------


class OracleAllocator(_TableAllocator):
    """Knows the true pass rates: an upper reference, never ranked as a competitor.

    Reads ``obs["true_p"]`` (the env must be made with ``reveal_truth=True``) and plans with
    the exact value of more rollouts at the true p:
    ``values[i, k] = E[u(s_i + X, f_i + k − X)]``, X ~ Binomial(k, p_i)
    (``planning.binomial_values``), handed out by ``planning.bundle_fill``. Under known p this
    is the greedy water-filling of the expected utility of the decision's rollouts given the
    counts so far (optimal for one decision when the rows are concave; it re-plans after every
    decision, so it uses the outcomes too).
    """

    name = "oracle"

    def __init__(self, *, max_horizon: int = DEFAULT_MAX_HORIZON) -> None:
        super().__init__(max_horizon=max_horizon)

    def _compute(self, p: F64, _unused: F64, s: I64, f: I64) -> F64:
        return binomial_values(self.params.utility, p, s, f, self._rows.K)

    def allocate(self, obs: Obs) -> NDArray[np.int64]:
        """Rollouts to the largest bundle ratio of the true-p value table."""
        if "true_p" not in obs:
            raise ValueError(
                "the oracle allocator reads the true pass rates from obs['true_p']: make the env "
                "with reveal_truth=True, e.g. gym.make('AdaRoll/BetaBernoulli-v0', "
                "reveal_truth=True)"
            )
        b = self.beliefs(obs)
        K = horizon(b, self.max_horizon)
        p = np.asarray(obs["true_p"], dtype=np.float64).reshape(-1)
        rows = self._rows.memo.get(
            p, np.zeros_like(p), b.successes, b.failures, prefetch=self._rows.prefetch(b)
        )
        return _fill(rows[:, : K + 1], b.round_size, b.capacity)


class ThompsonAllocator(BaseAllocator):
    """Thompson sampling (Thompson, 1933), as MoPPS (arXiv 2507.04632) and BOTS
    (arXiv 2510.26374) use it for prompt selection, turned into an allocation.

    Each decision draws p̃_i ~ Beta(α_i, β_i) from each question's posterior (``self.rng``,
    seeded in ``reset``), plans as if p̃ were true,
    ``values[i, k] = E[u(s_i + X, f_i + k − X)]``, X ~ Binomial(k, p̃_i)
    (``planning.binomial_values``), and hands the decision's rollouts out by
    ``planning.bundle_fill``. One draw per decision: a round is planned under one sample.
    The table is recomputed every decision, so ``max_horizon`` defaults to
    ``THOMPSON_MAX_HORIZON`` (16) rather than 32.
    """

    name = "thompson"

    def __init__(self, *, max_horizon: int = THOMPSON_MAX_HORIZON) -> None:
        super().__init__()
        self.max_horizon = check_int("max_horizon", max_horizon, 1)

    def allocate(self, obs: Obs) -> NDArray[np.int64]:
        """Rollouts to the largest bundle ratio under a posterior sample."""
        b = self.beliefs(obs)
        p_tilde = self.rng.beta(b.alpha, b.beta)
        K = horizon(b, self.max_horizon)
        values = binomial_values(self.params.utility, p_tilde, b.successes, b.failures, K)
        return _fill(values, b.round_size, b.capacity)


class BayesUCBAllocator(_TableAllocator):
    """Bayes-UCB (Kaufmann, Cappé & Garivier, 2012): optimism at a posterior quantile.

    Bayes-UCB scores an arm by an upper quantile of its posterior. Utilities are not monotone
    in p (``informative`` peaks at p = 1/2), so the optimism is over the value: for each question
    and each k,
    ``values[i, k] = max over p in P_i of E[u(s_i + X, f_i + k − X)]``, X ~ Binomial(k, p),
    where P_i holds ``points`` evenly spaced pass rates over the central credible interval
    [Q_i(1 − quantile), Q_i(quantile)] of Beta(α_i, β_i), plus the posterior mean and 0.5
    clipped into it (``credible_points``). Where the value rises with p (``hit`` before a
    success) this is exactly the Bayes-UCB index at level ``quantile``; where it peaks inside
    the interval the peak is on the grid or at 0.5. Handed out by ``planning.bundle_fill``.

    ``quantile`` is the upper quantile level 1 − δ/2 of a central interval of mass 1 − δ; the
    default 0.9 (an 80 % interval) is fixed, where Kaufmann et al. raise it over time as
    1 − 1/(t (log T)^c): one episode is short and its budget fixed. Deterministic.
    """

    name = "bayes_ucb"

    def __init__(
        self,
        *,
        quantile: float = 0.9,
        points: int = 5,
        max_horizon: int = DEFAULT_MAX_HORIZON,
    ) -> None:
        super().__init__(max_horizon=max_horizon)
        q = float(quantile)
        if not 0.5 <= q < 1.0:
            raise ValueError(
                f"quantile must lie in [0.5, 1) (the upper level of a central credible "
                f"interval), got {quantile!r}"
            )
        self.quantile = q
        self.points = check_int("points", points, 2)

    def _memo_settings(self) -> tuple[Any, ...]:
        return (self.quantile, self.points)

    def _compute(self, a0: F64, b0: F64, s: I64, f: I64) -> F64:
        return optimistic_values(
            self.params.utility, a0 + s, b0 + f, s, f, self._rows.K, self.quantile, self.points
        )

    def allocate(self, obs: Obs) -> NDArray[np.int64]:
        """Rollouts to the largest bundle ratio of the optimistic value table."""
        b = self.beliefs(obs)
        K = horizon(b, self.max_horizon)
        a0, b0 = _memo_priors(self.params, b)
        rows = self._rows.memo.get(a0, b0, b.successes, b.failures, prefetch=self._rows.prefetch(b))
        return _fill(rows[:, : K + 1], b.round_size, b.capacity)


class GreedyAllocator(_TableAllocator):
    """Largest posterior-expected marginal utility: water-filling on the exact Bayesian value
    (the HORA (arXiv 2605.07114) / CoBA-RL (arXiv 2602.03048) family: HORA maximises
    Σ posterior hit utility greedily, CoBA-RL hands out rollouts by heap-greedy marginal gains).

    ``values[i, k] = E_post[u(s_i + S, f_i + k − S)]``, S ~ Beta-binomial(k, α_i, β_i)
    (``planning.posterior_values``); the decision's rollouts go one at a time to the largest best
    bundle ratio max_k (V_i(m_i + k) − V_i(m_i))/k (``planning.bundle_fill``; with a concave V
    this is the largest marginal gain). Deterministic.
    """

    name = "greedy"

    def __init__(self, *, max_horizon: int = DEFAULT_MAX_HORIZON) -> None:
        super().__init__(max_horizon=max_horizon)

    def _compute(self, a0: F64, b0: F64, s: I64, f: I64) -> F64:
        return _posterior_rows(self.params.utility, self._rows.K, a0, b0, s, f)

    def allocate(self, obs: Obs) -> NDArray[np.int64]:
        """Rollouts to the largest bundle ratio of the posterior value table."""
        b = self.beliefs(obs)
        K = horizon(b, self.max_horizon)
        a0, b0 = _memo_priors(self.params, b)
        rows = self._rows.memo.get(a0, b0, b.successes, b.failures, prefetch=self._rows.prefetch(b))
        return _fill(rows[:, : K + 1], b.round_size, b.capacity)


def _slots(depth: int) -> tuple[I64, I64, I64]:
    """Outcome slots (m, y) — y successes among m more rollouts — for m = 0..depth, ordered by
    m; and where each m starts."""
    m = np.concatenate([np.full(d + 1, d) for d in range(depth + 1)]).astype(np.int64)
    y = np.concatenate([np.arange(d + 1) for d in range(depth + 1)]).astype(np.int64)
    starts = np.array([d * (d + 1) // 2 for d in range(depth + 1)], dtype=np.int64)
    return m, y, starts


class KnowledgeGradientAllocator(_TableAllocator):
    """Knowledge gradient (Frazier, Powell & Dayanik, 2008) on the final training utility.

    KG values a measurement by how much it raises the best value one could then implement:
    ν_i = E[max_x μ^{n+1}(x) | measure i] − max_x μ^n(x). Here the implementation x is how many
    more rollouts each question gets, valued by the exact posterior expectation
    V_i(k) = E_post[u(s_i + S, f_i + k − S)] (``planning.posterior_values``). The budget
    constraint is priced (the Lagrangian relaxation that also gives the ``bamdp`` index): at a
    price λ per rollout, max_x decomposes over questions into Σ_j φ_j, with

        φ_i(λ; s, f) = max_{0 ≤ k ≤ K_i} V_i(k | s, f) − λk,

    and observing question i only changes its own term. With λ held fixed (one question does
    not move the price), the knowledge gradient of one rollout on i is

        KG_i = Σ_{y∈{0,1}} P(y | α_i, β_i) · φ_i(λ; s_i + y, f_i + 1 − y) − λ − φ_i(λ; s_i, f_i),

    the outcome drawn from the posterior predictive (continuations get one rollout less of
    horizon). λ is the price at which the current tables spend the whole remaining budget M
    (``clearing_price``: the M-th largest increment of the rows' concave majorants). KG_i ≥ 0
    for a question the priced plan would give rollouts to (it can still replan after seeing y),
    and KG_i < 0 is the opportunity cost of one the plan would skip. K_i = min(K, capacity_i).

    A sequential decision gives its rollout to argmax_i KG_i (ties, up to 1e-9 of float noise,
    to the lower index; at the clearing price exact ties are common). A round
    of R > 1 is observed only at its end, so it is valued as a whole: with
    Q_i(m) = E_{Y ~ Beta-binomial(m, α_i, β_i)}[φ_i(λ; s_i + Y, f_i + m − Y)] − λm
    for m ≤ ``round_depth`` and, past it, the open-loop bound max_{m ≤ k ≤ K_i} V_i(k) − λk, the
    round is ``planning.bundle_fill(Q, R, capacity)``, which maximises Σ_i Q_i(m_i) (exactly
    when the Q_i are concave). Deterministic.

    Unlike the other planners, KG needs ``max_horizon`` about as long as the rollouts a question
    may still get: the continuation φ is cut at K (on the simulator, K = 16 lost to K = 32 at
    G ≥ 16; K = 64 gained nothing over 32).
    """

    name = "knowledge_gradient"

    def __init__(self, *, max_horizon: int = DEFAULT_MAX_HORIZON, round_depth: int = 4) -> None:
        super().__init__(max_horizon=max_horizon)
        self.round_depth = check_int("round_depth", round_depth, 1)

    def _compute(self, a0: F64, b0: F64, s: I64, f: I64) -> F64:
        """[V(0..K) | concave-majorant increments (K)] per key."""
        values = _posterior_rows(self.params.utility, self._rows.K, a0, b0, s, f)
        return np.concatenate([values, concave_increments(values)], axis=1)

    def allocate(self, obs: Obs) -> NDArray[np.int64]:
        """One-step look-ahead at the budget's price (a whole round when R > 1)."""
        b = self.beliefs(obs)
        B = b.rollouts.size
        R = b.round_size
        K = horizon(b, self.max_horizon)
        Kc = self._rows.K
        if K == 0:
            return split_round(np.ones(B), R, b.capacity)
        k_i = np.minimum(np.maximum(b.capacity, 0), K)  # [B]
        depth = 1 if R == 1 else min(self.round_depth, R, K)
        m_slot, y_slot, starts = _slots(depth)  # [S]
        S = m_slot.size
        a0, b0 = _memo_priors(self.params, b)
        s_key = b.successes[:, None] + y_slot[None, :]  # [B, S]
        f_key = b.failures[:, None] + (m_slot - y_slot)[None, :]  # [B, S]
        rows = self._rows.memo.get(
            np.repeat(a0, S),
            np.repeat(b0, S),
            s_key.reshape(-1),
            f_key.reshape(-1),
            prefetch=self._rows.prefetch(b),
        ).reshape(B, S, -1)  # [B, S, 2·Kc+1]
        values = rows[:, :, : K + 1]  # [B, S, K+1]
        # The majorant of V_i(0..K_i): memoised for a full horizon, recomputed where it is cut.
        inc = rows[:, 0, Kc + 1 : Kc + 1 + K]  # [B, K]
        cut = k_i < Kc
        if cut.any():
            ks = np.arange(K + 1)
            head = np.where(ks[None, :] <= k_i[cut, None], values[cut, 0, :], -np.inf)
            inc = inc.copy()
            inc[cut] = concave_increments(head)
        lam = clearing_price(inc, k_i, b.budget_left)

        ks = np.arange(K + 1)
        net = values - lam * ks  # [B, S, K+1]
        reach = (k_i[:, None] - m_slot[None, :])[:, :, None]  # [B, S, 1]
        net = np.where(ks[None, None, :] <= reach, net, -np.inf)
        phi = net.max(axis=2)  # [B, S]; -inf where m > K_i
        logw = beta_binomial_logpmf(
            y_slot[None, :],
            m_slot[None, :],
            (a0 + b.successes)[:, None],
            (b0 + b.failures)[:, None],
        )  # [B, S]
        q_exact = np.add.reduceat(np.exp(logw) * phi, starts, axis=1)  # [B, depth+1]
        q_exact = q_exact - lam * np.arange(depth + 1)[None, :]

        if R == 1:
            kg = np.where(k_i >= 1, q_exact[:, 1] - q_exact[:, 0], -np.inf)
            # Ties to the lower index, up to the float noise of the expectations.
            counts = np.zeros(B, dtype=np.int64)
            counts[int(np.flatnonzero(kg >= kg.max() - _TIE)[0])] = 1
            return counts
        # Past round_depth: the open-loop bound max_{m <= k <= K_i} V_i(k) - lam*k.
        open_loop = np.maximum.accumulate(net[:, 0, ::-1], axis=1)[:, ::-1]  # [B, K+1]
        table = np.concatenate([q_exact, open_loop[:, depth + 1 :]], axis=1)  # [B, K+1]
        table = np.where(np.isfinite(table), table, 0.0)  # past K_i: never read by bundle_fill
        return bundle_fill(table, R, b.capacity)


class VarianceAllocator(BaseAllocator):
    """Posterior variance: the CERO (arXiv 2606.05606) / LILO (arXiv 2502.12272) family.

    CERO takes the posterior-expected Bernoulli variance E_post[p(1−p)] as the Bayesian value of
    rollouts and turns it into a concave, saturating utility of a prompt's cumulative
    allocation; LILO samples prompts by learnability p(1−p). Here that utility is the expected
    reduction of the posterior variance of p_i by m more rollouts,
    U_i(m) = w_i/t_i − w_i/(t_i + m), with ``w_i = E_post[p_i(1 − p_i)] =
    α_i β_i / ((α_i+β_i)(α_i+β_i+1))`` and t_i = α_i + β_i (prior strength + n_i). Each rollout
    of a decision goes to the question with room and the largest next gain
    ``w_i / ((t_i + m_i)(t_i + m_i + 1))``, m_i being what this decision already gave it, ties to
    the lower index (``variance_split``). In the sequential env the score is recomputed from
    the updated posterior at every decision. The utility is not read. Deterministic.
    """

    name = "variance"

    def allocate(self, obs: Obs) -> NDArray[np.int64]:
        """Rollouts to the largest expected reduction of posterior variance."""
        b = self.beliefs(obs)
        return variance_split(b.alpha, b.beta, b.round_size, b.capacity)
