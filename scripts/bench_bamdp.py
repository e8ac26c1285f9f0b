"""The bamdp numbers: quality against every allocator and the certified bound (B=64 and
B=512), decision costs, and priors from history (a table per prior vs interpolation).

    python scripts/bench_bamdp.py [--episodes 400] [--parts quality,big,timing,priors]
"""

from __future__ import annotations

from adaroll_env.arguments import parse_config
from agents.benchmarks.bamdp import BamdpBenchConfig, main

if __name__ == "__main__":
    main(parse_config(BamdpBenchConfig, __doc__ or ""))
