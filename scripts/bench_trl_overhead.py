"""The cost of AllocatingGRPOTrainer against plain trl.GRPOTrainer (CPU, tiny model): step time
of plain TRL, of the subclass with ``uniform`` (the same completions) and with ``bamdp`` at the
package's defaults (two rounds), the allocation's share of a step and the breakdown of a step.

    python scripts/bench_trl_overhead.py [--batch-size 64] [--group-size 8] [--blocks 5]
        [--steps 6] [--warmup-steps 1] [--threads 1] [--out runs/bench_trl_overhead]

Needs the trl extra: pip install -e ".[trl]". The logic lives in
trainers/benchmarks/trl_overhead.py.
"""

from __future__ import annotations

from trainers.benchmarks.trl_overhead import main, parse_args

if __name__ == "__main__":
    main(parse_args())
