"""Tests of agents.benchmarks.bamdp (``scripts/bench_bamdp.py``): its settings, the benchmark
config of each part, bamdp's paired differences, and the report file (the parts themselves run
minutes, so they are replaced here by hand-made results)."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from adaroll_env.priors import fit_beta
from adaroll_env.stats import mean_ci
from agents.benchmarks import bamdp as report
from agents.benchmarks.bamdp import BamdpBenchConfig


def test_bayes_settings():
    a, b = fit_beta("rlvr")
    got = report.bayes_settings()
    assert got == ["u-shaped", f"beta({a:.6g},{b:.6g})", "rlvr"]
    assert got[1] == "beta(0.474835,0.571057)"


def test_bench_config_of_a_part(tmp_path):
    cfg = BamdpBenchConfig(envs="rounds", seed=5, workers=1, out=str(tmp_path))
    bench = report._bench_config(
        cfg, "uniform,bamdp", ["u-shaped", "rlvr"], 8, 4, "pre", exact=False
    )
    assert (bench.allocators, bench.envs, bench.difficulties) == (
        "uniform,bamdp",
        "rounds",
        "u-shaped,rlvr",
    )
    assert (bench.utilities, bench.num_questions, bench.group_sizes) == ("informative", 8, "8")
    assert (bench.episodes, bench.seed, bench.workers, bench.out) == (4, 5, 1, str(tmp_path))
    assert bench.name.startswith("pre-") and bench.exact is False


def test_bamdp_differences_are_paired_by_episode():
    rows = [
        {"setting": "A", "allocator": "uniform"},
        {"setting": "A", "allocator": "bamdp"},
        {"setting": "B", "allocator": "uniform"},  # no bamdp in this setting
    ]
    episodes = [
        {"setting": "A", "allocator": "uniform", "episode": 0, "utility": 1.0},
        {"setting": "A", "allocator": "uniform", "episode": 1, "utility": 3.0},
        {"setting": "A", "allocator": "uniform", "episode": 2, "utility": 2.0},
        {"setting": "A", "allocator": "bamdp", "episode": 2, "utility": 4.0},
        {"setting": "A", "allocator": "bamdp", "episode": 0, "utility": 2.0},
        {"setting": "A", "allocator": "bamdp", "episode": 1, "utility": 3.0},
        {"setting": "B", "allocator": "uniform", "episode": 0, "utility": 1.0},
    ]
    out = report._with_bamdp_differences(rows, episodes)
    assert out is rows
    # bamdp − uniform by episode: 1, 0, 2
    assert rows[0]["bamdp_minus"] == pytest.approx(1.0)
    assert rows[0]["bamdp_minus_ci"] == pytest.approx(mean_ci([1.0, 0.0, 2.0])[1])
    assert rows[1]["bamdp_minus"] == 0.0 and rows[1]["bamdp_minus_ci"] == 0.0
    assert math.isnan(rows[2]["bamdp_minus"]) and math.isnan(rows[2]["bamdp_minus_ci"])


def test_main_writes_the_report_of_the_parts_it_ran(tmp_path, monkeypatch, capsys):
    timing = {
        "table_build_cap256_numpy_s": 0.25,
        "round_512_at_B512_ms_median": 1.5,
        "sequential_act_at_B512_us_median": 20.0,
    }
    monkeypatch.setattr(report, "timing", lambda cfg: timing)
    monkeypatch.setattr(report, "quality", lambda cfg: pytest.fail("quality was not asked for"))
    cfg = BamdpBenchConfig(parts="timing", out=str(tmp_path / "out"))
    got = report.main(cfg)
    written = json.loads((tmp_path / "out" / "bench_bamdp.json").read_text())
    assert written == got == {"config": dataclasses.asdict(cfg), "timing": timing}
    out = capsys.readouterr().out
    assert "0.250 s" in out and "1.50 ms" in out and "20.0 µs" in out
    assert "numba" not in out  # only the builds that were timed are shown


def test_schedule_values_of_the_rounds_grid():
    assert report._schedule_value("4", 512) == "4"
    assert report._schedule_value("0.75+0.25", 512) == "384+128"
    assert report._schedule_value("0.75+0.25", 4096) == "3072+1024"
    assert report._schedule_value("0.5+0.3+0.2", 100) == "50+30+20"


def _grid_episodes(setting, utilities):
    return [
        {"setting": setting, "allocator": name, "episode": i, "utility": u}
        for name, values in utilities.items()
        for i, u in enumerate(values)
    ]


def test_rounds_summary_takes_the_closest_competitor_paired_and_skips_the_oracle():
    utilities = {
        "uniform": [1.0, 1.0, 1.0],
        "bamdp": [2.0, 3.0, 4.0],
        "vip": [2.5, 2.0, 4.5],  # bamdp − vip by episode: -0.5, 1, -0.5
        "oracle": [9.0, 9.0, 9.0],
    }
    rows = [
        {"setting": "S", "allocator": n, "mean_utility": sum(v) / 3, "ci95": 0.3, "bound": 3.2}
        for n, v in utilities.items()
    ]
    [r] = report.summarise_rounds(rows, _grid_episodes("S", utilities))
    assert r["min_diff_vs"] == "vip"
    assert r["min_diff"] == pytest.approx(0.0)
    assert r["min_diff_ci"] == pytest.approx(mean_ci([-0.5, 1.0, -0.5])[1])
    assert r["gap_pct"] == pytest.approx(100 * (3.2 - 3.0) / 3.2)
    assert r["gap_ci_pct"] == pytest.approx(100 * 0.3 / 3.2)
    assert r["means"]["oracle"] == 9.0


def test_rounds_verdict_counts_the_targets_and_names_the_misses():
    rows = [
        {"B": 64, "setting": "rounds/u-shaped/snr(8)/G=8/rounds=2", "gap_pct": 0.5,
         "gap_ci_pct": 0.4, "min_diff": 0.1, "min_diff_ci": 0.2, "min_diff_vs": "vip"},
        {"B": 64, "setting": "rounds/u-shaped/snr(4)/G=8/rounds=4", "gap_pct": 1.4,
         "gap_ci_pct": 0.9, "min_diff": -0.3, "min_diff_ci": 0.1, "min_diff_vs": "kg"},
        {"B": 64, "setting": "rounds/rlvr/snr(8)/G=8/rounds=2", "gap_pct": None,
         "gap_ci_pct": None, "min_diff": -0.1, "min_diff_ci": 0.2, "min_diff_vs": "vip"},
    ]  # fmt: skip
    text = report.rounds_verdict(rows)
    assert "within 1 % of the rounds-aware bound in 1 of 2 Bayes settings" in text
    assert "u-shaped/snr(4)/rounds=4 (1.40% ± 0.90%)" in text
    assert "in 2 of 3 settings" in text and "(vs kg: -0.300 ± 0.100)" in text


def test_the_rounds_grid_passes_its_allocator_kwargs(monkeypatch, tmp_path):
    seen = []

    def stop(bench):
        seen.append(bench)
        raise RuntimeError("stop here")

    monkeypatch.setattr(report, "run_benchmark", stop)
    even = '{"bamdp": {"round_split": "even"}}'
    cfg = BamdpBenchConfig(parts="rounds", rounds_b="8", rounds_episodes="2",
                           rounds_allocator_kwargs=even, out=str(tmp_path))  # fmt: skip
    with pytest.raises(RuntimeError, match="stop here"):
        report.rounds_grid(cfg)
    assert seen[0].allocator_kwargs == even
    monkeypatch.undo()
    typo = BamdpBenchConfig(parts="rounds", rounds_b="8", rounds_episodes="2",
                            rounds_allocator_kwargs='{"bamdp": {"round_splt": "even"}}',
                            out=str(tmp_path))  # fmt: skip
    with pytest.raises((TypeError, ValueError), match="round_splt"):
        report.rounds_grid(typo)
