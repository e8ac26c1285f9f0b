"""Tests of agents.benchmarks.files: the run directory of a benchmark, from hand-made rows."""

from __future__ import annotations

import csv
import dataclasses
import json
import re

import pytest

from agents.benchmarks.config import BenchConfig, settings
from agents.benchmarks.files import versions, write_run
from agents.benchmarks.statistics import summarise
from agents.benchmarks.tables import markdown_table


def _cfg(tmp_path, **kw):
    base = dict(
        allocators="uniform,random",
        envs="rounds",
        difficulties="rlvr",
        utilities="hit",
        num_questions=2,
        group_sizes="4",
        episodes=2,
        workers=1,
        out=str(tmp_path),
        name="run",
        plots=False,
        progress=False,
    )
    base.update(kw)
    return BenchConfig(**base)


def _episode(setting, allocator, i, utility):
    return {
        "setting": setting.key,
        "allocator": allocator,
        "episode": i,
        "utility": utility,
        "gradient_rollouts": 4.0,
        "informative_prompts": 1.0,
        "informative_frac": 0.5,
        "decisions": 2,
        "decision_seconds": 0.001,
        "episode_seconds": 0.01,
        "rollouts_by_mean": [4.0] + [0.0] * 8 + [4.0],
        "questions_by_mean": [1] + [0] * 8 + [1],
    }


def _rows_and_episodes(cfg):
    results, episodes = {}, []
    for s in settings(cfg):
        for a in cfg.allocator_list:
            recs = [
                _episode(s, a, i, u) for i, u in enumerate([1.0, 2.0 if a == "uniform" else 3.0])
            ]
            results[(s, a)] = recs
            episodes += recs
    return summarise(results, cfg), episodes


def test_run_directory_contents(tmp_path):
    cfg = _cfg(tmp_path)
    rows, episodes = _rows_and_episodes(cfg)
    run = write_run(cfg, rows, episodes)
    assert run == tmp_path / "run"
    assert sorted(p.name for p in run.iterdir()) == [
        "config.json", "episodes.csv", "summary.csv", "summary.json", "table.md", "versions.json",
    ]  # fmt: skip
    assert json.loads((run / "config.json").read_text()) == json.loads(
        json.dumps(dataclasses.asdict(cfg))
    )
    assert json.loads((run / "versions.json").read_text()) == versions()
    assert json.loads((run / "summary.json").read_text()) == json.loads(json.dumps(rows))
    assert (run / "table.md").read_text() == markdown_table(rows)
    with (run / "summary.csv").open() as fh:
        summary = list(csv.DictReader(fh))
    assert [r["allocator"] for r in summary] == ["uniform", "random"]
    assert float(summary[1]["gain"]) == pytest.approx(0.5)  # (1 − 1 + 3 − 2) / 2
    assert "rollouts_by_mean" not in summary[0]  # per-bin lists stay in the JSON
    with (run / "episodes.csv").open() as fh:
        eps = list(csv.DictReader(fh))
    assert len(eps) == 4 and [float(e["utility"]) for e in eps] == [1.0, 2.0, 1.0, 3.0]


def test_default_name_and_no_episodes(tmp_path):
    cfg = _cfg(tmp_path, name="")
    rows, _ = _rows_and_episodes(cfg)
    run = write_run(cfg, rows, [])
    assert re.fullmatch(r"bench-\d{8}-\d{6}", run.name) and run.parent == tmp_path
    assert not (run / "episodes.csv").exists()  # nothing to write


@pytest.mark.parametrize(
    ("kw", "plots"),
    [
        (
            {"group_sizes": "2,4"},
            {"utility_bars.png", "rollouts_by_mean.png", "utility_vs_group_size.png"},
        ),
        ({"rounds": "1,2"}, {"utility_bars.png", "rollouts_by_mean.png", "rounds.png"}),
        (
            {"rounds": "1,6+2"},
            {"utility_bars.png", "rollouts_by_mean.png"},
        ),  # one equal-rounds value
    ],
)
def test_plots_written_for_the_grid(tmp_path, kw, plots):
    cfg = _cfg(tmp_path, plots=True, **kw)
    rows, episodes = _rows_and_episodes(cfg)
    run = write_run(cfg, rows, episodes)
    assert {p.name for p in run.glob("*.png")} == plots
