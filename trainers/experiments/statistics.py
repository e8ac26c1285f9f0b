"""The numbers of ``adaroll compete``: accuracy, paired differences against a baseline, mechanism.

Each finished run is a dict (``seed``, ``summary``, ``eval``, ``metrics``, ``beliefs`` and the
derived ``curve``, ``seconds``, ``pass_k``: ``load_run``; from a run directory, ``load_run_dir``,
which reads the step records from ``metrics.jsonl`` or, where only the small committed files
are kept, from ``steps.csv``: ``write_steps_csv``). Per entrant, over its seeds:

- accuracy (``accuracy_row``): start and final held-out pass@1 and pass@k, the rollouts from
  which the curve reaches the baseline's mean final pass@1 (``rollouts_to_reach``), minutes,
  rollouts generated per step (C-GRPO's vary, its calibrations included);
- paired against the baseline by seed (``paired``; same seed, same data order and sampling): the
  difference in final pass@1, final pass@k and ``curve_auc`` (mean pass@1 over the run), each a
  mean with a 95 % t-interval over the seeds and a sign count (wins/ties/losses); the rollouts
  and training seconds to reach the baseline's final pass@1 of the same seed, as ratios to the
  baseline's own with a percentile-bootstrap interval over seeds (``bootstrap_ratio``); the
  ratio of seconds per step;
- mechanism (``mechanism``): per step, rollouts carrying gradient, distinct informative prompts,
  informative fraction, rounds, gradient norm, update norm and seconds (means over seeds and
  steps), and the median allocation overhead.

``markdown`` writes the three tables of ``table.md``.
"""

from __future__ import annotations

import csv
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from adaroll_env.stats import mean_ci

#: mechanism column -> (step record key, how steps are pooled: ``mean``, ``nanmean`` (steps
#: that did not measure it hold NaN) or ``median``)
MECHANISM: dict[str, tuple[str, str]] = {
    "gradient_rollouts_per_step": ("gradient_rollouts", "mean"),
    "informative_prompts_per_step": ("informative_prompts", "mean"),
    "informative_frac": ("informative_frac", "mean"),
    "rounds_per_step": ("rounds", "mean"),
    "grad_norm_per_step": ("grad_norm", "nanmean"),
    "update_norm_per_step": ("update_norm", "nanmean"),
    "seconds_per_step": ("step_seconds", "mean"),
    "alloc_overhead": ("alloc_overhead", "median"),
}
#: the step record keys the tables and plots read, the columns of ``steps.csv``
STEP_COLUMNS: tuple[str, ...] = (
    "step",
    "rollouts_total",
    "rollouts",
    "gradient_rollouts",
    "informative_prompts",
    "informative_frac",
    "grad_norm",
    "update_norm",
    "step_seconds",
    "alloc_seconds",
    "alloc_overhead",
    "rounds",
)
#: the per-step summary of a run directory, written beside its ``metrics.jsonl``
STEPS_FILE = "steps.csv"
#: resamples and seed of the bootstrap intervals of the ratios to target
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0


# --- one run's step records: metrics.jsonl or steps.csv --------------------------------------
def _cell(value: Any) -> str:
    """A ``steps.csv`` cell: integers as they are, floats to 6 significant digits."""
    if value is None or isinstance(value, bool):
        return ""
    if isinstance(value, int):
        return str(value)
    return format(float(value), ".6g")  # nan, inf too


def _parse(text: str) -> int | float:
    return int(text) if re.fullmatch(r"-?\d+", text) else float(text)


def write_steps_csv(metrics: list[dict[str, Any]], path: str | os.PathLike[str]) -> None:
    """``steps.csv``: one row per step record with the ``STEP_COLUMNS`` any record holds (an
    empty cell where a record lacks one), floats to 6 significant digits; written atomically."""
    path = Path(path)
    columns = [c for c in STEP_COLUMNS if any(c in m for m in metrics)]
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(columns)
        w.writerows([_cell(m.get(c)) for c in columns] for m in metrics)
    tmp.replace(path)


