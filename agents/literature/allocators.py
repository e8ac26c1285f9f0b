"""Allocators from the rollout-allocation literature: VIP, Knapsack RL, Reinforce-Ada,
Pilot-Commit and GRESO (formulas and defaults in each docstring; docs: allocators).

Each allocator follows its paper's rule and says in its docstring where the rule had to be adapted
to the adaroll episode (a fixed budget ``N`` spent exactly, decisions of one rollout or one round
of ``R``, Beta beliefs in the observation). None of them reads ``params.utility``: each optimises
its paper's own objective, whatever utility the env pays.

Memory rule (docs: design §4): every decision is recomputed from the observation alone. ``vip`` and
``knapsack`` plan final group sizes from the current posterior means and hand the decision's
rollouts toward that plan with ``agents.planning.deficit_split``; ``reinforce_ada`` and
``pilot_commit`` read their phase (round, pilot, band) from the counts; ``greso`` draws its skip
coins from generators seeded by the reset seed and the question, so the draws agree across the
decisions of an episode without being stored.

The planners are pure functions (``vip_plan``, ``knapsack_plan``, ``level_fill``,
``greso_skip_probability``) so tests and benchmarks can call them directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from adaroll_env.errors import check_int
from adaroll_env.model import AllocationParams, split_round
from agents.base import BaseAllocator, Beliefs, Obs
from agents.baselines import uniform_target
from agents.literature.planners import (
    greso_skip_probability,
    knapsack_plan,
    knapsack_values,
    level_fill,
    vip_objective,
    vip_plan,
)
from agents.planning import deficit_split

__all__ = [
    "GresoAllocator",
    "KnapsackAllocator",
    "PilotCommitAllocator",
    "ReinforceAdaAllocator",
    "VIPAllocator",
    "greso_skip_probability",
    "knapsack_plan",
    "knapsack_values",
    "level_fill",
    "vip_objective",
    "vip_plan",
]


def _probability(name: str, value: float) -> float:
    v = float(value)
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"{name} must lie in [0, 1], got {value!r}")
    return v


# --------------------------------------------------------------------------------------------
# VIP


class VIPAllocator(BaseAllocator):
    """VIP — Variance-Informed Predictive allocation (Nguyen et al., ICLR 2026,
    arXiv 2602.01601; code HieuNT91/VIP ``bernoulli_allocation.py``).

    Formula: with a_i = p̂_i(1 − p̂_i), choose final group sizes n_i minimising the GRPO gradient
    variance Σ_i a_i (n_i − 1)/n_i² subject to Σ n_i = N and n_i ∈ {0} ∪ [lower, upper]
    (``vip_plan``: greedy on marginal decreases, exact for lower ≥ 3), then hand the decision's
    rollouts toward the plan by deficit (``agents.planning.deficit_split``).

    Defaults from VIP: ``lower=4``, ``upper=32`` (clipped to the env's cap; raised when the budget
    could not otherwise be spent), the 0-or-≥4 rule, p̂ clipped to [1e-6, 1 − 1e-6].
    ``gamma`` is the tilt γ·log p̂_i·n_i found in VIP's code (4e-4 for GRPO) but not in the
    paper's objective; 0 by default.

    Adaptations: p̂ is the posterior mean from the observation, not VIP's Gaussian-process
    prediction over prompt embeddings; the plan is recomputed at every decision (so it follows the
    outcomes seen so far) and never plans a question below the rollouts it already has; VIP's
    SLSQP + floor + greedy rounding is replaced by the exact integer greedy. When the budget
    cannot give every question ``lower``, the questions opened are those with the largest a_i
    (VIP picks them at random when all predictions are equal). Ignores the env's utility.
    """

    name = "vip"

    def __init__(self, *, lower: int = 4, upper: int = 32, gamma: float = 0.0) -> None:
        super().__init__()
        self.lower = check_int("lower", lower, 1)
        self.upper = check_int("upper", upper, 1)
        if self.upper < self.lower:
            raise ValueError(f"upper ({upper}) must be >= lower ({lower})")
        self.gamma = float(gamma)

    def plan(self, b: Beliefs) -> NDArray[np.int64]:
        """Planned final group sizes for the beliefs ``b`` (``vip_plan`` on the posterior means)."""
        p = self.params
        return vip_plan(
            b.mean,
            b.rollouts,
            p.total_budget,
            p.cap,
            lower=self.lower,
            upper=self.upper,
            gamma=self.gamma,
        )

    def allocate(self, obs: Obs) -> NDArray[np.int64]:
        """The decision's rollouts toward the VIP plan, by deficit."""
        b = self.beliefs(obs)
        return deficit_split(self.plan(b), b)


