"""Learned allocators: stable-baselines3 policies trained in the adaroll envs.

Importing this package stays light (no torch, no SB3): the modules that need them are imported
when used.

* ``agents.sb3.features`` — the per-question feature wrapper ``QuestionFeatures``.
* ``agents.sb3.policy`` — the permutation-equivariant policies (PPO/A2C, MaskablePPO, DQN).
* ``agents.sb3.train`` — ``adaroll train-sb3`` (``TrainConfig``, ``main``).
* ``agents.sb3.reproduce`` — rebuild ``sb3:pretrained`` (behind ``scripts/train_pretrained.py``).
* ``agents.sb3.allocator`` — ``SB3Allocator`` and ``load_sb3_allocator``, behind the
  ``sb3:<path>`` allocator spec (``sb3:pretrained`` is the zip shipped in ``pretrained/``).

SB3 zips are pickles: load only files you trust.
"""

from __future__ import annotations

from pathlib import Path

#: The shipped model behind ``sb3:pretrained`` (rounds env, rlvr, B=16, G=8, R=16).
PRETRAINED = Path(__file__).parent / "pretrained" / "rounds_rlvr_b16.zip"
#: Where the rl-zoo style hyperparameter files live (one per algorithm, keyed by env id).
HYPERPARAMS = Path(__file__).parent / "hyperparams"

__all__ = ["HYPERPARAMS", "PRETRAINED"]
