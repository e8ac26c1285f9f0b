"""The GRPO trainer on the warm-started tiny model: step API, learning, faults, resume (the HF
engine's own tests are in tests/trainers/engines/test_hf.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from adaroll_env import model as am
from adaroll_env.utilities import get_utility
from agents.baselines import UniformAllocator
from trainers.grpo import GRPOConfig
from trainers.grpo.trainer import GRPOTrainer
from trainers.models.architectures import ARCHITECTURES
from trainers.run.grpo_command import checkpoint_dirs, main, read_jsonl
from trainers.tasks import make_task


def small_cfg(model_dir: Path, **kw: Any) -> GRPOConfig:
    base: dict[str, Any] = {
        "model": str(model_dir),
        "task_size": 2000,
        "batch_size": 8,
        "group_size": 4,
        "round_size": 8,
        "eval_every": 0,
        "tensorboard": False,
        "progress": False,
        "device": "cpu",
    }
    base.update(kw)
    return GRPOConfig(**base)


#: the tiny model and every model family (smoke warm starts, trained on a parity reward)
MODELS = ["tiny", *ARCHITECTURES]


# --- the step API ------------------------------------------------------------------------------
@pytest.mark.parametrize("model_case", MODELS, indirect=True)
def test_step_api_spends_the_budget_and_reports_utilities(model_case: Any) -> None:
    trainer = GRPOTrainer(
        small_cfg(model_case.directory, budget=24, round_size=6), **model_case.task_kwargs()
    )
    obs = trainer.begin_step()
    params = trainer.params
    assert params is not None and params.budget == 24 and params.mode == "rounds"
    assert set(obs) == set(am.observe(params, am.initial_state(params)))
    rounds = 0
    while trainer.budget_left:
        counts = np.zeros(8, dtype=np.int64)
        counts[: am.next_round_size(params, trainer.state)] = 1  # type: ignore[arg-type]
        counts = np.roll(counts, rounds)
        result = trainer.run_round(counts)
        rounds += 1
        assert result.counts.sum() == 6 and result.successes.sum() <= 6
    state = trainer.state
    assert state is not None
    report = trainer.finish_step()
    assert report.rollouts == 24 and rounds == 4 and report.rounds == 4
    s, f = np.asarray(state.successes), np.asarray(state.failures)
    for name in ("informative", "hit", "grpo_signal", "dr_grpo_signal"):
        assert report.utilities[name] == pytest.approx(float(get_utility(name)(s, f).sum()))
    fracs = report.informative_frac + report.all_correct_frac + report.all_wrong_frac
    assert fracs + report.empty_frac >= 1.0 - 1e-9
    assert report.step == 1 and trainer.step == 1 and np.isfinite(report.loss)
    assert report.tokens > 0 and report.tokens_per_s > 0


def test_pilot_threshold_skips_the_prompts_the_prior_calls_hopeless(
    tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two of 8 prompts a point mass at 0: they get no pilot, the first round takes their
    rollouts, and the step still spends its budget in the pilot and two rounds."""
    cfg = small_cfg(tiny_model_dir, allocator="bamdp", round_size=None, pilot=1,
                    pilot_threshold=0.01)  # fmt: skip
    trainer = GRPOTrainer(cfg)
    real_prior = trainer.beliefs.prior

    def prior(ids: Any, *args: Any, **kw: Any) -> tuple[np.ndarray, np.ndarray]:
        a, b = real_prior(ids, *args, **kw)
        a, b = np.array(a, dtype=np.float64), np.array(b, dtype=np.float64)
        a[:2], b[:2] = 1e-3, 9979.0
        return a, b

    monkeypatch.setattr(trainer.beliefs, "prior", prior)
    trainer.begin_step()
    state = trainer.state
    assert state is not None and state.rollouts.tolist() == [0, 0] + [1] * 6
    params = trainer.params
    assert params is not None and params.pilot_rollouts == 6
    assert am.next_round_size(params, state) == (32 - 8) // 2 + 2  # a round and the skipped 2
    while trainer.budget_left:
        trainer.run_round(trainer.rounds.decide())  # bamdp, reset with this step's params
    report = trainer.finish_step()
    assert report.rollouts == 32 and report.rounds == 3


