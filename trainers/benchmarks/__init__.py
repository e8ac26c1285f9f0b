"""The trainers layer's benchmarks, each a config dataclass and a ``main(cfg)``.

* ``trainers.benchmarks.trainer``: our ``GRPOTrainer`` against TRL's on the same run (steps/s,
  tokens/s; ``scripts/bench_trainer.py``), with TRL's side in ``trainers.benchmarks.trl_peer``;
* ``trainers.benchmarks.rounds``: wall time of a step against the number of allocation rounds
  (``scripts/bench_rounds.py``);
* ``trainers.benchmarks.engines``: the HF engine against vLLM (generation tokens/s, a GRPO step,
  log-prob agreement; ``scripts/bench_engines.py``).

The same scheme as ``adaroll_env.benchmarks`` and ``agents.benchmarks``. Importing this package
imports nothing heavy.
"""
