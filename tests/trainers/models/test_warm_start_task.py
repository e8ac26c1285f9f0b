"""trainers.models.warm_start_task: ``adaroll warm-start`` of any family on any task — the plan,
the model card, ``--out`` and the cache, a stop by signal and a bit-identical resume."""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import signal
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from trainers import cli
from trainers.grpo.evaluation import held_out_subset
from trainers.models import supervised
from trainers.models.loading import load_policy, weights_sha256
from trainers.models.tiny import build_tiny_tokenizer
from trainers.models.warm_start_task import (
    MODEL_CARD,
    RUN_FILE,
    WarmStartConfig,
    ensure_warm_start,
    git_state,
    level_weights_for,
    plan_for,
    warm_start_dir,
)
from trainers.tasks import Example, make_task

#: a warm start of a few seconds: one narrow layer, a small task pool, a small report
QUICK = {"task_size": 2000, "steps": 12, "hidden_size": 64, "num_layers": 1, "eval_size": 16,
         "eval_samples": 2, "progress": False, "save_minutes": 0.0}  # fmt: skip


def argv(**kw: Any) -> list[str]:
    """``warm-start`` options for ``QUICK`` updated by ``kw``."""
    out = ["warm-start"]
    for key, value in {**QUICK, **kw}.items():
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            out.append(flag if value else "--no-" + flag[2:])
        else:
            out += [flag, str(value)]
    return out


