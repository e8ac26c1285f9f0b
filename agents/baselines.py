"""Reference allocators: ``uniform`` (what GRPO does), ``random`` (a floor) and ``prior_filter``
(``uniform`` on the questions the prior does not call hopeless or solved)."""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import NDArray

from adaroll_env.model import AllocationParams, split_round
from agents.base import BaseAllocator, Beliefs, Obs
from agents.planning import deficit_split


def uniform_target(params: AllocationParams) -> NDArray[np.int64]:
    """GRPO's final group sizes: N split evenly, the remainder by largest share (ties to the
    lower index), under the caps."""
    B = params.num_questions
    return split_round(np.ones(B), params.total_budget, np.full(B, params.cap))


class UniformAllocator(BaseAllocator):
    """GRPO's allocation: every question gets the same share of the budget.

    Source: DeepSeekMath GRPO (Shao et al., 2024), a fixed group of G = N/B rollouts per
    question. The target allocation splits N evenly, the remainder by largest share with ties to
    the lower index, under the caps (``adaroll_env.split_round``); each decision hands its
    rollouts to the questions furthest below target, in proportion to their deficit
    ``target_i − n_i`` (largest remainder, ties to the lower index).
    """

    name = "uniform"
    adaptive = False

    def reset(self, params: AllocationParams, *, seed: int | None = None) -> None:
        """Take the params and compute the target split (a cache: it never changes a decision)."""
        super().reset(params, seed=seed)
        self._target = uniform_target(params)

    def allocate(self, obs: Obs) -> NDArray[np.int64]:
        """Rollouts toward the even split, by deficit."""
        if self.params.unit_rounds:  # one rollout: the largest deficit (the same rule)
            n = np.rint(obs["rollouts"]).astype(np.int64)
            if n.size != self._target.size:
                self.beliefs(obs)  # raises the shape error that names the fix
            counts = np.zeros(n.size, dtype=np.int64)
            deficit = np.where(n < self.params.cap, self._target - n, np.iinfo(np.int64).min)
            counts[int(np.argmax(deficit))] = 1
            return counts
        b = self.beliefs(obs)
        deficit = np.maximum(self._target - b.rollouts, 0)
        return split_round(deficit, b.round_size, b.capacity)


class RandomAllocator(BaseAllocator):
    """Uniformly random feasible allocation: each rollout of the decision goes to a question
    drawn uniformly among those under their cap. A floor that learned agents must beat.
    """

    name = "random"
    stochastic = True
    adaptive = False

    def allocate(self, obs: Obs) -> NDArray[np.int64]:
        """Each rollout to a uniformly random question with room left."""
        b = self.beliefs(obs)
        counts = np.zeros(b.rollouts.shape[0], dtype=np.int64)
        room = b.capacity.copy()
        left = b.round_size
        while left > 0:
            open_ = np.flatnonzero(room > 0)
            draw = np.bincount(
                open_[self.rng.integers(0, open_.size, size=left)], minlength=counts.size
            )
            take = np.minimum(draw, room)
            counts += take
            room -= take
            left -= int(take.sum())
        return counts


