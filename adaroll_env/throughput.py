"""Kept import path of the env throughput benchmark; the code lives in
``adaroll_env.benchmarks.throughput``."""

from __future__ import annotations

from adaroll_env.benchmarks.throughput import (
    EnvBenchConfig,
    main,
    measure,
    single_steps_per_second,
    vector_steps_per_second,
)

__all__ = [
    "EnvBenchConfig",
    "main",
    "measure",
    "single_steps_per_second",
    "vector_steps_per_second",
]
