"""Generation tokens/s of HFEngine and VLLMEngine on the same model, prompts and group sizes,
and a GRPO step's time with each, in one run (alternating slices, medians); a rich table and
a JSON file. Needs vLLM: `make bench-engines` runs it in .venv-vllm. The code is
trainers.benchmarks.engines; this script parses its config and calls main.

    python scripts/bench_engines.py [--prompts 64] [--rows ragged,4,16] [--grpo-steps 6]
"""

from __future__ import annotations

import argparse

from adaroll_env.arguments import add_dataclass_arguments, config_from_args
from trainers.benchmarks.engines import EngineBenchConfig, main

if __name__ == "__main__":  # vLLM's engine may start processes: keep the guard
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_dataclass_arguments(parser, EngineBenchConfig)
    main(config_from_args(EngineBenchConfig, parser.parse_args()))
