"""The allocator protocol and the shared base that derives ``act`` and ``predict``.

An allocator writes one method, ``allocate(obs) -> counts``: integer rollouts per question for
the next decision, summing to min(R, budget_left) with caps respected. ``BaseAllocator`` turns
those counts into an env action (``act``) and serves SB3's ``PolicyPredictor`` interface over
batched observations (``predict``), so ``stable_baselines3.common.evaluation.evaluate_policy``
runs every allocator.

Memory rule: an allocator keeps no memory that changes its decisions beyond its seeded random
generator ``self.rng``; so ``reset(params, seed=s)`` followed by the same observations gives
the same actions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from adaroll_env.model import AllocationParams, encode_counts, posterior_mean, round_size_at
from agents.contract import check_allocation

Obs = dict[str, NDArray[Any]]


@runtime_checkable
class Allocator(Protocol):
    """What every allocator offers (see docs: design §4)."""

    name: str

    def reset(self, params: AllocationParams, *, seed: int | None = None) -> None:
        """Take the episode's fixed settings and reseed the allocator's generator."""

    def allocate(self, obs: Obs) -> NDArray[np.int64]:
        """Integer rollouts per question for the next decision."""

    def act(self, obs: Obs) -> int | NDArray[np.float32]:
        """The same decision as an env action."""

    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
    ) -> tuple[Any, Any]:
        """SB3's ``PolicyPredictor`` over (batched) observations."""


@dataclass(frozen=True)
class Beliefs:
    """One observation, read as arrays an allocator computes with (float64 / int64).

    ``prior_alpha``/``prior_beta`` are ``alpha − successes`` and ``beta − failures`` (exact up to
    float32 rounding of the observation).
    """

    alpha: NDArray[np.float64]
    beta: NDArray[np.float64]
    successes: NDArray[np.int64]
    failures: NDArray[np.int64]
    rollouts: NDArray[np.int64]
    budget_left: int
    #: rollouts this decision hands out (``adaroll_env.model.round_size_at``: min(R, budget
    #: left), or the round schedule's next round)
    round_size: int
    capacity: NDArray[np.int64]

    @property
    def mean(self) -> NDArray[np.float64]:
        """Posterior mean of each pass rate (``adaroll_env.model.posterior_mean``)."""
        return np.asarray(posterior_mean(self.alpha, self.beta), dtype=np.float64)

    @property
    def prior_alpha(self) -> NDArray[np.float64]:
        """Prior alpha of each question (posterior alpha minus successes)."""
        return self.alpha - self.successes

    @property
    def prior_beta(self) -> NDArray[np.float64]:
        """Prior beta of each question (posterior beta minus failures)."""
        return self.beta - self.failures


def read_beliefs(params: AllocationParams, obs: Obs) -> Beliefs:
    """Parse one (unbatched) observation under ``params`` into ``Beliefs``."""
    s = np.rint(np.asarray(obs["successes"], dtype=np.float64)).astype(np.int64)
    n = np.rint(np.asarray(obs["rollouts"], dtype=np.float64)).astype(np.int64)
    left = round(float(np.asarray(obs["budget_left"]).reshape(-1)[0]))
    if s.shape != (params.num_questions,):
        raise ValueError(
            f"observation has {s.shape[0] if s.ndim else 0} questions but the allocator was reset "
            f"for {params.num_questions}: call reset(params) with the env's params"
        )
    return Beliefs(
        alpha=np.asarray(obs["alpha"], dtype=np.float64),
        beta=np.asarray(obs["beta"], dtype=np.float64),
        successes=s,
        failures=n - s,
        rollouts=n,
        budget_left=left,
        round_size=round_size_at(params, params.total_budget - left),
        capacity=params.cap - n,
    )


class BaseAllocator:
    """Shared base: holds ``params`` and ``rng``; derives ``act`` and ``predict`` from
    ``allocate``. Subclasses set ``name`` and write ``allocate``.
    """

    name: str = "base"
    #: True when decisions draw from ``self.rng`` (no exact outcome-tree value then).
    stochastic: bool = False
    #: False when decisions never depend on outcomes seen within the episode; the trainer then
    #: hands out the whole budget in one round (the same allocation, fewer generate calls).
    adaptive: bool = True
    #: True when decisions read the beliefs a step starts from (so ``adaptive``: a trainer offers
    #: a pool) but never the outcomes seen within it: the trainer's default rounds (``"auto"``)
    #: then hand out the whole budget in one round (the same allocation, fewer generate calls).
    one_round: bool = False
    #: rollouts every prompt gets before this allocator's first decision when a trainer's
    #: ``pilot`` is left unset (``None``); a simulator env's ``pilot`` is always explicit.
    default_pilot: int = 0

    def __init__(self) -> None:
        self._params: AllocationParams | None = None
        self.rng = np.random.default_rng()

    @property
    def params(self) -> AllocationParams:
        """The params given at the last ``reset``."""
        if self._params is None:
            raise RuntimeError(
                f"allocator {self.name!r} has not been reset: call reset(params, seed=...) "
                "or build it with agents.make_allocator(spec, env)"
            )
        return self._params

    def reset(self, params: AllocationParams, *, seed: int | None = None) -> None:
        """Take the episode's fixed settings and reseed ``self.rng``."""
        if not isinstance(params, AllocationParams):
            raise TypeError(
                f"reset() needs AllocationParams, got {type(params).__name__}: pass "
                "env.unwrapped.params"
            )
        self._params = params
        self.rng = np.random.default_rng(seed)

    def allocate(self, obs: Obs) -> NDArray[np.int64]:
        """Integer rollouts per question for the next decision (write this in a subclass)."""
        raise NotImplementedError

    def beliefs(self, obs: Obs) -> Beliefs:
        """The observation as float64/int64 arrays with round size and capacities."""
        return read_beliefs(self.params, obs)

    def act(self, obs: Obs) -> int | NDArray[np.float32]:
        """The decision of ``allocate`` as an env action (question index, or rounds weights).

        The counts must honour the allocation contract (``agents.check_allocation``: integer,
        non-negative, summing to the round, within the caps); a broken decision raises
        ``AllocationError`` naming the allocator, the rule and the numbers, never repaired.
        """
        params = self.params
        counts = np.asarray(self.allocate(obs))
        if params.mode == "sequential" and counts.dtype.kind in "iu":
            # Fast path of the same rules for one rollout: exactly one 1, to a question with room.
            nz = np.flatnonzero(counts)
            if nz.size == 1 and counts[nz[0]] == 1 and counts.shape == (params.num_questions,):
                q = int(nz[0])
                if float(obs["rollouts"][q]) < params.cap and float(obs["budget_left"][0]) >= 1:
                    return q
        b = self.beliefs(obs)
        counts = check_allocation(
            f"{self.name!r} ({type(self).__name__})",
            counts,
            round_size=b.round_size,
            spent=b.rollouts,
            caps=params.cap,
        )
        if params.mode == "sequential":
            return int(np.flatnonzero(counts)[0])
        return encode_counts(counts)

    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
    ) -> tuple[Any, Any]:
        """SB3 ``PolicyPredictor``: actions for a single or a batched (VecEnv) observation."""
        batched = np.asarray(observation["budget_left"]).ndim == 2
        if not batched:
            return np.asarray(self.act(observation)), state
        n_envs = np.asarray(observation["budget_left"]).shape[0]
        actions = [self.act({k: v[i] for k, v in observation.items()}) for i in range(n_envs)]
        return np.stack([np.asarray(a) for a in actions]), state

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"
