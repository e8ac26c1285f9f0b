"""A cell's learning rates by the rule its README wrote before the sweep ran, and the final's
entrants file from them.

Rule (``cell_*/README.md``, "How the sweep is read"): ``uniform`` and ``bamdp`` each at the swept
rate with the higher mean over seeds 100-101 of validation AUC, read as the mean pass@1 over the
evaluations at steps 0, 250, ..., 1,000; ties by final validation pass@1. ``prior_filter``,
``knowledge_gradient`` and ``greso`` run at ``uniform``'s chosen rate. The trapezoid AUC over
rollouts (the main cell's ``sweep/choose.py``) is printed beside it, so that a choice the two
readings would make differently shows.

Usage: python results/attributed/choose_cell.py CELL [--write]
(CELL: cell_arith_qwen3, cell_spell_qwen3 or cell_letters_gpt2; reads CELL/sweep/runs, the
sweep's evidence; --write writes CELL/entrants.yaml, which CELL/final.sh reads).
"""

from __future__ import annotations

import glob
import json
import os
import re
import statistics as st
import sys
from pathlib import Path

from trainers.experiments.statistics import curve_auc

HERE = Path(__file__).resolve().parent
SEEDS = ("seed100", "seed101")


def evals(run: str) -> list[dict]:
    """The evaluations of one run, in order."""
    with open(os.path.join(run, "eval.jsonl")) as f:
        return [json.loads(line) for line in f]


def mean_auc(ev: list[dict]) -> float:
    """Mean pass@1 over the evaluations (percent): the cell READMEs' reading."""
    return 100 * st.mean(r["pass@1"] for r in ev)


def trapezoid_auc(ev: list[dict]) -> float:
    """Mean pass@1 over the run by trapezoids over rollouts (percent)."""
    return 100 * curve_auc([(r["rollouts_total"], r["pass@1"]) for r in ev])


def family_rates(runs_dir: Path, family: str) -> tuple[str | None, list[str]]:
    """(the chosen rate, or None while a run is missing; the lines that show why)."""
    rows, lines = [], []
    for entrant in sorted(glob.glob(str(runs_dir / f"{family}-lr*"))):
        lr = re.sub(rf"^{family}-lr", "", os.path.basename(entrant))
        done = [s for s in SEEDS if os.path.exists(os.path.join(entrant, s, "summary.json"))]
        if len(done) < len(SEEDS):
            lines.append(f"{family:8s} lr {lr}: {len(done)} of {len(SEEDS)} seeds finished")
            rows = []
            break
        ev = {s: evals(os.path.join(entrant, s)) for s in SEEDS}
        auc = st.mean(mean_auc(e) for e in ev.values())
        trap = st.mean(trapezoid_auc(e) for e in ev.values())
        final = st.mean(100 * e[-1]["pass@1"] for e in ev.values())
        rows.append((auc, final, lr))
        lines.append(
            f"{family:8s} lr {lr}: AUC {auc:.2f} (trapezoids {trap:.2f}), final {final:.2f}  "
            + ", ".join(f"{s} {mean_auc(e):.2f}/{100 * e[-1]['pass@1']:.2f}" for s, e in ev.items())
        )
    if len(rows) < 3:
        return None, lines
    pick = max(rows)[2]
    lines.append(f"  -> {family}: lr {pick}")
    return pick, lines


ENTRANTS = """\
# Issue 25, {cell}: the main cell's five finalists (../screen/README.md) at the rates this
# cell's sweep chose on validation (choose_cell.py, by the rule of README.md): uniform's rate
# {u} (prior_filter, knowledge_gradient and greso take it), bamdp's {b}. Today's defaults
# otherwise (README.md of ../: the cells run them): snr(8), belief priors fitted per level
# (age-weighted), B = 64, G = 8, two rounds for adaptive allocators, bamdp's pilot of 2.
# Written by `python results/attributed/choose_cell.py {cell} --write`.
- name: uniform
  allocator: uniform
  lr: {u}
- name: prior_filter         # uniform groups of 8 on the prompts the prior does not call
  allocator: prior_filter    # hopeless or solved: what the priors alone buy
  pool_size: 128
  rounds: 1
  lr: {u}
- name: bamdp
  allocator: bamdp
  lr: {b}
- name: knowledge_gradient
  allocator: knowledge_gradient
  lr: {u}
- name: greso
  allocator: greso
  lr: {u}
"""


def main(argv: list[str]) -> int:
    """Print the sweep's reading; with ``--write``, write the final's entrants file."""
    if not argv or argv[0].startswith("-"):
        print(__doc__)
        return 2
    cell = argv[0].rstrip("/").split("/")[-1]
    runs_dir = HERE / cell / "sweep" / "runs"
    if not runs_dir.is_dir():
        print(f"choose_cell: no sweep evidence at {runs_dir}: run {cell}/sweep.sh first")
        return 1
    picks = {}
    for family in ("uniform", "bamdp"):
        picks[family], lines = family_rates(runs_dir, family)
        print("\n".join(lines))
    if None in picks.values():
        print("choose_cell: the sweep is not finished: nothing chosen")
        return 1
    if "--write" in argv:
        u, b = (f"{float(picks[f]):.1e}" for f in ("uniform", "bamdp"))
        out = HERE / cell / "entrants.yaml"
        out.write_text(ENTRANTS.format(cell=cell, u=u, b=b))
        print(f"wrote {out.relative_to(HERE.parent.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
