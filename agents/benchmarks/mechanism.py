"""What an episode's final counts give GRPO: the rollouts that carry gradient.

GRPO normalises rewards inside each question's group, so a group that is all-correct or
all-wrong has zero advantage on every rollout. Only the rollouts of *mixed* groups — at least one
success and one failure — carry a gradient. Three figures of the final state say how much of the
budget did:

| key | figure |
|---|---|
| ``gradient_rollouts`` | Σ n_i over mixed groups: gradient-carrying rollouts |
| ``informative_prompts`` | the number of mixed groups: distinct prompts that teach something |
| ``informative_frac`` | ``informative_prompts`` / B, B the questions of the episode (or pool) |

They are the simulator's side of the live ``metrics.jsonl`` figures ``gradient_rollouts``,
``informative_prompts`` and ``informative_frac`` (``adaroll bench --from-run`` compares them).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["MECHANISM", "mechanism"]

#: The mechanism figures, in the order the tables show them: key -> column title.
MECHANISM: dict[str, str] = {
    "gradient_rollouts": "gradient rollouts",
    "informative_prompts": "informative prompts",
    "informative_frac": "informative frac",
}


def mechanism(successes: ArrayLike, failures: ArrayLike) -> dict[str, NDArray[np.float64]]:
    """The mechanism figures of final counts, vectorised over leading axes.

    ``successes`` and ``failures`` have shape ``[..., B]`` (one episode, or a stack of them);
    each figure has shape ``[...]`` (a 0-d array for one episode).

    >>> m = mechanism([0, 1, 3, 2], [4, 1, 0, 3])
    >>> {k: float(v) for k, v in m.items()}
    {'gradient_rollouts': 7.0, 'informative_prompts': 2.0, 'informative_frac': 0.5}
    """
    s = np.asarray(successes, dtype=np.float64)  # [..., B]
    f = np.asarray(failures, dtype=np.float64)  # [..., B]
    if s.shape != f.shape or s.ndim == 0:
        raise ValueError(
            f"successes {s.shape} and failures {f.shape} must have one shape [..., B], B >= 1"
        )
    mixed = (s > 0) & (f > 0)  # [..., B]
    prompts = mixed.sum(axis=-1).astype(np.float64)  # [...]
    return {
        "gradient_rollouts": np.where(mixed, s + f, 0.0).sum(axis=-1),  # [...]
        "informative_prompts": prompts,
        "informative_frac": prompts / s.shape[-1],
    }
