"""The testbed: for each cell (task, model family, warm-start settings) the warm start, the share
of training prompts whose groups are all-correct or all-wrong there, and uniform GRPO from it,
with one table of the numbers (resumable: rerunning skips what is finished).

    python scripts/bench_testbed.py [--out runs/testbed] [--only arith-llama,...]
        [--grpo-steps 1000] [--eval-every 250] [--eval-size 200] [--eval-k 8]
        [--train-prompts 200] [--cells-file cells.json] [--table-only] [--threads 1]

Ctrl-C or SIGTERM stops the piece in progress after saving (exit 130/143); the same command
continues it. rg: cells need the rg extra: pip install -e ".[rg]". The code is
trainers.benchmarks.testbed; this script parses its config and calls main.
"""

from __future__ import annotations

import argparse
import sys

from adaroll_env.arguments import add_dataclass_arguments, config_from_args
from trainers.benchmarks.testbed import TestbedConfig, main
from trainers.run.stopping import RunInterrupted

if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_dataclass_arguments(parser, TestbedConfig)
    try:
        main(config_from_args(TestbedConfig, parser.parse_args()))
    except RunInterrupted as stop:  # the piece in progress saved a checkpoint
        print(f"bench_testbed: stopped ({stop}); run the same command again to continue")
        sys.exit(stop.exit_code)
