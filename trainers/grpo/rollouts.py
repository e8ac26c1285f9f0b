"""The rollouts of the step in progress and the allocation contract of a round.

``Rollouts`` gathers, per question of a rank's batch, the completions a step generated (ids,
engine log-probs, rewards, truncation) with the step's counters; ``Rollouts.add`` records one
``Generation``. ``check_counts`` is the contract a round's allocation must meet (integers, the
round's size, the caps). Collation for the update is ``trainers.models.collate``'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from adaroll_env import model as am

#: a reward at or above this counts as a success for the beliefs and the allocation state.
SUCCESS_THRESHOLD = 0.5


@dataclass
class RoundResult:
    """What one ``run_round`` produced (arrays are per question of this rank's batch)."""

    counts: NDArray[np.int64]
    successes: NDArray[np.int64]
    utility_gain: float
    done: bool
    observation: dict[str, NDArray[np.float32]]
    seconds: float


class Rollouts:
    """The completions of the step in progress, per question of this rank's batch."""

    def __init__(self, num_questions: int) -> None:
        self.completion_ids: list[list[list[int]]] = [[] for _ in range(num_questions)]
        self.logprobs: list[list[NDArray[np.float32]]] = [[] for _ in range(num_questions)]
        self.rewards: list[list[float]] = [[] for _ in range(num_questions)]
        self.truncated: list[list[bool]] = [[] for _ in range(num_questions)]
        self.errors = 0
        self.tokens = 0
        self.gen_seconds = 0.0
        self.alloc_seconds = 0.0
        self.rounds = 0

    def add(self, gen: Any, rewards: NDArray[np.float64], errors: int) -> NDArray[np.int64]:
        """Record one round's ``Generation`` and its rewards; successes per question."""
        successes = np.zeros(len(self.rewards), dtype=np.int64)
        for j, q in enumerate(gen.prompt_index.tolist()):
            self.completion_ids[q].append(gen.completion_ids[j])
            self.logprobs[q].append(gen.logprobs[j])
            self.rewards[q].append(float(rewards[j]))
            self.truncated[q].append(bool(gen.truncated[j]))
            successes[q] += int(rewards[j] >= SUCCESS_THRESHOLD)
        self.errors += errors
        self.tokens += gen.num_tokens
        self.gen_seconds += gen.seconds
        self.rounds += 1
        return successes


def check_counts(
    p: am.AllocationParams,
    s: am.AllocationState,
    counts: Any,
    *,
    name: str = "passed to run_round()",
) -> NDArray[np.int64]:
    """``counts`` as int64 if it is a valid allocation of the next round, else
    ``agents.AllocationError`` (a ``ValueError``) naming ``name``, the rule and the numbers: the
    one allocation contract of adaroll (``agents.check_allocation``) — one non-negative integer
    per question, summing to the round's size ``min(round size, budget left)``, within the caps.
    """
    from agents.contract import check_allocation

    return check_allocation(
        name, counts, round_size=am.next_round_size(p, s), spent=s.rollouts, caps=p.cap
    )
