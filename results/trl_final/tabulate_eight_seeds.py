"""Today's default against plain TRL on arithmetic (TRL 1.16) over eight seeds: seeds 0-3 from
``arithmetic_trl116/evidence`` and seeds 4-7 from ``arithmetic_trl116_more/evidence`` (the same
entrants and settings; README.md, "Plan: today's default on arithmetic over eight seeds", fixes
how it is read). Prints the final test pass@1 per seed, the paired differences (95 %
t-interval, sign count W/T/L) of final pass@1, pass@8 and AUC over the eight seeds, over the
four new ones and over the four first ones, the median over seeds of the rollouts from which
the entrant's curve stays at the baseline's final pass@1 over the baseline's own (a seed that
never gets there counted as larger than any: ``censored_median``), and what every run was
produced with (warm-start weights, TRL, torch, transformers), which must agree. Usage, from
the repository root:

    python results/trl_final/tabulate_eight_seeds.py [--entrant NAME] [--baseline NAME]

``--entrant prior_filter`` reads the attributed competition's best entrant the same way
(README.md, "Plan: prior_filter inside TRL"); ``--baseline bamdp-weighted-pilot2`` pairs it
with today's default instead of plain TRL.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from trainers.experiments.statistics import (
    censored_median,
    load_entrant_runs,
    paired,
    reach_ratios,
)

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


def produced_with(names: tuple[str, ...]) -> set[tuple[str, ...]]:
    """(weights, trl, torch, transformers) of every start of every run of ``names``."""
    found = set()
    for part in PARTS:
        for name in names:
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
    med, ci = censored_median(reach_ratios(p))
    text = [f"{x:.2f}×" if math.isfinite(x) else "not reached" for x in (med, *(ci or ()))]
    cells.append(f"{text[0]}" + (f" [{text[1]}, {text[2]}]" if ci else ""))
    return f"| {label} | {len(p['seeds'])} | {' | '.join(cells)} |"


def main(entrant: str = DEFAULT, baseline: str = BASELINE) -> None:
    """Print the tables of ``entrant`` paired with ``baseline``."""
    base, mine = runs_of(baseline), runs_of(entrant)
    label = "plain TRL" if baseline == BASELINE else f"`{baseline}`"
    print(f"| seed | {label} | `{entrant}` | Δ |")
    print("|---:|---:|---:|---:|")
    by_seed = {r["seed"]: r for r in base}
    for r in mine:
        if r["seed"] in by_seed:
            b, m = by_seed[r["seed"]]["curve"][-1][1], r["curve"][-1][1]
            print(f"| {r['seed']} | {100 * b:.1f} | {100 * m:.1f} | {100 * (m - b):+.1f} |")
    print("\n(final test pass@1, %.)\n")
    k = base[0]["pass_k"] if base else "k"
    print(f"| seeds | n | Δ final pass@1, pts (95 % CI) | W/T/L | Δ pass@{k} | W/T/L "
          "| Δ AUC | W/T/L | rollouts to target, median ratio [95 % CI] |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(row("all (0-7)", base, mine))
    for label, seeds in (("new (4-7)", range(4, 8)), ("first (0-3)", range(4))):
        pick = [r for r in mine if r["seed"] in seeds]
        if pick:
            print(row(label, base, pick))
    found = sorted(produced_with((baseline, entrant)))
    print("\nproduced with (weights, trl, torch, transformers):", found)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entrant", default=DEFAULT, help=f"entrant (default {DEFAULT})")
    parser.add_argument("--baseline", default=BASELINE, help=f"paired with (default {BASELINE})")
    args = parser.parse_args()
    main(args.entrant, args.baseline)
