"""Numbers for the learned (SB3) allocators: quality against ``bamdp`` and training throughput
(the report is ``agents.benchmarks.sb3``).

    python scripts/bench_sb3.py --episodes 2000 \
        [--baseline runs/mlp/model.zip] [--seq-model runs/seq/model.zip]
"""

from __future__ import annotations

from adaroll_env.arguments import parse_config
from agents.benchmarks.sb3 import BenchSB3Config, main

if __name__ == "__main__":
    main(parse_config(BenchSB3Config, __doc__ or ""))
