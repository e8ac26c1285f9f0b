"""A cell's fixed ``prior_filter`` (``<cell>/prior_filter_fix/evidence/``, rerun after the fix
of 2026-12-07 that takes the kept prompts in a seeded random order instead of the pool's first
ones) against the cell's final entrants of the same seeds (``<cell>/final/``, the main cell's
``final_main/evidence/``): paired
differences with ``adaroll compete``'s statistics, and final test pass@1 per difficulty level.

    python results/attributed/fixed_prior_filter.py cell_spell_qwen3
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

from trainers.experiments.statistics import load_entrant_runs, paired

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE / "final_main"))
from tabulate_attribution import cell  # noqa: E402  (the attribution table's own cells)

FIXED = "prior_filter (fixed)"


def runs(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """Each entrant's finished runs: the final's, and the fixed ``prior_filter`` under its own
    name."""
    final = folder / "final" / "runs"
    if not final.is_dir():  # the main cell keeps its final's runs in evidence/
        final = folder / "evidence" / "runs"
    out = {n: load_entrant_runs(final / n)[0] for n in ("uniform", "prior_filter", "bamdp")}
    out[FIXED] = load_entrant_runs(
        folder / "prior_filter_fix" / "evidence" / "runs" / "prior_filter"
    )[0]
    return out


def main(folder: Path) -> None:
    """Print the paired table and the per-level table of the cell in ``folder``."""
    r = runs(folder)
    if not r[FIXED]:
        raise SystemExit(f"no finished run of the fixed prior_filter in {folder}/prior_filter_fix")
    print(
        "| entrant − reference | seeds | Δ final pass@1, pts (95 % CI) | W/T/L "
        "| Δ final pass@8, pts | W/T/L | Δ AUC, pts | W/T/L |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for ref in ("uniform", "prior_filter", "bamdp"):
        p = paired(r[ref], r[FIXED])
        cells = " | ".join(cell(p, k) for k in ("final", "pass_k", "auc"))
        print(f"| `{FIXED}` − `{ref}` | {len(p['seeds'])} | {cells} |")
    print()
    levels = sorted(k for k in r["uniform"][0]["eval"][-1] if k.startswith("pass@1/level"))
    print("| entrant | " + " | ".join(k.split("/")[1] for k in levels) + " | all |")
    print("|---|" + "---:|" * (len(levels) + 1))
    for name, rs in r.items():
        if not rs:
            continue
        row = [100 * statistics.mean(x["eval"][-1][k] for x in rs) for k in [*levels, "pass@1"]]
        print(f"| `{name}` ({len(rs)} seeds) | " + " | ".join(f"{v:.1f}" for v in row) + " |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(
            "usage: python results/attributed/fixed_prior_filter.py CELL (e.g. cell_spell_qwen3)"
        )
    main(HERE / sys.argv[1])
