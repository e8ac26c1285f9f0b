"""``adaroll grpo`` as a user meets it: stops, resumes with a changed config, bad inputs refused
before anything loads, thread counts, greedy sampling, the step API's round size, help texts and
chat templates."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from trainers.cli import build_parser
from trainers.cli import main as cli
from trainers.experiments.compete import CompeteConfig
from trainers.grpo import GRPOConfig
from trainers.grpo.trainer import GRPOTrainer
from trainers.run.grpo_command import checkpoint_dirs, main, read_jsonl

ROOT = Path(__file__).resolve().parents[3]


def small_cfg(model_dir: Path, **kw: Any) -> GRPOConfig:
    base: dict[str, Any] = {
        "model": str(model_dir),
        "task_size": 2000,
        "batch_size": 4,
        "group_size": 2,
        "eval_every": 0,
        "tensorboard": False,
        "progress": False,
        "device": "cpu",
        "threads": 1,
    }
    base.update(kw)
    return GRPOConfig(**base)


def grpo_args(model_dir: Path, out: Path, *extra: str) -> list[str]:
    return ["grpo", "--model", str(model_dir), "--task-size", "2000", "--batch-size", "4",
            "--group-size", "2", "--eval-every", "0", "--no-progress", "--no-tensorboard",
            "--device", "cpu", "--threads", "1", "--out", str(out), *extra]  # fmt: skip


# --- a. a stop by signal saves and says how to resume -------------------------------------------
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_saves_a_checkpoint_and_resume_continues(
    tiny_model_dir: Path, tmp_path: Path, sig: int, code: int
) -> None:
    out = tmp_path / "run"
    args = grpo_args(tiny_model_dir, out, "--steps", "100000", "--save-every", "0")
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainers.cli", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 600
    while len(read_jsonl(out / "metrics.jsonl")) < 3:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.2)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == code, stderr[-2000:]
    assert "Traceback" not in stderr
    resume_lines = [line for line in stdout.splitlines() if "--resume" in line]
    assert len(resume_lines) == 1 and signal.Signals(sig).name in resume_lines[0]
    steps = len(read_jsonl(out / "metrics.jsonl"))
    assert checkpoint_dirs(out)[-1].name == f"step-{steps:06d}"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stopped_by"] == signal.Signals(sig).name and summary["steps"] == steps
    # the same command with --resume continues from there (two more steps)
    args = grpo_args(tiny_model_dir, out, "--steps", str(steps + 2), "--save-every", "0")
    assert cli([*args, "--resume"]) == 0
    assert [r["step"] for r in read_jsonl(out / "metrics.jsonl")] == list(range(1, steps + 3))
    starts = json.loads((out / "provenance.json").read_text())["starts"]
    assert [s["step"] for s in starts] == [0, steps]  # where each start began


# --- b. resume refuses a changed config, and keeps every config that ran ------------------------
def test_resume_refuses_a_changed_config_naming_each_field(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    main(small_cfg(tiny_model_dir, steps=2, out=str(out)))
    with pytest.raises(ValueError) as err:
        main(small_cfg(tiny_model_dir, steps=3, out=str(out), resume=True, lr=1e-3,
                       batch_size=8))  # fmt: skip
    msg = str(err.value)
    assert "lr: 0.0002 → 0.001" in msg and "batch_size: 4 → 8" in msg
    assert "steps" not in msg.split("config:")[1].split(".")[0]  # the run length may change
    assert "--allow-config-change" in msg
    assert len(read_jsonl(out / "metrics.jsonl")) == 2  # nothing ran
    # the run length and logging may change; an explicit override lets anything change
    main(small_cfg(tiny_model_dir, steps=3, out=str(out), resume=True, eval_every=5))
    main(small_cfg(tiny_model_dir, steps=4, out=str(out), resume=True, lr=1e-3,
                   allow_config_change=True))  # fmt: skip
    configs = sorted(p.name for p in (out / "configs").iterdir())
    assert configs == ["config-step-0.json", "config-step-2.json", "config-step-3.json"]
    assert json.loads((out / "configs" / "config-step-0.json").read_text())["lr"] == 2e-4
    assert json.loads((out / "config.json").read_text())["lr"] == 1e-3


# --- c. names and paths are checked before anything loads or is written -------------------------
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--model", "{tmp}/no-model"], "no-model"),
        (["--task", "jsonl:{tmp}/missing.jsonl"], "missing.jsonl"),
        (["--utility", "bogus"], "unknown utility 'bogus'"),
        (["--allocator", "sb3:{tmp}/missing.zip"], "missing.zip"),
        (["--allocator", "bamdpp"], "Did you mean 'bamdp'"),
        (["--allocator", "bamdp", "--allocator-kwargs", '{"horizon": 3}'], "max_horizon"),
        (["--temperature", "0"], "temperature 0"),
    ],
)
def test_bad_names_and_paths_exit_2_before_the_model_loads(
    tiny_model_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    import trainers.models.loading

    def no_loading(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the model loaded before the inputs were checked")

    monkeypatch.setattr(trainers.models.loading, "load_policy", no_loading)
    out = tmp_path / "run"
    args = grpo_args(tiny_model_dir, out, "--steps", "2")
    args += [x.replace("{tmp}", str(tmp_path)) for x in extra]
    with pytest.raises(SystemExit) as exc:
        cli(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not out.exists()  # no run directory left behind


# --- d. a thread count that is never pathological, printed in the header ------------------------
def test_thread_defaults(tiny_model_dir: Path, tmp_path: Path, capsys: Any) -> None:
    auto = GRPOConfig().torch_threads()
    assert 1 <= auto <= min(os.cpu_count() or 1, 4)
    if os.getloadavg()[0] >= (os.cpu_count() or 1):
        assert auto == 1  # every core busy: one thread
    assert GRPOConfig(threads=0).torch_threads() == 0  # torch's own choice, on request
    shared = CompeteConfig(allocators="uniform", workers=2)
    assert shared.run_config("uniform", 0).threads == 1  # runs sharing the machine: one each
    assert CompeteConfig(allocators="uniform", workers=1).run_config("uniform", 0).threads is None
    main(small_cfg(tiny_model_dir, steps=1, out=str(tmp_path / "r"), threads=2))
    assert "torch threads: 2" in capsys.readouterr().out


# --- f. the round size is public and the step API works as the docs show (trainer page) -------
def test_round_size_is_public(tiny_model_dir: Path) -> None:
    uniform = GRPOTrainer(small_cfg(tiny_model_dir))
    assert uniform.round_size == uniform.cfg.rollout_budget == 8  # outcome-blind: one round
    # adaptive: the default schedule 0.5,0.5 (4 + 4); a given one; equal rounds of B without one
    assert GRPOTrainer(small_cfg(tiny_model_dir, allocator="bamdp")).round_size == 4
    three = small_cfg(tiny_model_dir, allocator="bamdp", round_schedule="0.75,0.25")
    assert GRPOTrainer(three).round_size == 6
    cfg = small_cfg(tiny_model_dir, allocator="bamdp", round_schedule=None, batch_size=2)
    assert GRPOTrainer(cfg).round_size == 2
    # a learned allocator keeps the round rule it was trained for: rounds of B
    learned = small_cfg(tiny_model_dir, allocator="sb3:pretrained", group_size=8)
    assert GRPOTrainer(learned).round_size == 4
    # an external agent allocates: bamdp's own pilot does not come with its unused name
    bamdp_cfg = small_cfg(tiny_model_dir, allocator="bamdp", group_size=8)
    assert GRPOTrainer(bamdp_cfg).plan.pilot == 2
    assert GRPOTrainer(bamdp_cfg, external=True).plan.pilot == 0
    ext = GRPOTrainer(small_cfg(tiny_model_dir), external=True)
    assert ext.round_size == 4 and ext.allocator is None and ext.next_round_size == 0
    obs = ext.begin_step()
    sizes = []
    while ext.budget_left:
        n = ext.next_round_size  # the default schedule's next round: 4, then 4
        sizes.append(n)
        counts = np.bincount(np.arange(n) % 4, minlength=4)
        obs = ext.run_round(counts).observation
    assert sizes == [4, 4]
    assert ext.finish_step().rollouts == 8 and obs["budget_left"][0] == 0
    with pytest.raises(RuntimeError, match="external=True"):
        ext.train_step()


def test_peek_batches_shows_what_the_trainer_draws(tiny_model_dir: Path) -> None:
    trainer = GRPOTrainer(small_cfg(tiny_model_dir, batch_size=4))
    ahead = trainer.peek_batches(3)
    seen = []
    for _ in range(3):
        trainer.train_step()
        seen.append([e.id for e in trainer.examples])
    assert seen == [[e.id for e in b] for b in ahead]


# --- g. help texts ------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["grpo", "compete"])
def test_help_points_nowhere_missing_and_says_each_default_once(command: str) -> None:
    parser = build_parser(command)
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    text = sub.format_help()
    assert "bench --list" not in text
    for action in sub._actions:
        if action.help:
            assert action.help.count("(default") <= 1, (action.option_strings, action.help)
    assert "--allocator-kwargs" in text and "--chat-template" in text


def test_compete_exposes_the_shared_run_options() -> None:
    parser = build_parser("compete")
    args = parser.parse_args(
        ["compete", "--allocators", "uniform,bamdp", "--steps", "7", "--batch-size", "4",
         "--group-size", "2", "--allocator-kwargs", '{"bamdp": {"max_horizon": 3}}',
         "--eval-train", "9"]
    )  # fmt: skip
    from adaroll_env.arguments import config_from_args

    cfg = config_from_args(CompeteConfig, args)
    assert cfg.grpo.steps == 7 and cfg.grpo.batch_size == 4 and cfg.grpo.eval_every == 300
    assert cfg.run_config("bamdp", 0).eval_train == 9
    run = cfg.run_config("bamdp", 1)
    assert run.allocator_options() == {"max_horizon": 3} and run.seed == 1 and run.steps == 7
    assert cfg.run_config("uniform", 0).allocator_kwargs is None
    with pytest.raises(ValueError, match="max_horizon"):
        CompeteConfig(allocators="bamdp", allocator_kwargs='{"bamdp": {"horizon": 3}}')


def test_allocator_kwargs_reach_the_allocator(tiny_model_dir: Path) -> None:
    cfg = small_cfg(tiny_model_dir, allocator="thompson", allocator_kwargs='{"max_horizon": 3}')
    trainer = GRPOTrainer(cfg)
    trainer.train_step()
    assert trainer.allocator.max_horizon == 3


# --- h. chat templates in the trainer and the live env ------------------------------------------
def test_chat_template_in_the_trainer(chat_model_dir: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(chat_model_dir)
    auto = GRPOTrainer(small_cfg(chat_model_dir, system_prompt="Answer with a number.",
                                 max_completion_length=4))  # fmt: skip
    example = auto.task.train[0]
    messages = [
        {"role": "system", "content": "Answer with a number."},
        {"role": "user", "content": example.prompt},
    ]
    text = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    templated = tok(text, add_special_tokens=False).input_ids
    assert auto.prompt_ids(example) == list(templated)
    assert tok.decode(auto.prompt_ids(example)).endswith("<|im_start|>assistant\n")
    report = auto.train_step()
    assert report.rollouts == 8 and np.isfinite(report.loss)
    assert np.isfinite(auto.evaluate(size=4, k=1)["pass@1"])
    plain = GRPOTrainer(small_cfg(chat_model_dir, chat_template="none"))
    assert plain.prompt_ids(example) == list(tok(example.prompt).input_ids)


def test_chat_template_in_the_live_env(chat_model_dir: Path) -> None:
    import gymnasium as gym

    import adaroll_env
    from agents import make_allocator

    gym.register_envs(adaroll_env)
    env = gym.make(
        adaroll_env.LIVE_ENV_ID, model=str(chat_model_dir), batch_size=4, group_size=2,
        task_size=2000, max_completion_length=4, eval_every=0, tensorboard=False,
        progress=False, device="cpu", threads=1, system_prompt="Be brief.",
    )  # fmt: skip
    trainer = env.unwrapped.trainer
    obs, info = env.reset(seed=0)
    text = trainer.tokenizer.decode(trainer.prompt_ids(trainer.examples[0]))
    assert text.startswith("<|im_start|>system\nBe brief.<|im_end|>")
    allocator, done = make_allocator("uniform", env, seed=0), False
    while not done:
        obs, _, done, _, info = env.step(allocator.act(obs))
    assert info["report"]["rollouts"] == 8
    env.close()


def test_training_utility_is_a_deprecated_alias_of_step_report() -> None:
    import trainers.grpo.step_report
    import trainers.grpo.trainer
    from trainers.grpo.step_report import StepReport

    for module in (trainers.grpo.trainer, trainers.grpo.step_report):
        with pytest.warns(DeprecationWarning, match="StepReport"):
            assert module.TrainingUtility is StepReport


def test_eval_train_logs_training_prompts_beside_held_out(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    """``--eval-train N`` evaluates N training prompts (the same ones each time) under
    ``train/``; the held-out figures are unchanged by it."""
    out = tmp_path / "run"
    main(small_cfg(tiny_model_dir, steps=2, eval_every=2, eval_size=6, eval_k=2, eval_train=5,
                   out=str(out)))  # fmt: skip
    recs = read_jsonl(out / "eval.jsonl")
    assert [r["step"] for r in recs] == [0, 2]
    assert all(r["train/prompts"] == 5 and r["prompts"] == 6 for r in recs)
    assert all(0.0 <= r["train/pass@1"] <= 1.0 for r in recs)
    plain = tmp_path / "plain"
    main(small_cfg(tiny_model_dir, steps=2, eval_every=2, eval_size=6, eval_k=2, out=str(plain)))
    held = read_jsonl(plain / "eval.jsonl")
    assert [r["pass@1"] for r in held] == [r["pass@1"] for r in recs]
    assert not any(k.startswith("train/") for r in held for k in r)
    t = GRPOTrainer(small_cfg(tiny_model_dir))
    with pytest.raises(ValueError, match=r"split must be one of \['test', 'validation', 'train'\]"):
        t.evaluate(split="dev")
    with pytest.raises(ValueError, match="eval_train"):
        small_cfg(tiny_model_dir, eval_train=-1)


# --- long runs survive: a hard kill, a done run, results without a checkpoint -------------------
#: the fields of a step report that are measured time, not computed numbers
TIMING = ("step_seconds", "gen_seconds", "train_seconds", "alloc_seconds", "tokens_per_s",
          "alloc_overhead")  # fmt: skip


def _numbers(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k not in TIMING and "seconds" not in k}
            for r in records]  # fmt: skip


@pytest.mark.slow
def test_kill_9_at_an_arbitrary_step_then_resume_equals_an_uninterrupted_run(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    """SIGKILL (no handler runs) at whatever step the run has reached; ``adaroll grpo --out DIR
    --resume`` alone (every other flag from the saved config) continues from the last periodic
    checkpoint, and the metrics equal a run that was never stopped."""
    out = tmp_path / "killed"
    args = grpo_args(tiny_model_dir, out, "--steps", "100000", "--save-every", "3",
                     "--allocator", "bamdp", "--seed", "5")  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-m", "trainers.cli", *args], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 600
    while len(read_jsonl(out / "metrics.jsonl")) < 5:
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    reached = len(read_jsonl(out / "metrics.jsonl"))
    last = checkpoint_dirs(out)[-1]
    assert int(last.name.split("-")[-1]) % 3 == 0 and not (out / "DONE").exists()
    target = reached + 2
    assert cli(["grpo", "--out", str(out), "--resume", "--steps", str(target)]) == 0
    saved = json.loads((out / "config.json").read_text())
    assert (saved["allocator"], saved["seed"], saved["save_every"]) == ("bamdp", 5, 3)
    straight = tmp_path / "straight"
    main(small_cfg(tiny_model_dir, steps=target, save_every=3, allocator="bamdp", seed=5,
                   out=str(straight)))  # fmt: skip
    a, b = read_jsonl(straight / "metrics.jsonl"), read_jsonl(out / "metrics.jsonl")
    assert [r["step"] for r in b] == list(range(1, target + 1))
    assert _numbers(a) == _numbers(b)
    assert json.loads((out / "DONE").read_text())["steps"] == target


def test_resume_takes_the_saved_flags_and_refuses_a_given_one_that_differs(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert cli(grpo_args(tiny_model_dir, out, "--steps", "2", "--allocator", "bamdp")) == 0
    assert cli(["grpo", "--out", str(out), "--resume", "--steps", "3"]) == 0
    assert json.loads((out / "config.json").read_text())["allocator"] == "bamdp"
    assert [r["step"] for r in read_jsonl(out / "metrics.jsonl")] == [1, 2, 3]
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        cli(["grpo", "--out", str(out), "--resume", "--steps", "4", "--allocator", "uniform"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "allocator: 'bamdp' → 'uniform'" in err
    assert err.count("→") == 1  # only the flag given: the others came from the saved config


def test_a_done_run_is_never_retrained_or_rewritten(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    main(small_cfg(tiny_model_dir, steps=2, eval_every=2, eval_size=4, eval_k=1, out=str(out)))
    done = json.loads((out / "DONE").read_text())
    assert (done["steps"], done["stopped_by"]) == (2, "steps")
    printed = capsys.readouterr().out
    assert f"run directory: {out}" in printed and "checkpoint:  " in printed
    assert f"train further: adaroll grpo --out {out} --resume --steps" in printed
    files = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    summary = main(small_cfg(tiny_model_dir, steps=2, eval_every=2, eval_size=4, eval_k=1,
                             out=str(out), resume=True))  # fmt: skip
    assert f"{out} is done (2 steps" in capsys.readouterr().out
    assert summary["steps"] == 2
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == files


def test_results_without_a_checkpoint_are_set_aside_never_overwritten(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run killed before its first checkpoint left results: the next start keeps them in
    superseded/<time>/ and says so."""
    out = tmp_path / "run"
    out.mkdir()
    (out / "metrics.jsonl").write_text('{"step": 1, "loss": 0.5}\n')
    (out / "eval.jsonl").write_text('{"step": 0, "pass@1": 0.25}\n')
    main(small_cfg(tiny_model_dir, steps=1, out=str(out), resume=True))
    printed = capsys.readouterr().out
    (kept,) = (out / "superseded").iterdir()
    assert f"they are kept in {kept}" in printed.replace("\n", "")
    assert (kept / "metrics.jsonl").read_text() == '{"step": 1, "loss": 0.5}\n'
    assert (kept / "eval.jsonl").read_text() == '{"step": 0, "pass@1": 0.25}\n'
    assert [r["step"] for r in read_jsonl(out / "metrics.jsonl")] == [1]
    assert read_jsonl(out / "metrics.jsonl")[0]["loss"] != 0.5


def test_without_progress_no_transformers_bar_reaches_the_output(
    tiny_model_dir: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """--no-progress: transformers' bars (a model load, each checkpoint written) stay out of
    the output, which a competition keeps in its log; its bar setting is as it was after."""
    from transformers.utils import logging as hf_logging

    before = hf_logging.is_progress_bar_enabled()
    main(small_cfg(tiny_model_dir, steps=2, save_every=1, out=str(tmp_path / "run"),
                   progress=False))  # fmt: skip
    captured = capfd.readouterr()
    assert len(checkpoint_dirs(tmp_path / "run")) >= 1  # checkpoints were written
    for bar in ("Writing model shards", "Loading weights", "it/s]"):
        assert bar not in captured.out and bar not in captured.err
    assert hf_logging.is_progress_bar_enabled() == before