def test_invalid_allocations_and_misuse_are_refused(tiny_model_dir: Path) -> None:
    trainer = GRPOTrainer(small_cfg(tiny_model_dir, max_group=5))
    with pytest.raises(RuntimeError, match="begin_step"):
        trainer.run_round(np.ones(8, dtype=int))
    trainer.begin_step()
    with pytest.raises(ValueError, match="handed out 7 rollouts, but this decision must hand out"):
        trainer.run_round([1] * 7 + [0])
    with pytest.raises(ValueError, match="negative at question 1"):
        trainer.run_round([2, -1, 1, 1, 1, 1, 1, 2])
    with pytest.raises(ValueError, match=r"expected \(8,\)"):
        trainer.run_round([1, 1])
    with pytest.raises(ValueError, match="beyond its cap of 5"):
        trainer.run_round([6, 2, 0, 0, 0, 0, 0, 0])
    with pytest.raises(RuntimeError, match="rollouts of the budget left"):
        trainer.finish_step()
    trainer.begin_step()  # abandons the step in progress
    trainer.run_round([1] * 8)
    while trainer.budget_left:
        trainer.run_round([1] * 8)
    assert trainer.finish_step().abandoned_steps == 1


class _Greedy(UniformAllocator):
    name = "bad-greedy"

    def allocate(self, obs: Any) -> Any:
        return np.full(self.params.num_questions, 3)  # never the round size


def test_an_allocator_with_an_invalid_allocation_is_named(tiny_model_dir: Path) -> None:
    trainer = GRPOTrainer(small_cfg(tiny_model_dir), allocator=_Greedy())
    with pytest.raises(ValueError, match="allocator 'bad-greedy' returned an invalid allocation"):
        trainer.train_step()


def test_beliefs_carry_to_the_next_visit(tiny_model_dir: Path) -> None:
    task = make_task("arithmetic", seed=0, num_train=8, num_test=40)
    # a fixed prior and informative: every prompt gets rollouts (grouped fitted priors may skip)
    cfg = small_cfg(tiny_model_dir, allocator="bamdp", belief_prior="fixed", utility="informative")
    trainer = GRPOTrainer(cfg, task=task)
    first = trainer.train_step()
    assert first.rollouts == 32
    trainer.begin_step()  # the same 8 prompts again (the data set has 8)
    assert trainer.params is not None
    assert trainer.params.prior_alpha != 1.0 or trainer.params.prior_beta != 1.0
    state = trainer.beliefs.state_dict()
    assert sorted(state["ids"]) == sorted(e.id for e in task.train)


# --- learning ----------------------------------------------------------------------------------
@pytest.mark.slow
def test_grpo_raises_held_out_accuracy(tiny_model_dir: Path) -> None:
    # sums of one and two digits, held-out expressions never trained on: the warm start is
    # partly right there, and GRPO's gains must generalise to show
    task = make_task("arithmetic", seed=0, num_train=4000, num_test=80, levels=[0, 1])
    cfg = small_cfg(tiny_model_dir, batch_size=16, group_size=8, round_size=None, lr=1e-4)
    trainer = GRPOTrainer(cfg, task=task)
    before = trainer.evaluate(size=None, k=8)
    start = [p.detach().clone() for p in trainer.policy.parameters()]
    reports = [trainer.train_step() for _ in range(150)]
    after = trainer.evaluate(size=None, k=8)
    assert all(np.isfinite(r.loss) for r in reports)
    assert any(
        not torch.equal(a, b.detach())
        for a, b in zip(start, trainer.policy.parameters(), strict=True)
    )
    assert after["pass@1"] > before["pass@1"] + 0.05, (before, after)


# --- faults ------------------------------------------------------------------------------------
def test_a_raising_verifier_scores_zero_and_is_counted(tiny_model_dir: Path) -> None:
    calls = {"n": 0}

    def flaky(prompts: list[str], completions: list[str], **kw: Any) -> list[float]:
        calls["n"] += 1
        if calls["n"] % 2:
            raise RuntimeError("verifier down")
        return [
            1.0 if c.strip() == a else 0.0 for c, a in zip(completions, kw["answer"], strict=True)
        ]

    task = make_task("arithmetic", seed=0, reward_funcs=flaky)
    trainer = GRPOTrainer(small_cfg(tiny_model_dir), task=task)
    report = trainer.train_step()
    assert report.verifier_errors > 0 and report.rollouts == 32


