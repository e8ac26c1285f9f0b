"""trainers: the GRPO trainer shared by every allocator, and the ``adaroll`` command line.

Importing this package imports nothing heavy. Its subpackages:

- ``trainers.grpo``: ``GRPOConfig``, the GRPO math, ``GRPOTrainer`` (the step API), its update,
  rollouts, step report, held-out evaluation and data order;
- ``trainers.allocation``: the belief store, the gradient-noise probe, the live env
  ``AdaRoll/GRPOTraining-v0`` (a step's rounds run in ``agents.rounds.RoundLoop``);
- ``trainers.run``: ``adaroll grpo``'s loop, callbacks, checkpoints, stopping, run directories;
- ``trainers.models``: ``load_policy``, the tiny model and its warm start, prompts, paths;
- ``trainers.tasks``: tasks and their verifiers; ``trainers.engines``: generation (HF, vLLM);
- ``trainers.trl``: ``AllocatingGRPOTrainer``, the TRL subclass;
- ``trainers.experiments``: ``adaroll compete``, its statistics and plots, the TRL competition,
  sim-to-real (``adaroll bench --from-run``);
- ``trainers.benchmarks``: speed against TRL and vLLM, rounds, TRL overhead.

The command line's dispatcher is ``trainers.cli``. Modules of the flat layout before version 4
(``trainers.trainer``, ``trainers.config``, ...) still import, with a ``DeprecationWarning``
naming their new path (``MOVED``), for one release.
"""

from __future__ import annotations

from adaroll_env.moved import alias_modules

#: old module path -> new one (version 4's move into subpackages)
MOVED = {
    "trainers.beliefs": "trainers.allocation.beliefs",
    "trainers.callbacks": "trainers.run.callbacks",
    "trainers.checkpoints": "trainers.run.checkpoints",
    "trainers.collate": "trainers.models.collate",
    "trainers.compete": "trainers.experiments.compete",
    "trainers.compete_entrants": "trainers.experiments.entrants",
    "trainers.compete_plots": "trainers.experiments.plots",
    "trainers.compete_stats": "trainers.experiments.statistics",
    "trainers.config": "trainers.grpo.config",
    "trainers.dropout": "trainers.models.dropout",
    "trainers.evaluation": "trainers.grpo.evaluation",
    "trainers.gradient_noise": "trainers.allocation.gradient_noise",
    "trainers.live_env": "trainers.allocation.live_env",
    "trainers.paths": "trainers.models.paths",
    "trainers.pretrain": "trainers.models.warm_start",
    "trainers.pretrain_eval": "trainers.models.warm_start_report",
    "trainers.prompts": "trainers.models.prompts",
    "trainers.report": "trainers.grpo.step_report",
    "trainers.rollouts": "trainers.grpo.rollouts",
    "trainers.seeding": "trainers.grpo.data_order",
    "trainers.stopping": "trainers.run.stopping",
    "trainers.tiny": "trainers.models.tiny",
    "trainers.trainer": "trainers.grpo.trainer",
    "trainers.trl_bench": "trainers.benchmarks.trl_overhead",
    "trainers.trl_compete": "trainers.experiments.trl_compete",
    "trainers.trl_parts": "trainers.trl.adapters",
    "trainers.update": "trainers.grpo.update",
}

alias_modules(MOVED)
