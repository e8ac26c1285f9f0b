"""GRPO with rollouts allocated per prompt: the configuration, the math, the step API.

Rooms (``trainers.grpo.``):

- ``config``: ``GRPOConfig``, every field of a run (re-exported here, its documented path);
- ``objective``: the math as small pure functions (ragged-group advantages, log-probs, the
  clipped surrogate, KL, loss normalisations), re-exported here;
- ``trainer``: ``GRPOTrainer``, one step as an allocation episode (``begin_step`` /
  ``run_round`` / ``finish_step``), which runs its rounds through ``agents.rounds.RoundLoop``;
- ``rollouts``: a step's generated rollouts and the round result;
- ``update``: the GRPO update over a step's rollouts;
- ``step_report``: ``StepReport``, what one step reports;
- ``evaluation``: the one held-out evaluation (pass@1 / pass@k, per group);
- ``data_order``: seeds by purpose (``derive_seed``) and the epoch order of the prompts;
- ``parallel``: summing figures over data-parallel ranks.

Importing this package loads neither torch nor transformers.
"""

from __future__ import annotations

from trainers.grpo.config import (
    STD_EPS,
    BeliefPrior,
    ChatTemplate,
    Dtype,
    EngineName,
    GRPOConfig,
    LossType,
    OldLogprobs,
    ScaleRewards,
    field_help,
)
from trainers.grpo.objective import (
    clipped_surrogate,
    expand_groups,
    group_advantages,
    kl_k3,
    per_token_logps,
    token_entropy,
    token_weights,
)

__all__ = [
    "STD_EPS",
    "BeliefPrior",
    "ChatTemplate",
    "Dtype",
    "EngineName",
    "GRPOConfig",
    "LossType",
    "OldLogprobs",
    "ScaleRewards",
    "clipped_surrogate",
    "expand_groups",
    "field_help",
    "group_advantages",
    "kl_k3",
    "per_token_logps",
    "token_entropy",
    "token_weights",
]
