"""The allocator benchmark behind ``adaroll bench`` (the documented import path).

The code lives in the ``agents.benchmarks`` package (config, runner, statistics, tables, plots,
files); this module re-exports its public names so that ``from agents.benchmark import
BenchConfig, run_benchmark, mean_ci`` keeps working.
"""

from __future__ import annotations

from agents.benchmarks import *  # noqa: F403
from agents.benchmarks import __all__ as __all__
