"""The tables a cell's README reads its final with, beside ``adaroll compete --tabulate``'s and the
attribution's, from the committed evidence alone (``<cell>/final/``, the main cell's
``final_main/evidence/``): mean test pass@1 (and pass@8) at each evaluation; final pass@1 per
difficulty level, each entrant's minus the baseline's; the Spearman correlations over the
entrants between their Δ against the baseline (AUC, final pass@1, final pass@8) and two
mechanism figures a step (distinct informative prompts, gradient-carrying rollouts: the
competition's ``summary.json``); and each entrant's allocation seconds a step (per-run medians of
the step records) with its median share of the step.

    python results/attributed/cell_reading.py cell_letters_gpt2
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

from scipy.stats import spearmanr

from trainers.experiments.statistics import load_entrant_runs

HERE = Path(__file__).parent
#: the Δ columns of ``summary.json``'s rows, and the mechanism columns they are ranked against
DELTAS = {"Δ AUC": "delta_auc", "Δ final pass@1": "delta_final", "Δ final pass@k": "delta_pass_k"}
MECHANISM = {
    "distinct informative prompts": "informative_prompts_per_step",
    "gradient rollouts": "gradient_rollouts_per_step",
}


def evidence_of(cell: str) -> Path:
    """The folder of the cell's final evidence (``summary.json`` beside ``runs/``)."""
    folder = HERE / cell
    for sub in ("final", "evidence"):
        if (folder / sub / "summary.json").is_file():
            return folder / sub
    raise SystemExit(f"{folder} holds no tabulated final (final/ or evidence/ with summary.json)")


def load(evidence: Path) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """The competition's ``summary.json`` and each entrant's finished runs, in its order."""
    summary = json.loads((evidence / "summary.json").read_text())
    runs = {
        name: load_entrant_runs(evidence / "runs" / name, seeds)[0]
        for name, seeds in summary["runs"].items()
    }
    return summary, runs


def _mean_at(runs: list[dict[str, Any]], i: int, key: str) -> float:
    return 100 * statistics.mean(r["eval"][i][key] for r in runs)


def curves_table(runs: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Mean pass@1 (%) at each evaluation, and pass@k at the first and the last."""
    first = next(iter(runs.values()))[0]
    steps = [e["step"] for e in first["eval"]]
    k = first["pass_k"]
    lines = [
        "| entrant | " + " | ".join(f"{s:,}" for s in steps) + f" | pass@{k} first → last |",
        "|---|" + "---:|" * len(steps) + "---|",
    ]
    for name, rs in runs.items():
        row = " | ".join(f"{_mean_at(rs, i, 'pass@1'):.1f}" for i in range(len(steps)))
        pk = f"{_mean_at(rs, 0, f'pass@{k}'):.1f} → {_mean_at(rs, -1, f'pass@{k}'):.1f}"
        lines.append(f"| `{name}` | {row} | {pk} |")
    return lines


def levels_table(runs: dict[str, list[dict[str, Any]]], baseline: str) -> list[str]:
    """Final pass@1 per level, the baseline's at the start and the end, then each entrant's
    minus the baseline's of the same seed, in points."""
    base = {r["seed"]: r for r in runs[baseline]}
    levels = sorted(
        (k for k in base[min(base)]["eval"][-1] if k.startswith("pass@1/level")),
        key=lambda k: int(k.rsplit("level", 1)[1]),
    )
    lines = [
        "| entrant | " + " | ".join(k.split("/")[1] for k in levels) + " |",
        "|---|" + "---:|" * len(levels),
    ]
    for label, i in (("start", 0), ("final", -1)):
        cells = " | ".join(f"{_mean_at(runs[baseline], i, k):.1f}" for k in levels)
        lines.append(f"| `{baseline}` {label} (%) | {cells} |")
    for name, rs in runs.items():
        if name == baseline:
            continue
        diffs = [
            statistics.mean(r["eval"][-1][k] - base[r["seed"]]["eval"][-1][k] for r in rs)
            for k in levels
        ]
        cells = " | ".join(f"{100 * d:+.1f}" for d in diffs)
        lines.append(f"| `{name}` − `{baseline}` | {cells} |")
    return lines


def spearman_table(summary: dict[str, Any]) -> list[str]:
    """ρ over the entrants (the baseline at Δ 0) of each Δ with each mechanism figure."""
    rows = summary["rows"]
    lines = [
        f"| over {len(rows)} entrants | " + " | ".join(f"ρ(·, {m})" for m in MECHANISM) + " |",
        "|---|" + "---:|" * len(MECHANISM),
    ]
    for label, key in DELTAS.items():
        delta = [r.get(key) or 0.0 for r in rows]  # the baseline's row has no Δ
        rho = [spearmanr(delta, [r[col] for r in rows]).statistic for col in MECHANISM.values()]
        lines.append(f"| {label} | " + " | ".join(f"{x:+.2f}" for x in rho) + " |")
    return lines


def allocation_table(runs: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Allocation seconds a step, each run's median (lowest-highest over seeds), and the
    median over the runs of each run's median share of its step."""
    lines = [
        "| entrant | allocation s a step, per-run medians | share of the step (median) |",
        "|---|---:|---:|",
    ]
    for name, rs in runs.items():
        med = [statistics.median(float(m["alloc_seconds"]) for m in r["metrics"]) for r in rs]
        share = statistics.median(
            statistics.median(float(m["alloc_overhead"]) for m in r["metrics"]) for r in rs
        )
        lines.append(f"| `{name}` | {min(med):.4f}-{max(med):.4f} | {100 * share:.1f} % |")
    return lines


def main(cell: str) -> None:
    """Print the four tables of ``cell``'s final."""
    evidence = evidence_of(cell)
    summary, runs = load(evidence)
    baseline = summary["baseline"]
    print(f"Evidence: `{evidence.relative_to(HERE.parent.parent)}`, baseline `{baseline}`.\n")
    for title, lines in (
        ("Mean test pass@1 (%) at each evaluation (step)", curves_table(runs)),
        ("Final test pass@1 per level", levels_table(runs, baseline)),
        ("Spearman correlations over the entrants", spearman_table(summary)),
        ("Allocation time a step (step records)", allocation_table(runs)),
    ):
        print(f"{title}:\n")
        print("\n".join(lines) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(
            "usage: python results/attributed/cell_reading.py CELL (e.g. cell_letters_gpt2)"
        )
    main(sys.argv[1])
