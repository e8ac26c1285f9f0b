"""adaroll compete: runs, resumption, table and plots on a tiny competition."""

from __future__ import annotations

import dataclasses
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
    with pytest.raises(ValueError, match="seeds must be an integer >= 1"):
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


@pytest.mark.slow
def test_a_signal_stops_the_workers_each_run_resumable(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    """SIGTERM to the competition alone reaches its workers: each running run saves, the
    competition exits 143, and each run resumes from its checkpoint."""
    import signal
    import subprocess
    import sys
    import time

    from trainers.run import checkpoint_dirs, read_jsonl
    from trainers.run import main as run_main

    out = tmp_path / "c"
    args = ["compete", "--allocators", "uniform,bamdp", "--seeds", "1", "--workers", "2",
            "--model", str(tiny_model_dir), "--steps", "100000", "--batch-size", "4",
            "--group-size", "2", "--eval-every", "100000", "--eval-size", "4", "--eval-k", "1",
            "--no-progress", "--out", str(out)]  # fmt: skip
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-m", "trainers.cli", *args], cwd=root,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    grpo = GRPOConfig(model=str(tiny_model_dir), steps=100000, batch_size=4, group_size=2,
                      eval_every=100000, eval_size=4, eval_k=1)  # fmt: skip
    cfg = CompeteConfig(allocators="uniform,bamdp", seeds=1, workers=2, out=str(out), grpo=grpo)
    dirs = [cfg.run_dir(a, 0) for a in ("uniform", "bamdp")]
    deadline = time.monotonic() + 900
    while not all(len(read_jsonl(d / "metrics.jsonl")) >= 2 for d in dirs):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 143, stderr[-3000:]
    assert "rerun the same command" in stdout and "Traceback" not in stderr
    for d, spec in zip(dirs, ("uniform", "bamdp"), strict=True):
        steps = len(read_jsonl(d / "metrics.jsonl"))
        assert checkpoint_dirs(d)[-1].name == f"step-{steps:06d}"
        assert json.loads((d / "summary.json").read_text())["stopped_by"] == "SIGTERM"
        run = cfg.run_config(spec, 0)
        run_main(dataclasses.replace(run, steps=steps + 1, eval_every=0))
        assert [r["step"] for r in read_jsonl(d / "metrics.jsonl")] == list(range(steps + 1))


def test_a_missing_model_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from trainers.cli import main as cli

    out = tmp_path / "c"
    with pytest.raises(SystemExit) as exc:
        cli(["compete", "--allocators", "uniform", "--model", str(tmp_path / "nope"),
             "--out", str(out)])  # fmt: skip
    assert exc.value.code == 2 and "nope" in capsys.readouterr().err
    assert not out.exists()
