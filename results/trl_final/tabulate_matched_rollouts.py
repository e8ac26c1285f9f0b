"""Held-out pass@1 and pass@k at equal *generated* rollouts: each entrant's curves (against the
rollouts it generated, C-GRPO's calibration samples included) read, by linear interpolation
between evaluations, at plain TRL's total rollouts of the same seed, and paired against plain
TRL's final values (95 % t-interval over seeds, sign count W/T/L). An entrant whose run ends
before that many rollouts is read at its end. One table per competition whose evidence is
committed here (``<competition>/evidence``), or for the evidence directories given. Usage, from
the repository root:

    python results/trl_final/tabulate_matched_rollouts.py [EVIDENCE_DIR ...]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from adaroll_env.stats import mean_ci
from trainers.experiments.statistics import load_entrant_runs, signs


def at(run: dict[str, Any], key: str, rollouts: float) -> float:
    """``key`` (``pass@1``, ``pass@8``) of ``run`` at ``rollouts``, linear between evaluations."""
    xs = [float(e["rollouts_total"]) for e in run["eval"]]
    return float(np.interp(rollouts, xs, [float(e[key]) for e in run["eval"]]))


def pm(delta: list[float]) -> str:
    """Mean ± 95 % half-width in points, and the sign count."""
    mean, half = mean_ci(delta)
    return f"{100 * mean:+.1f} ± {100 * half:.1f} | {'/'.join(map(str, signs(delta)))}"


def main(evidence: Path, baseline: str = "uniform") -> None:
    """Print the table for the competition evidence ``evidence``."""
    runs = evidence / "runs"
    base = {r["seed"]: r for r in load_entrant_runs(runs / baseline)[0]}
    k = next(iter(base.values()))["pass_k"]
    print(f"| entrant ({evidence.parent.name}) | seeds | rollouts read at | pass@1 there, % "
          f"| {baseline}'s final | Δ pass@1, pts (95 % CI) | W/T/L | pass@{k} there, % "
          f"| {baseline}'s final | Δ pass@{k}, pts | W/T/L |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for d in sorted(p for p in runs.iterdir() if p.is_dir() and p.name != baseline):
        pairs = [(r, base[r["seed"]]) for r in load_entrant_runs(d)[0] if r["seed"] in base]
        if not pairs:
            continue
        budget = [b["curve"][-1][0] for _, b in pairs]
        cells = []
        for key in ("pass@1", f"pass@{k}"):
            mine = [at(r, key, x) for (r, _), x in zip(pairs, budget, strict=True)]
            theirs = [float(b["eval"][-1][key]) for _, b in pairs]
            delta = [m - t for m, t in zip(mine, theirs, strict=True)]
            cells.append(f"{100 * np.mean(mine):.1f} | {100 * np.mean(theirs):.1f} | {pm(delta)}")
        print(f"| `{d.name}` | {len(pairs)} | {np.mean(budget):,.0f} | {' | '.join(cells)} |")


if __name__ == "__main__":
    here = Path(__file__).resolve().parent
    given = [Path(a) for a in sys.argv[1:]] or sorted(here.glob("*/evidence"))
    for i, evidence in enumerate(given):
        if i:
            print()
        main(evidence)
