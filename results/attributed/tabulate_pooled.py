"""The attributed competition over its cells: each final's paired differences against its own
``uniform`` and the same pooled over every (cell, seed) pair, from the committed evidence of each
final (``<final>/runs/<entrant>/seed<k>/``) with ``adaroll compete``'s statistics.

Per entrant and cell: Δ final test pass@1 and Δ AUC (mean pass@1 over the run) in points with
95 % t-intervals over the cell's seeds and sign counts; then the number of cells whose mean
Δ final pass@1 is above 0, the pooled Δ over all pairs (t-interval, sign count), and the
pooled rollouts-to-target ratio: per pair, the rollouts from which the entrant's curve stays at
or above ``uniform``'s final pass@1 of the same cell and seed, over ``uniform``'s own; the mean
of the entrants' over the mean of ``uniform``'s (each pair first divided by its ``uniform``'s, so
that cells of different lengths weigh alike), with a percentile-bootstrap interval over the
pairs, given only when every pair reached the target; beside it the median of the per-pair
ratios, a pair that never reached the target counted as larger than any
(``censored_median``), with its bootstrap interval (``inf``: not reached). A final whose
evidence is not committed yet is listed as such.

Last, the rule for the recommended default (``README.md``, written 2026-12-07 00:21 UTC; this
reading of it added at 03:10 UTC, before the spell cell's final was read): each of its three
conditions with its number, and the verdict, given only once the spell cell's final is complete.

With ``--fixed`` (a second look, added 2026-12-07 after the rule was read): ``prior_filter`` is
read from each cell's rerun with the fix of that day (``<cell>/prior_filter_fix/evidence``; the
letters cell's final ran the fixed code itself), a cell whose rerun is not complete is left out,
and the rule's conditions are printed for that reading, never as the rule's verdict.

    python results/attributed/tabulate_pooled.py [--fixed]
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

from adaroll_env.stats import mean_ci
from trainers.experiments.statistics import (
    bootstrap_ratio,
    censored_median,
    load_entrant_runs,
    paired,
    reach_ratios,
    signs,
)

HERE = Path(__file__).parent
#: cell -> the folder of its final's evidence (config.json beside runs/)
FINALS = {
    "arithmetic × tiny (llama)": HERE / "final_main" / "evidence",
    "arithmetic × qwen3": HERE / "cell_arith_qwen3" / "final",
    "spell_backward × qwen3": HERE / "cell_spell_qwen3" / "final",
    "letter_counting × gpt2": HERE / "cell_letters_gpt2" / "final",
}
ENTRANTS = ("prior_filter", "bamdp", "knowledge_gradient", "greso")
BASE = "uniform"
#: the cell the default rule reads alone (a dataset without never-solved levels)
SPELL = "spell_backward × qwen3"
FIXED_ENTRANT = "prior_filter"
#: cells whose final itself ran the fixed ``prior_filter`` (no rerun apart)
FIXED_IN_FINAL = {"letter_counting × gpt2"}
#: ``--fixed``: read ``prior_filter`` from the reruns with the fix (set by ``main``)
FIXED = False


def fixed_folder(final: Path) -> Path:
    """Where a final's fixed ``prior_filter`` rerun keeps its evidence."""
    return final.parent / "prior_filter_fix" / "evidence"


def runs_of(final: Path, name: str) -> list[dict[str, Any]]:
    """The finished runs of entrant ``name`` in one final's evidence (with ``FIXED``, the
    fixed ``prior_filter`` from the cell's rerun where the final ran the old code)."""
    cell = next((c for c, f in FINALS.items() if f == final), None)
    if FIXED and name == FIXED_ENTRANT and cell not in FIXED_IN_FINAL:
        return load_entrant_runs(fixed_folder(final) / "runs" / name)[0]
    return load_entrant_runs(final / "runs" / name)[0]


def pm(values: list[float]) -> str:
    """``mean ± half-width`` in points, and the sign count."""
    if not values:
        return "— | —"
    mean, half = mean_ci(values)
    half_s = f"{100 * half:.1f}" if math.isfinite(half) else "—"
    return f"{100 * mean:+.1f} ± {half_s} | {'/'.join(map(str, signs(values)))}"


def ratio_text(x: float) -> str:
    """A ratio as ``0.87×``, or "not reached" for a censored (infinite) one."""
    return f"{x:.2f}×" if math.isfinite(x) else "not reached"


def complete(final: Path) -> bool:
    """Whether every entrant of the final's config has all its seeds' finished runs here (a
    final still running is left out of the tables, not pooled in part)."""
    path = final / "config.json"
    if not path.is_file():
        return False
    cfg = json.loads(path.read_text())
    names = [e["name"] for e in cfg["resolved_entrants"]]
    return all(len(runs_of(final, n)) == int(cfg["seeds"]) for n in names)


def main(fixed: bool = False) -> None:
    """Print the per-cell and pooled tables (``fixed``: with the fixed ``prior_filter``)."""
    global FIXED
    present = {cell: f for cell, f in FINALS.items() if complete(f)}  # by the finals' own runs
    FIXED = fixed
    try:
        tables(present, fixed)
    finally:
        FIXED = False


