"""trainers: the GRPO trainer shared by every allocator, and the ``adaroll`` command line.

Importing this package imports nothing heavy. Where things live: ``trainers.grpo`` (the math,
and ``GRPOConfig`` re-exported from ``trainers.config``), ``trainers.trainer`` (``GRPOTrainer``,
the step API), ``trainers.run`` (``adaroll grpo``), ``trainers.compete`` (``adaroll compete``),
``trainers.live_env`` (``AdaRoll/GRPOTraining-v0``), ``trainers.benchmarks`` (speed against TRL
and vLLM); the command line's dispatcher is ``trainers.cli``.
"""
