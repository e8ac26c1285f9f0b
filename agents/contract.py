"""The allocation contract, enforced in one place.

A decision of an allocator is a vector of counts, one per question. It must be

1. a non-negative **integer** vector of shape [B] (an integer dtype: a float array, even of whole
   numbers, is refused, so that no rounding ever happens silently);
2. summing to the decision's round, min(R, budget left);
3. within the caps: no question may end above its cap (rollouts already spent + asked ≤ cap).

``check_allocation`` checks the three rules and raises ``AllocationError`` (a ``ValueError``)
naming the allocator, the rule and the numbers. Every path that runs an allocator calls it:
``BaseAllocator.act`` (so env stepping, ``predict`` for SB3, ``adaroll bench`` and the trainer's
use of ``act``), and ``check_allocator``; nothing repairs a broken allocation.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["AllocationError", "check_allocation"]


class AllocationError(ValueError):
    """An allocator's decision broke the allocation contract (the message says how)."""


def check_allocation(
    name: str,
    counts: ArrayLike,
    *,
    round_size: int,
    spent: ArrayLike,
    caps: int | ArrayLike,
) -> NDArray[np.int64]:
    """Return ``counts`` as int64 if they honour the allocation contract, else raise.

    Args:
        name: the allocator, as the user knows it (spec or class), named in the error.
        counts: the decision, one count per question.
        round_size: the rollouts this decision must hand out, min(R, budget left) (with a round
            schedule, its next round: ``adaroll_env.model.next_round_size``).
        spent: rollouts each question already has, shape [B].
        caps: the most rollouts a question may end with (one int for all, or shape [B]).

    Raises:
        AllocationError: naming the allocator, the rule broken and the numbers.
    """
    done = np.asarray(spent, dtype=np.int64).reshape(-1)
    B = done.shape[0]
    arr = np.asarray(counts)

    def fail(rule: str) -> AllocationError:
        return AllocationError(f"allocator {name} broke the allocation contract: {rule}")

    if arr.shape != (B,):
        raise fail(f"counts have shape {arr.shape}, expected ({B},): one count per question")
    if arr.dtype.kind not in "iu":
        raise fail(
            f"counts {arr.tolist()} have dtype {arr.dtype}, expected integer counts: return an "
            "integer array (e.g. np.int64), rounded by the allocator itself"
        )
    c = arr.astype(np.int64)
    if np.any(c < 0):
        i = int(np.flatnonzero(c < 0)[0])
        raise fail(f"counts {c.tolist()} are negative at question {i} ({int(c[i])}): need >= 0")
    total = int(c.sum())
    if total != int(round_size):
        seq = (
            " (a decision of one rollout, as in sequential mode, gives exactly one rollout to "
            "one question)"
            if int(round_size) == 1
            else ""
        )
        raise fail(
            f"counts {c.tolist()} handed out {total} rollouts, but this decision must hand out "
            f"min(R, budget left) = {int(round_size)}{seq}"
        )
    cap = np.broadcast_to(np.asarray(caps, dtype=np.int64), (B,))
    over = done + c > cap
    if np.any(over):
        i = int(np.flatnonzero(over)[0])
        raise fail(
            f"question {i} has already spent {int(done[i])} rollouts and is asked for "
            f"{int(c[i])} more, beyond its cap of {int(cap[i])} (room for "
            f"{max(0, int(cap[i] - done[i]))})"
        )
    return c
