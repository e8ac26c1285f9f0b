"""adaroll compete: runs, resumption, table and plots on a tiny competition."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainers.compete import CompeteConfig, main, rollouts_to_reach
from trainers.grpo import GRPOConfig


def test_rollouts_to_reach_interpolates() -> None:
    curve = [(0.0, 0.2), (100.0, 0.3), (200.0, 0.5)]
    assert rollouts_to_reach(curve, 0.2) == 0.0
    assert rollouts_to_reach(curve, 0.4) == pytest.approx(150.0)
    assert rollouts_to_reach(curve, 0.6) is None
    # touching the target and falling back does not count: the crossing that holds does
    noisy = [(0.0, 0.2), (100.0, 0.45), (200.0, 0.3), (300.0, 0.5)]
    assert rollouts_to_reach(noisy, 0.4) == pytest.approx(250.0)
    assert rollouts_to_reach([(0.0, 0.2), (100.0, 0.5), (200.0, 0.3)], 0.4) is None


def test_config_errors() -> None:
    with pytest.raises(ValueError, match="allocators is empty"):
        CompeteConfig(allocators=" , ")
    with pytest.raises(ValueError, match="duplicates"):
        CompeteConfig(allocators="uniform,uniform")
    with pytest.raises(ValueError, match="seeds must be >= 1"):
        CompeteConfig(seeds=0)


@pytest.mark.slow
def test_a_small_competition(tiny_model_dir: Path, tmp_path: Path) -> None:
    cfg = CompeteConfig(
        allocators="uniform,bamdp",
        seeds=2,
        workers=1,
        out=str(tmp_path / "c"),
        progress=False,
        grpo=GRPOConfig(
            model=str(tiny_model_dir),
            steps=2,
            batch_size=4,
            group_size=4,
            eval_every=1,
            eval_size=8,
            eval_k=2,
        ),
    )
    summary = main(cfg)
    rows = {r["allocator"]: r for r in summary["rows"]}
    assert set(rows) == {"uniform", "bamdp"} and all(r["seeds"] == 2 for r in rows.values())
    assert rows["uniform"]["rollouts"] == 2 * 16  # equal budgets
    assert rows["bamdp"]["rollouts"] == 2 * 16
    out = tmp_path / "c"
    for name in ("table.md", "results.csv", "accuracy.png", "informative.png", "summary.json"):
        assert (out / name).exists(), name
    assert (out / "calibration.png").exists() and summary["calibration"]["prompts"] > 0

    # the same seed gives both allocators the same prompts; another seed, other prompts
    def seen(a: str, s: int) -> list[int]:
        return sorted(json.loads((cfg.run_dir(a, s) / "beliefs.json").read_text())["ids"])

    assert seen("uniform", 0) == seen("bamdp", 0) != seen("uniform", 1)
    # a rerun finds every run finished and only re-tabulates
    stamp = (cfg.run_dir("bamdp", 1) / "summary.json").stat().st_mtime
    main(cfg)
    assert (cfg.run_dir("bamdp", 1) / "summary.json").stat().st_mtime == stamp
