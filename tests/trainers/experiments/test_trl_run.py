"""trainers.experiments.trl_run: what a TRL run refuses, its TRL arguments, its calibration
prompts, its evaluation (on a scripted engine) and, with TRL, real runs of the tiny model: a run
stopped by a signal and resumed ends with exactly the unstopped run's evaluations and step records,
evaluations leave training untouched, and C-GRPO's rollouts (the cgrpo extra, TRL 1.14:
``make test-trl114``) are what the model generated, its resume exact too."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import numpy as np
import pytest
import torch

from trainers.experiments.trl_run import TrlRunConfig, evaluate, run_task, trl_arguments

#: step-record and evaluation keys that hold wall-clock times (the rest must match exactly)
TIMES = {"seconds", "step_seconds", "alloc_seconds", "alloc_overhead", "trl/step_time",
         "trl/allocation/seconds", "trl/allocation/overhead"}  # fmt: skip


def tiny_run(model: Path, out: Path, **kw: Any) -> TrlRunConfig:
    """A very short TRL run of the tiny model (B = 4, G = 4, 4 steps, evaluation every 2)."""
    base: dict[str, Any] = {
        "model": str(model), "steps": 4, "batch_size": 4, "group_size": 4, "eval_every": 2,
        "eval_size": 8, "eval_k": 2, "task_size": 64, "calibration_size": 8, "save_every": 2,
        "out": str(out), "resume": True, "progress": False, "threads": 1, "device": "cpu",
        "gradient_noise_every": 0, "tensorboard": False,
    }  # fmt: skip
    return TrlRunConfig(**{**base, **kw})


def records(path: Path) -> list[dict[str, Any]]:
    """A JSONL file's records without their wall-clock times."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [{k: v for k, v in r.items() if k not in TIMES} for r in rows]


def stop_after(monkeypatch: pytest.MonkeyPatch, step: int) -> None:
    """Deliver SIGTERM's stop request during step ``step`` (as ``stopping``'s handler would)."""
    from trainers.experiments import trl_callback
    from trainers.run import stopping

    decide = trl_callback.RunDirectoryCallback._decide_save

    def wrapped(self: Any, control: Any, at: int) -> None:
        if at == step:
            monkeypatch.setattr(stopping, "_requested", signal.SIGTERM)
        decide(self, control, at)

    monkeypatch.setattr(trl_callback.RunDirectoryCallback, "_decide_save", wrapped)


# --- settings ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dynamic_sampling": True}, "dynamic_sampling (TRL has no DAPO dynamic sampling"),
        ({"allocator": "bamdp", "pool_size": 12, "batch_size": 4, "group_size": 4},
         "pool_size 12 (TRL generates num_generations = B·G / pool_size rows per prompt"),
        ({"allocator": "bamdp", "pool_size": 16, "batch_size": 4, "group_size": 4},
         "a whole number >= 2; B·G = 16: e.g. pool_size 2·B = 8"),
        ({"allocator": "cgrpo", "pool_size": 128}, "pool_size 128 for 'cgrpo' (C-GRPO samples B"),
        ({"budget": 20, "batch_size": 4, "group_size": 4},
         "budget 20 (TRL's budget is B·G = 16: set it through --group-size)"),
        ({"prior_alpha": 2.0}, "AllocatingGRPOTrainer's fixed prior is Beta(1, 1)"),
        ({"utility": "snr(auto)"}, "utility 'snr(auto)' (kappa is measured by adaroll's"),
        ({"gradient_noise_every": 10}, "gradient_noise_every 10 (measured by adaroll's trainer"),
        ({"allocator": "cgrpo", "loss_type": "grpo"},
         "loss_type 'grpo' for 'cgrpo' (trl-cgrpo needs a token-normalised loss"),
        ({"allocator": "cgrpo", "allocator_kwargs": '{"x": 1}'},
         "allocator_kwargs for 'cgrpo' (C-GRPO runs at its documented defaults)"),
        ({"allocator": "cgrpo", "calibration_size": 0}, "calibration_size 0 for 'cgrpo'"),
        ({"lr_schedule": "step"}, "lr_schedule must be one of ['constant', 'linear', 'cosine']"),
        ({"steps_per_generation": 0}, "steps_per_generation must be an integer >= 1, got 0"),
        ({"allocator": "bamdpp"}, "Did you mean 'bamdp'"),
    ],
)  # fmt: skip
def test_settings_trl_cannot_honour_are_refused_naming_the_fix(
    kwargs: dict[str, Any], message: str
) -> None:
    base = {"gradient_noise_every": 0, **kwargs}
    with pytest.raises(ValueError) as exc:
        TrlRunConfig(**base)
    assert message in str(exc.value)


