"""Env steps per second of both adaroll envs at B=16 and B=512, single and make_vec(8),
beside CartPole-v1 measured in the same run.

    python scripts/bench_env.py [--seconds 2] [--sizes 16,512] [--num-envs 8]
"""

from __future__ import annotations

import argparse

from adaroll_env.throughput import EnvBenchConfig, main
from trainers.cli import add_dataclass_arguments

if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_dataclass_arguments(parser, EnvBenchConfig)
    args = parser.parse_args()
    main(EnvBenchConfig(**vars(args)))
