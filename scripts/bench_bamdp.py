"""The bamdp numbers: quality against every allocator and the certified bound (B=64 and
B=512), decision costs, and priors from history (a table per prior vs interpolation).

    python scripts/bench_bamdp.py [--episodes 400] [--parts quality,big,timing,priors]
"""

from __future__ import annotations

import argparse

from agents.bamdp.report import BamdpBenchConfig, main
from trainers.cli import add_dataclass_arguments

if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_dataclass_arguments(parser, BamdpBenchConfig)
    main(BamdpBenchConfig(**vars(parser.parse_args())))