def test_a_nan_loss_skips_the_update_with_a_warning(tiny_model_dir: Path) -> None:
    trainer = GRPOTrainer(small_cfg(tiny_model_dir, lr=1e-2))
    head = trainer.policy.get_output_embeddings()
    handle = head.register_forward_hook(
        lambda mod, inp, out: out * float("nan") if torch.is_grad_enabled() else out
    )
    before = [p.detach().clone() for p in trainer.policy.parameters()]
    with pytest.warns(RuntimeWarning, match="update is skipped"):
        for _ in range(5):  # until a step has a group with signal
            report = trainer.train_step()
            if report.skipped_update:
                break
    handle.remove()
    assert report.skipped_update and report.nan_skipped_total == 1
    for a, b in zip(before, trainer.policy.parameters(), strict=True):
        assert torch.equal(a, b.detach())


def test_clear_errors_for_bad_setups(tiny_model_dir: Path, tmp_path: Path) -> None:
    with pytest.raises((FileNotFoundError, ValueError), match="pretrain-tiny"):
        GRPOTrainer(small_cfg(tmp_path / "nope"))
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ValueError, match="empty"):
        GRPOTrainer(small_cfg(tiny_model_dir, task=f"jsonl:{empty}"))
    with pytest.raises(ValueError, match="must exceed the pilot"):
        small_cfg(tiny_model_dir, budget=8, pilot=1)


# --- checkpoints and resume --------------------------------------------------------------------
def _weights(directory: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(checkpoint_dirs(directory)[-1] / "model" / "model.safetensors"))


@pytest.mark.slow
@pytest.mark.parametrize("model_case", MODELS, indirect=True)
def test_resume_continues_exactly(model_case: Any, tmp_path: Path) -> None:
    # every family: its weights (tied or not) come back from the checkpoint exactly
    model_dir, task = model_case.directory, model_case.task_kwargs()
    kw: dict[str, Any] = {"allocator": "bamdp", "lr": 1e-3, "eval_every": 2, "eval_size": 16}
    straight = tmp_path / "straight"
    main(small_cfg(model_dir, steps=4, save_every=2, out=str(straight), **kw), **task)
    split = tmp_path / "split"
    main(small_cfg(model_dir, steps=2, save_every=2, out=str(split), **kw), **task)
    with pytest.raises(ValueError, match="--resume"):
        main(small_cfg(model_dir, steps=4, out=str(split), **kw), **task)
    # a run killed while writing its next checkpoint leaves a temporary directory behind
    (split / "checkpoints" / ".tmp-step-000003").mkdir()
    main(small_cfg(model_dir, steps=4, save_every=2, out=str(split), resume=True, **kw), **task)
    a, b = read_jsonl(straight / "metrics.jsonl"), read_jsonl(split / "metrics.jsonl")
    assert [r["step"] for r in b] == [1, 2, 3, 4]
    for key in ("loss", "reward", "informative_frac", "rollouts_total", "grad_norm"):
        assert [r[key] for r in a] == [r[key] for r in b], key
    assert any(r["grad_norm"] > 0 for r in a)  # the steps had something to learn
    ea, eb = read_jsonl(straight / "eval.jsonl"), read_jsonl(split / "eval.jsonl")
    for rec in (*ea, *eb):
        rec.pop("seconds")  # wall-clock: the one field that differs
    assert ea == eb
    # training seconds at each evaluation: the steps' times summed, the resumed run continuing
    # the sum over the steps it kept
    kept = read_jsonl(split / "metrics.jsonl")
    assert [r["seconds"] for r in read_jsonl(split / "eval.jsonl")] == pytest.approx(
        [sum(m["step_seconds"] for m in kept[:s]) for s in (0, 2, 4)]
    )
    wa, wb = _weights(straight), _weights(split)
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    summary = json.loads((split / "summary.json").read_text())
    assert summary["steps"] == 4 and summary["steps_this_run"] == 2
    assert (split / "curve.png").exists() and (split / "config.json").exists()