# --------------------------------------------------------------------------------------------
# Knapsack RL


class KnapsackAllocator(BaseAllocator):
    """Knapsack RL (Li et al., arXiv 2509.25849): rollout budgets as a knapsack.

    Formula: the value of giving question i a final group of n rollouts is
    P(non-degenerate) × InfoGain = (1 − p̂^n − (1 − p̂)^n) · p̂(1 − p̂)², p̂ the posterior mean;
    the plan maximises Σ_i value_i(n_i) over final sizes under the remaining budget by an exact
    knapsack DP (``knapsack_plan``), and the decision's rollouts go toward it by deficit
    (``agents.planning.deficit_split``).

    Defaults: each question's menu runs from its current count to min(cap, ``max_size``),
    ``max_size=64`` (the paper reports budgets up to 93 per prompt; raise it for larger G).
    Fallback (the paper "reallocates spare budget"): budget the knapsack leaves unspent — values
    flat, or menus exhausted — is spread evenly over the questions with room.

    Adaptations: p̂ is the posterior mean from the observation (the paper uses the previous
    epoch's empirical pass rate) and the plan is recomputed at every decision. Ignores the env's
    utility. Cost: the exact DP is O(B × budget × menu); it runs only when the greedy on the
    concave relaxation cannot certify its plan optimal (see ``knapsack_plan``).
    """

    name = "knapsack"

    def __init__(self, *, max_size: int = 64) -> None:
        super().__init__()
        self.max_size = check_int("max_size", max_size, 1)

    def plan(self, b: Beliefs) -> NDArray[np.int64]:
        """Planned final group sizes for the beliefs ``b``."""
        return knapsack_plan(
            b.mean, b.rollouts, b.budget_left, self.params.cap, max_size=self.max_size
        )

    def allocate(self, obs: Obs) -> NDArray[np.int64]:
        """The decision's rollouts toward the knapsack plan, by deficit."""
        b = self.beliefs(obs)
        return deficit_split(self.plan(b), b)


# --------------------------------------------------------------------------------------------
# Reinforce-Ada


