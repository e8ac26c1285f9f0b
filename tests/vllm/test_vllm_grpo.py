"""A short ``adaroll grpo --engine vllm`` run on arithmetic learns, with vLLM's log-probs as the
old log-probs (``--old-logprobs engine``) agreeing with the trainer's to float precision.

The run's settings and threshold are those of the HF engine's learning test
(``tests/trainers/test_trainer.py::test_grpo_raises_held_out_accuracy``): change both together
when the tiny model's recipe or the trainer's defaults change.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

pytest.importorskip("vllm", reason="needs vLLM: `make test-vllm` runs these in .venv-vllm")

from trainers.cli import main as cli_main
from trainers.run import read_jsonl

STEPS = 40


@pytest.mark.slow
def test_grpo_with_the_vllm_engine_raises_held_out_accuracy(tiny_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = ["grpo", "--engine", "vllm", "--old-logprobs", "engine", "--model", str(tiny_dir)]
    argv += ["--batch-size", "16", "--group-size", "8", "--lr", "1e-3", "--steps", str(STEPS)]
    argv += ["--eval-every", str(STEPS), "--eval-size", "240", "--eval-k", "4"]
    argv += ["--save-every", "0", "--device", "cpu", "--out", str(out)]
    argv += ["--no-tensorboard", "--no-progress"]
    assert cli_main(argv) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert json.loads((out / "config.json").read_text())["engine"] == "vllm"
    before, after = summary["first_eval"]["pass@1"], summary["final_eval"]["pass@1"]
    # 240 prompts × 4 samples, the same sampling seeds at both evaluations
    assert after > before + 0.03, (before, after)
    reports = read_jsonl(out / "metrics.jsonl")
    assert len(reports) == STEPS and all(math.isfinite(r["loss"]) for r in reports)
    diffs = [r["logprob_diff"] for r in reports if math.isfinite(r["logprob_diff"])]
    assert len(diffs) > STEPS // 2 and max(diffs) < 1e-4, diffs
