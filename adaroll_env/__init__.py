"""adaroll_env: Gymnasium environments for rollout allocation in GRPO post-training.

Importing this package registers the environment ids (Gymnasium 1.x has no plugin entry
points)::

    import gymnasium as gym
    import adaroll_env

    gym.register_envs(adaroll_env)  # a no-op that keeps linters from dropping the import
    env = gym.make("AdaRoll/BetaBernoulli-v0")
    # or, without the import: gym.make("adaroll_env:AdaRoll/BetaBernoulli-v0")
"""

from __future__ import annotations

import gymnasium as gym

from adaroll_env.model import (
    AllocationParams,
    AllocationState,
    apply,
    apply_counts,
    budget_left,
    decode_action,
    encode_counts,
    initial_state,
    observe,
    predictive,
    split_round,
    utility_value,
)
from adaroll_env.priors import PROFILES, fit_beta, list_profiles, resolve_difficulty
from adaroll_env.schedules import parse_round_schedule
from adaroll_env.utilities import (
    expected_utility,
    list_utilities,
    list_utility_families,
    register_utility,
    register_utility_family,
)

__version__ = "0.1.0"

ENV_IDS: tuple[str, ...] = ("AdaRoll/BetaBernoulli-v0", "AdaRoll/BetaBernoulliRounds-v0")

_ENTRY_POINTS = {
    "AdaRoll/BetaBernoulli-v0": "adaroll_env.envs:BetaBernoulliEnv",
    "AdaRoll/BetaBernoulliRounds-v0": "adaroll_env.envs:BetaBernoulliRoundsEnv",
}

for _env_id, _entry in _ENTRY_POINTS.items():
    if _env_id not in gym.registry:
        gym.register(id=_env_id, entry_point=_entry)

#: The live env: a real GRPO trainer makes the rollouts. Registered by entry-point string, so
#: importing adaroll_env never imports the trainer (torch, transformers); needs the ``train`` extra.
LIVE_ENV_ID = "AdaRoll/GRPOTraining-v0"
if LIVE_ENV_ID not in gym.registry:
    gym.register(
        id=LIVE_ENV_ID,
        entry_point="trainers.allocation.live_env:GRPOTrainingEnv",
        nondeterministic=True,
    )

__all__ = [
    "ENV_IDS",
    "LIVE_ENV_ID",
    "PROFILES",
    "AllocationParams",
    "AllocationState",
    "apply",
    "apply_counts",
    "budget_left",
    "decode_action",
    "encode_counts",
    "expected_utility",
    "fit_beta",
    "initial_state",
    "list_profiles",
    "list_utilities",
    "list_utility_families",
    "observe",
    "parse_round_schedule",
    "predictive",
    "register_utility",
    "register_utility_family",
    "resolve_difficulty",
    "split_round",
    "utility_value",
]
