"""How bamdp's gap to the rounds-aware bound splits, exactly, on small instances: the bound's own
slack (bound − V*) against the rounds-relaxation policy's shortfall (V* − its value).

    python scripts/bench_bound_slack.py [--bs 2,3] [--utilities "snr(4),snr(16)"]
        [--schedules 2,0.75+0.25] [--prior 0.3,0.3] [--out runs/bench_bound_slack]

The logic lives in agents/benchmarks/bound_slack.py.
"""

from __future__ import annotations

from adaroll_env.arguments import parse_config
from agents.benchmarks.bound_slack import BoundSlackConfig, main

if __name__ == "__main__":
    main(parse_config(BoundSlackConfig, __doc__ or ""))
