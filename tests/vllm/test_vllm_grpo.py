"""A short GRPO run with ``engine="vllm"`` on arithmetic learns, with vLLM's log-probs as the old
log-probs (``old_logprobs="engine"``) agreeing with the trainer's to float precision.

The task, settings and threshold are those of the HF engine's learning test
(``tests/trainers/grpo/test_trainer.py::test_grpo_raises_held_out_accuracy``): change both together
when the tiny model's recipe or the trainer's defaults change.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

pytest.importorskip("vllm", reason="needs vLLM: `make test-vllm` runs these in .venv-vllm")

from trainers.grpo import GRPOConfig
from trainers.run.grpo_command import main, read_jsonl
from trainers.tasks import make_task

STEPS = 150


@pytest.mark.slow
def test_grpo_with_the_vllm_engine_raises_held_out_accuracy(tiny_dir: Path, tmp_path: Path) -> None:
    # sums of one and two digits, held-out expressions never trained on
    task = make_task("arithmetic", seed=0, num_train=4000, num_test=80, levels=[0, 1])
    out = tmp_path / "run"
    cfg = GRPOConfig(
        model=str(tiny_dir),
        engine="vllm",
        old_logprobs="engine",
        batch_size=16,
        group_size=8,
        lr=1e-4,
        steps=STEPS,
        eval_every=STEPS,
        eval_size=None,  # all 80 held-out prompts ...
        eval_k=8,  # ... 8 samples each, the same sampling seeds at both evaluations
        save_every=0,
        device="cpu",
        out=str(out),
        tensorboard=False,
        progress=False,
    )
    summary = main(cfg, task=task)
    assert json.loads((out / "config.json").read_text())["engine"] == "vllm"
    before, after = summary["first_eval"]["pass@1"], summary["final_eval"]["pass@1"]
    assert after > before + 0.05, (before, after)
    reports = read_jsonl(out / "metrics.jsonl")
    assert len(reports) == STEPS and all(math.isfinite(r["loss"]) for r in reports)
    diffs = [r["logprob_diff"] for r in reports if math.isfinite(r["logprob_diff"])]
    assert len(diffs) > STEPS // 2 and max(diffs) < 1e-4, diffs