def test_cgrpo_is_a_run_of_its_own_and_rounds_map_onto_a_round_size() -> None:
    c = TrlRunConfig(allocator="cgrpo", gradient_noise_every=0)
    assert c.is_cgrpo and c.allocator == "cgrpo" and c.to_dict()["trainer"] == "trl"
    r = TrlRunConfig(allocator="bamdp", rounds=3, round_schedule="auto", batch_size=4,
                     group_size=4, steps_per_generation=2, gradient_noise_every=0)  # fmt: skip
    # a generation batch of 2 x 4 prompts x 4 = 32 rollouts in 3 rounds: rounds of ceil(32/3)
    assert r.round_arguments() == {"round_size": 11, "round_schedule": None}
    assert TrlRunConfig(gradient_noise_every=0).round_arguments() == {
        "round_size": None,
        "round_schedule": "auto",
    }


def test_trl_arguments_map_the_settings() -> None:
    cfg = TrlRunConfig(batch_size=16, group_size=8, micro_batch_size=32, steps_per_generation=2,
                       num_iterations=3, lr=1e-4, lr_schedule="cosine", beta=0.04,
                       scale_rewards="batch", loss_type="dr_grpo", gradient_noise_every=0,
                       device="cpu", seed=5)  # fmt: skip
    args = trl_arguments(cfg, "/tmp/x")
    # 128 rows a step in micro-batches of 32: 4 accumulation steps; TRL's steps_per_generation
    # counts micro-steps, so 2 optimizer steps per generation batch are 8 of them
    assert (args["per_device_train_batch_size"], args["gradient_accumulation_steps"]) == (32, 4)
    assert args["steps_per_generation"] == 8 and args["num_generations"] == 8
    assert (args["learning_rate"], args["lr_scheduler_type"], args["beta"]) == (
        1e-4,
        "cosine",
        0.04,
    )
    assert (args["scale_rewards"], args["loss_type"], args["num_iterations"]) == (
        "batch",
        "dr_grpo",
        3,
    )
    assert args["seed"] == 5 and args["use_cpu"] and not args["bf16"]
    assert args["save_strategy"] == "no" and args["logging_steps"] == 1
    cgrpo = trl_arguments(cfg, "/tmp/x", width=32)  # C-GRPO's groups: 16 x 32 rows a step
    assert cgrpo["gradient_accumulation_steps"] == 16 and cgrpo["num_generations"] == 32
    small = trl_arguments(TrlRunConfig(batch_size=2, group_size=4, gradient_noise_every=0), "/x")
    assert small["per_device_train_batch_size"] == 8 and small["gradient_accumulation_steps"] == 1
    with pytest.raises(
        ValueError, match=r"micro_batch_size \(48\) must divide a step's rows, B × G"
    ):
        trl_arguments(TrlRunConfig(micro_batch_size=48, gradient_noise_every=0), "/x")


