"""The screen's finalists by the rule of README.md, from each finished run's eval.jsonl.

AUC: mean validation pass@1 over the run (trapezoids over rollouts). Prints every entrant by AUC,
then the picks: `uniform`'s and `bamdp`'s learning rate (the variant with the higher mean AUC over
two seeds, ties by final pass@1) and the other entrants in order. Usage, from the repository root:

    python results/attributed/screen/choose.py [RUNS_DIR]
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

UNIFORM = {"uniform", "uniform-lr1e-4", "uniform-lr4e-4"}
BAMDP = {"bamdp", "bamdp-lr1e-4", "bamdp-lr4e-4", "bamdp-pool128"}
OTHERS = {"dapo", "vip", "variance", "knowledge_gradient", "knapsack", "reinforce_ada", "greso",
          "sb3_pretrained"}  # fmt: skip

Row = tuple[str, int, float, float, dict[str, tuple[float, float]]]


def auc(evals: list[dict[str, float]]) -> float:
    """Mean pass@1 (%) over the run: trapezoids over rollouts, divided by the rollout span."""
    x = [e["rollouts_total"] for e in evals]
    y = [e["pass@1"] for e in evals]
    area = sum((x[i + 1] - x[i]) * (y[i + 1] + y[i]) / 2 for i in range(len(x) - 1))
    return 100 * area / (x[-1] - x[0])


def rows(root: Path) -> list[Row]:
    """(entrant, seeds, mean AUC, mean final pass@1, per seed) of every finished run."""
    found: dict[str, dict[str, tuple[float, float]]] = {}
    for d in sorted(root.glob("*/seed*")):
        if not (d / "summary.json").exists():
            continue
        evals = [json.loads(line) for line in (d / "eval.jsonl").read_text().splitlines()]
        found.setdefault(d.parent.name, {})[d.name] = (auc(evals), 100 * evals[-1]["pass@1"])
    return [
        (name, len(v), statistics.mean(a for a, _ in v.values()),
         statistics.mean(f for _, f in v.values()),
         {k: (round(a, 1), round(f, 1)) for k, (a, f) in v.items()})
        for name, v in found.items()
    ]  # fmt: skip


def main(root: Path) -> None:
    """Print the ranking and the picks."""
    table = rows(root)
    for r in sorted(table, key=lambda r: -r[2]):
        print(f"{r[0]:20s} seeds {r[1]} AUC {r[2]:.2f} final {r[3]:.2f} {r[4]}")
    full = [r for r in table if r[1] == 2]

    def best(names: set[str]) -> str | None:
        candidates = [r for r in full if r[0] in names]
        return max(candidates, key=lambda r: (r[2], r[3]))[0] if candidates else None

    print("uniform pick:", best(UNIFORM))
    print("bamdp pick:", best(BAMDP))
    others = sorted((r for r in full if r[0] in OTHERS), key=lambda r: (-r[2], -r[3]))
    print("others:", [(r[0], round(r[2], 2)) for r in others])


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "results/attributed/screen/evidence/runs"))
