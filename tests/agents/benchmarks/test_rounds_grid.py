"""``adaroll bench --rounds`` and the mechanism columns (gradient-carrying rollouts, informative
prompts and fraction) beside every utility."""

import csv
import json

import pytest

from agents.benchmarks import BenchConfig, mean_ci, run_benchmark


def _cfg(tmp_path, **kw):
    base = dict(
        allocators="uniform,bamdp",
        num_questions=6,
        group_sizes="4",
        episodes=8,
        seed=3,
        workers=1,
        out=str(tmp_path),
        name="run",
        progress=False,
    )
    base.update(kw)
    return BenchConfig(**base)


def test_episode_records_carry_the_mechanism(tmp_path):
    # Independent checks: under 'informative' the utility is the number of mixed groups, and
    # uniform's single round gives every question G = 4 rollouts.
    cfg = _cfg(tmp_path, allocators="uniform", episodes=20, utilities="informative")
    res = run_benchmark(cfg, write=False)
    for e in res.episodes:
        assert e["informative_prompts"] == e["utility"]
        assert e["gradient_rollouts"] == 4 * e["informative_prompts"]
        assert e["informative_frac"] == e["informative_prompts"] / 6


def test_rounds_grid_rows_columns_and_files(tmp_path):
    cfg = _cfg(tmp_path, rounds="1,2")
    assert cfg.rounds_list == [1, 2]
    res = run_benchmark(cfg)
    assert len(res.rows) == 4  # 2 rounds x 2 allocators
    by = {(r["rounds"], r["allocator"]): r for r in res.rows}
    assert by[(1, "uniform")]["round_size"] == 24 and by[(2, "bamdp")]["round_size"] == 12
    assert by[(1, "bamdp")]["setting"].endswith("/G=4/rounds=1")
    for e in res.episodes:  # N = 24: rounds=1 is one decision of 24, rounds=2 two of 12
        assert e["decisions"] == (1 if e["setting"].endswith("rounds=1") else 2)
    for r in res.rows:
        recs = [
            e["gradient_rollouts"]
            for e in res.episodes
            if e["setting"] == r["setting"] and e["allocator"] == r["allocator"]
        ]
        mean, ci = mean_ci(recs)
        assert r["gradient_rollouts"] == pytest.approx(mean)
        assert r["gradient_rollouts_ci95"] == pytest.approx(ci)
        assert 0.0 <= r["informative_frac"] <= 1.0
    run = res.run_dir
    with (run / "summary.csv").open() as fh:
        head = next(csv.reader(fh))
    for col in ("rounds", "round_size", "gradient_rollouts", "informative_prompts_ci95"):
        assert col in head
    summary = json.loads((run / "summary.json").read_text())
    assert {"gradient_rollouts", "informative_frac_ci95"} <= set(summary[0])
    table = (run / "table.md").read_text()
    assert "gradient rollouts ± CI" in table and "informative frac ± CI" in table
    assert (run / "rounds.png").stat().st_size > 1000


def test_rounds_grid_takes_schedules(tmp_path):
    # N = 24: '18+6' is one round of 18 then one of 6; '12+6' has the 6 repeat (12, 6, 6)
    cfg = _cfg(tmp_path, rounds="1,18+6,12+6+6")
    assert cfg.rounds_list == [1, "18+6", "12+6+6"]
    res = run_benchmark(cfg, write=False)
    by = {(r["rounds"], r["allocator"]): r for r in res.rows}
    assert by[("18+6", "bamdp")]["round_size"] == 18
    assert by[("18+6", "bamdp")]["setting"].endswith("/G=4/rounds=18+6")
    decisions = {e["setting"].rsplit("=", 1)[1]: e["decisions"] for e in res.episodes}
    assert decisions == {"1": 1, "18+6": 2, "12+6+6": 3}
