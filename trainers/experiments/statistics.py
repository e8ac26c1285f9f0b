"""The numbers of ``adaroll compete``: accuracy, paired differences against a baseline, mechanism.

Each finished run is a dict (``seed``, ``summary``, ``eval``, ``metrics``, ``beliefs`` and the
derived ``curve``, ``seconds``: ``load_run``). Per entrant, over its seeds:

- accuracy (``accuracy_row``): start and final held-out pass@1, the rollouts from which the mean
  curve reaches the baseline's mean final pass@1 (``rollouts_to_reach``), minutes per run;
- paired against the baseline by seed (``paired``; same seed, same data order and sampling): the
  difference in final pass@1 and in ``curve_auc`` (mean pass@1 over the run), each a mean with a
  95 % t-interval over the seeds; the rollouts and the training seconds to reach the baseline's
  final pass@1 of the same seed, as ratios to the baseline's own; wins by seed;
- mechanism (``mechanism``): per step, rollouts carrying gradient, distinct informative prompts,
  informative fraction, rounds and seconds (means over seeds and steps), and the median
  allocation overhead.

``markdown`` writes the three tables of ``table.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from adaroll_env.stats import mean_ci

#: mechanism column -> (``metrics.jsonl`` key, how steps are pooled)
MECHANISM: dict[str, tuple[str, str]] = {
    "gradient_rollouts_per_step": ("gradient_rollouts", "mean"),
    "informative_prompts_per_step": ("informative_prompts", "mean"),
    "informative_frac": ("informative_frac", "mean"),
    "rounds_per_step": ("rounds", "mean"),
    "seconds_per_step": ("step_seconds", "mean"),
    "alloc_overhead": ("alloc_overhead", "median"),
}


# --- one run's curve --------------------------------------------------------------------------
def load_run(
    seed: int,
    summary: dict[str, Any],
    evals: list[dict[str, Any]],
    metrics: list[dict[str, Any]],
    beliefs: dict[str, Any] | None,
) -> dict[str, Any]:
    """A finished run as the tables use it: its files plus ``curve`` (rollouts, pass@1 per
    evaluation) and ``seconds`` (training seconds at each evaluation: ``eval_seconds``)."""
    return {
        "seed": seed,
        "summary": summary,
        "eval": evals,
        "metrics": metrics,
        "beliefs": beliefs,
        "curve": [(float(e["rollouts_total"]), float(e["pass@1"])) for e in evals],
        "seconds": eval_seconds(evals, metrics),
    }


def eval_seconds(evals: list[dict[str, Any]], metrics: list[dict[str, Any]]) -> list[float]:
    """Training wall-clock seconds at each evaluation: its ``seconds`` field (the sum of the
    ``step_seconds`` of the steps before it, evaluations excluded), or, for runs written before
    evaluations carried it, that same sum computed from ``metrics.jsonl``."""
    out = []
    for e in evals:
        if "seconds" in e:
            out.append(float(e["seconds"]))
        else:
            out.append(float(sum(m["step_seconds"] for m in metrics if m["step"] <= e["step"])))
    return out


def rollouts_to_reach(curve: Sequence[tuple[float, float]], target: float) -> float | None:
    """Rollouts from which the (rollouts, accuracy) curve reaches ``target`` and stays there to
    the end (interpolated linearly into the last upward crossing), so that a noisy evaluation
    that touches the target and falls back does not count; None if the curve ends below it."""
    if not curve or curve[-1][1] < target:
        return None
    below = [i for i, (_, y) in enumerate(curve) if y < target]
    if not below:
        return curve[0][0]
    (x0, y0), (x1, y1) = curve[below[-1]], curve[below[-1] + 1]
    return x0 + (x1 - x0) * (target - y0) / (y1 - y0)


def curve_auc(curve: Sequence[tuple[float, float]]) -> float:
    """Mean accuracy over the run: the trapezoid area under the (rollouts, accuracy) curve
    divided by its rollout span (the one accuracy when the curve has one point)."""
    if not curve:
        return math.nan
    x = np.array([c[0] for c in curve], dtype=np.float64)
    y = np.array([c[1] for c in curve], dtype=np.float64)
    span = x[-1] - x[0]
    if span <= 0:
        return float(y.mean())
    return float(np.sum((x[1:] - x[:-1]) * (y[1:] + y[:-1]) / 2) / span)


def _seconds_at(run: dict[str, Any], rollouts: float) -> float:
    """Training seconds of ``run`` when it had spent ``rollouts`` (linear between evaluations)."""
    xs = [c[0] for c in run["curve"]]
    return float(np.interp(rollouts, xs, run["seconds"]))


# --- the tables' rows -------------------------------------------------------------------------
def accuracy_row(
    name: str, allocator: str, runs: list[dict[str, Any]], target: float
) -> dict[str, Any]:
    """Accuracy of one entrant over its seeds; ``target`` is the baseline's mean final pass@1."""
    curves = [r["curve"] for r in runs]
    mean, half = mean_ci([c[-1][1] for c in curves])
    reach = [rollouts_to_reach(c, target) for c in curves]
    reached = [x for x in reach if x is not None]
    return {
        "entrant": name,
        "allocator": allocator,
        "seeds": len(runs),
        "start_pass@1": float(np.mean([c[0][1] for c in curves])),
        "final_pass@1": mean,
        "ci95": half,
        "auc_pass@1": float(np.mean([curve_auc(c) for c in curves])),
        "rollouts_to_target": float(np.mean(reached)) if len(reached) == len(reach) else None,
        "reached": f"{len(reached)}/{len(reach)}",
        "rollout_saving": None,  # against the baseline's rollouts_to_target: set by the caller
        "minutes": float(np.mean([r["summary"]["minutes"] for r in runs])),
        "rollouts": int(np.mean([r["summary"]["rollouts_total"] for r in runs])),
    }


