"""trainers.benchmarks.testbed: the group shares, the tables, the cells' config, and a tiny cell
run end to end, then continued and reused without redoing a finished piece."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trainers.benchmarks import testbed
from trainers.benchmarks.testbed import (
    Cell,
    TestbedConfig,
    group_shares,
    markdown_tables,
    steps_summary,
)

#: a cell of a few seconds: one narrow GPT-2 layer, a handful of steps, small evaluations
TINY_CELL = {
    "name": "gpt2-arith",
    "task": "arithmetic",
    "arch": "gpt2",
    "warm_start": {"hidden_size": 64, "num_layers": 1, "steps": 6, "task_size": 500,
                   "eval_size": 8, "eval_samples": 2, "save_minutes": 0.0},
    "grpo": {"batch_size": 4, "group_size": 4, "task_size": 200, "save_every": 1,
             "max_completion_length": 6},
}  # fmt: skip


def _config(tmp_path: Path, **kw: Any) -> TestbedConfig:
    cells = tmp_path / "cells.json"
    cells.write_text(json.dumps([TINY_CELL]))
    options = {"out": str(tmp_path / "runs"), "cells_file": str(cells), "grpo_steps": 1,
               "eval_every": 1, "eval_size": 4, "eval_k": 2, "train_prompts": 6,
               "train_samples": 4}  # fmt: skip
    return TestbedConfig(**{**options, **kw})


def test_group_shares_count_all_correct_and_all_wrong_per_level() -> None:
    shares = group_shares([0, 4, 2, 4, 0], [0, 0, 1, 1, 2], k=4)
    assert shares["overall"] == {"n": 5, "all_correct": 0.4, "all_wrong": 0.4}
    assert shares["levels"]["0"] == {"n": 2, "all_correct": 0.5, "all_wrong": 0.5}
    assert shares["levels"]["1"] == {"n": 2, "all_correct": 0.5, "all_wrong": 0.0}
    assert shares["levels"]["2"] == {"n": 1, "all_correct": 0.0, "all_wrong": 1.0}


def test_steps_summary_averages_windows() -> None:
    metrics = [{"reward": float(i), "step_seconds": 0.5} for i in range(5)]
    rows = steps_summary(metrics, window=2)
    assert [r["steps"] for r in rows] == ["1-2", "3-4", "5-5"]
    assert [r["reward"] for r in rows] == [0.5, 2.5, 4.0]
    assert all(r["step_seconds"] == 0.5 and "all_wrong_frac" not in r for r in rows)


def test_the_tables_show_each_cell_and_level() -> None:
    row = {
        "cell": "c", "task": "arithmetic", "arch": "llama", "parameters": 414848,
        "warm_start_seconds": 57.6, "k": 8, "pass@1": 0.1625, "pass@8": 0.44,
        "levels": [{"level": 0, "n": 20, "pass@1": 0.375, "pass@8": 0.65}],
        "groups": {"overall": {"all_correct": 0.05, "all_wrong": 0.5},
                   "levels": {"0": {"all_correct": 0.25, "all_wrong": 0.125}}},
        "grpo_steps": 1000, "grpo_first_eval": {"pass@1": 0.16, "pass@1/level0": 0.3},
        "grpo_last_eval": {"pass@1": 0.25, "pass@1/level0": 0.6}, "grpo_steps_per_s": 3.456,
    }  # fmt: skip
    table = markdown_tables([row])
    assert (
        "| c | `arithmetic` | llama | 414,848 | 58 | 16.2 | 44.0 (k=8) | 5.0 | 50.0 | 1000 "
        "| 16.0 → 25.0 | 3.46 |" in table
    )
    assert "| c | 0 | 20 | 37.5 | 65.0 | 25.0 | 12.5 | 30.0 → 60.0 |" in table
    no_run = {**row, "grpo_first_eval": None, "grpo_last_eval": None, "levels": []}
    assert "| — → — |" in markdown_tables([no_run])


def test_cells_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="plain directory name"):
        Cell(name="a/b", task="arithmetic", arch="llama")
    with pytest.raises(ValueError, match=r"--only names unknown cells \['nope'\]"):
        _config(tmp_path, only="nope").cells()
    (tmp_path / "two.json").write_text(json.dumps([TINY_CELL, TINY_CELL]))
    with pytest.raises(ValueError, match="repeat"):
        _config(tmp_path, cells_file=str(tmp_path / "two.json")).cells()
    with pytest.raises(ValueError, match="train_samples"):
        _config(tmp_path, train_samples=1)
    names = [c.name for c in TestbedConfig().cells()]
    assert len(names) == len(set(names)) >= 7  # the measured cells


def test_every_measured_cell_makes_valid_run_configs(tmp_path: Path) -> None:
    """Each default cell's warm start and GRPO run are configs their commands accept (a cell
    with an unknown or out-of-range setting fails here, not hours into a testbed run)."""
    cfg = TestbedConfig(out=str(tmp_path))
    for cell in cfg.cells():
        ws = testbed.warm_start_config(cfg, cell, tmp_path / cell.name / "warm_start")
        assert (ws.task, ws.arch) == (cell.task, cell.arch)
        grpo = testbed.grpo_config(cfg, cell, tmp_path / cell.name / "warm_start", tmp_path)
        assert grpo.allocator == "uniform" and grpo.task == cell.task


def test_a_tiny_cell_runs_then_continues_and_reuses_what_is_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (row,) = testbed.main(_config(tmp_path))
    base = tmp_path / "runs" / "gpt2-arith"
    card = json.loads((base / "warm_start" / "adaroll_model.json").read_text())
    assert row["parameters"] == card["parameters"] and row["held_out_split"] == "test"
    assert row["pass@1"] == card["held_out"]["overall"]["pass@1"]
    groups = json.loads((base / "start_groups.json").read_text())
    assert groups["prompts"] == 6 and groups["k"] == 4
    shares = groups["overall"]
    assert 0 <= shares["all_correct"] + shares["all_wrong"] <= 1
    assert row["grpo_steps"] == 1 and [s for s, _ in row["grpo_evals"]] == [0, 1]
    assert (base / "grpo" / "DONE").is_file() and (base / "grpo" / "steps_summary.json").is_file()
    assert "| gpt2-arith | `arithmetic` | gpt2 |" in capsys.readouterr().out
    assert (tmp_path / "runs" / "testbed.md").read_text().startswith("| cell |")

    # more steps: the warm start and the groups are reused, the GRPO run continues from step 1
    def refuse(*_a: Any, **_k: Any) -> None:
        raise AssertionError("a finished piece ran again")

    monkeypatch.setattr(testbed, "measure_start_groups", refuse)
    monkeypatch.setattr("trainers.models.warm_start_task.main", refuse)
    (row,) = testbed.main(_config(tmp_path, grpo_steps=2))
    assert row["grpo_steps"] == 2 and [s for s, _ in row["grpo_evals"]] == [0, 1, 2]
    assert not (base / "grpo" / "superseded").exists()  # continued, not restarted

    # everything done: nothing runs, the same table
    monkeypatch.setattr("trainers.run.grpo_command.main", refuse)
    again = testbed.main(_config(tmp_path, grpo_steps=2))
    assert again == [row]
    export = tmp_path / "export"
    assert testbed.main(_config(tmp_path, grpo_steps=2, table_only=True, export=str(export))) == [
        row
    ]
    kept = {str(p.relative_to(export)) for p in export.rglob("*") if p.is_file()}
    assert kept == {"testbed.md", "testbed.json", *(f"gpt2-arith/{f}" for f in testbed.EXPORTED)}
    assert (export / "gpt2-arith/grpo/eval.jsonl").read_bytes() == (
        base / "grpo/eval.jsonl"
    ).read_bytes()
