"""A permutation-equivariant SB3 policy: one small network scores every question.

Question i is scored by ``φ([e_i, mean_j e_j, c])`` where ``e_i = ψ(x_i)`` embeds the question's
own features ``x_i`` (``agents.sb3.features``) and ``c`` is the batch context. The scores are

* the categorical logits in the sequential env (``Discrete(B)``; MaskablePPO masks them),
* the Gaussian action means in the rounds env (``Box(B)``; one shared, state-independent
  log-std), which the env decodes as weights ``(a + 1) / 2``,
* the Q-values for DQN.

The value head reads the pooled embedding and the context and predicts the value per question,
multiplied by B. No weight depends on B, so a model trained at one B loads at another
(``agents.sb3.allocator.load_sb3_allocator`` rebuilds the spaces and loads the state dict), and
permuting the questions permutes the scores exactly.

SB3 flattens what a features extractor returns, so the equivariance lives in the
``mlp_extractor`` (whose actor latent *is* the score vector) and the action head is the identity.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.distributions import DiagGaussianDistribution
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.type_aliases import Schedule
from stable_baselines3.dqn.policies import DQNPolicy, QNetwork
from torch import nn

from agents.sb3.features import N_CONTEXT, N_FEATURES


def num_questions_of(action_space: gym.spaces.Space[Any]) -> int:
    """B from the action space (``Discrete(B)`` or ``Box(B)``)."""
    if isinstance(action_space, gym.spaces.Discrete):
        return int(action_space.n)
    if isinstance(action_space, gym.spaces.Box) and len(action_space.shape) == 1:
        return int(action_space.shape[0])
    raise TypeError(
        f"the equivariant policy needs Discrete(B) or Box(B) actions, got {action_space}"
    )


class QuestionScorer(nn.Module):
    """Scores ``[batch, B]`` and a pooled value latent ``[batch, H]`` from flat features.

    Input: ``[batch, B·F + C]`` as laid out by ``agents.sb3.features.flat_features``.
    """

    def __init__(
        self,
        num_questions: int,
        *,
        n_features: int = N_FEATURES,
        n_context: int = N_CONTEXT,
        hidden: int = 64,
    ) -> None:
        super().__init__()
        self.num_questions = num_questions
        self.n_features = n_features
        self.n_context = n_context
        self.embed = nn.Sequential(
            nn.Linear(n_features, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh()
        )
        self.score = nn.Sequential(
            nn.Linear(2 * hidden + n_context, hidden), nn.Tanh(), nn.Linear(hidden, 1)
        )
        self.value = nn.Sequential(nn.Linear(hidden + n_context, hidden), nn.Tanh())
        # What ActorCriticPolicy reads.
        self.latent_dim_pi = num_questions
        self.latent_dim_vf = hidden

    def split(self, features: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """``(questions [batch, B, F], context [batch, C])``."""
        B, F = self.num_questions, self.n_features
        return features[:, : B * F].reshape(-1, B, F), features[:, B * F :]

    def _embed(self, features: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        q, ctx = self.split(features)
        e = self.embed(q)  # [batch, B, H]
        return e, e.mean(dim=1), ctx  # [batch, B, H], [batch, H], [batch, C]

    def scores(self, features: th.Tensor) -> th.Tensor:
        """One score per question: ``[batch, B]``."""
        e, pooled, ctx = self._embed(features)
        B = e.shape[1]
        ctx_b = th.cat([pooled, ctx], dim=-1).unsqueeze(1).expand(-1, B, -1)  # [batch, B, H+C]
        return self.score(th.cat([e, ctx_b], dim=-1)).squeeze(-1)  # [batch, B]

    def value_latent(self, features: th.Tensor) -> th.Tensor:
        """Pooled latent for the value head: ``[batch, H]``."""
        _, pooled, ctx = self._embed(features)
        return self.value(th.cat([pooled, ctx], dim=-1))  # type: ignore[no-any-return]

    def forward(self, features: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """``(scores [batch, B], value latent [batch, H])``."""
        e, pooled, ctx = self._embed(features)
        B = e.shape[1]
        g = th.cat([pooled, ctx], dim=-1)  # [batch, H+C]
        s = self.score(th.cat([e, g.unsqueeze(1).expand(-1, B, -1)], dim=-1)).squeeze(-1)
        return s, self.value(g)

    def forward_actor(self, features: th.Tensor) -> th.Tensor:
        """Scores (the actor latent)."""
        return self.scores(features)

    def forward_critic(self, features: th.Tensor) -> th.Tensor:
        """Value latent."""
        return self.value_latent(features)


class ScaledValue(nn.Module):
    """Value = B × a linear read-out of the pooled latent (the return grows with B)."""

    def __init__(self, hidden: int, num_questions: int) -> None:
        super().__init__()
        self.linear = nn.Linear(hidden, 1)
        self.num_questions = num_questions

    def forward(self, latent: th.Tensor) -> th.Tensor:
        """``[batch, 1]`` values."""
        return self.linear(latent) * float(self.num_questions)  # type: ignore[no-any-return]


def _finish_build(policy: Any, lr_schedule: Schedule) -> None:
    """After SB3's ``_build``: identity action head, B-scaled value head, one scalar log-std
    (rounds env), small initial scores, and the optimizer over the final parameters."""
    B = num_questions_of(policy.action_space)
    policy.action_net = nn.Identity()
    policy.value_net = ScaledValue(policy.hidden, B)
    if isinstance(policy.action_dist, DiagGaussianDistribution):
        # One scalar log-std for every question (broadcast by the distribution).
        policy.log_std = nn.Parameter(th.full((1,), float(policy.log_std_init)))
    # Small last score layer: initial scores near 0 (uniform logits / even weights).
    last: nn.Linear = policy.mlp_extractor.score[-1]
    nn.init.orthogonal_(last.weight, gain=0.01)
    nn.init.zeros_(last.bias)
    nn.init.orthogonal_(policy.value_net.linear.weight, gain=1.0)
    nn.init.zeros_(policy.value_net.linear.bias)
    policy.optimizer = policy.optimizer_class(
        policy.parameters(), lr=lr_schedule(1), **policy.optimizer_kwargs
    )


class _EquivariantHead:
    """What both actor-critic policies share: the per-question scorer as the extractor, the
    identity action head, and ``hidden`` saved with the model."""

    hidden: int
    action_space: Any

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = QuestionScorer(num_questions_of(self.action_space), hidden=self.hidden)

    def _build(self, lr_schedule: Schedule) -> None:
        super()._build(lr_schedule)  # type: ignore[misc]
        _finish_build(self, lr_schedule)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data: dict[str, Any] = super()._get_constructor_parameters()  # type: ignore[misc]
        data["hidden"] = self.hidden
        return data


class EquivariantActorCriticPolicy(_EquivariantHead, ActorCriticPolicy):  # type: ignore[misc]
    """PPO/A2C policy whose logits or action means are per-question scores.

    ``policy_kwargs``: ``hidden`` (width of ψ, φ and the value head; 64) and the usual
    ``log_std_init`` (rounds env), ``ortho_init``, optimizer settings. ``net_arch`` is unused.
    """

    def __init__(self, *args: Any, hidden: int = 64, **kwargs: Any) -> None:
        self.hidden = hidden
        kwargs.setdefault("share_features_extractor", True)
        super().__init__(*args, **kwargs)


class EquivariantMaskablePolicy(_EquivariantHead, MaskableActorCriticPolicy):  # type: ignore[misc]
    """MaskablePPO policy (sequential env): masked per-question logits."""

    def __init__(self, *args: Any, hidden: int = 64, **kwargs: Any) -> None:
        self.hidden = hidden
        super().__init__(*args, **kwargs)


class _ScoreQ(nn.Module):
    def __init__(self, scorer: QuestionScorer) -> None:
        super().__init__()
        self.scorer = scorer

    def forward(self, features: th.Tensor) -> th.Tensor:
        return self.scorer.scores(features)


class EquivariantDQNPolicy(DQNPolicy):
    """DQN policy whose Q-values are per-question scores (sequential env)."""

    def __init__(self, *args: Any, hidden: int = 64, **kwargs: Any) -> None:
        self.hidden = hidden
        super().__init__(*args, **kwargs)

    def make_q_net(self) -> QNetwork:
        """A ``QNetwork`` whose head is the shared question scorer."""
        net = super().make_q_net()
        B = num_questions_of(self.action_space)
        net.q_net = _ScoreQ(  # type: ignore[assignment]
            QuestionScorer(B, hidden=self.hidden)
        ).to(self.device)
        return net

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data["hidden"] = self.hidden
        return data


def policy_class(algo: str, kind: str) -> Any:
    """The policy for ``algo`` and ``kind`` (``"equivariant"``, ``"curves"`` or ``"mlp"``)."""
    if kind == "mlp":
        return "MlpPolicy"
    if kind == "curves":
        if algo not in ("ppo", "a2c"):
            raise ValueError(
                f"the curve policy is a Box-action actor-critic policy (ppo or a2c), got {algo!r}"
            )
        from agents.sb3.curves import EquivariantCurvePolicy

        return EquivariantCurvePolicy
    if algo == "maskable_ppo":
        return EquivariantMaskablePolicy
    if algo == "dqn":
        return EquivariantDQNPolicy
    return EquivariantActorCriticPolicy


def permutation_check(scorer: QuestionScorer, features: np.ndarray, perm: np.ndarray) -> float:
    """Largest |scores(permuted) − permuted scores| (0 up to float error): a debugging aid."""
    B, F = scorer.num_questions, scorer.n_features
    x = th.as_tensor(features, dtype=th.float32).reshape(1, -1)
    q, ctx = scorer.split(x)
    xp = th.cat([q[:, perm].reshape(1, B * F), ctx], dim=-1)
    with th.no_grad():
        return float((scorer.scores(xp) - scorer.scores(x)[:, perm]).abs().max())
