"""The curve policy: a learned allocator that predicts value curves and splits a round exactly.

The equivariant policy (``agents.sb3.policy``) gives each question one weight and the env splits
the round in proportion. A weight has to carry the round's *price*, a quantity of the whole batch,
in a per-question number, and clones of ``bamdp`` made that way keep 92-95 % of its gain. The
curve policy does what ``bamdp`` does instead: the same permutation-equivariant network (question
embedding, batch mean, context) gives each question ``max_take`` *marginal values*, the predicted
gain of its m-th rollout of the round (m = 1..``max_take``); the round is the counts that maximise
the summed predicted curves under Σ = R (``agents.bamdp.rounds.split_curves``: an exact
multiple-choice knapsack), each question within its room. The room is ``bamdp``'s rule, read from
the features alone: at most the round R, the question's capacity under the cap, and
``max_take`` (unless the round cannot be spent so; past ``max_take`` the curve is flat).

The action is the counts as weights, a = 2·c/R − 1, which the env's split (proportional, largest
remainder) decodes to exactly c; so ``model.predict(features, deterministic=True)`` is the
allocator's decision, in SB3 as in ``sb3:<zip>``.

**Fitted by cloning only** (``adaroll train-sb3 --policy curves --clone bamdp``, with DAgger;
``agents.sb3.imitation``): the network is fitted to ``bamdp``'s value curves
(``round_value_curves``) by squared error on their marginals. PPO cannot train it: its action is
an argmax over integer splits, with no gradient to the network and no density for a policy
gradient; ``forward`` and ``evaluate_actions`` (what PPO and A2C call) raise. The policy is
deterministic.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
from numpy.typing import NDArray
from stable_baselines3.common.policies import ActorCriticPolicy
from torch import nn

from agents.bamdp.rounds import split_curves
from agents.sb3.features import N_FEATURES
from agents.sb3.policy import EquivariantActorCriticPolicy, QuestionScorer, num_questions_of

#: marginal values a question's curve has (m = 1..16: more than ``bamdp`` gives one question in
#: a round of the shipped settings, where it gives at most 9)
MAX_TAKE = 16
#: what the curve policy refuses PPO and A2C with
NOT_TRAINABLE = (
    "the curve policy is fitted by cloning only ('adaroll train-sb3 --policy curves --clone "
    "bamdp'): its action is an exact split of the predicted curves, with no gradient and no "
    "density for a policy gradient; train the 'equivariant' policy with PPO instead"
)


class CurveScorer(QuestionScorer):
    """``QuestionScorer`` whose per-question head gives ``max_take`` marginal values."""

    def __init__(self, num_questions: int, *, hidden: int = 64, max_take: int = MAX_TAKE) -> None:
        super().__init__(num_questions, hidden=hidden)
        self.max_take = max_take
        self.score = nn.Sequential(
            nn.Linear(2 * hidden + self.n_context, hidden), nn.Tanh(), nn.Linear(hidden, max_take)
        )

    def marginals(self, features: th.Tensor) -> th.Tensor:
        """Predicted marginal values ``[batch, B, max_take]`` (in the units they were fitted)."""
        e, pooled, ctx = self._embed(features)
        B = e.shape[1]
        g = th.cat([pooled, ctx], dim=-1).unsqueeze(1).expand(-1, B, -1)
        return self.score(th.cat([e, g], dim=-1))  # type: ignore[no-any-return]

    def scores(self, features: th.Tensor) -> th.Tensor:
        """The first rollout's marginal value ``[batch, B]`` (a per-question score)."""
        return self.marginals(features)[..., 0]


def cap_at(cap_rule: tuple[int | None, float, int], num_questions: int) -> int:
    """The cap of one question at B = ``num_questions`` (``AllocationParams.cap``): ``max_group``,
    else N − pilot·(B − 1) with N = rollouts per question × B."""
    max_group, per_question, pilot = cap_rule
    if max_group is not None:
        return int(max_group)
    return round(per_question * num_questions) - int(pilot) * (num_questions - 1)


def room_and_round(
    features: NDArray[np.float32], num_questions: int, cap: int
) -> tuple[NDArray[np.int64], int]:
    """``(capacity [B], R)`` read from one flat feature vector (``agents.sb3.features``): the
    room under the cap is feature 6 × cap, this decision's size is context 2 × B."""
    B = num_questions
    q = features[: B * N_FEATURES].reshape(B, N_FEATURES)
    capacity = np.rint(q[:, 6].astype(np.float64) * cap).astype(np.int64)
    R = int(np.rint(float(features[B * N_FEATURES + 2]) * B))
    return capacity, R