def test_a_pool_is_more_prompts_of_fewer_generations_at_the_same_budget() -> None:
    # prior_filter (adaptive: it reads beliefs) sees 128 prompts of 4 rows: the same 512 rows
    cfg = TrlRunConfig(allocator="prior_filter", batch_size=64, group_size=8, pool_size=128,
                       micro_batch_size=64, gradient_noise_every=0)  # fmt: skip
    assert cfg.pooled and cfg.trl_group == 4
    args = trl_arguments(cfg, "/x")
    assert args["num_generations"] == 4
    assert args["per_device_train_batch_size"] * args["gradient_accumulation_steps"] == 512
    # an outcome-blind allocator keeps B prompts of G, as in the trainer's own loop
    flat = TrlRunConfig(allocator="uniform", batch_size=64, group_size=8, pool_size=128,
                        gradient_noise_every=0)  # fmt: skip
    assert not flat.pooled and trl_arguments(flat, "/x")["num_generations"] == 8


def test_calibration_prompts_are_the_last_training_prompts_held_out() -> None:
    rt = run_task(TrlRunConfig(task_size=40, calibration_size=6, validation_size=5,
                               gradient_noise_every=0))  # fmt: skip
    assert len(rt.train) == 34 and rt.calibration == rt.task.train[34:]
    held = {e.id for e in (*rt.task.test, *rt.task.validation)}
    assert not {e.id for e in rt.calibration} & (held | {e.id for e in rt.train})
    assert rt.describe()["num_calibration_held_out"] == 6
    with pytest.raises(ValueError, match=r"calibration_size \(40\) leaves no training prompts"):
        run_task(TrlRunConfig(task_size=40, calibration_size=40, gradient_noise_every=0))
    with pytest.raises(ValueError, match="has no validation split: give --validation-size N"):
        run_task(TrlRunConfig(task_size=40, calibration_size=6, eval_split="validation",
                              gradient_noise_every=0))  # fmt: skip


class _Scripted:
    """Stands in for ``HFEngine``: every sample of prompt ``j`` is right when ``j`` is even."""

    seen: ClassVar[list[Any]] = []
    answers: ClassVar[list[str]] = []

    def __init__(self, model: Any, tokenizer: Any, **kw: Any) -> None:
        type(self).seen.append(model.training)

    def generate(self, prompts: Any, counts: Any, sampling: Any, *, seed: int) -> Any:
        type(self).seen.append((prompts[0], list(counts), sampling.temperature, seed))
        index = np.repeat(np.arange(len(prompts)), counts)
        texts = [self.answers[int(i)] for i in index]
        return SimpleNamespace(prompt_index=index, texts=texts, completion_ids=[[5]] * len(texts))


def test_evaluation_is_the_trainers_with_its_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    from trainers.grpo.data_order import EVALUATION, derive_seed
    from trainers.models.tiny import build_tiny_tokenizer
    from trainers.tasks import make_task

    task = make_task("arithmetic", seed=0, num_train=8, num_test=10)
    _Scripted.answers = [e.answer if j % 2 == 0 else "x" for j, e in enumerate(task.test)]
    _Scripted.seen = []
    monkeypatch.setattr("trainers.engines.hf.HFEngine", _Scripted)
    model, tok = torch.nn.Linear(2, 2), build_tiny_tokenizer()
    model.train()
    cfg = TrlRunConfig(eval_k=3, seed=7, temperature=0.7, gradient_noise_every=0)
    figures = evaluate(model, tok, task.test, cfg, task.score)
    assert figures["pass@1"] == pytest.approx(0.5) and figures["prompts"] == 10  # 5 of 10, all k
    first = tok(task.test[0].prompt).input_ids  # plain prompts, as TRL trains on them
    assert _Scripted.seen == [False, (first, [3] * 10, 0.7, derive_seed(7, EVALUATION, 0))]
    assert model.training  # given back in train mode


