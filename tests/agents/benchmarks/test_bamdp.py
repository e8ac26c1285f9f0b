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
