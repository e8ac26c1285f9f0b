"""Per-question features for learned allocators, computed from the observation alone.

The env's observation (``alpha``, ``beta``, ``successes``, ``rollouts``, ``budget_left``,
``mean``, ``std``) already holds each question's posterior; this module rescales it into a
``(B, F)`` block of per-question features plus ``C`` batch-level context values, so that one
small network can score every question with the same weights whatever B is (the features are
expressed in units of the uniform group size G = N/B, not in absolute counts).

``QuestionFeatures`` is the gymnasium ``ObservationWrapper`` that SB3 trains on; the allocator
calls ``flat_features`` on the same observation at decision time, so training and deployment
see exactly the same numbers. The observation is one flat ``Box(B·F + C)`` (questions first,
row-major, then the context) so that SB3's default ``FlattenExtractor`` passes it through
untouched and the equivariant policy reshapes it.

Per-question features (``F = 10``):

| # | feature |
|---|---|
| 0 | posterior mean |
| 1 | posterior std × 4 |
| 2 | rollouts so far / G |
| 3 | (successes + 0.5) / (rollouts + 1) |
| 4 | 1 if the question has a success |
| 5 | 1 if the question has a failure |
| 6 | room left under the cap / cap |
| 7 | log1p(alpha + beta) / 5 (posterior strength, prior included) |
| 8 | place among the questions in the same state (same posterior), by index, / their number |
| 9 | number of questions in that state / B |

Context (``C = 4``): budget left / N, this decision's size / budget left, this decision's size /
B, budget left / (8·B).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from numpy.typing import NDArray

from adaroll_env.model import AllocationParams, round_size_at

N_FEATURES = 10
N_CONTEXT = 4
#: Bumped whenever the meaning of a feature changes (saved with the model and checked on load).
FEATURES_VERSION = 2


def feature_dim(num_questions: int) -> int:
    """Length of the flat feature vector for B questions: B·F + C."""
    return num_questions * N_FEATURES + N_CONTEXT


def question_features(
    params: AllocationParams, obs: dict[str, Any]
) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """``(questions [B, F], context [C])`` of one unbatched observation under ``params``."""
    B = params.num_questions
    N = float(params.total_budget)
    G = N / B
    cap = float(params.cap)
    a = np.asarray(obs["alpha"], dtype=np.float32)
    b = np.asarray(obs["beta"], dtype=np.float32)
    s = np.asarray(obs["successes"], dtype=np.float32)
    n = np.asarray(obs["rollouts"], dtype=np.float32)
    left = float(np.asarray(obs["budget_left"]).reshape(-1)[0])
    if s.shape != (B,):
        raise ValueError(
            f"observation has {s.shape} questions but the features were built for B={B}: "
            "use the params of the env that produced the observation"
        )
    q = np.empty((B, N_FEATURES), dtype=np.float32)
    q[:, 0] = np.asarray(obs["mean"], dtype=np.float32)
    q[:, 1] = 4.0 * np.asarray(obs["std"], dtype=np.float32)
    q[:, 2] = n / G
    q[:, 3] = (s + 0.5) / (n + 1.0)
    q[:, 4] = s > 0.5
    q[:, 5] = (n - s) > 0.5
    q[:, 6] = np.maximum(cap - n, 0.0) / cap
    q[:, 7] = np.log1p(a + b) / 5.0
    # Questions in the same state (the same posterior) are alike to an equivariant network, but
    # the optimal round treats them differently (bamdp gives a few of sixteen fresh questions
    # five rollouts each and the others none): each one's place among its equals (by index,
    # over their number) and their share of the batch let a policy break such ties.
    _, inv, cnt = np.unique(np.stack([a, b], axis=1), axis=0, return_inverse=True,
                            return_counts=True)  # fmt: skip
    inv = inv.reshape(-1)
    order = np.argsort(inv, kind="stable")
    starts = np.cumsum(cnt) - cnt
    place = np.empty(B, dtype=np.float32)
    place[order] = np.arange(B) - starts[inv[order]]
    q[:, 8] = place / cnt[inv]
    q[:, 9] = cnt[inv] / B
    step = float(round_size_at(params, params.total_budget - round(left)))  # this decision
    ctx = np.array(
        [left / N, step / left if left > 0 else 0.0, step / B, left / (8.0 * B)],
        dtype=np.float32,
    )
    return q, ctx


def flat_features(params: AllocationParams, obs: dict[str, Any]) -> NDArray[np.float32]:
    """The flat feature vector ``[questions.ravel(), context]`` of one observation."""
    q, ctx = question_features(params, obs)
    return np.concatenate([q.reshape(-1), ctx])


def feature_space(num_questions: int) -> spaces.Box:
    """The observation space of ``QuestionFeatures`` for B questions."""
    # Every feature is bounded by construction except log1p(alpha + beta) / 5 (a few units at
    # most for priors up to 1e6) and the count ratios (at most B when one question takes all).
    hi = float(max(10.0, num_questions + 1.0))
    return spaces.Box(low=-hi, high=hi, shape=(feature_dim(num_questions),), dtype=np.float32)


def feature_config() -> dict[str, int]:
    """What a saved model records about its features (checked when it is loaded)."""
    return {"n_features": N_FEATURES, "n_context": N_CONTEXT, "version": FEATURES_VERSION}


class QuestionFeatures(gym.ObservationWrapper):  # type: ignore[type-arg]
    """Replace an adaroll observation by its per-question features (a flat float32 Box).

    The fixed settings (N, R, cap) come from ``env.unwrapped.params``; everything that varies
    per episode (beliefs, counts) comes from the observation itself.

    >>> import gymnasium as gym, adaroll_env
    >>> env = QuestionFeatures(gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=4))
    >>> env.observation_space.shape
    (44,)
    """

    def __init__(self, env: gym.Env) -> None:  # type: ignore[type-arg]
        super().__init__(env)
        params = getattr(env.unwrapped, "params", None)
        if not isinstance(params, AllocationParams):
            raise TypeError("QuestionFeatures wraps an adaroll env (env.unwrapped.params)")
        self.params = params
        self.observation_space = feature_space(params.num_questions)

    def observation(self, observation: dict[str, Any]) -> NDArray[np.float32]:
        """Features of one observation."""
        return flat_features(self.params, observation)

    def action_masks(self) -> NDArray[np.bool_]:
        """The wrapped env's mask (MaskablePPO reads it through the wrappers)."""
        return self.env.unwrapped.action_masks()  # type: ignore[attr-defined,no-any-return]
