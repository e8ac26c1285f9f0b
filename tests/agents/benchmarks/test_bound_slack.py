import json
from pathlib import Path

import pytest

from agents.benchmarks.bound_slack import BoundSlackConfig, instance, main, measure


def test_instances_follow_the_schedule() -> None:
    p = instance(2, "snr(4)", "0.75+0.25", prior=(0.3, 0.3))
    assert (p.total_budget, p.round_schedule) == (16, (12, 4))
    assert instance(3, "snr(4)", "2", prior=(0.3, 0.3)).round_size == 12


def test_the_optimum_sits_between_the_policy_and_the_bound() -> None:
    r = measure(2, "snr(16)", "0.75+0.25", prior=(0.3, 0.3))
    assert r["policy"] <= r["optimum"] + 1e-12 <= r["bound"] + 2e-12
    assert r["slack"] == pytest.approx((r["bound"] - r["optimum"]) / r["bound"])
    # measured: a loose bound here (about 4 %), the relaxed policy optimal at B = 2
    assert r["slack"] > 0.02 and abs(r["shortfall"]) < 1e-9


def test_main_prints_and_writes_the_rows(tmp_path: Path) -> None:
    cfg = BoundSlackConfig(bs="2", utilities="snr(4)", schedules="2", out=str(tmp_path))
    report = main(cfg)
    saved = json.loads((tmp_path / "bench_bound_slack.json").read_text())
    assert saved["rows"] == report["rows"] and len(saved["rows"]) == 1
    assert saved["config"]["bs"] == "2"
