"""``rg:`` and named-column ``jsonl:`` specs wherever a task spec is taken: ``adaroll grpo``,
``adaroll compete``, the live env ``AdaRoll/GRPOTraining-v0`` (the TRL helpers are in
tests/trainers/trl/test_adapters.py). Short runs of the tiny model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("reasoning_gym")

from trainers.tasks import SAMPLE_PATH, make_task

#: short spell_backward prompts (about 50 characters) fit the tiny model's 64-token context
SPEC = "rg:spell_backward?min_word_len=3&max_word_len=5&num_train=64&num_validation=8&num_test=16"
TINY = ["--steps", "2", "--batch-size", "4", "--group-size", "2", "--eval-every", "2",
        "--eval-size", "8", "--eval-k", "2", "--threads", "1", "--no-progress",
        "--device", "cpu"]  # fmt: skip


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_adaroll_grpo_trains_on_an_rg_task_grouping_beliefs_by_metadata(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    from trainers.cli import main as cli

    out = tmp_path / "run"
    args = ["grpo", "--model", str(tiny_model_dir), "--task", SPEC, "--belief-group", "word_len",
            "--out", str(out), *TINY]  # fmt: skip
    assert cli(args) == 0
    task = json.loads((out / "task.json").read_text())
    assert task["name"] == SPEC.split("&num_train")[0]
    assert (task["num_train"], task["num_validation"], task["num_test"]) == (64, 8, 16)
    assert task["details"]["level_keys"] == ["word_len"]
    assert len(read_jsonl(out / "metrics.jsonl")) == 2
    evals = read_jsonl(out / "eval.jsonl")
    assert evals and 0.0 <= evals[-1]["pass@1"] <= 1.0
    beliefs = json.loads((out / "beliefs.json").read_text())
    word_len = {e.id: e.columns["word_len"] for e in make_task(SPEC).train}
    assert beliefs["ids"] and beliefs["groups"] == [word_len[i] for i in beliefs["ids"]]


def test_adaroll_grpo_refuses_a_bad_rg_spec_as_a_user_error(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from trainers.cli import main as cli

    args = ["grpo", "--model", str(tiny_model_dir), "--task", "rg:spell_backward?min_len=3",
            "--out", str(tmp_path / "bad"), *TINY]  # fmt: skip
    with pytest.raises(SystemExit) as stop:
        cli(args)
    assert stop.value.code == 2
    assert "no option 'min_len'" in capsys.readouterr().err


def test_adaroll_grpo_on_named_jsonl_columns(tiny_model_dir: Path, tmp_path: Path) -> None:
    from trainers.cli import main as cli

    subjects = SAMPLE_PATH.parent / "sample_subjects.jsonl"
    out = tmp_path / "run"
    spec = f"jsonl:{subjects}?question=problem&answer=final&group=subject"
    args = ["grpo", "--model", str(tiny_model_dir), "--task", spec, "--out", str(out), *TINY]
    args[args.index("--eval-size") + 1] = "2"
    assert cli(args) == 0
    task = json.loads((out / "task.json").read_text())
    assert task["num_train"] + task["num_test"] == 8
    assert set(task["levels"]["train"]) <= {"0", "1", "2"}  # the three subjects


@pytest.mark.slow
def test_adaroll_compete_runs_entrants_on_an_rg_task(tiny_model_dir: Path, tmp_path: Path) -> None:
    from trainers.experiments.compete import CompeteConfig, main
    from trainers.grpo import GRPOConfig

    grpo = GRPOConfig(model=str(tiny_model_dir), task=SPEC, steps=2, batch_size=4, group_size=2,
                      eval_every=2, eval_size=8, eval_k=2, threads=1)  # fmt: skip
    cfg = CompeteConfig(allocators="uniform,thompson", seeds=1, workers=1,
                        out=str(tmp_path / "c"), progress=False, grpo=grpo)  # fmt: skip
    summary = main(cfg)
    rows = {r["allocator"]: r for r in summary["rows"]}
    assert set(rows) == {"uniform", "thompson"}
    for name in rows:
        task = json.loads((cfg.run_dir(name, 0) / "task.json").read_text())
        assert task["details"]["dataset"] == "spell_backward" and task["num_train"] == 64


def test_the_live_env_steps_on_an_rg_task(tiny_model_dir: Path) -> None:
    import gymnasium as gym
    import numpy as np

    import adaroll_env

    gym.register_envs(adaroll_env)
    env = gym.make(adaroll_env.LIVE_ENV_ID, model=str(tiny_model_dir), task=SPEC, batch_size=4,
                   group_size=2, device="cpu", eval_every=0, tensorboard=False,
                   progress=False)  # fmt: skip
    try:
        env.reset(seed=0)
        assert env.unwrapped.trainer.task.details["dataset"] == "spell_backward"
        done, steps = False, 0
        while not done:
            action = np.ones(env.action_space.shape, dtype=env.action_space.dtype)
            _, reward, terminated, truncated, _ = env.step(action)
            done, steps = terminated or truncated, steps + 1
        assert steps >= 1 and np.isfinite(reward)
    finally:
        env.close()
