"""Allocation inside training: the belief store, the gradient-noise probe, the live env.

Rooms (``trainers.allocation.``):

- ``beliefs``: ``BeliefStore``, each prompt's Beta belief across steps (decay, grouped fitted
  priors);
- ``gradient_noise``: the measured κ of ``snr(auto)`` (within-prompt against between-prompt
  gradient noise, on a fixed projection);
- ``live_env``: ``AdaRoll/GRPOTraining-v0``, the Gymnasium env whose episode is a real GRPO step.

A step's rounds themselves run in ``agents.rounds.RoundLoop``, the loop the simulator shares.
"""