def read_steps_csv(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The step records of a ``steps.csv`` (an empty cell: the key absent from that record)."""
    with Path(path).open(newline="") as fh:
        return [{k: _parse(v) for k, v in row.items() if v != ""} for row in csv.DictReader(fh)]


def step_records(directory: str | os.PathLike[str], *, write: bool = True) -> list[dict[str, Any]]:
    """A run's step records with the ``STEP_COLUMNS`` keys: from its ``metrics.jsonl`` when
    present (then ``steps.csv`` is written beside it if missing or older, when ``write``), else
    from its ``steps.csv``. Raises ``ValueError`` when the directory holds neither."""
    from trainers.run.run_files import read_records

    d = Path(directory)
    metrics, steps = d / "metrics.jsonl", d / STEPS_FILE
    if metrics.is_file():
        records = [{k: m[k] for k in STEP_COLUMNS if k in m} for m in read_records(metrics)]
        if write and (not steps.is_file() or steps.stat().st_mtime < metrics.stat().st_mtime):
            write_steps_csv(records, steps)
        return records
    if steps.is_file():
        return read_steps_csv(steps)
    raise ValueError(
        f"run directory {d} has neither metrics.jsonl nor {STEPS_FILE}: the tables need its "
        "step records (copy the run's steps.csv with its eval.jsonl and summary.json)"
    )


# --- one run's curve --------------------------------------------------------------------------
def pass_k_of(evals: list[dict[str, Any]]) -> int | None:
    """The k of the run's pass@k (its ``eval_k``): the largest k > 1 whose ``pass@<k>`` every
    evaluation holds; None when they hold pass@1 alone."""
    if not evals:
        return None
    ks = [{int(m.group(1)) for k in e if (m := re.fullmatch(r"pass@(\d+)", k))} for e in evals]
    common = set.intersection(*ks) - {1}
    return max(common) if common else None


def load_run(
    seed: int,
    summary: dict[str, Any],
    evals: list[dict[str, Any]],
    metrics: list[dict[str, Any]],
    beliefs: dict[str, Any] | None,
) -> dict[str, Any]:
    """A finished run as the tables use it: its files plus ``curve`` (rollouts, pass@1 per
    evaluation), ``seconds`` (training seconds at each evaluation: ``eval_seconds``), ``pass_k``
    (``pass_k_of``) and ``final_pass_k`` (the last evaluation's pass@k, NaN without one)."""
    k = pass_k_of(evals)
    return {
        "seed": seed,
        "summary": summary,
        "eval": evals,
        "metrics": metrics,
        "beliefs": beliefs,
        "curve": [(float(e["rollouts_total"]), float(e["pass@1"])) for e in evals],
        "seconds": eval_seconds(evals, metrics),
        "pass_k": k,
        "final_pass_k": float(evals[-1][f"pass@{k}"]) if k is not None else math.nan,
    }


def load_run_dir(directory: str | os.PathLike[str], seed: int) -> dict[str, Any]:
    """``load_run`` of a finished run directory: ``summary.json``, ``eval.jsonl``, the step
    records (``step_records``: ``metrics.jsonl``, else ``steps.csv``) and ``beliefs.json`` when
    present."""
    import json

    from trainers.run.run_files import read_records

    d = Path(directory)
    beliefs = d / "beliefs.json"
    return load_run(
        seed,
        json.loads((d / "summary.json").read_text()),
        read_records(d / "eval.jsonl"),
        step_records(d),
        json.loads(beliefs.read_text()) if beliefs.is_file() else None,
    )


def load_entrant_runs(
    entrant_dir: str | os.PathLike[str], seeds: Sequence[int] | None = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """The finished runs of one entrant (``entrant_dir`` holds ``seed<N>`` run directories, as
    ``adaroll compete`` and its ``--evidence`` copies write them), by seed: ``load_run_dir`` of
    each with a ``summary.json``, limited to ``seeds`` when given; and, apart, the runs left out
    because a signal stopped them before their last step (``"seed 3 (stopped by SIGTERM after
    step 120)"``), which a table must not read as finished."""
    import json

    base = Path(entrant_dir)
    found = {int(d.name[4:]): d for d in base.glob("seed*") if d.name[4:].isdigit()}
    runs, left_out = [], []
    for s in sorted(found) if seeds is None else seeds:
        d = found.get(s)
        if d is None or not (d / "summary.json").is_file():
            continue
        summary = json.loads((d / "summary.json").read_text())
        stop = str(summary.get("stopped_by", "steps"))
        if stop.startswith("SIG"):
            left_out.append(f"seed {s} (stopped by {stop} after step {summary.get('steps')})")
            continue
        runs.append(load_run_dir(d, s))
    return runs, left_out


def eval_seconds(evals: list[dict[str, Any]], metrics: list[dict[str, Any]]) -> list[float]:
    """Training wall-clock seconds at each evaluation: its ``seconds`` field (the sum of the
    ``step_seconds`` of the steps before it, evaluations excluded), or, for runs written before
    evaluations carried it, that same sum computed from the step records."""
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


def _pool(values: list[float], how: str) -> float:
    """``values`` pooled by ``how`` (``MECHANISM``); NaN when there is nothing to pool."""
    if how == "nanmean":
        values = [v for v in values if math.isfinite(v)]
    if not values:
        return math.nan
    return float(np.median(values) if how == "median" else np.mean(values))


def _step_seconds(run: dict[str, Any]) -> float:
    return _pool([m["step_seconds"] for m in run["metrics"] if "step_seconds" in m], "mean")


# --- the tables' rows -------------------------------------------------------------------------
def accuracy_row(
    name: str, allocator: str, runs: list[dict[str, Any]], target: float
) -> dict[str, Any]:
    """Accuracy of one entrant over its seeds; ``target`` is the baseline's mean final pass@1."""
    curves = [r["curve"] for r in runs]
    mean, half = mean_ci([c[-1][1] for c in curves])
    ks = {r["pass_k"] for r in runs}
    k = ks.pop() if len(ks) == 1 else None  # runs evaluated with other k: no common pass@k
    k_mean, k_half = mean_ci([r["final_pass_k"] for r in runs]) if k else (math.nan, math.nan)
    reach = [rollouts_to_reach(c, target) for c in curves]
    reached = [x for x in reach if x is not None]
    return {
        "entrant": name,
        "allocator": allocator,
        "seeds": len(runs),
        "start_pass@1": float(np.mean([c[0][1] for c in curves])),
        "final_pass@1": mean,
        "ci95": half,
        "pass_k": k,
        "final_pass@k": k_mean,
        "final_pass@k_ci95": k_half,
        "auc_pass@1": float(np.mean([curve_auc(c) for c in curves])),
        "rollouts_to_target": float(np.mean(reached)) if len(reached) == len(reach) else None,
        "reached": f"{len(reached)}/{len(reach)}",
        "rollout_saving": None,  # against the baseline's rollouts_to_target: set by the caller
        "minutes": float(np.mean([r["summary"]["minutes"] for r in runs])),
        "rollouts": int(np.mean([r["summary"]["rollouts_total"] for r in runs])),
        "rollouts_per_step": _rollouts_per_step(runs),
    }


def _rollouts_per_step(runs: list[dict[str, Any]]) -> float:
    """Rollouts generated per step over the run (its last evaluation's ``rollouts_total`` over
    its step; calibrations included), the mean over seeds; NaN when no run evaluated after a
    step."""
    rates = [
        float(r["eval"][-1]["rollouts_total"]) / int(r["eval"][-1]["step"])
        for r in runs
        if r["eval"] and int(r["eval"][-1].get("step", 0)) > 0
    ]
    return float(np.mean(rates)) if rates else math.nan


def mechanism(runs: list[dict[str, Any]]) -> dict[str, float]:
    """The mechanism columns of one entrant, pooled over its seeds and steps (NaN for a key
    its runs' step records lack: runs written before the key existed)."""
    out = {}
    for column, (key, how) in MECHANISM.items():
        out[column] = _pool([float(m[key]) for r in runs for m in r["metrics"] if key in m], how)
    return out


def signs(deltas: Sequence[float]) -> tuple[int, int, int]:
    """Seeds on which the entrant is ahead, level and behind (wins, ties, losses); a difference
    within 1e-12 is a tie (pass rates are ratios of counts), a NaN counts nowhere."""
    wins = sum(d > 1e-12 for d in deltas)
    losses = sum(d < -1e-12 for d in deltas)
    return wins, sum(abs(d) <= 1e-12 for d in deltas), losses


def bootstrap_ratio(
    values: Sequence[float],
    base: Sequence[float],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float] | None:
    """95 % percentile-bootstrap interval of mean(``values``) / mean(``base``), the seeds (pairs
    of the two) resampled with replacement; None with fewer than two seeds. Resamples whose
    ``base`` mean is 0 (a ratio without meaning) are left out.

    >>> bootstrap_ratio([2.0, 2.0, 2.0], [4.0, 4.0, 4.0])
    (0.5, 0.5)
    """
    v = np.asarray(values, dtype=np.float64)  # [S]
    b = np.asarray(base, dtype=np.float64)  # [S]
    if v.size < 2:
        return None
    idx = np.random.default_rng(seed).integers(0, v.size, size=(resamples, v.size))  # [R, S]
    num, den = v[idx].mean(axis=1), b[idx].mean(axis=1)  # [R]
    ok = den > 0
    if not ok.any():
        return None
    lo, hi = np.percentile(num[ok] / den[ok], [2.5, 97.5])
    return float(lo), float(hi)


def reach_ratios(p: dict[str, Any]) -> list[float | None]:
    """Per seed of a ``paired`` result: the rollouts from which the entrant stays at the
    baseline's final pass@1, over the baseline's own (None: never reached)."""
    return [
        None if r is None else r / b
        for r, b in zip(p["rollouts_to_base_final"], p["base_rollouts_to_final"], strict=True)
    ]


def censored_median(
    values: Sequence[float | None],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, tuple[float, float] | None]:
    """The median of ``values`` where None means "not reached in the run" (censored: larger
    than any observed value), and its 95 % percentile-bootstrap interval over the values
    (None with fewer than two). Either end is ``inf`` where the censored values decide it: the
    median is finite only while fewer than half are censored. Quantiles are taken without
    interpolation (``inverted_cdf``), so an infinite value never enters an arithmetic mean.

    >>> censored_median([0.5, 0.7, None])
    (0.7, (0.5, inf))
    """
    v = np.asarray([math.inf if x is None else x for x in values], dtype=np.float64)  # [S]
    med = float(np.quantile(v, 0.5, method="inverted_cdf"))
    if v.size < 2:
        return med, None
    idx = np.random.default_rng(seed).integers(0, v.size, size=(resamples, v.size))  # [R, S]
    meds = np.quantile(v[idx], 0.5, axis=1, method="inverted_cdf")  # [R]
    lo, hi = np.quantile(meds, [0.025, 0.975], method="inverted_cdf")
    return med, (float(lo), float(hi))


def paired(base: list[dict[str, Any]], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """``runs`` against the baseline's runs ``base``, seed by seed (seeds both finished).

    ``delta_final``, ``delta_pass_k`` (final pass@k, the runs' common k: ``pass_k``; NaN
    without one) and ``delta_auc``: per seed, then ``mean``/``ci95`` (``mean_ci``) and
    ``signs`` (``signs``: wins, ties, losses); ``wins`` (seeds whose final pass@1 is higher);
    the rollouts and training seconds to reach the baseline's final pass@1 of the same seed
    (``rollouts_to_reach``): per seed for both, and ``rollouts_ratio``/``seconds_ratio``, the
    entrant's mean over seeds divided by the baseline's (None unless the entrant reached it on
    every seed and the baseline's mean is positive), each with ``*_ci95`` (``bootstrap_ratio``,
    None unless every seed reached it); ``step_seconds_ratio``, the entrant's mean seconds per
    step over the baseline's.
    """
    by_seed = {r["seed"]: r for r in base}
    pairs = [(by_seed[r["seed"]], r) for r in runs if r["seed"] in by_seed]
    d_final = [o["curve"][-1][1] - b["curve"][-1][1] for b, o in pairs]
    d_auc = [curve_auc(o["curve"]) - curve_auc(b["curve"]) for b, o in pairs]
    k = {r["pass_k"] for pair in pairs for r in pair}
    pass_k = k.pop() if len(k) == 1 else None
    d_k = [o["final_pass_k"] - b["final_pass_k"] for b, o in pairs] if pass_k else []
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
    out: dict[str, Any] = {"seeds": [o["seed"] for _, o in pairs], "pass_k": pass_k}
    for name, deltas in (("final", d_final), ("pass_k", d_k), ("auc", d_auc)):
        mean, half = mean_ci(deltas) if deltas else (math.nan, math.nan)
        out[f"delta_{name}"] = deltas
        out[f"delta_{name}_mean"] = mean
        out[f"delta_{name}_ci95"] = half
        out[f"signs_{name}"] = list(signs(deltas)) if deltas else None
    reached = [x for x in reach if x is not None]
    reached_sec = [x for x in sec if x is not None]
    every = bool(pairs) and len(reached) == len(reach)  # the intervals need every seed
    base_steps = [_step_seconds(b) for b, _ in pairs]
    out.update(
        wins=sum(d > 0 for d in d_final),
        rollouts_to_base_final=reach,
        base_rollouts_to_final=base_reach,
        rollouts_ratio=_ratio(reach, base_reach),
        rollouts_ratio_ci95=bootstrap_ratio(reached, base_reach) if every else None,
        seconds_to_base_final=sec,
        base_seconds_to_final=base_sec,
        seconds_ratio=_ratio(sec, base_sec),
        seconds_ratio_ci95=bootstrap_ratio(reached_sec, base_sec) if every else None,
        reached=len(reached),
        step_seconds_ratio=_ratio([_step_seconds(o) for _, o in pairs], base_steps),
    )
    return out


#: the paired columns of a row (``paired_row``) -> their key in ``paired``'s result
PAIRED_COLUMNS = {
    "delta_final": "delta_final_mean",
    "delta_final_ci95": "delta_final_ci95",
    "signs_final": "signs_final",
    "delta_pass_k": "delta_pass_k_mean",
    "delta_pass_k_ci95": "delta_pass_k_ci95",
    "signs_pass_k": "signs_pass_k",
    "delta_auc": "delta_auc_mean",
    "delta_auc_ci95": "delta_auc_ci95",
    "signs_auc": "signs_auc",
    "rollouts_ratio": "rollouts_ratio",
    "rollouts_ratio_ci95": "rollouts_ratio_ci95",
    "seconds_ratio": "seconds_ratio",
    "seconds_ratio_ci95": "seconds_ratio_ci95",
    "step_seconds_ratio": "step_seconds_ratio",
    "paired_reached": "reached",
    "wins": "wins",
}


def paired_row(p: dict[str, Any] | None) -> dict[str, Any]:
    """The paired columns of a table row from ``paired``'s result (empty for the baseline,
    ``p`` None): sign counts as ``"wins/ties/losses"``, intervals as ``*_low``/``*_high``."""
    row: dict[str, Any] = {}
    for col, key in PAIRED_COLUMNS.items():
        value = None if p is None else p[key]
        if col.endswith("_ci95") and "ratio" in col:
            row[f"{col}_low"], row[f"{col}_high"] = value if value is not None else (None, None)
        elif col.startswith("signs_"):
            row[col] = None if value is None else "/".join(str(c) for c in value)
        else:
            row[col] = value
    row["paired_seeds"] = 0 if p is None else len(p["seeds"])
    return row


def _ratio(values: list[float | None], base: list[float]) -> float | None:
    """Mean of ``values`` over mean of ``base``; None if one is None or NaN, or the base mean
    is not positive."""
    if not values or any(v is None for v in values) or not np.mean(base) > 0:
        return None
    ratio = float(np.mean([v for v in values if v is not None]) / np.mean(base))
    return ratio if math.isfinite(ratio) else None


# --- table.md ---------------------------------------------------------------------------------
def _fmt(x: float | None, spec: str, suffix: str = "") -> str:
    return "—" if x is None or not math.isfinite(x) else format(x, spec) + suffix


def _pm(mean: float, half: float) -> str:
    """``"31.2 ± 1.4 %"``, or ``"31.2 % (± —)"`` when the interval is undefined (one seed)."""
    if not math.isfinite(mean):
        return "—"
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


def _ratio_cell(row: dict[str, Any], column: str) -> str:
    """``"0.56× [0.41, 0.70]"``: the ratio ``column`` of ``row`` and its interval (if any)."""
    low, high = row[f"{column}_ci95_low"], row[f"{column}_ci95_high"]
    interval = "" if low is None else f" [{low:.2f}, {high:.2f}]"
    return _fmt(row[column], ".2f", "×") + interval


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
    if len(runs["commit"]) > 1 and len(runs.get("code") or []) == 1:
        commits += " (the same code: they differ outside the packages)"
    tasks = ", ".join(f"`{t}`" for t in runs["task"]) or "none recorded"
    line += f". Runs: code {commits}; task {tasks}"
    trainers = runs.get("trainer") or []
    if trainers and trainers != ["adaroll"]:
        line += f"; trainer {', '.join(f'`{t}`' for t in trainers)}"
    if len(runs["weights_sha256"]) > 1:
        line += f"; {len(runs['weights_sha256'])} different warm starts (--allow-mixed)"
    if runs["dirty"]:
        line += f"; uncommitted changes in the tree of {len(runs['dirty'])} run(s)"
    if runs["unknown"]:
        line += f"; {len(runs['unknown'])} run(s) without a provenance record"
    return line


def markdown(
    rows: list[dict[str, Any]],
    base: str,
    target: float,
    prov: dict[str, Any],
    notes: Sequence[str] = (),
) -> str:
    """``table.md``: the provenance line, the accuracy, paired and mechanism tables, then one
    line per note (runs left out, a plot not drawn)."""
    k = rows[0]["pass_k"] if all(r["pass_k"] == rows[0]["pass_k"] for r in rows) else None
    k_head = f" final pass@{k} (95 % CI) |" if k else ""
    lines = [
        provenance_line(prov),
        "",
        f"Target: {base}'s final held-out pass@1, {100 * target:.1f} % (mean over seeds); "
        "rollouts to target: from where the curve reaches it and stays there to the end.",
        "",
        f"| entrant | seeds | start pass@1 | final pass@1 (95 % CI) |{k_head} rollouts to target "
        f"(reached) | saving vs {base} | seconds per step | informative fraction | gradient "
        "rollouts per step | allocation overhead | minutes per run |",
        "|---|---:|---:|---:|" + ("---:|" if k else "") + "---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        saving = r["rollout_saving"]
        k_cell = f" {_pm(100 * r['final_pass@k'], 100 * r['final_pass@k_ci95'])} |" if k else ""
        lines.append(
            f"| {r['entrant']} | {r['seeds']} | {100 * r['start_pass@1']:.1f} % | "
            f"{_pm(100 * r['final_pass@1'], 100 * r['ci95'])} |{k_cell} "
            f"{_fmt(r['rollouts_to_target'], ',.0f')} ({r['reached']}) | "
            f"{_fmt(None if saving is None else 100 * saving, '+.1f', ' %')} | "
            f"{_fmt(r['seconds_per_step'], '.2f')} | "
            f"{_fmt(r['informative_frac'], '.3f')} | "
            f"{_fmt(r['gradient_rollouts_per_step'], '.1f')} | "
            f"{_fmt(100 * r['alloc_overhead'], '.1f', ' %')} | {r['minutes']:.1f} |"
        )
    k_paired = f" Δ final pass@{k} (95 % CI) | W/T/L |" if k else ""
    lines += [
        "",
        f"**Paired against {base}**, seed by seed (the same seed gives the same data order and "
        "sampling): differences with a 95 % t-interval over the seeds, in percentage points, "
        "each followed by its sign count W/T/L (seeds where the entrant is ahead / level / "
        "behind). AUC: mean held-out pass@1 over the run (area under pass@1 against rollouts, "
        "divided by the rollout span). Seconds per step: training wall clock per step, as a "
        f"ratio to {base}'s.",
        "",
        f"| entrant | seeds | Δ final pass@1 (95 % CI) | W/T/L |{k_paired} Δ AUC (95 % CI) | "
        "W/T/L | rollouts to target, ratio [95 % CI] | seconds per step, ratio | wall-clock to "
        "target, ratio [95 % CI] |",
        "|---|---:|---:|---:|" + ("---:|---:|" if k else "") + "---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        if r["entrant"] == base or r["paired_seeds"] == 0:
            continue
        n, reached = r["paired_seeds"], r["paired_reached"]
        k_cells = (
            f" {_delta(r['delta_pass_k'], r['delta_pass_k_ci95'])} | {r['signs_pass_k'] or '—'} |"
            if k
            else ""
        )
        if reached < n:  # no ratio: the interval is shown only when every seed reached it
            to_target, seconds = f"— ({reached}/{n} reached)", "—"
        else:
            to_target = f"{_ratio_cell(r, 'rollouts_ratio')} ({n}/{n})"
            seconds = _ratio_cell(r, "seconds_ratio")
        lines.append(
            f"| {r['entrant']} | {n} | {_delta(r['delta_final'], r['delta_final_ci95'])} | "
            f"{r['signs_final'] or '—'} |{k_cells} "
            f"{_delta(r['delta_auc'], r['delta_auc_ci95'])} | {r['signs_auc'] or '—'} | "
            f"{to_target} | "
            f"{_fmt(r['step_seconds_ratio'], '.2f', '×')} | {seconds} |"
        )
    lines += [
        "",
        f"Rollouts to target: the rollouts from which the entrant's held-out pass@1 curve "
        f"reaches {base}'s final pass@1 of the same seed and stays there to the end (linear "
        f"between evaluations); the ratio is the entrant's mean over seeds divided by {base}'s "
        "own (the rollouts from which its curve stays at its final value); wall-clock to target "
        "likewise in training seconds. The interval is a 95 % percentile bootstrap over seeds "
        f"({BOOTSTRAP_RESAMPLES:,} resamples, seed {BOOTSTRAP_SEED}), given only when every "
        "seed reached the target (else k/n reached, and no ratio) and there are two or more.",
        "",
        "**Mechanism**, per step (means over seeds and steps; gradient and update norms over the "
        "steps that measured them; allocation overhead: median; rollouts generated: every "
        "completion sampled, C-GRPO's conformal fits included, per step over the run, from the "
        "last evaluation's rollouts and step).",
        "",
        "| entrant | gradient rollouts | distinct informative prompts | informative "
        "fraction | rounds | gradient norm | update norm | seconds | allocation overhead | "
        "rollouts generated |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['entrant']} | {_fmt(r['gradient_rollouts_per_step'], '.1f')} | "
            f"{_fmt(r['informative_prompts_per_step'], '.1f')} | "
            f"{_fmt(r['informative_frac'], '.3f')} | {_fmt(r['rounds_per_step'], '.1f')} | "
            f"{_fmt(r['grad_norm_per_step'], '.3g')} | {_fmt(r['update_norm_per_step'], '.3g')} | "
            f"{_fmt(r['seconds_per_step'], '.2f')} | "
            f"{_fmt(100 * r['alloc_overhead'], '.1f', ' %')} | "
            f"{_fmt(r.get('rollouts_per_step'), ',.1f')} |"
        )
    if notes:
        lines += ["", *notes]
    return "\n".join(lines) + "\n"
