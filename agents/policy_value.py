"""Exact value of an allocator's policy over the outcome tree (``exact_value``): a figure with no
Monte Carlo noise.

For a deterministic allocator, the expected final utility of an episode is a finite sum over
every outcome the rollouts can have. Questions are independent and each pass rate is drawn from
the difficulty, so a question's outcome sequence with s successes and f failures has probability
E[p^s (1 − p)^f] (``log_joint_moment`` of the difficulty), and the next outcome is a success with
probability E[p^(s+1) (1 − p)^f] / E[p^s (1 − p)^f]. In a Beta Bayes setting (difficulty = the
belief prior) this is the posterior predictive, and the value is the policy's BAMDP value.

The recursion memoises on the counts, so its cost is the number of reachable states times one
``allocate``; ``exact_value`` gives up (returns None) past ``max_states``.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from adaroll_env import model
from adaroll_env.model import AllocationParams, AllocationState
from adaroll_env.priors import DifficultySpec, resolve_difficulty
from adaroll_env.utilities import log_binomial
from agents.base import Allocator


class TooManyStates(RuntimeError):
    """The outcome tree has more states than allowed."""


def _outcome_table(log_m: Any, s: int, f: int, c: int) -> list[tuple[int, float]]:
    """[(successes k, probability)] of c more rollouts on a question at (s, f)."""
    ks = np.arange(c + 1)
    logp = log_binomial(c, ks) + log_m(s + ks, f + c - ks) - log_m(s, f)
    probs = np.exp(logp)
    return [(int(k), float(pk)) for k, pk in zip(ks, probs, strict=True) if pk > 0.0]


def exact_value(
    allocator: Allocator,
    params: AllocationParams,
    difficulty: DifficultySpec,
    *,
    seed: int = 0,
    max_states: int = 100_000,
) -> float | None:
    """Expected final utility of ``allocator`` (deterministic) over the whole outcome tree.

    ``params`` gives the beliefs the allocator sees (its observation), ``difficulty`` the law of
    the outcomes. Returns None when the tree has more than ``max_states`` states.
    """
    d = resolve_difficulty(difficulty)
    log_m = d.log_joint_moment
    allocator.reset(params, seed=seed)
    memo: dict[tuple[tuple[int, ...], tuple[int, ...]], float] = {}

    def value(state: AllocationState) -> float:
        key = (tuple(state.successes.tolist()), tuple(state.failures.tolist()))
        if key in memo:
            return memo[key]
        if len(memo) >= max_states:
            raise TooManyStates
        if model.is_done(params, state):
            v = model.utility_value(params, state)
        else:
            counts = np.asarray(allocator.allocate(model.observe(params, state)), dtype=np.int64)
            v = _expand(state, counts)
        memo[key] = v
        return v

    def _expand(state: AllocationState, counts: np.ndarray) -> float:
        qs = np.flatnonzero(counts)
        tables = [
            _outcome_table(log_m, int(state.successes[i]), int(state.failures[i]), int(counts[i]))
            for i in qs
        ]
        total = 0.0
        for combo in itertools.product(*tables):
            prob = 1.0
            succ = np.zeros(params.num_questions, dtype=np.int64)
            for i, (k, pk) in zip(qs, combo, strict=True):
                prob *= pk
                succ[i] = k
            total += prob * value(model.apply_counts(params, state, counts, succ))
        return total

    start = model.initial_state(params)
    try:
        if params.pilot_rollouts > 0:
            return _expand(start, model.pilot_counts(params))
        return value(start)
    except TooManyStates:
        return None
