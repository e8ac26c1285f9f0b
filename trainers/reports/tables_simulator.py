"""Blocks of the simulator results page: ``bamdp`` in rounds against the bound, its decision
costs, the learned allocator, and the ``make demo`` leaderboard."""

from __future__ import annotations

from typing import Any

from trainers.reports.data import Data, Output, block
from trainers.reports.fmt import num, pm, table


@block("bamdp_rounds", "results/bamdp_rounds")
def bamdp_rounds(data: Data, out: Output) -> str:
    """The ``snr(8)`` rows of the two rounds grids (``b64_`` and ``b512_bench_bamdp.json``), and
    the benchmark's own verdict over every row (``agents.benchmarks.bamdp.rounds_verdict``)."""
    from agents.benchmarks.bamdp import _short, rounds_verdict

    parts = []
    verdicts = []
    for rel in sorted(data.glob("b*_bench_bamdp.json"), key=lambda r: int(r[1:].split("_")[0])):
        rows = data.json(rel)["rounds"]
        verdicts.append(f"- `{rel}` (B = {rows[0]['B']}): {rounds_verdict(rows)}")
        parts += [r for r in rows if "/snr(8)/" in r["setting"]]
    names: list[str] = []
    for r in parts:
        names += [n for n in r["means"] if n not in names]
    body = []
    for r in parts:
        bound = (
            "—"
            if r["bound"] is None
            else (f"{r['bound']:.2f} ({r['gap_pct']:.2f} ± {r['gap_ci_pct']:.2f} %)")
        )
        vs = _SHORT.get(r["min_diff_vs"], r["min_diff_vs"])
        closest = (
            "—" if r["min_diff"] is None else f"{r['min_diff']:+.2f} ± {r['min_diff_ci']:.2f} {vs}"
        )
        prior, _, schedule = _short(r["setting"]).replace("/snr(8)", "").partition("/rounds=")
        schedule = f"{schedule} rounds" if schedule.isdigit() else schedule
        body.append([
            r["B"], f"{prior}, {schedule}",
            *(num(r["means"].get(n), ".2f") for n in names),
            bound, closest,
        ])  # fmt: skip
    head = ["B", "setting (`snr(8)`)", *(_SHORT.get(n, n) for n in names),
            "bound (gap of bamdp, 95 % CI)", "bamdp − closest other"]  # fmt: skip
    return (
        table(head, body, "rl" + "r" * (len(names) + 2))
        + "\n\nMean utility per episode; `u-shaped` is Beta(0.3, 0.3), `Beta fit to rlvr` the "
        "Beta fitted to the `rlvr` profile (both Bayes settings: the bound applies), `rlvr` the "
        'misspecified mixture (no bound); kg is `knowledge_gradient`; "bamdp − closest other" '
        "the smallest paired difference to a non-oracle competitor, 95 % CI. Every utility, by "
        "the benchmark's own verdict:\n\n" + "\n".join(verdicts)
    )


#: short column names for the wide grid
_SHORT = {"knowledge_gradient": "kg"}


#: the timing report's keys: what each measures, its unit and the design's target
_TIMING = {
    "table_build_cap256_numpy_s": ("index table, max group 256, numpy", "s", "< 1 s"),
    "table_build_cap256_numba_s": ("index table, max group 256, numba (`jit` extra)", "s", "< 1 s"),
    "round_512_at_B512_ms_median": ("a round of 512 at B = 512 (eight rounds)", "ms", "< 2 ms"),
    "round_2048_at_B512_ms_median": ("a round of 2,048 at B = 512 (two rounds)", "ms", "< 2 ms"),
    "rounds_plan_new_prior_s_median": ("the rounds plan of a new prior, two rounds at B = 512", "s",
                                       "< 1 s"),
    "sequential_act_at_B512_us_median": ("a sequential `act(obs)` at B = 512", "µs", "< 50 µs"),
}  # fmt: skip


@block("bamdp_timing", "results/bamdp_rounds")
def bamdp_timing(data: Data, out: Output) -> str:
    """``timing_bench_bamdp.json``: the decision costs against their targets."""
    timing = data.json("timing_bench_bamdp.json")["timing"]
    body = []
    for key, value in timing.items():
        what, unit, target = _TIMING.get(key, (f"`{key}`", "", "—"))
        spec = ".3f" if unit == "s" else ".2f" if unit == "ms" else ".1f"
        body.append([what, f"{value:{spec}} {unit}".strip(), target])
    return table(["what", "measured (median)", "target"], body, "lrr") + (
        "\n\nFrom `timing_bench_bamdp.json` (`python scripts/bench_bamdp.py --parts timing`)."
    )