# --- real runs (TRL) ---------------------------------------------------------------------------
def test_a_stopped_run_resumes_to_the_unstopped_runs_numbers(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Exact: TRL's resume restores weights, optimizer, scheduler, random states and the data
    order, the belief store comes back from the checkpoint, and the evaluations run in a forked
    random state; so the step records (loss, gradient norm, rollouts, ...) and evaluations of a
    run stopped by SIGTERM after step 2 and rerun are those of the unstopped run, to the bit
    (only wall-clock times differ). The unstopped run evaluates at every step, the other every
    2: their step records are equal, so evaluating changes nothing in training."""
    pytest.importorskip("trl", reason="needs the trl extra: pip install -e '.[trl]'")
    from trainers.experiments.trl_run import main, trl_checkpoints
    from trainers.run import stopping

    straight = tiny_run(tiny_model_dir, tmp_path / "straight", allocator="bamdp", eval_every=1)
    main(straight)
    cfg = tiny_run(tiny_model_dir, tmp_path / "stopped", allocator="bamdp", keep_checkpoints=1)
    with monkeypatch.context() as m:
        stop_after(m, 2)
        with pytest.raises(stopping.RunInterrupted, match="stopped by SIGTERM after step 2"):
            main(cfg)
    out = Path(cfg.out)
    assert json.loads((out / "summary.json").read_text())["stopped_by"] == "SIGTERM"
    assert not (out / "DONE").exists() and [p.name for p in trl_checkpoints(out)] == [
        "checkpoint-2"
    ]
    partial = out / "checkpoints" / "checkpoint-3"  # as a hard kill mid-save leaves one
    partial.mkdir()
    (partial / "model.safetensors").write_bytes(b"cut short")
    main(cfg)  # the same command again: resumes from checkpoint-2
    assert not partial.exists()
    assert (out / "DONE").exists() and [p.name for p in trl_checkpoints(out)] == ["checkpoint-4"]
    assert records(out / "metrics.jsonl") == records(tmp_path / "straight" / "metrics.jsonl")
    evals = records(out / "eval.jsonl")
    assert [e["step"] for e in evals] == [0, 2, 4]
    assert evals == [e for e in records(tmp_path / "straight" / "eval.jsonl") if e["step"] % 2 == 0]
    # rollouts_total counts the generated rollouts: B·G = 16 a step
    assert [e["rollouts_total"] for e in evals] == [0, 32, 64]
    steps = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [s["rollouts"] for s in steps] == [16] * 4 and steps[-1]["rollouts_total"] == 64
    # bamdp by default: its pilot (1 a prompt at G = 4, a quarter of the budget), two rounds
    assert all(s["rounds"] == 3 for s in steps)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["trainer"].startswith("trl ") and summary["rollouts_total"] == 64
    starts = json.loads((out / "provenance.json").read_text())["starts"]
    assert len(starts) == 2 and all(s["trainer"] == summary["trainer"] for s in starts)
    assert [s["step"] for s in starts] == [0, 2]  # the second start resumed after step 2
    assert "trl" in json.loads((out / "versions.json").read_text())
    assert json.loads((out / "beliefs.json").read_text())["step"] == 4
    before = (out / "summary.json").stat().st_mtime
    assert main(cfg)["steps"] == 4  # done: nothing trained, nothing rewritten
    assert (out / "summary.json").stat().st_mtime == before


def test_prior_filter_with_a_pool_gives_whole_groups_to_some_of_the_pools_prompts(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    """A pool of 8 prompts at B = 4, G = 4: TRL hands the allocator 8 prompts of 2 rows (16
    rollouts a step, as without the pool) and prior_filter gives groups of 4 to 4 of them and
    none to the others."""
    pytest.importorskip("trl", reason="needs the trl extra: pip install -e '.[trl]'")
    from trainers.experiments import trl_run

    seen: list[Any] = []
    build = trl_run.build_trainer

    def keep(*args: Any, **kwargs: Any) -> Any:
        trainer, source = build(*args, **kwargs)
        seen.append(trainer)
        return trainer, source

    cfg = tiny_run(tiny_model_dir, tmp_path / "pool", allocator="prior_filter", pool_size=8,
                   allocator_kwargs='{"group": 4}', steps=2, eval_every=2)  # fmt: skip
    with pytest.MonkeyPatch.context() as m:
        m.setattr(trl_run, "build_trainer", keep)
        trl_run.main(cfg)
    (trainer,) = seen
    assert trainer.num_prompts == 8 and trainer.group_budget == 2
    for record in trainer.allocations:
        assert sorted(record.counts) == [0, 0, 0, 0, 4, 4, 4, 4]
    steps = [json.loads(line) for line in (tmp_path / "pool" / "metrics.jsonl").open()]
    assert [s["rollouts"] for s in steps] == [16, 16]


@pytest.mark.parametrize("allocator", ["uniform", "cgrpo"])
def test_a_run_resumed_in_a_later_epoch_reads_the_unstopped_runs_prompts(
    allocator: str, tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """16 training prompts at B = 4: an epoch is 4 steps. Stopped after step 5 (in epoch 1) and
    resumed, the run trains on the unstopped run's prompts and ends with its numbers to the bit;
    TRL's own resume restarts its sampler at epoch 0's permutation (trainers.trl.data_order)."""
    pytest.importorskip("trl", reason="needs the trl extra: pip install -e '.[trl]'")
    if allocator == "cgrpo":
        pytest.importorskip("trl_cgrpo", reason="needs the cgrpo extra: make test-trl114")
    from trainers.experiments.trl_run import main, run_task
    from trainers.run import stopping

    kw: dict[str, Any] = {"allocator": allocator, "task_size": 24, "steps": 6, "eval_every": 3}
    straight = tiny_run(tiny_model_dir, tmp_path / "straight", **kw)
    assert len(run_task(straight).train) == 16
    main(straight)
    cfg = tiny_run(tiny_model_dir, tmp_path / "stopped", **kw)
    with monkeypatch.context() as m:
        stop_after(m, 5)
        with pytest.raises(stopping.RunInterrupted, match="after step 5"):
            main(cfg)
    main(cfg)
    assert records(tmp_path / "stopped" / "metrics.jsonl") == records(
        tmp_path / "straight" / "metrics.jsonl"
    )
    assert records(tmp_path / "stopped" / "eval.jsonl") == records(
        tmp_path / "straight" / "eval.jsonl"
    )


def test_a_generation_batch_of_two_steps_counts_and_resumes_at_its_end(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With steps_per_generation 2 the step that generates the batch of 2·B prompts records
    its rollouts, the next none; a stop asked during step 1 waits for the end of the batch
    (step 2), and the resumed run is again exactly the unstopped one."""
    pytest.importorskip("trl", reason="needs the trl extra: pip install -e '.[trl]'")
    from trainers.experiments.trl_run import main, trl_checkpoints
    from trainers.run import stopping

    kw: dict[str, Any] = {"allocator": "bamdp", "steps_per_generation": 2, "save_every": 0}
    main(tiny_run(tiny_model_dir, tmp_path / "straight", **kw))
    cfg = tiny_run(tiny_model_dir, tmp_path / "stopped", **kw)
    with monkeypatch.context() as m:
        stop_after(m, 1)
        with pytest.raises(stopping.RunInterrupted, match="after step 2"):
            main(cfg)
    assert [p.name for p in trl_checkpoints(cfg.out)] == ["checkpoint-2"]
    main(cfg)
    steps = records(tmp_path / "stopped" / "metrics.jsonl")
    assert steps == records(tmp_path / "straight" / "metrics.jsonl")
    assert [s["rollouts"] for s in steps] == [32, 0, 32, 0]
    assert [s["rounds"] for s in steps] == [3, 0, 3, 0]  # the pilot and two rounds
    assert steps[0]["informative_frac"] == steps[1]["informative_frac"]  # the batch both train on
    assert records(tmp_path / "stopped" / "eval.jsonl") == records(
        tmp_path / "straight" / "eval.jsonl"
    )


def test_a_reasoning_gym_task_evaluates_on_its_validation_split(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    pytest.importorskip("trl", reason="needs the trl extra: pip install -e '.[trl]'")
    pytest.importorskip("reasoning_gym", reason="needs the rg extra: pip install -e '.[rg]'")
    from trainers.experiments.trl_run import main

    spec = "rg:chain_sum?num_train=40&num_validation=8&num_test=8"
    cfg = tiny_run(tiny_model_dir, tmp_path / "rg", task=spec, steps=2, eval_split="validation",
                   calibration_size=4, allocator="uniform")  # fmt: skip
    summary = main(cfg)
    assert summary["final_eval"]["prompts"] == 8 and summary["rollouts_total"] == 32
    task = json.loads((tmp_path / "rg" / "task.json").read_text())
    assert task["num_train_used"] == 36 and task["num_calibration_held_out"] == 4


def test_cgrpo_counts_what_it_generates_and_resumes_exactly(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """C-GRPO's rollouts, calibration included, are the completions the model generated in
    training (evaluations apart); its resume is exact as the allocators' (its conformal state
    travels in the checkpoint)."""
    trl_cgrpo = pytest.importorskip(
        "trl_cgrpo", reason="needs the cgrpo extra (TRL 1.14): make test-trl114"
    )
    import trainers.experiments.trl_run as trl_run
    import trainers.models.loading as loading
    from trainers.run import stopping

    phase = {"now": "train"}
    generated = {"train": 0, "calibrate": 0, "evaluate": 0}
    real_load, real_evaluate = loading.load_policy, trl_run.evaluate

    def load_counting(name: str, **kw: Any) -> Any:
        model, tokenizer = real_load(name, **kw)
        inner = model.generate

        def generate(*args: Any, **kwargs: Any) -> Any:
            out = inner(*args, **kwargs)
            generated[phase["now"]] += int(out.shape[0] if hasattr(out, "shape") else
                                            out.sequences.shape[0])  # fmt: skip
            return out

        model.generate = generate
        return model, tokenizer

    def during(name: str, method: Any) -> Any:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            before, phase["now"] = phase["now"], name
            try:
                return method(*args, **kwargs)
            finally:
                phase["now"] = before

        return wrapped

    monkeypatch.setattr(loading, "load_policy", load_counting)
    monkeypatch.setattr(trl_run, "evaluate", during("evaluate", real_evaluate))
    cls = trl_cgrpo.CGRPOTrainer
    monkeypatch.setattr(cls, "calibrate", during("calibrate", cls.calibrate))
    straight = tiny_run(tiny_model_dir, tmp_path / "straight", allocator="cgrpo")
    summary = trl_run.main(straight)
    # one calibration before the first step (8 prompts x max(budget_grid) = 32; the next is due
    # at step 50), and training draws between 2 and 32 completions per prompt
    assert generated["calibrate"] == summary["calibration_rollouts"] == 8 * 32
    assert generated["train"] == summary["train_rollouts"]
    assert summary["rollouts_total"] == generated["train"] + generated["calibrate"]
    steps = [json.loads(line) for line in (tmp_path / "straight" / "metrics.jsonl").read_text()
             .splitlines()]  # fmt: skip
    assert (
        steps[0]["calibration_rollouts"] == 256
        and sum(s["rollouts"] for s in steps) == (summary["rollouts_total"])
    )
    assert all(4 * 2 <= s["rollouts"] - s["calibration_rollouts"] <= 4 * 32 for s in steps)
    assert all(1 <= s["rounds"] <= 5 for s in steps)  # stages of the grid 2, 4, 8, 16, 32
    evals = records(tmp_path / "straight" / "eval.jsonl")
    assert evals[-1]["rollouts_total"] == summary["rollouts_total"]

    cfg = tiny_run(tiny_model_dir, tmp_path / "stopped", allocator="cgrpo")
    with monkeypatch.context() as m:
        stop_after(m, 2)
        with pytest.raises(stopping.RunInterrupted):
            trl_run.main(cfg)
    trl_run.main(cfg)
    out = Path(cfg.out)
    assert records(out / "metrics.jsonl") == records(tmp_path / "straight" / "metrics.jsonl")
    assert records(out / "eval.jsonl") == evals
