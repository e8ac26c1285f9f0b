"""Our GRPO trainer against TRL's GRPOTrainer on the same run (CPU): steps/s and tokens/s of
each, in alternating slices, with the ratio (ours / TRL, steps per second).

    python scripts/bench_trainer.py [--batch-size 16] [--group-size 8] [--slices 5]
        [--steps-per-slice 4] [--threads 1] [--peer trl|none] [--out runs/bench_trainer]

Needs the trl extra for the TRL side: pip install -e ".[trl]". The code is
trainers.benchmarks.trainer; this script parses its config and calls main.
"""

from __future__ import annotations

import argparse

from adaroll_env.arguments import add_dataclass_arguments, config_from_args
from trainers.benchmarks.trainer import TrainerBenchConfig, main

if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_dataclass_arguments(parser, TrainerBenchConfig)
    main(config_from_args(TrainerBenchConfig, parser.parse_args()))
