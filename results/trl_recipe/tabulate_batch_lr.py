"""The batch-size / learning-rate table of results/trl_recipe/README.md, from the committed files
(each run's eval.jsonl and steps.csv in batch_lr/). Run from the repository root."""

from __future__ import annotations

import csv
import json
import math
import statistics
from pathlib import Path

HERE = Path(__file__).parent / "batch_lr"


def order(setting: str) -> tuple[int, float]:
    """Batch size ascending, then learning rate descending (``b64_lr2e-4``)."""
    return int(setting[1:].split("_")[0]), -float(setting.split("lr")[1])


def main() -> None:
    """Print the table."""
    runs: dict[str, list[tuple[list[float], float, float]]] = {}
    for ev in sorted(HERE.glob("*.eval.jsonl")):
        name = ev.name.removesuffix(".eval.jsonl")
        setting, _, _seed = name.rpartition("_seed")
        curve = [100 * json.loads(line)["pass@1"] for line in ev.read_text().splitlines()]
        with open(HERE / f"{name}.steps.csv") as f:
            rows = list(csv.DictReader(f))
        first = float(rows[0]["update_norm"])
        norms = [float(r["update_norm"]) for r in rows[1:]]
        later = [u for u in norms if not math.isnan(u)]
        runs.setdefault(setting, []).append((curve, first, statistics.mean(later)))
    print("| B, lr | validation pass@1 at steps 0/100/200/300/400 (seed 100; seed 101) "
          "| Δ final, mean | update norm: first step / later mean |")  # fmt: skip
    print("|---|---|---:|---:|")
    for setting, rs in sorted(runs.items(), key=lambda kv: order(kv[0])):
        b, lr = setting[1:].split("_lr")
        curves = "; ".join(" / ".join(f"{x:.1f}" for x in c) for c, _, _ in rs)
        delta = statistics.mean(c[-1] - c[0] for c, _, _ in rs)
        first = statistics.mean(f for _, f, _ in rs)
        later = statistics.mean(u for _, _, u in rs)
        print(f"| B = {b}, lr {lr} | {curves} | {delta:+.1f} | {first:.3f} / {later:.4f} |")


if __name__ == "__main__":
    main()