def mechanism(runs: list[dict[str, Any]]) -> dict[str, float]:
    """The mechanism columns of one entrant, pooled over its seeds and steps (NaN for a key
    its runs' ``metrics.jsonl`` lack: runs written before the key existed)."""
    out = {}
    for column, (key, how) in MECHANISM.items():
        values = [m[key] for r in runs for m in r["metrics"] if key in m]
        pool = np.median if how == "median" else np.mean
        out[column] = float(pool(values)) if values else math.nan
    return out


def paired(base: list[dict[str, Any]], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """``runs`` against the baseline's runs ``base``, seed by seed (seeds both finished).

    ``delta_final`` and ``delta_auc`` (per seed, then ``mean``/``ci95``: ``mean_ci``),
    ``wins`` (seeds whose final pass@1 is higher), and the rollouts and training seconds to
    reach the baseline's final pass@1 of the same seed (``rollouts_to_reach``): per seed for
    both, and ``rollouts_ratio``/``seconds_ratio``, the entrant's mean over seeds divided by
    the baseline's (None unless the entrant reached it on every seed and the baseline's mean is
    positive).
    """
    by_seed = {r["seed"]: r for r in base}
    pairs = [(by_seed[r["seed"]], r) for r in runs if r["seed"] in by_seed]
    d_final = [o["curve"][-1][1] - b["curve"][-1][1] for b, o in pairs]
    d_auc = [curve_auc(o["curve"]) - curve_auc(b["curve"]) for b, o in pairs]
    base_reach, reach, base_sec, sec = [], [], [], []
    for b, o in pairs:
        target = b["curve"][-1][1]
        rb = rollouts_to_reach(b["curve"], target)
        assert rb is not None  # a curve always reaches its own last value
        ro = rollouts_to_reach(o["curve"], target)
        base_reach.append(rb)
        base_sec.append(_seconds_at(b, rb))
        reach.append(ro)
        sec.append(None if ro is None else _seconds_at(o, ro))
    final_mean, final_half = mean_ci(d_final)
    auc_mean, auc_half = mean_ci(d_auc)
    return {
        "seeds": [o["seed"] for _, o in pairs],
        "delta_final": d_final,
        "delta_final_mean": final_mean,
        "delta_final_ci95": final_half,
        "delta_auc": d_auc,
        "delta_auc_mean": auc_mean,
        "delta_auc_ci95": auc_half,
        "wins": sum(d > 0 for d in d_final),
        "rollouts_to_base_final": reach,
        "base_rollouts_to_final": base_reach,
        "rollouts_ratio": _ratio(reach, base_reach),
        "seconds_to_base_final": sec,
        "base_seconds_to_final": base_sec,
        "seconds_ratio": _ratio(sec, base_sec),
        "reached": sum(x is not None for x in reach),
    }


def _ratio(values: list[float | None], base: list[float]) -> float | None:
    """Mean of ``values`` over mean of ``base``; None if one is None or the base mean is 0."""
    if not values or any(v is None for v in values) or not np.mean(base) > 0:
        return None
    return float(np.mean([v for v in values if v is not None]) / np.mean(base))


# --- table.md ---------------------------------------------------------------------------------
def _fmt(x: float | None, spec: str, suffix: str = "") -> str:
    return "—" if x is None or not math.isfinite(x) else format(x, spec) + suffix


def _pm(mean: float, half: float) -> str:
    """``"31.2 ± 1.4 %"``, or ``"31.2 % (± —)"`` when the interval is undefined (one seed)."""
    if not math.isfinite(half):
        return f"{mean:.1f} % (± —)"
    return f"{mean:.1f} ± {half:.1f} %"


def _delta(mean: float, half: float) -> str:
    """``"+1.2 ± 0.8 pts"`` (percentage points), ``"+1.2 pts (± —)"`` with one seed."""
    if not math.isfinite(mean):
        return "—"
    if not math.isfinite(half):
        return f"{100 * mean:+.1f} pts (± —)"
    return f"{100 * mean:+.1f} ± {100 * half:.1f} pts"


def provenance_line(prov: dict[str, Any]) -> str:
    """The line above the tables: the warm start's weights hash, the date, the command, and
    what the runs recorded (their code commits and tasks; runs that differ or lack a record)."""
    line = (
        f"Warm start `{prov['model']}`, weights sha256 `{prov['weights_sha256']}`; "
        f"tabulated {prov['date']}; command: `{prov['command']}`"
    )
    runs = prov.get("runs")
    if not runs:
        return line
    commits = ", ".join(f"`{str(c)[:12]}`" for c in runs["commit"]) or "none recorded"
    tasks = ", ".join(f"`{t}`" for t in runs["task"]) or "none recorded"
    line += f". Runs: code {commits}; task {tasks}"
    if len(runs["weights_sha256"]) > 1:
        line += f"; {len(runs['weights_sha256'])} different warm starts (--allow-mixed)"
    if runs["dirty"]:
        line += f"; uncommitted changes in the tree of {len(runs['dirty'])} run(s)"
    if runs["unknown"]:
        line += f"; {len(runs['unknown'])} run(s) without a provenance record"
    return line


def markdown(rows: list[dict[str, Any]], base: str, target: float, prov: dict[str, Any]) -> str:
    """``table.md``: the provenance line, then the accuracy, paired and mechanism tables."""
    lines = [
        provenance_line(prov),
        "",
        f"Target: {base}'s final held-out pass@1, {100 * target:.1f} % (mean over seeds); "
        "rollouts to target: from where the curve reaches it and stays there to the end.",
        "",
        "| entrant | seeds | start pass@1 | final pass@1 (95 % CI) | rollouts to target "
        f"(reached) | saving vs {base} | informative fraction | gradient rollouts per "
        "step | allocation overhead | minutes per run |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        saving = r["rollout_saving"]
        lines.append(
            f"| {r['entrant']} | {r['seeds']} | {100 * r['start_pass@1']:.1f} % | "
            f"{_pm(100 * r['final_pass@1'], 100 * r['ci95'])} | "
            f"{_fmt(r['rollouts_to_target'], ',.0f')} ({r['reached']}) | "
            f"{_fmt(None if saving is None else 100 * saving, '+.1f', ' %')} | "
            f"{_fmt(r['informative_frac'], '.3f')} | "
            f"{_fmt(r['gradient_rollouts_per_step'], '.1f')} | "
            f"{_fmt(100 * r['alloc_overhead'], '.1f', ' %')} | {r['minutes']:.1f} |"
        )
    lines += [
        "",
        f"**Paired against {base}**, seed by seed (the same seed gives the same data order and "
        "sampling): differences with a 95 % t-interval over the seeds, in percentage points. "
        "AUC: mean held-out pass@1 over the run (area under pass@1 against rollouts, divided "
        f"by the rollout span). To target: rollouts and training seconds to reach {base}'s "
        f"final pass@1 of the same seed and stay there, mean over seeds as a ratio to {base}'s "
        "own. Wins: seeds where the final pass@1 is higher.",
        "",
        "| entrant | seeds | Δ final pass@1 (95 % CI) | Δ AUC (95 % CI) | rollouts to target, "
        "ratio (reached) | wall-clock to target, ratio | wins |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        if r["entrant"] == base or r["paired_seeds"] == 0:
            continue
        lines.append(
            f"| {r['entrant']} | {r['paired_seeds']} | "
            f"{_delta(r['delta_final'], r['delta_final_ci95'])} | "
            f"{_delta(r['delta_auc'], r['delta_auc_ci95'])} | "
            f"{_fmt(r['rollouts_ratio'], '.2f', '×')} ({r['paired_reached']}/"
            f"{r['paired_seeds']}) | {_fmt(r['seconds_ratio'], '.2f', '×')} | "
            f"{r['wins']}/{r['paired_seeds']} |"
        )
    lines += [
        "",
        "**Mechanism**, per step (means over seeds and steps; allocation overhead: median).",
        "",
        "| entrant | gradient rollouts | distinct informative prompts | informative "
        "fraction | rounds | seconds | allocation overhead |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['entrant']} | {_fmt(r['gradient_rollouts_per_step'], '.1f')} | "
            f"{_fmt(r['informative_prompts_per_step'], '.1f')} | "
            f"{_fmt(r['informative_frac'], '.3f')} | {_fmt(r['rounds_per_step'], '.1f')} | "
            f"{_fmt(r['seconds_per_step'], '.2f')} | "
            f"{_fmt(100 * r['alloc_overhead'], '.1f', ' %')} |"
        )
    return "\n".join(lines) + "\n"
