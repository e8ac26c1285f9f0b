"""The trainer speed benchmark (ours against TRL) on a tiny config and a random tiny model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trainers.benchmarks.trainer import RESULTS_FILE, TrainerBenchConfig, main
from trainers.grpo import GRPOConfig


def tiny_cfg(model_dir: Path, out: Path, **kw: Any) -> TrainerBenchConfig:
    grpo = GRPOConfig(model=str(model_dir), batch_size=2, group_size=2, max_completion_length=4,
                      threads=1)  # fmt: skip
    base: dict[str, Any] = {"grpo": grpo, "slices": 1, "steps_per_slice": 1, "out": str(out)}
    base.update(kw)
    return TrainerBenchConfig(**base)


def check_side(result: dict[str, Any], name: str, cfg: TrainerBenchConfig) -> None:
    summary = result["summary"][name]
    assert summary["steps_per_s"] > 0 and summary["tokens_per_s"] > 0
    # B·G completions of 1..L tokens each (the end-of-sequence token counts)
    length = cfg.grpo.max_completion_length
    assert cfg.rollouts <= summary["tokens_per_step"] <= cfg.rollouts * length
    slices = result["slices"][name]
    assert len(slices) == cfg.slices
    for sl in slices:
        assert len(sl["steps"]) == cfg.steps_per_slice
        assert sl["rates"]["tokens"] == sum(s["tokens"] for s in sl["steps"]) > 0
        for step in sl["steps"]:
            assert step["seconds"] > 0
            assert len(step["prompts"]) == cfg.grpo.batch_size


def test_ours_only_without_trl(model_dir: Path, tmp_path: Path) -> None:
    cfg = tiny_cfg(model_dir, tmp_path, peer="none", slices=2)
    result = main(cfg)
    assert set(result["summary"]) == {"ours", "ours (one round)"}
    for name in result["summary"]:
        check_side(result, name, cfg)
    assert result["ratio"] is None and result["checks"]["same_prompts"]
    assert 0 <= result["alloc_overhead"] < 1
    # rounds of B rollouts by default; the one-round copy generates the whole budget at once
    ours_steps = result["slices"]["ours"][0]["steps"]
    assert ours_steps[0]["gen_seconds"] > 0
    saved = json.loads((tmp_path / RESULTS_FILE).read_text())
    assert saved["config"]["peer"] == "none" and saved["trl_config"] is None
    assert saved["ours_config"]["ours"]["batch_size"] == 2
    assert saved["ours_config"]["ours (one round)"]["round_size"] == 4
    assert "torch" in saved["versions"]


def test_against_trl_same_run(model_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("trl")
    pytest.importorskip("datasets")
    cfg = tiny_cfg(model_dir, tmp_path, compare_one_round=False)
    result = main(cfg)
    assert set(result["summary"]) == {"ours", "TRL"}
    for name in result["summary"]:
        check_side(result, name, cfg)
    assert result["checks"] == {
        "same_prompts": True,
        "same_prompt_ids": True,
        "same_initial_weights": True,
    }
    assert result["ratio"] == pytest.approx(
        result["summary"]["ours"]["steps_per_s"] / result["summary"]["TRL"]["steps_per_s"]
    )
    trl_cfg = result["trl_config"]
    assert trl_cfg["num_generations"] == 2 and trl_cfg["per_device_train_batch_size"] == 4
    assert trl_cfg["bf16"] is False and trl_cfg["use_cpu"] is True
    assert "trl" in result["versions"]
    saved = json.loads((tmp_path / RESULTS_FILE).read_text())
    assert saved["ratio"] == pytest.approx(result["ratio"])


def test_config_errors_name_the_fix() -> None:
    with pytest.raises(ValueError, match="peer must be one of"):
        TrainerBenchConfig(peer="verl")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="group_size"):
        TrainerBenchConfig(grpo=GRPOConfig(group_size=1))
    TrainerBenchConfig(grpo=GRPOConfig(group_size=1), peer="none")  # ours alone: one per prompt
    with pytest.raises(ValueError, match="loss_type must be one of"):
        TrainerBenchConfig(grpo=GRPOConfig(loss_type="ppo"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="slices"):
        TrainerBenchConfig(slices=0)


def test_the_script_exposes_the_same_options(tmp_path: Path) -> None:
    import argparse

    from adaroll_env.arguments import add_dataclass_arguments, config_from_args

    parser = argparse.ArgumentParser()
    add_dataclass_arguments(parser, TrainerBenchConfig)
    flags = {a.option_strings[0] for a in parser._actions if a.option_strings}
    assert flags >= {
        "--batch-size", "--group-size", "--max-completion-length", "--slices",
        "--steps-per-slice", "--warmup-steps", "--seed", "--model", "--lr", "--loss-type",
        "--round-size", "--compare-one-round", "--peer", "--threads", "--out",
    }  # fmt: skip
    args = parser.parse_args(["--batch-size", "3", "--peer", "none", "--threads", "0"])
    cfg = config_from_args(TrainerBenchConfig, args)
    assert cfg.grpo.batch_size == 3 and cfg.peer == "none" and cfg.grpo.threads == 0
    assert cfg.grpo.group_size == 8 and TrainerBenchConfig().grpo.threads == 1
