"""The rounds benchmark (``trainers.benchmarks.rounds``): step time against the number of rounds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainers.benchmarks.rounds import RESULTS_FILE as ROUNDS_FILE
from trainers.benchmarks.rounds import RoundsBenchConfig, markdown_table, step_row
from trainers.benchmarks.rounds import main as rounds_main
from trainers.grpo import GRPOConfig


def test_rounds_benchmark_times_each_setting(model_dir: Path, tmp_path: Path) -> None:
    grpo = GRPOConfig(model=str(model_dir), task_size=500, batch_size=4, group_size=4,
                      max_completion_length=4, threads=1, allocator="bamdp", utility="snr(8)",
                      eval_every=0, tensorboard=False, progress=False, device="cpu")  # fmt: skip
    cfg = RoundsBenchConfig(rounds="1,2,4,12+4", slices=2, steps_per_slice=1, warmup_steps=0,
                            out=str(tmp_path), grpo=grpo)  # fmt: skip
    result = rounds_main(cfg)
    rows = {r["setting"]: r for r in result["rows"]}
    assert list(rows) == ["uniform", "bamdp ×1", "bamdp ×2", "bamdp ×4", "bamdp 12+4"]
    assert [rows[k]["rounds"] for k in rows] == [1, 1, 2, 4, 2]  # the schedule: 12, then 4
    assert all(r["steps"] == 2 and r["step_seconds"] > 0 for r in rows.values())
    assert rows["uniform"]["relative_step_time"] == 1.0
    for r in rows.values():
        assert 0 <= r["alloc_share"] < 1 and r["gradient_rollouts"] <= 16
    saved = json.loads((tmp_path / ROUNDS_FILE).read_text())
    assert saved["rows"] == result["rows"]
    with pytest.raises(ValueError, match="distinct integers >= 1"):
        RoundsBenchConfig(rounds="2,2")
    with pytest.raises(ValueError, match="comma-separated integers"):
        RoundsBenchConfig(rounds="two")
    with pytest.raises(ValueError, match=r"round_schedule: .*hands out 17 rollouts"):
        RoundsBenchConfig(rounds="1,12+5", grpo=grpo)


def test_settings_name_each_rounds_setting_and_pin_the_rest() -> None:
    cfg = RoundsBenchConfig(rounds="1, 3,384+128")
    assert cfg.round_list() == [1, 3, "384+128"]
    settings = cfg.settings()
    assert list(settings) == ["uniform", "bamdp ×1", "bamdp ×3", "bamdp 384+128"]
    uniform = settings["uniform"]
    assert uniform.allocator == "uniform" and uniform.rounds is None
    assert settings["bamdp ×3"].rounds == 3 and settings["bamdp ×3"].round_schedule is None
    assert settings["bamdp 384+128"].round_schedule == "384,128"
    assert settings["bamdp 384+128"].rounds is None
    for g in settings.values():  # every setting shares the benchmark's own settings
        assert (g.utility, g.belief_prior, g.belief_group) == ("snr(8)", "fitted", "level")
    with pytest.raises(ValueError, match="slices"):
        RoundsBenchConfig(slices=0)
    with pytest.raises(ValueError, match="warmup_steps"):
        RoundsBenchConfig(warmup_steps=-1)


class _Rep:
    def __init__(self, **kw: float) -> None:
        self.__dict__.update(kw)


def test_row_means_and_the_markdown_table_by_hand() -> None:
    reps = [
        _Rep(step_seconds=1.0, rounds=2, gen_seconds=0.6, train_seconds=0.3, alloc_seconds=0.01,
             gradient_rollouts=10, informative_prompts=4),
        _Rep(step_seconds=3.0, rounds=2, gen_seconds=1.4, train_seconds=0.7, alloc_seconds=0.03,
             gradient_rollouts=14, informative_prompts=6),
    ]  # fmt: skip
    row = step_row("bamdp ×2", reps)
    assert row["steps"] == 2 and row["step_seconds"] == 2.0 and row["gen_seconds"] == 1.0
    assert row["alloc_share"] == pytest.approx(0.02 / 2.0)
    assert (row["gradient_rollouts"], row["informative_prompts"]) == (12.0, 5.0)
    row["relative_step_time"] = 1.25
    lines = markdown_table([row]).splitlines()
    assert lines[0].startswith("| setting | rounds | s/step | × uniform |")
    assert lines[2] == (
        "| bamdp ×2 | 2 | 2.000 | 1.25 | 1.000 | 0.500 | 0.0200 | 1.0 % | 12.0 | 5.0 |"
    )
