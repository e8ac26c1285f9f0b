"""trainers.experiments.trl_callback: checkpoints found by their marker, the generation sources'
counts, when a run saves and stops, and the step record's names (no TRL needed: the trainer and
TRL's control object are stood in for; the callback in real TRL runs is tested in
test_trl_run.py and test_compete_trl.py)."""

from __future__ import annotations

import math
import signal
from collections import deque
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from trainers.experiments.trl_callback import (
    COMPLETE_FILE,
    AllocationSource,
    BatchFigures,
    CGRPOSource,
    RunDirectoryCallback,
    RunProgress,
    _trl_figures,
    complete_checkpoints,
)
from trainers.run import stopping
from trainers.trl.adapters import AllocationRecord


def test_complete_checkpoints_are_numbered_and_marked(tmp_path: Path) -> None:
    for step, whole in ((2, True), (10, True), (9, True), (12, False)):
        d = tmp_path / f"checkpoint-{step}"
        d.mkdir()
        if whole:
            (d / COMPLETE_FILE).write_text("{}")
    (tmp_path / "checkpoint-x").mkdir()
    (tmp_path / "README.md").write_text("TRL's model card")
    # 10 after 9 (numbers, not text); 12 was cut short by a kill: no marker, left out
    assert [p.name for p in complete_checkpoints(tmp_path)] == [
        "checkpoint-2",
        "checkpoint-9",
        "checkpoint-10",
    ]
    assert complete_checkpoints(tmp_path / "none") == []


def record(counts: list[int], successes: list[int], rounds: int = 2) -> AllocationRecord:
    return AllocationRecord(step=0, counts=counts, successes=successes, rounds=rounds,
                            alloc_seconds=0.5, seconds=1.0)  # fmt: skip


def test_allocation_source_counts_the_batches_since_the_last_call() -> None:
    trainer = SimpleNamespace(allocations=deque(maxlen=2), batches_generated=0,
                              rollouts_generated=0)  # fmt: skip
    source = AllocationSource(trainer)
    assert source.generated() == (0, 0) and source.batches() == []
    for r in (record([4, 4, 0], [0, 2, 0]), record([6, 2, 0], [6, 1, 0], rounds=3)):
        trainer.allocations.append(r)
        trainer.batches_generated += 1
        trainer.rollouts_generated += sum(r.counts)
    # prompt 2 of the first batch is mixed (2 of 4); the second's prompt 1 (1 of 2); a prompt
    # all right (6 of 6) or without rollouts is not
    assert source.batches() == [BatchFigures(3, 1, 2, 0.5), BatchFigures(3, 1, 3, 0.5)]
    assert source.generated() == (16, 0)
    assert source.batches() == []  # nothing new
    trainer.allocations.append(record([1, 1, 6], [0, 1, 3]))
    trainer.batches_generated += 1
    assert source.batches() == [BatchFigures(3, 1, 2, 0.5)]  # the deque dropped one: no matter


def test_cgrpo_source_reads_its_meter() -> None:
    meter = SimpleNamespace(train_rollouts=38, calibration_rollouts=256, prompts=[4, 4],
                            informative_prompts=[1, 0], rounds=[5, 3])  # fmt: skip
    source = CGRPOSource(meter)
    assert source.generated() == (38, 256)
    got = source.batches()
    assert [(b.prompts, b.informative_prompts, b.rounds) for b in got] == [(4, 1, 5), (4, 0, 3)]
    assert all(math.isnan(b.alloc_seconds) for b in got)  # not timed apart from generation
    assert source.batches() == []


class _Trainer:
    """The little of a TRL trainer the callback touches."""

    def __init__(self) -> None:
        self.model = torch.nn.Linear(2, 1)
        self.model.train()
        self.calls = 0

    def _prepare_inputs(self, batch: Any) -> dict[str, Any]:
        self.calls += 1
        return {"advantages": torch.tensor(batch)}


def callback(**cfg: Any) -> RunDirectoryCallback:
    settings = {"steps": 6, "eval_every": 0, "save_every": 0, "save_minutes": None,
                "max_minutes": None, "steps_per_generation": 1, "num_iterations": 1,
                "update_norm_every": 0, "keep_checkpoints": 2, **cfg}  # fmt: skip
    source = SimpleNamespace(generated=lambda: (0, 0), batches=lambda: [])
    return RunDirectoryCallback(cfg=SimpleNamespace(**settings), trainer=_Trainer(), source=source,
                                log=None, evaluate=dict, progress=RunProgress(),
                                fresh=True)  # fmt: skip


def decisions(cb: RunDirectoryCallback, steps: range) -> list[tuple[int, bool, bool]]:
    out = []
    for step in steps:
        control = SimpleNamespace(should_save=False, should_training_stop=False)
        cb._decide_save(control, step)
        out.append((step, control.should_save, control.should_training_stop))
    return out


def test_saves_every_n_steps_and_at_the_last() -> None:
    got = decisions(callback(save_every=2), range(1, 7))
    assert [s for s, save, _ in got if save] == [2, 4, 6]
    assert [s for s, save, _ in decisions(callback(), range(1, 7)) if save] == [6]


def test_saves_and_stops_wait_for_the_end_of_a_generation_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # k = 2, mu = 2: a generation batch feeds 4 steps; a save due at step 3 waits for step 4
    cb = callback(steps=12, save_every=3, steps_per_generation=2, num_iterations=2)
    assert [s for s, save, _ in decisions(cb, range(1, 13)) if save] == [4, 8, 12]
    cb = callback(steps=12, steps_per_generation=2)
    monkeypatch.setattr(stopping, "_requested", signal.SIGTERM)
    got = decisions(cb, range(1, 3))
    assert got == [(1, False, False), (2, True, True)] and cb.stop == "SIGTERM"


def test_a_signal_during_the_last_step_ends_the_run_by_its_steps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cb = callback(steps=2)
    monkeypatch.setattr(stopping, "_requested", signal.SIGINT)
    assert decisions(cb, range(2, 3)) == [(2, True, False)] and cb.stop is None


def test_gradient_rows_count_non_zero_advantages_in_training_only() -> None:
    cb = callback()
    trainer = cb.trainer
    trainer._prepare_inputs([0.0, 1.5, -0.2, 0.0])
    trainer._prepare_inputs([[0.0, 0.0], [0.0, 2.0]])  # per-token advantages: a row counts once
    assert cb.gradient_rows == 3 and trainer.calls == 2
    trainer.model.eval()
    trainer._prepare_inputs([1.0])
    assert cb.gradient_rows == 3


def test_trl_log_keys_keep_the_trainers_names() -> None:
    logs = {"loss": 0.5, "grad_norm": 2, "completions/mean_length": 4.0, "cgrpo/mean_k": 9.5,
            "allocation/rounds": 2.0, "flag": True, "text": "x"}  # fmt: skip
    expected = {"loss": 0.5, "grad_norm": 2.0, "mean_length": 4.0, "trl/cgrpo/mean_k": 9.5,
                "trl/allocation/rounds": 2.0}  # fmt: skip
    assert _trl_figures(logs) == expected