def degenerate_probabilities(
    alpha: NDArray[np.float64], beta: NDArray[np.float64], group: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Under Beta(alpha, beta) beliefs, the predictive probabilities that a group of ``group``
    rollouts is all wrong and all right (beta-binomial: ``B(a, b + G) / B(a, b)`` and
    ``B(a + G, b) / B(a, b)``)."""
    from adaroll_env.utilities import beta_binomial_logpmf

    wrong = np.exp(beta_binomial_logpmf(0, group, alpha, beta))
    right = np.exp(beta_binomial_logpmf(group, group, alpha, beta))
    return np.asarray(wrong, dtype=np.float64), np.asarray(right, dtype=np.float64)


class PriorFilterAllocator(BaseAllocator):
    """``uniform`` on the questions the belief prior does not call hopeless or solved: the
    baseline that isolates what priors alone buy.

    Source: DAPO's dynamic sampling (Yu et al., 2025, arXiv 2503.14476) drops the groups that
    came back all right or all wrong *after* sampling them; this drops, *before* sampling, the
    questions the prior expects to come back so (GRESO, arXiv 2506.02177, does it from each
    question's history with random exploration; this uses the prior's predictive alone).

    A question is *filtered* when, under the prior it enters the step with (``prior_alpha``,
    ``prior_beta``: in training, its own decayed history over its group's fitted prior), a group
    of ``group`` rollouts is all wrong with probability ≥ ``threshold`` (hopeless) or all right
    with probability ≥ ``threshold`` (solved) — ``degenerate_probabilities``. The budget goes in
    groups of ``group`` to the kept questions in an order drawn at ``reset`` from its seed, as
    many groups as it pays for; when too few are kept, the filtered questions with the lowest
    probability of a degenerate group take the rest, so the budget is always spent. (Until
    2026-12-07 the kept questions were taken in the order given, the first ones first; adaroll's
    trainer hands a pool over sorted by prompt id, so a run trained on the low ids only: on the
    spell cell about 5,700 of 10,000 training prompts. ``results/attributed/README.md`` says
    what that changed.)
    It never looks at this step's outcomes (the plan is the same at every decision of a step),
    so one round suffices (``one_round``: the trainers' default rounds give it one); it reads
    beliefs, so it is ``adaptive`` for the trainer, which then offers it a pool (``pool_size`` >
    B) to choose its groups from.
    """

    name = "prior_filter"
    one_round = True  # reads the priors, never this step's outcomes

    def __init__(self, *, group: int = 8, threshold: float = 0.9) -> None:
        super().__init__()
        from adaroll_env.errors import check_int

        self.group = check_int("group", group, 1)
        if not 0.0 < float(threshold) <= 1.0:
            raise ValueError(
                f"threshold must be in (0, 1], got {threshold!r}: the probability of an "
                "all-wrong or all-right group from which a question is filtered (default 0.9)"
            )
        self.threshold = float(threshold)
        self._warned = False

    def reset(self, params: AllocationParams, *, seed: int | None = None) -> None:
        """As every allocator's; warns once when the budget reaches every question in groups
        of ``group``: then nothing can be filtered and the allocation is ``uniform``'s."""
        super().reset(params, seed=seed)
        B, N = params.num_questions, params.total_budget
        #: rank of each question among the kept ones: random, so that no position of the pool
        #: (a trainer's pool is sorted by prompt id) is favoured over a run
        self._order = self.rng.permutation(B)
        if not self._warned and N // self.group >= B:
            self._warned = True
            warnings.warn(
                f"prior_filter: a budget of {N} rollouts in groups of {self.group} reaches all "
                f"{B} questions, so it filters none and allocates as uniform does. Give it more "
                "questions than budget/group: a pool (pool_size 2·B in adaroll's trainers; in "
                "TRL twice the prompts a batch with half the num_generations) or a smaller "
                "budget per question",
                stacklevel=2,
            )

    def filtered(self, alpha: NDArray[np.float64], beta: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Which questions the prior calls hopeless or solved."""
        wrong, right = degenerate_probabilities(alpha, beta, self.group)
        return np.asarray((wrong >= self.threshold) | (right >= self.threshold), dtype=bool)

    def plan(self, b: Beliefs) -> NDArray[np.int64]:
        """Final group sizes: ``group`` each to the kept questions in this episode's random
        order, the rest of the budget to the least degenerate filtered ones; never below what a
        question has."""
        p = self.params
        a0, b0 = b.prior_alpha, b.prior_beta
        wrong, right = degenerate_probabilities(a0, b0, self.group)
        degenerate = np.maximum(wrong, right)
        skip = degenerate >= self.threshold
        # kept first (in the random order), then filtered by increasing chance of a degenerate
        # group (ties in the random order too)
        order = np.lexsort((self._order, np.where(skip, degenerate, 0.0), skip))
        target = b.rollouts.copy()
        left = p.total_budget - int(target.sum())
        for i in order.tolist():
            if left <= 0:
                break
            add = min(max(self.group - int(target[i]), 0), left, p.cap - int(target[i]))
            target[i] += add
            left -= add
        if left > 0:  # every question has its group: spread what is left evenly under the caps
            target = target + split_round(np.ones(target.size), left, p.cap - target)
        return target

    def allocate(self, obs: Obs) -> NDArray[np.int64]:
        """The decision's rollouts toward the plan, by deficit."""
        b = self.beliefs(obs)
        return deficit_split(self.plan(b), b)
