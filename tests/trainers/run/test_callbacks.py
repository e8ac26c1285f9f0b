"""trainers.run.callbacks: periodic checkpoints by steps and minutes, the metrics log on resume,
the evaluations kept across a resume, reading a torn file."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from trainers.run import callbacks
from trainers.run.callbacks import (
    CheckpointCallback,
    EvaluationCallback,
    MetricsLog,
    RunContext,
    read_jsonl,
)


def _ctx(tmp_path: Path, step: int = 0, resume_step: int | None = None) -> RunContext:
    trainer = SimpleNamespace(step=step, world=1, rank=0)
    return RunContext(cfg=SimpleNamespace(), trainer=trainer, out=tmp_path, console=None,  # type: ignore[arg-type]
                      log=None, resume_step=resume_step)  # fmt: skip


def test_checkpoints_by_steps_and_by_minutes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved: list[int] = []
    clock = [1000.0]
    monkeypatch.setattr(callbacks, "save_checkpoint", lambda t, out: saved.append(t.step))
    monkeypatch.setattr(callbacks.time, "monotonic", lambda: clock[0])
    ctx = _ctx(tmp_path)
    cb = CheckpointCallback(every=5, minutes=2.0)
    cb.on_start(ctx)
    # steps of 50 s: the 2-minute clock fires after steps 3 (150 s) and, counted from the save
    # at step 5 (by steps), after step 8 (150 s later); steps 5 and 10 by steps
    for step in range(1, 11):
        clock[0] += 50.0
        ctx.trainer.step = step
        cb.on_step(ctx, {})
    assert saved == [3, 5, 8, 10]
    # by steps only
    saved.clear()
    cb = CheckpointCallback(every=4, minutes=None)
    cb.on_start(ctx)
    for step in range(1, 11):
        clock[0] += 500.0
        ctx.trainer.step = step
        cb.on_step(ctx, {})
    assert saved == [4, 8]


def test_ranks_save_together_when_any_clock_is_late(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved: list[int] = []
    monkeypatch.setattr(callbacks, "save_checkpoint", lambda t, out: saved.append(t.step))
    sums: list[dict[str, float]] = []

    def total(values: dict[str, float]) -> dict[str, float]:
        sums.append(values)
        return {"late": 1.0}  # another rank's clock is past the limit

    ctx = _ctx(tmp_path, step=1)
    ctx.trainer.world = 2
    ctx.trainer.ranks = SimpleNamespace(sum=total)
    cb = CheckpointCallback(every=0, minutes=60.0)
    cb.on_start(ctx)
    cb.on_step(ctx, {})
    assert saved == [1] and sums == [{"late": 0.0}]


def _lines(path: Path, records: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_metrics_log_on_resume_keeps_steps_up_to_the_checkpoint(tmp_path: Path) -> None:
    _lines(tmp_path / "metrics.jsonl", [{"step": s, "loss": s / 10} for s in range(1, 8)])
    _lines(tmp_path / "eval.jsonl", [{"step": s, "pass@1": 0.1} for s in (0, 3, 6)])
    MetricsLog(tmp_path, tensorboard=False, resume_step=4)
    assert [r["step"] for r in read_jsonl(tmp_path / "metrics.jsonl")] == [1, 2, 3, 4]
    assert [r["step"] for r in read_jsonl(tmp_path / "eval.jsonl")] == [0, 3]
    # a run written when steps were numbered from 0 is renumbered, then cut the same way
    _lines(tmp_path / "metrics.jsonl", [{"step": s} for s in range(0, 6)])
    MetricsLog(tmp_path, tensorboard=False, resume_step=4)
    assert [r["step"] for r in read_jsonl(tmp_path / "metrics.jsonl")] == [1, 2, 3, 4]
    # a fresh start (no resume) begins empty files
    MetricsLog(tmp_path, tensorboard=False, resume_step=None)
    assert not (tmp_path / "metrics.jsonl").exists() and not (tmp_path / "eval.jsonl").exists()


def test_read_jsonl_skips_a_torn_last_line_only(tmp_path: Path) -> None:
    path = tmp_path / "eval.jsonl"
    path.write_text('{"step": 0}\n\n{"step": 2}\n{"step": 4, "pa')  # killed mid-write
    assert read_jsonl(path) == [{"step": 0}, {"step": 2}]
    path.write_text('{"step": 0}\n{"st\n{"step": 4}\n')
    with pytest.raises(ValueError, match=r"eval.jsonl: line 2 is not valid JSON"):
        read_jsonl(path)
    assert read_jsonl(tmp_path / "missing.jsonl") == []


def test_evaluation_after_resume_keeps_the_first_and_last_evaluations(tmp_path: Path) -> None:
    """A run resumed at its last step must not evaluate that step again (a duplicate record)."""
    _lines(tmp_path / "metrics.jsonl", [{"step": s, "step_seconds": 2.0} for s in (1, 2, 3, 4)])
    _lines(tmp_path / "eval.jsonl", [{"step": 0, "pass@1": 0.2}, {"step": 4, "pass@1": 0.5}])
    calls: list[int] = []
    ctx = _ctx(tmp_path, step=4, resume_step=4)
    ctx.trainer.evaluate = lambda **kw: calls.append(1) or {"pass@1": 0.9}
    ctx.trainer.rollouts_total = 0
    cb = EvaluationCallback(every=2)
    cb.on_start(ctx)
    assert cb.seconds == 8.0 and ctx.first_eval["step"] == 0 and ctx.last_eval["pass@1"] == 0.5
    cb.on_end(ctx)
    assert calls == []  # step 4 was evaluated before the stop
