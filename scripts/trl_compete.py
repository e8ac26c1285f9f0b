"""Replaced by ``adaroll compete --trainer trl``; kept so that its command lines still run.

    python scripts/trl_compete.py [--allocators uniform,bamdp] [--seeds 2] [--steps 400]
        [--workers 2] [--out runs/trl_compete]

prints the equivalent ``adaroll compete --trainer trl`` command and runs it: resumable run
directories under OUT/runs/<entrant>/seed<k>/, held-out pass@1 against the rollouts generated,
and the paired tables (OUT/table.md). Needs the trl extra: pip install -e ".[trl]"; the entrant
``cgrpo`` needs the cgrpo extra (TRL 1.14: .venv-trl114). The option mapping lives in
trainers/experiments/trl_compete.py.
"""

from __future__ import annotations

from trainers.experiments.trl_compete import main, parse_args

if __name__ == "__main__":
    main(parse_args())
