"""Today's default against plain TRL on arithmetic (TRL 1.16) over eight seeds: seeds 0-3 from
``arithmetic_trl116/evidence`` and seeds 4-7 from ``arithmetic_trl116_more/evidence`` (the same
entrants and settings; README.md, "Plan: today's default on arithmetic over eight seeds", fixes
how it is read). Prints the final test pass@1 per seed, the paired differences (95 %
t-interval, sign count W/T/L) of final pass@1, pass@8 and AUC over the eight seeds, over the
four new ones and over the four first ones, and what every run was produced with (warm-start
weights, TRL, torch, transformers), which must agree. Usage, from the repository root:

    python results/trl_final/tabulate_eight_seeds.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trainers.experiments.statistics import load_entrant_runs, paired

HERE = Path(__file__).resolve().parent
PARTS = (HERE / "arithmetic_trl116" / "evidence", HERE / "arithmetic_trl116_more" / "evidence")
BASELINE, DEFAULT = "uniform", "bamdp-weighted-pilot2"


def runs_of(name: str) -> list[dict[str, Any]]:
    """The finished runs of entrant ``name`` in both competitions, by seed."""
    out: dict[int, dict[str, Any]] = {}
    for part in PARTS:
        for run in load_entrant_runs(part / "runs" / name)[0]:
            if run["seed"] in out:
                raise ValueError(f"seed {run['seed']} of {name} is in two competitions")
            out[run["seed"]] = run
    return [out[s] for s in sorted(out)]


def produced_with() -> set[tuple[str, ...]]:
    """(weights, trl, torch, transformers) of every start of every run read here."""
    found = set()
    for part in PARTS:
        for name in (BASELINE, DEFAULT):
            for path in sorted((part / "runs" / name).glob("seed*/provenance.json")):
                for start in json.loads(path.read_text())["starts"]:
                    v = start["versions"]
                    found.add((start["weights_sha256"][:12], v["trl"], v["torch"],
                               v["transformers"]))  # fmt: skip
    return found


def row(label: str, base: list[dict[str, Any]], mine: list[dict[str, Any]]) -> str:
    """One line of paired differences, in points."""
    p = paired(base, mine)
    cells = []
    for key in ("final", "pass_k", "auc"):
        mean, half = p[f"delta_{key}_mean"], p[f"delta_{key}_ci95"]
        sign = "/".join(map(str, p[f"signs_{key}"]))
        cells.append(f"{100 * mean:+.2f} ± {100 * half:.2f} | {sign}")
    return f"| {label} | {len(p['seeds'])} | {' | '.join(cells)} |"


def main() -> None:
    """Print the tables."""
    base, mine = runs_of(BASELINE), runs_of(DEFAULT)
    print(f"| seed | plain TRL | `{DEFAULT}` | Δ |")
    print("|---:|---:|---:|---:|")
    by_seed = {r["seed"]: r for r in base}
    for r in mine:
        if r["seed"] in by_seed:
            b, m = by_seed[r["seed"]]["curve"][-1][1], r["curve"][-1][1]
            print(f"| {r['seed']} | {100 * b:.1f} | {100 * m:.1f} | {100 * (m - b):+.1f} |")
    print("\n(final test pass@1, %.)\n")
    k = base[0]["pass_k"] if base else "k"
    print(f"| seeds | n | Δ final pass@1, pts (95 % CI) | W/T/L | Δ pass@{k} | W/T/L "
          "| Δ AUC | W/T/L |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    print(row("all (0-7)", base, mine))
    for label, seeds in (("new (4-7)", range(4, 8)), ("first (0-3)", range(4))):
        pick = [r for r in mine if r["seed"] in seeds]
        if pick:
            print(row(label, base, pick))
    print("\nproduced with (weights, trl, torch, transformers):", sorted(produced_with()))


if __name__ == "__main__":
    main()
