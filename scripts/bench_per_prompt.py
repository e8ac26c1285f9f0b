"""Allocators under training's priors (one prior per prompt) in rounds, Bayes setting, paired.

    python scripts/bench_per_prompt.py [--beliefs RUN/beliefs.json] [--episodes 200]
        [--allocators uniform,bamdp,vip,variance,knowledge_gradient] [--out rows.json]

See agents/benchmarks/per_prompt.py for the setting.
"""

from __future__ import annotations

from adaroll_env.arguments import parse_config
from agents.benchmarks.per_prompt import PerPromptConfig, main

if __name__ == "__main__":
    main(parse_config(PerPromptConfig, __doc__ or ""))
