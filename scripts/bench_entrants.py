"""Wall time of a training step for each entrant of a competition (CPU, one process, meant for an
otherwise idle machine): the entrants rebuilt from the competition's config.json, timed in
alternating slices from the warm start; seconds per step and its parts, each relative to the
baseline (uniform), allocation share, gradient-carrying rollouts; the load average beside.

    python scripts/bench_entrants.py --competition results/attributed/cell_arith_qwen3/final
        [--entrants uniform,bamdp] [--slices 4] [--steps-per-slice 5] [--warmup-steps 3]
        [--out runs/bench_entrants]

The code is trainers.benchmarks.entrants; this script parses its config and calls main.
"""

from __future__ import annotations

import argparse

from adaroll_env.arguments import add_dataclass_arguments, config_from_args
from trainers.benchmarks.entrants import EntrantsBenchConfig, main

if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_dataclass_arguments(parser, EntrantsBenchConfig)
    main(config_from_args(EntrantsBenchConfig, parser.parse_args()))
