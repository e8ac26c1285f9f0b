"""The utility stage read by the rule its README wrote before it ran.

Per entrant (seeds 100-101, validation): the validation AUC as the screen read it (mean pass@1
over the run by trapezoids over rollouts between the evaluations at steps 0, 500, 1,000 and 1,500,
``../screen/choose.py``; the plain mean of the four evaluations beside it), final validation
pass@1 and pass@8, and per
step the distinct prompts whose group carried gradient and the gradient-carrying rollouts (means
over the run's steps). The candidates' runs are this stage's evidence; the comparators' are the
screen's (``bamdp-lr1e-4``, ``uniform-lr1e-4``) and the sweep's (``prior_filter-lr1e-4``), the
same settings and seeds. Then each candidate's paired differences by seed against ``bamdp-lr1e-4``
and ``prior_filter-lr1e-4``, and the rule's verdict.

    python results/attributed/utility/tabulate.py
"""

from __future__ import annotations

import csv
import json
import statistics as st
from pathlib import Path

from trainers.experiments.statistics import curve_auc

HERE = Path(__file__).resolve().parent
SEEDS = (100, 101)
CANDIDATES = ("bamdp-informative-lr1e-4", "bamdp-snr2-lr1e-4")
RUNS = {
    **{c: HERE / "evidence" / "runs" / c for c in CANDIDATES},
    "bamdp-lr1e-4": HERE.parent / "screen" / "evidence" / "runs" / "bamdp-lr1e-4",
    "uniform-lr1e-4": HERE.parent / "screen" / "evidence" / "runs" / "uniform-lr1e-4",
    "prior_filter-lr1e-4": HERE.parent / "sweep" / "evidence" / "runs" / "prior_filter-lr1e-4",
}
BASES = ("bamdp-lr1e-4", "prior_filter-lr1e-4")


def read(run: Path) -> dict[str, float] | None:
    """One run's numbers (percent, per step), or None while it has not finished."""
    if not (run / "summary.json").exists():
        return None
    ev = [json.loads(line) for line in (run / "eval.jsonl").read_text().splitlines() if line]
    with open(run / "steps.csv") as f:
        steps = list(csv.DictReader(f))
    return {
        "auc": 100 * curve_auc([(r["rollouts_total"], r["pass@1"]) for r in ev]),
        "mean": 100 * st.mean(r["pass@1"] for r in ev),
        "final": 100 * ev[-1]["pass@1"],
        "final8": 100 * ev[-1].get("pass@8", float("nan")),
        "prompts": st.mean(float(s["informative_prompts"]) for s in steps),
        "gradient": st.mean(float(s["gradient_rollouts"]) for s in steps),
    }


def main() -> None:
    """Print the tables and the verdict."""
    data = {n: {s: read(p / f"seed{s}") for s in SEEDS} for n, p in RUNS.items()}
    missing = [f"{n} seed {s}" for n, d in data.items() for s, v in d.items() if v is None]
    print("| entrant | validation AUC, % (seeds 100, 101) | mean of the evaluations, % "
          "| final pass@1, % | final pass@8, % | prompts with gradient / step "
          "| gradient rollouts / step |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|")
    for n, d in data.items():
        if any(v is None for v in d.values()):
            print(f"| `{n}` | (not finished) | | | | | |")
            continue
        vals = [v for v in d.values() if v is not None]

        def m(k: str, vals: list[dict[str, float]] = vals) -> float:
            return st.mean(v[k] for v in vals)

        seeds = ", ".join(f"{v['auc']:.1f}" for v in vals)
        print(f"| `{n}` | {m('auc'):.2f} ({seeds}) | {m('mean'):.2f} | {m('final'):.1f} | "
              f"{m('final8'):.1f} | "
              f"{m('prompts'):.2f} | {m('gradient'):.1f} |")  # fmt: skip
    if missing:
        print(f"\nNot finished: {', '.join(missing)}; no verdict.")
        return
    print("\n| candidate | against | Δ AUC, points (seed 100, 101) "
          "| Δ final pass@1 (seed 100, 101) |")  # fmt: skip
    print("|---|---|---:|---:|")
    verdict = {}
    for c in CANDIDATES:
        wins = []
        for b in BASES:
            da = [data[c][s]["auc"] - data[b][s]["auc"] for s in SEEDS]  # type: ignore[index]
            df = [data[c][s]["final"] - data[b][s]["final"] for s in SEEDS]  # type: ignore[index]
            print(f"| `{c}` | `{b}` | {st.mean(da):+.2f} ({da[0]:+.1f}, {da[1]:+.1f}) | "
                  f"{st.mean(df):+.1f} ({df[0]:+.1f}, {df[1]:+.1f}) |")  # fmt: skip
            wins.append(st.mean(da) > 0)
        verdict[c] = all(wins)
    auc = {c: st.mean(data[c][s]["auc"] for s in SEEDS) for c in CANDIDATES}  # type: ignore[index]
    best = max(CANDIDATES, key=lambda c: auc[c])
    print()
    for c in CANDIDATES:
        print(
            f"- `{c}`: {'ahead of both comparators' if verdict[c] else 'not ahead of both'} "
            "in mean validation AUC"
        )
    print(f"- the candidate that goes on inside TRL (the higher mean validation AUC): `{best}`")


if __name__ == "__main__":
    main()