class ReinforceAdaAllocator(BaseAllocator):
    """Reinforce-Ada (arXiv 2510.04996; code RLHFlow/Reinforce-Ada): successive elimination.

    Rule: sampling runs in rounds of ``round_k`` rollouts per active question; after each round a
    question whose group already holds the signal leaves the active set — ``exit="pos"``: at
    least ``quota`` successes; ``exit="balance"`` (default): at least ``quota`` successes and
    ``quota`` failures. A question also leaves after ``max_rounds`` rounds or at its cap.

    Defaults: ``exit="balance"`` (the better variant in the paper's ablation). The paper samples
    ``round_k=8`` a round for at most ``max_rounds=4`` rounds with budgets of up to 32 a question;
    under adaroll's fixed budget of G = N/B a question that would spend the whole budget in one
    round, so ``round_k`` defaults to G/4 (at least 1) and ``max_rounds`` to None (a question
    stays active until its group holds the signal); both are keywords. ``quota=1``: one success
    and one failure make the group informative; the paper's balance exit asks n/2 of each for
    its final group of n = 4, i.e. ``quota=2``.

    Mapping to adaroll, read from the counts alone (no memory): round boundaries are the multiples
    of ``round_k`` (the env pilot counts toward the first round); a question is active unless it
    stands at a boundary and meets the exit rule, has finished ``max_rounds`` rounds, or is at its
    cap. Within a decision an active question takes at most the rest of its current round (its
    next outcomes are not seen before the round ends). The decision's rollouts go round-robin over
    the active questions, fewest rollouts first, ties to the lower index (``level_fill``; one
    rollout per decision in the sequential env). Fallback: rollouts that the active questions
    cannot take — none active, or their rounds full — go uniformly by deficit toward the even
    split of N (what ``uniform`` does). With ``round_k`` = G and no pilot the first round spends
    the whole budget, so the rule equals ``uniform``; ``round_k=1`` checks the exit after every
    rollout (the sequential variant). Ignores the env's utility.
    """

    name = "reinforce_ada"

    def __init__(
        self,
        *,
        round_k: int | None = None,
        exit: Literal["pos", "balance"] = "balance",
        quota: int = 1,
        max_rounds: int | None = None,
    ) -> None:
        super().__init__()
        if exit not in ("pos", "balance"):
            raise ValueError(f"exit must be 'pos' or 'balance', got {exit!r}")
        self.round_k_setting = None if round_k is None else check_int("round_k", round_k, 1)
        self.round_k = self.round_k_setting or 1
        self.exit = exit
        self.quota = check_int("quota", quota, 1)
        self.max_rounds = None if max_rounds is None else check_int("max_rounds", max_rounds, 1)

    def reset(self, params: AllocationParams, *, seed: int | None = None) -> None:
        """Take the params and cache the even split of N used by the fallback."""
        super().reset(params, seed=seed)
        self._uniform = uniform_target(params)
        # Auto: a quarter of the uniform group, so the budget allows several elimination rounds.
        self.round_k = self.round_k_setting or max(
            1, params.total_budget // (4 * params.num_questions)
        )

    def active_room(self, b: Beliefs) -> NDArray[np.int64]:
        """Rollouts each question may take this decision (0 for inactive questions)."""
        k = self.round_k
        n = b.rollouts
        resolved = b.successes >= self.quota
        if self.exit == "balance":
            resolved &= b.failures >= self.quota
        end = (n // k + 1) * k
        if self.max_rounds is not None:
            end = np.minimum(end, k * self.max_rounds)
        room = np.clip(np.minimum(end - n, b.capacity), 0, None)
        return np.where((n % k == 0) & resolved, 0, room)

    def allocate(self, obs: Obs) -> NDArray[np.int64]:
        """Round-robin over active questions; the rest uniformly by deficit."""
        b = self.beliefs(obs)
        counts = level_fill(b.rollouts, self.active_room(b), b.round_size)
        rest = b.round_size - int(counts.sum())
        if rest > 0:
            deficit = np.maximum(self._uniform - b.rollouts - counts, 0)
            counts += split_round(deficit, rest, b.capacity - counts)
        return counts


# --------------------------------------------------------------------------------------------
# Pilot-Commit


class PilotCommitAllocator(BaseAllocator):
    """Pilot-Commit (Kim et al., arXiv 2605.26606; code databricks/pilot-commit).

    Rule: a pilot of ``pilot`` rollouts per question estimates each pass rate; the rest of the
    budget is committed to the questions whose pilot accuracy s/n lies in the band
    [``low``, ``high``], evenly among them; questions above the band (too easy) and below it (too
    hard — deferred to a replay buffer in the paper) get nothing more.

    Defaults from the paper's config: ``pilot=8`` (``exploration.n``), ``low=0.125``
    (``diversity_threshold_lower``), ``high=0.75`` (1 − ``diversity_threshold_upper``).

    Mapping to adaroll, from the counts alone (no memory):
      * The pilot used is P = max(env pilot, min(``pilot``, (N − 1) // B, cap)): at most what
        leaves at least one rollout to commit (the env's own pilot·B < N rule). While some
        question has fewer than P rollouts, the decision brings questions up to P by deficit
        (``deficit_split``); a decision that completes the pilot commits its remainder using only
        the questions whose pilot was already complete.
      * Commit: the band is read from each question's current s/n. At the first commit decision
        that is the pilot accuracy; afterwards a committed question's accuracy also counts its
        commit rollouts, so a question drifting out of the band stops receiving (the observation
        cannot separate pilot from commit outcomes). "Evenly" is round-robin by fewest rollouts
        among the band, ties to the lower index (``level_fill``).
      * Fallback: with no question in the band, or the band's questions at their caps, the rest
        is spread evenly (fewest rollouts first) over all questions with room.

    With the default ``pilot=8`` and G = 8 the pilot takes 7 per question and only B rollouts are
    committed; Pilot-Commit's own runs commit most of the budget (e.g. "p32c96"), so pass a
    smaller ``pilot`` (such as G/4) for that regime. Ignores the env's utility.
    """

    name = "pilot_commit"

    def __init__(self, *, pilot: int = 8, low: float = 0.125, high: float = 0.75) -> None:
        super().__init__()
        self.pilot = check_int("pilot", pilot, 0)
        self.low = _probability("low", low)
        self.high = _probability("high", high)
        if self.high < self.low:
            raise ValueError(f"high ({high}) must be >= low ({low})")

    def reset(self, params: AllocationParams, *, seed: int | None = None) -> None:
        """Take the params and fix the pilot size P (a function of the params only)."""
        super().reset(params, seed=seed)
        B, N = params.num_questions, params.total_budget
        self._pilot = max(params.pilot, min(self.pilot, (N - 1) // B, params.cap))

    def allocate(self, obs: Obs) -> NDArray[np.int64]:
        """Pilot first, then the rest evenly over the questions in the band."""
        b = self.beliefs(obs)
        n, R = b.rollouts, b.round_size
        P = self._pilot
        need = np.maximum(P - n, 0)
        if int(need.sum()) >= R:
            return deficit_split(n + need, b)
        counts = need.copy()
        acc = b.successes / np.maximum(n, 1)
        band = (n >= P) & (n > 0) & (acc >= self.low) & (acc <= self.high)
        counts += level_fill(n + counts, np.where(band, b.capacity - counts, 0), R - counts.sum())
        rest = R - int(counts.sum())
        if rest > 0:
            counts += level_fill(n + counts, b.capacity - counts, rest)
        return counts


# --------------------------------------------------------------------------------------------
# GRESO


class GresoAllocator(BaseAllocator):
    """GRESO — GRPO with Efficient Selective Rollout (arXiv 2506.02177; code
    Infini-AI-Lab/GRESO): skip questions whose history says their group will be degenerate.

    Rule: a question is *easy* when its history's mean reward is ≥ ``easy`` (0.98) and *hard*
    when ≤ ``hard`` (0.11); with z the number of consecutive degenerate epochs, it is skipped with
    probability 1 − max(p^z, ``min_explore``) (0.01), p = ``p_easy`` or ``p_hard``. The questions
    not skipped share the budget evenly (deficit toward an even plan, ``deficit_split``); if every
    question is skipped, none is. Defaults from GRESO's scripts: ``p_easy = p_hard = 0.5``
    (its starting values; GRESO then adapts them by ±0.01 per step toward a zero-variance target —
    a cross-step controller that belongs to the trainer, not to one episode) and 8 rollouts per
    epoch.

    Mapping to adaroll: the history is the per-question prior in the observation
    (alpha − successes, beta − failures): its mean classifies the question and
    z = round(prior strength / ``epoch_rollouts``) counts the degenerate epochs
    (``greso_skip_probability``). Skipping drops the question's future rollouts; rollouts it
    already has (the pilot) stay. Each question's coin is a uniform draw from a generator seeded
    by the allocator's reset seed (the entropy of ``self.rng``'s seed sequence), the question's
    index and its prior as classified — (easy/hard, z) — so every decision of an episode sees the
    same draws without storing them (a memo of draws is kept; it never changes a decision). The
    prior enters through (easy/hard, z) rather than its float value because the observation
    carries it in float32, whose rounding moves with the counts. When caps stop the kept
    questions from absorbing the budget, the overflow is spread evenly over the skipped ones.
    Ignores the env's utility.
    """

    name = "greso"

    def __init__(
        self,
        *,
        p_easy: float = 0.5,
        p_hard: float = 0.5,
        easy: float = 0.98,
        hard: float = 0.11,
        epoch_rollouts: int = 8,
        min_explore: float = 0.01,
    ) -> None:
        super().__init__()
        self.p_easy = _probability("p_easy", p_easy)
        self.p_hard = _probability("p_hard", p_hard)
        self.easy = _probability("easy", easy)
        self.hard = _probability("hard", hard)
        self.epoch_rollouts = check_int("epoch_rollouts", epoch_rollouts, 1)
        self.min_explore = _probability("min_explore", min_explore)
        self._entropy: int | Sequence[int] | None = None
        self._draws: dict[tuple[int, int, int], float] = {}

    def reset(self, params: AllocationParams, *, seed: int | None = None) -> None:
        """Take the params, reseed, and keep the seed's entropy for the skip draws."""
        super().reset(params, seed=seed)
        seq = self.rng.bit_generator.seed_seq
        if not isinstance(seq, np.random.SeedSequence):  # pragma: no cover - numpy always uses it
            raise TypeError("expected numpy's SeedSequence behind the allocator's generator")
        self._entropy = seq.entropy
        self._draws = {}

    def _draw(self, question: int, kind: int, z: int) -> float:
        key = (question, kind + 1, z)
        u = self._draws.get(key)
        if u is None:
            seq = np.random.SeedSequence(self._entropy, spawn_key=key)
            u = float(np.random.default_rng(seq).random())
            self._draws[key] = u
        return u

    def skipped(self, b: Beliefs) -> NDArray[np.bool_]:
        """Which questions this episode skips (the same at every decision of the episode)."""
        prob, kind, z = greso_skip_probability(
            b.prior_alpha,
            b.prior_beta,
            p_easy=self.p_easy,
            p_hard=self.p_hard,
            easy=self.easy,
            hard=self.hard,
            epoch_rollouts=self.epoch_rollouts,
            min_explore=self.min_explore,
        )
        skip = np.zeros(prob.shape[0], dtype=bool)
        for i in np.flatnonzero(prob > 0):
            skip[i] = self._draw(int(i), int(kind[i]), int(z[i])) < prob[i]
        if skip.all():
            skip[:] = False
        return skip

    def plan(self, b: Beliefs) -> NDArray[np.int64]:
        """Even final sizes over the kept questions; skipped ones keep what they have."""
        p = self.params
        n = b.rollouts
        skip = self.skipped(b)
        keep = ~skip
        rest = p.total_budget - int(n[skip].sum())
        keep_cap = np.where(keep, p.cap, 0)
        if int(keep_cap.sum()) >= rest:
            target = np.where(keep, split_round(keep.astype(np.float64), rest, keep_cap), n)
        else:
            target = np.where(keep, p.cap, n)
            over = p.total_budget - int(target.sum())
            target = target + split_round(
                skip.astype(np.float64), over, np.where(skip, p.cap - n, 0)
            )
        return np.maximum(target, n)

    def allocate(self, obs: Obs) -> NDArray[np.int64]:
        """The decision's rollouts toward the even plan over the kept questions, by deficit."""
        b = self.beliefs(obs)
        return deficit_split(self.plan(b), b)
