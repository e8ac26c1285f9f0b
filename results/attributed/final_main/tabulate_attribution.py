"""The attribution table of results/attributed/final_main/README.md (and of every cell's final),
from the committed evidence (``<evidence>/runs/<entrant>/seed<k>/``): each comparison the
reading rule names, paired by seed, with ``adaroll compete``'s own statistics
(``trainers.experiments.statistics.paired``).

- what the priors buy: ``prior_filter`` against ``uniform``;
- what the policy adds: ``bamdp`` against ``prior_filter``;
- whether ``bamdp`` beats the best heuristics: ``bamdp`` against ``knowledge_gradient`` and
  ``greso``.

    python results/attributed/final_main/tabulate_attribution.py [EVIDENCE ...] [NAME=EVIDENCE ...]

EVIDENCE: a final's evidence folder (default: the main cell's, ``final_main/evidence``), e.g.
``results/attributed/cell_arith_qwen3/final``. Several folders of the same final (more seeds run
later, as ``final_main/more_seeds``) are read as one: their runs are joined by seed, and a seed
found in two folders is refused. ``NAME=EVIDENCE`` reads entrant ``NAME`` from the folders so
given instead (the fixed ``prior_filter``, rerun apart: ``prior_filter=final_main/prior_filter_fix/
evidence``). A comparison is paired over the seeds both entrants have.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

from trainers.experiments.statistics import load_entrant_runs, paired

EVIDENCE = Path(__file__).parent / "evidence"
COMPARISONS = [
    ("the priors", "prior_filter", "uniform"),
    ("the policy", "bamdp", "prior_filter"),
    ("bamdp against a heuristic", "bamdp", "knowledge_gradient"),
    ("bamdp against a heuristic", "bamdp", "greso"),
    ("allocation as a whole", "bamdp", "uniform"),
]


def runs_of(evidence: Path | list[Path], name: str) -> list[dict[str, Any]]:
    """The finished runs of entrant ``name`` in the evidence folder(s), by seed."""
    folders = [evidence] if isinstance(evidence, Path) else evidence
    by_seed: dict[int, dict[str, Any]] = {}
    for folder in folders:
        for run in load_entrant_runs(folder / "runs" / name)[0]:
            if run["seed"] in by_seed:
                raise SystemExit(
                    f"seed {run['seed']} of {name} is in two evidence folders (the second: "
                    f"{folder}): give each seed's folder once"
                )
            by_seed[run["seed"]] = run
    return [by_seed[s] for s in sorted(by_seed)]


def cell(p: dict[str, Any], key: str) -> str:
    """``mean ± half-width`` in percentage points and the W/T/L sign count of ``key``."""
    mean, half = 100 * p[f"delta_{key}_mean"], 100 * p[f"delta_{key}_ci95"]
    if not math.isfinite(mean):
        return "— | —"
    w, t, losses = p[f"signs_{key}"]
    return f"{mean:+.1f} ± {half:.1f} | {w}/{t}/{losses}"


def main(
    evidence: Path | list[Path] = EVIDENCE, apart: dict[str, list[Path]] | None = None
) -> None:
    """Print the table of the final whose evidence is in ``evidence`` (one folder or several);
    an entrant named in ``apart`` is read from its own folders instead."""
    apart = apart or {}
    print(
        "| what | entrant − reference | seeds | Δ final pass@1, pts (95 % CI) | W/T/L "
        "| Δ final pass@8, pts | W/T/L | Δ AUC, pts | W/T/L |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for what, entrant, reference in COMPARISONS:
        p = paired(
            runs_of(apart.get(reference, evidence), reference),
            runs_of(apart.get(entrant, evidence), entrant),
        )
        cells = " | ".join(cell(p, k) for k in ("final", "pass_k", "auc"))
        print(f"| {what} | `{entrant}` − `{reference}` | {len(p['seeds'])} | {cells} |")


def parse(args: list[str]) -> tuple[Path | list[Path], dict[str, list[Path]]]:
    """The command line: evidence folders, and ``NAME=FOLDER`` for an entrant read apart."""
    folders = [Path(a) for a in args if "=" not in a]
    apart: dict[str, list[Path]] = {}
    for a in args:
        if "=" in a:
            name, folder = a.split("=", 1)
            apart.setdefault(name, []).append(Path(folder))
    return (folders or EVIDENCE), apart


if __name__ == "__main__":
    main(*parse(sys.argv[1:]))
