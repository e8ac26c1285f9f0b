"""``adaroll bench --rounds`` and the mechanism columns (gradient-carrying rollouts, informative
prompts and fraction) beside every utility."""

import csv
import json

import numpy as np
import pytest

from adaroll_env.arguments import parse_config
from agents.benchmarks import BenchConfig, mean_ci, run_benchmark
from agents.benchmarks.mechanism import mechanism


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


def test_mechanism_on_a_hand_built_state():
    # (s, f): (0,4) all wrong, (1,1) mixed n=2, (3,0) all right, (2,3) mixed n=5, (0,0) empty
    m = mechanism([0, 1, 3, 2, 0], [4, 1, 0, 3, 0])
    assert float(m["gradient_rollouts"]) == 7.0
    assert float(m["informative_prompts"]) == 2.0
    assert float(m["informative_frac"]) == pytest.approx(2 / 5)


def test_mechanism_is_vectorised_over_episodes():
    s = np.array([[0, 1, 3, 2], [1, 1, 1, 1], [0, 0, 0, 0]])
    f = np.array([[4, 1, 0, 3], [7, 0, 2, 5], [8, 8, 8, 8]])
    m = mechanism(s, f)
    assert m["gradient_rollouts"].tolist() == [7.0, 8.0 + 3.0 + 6.0, 0.0]
    assert m["informative_prompts"].tolist() == [2.0, 3.0, 0.0]
    assert m["informative_frac"].tolist() == [0.5, 0.75, 0.0]


def test_mechanism_refuses_mismatched_shapes():
    with pytest.raises(ValueError, match="one shape"):
        mechanism([1, 2], [1, 2, 3])


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


def test_rounds_from_the_command_line(tmp_path):
    cfg = parse_config(BenchConfig, "", ["--rounds", "1,2,3,4,8", "--out", str(tmp_path)])
    assert cfg.rounds_list == [1, 2, 3, 4, 8]


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"rounds": "1,2", "round_size": 4}, "both set"),
        ({"rounds": "2", "envs": "sequential,rounds"}, "rounds env only"),
        ({"rounds": "0"}, ">= 1"),
        ({"rounds": "two"}, "not an integer"),
        ({"rounds": "25"}, "exceeds the smallest budget"),
    ],
)
def test_bad_rounds(tmp_path, kw, match):
    with pytest.raises(ValueError, match=match):
        _cfg(tmp_path, **kw)


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


def test_schedules_from_the_command_line_and_help(tmp_path):
    cfg = parse_config(BenchConfig, "", ["--rounds", "1,2,384+128,448+64", "--out", str(tmp_path)])
    assert cfg.rounds_list == [1, 2, "384+128", "448+64"]
    from agents.benchmarks.config import BenchConfig as C

    (rounds,) = [f for f in C.__dataclass_fields__.values() if f.name == "rounds"]
    assert "384+128" in rounds.metadata["help"]


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"rounds": "18+5"}, "hands out 23 rollouts"),
        ({"rounds": "18+x"}, "joined by '\\+'"),
        ({"rounds": "24+0"}, "joined by '\\+'"),
        ({"rounds": "18+6", "group_sizes": "4,8"}, "does not fit G = 8"),
    ],
)
def test_bad_schedules_in_the_grid(tmp_path, kw, match):
    with pytest.raises(ValueError, match=match):
        _cfg(tmp_path, **kw)
