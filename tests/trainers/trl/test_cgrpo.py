"""C-GRPO as a peer (trainers.trl.cgrpo): its rollouts counted from its own logs, checked against
the completions the model really generated in a short competition run (needs the cgrpo extra,
TRL 1.14: ``make test-trl114``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from trainers.trl.cgrpo import CGRPO_TRL, arithmetic_answer, cgrpo_rollouts, require_cgrpo


def test_rollouts_come_from_one_log_per_step() -> None:
    logs = [
        {"cgrpo/mean_k": 5.0, "cgrpo/calibration_rollouts": 128.0, "loss": 0.1},
        {"train_runtime": 1.0},  # the closing log has no generation
        {"cgrpo/mean_k": 2.5},
    ]
    assert cgrpo_rollouts(logs, prompts_per_step=4, steps=2) == ([20, 10], [128, 0])
    with pytest.raises(RuntimeError, match=r"logged cgrpo/mean_k 2 times in 3 steps"):
        cgrpo_rollouts(logs, prompts_per_step=4, steps=3)
    assert arithmetic_answer(" 42\n") == "42"


def test_a_missing_trl_cgrpo_names_the_extra_and_the_trl_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "trl_cgrpo", None)  # import fails as if not installed
    with pytest.raises(ImportError) as exc:
        require_cgrpo()
    message = str(exc.value)
    assert 'pip install -e ".[cgrpo]"' in message and CGRPO_TRL in message
    assert "TRL 1.14 line" in message and ".venv-trl114" in message


def test_competition_run_reports_the_rollouts_cgrpo_generated(
    tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trl_cgrpo = pytest.importorskip(
        "trl_cgrpo", reason="needs the cgrpo extra (TRL 1.14): make test-trl114"
    )
    import trainers.models.loading as loading
    from trainers.experiments.trl_compete import TrlCompeteConfig, run_one

    monkeypatch.setenv("ADAROLL_CACHE_DIR", str(tiny_model_dir.parents[1]))
    # every completion the model generates inside C-GRPO's train(), apart (calibrate) or not
    phase = {"now": None}
    generated = {"train": 0, "calibrate": 0}

    def load_counting(name: str, **kw: Any) -> Any:
        model, tokenizer = real_load(name, **kw)
        inner = model.generate

        def generate(*args: Any, **kwargs: Any) -> Any:
            out = inner(*args, **kwargs)
            if phase["now"] is not None:
                generated[phase["now"]] += int(out.shape[0])
            return out

        model.generate = generate
        return model, tokenizer

    def during(name: str, method: Any) -> Any:
        def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
            before, phase["now"] = phase["now"], name
            try:
                return method(self, *args, **kwargs)
            finally:
                phase["now"] = before

        return wrapped

    real_load = loading.load_policy
    monkeypatch.setattr(loading, "load_policy", load_counting)
    trainer_cls = trl_cgrpo.CGRPOTrainer
    monkeypatch.setattr(trainer_cls, "train", during("train", trainer_cls.train))
    monkeypatch.setattr(trainer_cls, "calibrate", during("calibrate", trainer_cls.calibrate))

    cfg = TrlCompeteConfig(allocators="cgrpo", steps=3, seeds=1, batch_size=2, group_size=2,
                           eval_size=8, eval_k=2, calibration_size=4, task_size=64)  # fmt: skip
    run = run_one(cfg, "cgrpo", 0)
    by_step = run["rollouts_by_step"]
    assert len(by_step) == 3
    # what it reports is what the model generated: training, and one calibration (4 prompts ×
    # max(budget_grid) = 32, before the first step; the next is due at step 50)
    assert run["calibration_rollouts"] == generated["calibrate"] == 4 * 32
    assert sum(by_step) == generated["train"] + generated["calibrate"]
    assert run["train_rollouts_per_step"] == pytest.approx(generated["train"] / 3)
    assert run["rollouts_per_step"] == pytest.approx(sum(by_step) / 3)
    # 2 prompts a step, each drawing 2 to 32 completions along the grid (2, 4, 8, 16, 32)
    train = [by_step[0] - 128, *by_step[1:]]
    assert all(2 * 2 <= t <= 2 * 32 for t in train)
    assert 0.0 <= run["informative_frac"] <= 1.0
    assert 0 <= run["gradient_rollouts"] <= max(train)
    assert run["alloc_overhead"] is None
    for key in ("pass@1_before", "pass@1_after"):  # 8 prompts × 2 samples
        assert run[key] * 16 == pytest.approx(round(run[key] * 16))
