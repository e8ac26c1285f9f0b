"""Our GRPO trainer against TRL's GRPOTrainer on the same run (CPU): steps/s and tokens/s of
each, in alternating slices, with the ratio (ours / TRL, steps per second).

    python scripts/bench_trainer.py [--batch-size 16] [--group-size 8] [--slices 5]
        [--steps-per-slice 4] [--threads 1] [--peer trl|none] [--out runs/bench_trainer]

Needs the trl extra for the TRL side: pip install -e ".[trl]".
"""

from __future__ import annotations

import argparse

from trainers.bench import TrainerBenchConfig, main
from trainers.cli import add_dataclass_arguments

if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_dataclass_arguments(parser, TrainerBenchConfig)
    args = parser.parse_args()
    main(TrainerBenchConfig(**vars(args)))