def tables(present: dict[str, Path], fixed: bool) -> None:
    """``main``'s tables over the complete finals ``present``."""
    for cell, f in FINALS.items():
        if cell not in present:
            print(f"- {cell}: final not complete yet (`{f.relative_to(HERE)}/`)")
    if fixed:
        print(
            "Second look: `prior_filter` as fixed on 2026-12-07 (reruns apart), "
            "not the rule's reading."
        )
        for cell, f in list(present.items()):
            if len(runs_of(f, FIXED_ENTRANT)) < len(runs_of(f, BASE)):
                del present[cell]
                where = fixed_folder(f).relative_to(HERE)
                print(f"- {cell}: the fixed `prior_filter` is not complete yet (`{where}/`)")
    print()
    print("| entrant | cell | seeds | Δ final pass@1, pts (95 % CI) | W/T/L | Δ AUC, pts | W/T/L |")
    print("|---|---|---:|---:|---:|---:|---:|")
    pooled: dict[str, dict[str, list[Any]]] = {}
    for name in ENTRANTS:
        acc = pooled.setdefault(name, {"final": [], "auc": [], "reach": [], "cells_up": []})
        for cell, f in present.items():
            base, runs = runs_of(f, BASE), runs_of(f, name)
            if not runs:
                continue
            p = paired(base, runs)
            acc["final"] += p["delta_final"]
            acc["auc"] += p["delta_auc"]
            acc["cells_up"].append(p["delta_final_mean"] > 0)
            acc["reach"] += reach_ratios(p)
            print(
                f"| `{name}` | {cell} | {len(p['seeds'])} | {pm(p['delta_final'])} "
                f"| {pm(p['delta_auc'])} |"
            )
    print()
    print(
        "| entrant | cells with Δ final > 0 | pairs | pooled Δ final pass@1, pts (95 % CI) "
        "| W/T/L | pooled Δ AUC, pts | W/T/L | rollouts to target, ratio [95 % CI] "
        "| median ratio [95 % CI] |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, acc in pooled.items():
        if not acc["final"]:  # no cell has its runs
            continue
        reach = acc["reach"]
        if reach and all(r is not None for r in reach):
            ratio = sum(reach) / len(reach)
            ci = bootstrap_ratio(reach, [1.0] * len(reach))
            ratio_s = f"{ratio:.2f}×" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")
        else:
            ratio_s = f"— ({sum(r is not None for r in reach)}/{len(reach)} reached)"
        med, med_ci = censored_median(reach)
        med_s = ratio_text(med) + (
            f" [{ratio_text(med_ci[0])}, {ratio_text(med_ci[1])}]" if med_ci else ""
        )
        print(
            f"| `{name}` | {sum(acc['cells_up'])} of {len(acc['cells_up'])} | {len(acc['final'])} "
            f"| {pm(acc['final'])} | {pm(acc['auc'])} | {ratio_s} | {med_s} |"
        )
    print()
    default_rule(present)


def default_rule(present: dict[str, Path]) -> tuple[list[tuple[str, str, bool]], bool | None]:
    """The rule for the recommended default (``README.md``): ``prior_filter`` becomes the default
    if, pooled by (cell, seed) pairs over the complete finals, (1) its Δ AUC against ``uniform``
    has a 95 % interval above 0, (2) its mean Δ final pass@1 against ``uniform`` is positive and
    (3) its mean Δ final pass@1 against ``bamdp`` is ≥ 0, pooled and on the spell cell alone.
    Prints each condition and the verdict, given only once the spell cell's final is complete;
    returns the conditions (what, value, holds) and the verdict (``True``: ``prior_filter``
    becomes the default, ``False``: ``bamdp`` stays, ``None``: not yet)."""
    vs_uniform: dict[str, list[float]] = {"final": [], "auc": []}
    vs_bamdp: list[float] = []
    vs_bamdp_spell: list[float] = []
    for cell, f in present.items():
        p = paired(runs_of(f, BASE), runs_of(f, "prior_filter"))
        vs_uniform["final"] += p["delta_final"]
        vs_uniform["auc"] += p["delta_auc"]
        q = paired(runs_of(f, "bamdp"), runs_of(f, "prior_filter"))
        vs_bamdp += q["delta_final"]
        if cell == SPELL:
            vs_bamdp_spell += q["delta_final"]
    print(f"The default rule (`README.md`), over {len(present)} complete final(s):")
    auc_mean, auc_half = mean_ci(vs_uniform["auc"]) if vs_uniform["auc"] else (math.nan, math.nan)
    checks = [
        (
            "(1) `prior_filter` − `uniform`, pooled Δ AUC: 95 % interval above 0",
            f"{pm(vs_uniform['auc'])}",
            auc_mean - auc_half > 0,
        ),
        (
            "(2) `prior_filter` − `uniform`, pooled mean Δ final pass@1 > 0",
            f"{pm(vs_uniform['final'])}",
            bool(vs_uniform["final"]) and sum(vs_uniform["final"]) > 0,
        ),
        (
            "(3) `prior_filter` − `bamdp`, pooled mean Δ final pass@1 ≥ 0",
            f"{pm(vs_bamdp)}",
            bool(vs_bamdp) and sum(vs_bamdp) >= 0,
        ),
        (
            "(3) `prior_filter` − `bamdp` on the spell cell, mean Δ final pass@1 ≥ 0",
            f"{pm(vs_bamdp_spell)}",
            bool(vs_bamdp_spell) and sum(vs_bamdp_spell) >= 0,
        ),
    ]
    for what, value, ok in checks:
        print(f"- {what}: {value} (pts | W/T/L) → {'holds' if ok else 'does not hold'}")
    verdict = None if SPELL not in present else all(ok for _, _, ok in checks)
    if FIXED:
        print("- (second look with the fixed `prior_filter`: no verdict; the rule read the finals)")
        return checks, None
    if verdict is None:
        print("- verdict: not yet (the spell cell's final is not complete)")
    elif verdict:
        print("- verdict: `prior_filter` with a pool of 2·B becomes the recommended default")
    else:
        print("- verdict: `bamdp` stays the recommended default")
    return checks, verdict


if __name__ == "__main__":
    main(fixed="--fixed" in sys.argv[1:])