# -- the config and the plan ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"arch": "bert"}, "unknown architecture 'bert'"),
        ({"steps": 0}, r"steps \(0\) must be a positive integer"),
        ({"hidden_size": 100}, "multiple of the head size 64"),
        ({"context": -1}, "context"),
        ({"level_weights": "1,x"}, "comma-separated non-negative numbers"),
        ({"save_minutes": -1.0}, "save_minutes"),
        ({"warmup": 1.0}, "warmup"),
        ({"eval_size": 0}, "eval_size"),
        ({"report_split": "train"}, r"report_split \('train'\) must be one of"),
    ],
)
def test_bad_options_are_refused_with_the_fix(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        WarmStartConfig(**kwargs)


def test_levels_are_drawn_equally_unless_weighted() -> None:
    train = [Example(i, f"p{i}", "1", level=lv) for i, lv in enumerate([0, 0, 0, 2, 2, 3])]
    assert level_weights_for(train, "").tolist() == [1 / 3, 0.0, 1 / 3, 1 / 3]
    assert level_weights_for(train, "0,0,1,3").tolist() == [0.0, 0.0, 0.25, 0.75]
    with pytest.raises(ValueError, match="has 2 entries but the task's training split has levels"):
        level_weights_for(train, "1,1")
    with pytest.raises(ValueError, match="gives weight 0 to every level the training split holds"):
        level_weights_for(train, "0,1,0,0")


def test_the_arithmetic_plan_is_the_tiny_models_data_and_the_trainers_split() -> None:
    plan = plan_for(WarmStartConfig(**QUICK))
    assert plan.size.context == 64 and plan.max_new_tokens == 6  # "ddd+ddd=" + 4 + </s>
    grpo = make_task("arithmetic", seed=0, num_train=2000)  # the trainer's (pool "rl")
    assert {e.prompt for e in plan.test} <= {e.prompt for e in grpo.test}
    assert plan.test == held_out_subset(grpo.test, 16)
    assert not {e.prompt for e in plan.train} & {e.prompt for e in grpo.train}  # warm-up pool
    assert not {e.prompt for e in plan.train} & {e.prompt for e in grpo.test}
    assert plan.weights.tolist() == [1 / 8] * 8
    # the trainer's held-out split whatever the model's seed
    assert plan_for(WarmStartConfig(**{**QUICK, "seed": 5})).test == plan.test


def test_the_validation_report_leaves_test_and_training_as_they_were() -> None:
    plan = plan_for(WarmStartConfig(**QUICK))
    val = plan_for(WarmStartConfig(**QUICK, report_split="validation"))
    # the same model: data, context, report length; only the reported prompts differ
    assert val.train == plan.train and val.size == plan.size
    assert val.max_new_tokens == plan.max_new_tokens and val.task.test == plan.task.test
    assert val.test == held_out_subset(val.task.validation, 16)
    reported = {e.prompt for e in val.test}
    assert not reported & {e.prompt for e in plan.task.test}  # never a test expression
    assert not reported & {e.prompt for e in plan.task.train}  # never a warm-up expression
    assert all(e.id >= 2_000_000 for e in val.test)
    # the cache digest of the default split is the one the recipe had before the option
    assert warm_start_dir(WarmStartConfig()).name == "llama-arithmetic-6de2167c568a"
    assert warm_start_dir(WarmStartConfig(report_split="validation")).name != (
        "llama-arithmetic-6de2167c568a"
    )
    with pytest.raises(ValueError, match="has no validation split to report on"):
        plan_for(WarmStartConfig(task="sample", report_split="validation"))


def test_the_context_follows_the_task_and_a_short_one_is_refused() -> None:
    with pytest.raises(ValueError, match="sizes the arithmetic task only"):
        plan_for(WarmStartConfig(task="sample", task_size=10))
    plan = plan_for(WarmStartConfig(task="sample", eval_size=None))
    tok = build_tiny_tokenizer()
    examples = [*plan.task.train, *plan.task.test]
    longest = max(len(tok(e.prompt).input_ids) for e in examples) + max(
        len(e.answer) for e in examples
    )
    assert plan.size.context >= longest + 1 + 32 and plan.size.context % 64 == 0
    assert plan.size.context - 64 < longest + 1 + 32
    with pytest.raises(ValueError, match=r"context \(40\) is shorter than the task's longest"):
        plan_for(WarmStartConfig(task="sample", context=40))


# -- the command ------------------------------------------------------------------------------


def test_warm_start_writes_a_loadable_model_and_its_card_last(tmp_path: Path, capsys) -> None:
    out = tmp_path / "m"
    args = argv(arch="gpt2", out=out, seed=2)
    assert cli.main(args) == 0
    printed = capsys.readouterr().out
    assert "gpt2 warm start on arithmetic, held-out" in printed and "pass@1" in printed
    names = {p.name for p in out.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", MODEL_CARD} <= names
    assert "checkpoints" not in names and RUN_FILE not in names  # only the model is left
    card = json.loads((out / MODEL_CARD).read_text())
    assert card["task"] == "arithmetic" and card["architecture"] == "gpt2"
    assert card["model_type"] == "gpt2" and card["steps"] == 12
    model, tok = load_policy(str(out))
    assert card["parameters"] == sum(p.numel() for p in model.parameters())
    assert card["weights_sha256"] == weights_sha256(out, length=64)
    assert card["command"] == shlex.join(["adaroll", *args])
    assert card["git"] == git_state() and card["config"]["seed"] == 2
    assert card["size"] == {"hidden_size": 64, "num_layers": 1, "intermediate_size": 256,
                            "context": 64, "rope_theta": 10000.0}  # fmt: skip
    held = card["held_out"]
    assert held["split"] == "test"
    assert held["k"] == 2 and [r["level"] for r in held["levels"]] == list(range(8))
    for row in (*held["levels"], held["overall"]):
        assert {"n", "pass@1", "pass@2", "greedy", "spread"} <= set(row)
        assert 0 <= row["pass@1"] <= row["pass@2"] <= 1
    assert tok.model_max_length == 64 and model.config.n_positions == 64
    # the card is written last: it is the newest file of the directory
    newest = max((p for p in out.iterdir() if p.is_file()), key=lambda p: p.stat().st_mtime_ns)
    assert newest.name == MODEL_CARD
    # again into the same --out: the first model is kept in superseded/
    first = (out / "model.safetensors").read_bytes()
    assert cli.main(argv(arch="gpt2", out=out, seed=3)) == 0
    (kept,) = (out / "superseded").iterdir()
    assert (kept / "model.safetensors").read_bytes() == first
    assert json.loads((kept / MODEL_CARD).read_text())["config"]["seed"] == 2
    assert json.loads((out / MODEL_CARD).read_text())["config"]["seed"] == 3


@pytest.mark.parametrize("arch", ["qwen3", "gpt_neox"])
def test_warm_start_on_the_sample_task_scores_with_its_verifier(tmp_path: Path, arch: str) -> None:
    out = tmp_path / arch
    args = argv(task="sample", arch=arch, out=out, steps=4, eval_size="none", task_size="none")
    assert cli.main(args) == 0
    card = json.loads((out / MODEL_CARD).read_text())
    task = make_task("sample")
    assert card["task"] == "sample" and card["held_out"]["overall"]["n"] == len(task.test)
    assert card["task_description"]["name"] == "sample"
    model, _ = load_policy(str(out))
    assert model.config.model_type == arch


def test_a_stop_by_signal_saves_and_the_resume_is_bit_identical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    straight, split = tmp_path / "straight", tmp_path / "split"
    assert cli.main(argv(arch="qwen3", out=straight, steps=10)) == 0
    real = supervised.lr_factor

    def signal_after_four_steps(step: int, total: int, warmup: int) -> float:
        if step == 4:  # the scheduler's fourth step: a real SIGTERM through the handlers
            os.kill(os.getpid(), signal.SIGTERM)
        return real(step, total, warmup)

    monkeypatch.setattr(supervised, "lr_factor", signal_after_four_steps)
    capsys.readouterr()
    assert cli.main(argv(arch="qwen3", out=split, steps=10)) == 143
    printed = capsys.readouterr().out
    monkeypatch.setattr(supervised, "lr_factor", real)
    assert not (split / MODEL_CARD).exists()
    assert [p.name for p in (split / "checkpoints").iterdir()] == ["step-000004"]
    found = re.search(r"stopped by SIGTERM after step 4 of 10, .* continue with: (.*)", printed)
    assert found, printed
    command = shlex.split(found.group(1))
    assert command[:2] == ["adaroll", "warm-start"] and command[-1] == "--resume"
    # without --resume, or with other options, the unfinished run is not touched
    for options, match in [
        (argv(arch="qwen3", out=split, steps=10), "pass --resume to continue it"),
        ([*argv(arch="qwen3", out=split, steps=11), "--resume"], "steps: 10 -> 11"),
    ]:
        with pytest.raises(SystemExit) as exc:
            cli.main(options)
        assert exc.value.code == 2 and match in capsys.readouterr().err
    assert cli.main(command[1:]) == 0
    assert "resumed from" in capsys.readouterr().out
    a, b = (json.loads((d / MODEL_CARD).read_text()) for d in (straight, split))
    assert a["weights_sha256"] == b["weights_sha256"]
    assert a["loss"] == b["loss"] and a["held_out"] == b["held_out"]
    assert b["steps"] == 10 and not (split / "checkpoints").exists()
    # resuming a finished run does nothing
    assert cli.main(command[1:]) == 0
    assert "nothing to resume" in capsys.readouterr().out


def test_periodic_checkpoints_keep_the_newest(tmp_path: Path, monkeypatch) -> None:
    saved: list[int] = []
    real = supervised._save_checkpoint

    def spy(directory: Path, state: dict[str, Any]) -> Path:
        saved.append(state["step"])
        path = real(directory, state)
        assert [p.name for p in (directory / "checkpoints").iterdir()] == [path.name]
        return path

    monkeypatch.setattr(supervised, "_save_checkpoint", spy)
    assert cli.main(argv(out=tmp_path / "m", steps=10, save_every=3)) == 0
    assert saved == [3, 6, 9]  # never after the last step: the model is saved then


def test_a_closed_output_stops_nothing(tmp_path: Path, monkeypatch) -> None:
    class Gone(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr("sys.stdout", Gone())
    out = tmp_path / "m"
    assert cli.main(argv(out=out, progress=True)) == 0
    assert (out / MODEL_CARD).is_file()


# -- the cache --------------------------------------------------------------------------------


def test_the_cache_is_built_once_per_recipe(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("ADAROLL_CACHE_DIR", str(tmp_path))
    cfg = WarmStartConfig(arch="llama", **QUICK)
    path = ensure_warm_start(cfg)
    assert path == warm_start_dir(cfg) and path.name.startswith("llama-arithmetic-")
    assert (path / MODEL_CARD).is_file()
    assert warm_start_dir(WarmStartConfig(arch="llama", **{**QUICK, "save_every": 5})) == path
    assert warm_start_dir(WarmStartConfig(arch="llama", **{**QUICK, "steps": 13})) != path
    monkeypatch.setattr(
        "trainers.models.warm_start_task.train_and_save",
        lambda *a, **k: pytest.fail("a finished build is reused"),
    )
    assert cli.main(["warm-start", *argv(arch="llama")[1:]]) == 0
    assert f"already built: {path}" in capsys.readouterr().out.replace("\n", "")
    assert sorted(p.name for p in tmp_path.joinpath("models").iterdir()) == sorted(
        [path.name, f".{path.name}.lock"]
    )


def test_pretrain_tiny_writes_the_model_card_too(tmp_path: Path) -> None:
    out = tmp_path / "tiny"
    assert cli.main(["pretrain-tiny", "--out", str(out), "--steps", "5", "--num-train", "400",
                     "--num-test", "8", "--hidden-size", "64", "--num-layers", "1",
                     "--eval-samples", "2", "--no-progress"]) == 0  # fmt: skip
    card = json.loads((out / MODEL_CARD).read_text())
    assert card["architecture"] == "llama" and card["task"] == "arithmetic"
    assert card["command"].startswith("adaroll pretrain-tiny --out")
    assert (out / "adaroll_tiny.json").stat().st_mtime_ns >= (out / MODEL_CARD).stat().st_mtime_ns
    model, _ = load_policy(str(out))
    assert card["weights_sha256"] == weights_sha256(out, length=64)
    assert isinstance(model.get_input_embeddings().weight, torch.Tensor)
    assert np.isfinite(card["loss"]["last"])


def test_git_state_is_dirty_only_where_runs_execute_code(tmp_path: Path) -> None:
    """Results, documentation and the evidence a competition copies in leave a checkout clean;
    a changed or added file of the package's code makes it dirty."""
    import shutil
    import subprocess

    if shutil.which("git") is None:
        pytest.skip("needs git")

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    for rel in ("agents/a.py", "trainers/t.py", "results/r.md", "docs/d.md", "pyproject.toml"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x\n")
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    inside = tmp_path / "trainers"
    assert git_state(inside)["dirty"] is False and len(git_state(inside)["commit"]) == 40
    (tmp_path / "results" / "r.md").write_text("y\n")
    (tmp_path / "results" / "new.json").write_text("{}\n")
    (tmp_path / "docs" / "d.md").write_text("y\n")
    assert git_state(inside)["dirty"] is False  # results and docs: still the commit's code
    (tmp_path / "agents" / "new.py").write_text("x = 1\n")
    assert git_state(inside)["dirty"] is True  # an added module
    (tmp_path / "agents" / "new.py").unlink()
    (tmp_path / "trainers" / "t.py").write_text("y\n")
    assert git_state(inside)["dirty"] is True  # a changed one
    assert git_state(tmp_path.parent)["commit"] is None  # outside a checkout
