"""A short competition inside TRL (tiny model, arithmetic): AllocatingGRPOTrainer with each
allocator and seed, held-out pass@1 before and after training.

    python scripts/trl_compete.py [--allocators uniform,bamdp] [--seeds 2] [--steps 400]
        [--workers 2] [--out runs/trl_compete]

Needs the trl extra: pip install -e ".[trl]". The logic lives in
trainers/experiments/trl_compete.py.
"""

from __future__ import annotations

from trainers.experiments.trl_compete import main, parse_args

if __name__ == "__main__":
    main(parse_args())
