"""The trainer speed benchmark (ours against TRL) on a tiny config and a random tiny model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trainers.bench import RESULTS_FILE, TrainerBenchConfig, main
from trainers.models import build_tiny_model, build_tiny_tokenizer


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised tiny model saved as a local Hugging Face directory (no training)."""
    out = tmp_path_factory.mktemp("tiny-random")
    tokenizer = build_tiny_tokenizer()
    build_tiny_model(seed=0, tokenizer=tokenizer).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def tiny_cfg(model_dir: Path, out: Path, **kw: Any) -> TrainerBenchConfig:
    base: dict[str, Any] = {
        "model": str(model_dir),
        "batch_size": 2,
        "group_size": 2,
        "max_completion_length": 4,
        "slices": 1,
        "steps_per_slice": 1,
        "out": str(out),
    }
    base.update(kw)
    return TrainerBenchConfig(**base)


def check_side(result: dict[str, Any], name: str, cfg: TrainerBenchConfig) -> None:
    summary = result["summary"][name]
    assert summary["steps_per_s"] > 0 and summary["tokens_per_s"] > 0
    # B·G completions of 1..L tokens each (the end-of-sequence token counts)
    assert cfg.rollouts <= summary["tokens_per_step"] <= cfg.rollouts * cfg.max_completion_length
    slices = result["slices"][name]
    assert len(slices) == cfg.slices
    for sl in slices:
        assert len(sl["steps"]) == cfg.steps_per_slice
        assert sl["rates"]["tokens"] == sum(s["tokens"] for s in sl["steps"]) > 0
        for step in sl["steps"]:
            assert step["seconds"] > 0
            assert len(step["prompts"]) == cfg.batch_size


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
        TrainerBenchConfig(group_size=1)
    TrainerBenchConfig(group_size=1, peer="none")  # ours alone can take one per prompt
    with pytest.raises(ValueError, match="loss_type must be one of"):
        TrainerBenchConfig(loss_type="ppo")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="slices"):
        TrainerBenchConfig(slices=0)
