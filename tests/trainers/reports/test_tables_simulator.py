"""The simulator page's blocks (``trainers.reports.tables_simulator``) on tiny hand-made
reports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainers.reports.tables_simulator import (
    _sb3_rows,
    bamdp_rounds,
    bamdp_timing,
    leaderboard,
    sb3_quality,
    sb3_quality_seed1,
)

PAGE = "simulator"  # the page of the report_folder fixture's Output


def _row(setting: str, B: int, **kw: Any) -> dict[str, Any]:
    row = {"setting": setting, "B": B, "means": {"uniform": 10.0, "bamdp": 11.0},
           "bound": None, "gap_pct": None, "gap_ci_pct": None, "min_diff": None,
           "min_diff_ci": None, "min_diff_vs": None}  # fmt: skip
    return {**row, **kw}


def test_bamdp_rounds_keeps_snr8_rows_orders_files_by_B_and_gives_each_verdict(
    tmp_path: Path,
    report_folder: Any,
) -> None:
    b64 = [
        _row("rounds/u-shaped/snr(8)/G=8/rounds=2", 64,
             means={"uniform": 10.0, "bamdp": 11.0, "knowledge_gradient": 10.5}, bound=11.05,
             gap_pct=0.45, gap_ci_pct=0.1, min_diff=0.5, min_diff_ci=0.2,
             min_diff_vs="knowledge_gradient"),
        _row("rounds/u-shaped/snr(2)/G=8/rounds=2", 64, bound=12.0, gap_pct=8.3,
             gap_ci_pct=0.5, min_diff=-0.25, min_diff_ci=0.125, min_diff_vs="vip"),
    ]  # fmt: skip
    b512 = [_row("rounds/rlvr/snr(8)/G=8/rounds=384+128", 512, min_diff=0.75, min_diff_ci=0.5,
                 min_diff_vs="vip")]  # fmt: skip
    # "b512" sorts before "b64" as text: the block orders by B
    data, out = report_folder({"b512_bench_bamdp.json": {"rounds": b512},
                                   "b64_bench_bamdp.json": {"rounds": b64}})  # fmt: skip
    text = bamdp_rounds.make(data, out)
    table, _, rest = text.partition("\n\n")
    assert table == (
        "| B | setting (`snr(8)`) | uniform | bamdp | kg | bound (gap of bamdp, 95 % CI) "
        "| bamdp − closest other |\n"
        "|---:|---|---:|---:|---:|---:|---:|\n"
        "| 64 | u-shaped, 2 rounds | 10.00 | 11.00 | 10.50 | 11.05 (0.45 ± 0.10 %) "
        "| +0.50 ± 0.20 kg |\n"
        "| 512 | rlvr, 384+128 | 10.00 | 11.00 | — | — | +0.75 ± 0.50 vip |"
    )
    verdicts = rest.split("\n\n")[-1].splitlines()
    assert verdicts == [
        "- `b64_bench_bamdp.json` (B = 64): bamdp within 1 % of the rounds-aware bound in 1 of "
        "2 Bayes settings; above: B=64 u-shaped/snr(2)/rounds=2 (8.30% ± 0.50%). No worse than "
        "any non-oracle allocator (paired 95 % CI) in 1 of 2 settings; worse: B=64 "
        "u-shaped/snr(2)/rounds=2 (vs vip: -0.250 ± 0.125).",
        "- `b512_bench_bamdp.json` (B = 512): bamdp within 1 % of the rounds-aware bound in 0 "
        "of 0 Bayes settings. No worse than any non-oracle allocator (paired 95 % CI) in 1 of 1 "
        "settings.",
    ]


def test_bamdp_timing_names_known_keys_with_their_units_and_targets(report_folder: Any) -> None:
    timing = {"table_build_cap256_numpy_s": 0.28976, "round_512_at_B512_ms_median": 0.708,
              "sequential_act_at_B512_us_median": 11.34, "new_key": 3.0}  # fmt: skip
    data, out = report_folder({"timing_bench_bamdp.json": {"timing": timing}})
    assert bamdp_timing.make(data, out) == (
        "| what | measured (median) | target |\n|---|---:|---:|\n"
        "| index table, max group 256, numpy | 0.290 s | < 1 s |\n"
        "| a round of 512 at B = 512 (eight rounds) | 0.71 ms | < 2 ms |\n"
        "| a sequential `act(obs)` at B = 512 | 11.3 µs | < 50 µs |\n"
        "| `new_key` | 3.0 | — |\n\n"
        "From `timing_bench_bamdp.json` (`python scripts/bench_bamdp.py --parts timing`)."
    )


_SB3 = {"setting": "B=16", "allocator": "sb3:x", "uniform": 4.0, "bamdp": 4.25, "learned": 4.5,
        "gain": 0.5, "gain_ci": 0.125, "bamdp_gain": 0.25, "bamdp_gain_ci": None, "ratio": 2.0,
        "ratio_lo": 1.5, "ratio_hi": 2.5, "episodes": 100}  # fmt: skip


def test_sb3_rows_and_the_superseded_table(report_folder: Any) -> None:
    assert _sb3_rows({"quality": [_SB3]}) == [[
        "B=16", "`sb3:x`", "4.000", "4.250", "4.500", "+0.250", "+0.500 ± 0.125",
        "**200.0 %** [150.0, 250.0]", 100,
    ]]  # fmt: skip
    old = {**_SB3, "learned": 4.0, "gain": 0.0, "ratio": 0.0, "ratio_lo": -0.5, "ratio_hi": 0.5}
    data, out = report_folder({"bench_sb3_retrained.json": {"quality": [_SB3]},
                                   "bench_sb3.json": {"quality": [old]}})  # fmt: skip
    now, superseded = sb3_quality.make(data, out).split("**Superseded**")
    assert "| B=16 | `sb3:x` | 4.000 | 4.250 | 4.500 | +0.250 | +0.500 ± 0.125 |" in now
    assert now.splitlines()[1] == "|---|---|" + "---:|" * 7
    assert "| **0.0 %** [-50.0, 50.0] | 100 |" in superseded
    assert "**200.0 %**" not in superseded


def test_sb3_second_measurement_pools_gains_by_episodes(report_folder: Any) -> None:
    # first: gains 0.5 of 0.25 over 100 episodes; second: 0.25 of 0.5 over 300:
    # pooled (0.5·100 + 0.25·300) / (0.25·100 + 0.5·300) = 125 / 175 = 71.4 %
    second = {**_SB3, "gain": 0.25, "bamdp_gain": 0.5, "ratio": 0.5, "episodes": 300}
    data, out = report_folder({"bench_sb3_retrained.json": {"quality": [_SB3]},
                               "bench_sb3_seed1_4000.json": {"quality": [second]}})  # fmt: skip
    text = sb3_quality_seed1.make(data, out)
    assert text.splitlines()[0].endswith("| pooled with the 1,000 above |")
    assert text.splitlines()[1] == "|---|---|" + "---:|" * 8
    assert "| **50.0 %** [150.0, 250.0] | 300 | 71.4 % (400 episodes) |" in text


def test_leaderboard_puts_the_best_mean_utility_first(report_folder: Any) -> None:
    columns = (
        "setting,env,difficulty,utility_name,group_size,rounds,round_size,allocator,"
        "reference_only,episodes,mean_utility,ci95,gain,gain_ci95,gain_pct,gradient_rollouts,"
        "gradient_rollouts_ci95,informative_prompts,informative_prompts_ci95,informative_frac,"
        "informative_frac_ci95,decisions,ms_per_batch,episodes_per_s,exact_value,bound,gap_pct,"
        "gap_ci_pct"
    )
    rest = ",False,300,{u},0.2,0.0,0.0,0.0,310.0,3.5,38.0,0.4,0.6,0.01,8.0,0.9,246.0,,,nan,nan"
    csv = "\n".join([
        columns,
        "s,rounds,rlvr,snr(8),8,,64,uniform" + rest.format(u=16.5),
        "s,rounds,rlvr,snr(8),8,,64,bamdp" + rest.format(u=17.25),
    ])  # fmt: skip
    data, out = report_folder({"summary.csv": csv + "\n",
                                   "versions.json": {"adaroll": "0.1.0"},
                                   "config.json": {"episodes": 300, "seed": 7}})  # fmt: skip
    text = leaderboard.make(data, out)
    lines = text.splitlines()
    assert lines[2].startswith("| s | bamdp |") and lines[3].startswith("| s | uniform |")
    assert text.endswith(
        "rows by mean utility; 300 paired episodes, seed 7, adaroll 0.1.0, numpy ?."
    )
