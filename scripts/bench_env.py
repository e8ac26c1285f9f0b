"""Env steps per second of both adaroll envs at B=16 and B=512, single and make_vec(8),
beside CartPole-v1 measured in the same run.

    python scripts/bench_env.py [--seconds 2] [--sizes 16,512] [--num-envs 8]
"""

from __future__ import annotations

from adaroll_env.arguments import parse_config
from adaroll_env.benchmarks.throughput import EnvBenchConfig, main

if __name__ == "__main__":
    main(parse_config(EnvBenchConfig, __doc__ or ""))
