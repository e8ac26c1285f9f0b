"""The main cell's target read on twelve seeds, as planned in ``README.md`` ("Plan: eight more
seeds", amended before any run): the fixed ``prior_filter`` against ``uniform`` on seeds 0-11
(``uniform`` from the final's ``evidence/`` and ``more_seeds/``, the fixed ``prior_filter`` from
``prior_filter_fix/evidence/`` and ``more_seeds/``), the confirmation on seeds 4-11 alone, the
rollouts to ``uniform``'s final pass@1 with its bootstrap interval, and whether the target (a
95 % interval of Δ final pass@1 above 0) is met. While seeds are missing it says which.

    python results/attributed/final_main/tabulate_more_seeds.py
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from tabulate_attribution import cell, runs_of  # noqa: E402  (the attribution table's own)

from trainers.experiments.statistics import paired  # noqa: E402

PLANNED = list(range(12))
CONFIRMATION = list(range(4, 12))


def folders(here: Path = HERE) -> tuple[list[Path], list[Path]]:
    """(``uniform``'s evidence folders, the fixed ``prior_filter``'s)."""
    return [here / "evidence", here / "more_seeds"], [
        here / "prior_filter_fix" / "evidence",
        here / "more_seeds",
    ]


def _present(folder: Path) -> bool:
    return (folder / "runs").is_dir()


def row(label: str, p: dict[str, Any]) -> str:
    """A table row of the paired result ``p``: Δ final, Δ pass@8, Δ AUC, with sign counts."""
    cells = " | ".join(cell(p, k) for k in ("final", "pass_k", "auc"))
    return f"| {label} | {len(p['seeds'])} | {cells} |"


def ratio(p: dict[str, Any]) -> str:
    """Rollouts to ``uniform``'s final pass@1 of the same seed, as a ratio with its interval."""
    n = len(p["seeds"])
    if p["rollouts_ratio"] is None:
        return f"not defined: reached on {p['reached']} of {n} seeds (the ratio needs every seed)"
    lo, hi = p["rollouts_ratio_ci95"] or (None, None)
    interval = f" [{lo:.2f}×, {hi:.2f}×]" if lo is not None else ""
    return f"{p['rollouts_ratio']:.2f}×{interval} ({p['reached']} of {n} seeds reached it)"


def main(here: Path = HERE) -> None:
    """Print the twelve-seed reading of the main cell (see the module docstring)."""
    uniform_dirs, fixed_dirs = folders(here)
    base = runs_of([d for d in uniform_dirs if _present(d)], "uniform")
    fixed = runs_of([d for d in fixed_dirs if _present(d)], "prior_filter")
    both = sorted({r["seed"] for r in base} & {r["seed"] for r in fixed})
    missing = [s for s in PLANNED if s not in both]
    print(
        f"Fixed `prior_filter` − `uniform`, main cell, paired by seed (seeds with both: {both}"
        + (f"; planned but not finished: {missing}" if missing else "")
        + "); points, 95 % t-interval, W/T/L.\n"
    )
    print("| seeds | n | Δ final pass@1 | W/T/L | Δ final pass@8 | W/T/L | Δ AUC | W/T/L |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    every = paired(base, fixed)
    print(row("all (0-11)", every))
    late = paired(
        [r for r in base if r["seed"] in CONFIRMATION],
        [r for r in fixed if r["seed"] in CONFIRMATION],
    )
    print(row("confirmation (4-11)", late))
    print(f"\nRollouts to `uniform`'s final pass@1 (all seeds): {ratio(every)}")
    if missing:
        print("\nTarget: not read yet (seeds missing).")
        return
    low = every["delta_final_mean"] - every["delta_final_ci95"]
    verdict = "met" if low > 0 else "not met"
    print(
        f"\nTarget (the 95 % interval of Δ final pass@1 above 0): **{verdict}** (lower end "
        f"{100 * low:+.1f} points). A second look after a first that missed (README)."
    )


if __name__ == "__main__":
    main()
