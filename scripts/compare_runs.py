"""Are two ``adaroll grpo`` runs the same, bit for bit (timings aside)?

    python scripts/compare_runs.py RUN_A RUN_B [RUN_A2 RUN_B2 ...]

Prints a table per pair: rows of ``metrics.jsonl`` and ``eval.jsonl``, values compared, the keys
that differ. Exit status 1 when any pair differs. The logic is
``trainers.run.run_files.compare_runs``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from trainers.run.run_files import compare_runs


def main(argv: list[str]) -> int:
    if len(argv) < 2 or len(argv) % 2:
        print(__doc__)
        return 2
    same = True
    print("| run A | run B | file | rows | values compared | differing keys |")
    print("|---|---|---|---:|---:|---|")
    for a, b in zip(argv[::2], argv[1::2], strict=True):
        for name, r in compare_runs(Path(a), Path(b)).items():
            same &= r["identical"]
            rows = "/".join(str(n) for n in r["rows"])
            print(f"| {a} | {b} | {name} | {rows} | {r['compared']} | "
                  f"{', '.join(r['differ']) or 'none'} |")  # fmt: skip
    print("identical" if same else "DIFFERENT")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
