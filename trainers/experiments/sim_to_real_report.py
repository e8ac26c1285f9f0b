"""The report of ``adaroll bench --from-run``: entrants over seeds, rank agreement, Markdown.

``entrant_rows`` averages each entrant's runs (the mean of the per-run means, with a CI over the
seeds when there are two or more); ``rankings`` says per metric whether the simulator orders the
entrants as live training did (no pair ordered the other way; ties count as agreeing) and, from
three entrants, Spearman's rank correlation; ``field_rows`` sets a competition's whole field
against its outcome (the simulator's gradient-carrying rollouts per step and gain over the
baseline, the live ones over the whole run and the live difference in final pass@1, and
Spearman's correlation of the orderings); ``markdown`` writes the tables.
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING, Any

from adaroll_env.stats import mean_ci
from agents.benchmarks.mechanism import MECHANISM
from agents.benchmarks.tables import MECHANISM_DIGITS

if TYPE_CHECKING:
    from agents.benchmarks.config import BenchConfig
    from trainers.experiments.sim_to_real import FromRunResult

__all__ = ["entrant_rows", "field_rows", "markdown", "rankings", "spearman"]

Figure = dict[str, float | None]


def _combine(figures: list[Figure]) -> Figure:
    """One figure from several runs' figures: the mean of their means, CI over the runs."""
    if not figures:
        return {"mean": None, "ci95": None}
    if len(figures) == 1:
        return dict(figures[0])
    mean, ci = mean_ci([float(f["mean"]) for f in figures if f["mean"] is not None])
    return {"mean": mean, "ci95": None if math.isnan(ci) else ci}


def entrant_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (comparison, entrant): its runs' predicted and live figures combined."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["comparison"], r["entrant"]), []).append(r)
    out = []
    for (comparison, entrant), rs in groups.items():
        row: dict[str, Any] = {
            "comparison": comparison,
            "entrant": entrant,
            "allocator": rs[0]["allocator"],
            "runs": len(rs),
            "seeds": [r["seed"] for r in rs],
            "simulated_runs": sum(1 for r in rs if r["error"] is None),
            "errors": [r["error"] for r in rs if r["error"] is not None],
        }
        for side in ("predicted", "live"):
            row[side] = {
                k: _combine([r[side][k] for r in rs if r[side][k]["mean"] is not None])
                for k in MECHANISM
            }
        out.append(row)
    return out


def _discordant(pairs: list[tuple[str, float, float]]) -> int:
    """Pairs of entrants that the simulator and live training order the opposite way."""
    n = 0
    for i, (_, p1, l1) in enumerate(pairs):
        for _, p2, l2 in pairs[i + 1 :]:
            n += (p1 - p2) * (l1 - l2) < 0
    return n


def _order(values: list[tuple[str, float]]) -> str:
    """Names from the largest value down: ``a > b = c`` (``=`` joins equal values)."""
    ranked = sorted(values, key=lambda x: -x[1])
    text = ranked[0][0]
    for (_, prev), (name, value) in itertools.pairwise(ranked):
        text += (" = " if value == prev else " > ") + name
    return text


