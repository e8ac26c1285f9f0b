"""One allocator across two benchmark runs of the same settings and seed, episode by episode:
an option against the default (run A: the default, run B: the option).

    python scripts/bench_ab.py RUN_A RUN_B [--allocator bamdp] [--allocator-b NAME]
        [--labels A,B] [--out FILE.md]

RUN_A and RUN_B are run directories of adaroll bench or scripts/bench_bamdp.py (the folder with
episodes.csv or episodes.csv.gz). The logic is agents/benchmarks/ab.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agents.benchmarks.ab import ab_markdown, paired_between_runs


def main(argv: list[str]) -> int:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("run_a")
    parser.add_argument("run_b")
    parser.add_argument("--allocator", default="bamdp", help="allocator of run A (default: bamdp)")
    parser.add_argument(
        "--allocator-b", default=None, help="allocator of run B (default: the same)"
    )
    parser.add_argument("--labels", default="A,B", help="column names of the two runs")
    parser.add_argument("--out", default=None, help="also write the table to this file")
    args = parser.parse_args(argv)
    label_a, _, label_b = args.labels.partition(",")
    try:
        rows = paired_between_runs(args.run_a, args.run_b, args.allocator, args.allocator_b)
    except ValueError as exc:
        parser.error(str(exc))
    table = ab_markdown(rows, label_a, label_b or "B")
    print(table, end="")
    if args.out:
        Path(args.out).write_text(table)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