def split_predicted(
    marginals: NDArray[np.float64], capacity: NDArray[np.int64], R: int
) -> NDArray[np.int64]:
    """The round's counts: the curves (0 at m = 0, the marginals summed, flat past their end)
    split exactly under Σ = R, each question within min(capacity, R, max_take) (its capacity
    and R alone where that cannot spend the round)."""
    B, M = marginals.shape
    top = np.minimum(np.maximum(capacity, 0), R)
    inside = np.minimum(top, M)
    room = inside if int(inside.sum()) >= R else top
    width = int(room.max(initial=0))
    curves = np.zeros((B, width + 1))
    k = min(width, M)
    curves[:, 1 : k + 1] = np.cumsum(marginals[:, :k], axis=1)
    if width > M:
        curves[:, M + 1 :] = curves[:, M : M + 1]
    curves[np.arange(width + 1)[None, :] > room[:, None]] = -np.inf
    return split_curves(curves, R)


def counts_action(counts: NDArray[np.int64], R: int) -> NDArray[np.float32]:
    """Weights a = 2·c/R − 1 that the env's split decodes to exactly ``counts`` (Σ = R)."""
    return (2.0 * counts / max(R, 1) - 1.0).astype(np.float32)


class EquivariantCurvePolicy(EquivariantActorCriticPolicy):
    """SB3 policy of the curve allocator (module doc): ``predict`` gives the exact split of the
    predicted curves as weights; fitted by cloning only.

    ``policy_kwargs``: ``hidden`` (width; 64), ``max_take`` (marginals per question; 16) and
    ``cap_rule`` ``(max_group, rollouts per question, pilot)`` of the setting it was built for,
    from which the cap at any B follows (``cap_at``).
    """

    def __init__(
        self,
        *args: Any,
        max_take: int = MAX_TAKE,
        cap_rule: tuple[int | None, float, int] = (None, 8.0, 0),
        **kwargs: Any,
    ) -> None:
        self.max_take = int(max_take)
        self.cap_rule = (
            None if cap_rule[0] is None else int(cap_rule[0]),
            float(cap_rule[1]),
            int(cap_rule[2]),
        )
        super().__init__(*args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = CurveScorer(
            num_questions_of(self.action_space), hidden=self.hidden, max_take=self.max_take
        )

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data["max_take"] = self.max_take
        data["cap_rule"] = self.cap_rule
        return data

    def marginals(self, features: th.Tensor) -> th.Tensor:
        """Predicted marginal values ``[batch, B, max_take]``."""
        return self.mlp_extractor.marginals(features)  # type: ignore[operator,no-any-return]

    def decide_many(self, features: NDArray[np.float32]) -> NDArray[np.int64]:
        """Counts ``[n, B]`` of n decisions from their flat features ``[n, B·F + C]``: one
        forward pass, then each decision's split."""
        B = self.mlp_extractor.num_questions
        rows = np.asarray(features, dtype=np.float32).reshape(-1, features.shape[-1])
        with th.no_grad():
            d = self.marginals(th.as_tensor(rows, device=self.device)).cpu().numpy()
        cap = cap_at(self.cap_rule, B)
        out = np.empty((rows.shape[0], B), dtype=np.int64)
        for k, x in enumerate(rows):
            capacity, R = room_and_round(x, B, cap)
            out[k] = split_predicted(d[k].astype(np.float64), capacity, R)
        return out

    def decide(self, features: NDArray[np.float32]) -> NDArray[np.int64]:
        """Counts of one decision from its flat features ``[B·F + C]``."""
        return self.decide_many(features[None])[0]

    def _predict(self, observation: Any, deterministic: bool = False) -> th.Tensor:
        """The decoded weights of each observation in the batch (deterministic either way)."""
        counts = self.decide_many(observation.detach().cpu().numpy())
        weights = np.stack([counts_action(c, int(c.sum())) for c in counts])
        return th.as_tensor(weights, device=self.device)

    def forward(self, obs: th.Tensor, deterministic: bool = False) -> Any:
        """Refused: the curve policy is not trained by a policy gradient (module doc)."""
        raise ValueError(NOT_TRAINABLE)

    def evaluate_actions(self, obs: Any, actions: th.Tensor) -> Any:
        """Refused: the curve policy is not trained by a policy gradient (module doc)."""
        raise ValueError(NOT_TRAINABLE)


def is_curve_policy(policy: ActorCriticPolicy) -> bool:
    """Whether ``policy`` is the curve policy (decides by ``decide``, fitted to curves)."""
    return isinstance(policy, EquivariantCurvePolicy)
