"""Reproduce the shipped ``sb3:pretrained`` allocator (the logic is ``agents.sb3.reproduce``).

python scripts/train_pretrained.py [--seed 0] [--dest runs/candidate.zip]
"""

from __future__ import annotations

from adaroll_env.arguments import parse_config
from agents.sb3.reproduce import ReproduceConfig, main

if __name__ == "__main__":
    main(parse_config(ReproduceConfig, __doc__ or ""))