def _sb3_rows(report: dict[str, Any]) -> list[list[Any]]:
    return [
        [
            r["setting"], f"`{r['allocator']}`", f"{r['uniform']:.3f}", f"{r['bamdp']:.3f}",
            f"{r['learned']:.3f}", pm(r["bamdp_gain"], r["bamdp_gain_ci"], "+.3f"),
            pm(r["gain"], r["gain_ci"], "+.3f"),
            f"**{100 * r['ratio']:.1f} %** [{100 * r['ratio_lo']:.1f}, {100 * r['ratio_hi']:.1f}]",
            r["episodes"],
        ]
        for r in report["quality"]
    ]  # fmt: skip


_SB3_HEAD = ["setting (`snr(8)`)", "allocator", "uniform", "bamdp", "learned", "bamdp gain",
             "learned gain", "learned / bamdp gain [95 % CI]", "episodes"]  # fmt: skip


@block("sb3_quality", "results/bamdp_rounds")
def sb3_quality(data: Data, out: Output) -> str:
    """``bench_sb3_retrained.json`` (the shipped model) and, marked superseded,
    ``bench_sb3.json`` (the model shipped before)."""
    now = table(_SB3_HEAD, _sb3_rows(data.json("bench_sb3_retrained.json")), "ll" + "r" * 7)
    before = table(_SB3_HEAD, _sb3_rows(data.json("bench_sb3.json")), "ll" + "r" * 7)
    return (
        now + "\n\nFrom `bench_sb3_retrained.json`. **Superseded**, the model shipped before (PPO "
        "from scratch against the index-rule `bamdp`; `bench_sb3.json`, 2026-12-04):\n\n" + before
    )


@block("sb3_quality_seed1", "results/bamdp_rounds")
def sb3_quality_seed1(data: Data, out: Output) -> str:
    """``bench_sb3_seed1_4000.json``: the shipped model measured again with 4,000 episodes a
    setting on master seed 1, and its ratio pooled with ``bench_sb3_retrained.json``'s (the two
    measurements' gains weighted by their episodes)."""
    new = data.json("bench_sb3_seed1_4000.json")["quality"]
    old = {r["setting"]: r for r in data.json("bench_sb3_retrained.json")["quality"]}
    rows = _sb3_rows({"quality": new})
    for row, r in zip(rows, new, strict=True):
        o = old[r["setting"]]
        n, m = r["episodes"], o["episodes"]
        learned = (r["gain"] * n + o["gain"] * m) / (n + m)
        bamdp = (r["bamdp_gain"] * n + o["bamdp_gain"] * m) / (n + m)
        row.append(f"{100 * learned / bamdp:.1f} % ({n + m:,} episodes)")
    return table([*_SB3_HEAD, "pooled with the 1,000 above"], rows, "ll" + "r" * 8)


@block("sb3_curves", "results/bamdp_rounds/curve_policy")
def sb3_curves(data: Data, out: Output) -> str:
    """The curve policy's measurement by its rule (``README.md`` there): the candidate on
    common-outcome episodes (the rule's read), the model it replaced on the same episodes, and
    the candidate on binomial episodes, 4,000 paired episodes a setting, master seed 7."""
    runs = [
        ("curve policy (shipped since 2026-12-07), common outcomes", "bench_curves_common.json"),
        ("equivariant weights (shipped before), common outcomes", "bench_shipped_common.json"),
        ("curve policy, binomial outcomes", "bench_curves_binomial.json"),
    ]
    rows = []
    for label, name in runs:
        for row in _sb3_rows(data.json(name)):
            rows.append([label, *row[:1], *row[2:]])
    head = ["model, outcomes", _SB3_HEAD[0], *_SB3_HEAD[2:]]
    return table(head, rows, "ll" + "r" * 7) + (
        "\n\nFrom `results/bamdp_rounds/curve_policy/bench_*.json` (commands, plan and rule in "
        "its `README.md`)."
    )


@block("leaderboard", "results/demo_leaderboard")
def leaderboard(data: Data, out: Output) -> str:
    """``summary.csv`` through the benchmark's own table (``agents.benchmarks.tables``), best
    mean utility first."""
    from agents.benchmarks.tables import markdown_table

    rows = sorted(data.csv("summary.csv"), key=lambda r: -r["mean_utility"])
    versions = data.json("versions.json")
    cfg = data.json("config.json")
    return markdown_table(rows).rstrip("\n") + (
        f"\n\nFrom `summary.csv` by `adaroll bench`'s table (`agents.benchmarks.tables`), rows "
        f"by mean utility; {cfg['episodes']} paired episodes, seed {cfg['seed']}, "
        f"adaroll {versions.get('adaroll', '?')}, numpy {versions.get('numpy', '?')}."
    )
