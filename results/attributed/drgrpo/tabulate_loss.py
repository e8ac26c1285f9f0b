"""The step-size control read by its rule (``README.md``, "How it is read"): the paired
differences by seed of ``prior_filter`` and ``bamdp`` against ``uniform`` under ``dr_grpo``
(this folder's evidence) beside the same differences under ``dapo`` (the main cell's final, cut
at this stage's last step, 2,000, on the seeds run here), and the update norms per step under
both losses.

    python results/attributed/drgrpo/tabulate_loss.py [DRGRPO [DAPO [FIXED_PF]]]

Defaults: ``drgrpo/evidence``, ``final_main/evidence``, and for the fixed ``prior_filter`` under
``dapo`` ``final_main/prior_filter_fix/evidence`` (the final's own ``prior_filter`` ran with the
low-id bug, so it is not read here; its row says "pending" until the rerun has the seeds).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

from trainers.experiments.statistics import load_entrant_runs, load_run, paired

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "final_main"))
from tabulate_attribution import cell  # the attribution table's own cells

HERE = Path(__file__).resolve().parent
DRGRPO = HERE / "evidence"
DAPO = HERE.parent / "final_main" / "evidence"
FIXED_PF = HERE.parent / "final_main" / "prior_filter_fix" / "evidence"
ENTRANTS = ("uniform", "prior_filter", "bamdp")
SUFFIX = "-dr_grpo"  # this stage's entrants are named <entrant>-dr_grpo


def cut(run: dict[str, Any], last_step: int) -> dict[str, Any]:
    """``run`` as it stood at step ``last_step``: its evaluations and step records up to it."""
    evals = [e for e in run["eval"] if int(e["step"]) <= last_step]
    if not evals or int(evals[-1]["step"]) != last_step:
        raise SystemExit(
            f"seed {run['seed']} has no evaluation at step {last_step} (its steps: "
            f"{[e['step'] for e in run['eval']]}): cut it where both losses evaluated"
        )
    metrics = [m for m in run["metrics"] if int(m.get("step", 0)) <= last_step]
    return load_run(run["seed"], run["summary"], evals, metrics, None)


def runs(folder: Path, name: str, last_step: int | None = None) -> list[dict[str, Any]]:
    """The finished runs of ``name`` in ``folder``, cut at ``last_step`` when given, each with
    ``max_grad_norm`` from its ``config.json`` (None without one)."""
    found = load_entrant_runs(folder / "runs" / name)[0]
    out = [cut(r, last_step) for r in found] if last_step is not None else found
    for r in out:
        config = folder / "runs" / name / f"seed{r['seed']}" / "config.json"
        r["max_grad_norm"] = (
            json.loads(config.read_text()).get("max_grad_norm") if config.is_file() else None
        )
    return out


def clipped(rs: list[dict[str, Any]]) -> str:
    """The share of steps whose gradient norm exceeded the run's ``max_grad_norm`` (clipped to
    it before the optimiser), over the runs that record both."""
    flags = [
        float(m["grad_norm"]) > float(r["max_grad_norm"])
        for r in rs
        if r.get("max_grad_norm") is not None
        for m in r["metrics"]
        if m.get("grad_norm") is not None
    ]
    return f"{100 * sum(flags) / len(flags):.0f} %" if flags else "—"


def mean_of(rs: list[dict[str, Any]], key: str) -> float:
    """``key`` averaged over every step record of ``rs`` that has it (NaN if none)."""
    values = [float(m[key]) for r in rs for m in r["metrics"] if m.get(key) is not None]
    return sum(values) / len(values) if values else math.nan


def main(drgrpo: Path = DRGRPO, dapo: Path = DAPO, fixed_pf: Path = FIXED_PF) -> None:
    """Print the two tables: differences under both losses, and the update norms."""
    dr = {n: runs(drgrpo, n + SUFFIX) for n in ENTRANTS}
    if not dr["uniform"]:
        raise SystemExit(f"no finished uniform{SUFFIX} run in {drgrpo}")
    last = int(dr["uniform"][0]["eval"][-1]["step"])
    seeds = sorted(r["seed"] for r in dr["uniform"])
    da = {
        n: [
            r
            for r in runs(fixed_pf if n == "prior_filter" else dapo, n, last)
            if r["seed"] in seeds
        ]
        for n in ENTRANTS
    }
    print(
        f"Paired against `uniform` under the same loss, seeds {seeds}, at step {last} "
        "(the `dapo` runs are the main cell's final, cut there; `prior_filter` under `dapo` is "
        "the fixed rerun); points, 95 % t-interval, W/T/L.\n"
    )
    print(
        "| entrant | loss | seeds | Δ final pass@1 | W/T/L | Δ final pass@8 | W/T/L "
        "| Δ AUC | W/T/L |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    kept: list[str] = []
    for name in ENTRANTS[1:]:
        signs: dict[str, tuple[float, float]] = {}
        for loss, group in (("dapo", da), ("dr_grpo", dr)):
            p = paired(group["uniform"], group[name])
            if len(p["seeds"]) < len(seeds):
                print(
                    f"| `{name}` | `{loss}` | {len(p['seeds'])} | pending: seeds "
                    f"{sorted(set(seeds) - set(p['seeds']))} not finished | | | | | |"
                )
                continue
            cells = " | ".join(cell(p, k) for k in ("final", "pass_k", "auc"))
            print(f"| `{name}` | `{loss}` | {len(p['seeds'])} | {cells} |")
            signs[loss] = (p["delta_final_mean"], p["delta_auc_mean"])
        if len(signs) == 2:
            same = all(
                math.copysign(1, signs["dapo"][i]) == math.copysign(1, signs["dr_grpo"][i])
                for i in (0, 1)
            )
            kept.append(
                f"`{name}`: the signs of Δ final and Δ AUC are "
                + ("the same under both losses" if same else "not the same under both losses")
            )
    print()
    for line in kept:
        print(f"- {line}")
    print(
        f"\nPer step, steps 1-{last}, mean over seeds and steps (update norm: the parameters' "
        "change; gradient norm: before clipping; steps clipped: gradient norm above the run's "
        "`max_grad_norm`, scaled down to it; gradient rollouts: rollouts with a nonzero "
        "advantage).\n"
    )
    print(
        "| entrant | loss | seeds | update norm | gradient norm | steps clipped "
        "| gradient rollouts |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for name in ENTRANTS:
        for loss, group in (("dapo", da), ("dr_grpo", dr)):
            rs = group[name]
            if not rs:
                print(f"| `{name}` | `{loss}` | 0 | pending | | | |")
                continue
            print(
                f"| `{name}` | `{loss}` | {len(rs)} | {mean_of(rs, 'update_norm'):.4f} "
                f"| {mean_of(rs, 'grad_norm'):.3f} | {clipped(rs)} "
                f"| {mean_of(rs, 'gradient_rollouts'):.1f} |"
            )


if __name__ == "__main__":
    main(*(Path(a) for a in sys.argv[1:4]))