def rankings(entrants: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per comparison with two or more entrants and per metric: whether the simulated figures
    order the entrants as the live ones do, and Spearman's rank correlation (three or more)."""
    out = []
    for comparison in dict.fromkeys(e["comparison"] for e in entrants):
        sub = [e for e in entrants if e["comparison"] == comparison]
        for key in MECHANISM:
            pairs = [
                (e["entrant"], e["predicted"][key]["mean"], e["live"][key]["mean"])
                for e in sub
                if e["predicted"][key]["mean"] is not None and e["live"][key]["mean"] is not None
            ]
            if len(pairs) < 2:
                continue
            rho = spearman([p for _, p, _ in pairs], [q for _, _, q in pairs])
            bad = _discordant(pairs)
            out.append(
                {
                    "comparison": comparison,
                    "metric": key,
                    "entrants": [name for name, _, _ in pairs],
                    "predicted": {name: p for name, p, _ in pairs},
                    "live": {name: q for name, _, q in pairs},
                    "order_predicted": _order([(n, p) for n, p, _ in pairs]),
                    "order_live": _order([(n, q) for n, _, q in pairs]),
                    "same_order": bad == 0,
                    "discordant_pairs": bad,
                    "spearman": rho,
                }
            )
    return out


def spearman(xs: list[float], ys: list[float]) -> float | None:
    """Spearman's rank correlation of ``xs`` and ``ys`` (``scipy.stats.spearmanr``, ties
    ranked by their mean rank); None with fewer than three pairs or a constant side."""
    from scipy.stats import spearmanr

    if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    rho = float(spearmanr(xs, ys)[0])
    return None if math.isnan(rho) else rho


def _mean(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def field_rows(
    rows: list[dict[str, Any]], baselines: dict[str, str | None]
) -> list[dict[str, Any]]:
    """Per competition (``baselines``: comparison -> its baseline entrant, None when it has no
    run), the whole field against the outcome of live training.

    Per entrant, means over its runs: ``predicted`` gradient-carrying rollouts per step (the
    simulator's), ``predicted_gain`` (that over the baseline's, minus 1), ``live`` gradient
    rollouts per step over the whole run (``live_all_steps``), and ``delta_final``, the live
    final held-out pass@1 minus the baseline's, mean over the seeds both ran (``paired_seeds``).
    ``spearman``: the rank correlation of the simulator's ordering (``predicted``) with the
    live gradient rollouts and with ``delta_final``, each with ``n``, the entrants with both.
    """
    out = []
    for comparison, base in baselines.items():
        runs = [r for r in rows if r["comparison"] == comparison]
        finals = {(r["entrant"], r["seed"]): r.get("final_pass@1") for r in runs}
        entrants = []
        for name in dict.fromkeys(r["entrant"] for r in runs):
            rs = [r for r in runs if r["entrant"] == name]
            seeds = [r["seed"] for r in rs]
            pairs = [(finals[(name, s)], finals.get((base, s))) for s in seeds if base is not None]
            deltas = [a - b for a, b in pairs if a is not None and b is not None]
            entrants.append(
                {
                    "entrant": name,
                    "seeds": seeds,
                    "predicted": _mean(
                        [r["predicted"]["gradient_rollouts"]["mean"] for r in rs if not r["error"]]
                    ),
                    "live": _mean([r["live_all_steps"]["gradient_rollouts"]["mean"] for r in rs]),
                    "delta_final": _mean(list(deltas)),
                    "paired_seeds": len(deltas),
                }
            )
        by_name = {e["entrant"]: e for e in entrants}
        base_pred = by_name[base]["predicted"] if base in by_name else None
        for e in entrants:
            ok = e["predicted"] is not None and base_pred is not None and base_pred > 0
            e["predicted_gain"] = e["predicted"] / base_pred - 1 if ok else None
        corr = {}
        for live in ("live", "delta_final"):
            both = [e for e in entrants if e["predicted"] is not None and e[live] is not None]
            corr[live] = {
                "rho": spearman([e["predicted"] for e in both], [e[live] for e in both]),
                "n": len(both),
            }
        out.append(
            {"comparison": comparison, "baseline": base, "entrants": entrants, "spearman": corr}
        )
    return out


def _field_lines(report: dict[str, Any]) -> list[str]:
    """The field table of one competition and its rank correlations."""
    base = report["baseline"] or "the baseline"

    def num(x: float | None, spec: str) -> str:
        return "—" if x is None else format(x, spec)

    lines = [
        "",
        f"The field against live training (baseline {base}): does the simulator's ordering "
        "predict the live one? Simulated gradient-carrying rollouts per step (mean over seeds) "
        f"and their gain over {base}'s; live: gradient rollouts per step over the whole run, "
        f"and final held-out pass@1 minus {base}'s of the same seed (mean over the seeds both "
        "ran, percentage points).",
        "",
    ]
    lines += _table(
        ["entrant", "seeds", "gradient rollouts: sim", f"gain over {base}: sim",
         "gradient rollouts: live", f"Δ final pass@1 vs {base}: live"],
        [
            [e["entrant"], str(len(e["seeds"])), num(e["predicted"], ".1f"),
             num(None if e["predicted_gain"] is None else 100 * e["predicted_gain"], "+.1f")
             + ("" if e["predicted_gain"] is None else " %"),
             num(e["live"], ".1f"),
             num(None if e["delta_final"] is None else 100 * e["delta_final"], "+.2f")
             + ("" if e["delta_final"] is None else
                f" pts ({e['paired_seeds']} seed{'s' * (e['paired_seeds'] != 1)})")]
            for e in report["entrants"]
        ],
    )  # fmt: skip
    rho = report["spearman"]
    parts = []
    for key, what in (("live", "live gradient rollouts per step"),
                      ("delta_final", "live Δ final pass@1")):  # fmt: skip
        r = rho[key]
        value = "— (needs 3 entrants, each ordering not constant)" if r["rho"] is None else (
            f"{r['rho']:+.2f}")  # fmt: skip
        parts.append(f"with the {what}: {value} (n = {r['n']} entrants)")
    lines += ["", "Spearman rank correlation of the simulator's ordering " + "; ".join(parts) + "."]
    return lines


def _cell(figure: Figure, key: str) -> str:
    if figure["mean"] is None:
        return "—"
    d = MECHANISM_DIGITS[key]
    ci = "" if figure["ci95"] is None else f" ± {figure['ci95']:.{d}f}"
    return f"{figure['mean']:.{d}f}{ci}"


def _figure_heads() -> list[str]:
    heads = []
    for title in MECHANISM.values():
        heads += [f"{title}: sim", "live"]
    return heads


def _figure_cells(row: dict[str, Any]) -> list[str]:
    cells = []
    for key in MECHANISM:
        cells += [_cell(row["predicted"][key], key), _cell(row["live"][key], key)]
    return cells


def _table(heads: list[str], body: list[list[str]]) -> list[str]:
    clean = [[c.replace("|", "\\|").replace("\n", " ") for c in cells] for cells in body]
    return [
        "| " + " | ".join(heads) + " |",
        "|" + "---|" * len(heads),
        *("| " + " | ".join(cells) + " |" for cells in clean),
    ]


def _run_cells(r: dict[str, Any]) -> list[str]:
    setting = f"{r['questions']} / {r['budget']} / {r['round_size']}" if "questions" in r else "—"
    kwargs = r["allocator_kwargs"]
    allocator = r["allocator"] + (f" {kwargs}" if kwargs else "")
    note = r["error"] or ""
    return [
        r["entrant"],
        "—" if r["seed"] is None else str(r["seed"]),
        allocator,
        r["utility"],
        setting,
        r.get("truth", "—"),
        r.get("belief", "—"),
        str(r["live"]["steps"]),
        *_figure_cells(r),
        note,
    ]


def markdown(result: FromRunResult, cfg: BenchConfig) -> str:
    """The report as Markdown: per comparison, its runs, its entrants (mean over seeds) and the
    rank agreement; then the notes."""
    lines = [
        "# Sim-to-real: simulated against live figures per training step",
        "",
        f"Simulator: {cfg.episodes} episodes per run (master seed {cfg.seed}); truth fitted to "
        "each run's beliefs.json (Beta-binomial maximum likelihood), belief = the prior its "
        "allocator saw live. Live: mean over each run's last steps (column 'live steps'), "
        "`gradient_rollouts`, `informative_frac`, `informative_prompts` of metrics.jsonl. "
        "Q / N / R: questions the allocator sees (the pool, for an adaptive allocator with one), "
        "budget, round size.",
    ]
    heads = [
        "entrant",
        "seed",
        "allocator",
        "utility",
        "Q / N / R",
        "truth",
        "belief",
        "live steps",
        *_figure_heads(),
        "note",
    ]
    for comparison in dict.fromkeys(r["comparison"] for r in result.runs):
        lines += ["", f"## {comparison}", ""]
        rows = [r for r in result.runs if r["comparison"] == comparison]
        lines += _table(heads, [_run_cells(r) for r in rows])
        entrants = [e for e in result.entrants if e["comparison"] == comparison]
        if any(e["runs"] > 1 for e in entrants):
            lines += ["", "Entrants, mean over seeds (CI over seeds):", ""]
            lines += _table(
                ["entrant", "runs simulated", *_figure_heads()],
                [
                    [e["entrant"], f"{e['simulated_runs']} of {e['runs']}", *_figure_cells(e)]
                    for e in entrants
                ],
            )
        ranks = [k for k in result.rankings if k["comparison"] == comparison]
        if ranks:
            lines += ["", "Does the simulator rank the entrants as live training did?", ""]
            lines += _table(
                ["metric", "same order", "Spearman", "order (sim)", "order (live)"],
                [
                    [
                        MECHANISM[k["metric"]],
                        "yes" if k["same_order"] else f"no ({k['discordant_pairs']} pairs swapped)",
                        "—" if k["spearman"] is None else f"{k['spearman']:+.2f}",
                        k["order_predicted"],
                        k["order_live"],
                    ]
                    for k in ranks
                ],
            )
        for report in result.field_report:
            if report["comparison"] == comparison:
                lines += _field_lines(report)
    per_note: dict[str, list[str]] = {}
    for r in result.runs:
        where = f"{r['comparison']}/{r['entrant']}" + ("" if r["seed"] is None else f"/{r['seed']}")
        for note in r["notes"]:
            per_note.setdefault(note, []).append(where)
    lines += ["", "Notes:", "", *(f"- {n}" for n in result.notes)]
    lines += [f"- {note} ({', '.join(where)})" for note, where in per_note.items()]
    return "\n".join(lines) + "\n"
