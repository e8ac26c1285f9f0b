"""Each swept entrant's learning rate by the rule of README.md (the screen's rule): the rate of
1e-4, 2e-4 (the screen's run), 4e-4 with the higher mean validation AUC over seeds 100-101, ties
by final validation pass@1. Reads each run's eval.jsonl (AUC: mean pass@1 over the run,
trapezoids over rollouts). Usage: python results/attributed/sweep/choose.py [SWEEP_RUNS SCREEN_RUNS]
"""

import glob
import json
import os
import statistics as st
import sys

sweep = sys.argv[1] if len(sys.argv) > 1 else "results/attributed/sweep/evidence/runs"
screen = sys.argv[2] if len(sys.argv) > 2 else "results/attributed/screen/evidence/runs"


def auc(ev):
    """Mean pass@1 over the run (percent): trapezoids over rollouts."""
    x = [r["rollouts_total"] for r in ev]
    y = [r["pass@1"] for r in ev]
    a = sum((x[i + 1] - x[i]) * (y[i + 1] + y[i]) / 2 for i in range(len(x) - 1))
    return 100 * a / (x[-1] - x[0])


def runs(root, name):
    """{seed: (AUC, final pass@1)} of the finished runs of entrant ``name`` under ``root``."""
    out = {}
    for d in sorted(glob.glob(f"{root}/{name}/seed*")):
        if os.path.exists(d + "/summary.json"):
            with open(d + "/eval.jsonl") as f:
                ev = [json.loads(line) for line in f]
            out[d.split("/")[-1]] = (auc(ev), 100 * ev[-1]["pass@1"])
    return out


for family in ("prior_filter", "knowledge_gradient", "greso"):
    cands = {
        "1e-4": runs(sweep, f"{family}-lr1e-4"),
        "2e-4": runs(screen, family),
        "4e-4": runs(sweep, f"{family}-lr4e-4"),
    }
    rows = []
    for lr, v in cands.items():
        if len(v) == 2:
            rows.append((st.mean(a for a, _ in v.values()), st.mean(f for _, f in v.values()), lr))
        print(
            f"{family:20s} lr {lr}: "
            + ", ".join(f"{s} AUC {a:.2f} final {f:.2f}" for s, (a, f) in v.items())
        )
    pick = max(rows)[2] if len(rows) == 3 else "(not all rates done)"
    print(f"  -> {family}: lr {pick}")
