"""The entrants' step-time benchmark (``trainers.benchmarks.entrants``): each entrant of a recorded
competition rebuilt and timed."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from trainers.benchmarks.entrants import RESULTS_FILE, EntrantsBenchConfig, main
from trainers.experiments.compete import CompeteConfig
from trainers.grpo import GRPOConfig

ENTRANTS = """\
- name: uniform
  allocator: uniform
- name: bamdp-slow
  allocator: bamdp
  lr: 5.0e-05
- name: kg
  allocator: knowledge_gradient
"""


def _competition(tmp_path: Path, model_dir: Path, **kw: object) -> Path:
    """A competition directory as ``adaroll compete`` records it, without its runs."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "entrants.yaml").write_text(ENTRANTS)
    grpo = GRPOConfig(model=str(model_dir), task_size=500, batch_size=4, group_size=4,
                      max_completion_length=4, eval_every=2, lr=2e-4)  # fmt: skip
    out = tmp_path / "comp"
    cfg = CompeteConfig(entrants=str(tmp_path / "entrants.yaml"), seeds=2, first_seed=7,
                        out=str(out), grpo=grpo, **kw)  # type: ignore[arg-type]  # fmt: skip
    out.mkdir()
    (out / "config.json").write_text(json.dumps({**asdict(cfg), "resume": None}))
    return out


def test_each_entrant_is_rebuilt_as_its_competition_ran_it(model_dir: Path, tmp_path: Path) -> None:
    comp = _competition(tmp_path, model_dir)
    cfg = EntrantsBenchConfig(competition=str(comp), entrants="kg,bamdp-slow", threads=1)
    base, runs = cfg.settings(tmp_path / "scratch")
    assert base == "uniform" and list(runs) == ["uniform", "kg", "bamdp-slow"]  # baseline first
    assert runs["bamdp-slow"].allocator == "bamdp" and runs["bamdp-slow"].lr == 5e-5
    assert runs["kg"].lr == 2e-4 and runs["kg"].allocator == "knowledge_gradient"
    for r in runs.values():  # the competition's first seed, nothing written where it ran
        assert r.seed == 7 and r.eval_every == 0 and not r.tensorboard and not r.resume
        assert Path(r.out).parent == tmp_path / "scratch"
    assert EntrantsBenchConfig(competition=str(comp), seed=3).settings(tmp_path)[1]["kg"].seed == 3


def test_the_benchmark_times_every_entrant_and_records_the_load(
    model_dir: Path, tmp_path: Path
) -> None:
    comp = _competition(tmp_path, model_dir)
    cfg = EntrantsBenchConfig(competition=str(comp), entrants="bamdp-slow", slices=2,
                              steps_per_slice=1, warmup_steps=0,
                              out=str(tmp_path / "o"))  # fmt: skip
    result = main(cfg)
    rows = {r["setting"]: r for r in result["rows"]}
    assert list(rows) == ["uniform", "bamdp-slow"] and result["baseline"] == "uniform"
    assert all(r["steps"] == 2 and r["step_seconds"] > 0 for r in rows.values())
    assert rows["uniform"]["relative_step_time"] == 1.0
    assert rows["bamdp-slow"]["rounds"] >= 2  # the adaptive entrant's own rounds
    assert len(result["load_average_before"]) == 3 and result["cpus"] >= 1
    saved = json.loads((tmp_path / "o" / RESULTS_FILE).read_text())
    assert saved["rows"] == result["rows"]


def test_bad_input_is_named(model_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="competition is required"):
        EntrantsBenchConfig()
    with pytest.raises(ValueError, match="slices"):
        EntrantsBenchConfig(competition="x", slices=0)
    comp = _competition(tmp_path, model_dir)
    with pytest.raises(ValueError, match=r"unknown entrant 'bamdp'.*bamdp-slow"):
        EntrantsBenchConfig(competition=str(comp), entrants="bamdp").settings(tmp_path)
    with pytest.raises(ValueError, match=r"no config\.json"):
        EntrantsBenchConfig(competition=str(tmp_path)).settings(tmp_path)
    trl = _competition(tmp_path / "trl", model_dir, trainer="trl")
    with pytest.raises(ValueError, match=r"inside TRL .*bench_trl_overhead\.py"):
        EntrantsBenchConfig(competition=str(trl)).settings(tmp_path)
