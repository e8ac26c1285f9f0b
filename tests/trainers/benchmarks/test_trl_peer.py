"""TRL's side of the trainer benchmark (``trainers.benchmarks.trl_peer``): the settings it gives
TRL and the reward that counts tokens."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from trainers.benchmarks.trainer import TrainerBenchConfig
from trainers.benchmarks.trl_peer import _TokenCounter, require_trl, trl_arguments
from trainers.grpo import GRPOConfig


def test_trl_accepts_the_arguments_and_they_match_our_side(tmp_path: Path) -> None:
    require_trl()  # the trl extra is installed in the test environment
    import trl

    grpo = GRPOConfig(batch_size=3, group_size=4, max_completion_length=6, lr=2e-5, seed=5)
    cfg = TrainerBenchConfig(grpo=grpo, slices=2, steps_per_slice=3)
    args = trl_arguments(cfg, str(tmp_path))
    config = trl.GRPOConfig(**args)
    assert config.per_device_train_batch_size == config.generation_batch_size == 12 == cfg.rollouts
    assert config.num_generations == 4 and config.max_completion_length == 6
    assert config.max_steps == cfg.total_steps and config.learning_rate == 2e-5
    assert config.seed == 5 and config.beta == 0.0 and config.loss_type == grpo.loss_type
    assert not config.bf16 and not config.shuffle_dataset and config.output_dir == str(tmp_path)


def test_the_token_counter_scores_counts_and_pops() -> None:
    c = _TokenCounter()
    out = c(["p", "p", "q", "q"], [" 4", "5", "7 ", "x"], [[1, 2], [3], [4, 5, 6], []],
            answer=["4", "4", "7", "7"])  # fmt: skip
    assert out == [1.0, 0.0, 1.0, 0.0]
    tokens, mean, prompts = c.pop()
    assert (tokens, mean, prompts) == (6, 0.5, ["p", "q"])
    tokens, mean, prompts = c.pop()  # popped: nothing since
    assert tokens == 0 and math.isnan(mean) and prompts == []
    with pytest.raises(ValueError):  # a completion without its answer is a bug
        c(["p"], ["1", "2"], [[1], [2]], answer=["1"])