@pytest.mark.parametrize("model_case", MODELS, indirect=True)
def test_grpo_command_line(model_case: Any, tmp_path: Path) -> None:
    from trainers.cli import main as cli

    model_dir = model_case.directory  # --model DIR: a warm start of any family
    out = tmp_path / "run"
    code = cli(
        ["grpo", "--model", str(model_dir), "--steps", "2", "--batch-size", "4",
         "--group-size", "2", "--eval-every", "2", "--eval-size", "8", "--no-progress",
         "--allocator", "thompson", "--out", str(out), "--device", "cpu"]
    )  # fmt: skip
    assert code == 0
    assert json.loads((out / "config.json").read_text())["allocator"] == "thompson"
    assert len(read_jsonl(out / "metrics.jsonl")) == 2
    assert any((out / "tb").iterdir())  # TensorBoard events
    versions = json.loads((out / "versions.json").read_text())
    assert "torch" in versions and "transformers" in versions
    with pytest.raises(SystemExit) as bad:
        cli(["grpo", "--model", str(model_dir), "--loss-type", "ppo"])
    assert bad.value.code == 2


def test_the_run_seed_orders_data_but_never_changes_the_held_out_split(
    tiny_model_dir: Path,
) -> None:
    a = GRPOTrainer(small_cfg(tiny_model_dir, seed=0))
    b = GRPOTrainer(small_cfg(tiny_model_dir, seed=1))
    assert [e.prompt for e in a.task.test] == [e.prompt for e in b.task.test]
    a.begin_step()
    b.begin_step()
    assert [e.id for e in a.examples] != [e.id for e in b.examples]


def test_evaluation_reads_the_validation_split_when_asked(tiny_model_dir: Path) -> None:
    cfg = small_cfg(tiny_model_dir, validation_size=16, eval_split="validation", eval_every=5)
    trainer = GRPOTrainer(cfg)
    assert len(trainer.task.validation) == 16
    assert not {e.prompt for e in trainer.task.validation} & {e.prompt for e in trainer.task.train}
    val = trainer.evaluate(size=None, k=2)
    test = trainer.evaluate(size=None, k=2, split="test")
    assert val["prompts"] == 16.0 and test["prompts"] == 200.0  # eval_size 200 of 400
    # no validation split: refused before anything runs, naming the fix
    with pytest.raises(ValueError, match="--validation-size"):
        GRPOTrainer(small_cfg(tiny_model_dir, eval_split="validation", eval_every=5))
    with pytest.raises(ValueError, match="own validation split"):
        GRPOTrainer(small_cfg(tiny_model_dir, task="sample", validation_size=4))


def test_each_step_reports_its_update_norm(tiny_model_dir: Path) -> None:
    trainer = GRPOTrainer(small_cfg(tiny_model_dir, update_norm_every=2))
    first, second = trainer.train_step(), trainer.train_step()
    assert first.update_norm > 0 or first.gradient_rollouts == 0
    assert np.isnan(second.update_norm)  # measured on steps 0, 2, 4, ...


def test_an_allocators_state_goes_into_the_checkpoint_and_back(tiny_model_dir: Path) -> None:
    """An allocator with ``state_dict`` (``bamdp``'s kept rounds plan) has it saved with the
    trainer's state and handed back when the resumed trainer makes its allocator; one without
    is saved as None."""
    from trainers.grpo.trainer import allocator_state

    class Keeper:
        name = "keeper"
        adaptive = True

        def __init__(self) -> None:
            self.state: dict[str, Any] = {"kept": 0}

        def reset(self, params: Any, *, seed: int | None = None) -> None:
            pass

        def state_dict(self) -> dict[str, Any]:
            return dict(self.state)

        def load_state_dict(self, state: dict[str, Any]) -> None:
            self.state = dict(state)

    assert allocator_state(object()) is None and allocator_state(None) is None
    cfg = small_cfg(tiny_model_dir)
    trainer = GRPOTrainer(cfg, allocator=Keeper())
    trainer._make_allocator(trainer.plan.params(), 0)
    trainer.allocator.state = {"kept": 7}
    saved = trainer.state_dict()
    assert saved["allocator"] == {"kept": 7}
    resumed = GRPOTrainer(cfg, allocator=Keeper())
    resumed.load_state_dict(saved)
    assert resumed.allocator is None  # made at the first step; the state waits for it
    resumed._make_allocator(resumed.plan.params(), 0)
    assert resumed.allocator.state == {"kept": 7}
    resumed.allocator.state = {"kept": 8}
    resumed._make_allocator(resumed.plan.params(), 0)  # once: later steps keep their own
    assert resumed.allocator.state == {"kept": 8}
