"""Wall time of a GRPO step against the number of allocation rounds (CPU, one process):
uniform, then the adaptive allocator with each number of equal rounds, timed in alternating
slices; seconds per step and its parts, allocation share, gradient-carrying rollouts.

    python scripts/bench_rounds.py [--rounds 1,2,3,4,8] [--slices 4] [--steps-per-slice 5]
        [--allocator bamdp] [--utility "snr(8)"] [--out runs/bench_rounds]

The code is trainers.benchmarks.rounds; this script parses its config and calls main.
"""

from __future__ import annotations

import argparse

from adaroll_env.arguments import add_dataclass_arguments, config_from_args
from trainers.benchmarks.rounds import RoundsBenchConfig, main

if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_dataclass_arguments(parser, RoundsBenchConfig)
    main(config_from_args(RoundsBenchConfig, parser.parse_args()))
