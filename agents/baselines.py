"""Reference allocators: ``uniform`` (what GRPO does) and ``random`` (a floor)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from adaroll_env.model import AllocationParams, split_round
from agents.base import BaseAllocator, Obs


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
