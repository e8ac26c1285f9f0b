"""AllocatingGRPOTrainer (trainers.trl.trainer) against plain trl.GRPOTrainer on the tiny model
(the overhead benchmark and the TRL competition are tested in their mirrored files).

Over 500 lines because every test builds TRL trainers on the same tiny model and dataset
fixtures (module-scoped: TRL trainers are slow to build), which a split would rebuild.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from packaging.specifiers import SpecifierSet

pytest.importorskip("trl", reason="needs the trl extra: pip install -e '.[trl]'")

import trl
from datasets import Dataset

from trainers.grpo import group_advantages
from trainers.models.architectures import ARCHITECTURES
from trainers.models.loading import load_policy
from trainers.tasks import make_task
from trainers.trl.trainer import (
    STATE_FILE,
    TRL_LINES,
    TRL_RANGE,
    TRL_REQUIREMENT,
    AllocatingGRPOTrainer,
    check_trl_version,
    prompt_key,
)

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.filterwarnings("ignore:.*gradient_checkpointing.*")


class Recorder:
    """Exact-match reward that records every call: prompts, completions and rewards."""

    __name__ = "exact"

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], list[str], list[float]]] = []

    def __call__(
        self, prompts: list[str], completions: list[str], answer: list[str], **kw: Any
    ) -> list[float]:
        out = [1.0 if c.strip() == a else 0.0 for c, a in zip(completions, answer, strict=True)]
        self.calls.append((list(prompts), list(completions), out))
        return out


class Parity(Recorder):
    """Rewards an odd completion length (recorded like ``Recorder``): the model families' smoke
    warm starts solve almost no sum, so their tests need a reward any policy half meets."""

    def __call__(
        self, prompts: list[str], completions: list[str], answer: list[str], **kw: Any
    ) -> list[float]:
        out = [float(len(c) % 2) for c in completions]
        self.calls.append((list(prompts), list(completions), out))
        return out


#: the tiny model and every model family
MODELS = ["tiny", *ARCHITECTURES]
#: the same, the families marked slow (building TRL trainers takes seconds)
MODELS_SLOW = ["tiny", *(pytest.param(a, marks=pytest.mark.slow) for a in ARCHITECTURES)]


@pytest.fixture(scope="module")
def dataset() -> Dataset:
    task = make_task("arithmetic", seed=0, num_train=256, num_test=8)
    return Dataset.from_dict(
        {"prompt": [e.prompt for e in task.train], "answer": [e.answer for e in task.train]}
    )


def config(out: Path, **kw: Any) -> trl.GRPOConfig:
    base: dict[str, Any] = {
        "output_dir": str(out),
        "per_device_train_batch_size": 16,  # completions: 4 prompts × 4
        "num_generations": 4,
        "max_completion_length": 6,
        "max_steps": 3,
        "learning_rate": 1e-3,
        "lr_scheduler_type": "constant",
        "top_k": 0,
        "use_cpu": True,
        "bf16": False,
        "report_to": "none",
        "save_strategy": "no",
        "logging_steps": 1,
        "disable_tqdm": True,
        "seed": 0,
        "activation_checkpointing": False,
        "dataloader_num_workers": 0,
        "log_completions": False,
    }
    base.update(kw)
    return trl.GRPOConfig(**base)


def build(
    cls: Any, model_dir: Path, data: Dataset, out: Path, reward: Any = None, **kw: Any
) -> Any:
    args_kw = {k: kw.pop(k) for k in list(kw) if k in trl.GRPOConfig.__dataclass_fields__}
    model, tok = load_policy(str(model_dir))
    return cls(
        model=model,
        reward_funcs=reward if reward is not None else Recorder(),
        args=config(out, **args_kw),
        train_dataset=data,
        processing_class=tok,
        **kw,
    )


def train(trainer: Any, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.train(**kw)
    return trainer


def capture(trainer: Any) -> list[dict[str, Any]]:
    """Record each generation batch's rows (prompt, reward) and the advantages handed to TRL."""
    seen: list[dict[str, Any]] = []
    inner = trainer._generate_and_score_completions

    def wrapped(inputs: Any) -> Any:
        out = inner(inputs)
        seen.append(
            {
                "prompts": list(trainer._logs["prompt"]),
                "rewards": list(trainer._logs["rewards"]["exact"]),
                "advantages": out["advantages"].detach().clone(),
            }
        )
        return out

    trainer._generate_and_score_completions = wrapped
    return seen


def by_hand(prompts: list[str], rewards: list[float], scale: str = "group") -> np.ndarray:
    """Ragged-group advantages computed independently, prompt by prompt, in plain Python."""
    groups: dict[str, list[int]] = {}
    for i, p in enumerate(prompts):
        groups.setdefault(p, []).append(i)
    out = np.zeros(len(rewards))
    n = len(rewards)
    mu_all = sum(rewards) / n
    std_all = (sum((r - mu_all) ** 2 for r in rewards) / (n - 1)) ** 0.5
    for rows in groups.values():
        vals = [rewards[i] for i in rows]
        mean = sum(vals) / len(vals)
        if len(vals) < 2 or max(vals) == min(vals):
            continue  # a group of one or without variance carries no signal
        std = (sum((v - mean) ** 2 for v in vals) / (len(vals) - 1)) ** 0.5
        denom = {"group": std + 1e-4, "batch": std_all + 1e-4, "none": 1.0}[scale]
        for i in rows:
            out[i] = (rewards[i] - mean) / denom
    return out


# --- uniform is plain TRL ----------------------------------------------------------------------
@pytest.mark.parametrize("model_case", MODELS_SLOW, indirect=True)
def test_uniform_reproduces_plain_trl_exactly(
    model_case: Any, dataset: Dataset, tmp_path: Path
) -> None:
    model_dir = model_case.directory
    reward = Recorder if model_case.task is None else Parity
    # each trainer seeds torch when built, so each is built just before it trains
    plain = build(trl.GRPOTrainer, model_dir, dataset, tmp_path / "a", reward=reward())
    start = [p.detach().clone() for p in plain.model.parameters()]
    plain_seen = capture(plain)
    train(plain)
    ours = build(
        AllocatingGRPOTrainer,
        model_dir,
        dataset,
        tmp_path / "b",
        reward=reward(),
        allocator="uniform",
    )
    ours_seen = capture(ours)
    train(ours)
    # the same completions and rewards, call by call
    assert plain.reward_funcs[0].calls == ours.reward_funcs[0].calls
    assert len(plain.reward_funcs[0].calls) == 3
    losses = [h["loss"] for h in plain.state.log_history if "loss" in h]
    assert losses == [h["loss"] for h in ours.state.log_history if "loss" in h]
    assert len(losses) == 3
    for a, b in zip(plain_seen, ours_seen, strict=True):
        assert torch.equal(a["advantages"], b["advantages"])
        # TRL's advantages on its uniform groups are group_advantages' numbers
        ids = [prompt_key(p) for p in a["prompts"]]
        ref = group_advantages(np.asarray(a["rewards"]), ids, scale="group")
        np.testing.assert_allclose(a["advantages"].numpy(), ref, atol=1e-5)
    final = list(plain.model.parameters())
    assert any(not torch.equal(s, p.detach()) for s, p in zip(start, final, strict=True))
    for p, q in zip(final, ours.model.parameters(), strict=True):
        assert torch.equal(p, q)
    assert all(r.counts == [4, 4, 4, 4] and r.rounds == 1 for r in ours.allocations)
    assert (ours.batches_generated, ours.rollouts_generated) == (3, 3 * 16)  # what TRL generated


# --- bamdp -------------------------------------------------------------------------------------
def test_bamdp_spends_the_budget_in_ragged_groups_with_exact_advantages(
    tiny_model_dir: Path, dataset: Dataset, tmp_path: Path
) -> None:
    trainer = build(
        AllocatingGRPOTrainer,
        tiny_model_dir,
        dataset,
        tmp_path,
        allocator="bamdp",
        max_steps=6,
        per_device_train_batch_size=32,  # 8 prompts × 4
    )
    assert trainer.pilot == 1  # bamdp's own 2, at most a quarter of G = 4
    seen = capture(trainer)
    train(trainer)
    records = list(trainer.allocations)
    assert len(records) == len(seen) == 6
    for rec, batch in zip(records, seen, strict=True):
        assert sum(rec.counts) == 32 == len(batch["prompts"])  # exactly the budget
        # the default: bamdp's pilot (1 a prompt: a quarter of G = 4), then two equal rounds
        assert rec.rounds == 3 and min(rec.counts) >= 1
        assert 0 <= rec.alloc_seconds <= rec.own_seconds < rec.seconds
        assert sorted(batch["prompts"]) == sorted(
            p for p, c in zip(rec.prompts, rec.counts, strict=True) for _ in range(c)
        )
        expected = by_hand(batch["prompts"], batch["rewards"])
        np.testing.assert_allclose(batch["advantages"].numpy(), expected, rtol=1e-5, atol=1e-6)
    assert any(len(set(rec.counts)) > 1 for rec in records)  # group sizes vary
    assert len(trainer.belief_store) > 0
    logged = [h for h in trainer.state.log_history if "allocation/rounds" in h]
    assert len(logged) == 6
    for h in logged:
        assert h["allocation/rollouts_per_prompt_mean"] == 4.0
        assert (
            h["allocation/rollouts_per_prompt_min"] <= 4 <= h["allocation/rollouts_per_prompt_max"]
        )
        assert 0.0 <= h["allocation/informative_frac"] <= 1.0
        assert 0 <= h["allocation/gradient_rollouts"] <= 32
        assert h["allocation/seconds"] >= 0 and 0 <= h["allocation/overhead"] < 1
    # the other scale_rewards meanings, on a hand-made ragged batch
    rewards = torch.tensor([[1.0], [0.0], [0.0], [1.0], [1.0], [0.0]])
    groups = [0, 0, 0, 1, 2, 2]
    prompts = ["a", "a", "a", "b", "c", "c"]
    for scale in ("group", "batch", "none"):
        trainer.scale_rewards = scale
        got = trainer._ragged_advantages(rewards, groups)
        np.testing.assert_allclose(
            got.numpy(), by_hand(prompts, rewards[:, 0].tolist(), scale), rtol=1e-5
        )


def test_pilot_threshold_skips_prompts_the_prior_calls_hopeless(
    tiny_model_dir: Path, dataset: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Priors from the store with two of 8 prompts a point mass at 0: with pilot_threshold they
    get no pilot (and bamdp none after), the first round takes their 2 rollouts, the budget is
    spent exactly in the same three generation rounds."""
    trainer = build(AllocatingGRPOTrainer, tiny_model_dir, dataset, tmp_path, allocator="bamdp",
                    max_steps=2, per_device_train_batch_size=32, pilot_threshold=0.01)  # fmt: skip
    hopeless: set[int] = set()
    real_prior = trainer.belief_store.prior

    def prior(ids: list[int], *args: Any, **kw: Any) -> tuple[np.ndarray, np.ndarray]:
        a, b = real_prior(ids, *args, **kw)
        if not hopeless:
            hopeless.update(ids[:2])
        mask = np.array([i in hopeless for i in ids])
        return np.where(mask, 1e-3, a), np.where(mask, 9979.0, b)

    monkeypatch.setattr(trainer.belief_store, "prior", prior)
    train(trainer)
    for rec in trainer.allocations:
        assert sum(rec.counts) == 32 and rec.rounds == 3
        keys = [prompt_key(p) for p in rec.prompts]
        skipped = [c for k, c in zip(keys, rec.counts, strict=True) if k in hopeless]
        assert skipped == [0, 0] or not skipped  # a later batch may hold other prompts
        assert min(c for k, c in zip(keys, rec.counts, strict=True) if k not in hopeless) >= 1
    assert trainer.allocations[0].counts.count(0) >= 2


@pytest.mark.slow
def test_bamdp_twenty_steps_raise_the_training_reward(tiny_model_dir: Path, tmp_path: Path) -> None:
    # 32 training prompts, each seen five times in 20 steps; lr 2e-4 (at 5e-4 and above plain
    # TRL's reward on the tiny model falls too)
    task = make_task("arithmetic", seed=0, num_train=32, num_test=8)
    data = Dataset.from_dict(
        {"prompt": [e.prompt for e in task.train], "answer": [e.answer for e in task.train]}
    )
    trainer = build(
        AllocatingGRPOTrainer,
        tiny_model_dir,
        data,
        tmp_path,
        allocator="bamdp",
        max_steps=20,
        per_device_train_batch_size=32,
        learning_rate=2e-4,
    )
    start = [p.detach().clone() for p in trainer.model.parameters()]
    train(trainer)
    rewards = [h["reward"] for h in trainer.state.log_history if "reward" in h]
    assert len(rewards) == 20
    first, last = np.mean(rewards[:5]), np.mean(rewards[-5:])
    assert last > first + 0.15, rewards
    assert any(
        not torch.equal(a, b.detach())
        for a, b in zip(start, trainer.model.parameters(), strict=True)
    )


# --- plug-ins and checkpoints ------------------------------------------------------------------
PLUGIN = '''
import numpy as np
from agents import BaseAllocator


class FrontLoaded(BaseAllocator):
    """Every round goes to the prompts with the fewest rollouts, lowest index first."""

    name = "front-loaded"
    calls = 0

    def allocate(self, obs):
        type(self).calls += 1
        b = self.beliefs(obs)
        counts = np.zeros(b.rollouts.size, dtype=np.int64)
        for _ in range(b.round_size):
            load = np.where(b.capacity - counts > 0, b.rollouts + counts, 10**9)
            counts[int(np.argmin(load))] += 1
        return counts


class Greedy(BaseAllocator):
    name = "too-greedy"

    def allocate(self, obs):
        b = self.beliefs(obs)
        counts = np.zeros(b.rollouts.size, dtype=np.int64)
        counts[0] = b.round_size + 1
        return counts
'''


def test_plugin_allocator_from_a_module_spec(
    tiny_model_dir: Path, dataset: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "adaroll_trl_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    trainer = build(
        AllocatingGRPOTrainer,
        tiny_model_dir,
        dataset,
        tmp_path / "run",
        allocator="adaroll_trl_plugin:FrontLoaded",
        round_size=2,
        max_steps=2,
    )
    train(trainer)
    assert trainer.allocator_name == "front-loaded"
    assert type(trainer.allocator).calls == 16  # 2 batches × 16 rollouts / rounds of 2
    assert [r.counts for r in trainer.allocations] == [[4, 4, 4, 4]] * 2
    assert [r.rounds for r in trainer.allocations] == [8, 8]


def test_allocator_breaking_the_rule_names_itself(
    tiny_model_dir: Path, dataset: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "adaroll_trl_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    trainer = build(
        AllocatingGRPOTrainer,
        tiny_model_dir,
        dataset,
        tmp_path / "run",
        allocator="adaroll_trl_plugin:Greedy",
        round_schedule=None,  # rounds of one rollout per prompt on average: 4 a decision
    )
    with pytest.raises(
        ValueError,
        match=r"allocator 'too-greedy' broke the allocation contract: .* handed out 5 rollouts"
        r".* = 4",
    ):
        train(trainer)


@pytest.mark.slow
def test_checkpoint_keeps_beliefs_and_resume_equals_straight_run(
    tiny_model_dir: Path, dataset: Dataset, tmp_path: Path
) -> None:
    common: dict[str, Any] = {"allocator": "bamdp", "save_strategy": "steps", "save_steps": 2}
    straight = train(
        build(AllocatingGRPOTrainer, tiny_model_dir, dataset, tmp_path / "s", max_steps=4, **common)
    )
    first = train(
        build(AllocatingGRPOTrainer, tiny_model_dir, dataset, tmp_path / "r", max_steps=2, **common)
    )
    saved = json.loads((tmp_path / "r" / "checkpoint-2" / STATE_FILE).read_text())
    assert saved["beliefs"] == first.belief_store.state_dict()
    assert saved["allocator_state"] == json.loads(json.dumps(first.allocator.state_dict()))
    assert 0 < len(saved["beliefs"]["ids"]) <= 8  # the two batches' prompts that got rollouts
    resumed = build(
        AllocatingGRPOTrainer, tiny_model_dir, dataset, tmp_path / "r", max_steps=4, **common
    )
    train(resumed, resume_from_checkpoint=str(tmp_path / "r" / "checkpoint-2"))
    assert resumed.belief_store.state_dict() == straight.belief_store.state_dict()
    assert resumed.allocator.state_dict() == straight.allocator.state_dict()
    assert [r.counts for r in resumed.allocations] == [r.counts for r in straight.allocations][2:]
    for p, q in zip(straight.model.parameters(), resumed.model.parameters(), strict=True):
        assert torch.equal(p, q)
    loss = [h["loss"] for h in straight.state.log_history if "loss" in h]
    assert len(loss) == 4  # the resumed history holds the first run's two steps, then its own
    assert loss == [h["loss"] for h in resumed.state.log_history if "loss" in h]


# --- several processes -------------------------------------------------------------------------
def free_port() -> int:
    """A TCP port free now (so parallel runs do not meet on accelerate's default 29500)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.slow
@pytest.mark.parametrize("model_case", MODELS, indirect=True)
def test_accelerate_launch_two_cpu_processes_keep_replicas_identical(
    model_case: Any, tmp_path: Path
) -> None:
    # accelerate's --cpu flag starts one process (several CPU processes go through MPI there);
    # --multi_gpu starts them through torchrun, and the worker's use_cpu=True with
    # ddp_backend="gloo" keeps them on the CPU
    env = dict(
        os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false"
    )
    cmd = [
        sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
        "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
        "--main_process_port", str(free_port()),
        str(Path(__file__).with_name("trl_worker.py")), str(model_case.directory), str(tmp_path),
        "exact" if model_case.task is None else "parity",
    ]  # fmt: skip
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    r0 = json.loads((tmp_path / "rank0.json").read_text())
    r1 = json.loads((tmp_path / "rank1.json").read_text())
    assert r0["world"] == r1["world"] == 2
    assert r0["changed"] and r0["digest"] == r1["digest"]  # learned, and the replicas agree
    assert r0["beliefs"] == r1["beliefs"] and len(r0["beliefs"]["ids"]) > 0
    assert r0["counts"] == r1["counts"] and len(r0["counts"]) == 3
    assert all(sum(c) == 20 for c in r0["counts"])  # 5 prompts × 4, over both processes
    assert any(len(set(c)) > 1 for c in r0["counts"])
    # the default schedule: two rounds of 10 (5 each process); bamdp's own pilot (1 a prompt:
    # 5 rollouts) would not divide among the 2 processes, so it is lowered to none
    assert r0["rounds"] == [2, 2, 2]
    assert r0["local_rows"] == r1["local_rows"] == [10, 10, 10]


# --- bad input ---------------------------------------------------------------------------------
def test_unknown_allocator_suggests_the_closest(
    tiny_model_dir: Path, dataset: Dataset, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match=r"unknown allocator 'bamdpp'. Did you mean 'bamdp'\?"):
        build(AllocatingGRPOTrainer, tiny_model_dir, dataset, tmp_path, allocator="bamdpp")


def test_num_generations_below_two_is_refused(
    tiny_model_dir: Path, dataset: Dataset, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match="at least 2 generations"):
        config(tmp_path, num_generations=1)  # TRL's own check
    args = config(tmp_path, num_generations=2, per_device_train_batch_size=4)
    args.num_generations = 1  # changed after TRL's check: ours still refuses it
    model, tok = load_policy(str(tiny_model_dir))
    with pytest.raises(ValueError, match=r"num_generations must be >= 2, got 1"):
        AllocatingGRPOTrainer(
            model=model, reward_funcs=Recorder(), args=args, train_dataset=dataset,
            processing_class=tok, allocator="bamdp",
        )  # fmt: skip


def test_round_schedule_sets_the_rounds(
    tiny_model_dir: Path, dataset: Dataset, tmp_path: Path
) -> None:
    # 8 prompts x 4 = 32 completions a generation batch: one round of 24, then one of 8
    trainer = build(
        AllocatingGRPOTrainer,
        tiny_model_dir,
        dataset,
        tmp_path,
        allocator="bamdp",
        round_schedule="24,8",
        max_steps=2,
        per_device_train_batch_size=32,
    )
    train(trainer)
    records = list(trainer.allocations)
    assert len(records) == 2
    for rec in records:
        assert sum(rec.counts) == 32 and rec.rounds == 2
    assert trainer.pilot == 0  # a given schedule describes the whole step
    with pytest.raises(ValueError, match="hands out 30 rollouts"):
        build(AllocatingGRPOTrainer, tiny_model_dir, dataset, tmp_path, allocator="bamdp",
              round_schedule="24,6", per_device_train_batch_size=32)  # fmt: skip
    with pytest.raises(ValueError, match="both set"):
        build(AllocatingGRPOTrainer, tiny_model_dir, dataset, tmp_path, allocator="bamdp",
              round_schedule="24,8", round_size=8)  # fmt: skip


def test_bad_settings_are_refused_with_the_fix(
    tiny_model_dir: Path, dataset: Dataset, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match=r"larger than B·max_group .* num_generations \(4\)"):
        build(
            AllocatingGRPOTrainer, tiny_model_dir, dataset, tmp_path, allocator="bamdp", max_group=3
        )
    with pytest.raises(ValueError, match="pilot"):
        build(AllocatingGRPOTrainer, tiny_model_dir, dataset, tmp_path, allocator="bamdp", pilot=4)
    with pytest.raises(TypeError, match="round_size must be an integer"):
        build(AllocatingGRPOTrainer, tiny_model_dir, dataset, tmp_path, round_size=2.0)
    with pytest.raises(ValueError, match="does not support TRL's tools"):
        build(AllocatingGRPOTrainer, tiny_model_dir, dataset, tmp_path, tools=[sorted])
    with pytest.raises(ValueError, match="does not support TRL's rollout_func"):
        build(AllocatingGRPOTrainer, tiny_model_dir, dataset, tmp_path, rollout_func=print)


def test_belief_groups_from_a_dataset_column(
    tiny_model_dir: Path, dataset: Dataset, tmp_path: Path
) -> None:
    task = make_task("arithmetic", seed=0, num_train=256, num_test=8)
    leveled = dataset.add_column("level", [e.level for e in task.train])
    plain, dataset = dataset, leveled
    trainer = build(
        AllocatingGRPOTrainer,
        tiny_model_dir,
        dataset,
        tmp_path / "run",
        allocator="bamdp",
        belief_prior="fitted",
        belief_group="level",
    )
    train(trainer)
    levels = {prompt_key(p): lv for p, lv in zip(dataset["prompt"], dataset["level"], strict=True)}
    recorded = trainer.belief_store.state_dict()["groups"]
    assert recorded and all(levels[i] == g for i, g in recorded)
    with pytest.raises(ValueError, match="needs belief_prior='fitted'"):
        build(
            AllocatingGRPOTrainer,
            tiny_model_dir,
            dataset,
            tmp_path,
            belief_group="level",
            belief_prior="fixed",
        )
    discounted = build(
        AllocatingGRPOTrainer,
        tiny_model_dir,
        dataset,
        tmp_path / "discounted",
        allocator="bamdp",
        belief_fit="discounted",
        belief_group="level",
    )
    assert discounted.belief_store.fit == "discounted" and trainer.belief_store.fit == "weighted"
    bad = build(
        AllocatingGRPOTrainer,
        tiny_model_dir,
        plain,
        tmp_path / "bad",
        belief_prior="fitted",
        belief_group="level",
    )
    with pytest.raises(ValueError, match="'level' is not a column"):
        train(bad)


@pytest.mark.parametrize("version", ["1.14.2", "1.14.9", "1.16.0", "1.16.3"])
def test_each_supported_trl_line_is_accepted(version: str) -> None:
    check_trl_version(version)


@pytest.mark.parametrize(
    "version",
    # 1.14.0: _generate_single_turn without num_generations; 1.14.1 and 1.15: untested
    ["1.9.0", "1.13.2", "1.14.0", "1.14.1", "1.15.0", "1.15.2", "1.17.0", "2.0.0", "not-a-version"],
)
def test_a_trl_release_outside_the_lines_is_refused_naming_them(version: str) -> None:
    with pytest.raises(ImportError) as exc:
        check_trl_version(version)
    message = str(exc.value)
    assert f"supports trl {TRL_RANGE}, but trl {version} is installed" in message
    assert TRL_RANGE == ">=1.14.2,<1.15 or >=1.16,<1.17"
    assert 'pip install -e ".[trl]"' in message and '"trl>=1.14.2,<1.17,!=1.15.*"' in message


def test_the_trl_extra_pins_the_supported_lines() -> None:
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert TRL_REQUIREMENT in extras["trl"]
    for line in TRL_LINES:  # every release of each line meets the extra's requirement
        low = line.split(",")[0].removeprefix(">=")
        assert SpecifierSet(TRL_REQUIREMENT.removeprefix("trl")).contains(low)


def test_trl_version_outside_the_range_is_refused_at_import() -> None:
    check_trl_version(trl.__version__)  # the installed one is supported
    code = "import trl; trl.__version__ = '1.9.0'; import trainers.trl.trainer"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode != 0
    assert f"supports trl {TRL_RANGE}, but trl 1.9.0 is installed" in done.stderr


# --- the example script ------------------------------------------------------------------------
def test_example_script_trains_and_checkpoints_the_beliefs(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    monkeypatch.setenv("ADAROLL_CACHE_DIR", str(tiny_model_dir.parents[1]))
    spec = importlib.util.spec_from_file_location("trl_example", ROOT / "scripts/trl_example.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = module.main("bamdp", max_steps=2, out=str(tmp_path))  # its default: 64 × 8
    assert [sum(r.counts) for r in trainer.allocations] == [512, 512]  # the recipe: 64 × 8
    assert [len(r.counts) for r in trainer.allocations] == [64, 64]
    assert (trainer.args.learning_rate, trainer.args.loss_type) == (1e-4, "dapo")
    saved = json.loads((tmp_path / "checkpoint-2" / STATE_FILE).read_text())
    assert saved["allocator"] == "bamdp"
    assert 64 <= len(saved["beliefs"]["ids"]) <= 128  # prompts with rollouts in 2 batches of 64
    # the task's reward function gives the same scores as the task's verifier
    rows = trainer.train_dataset.select(range(3))
    reward = trainer.reward_funcs[0](
        prompts=rows["prompt"],
        completions=[rows["answer"][0], "x", rows["answer"][2] + " "],
        completion_ids=[[1], [2], [3]],
        example_id=rows["example_id"],
    )
    assert reward == [1.0, 0.0, 1.0]


def test_example_script_default_is_prior_filter_on_a_pool(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The example's default (the README's recommended allocator): TRL draws 128 prompts of 4 and
    prior_filter gives groups of 8 to 64 of them, the same 512 completions a step."""
    import importlib.util

    monkeypatch.setenv("ADAROLL_CACHE_DIR", str(tiny_model_dir.parents[1]))
    spec = importlib.util.spec_from_file_location("trl_example", ROOT / "scripts/trl_example.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(ValueError, match="num_generations must divide the 512 completions"):
        module.main(num_generations=3, out=str(tmp_path / "bad"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer = module.main(max_steps=1, out=str(tmp_path))
    # with a pool there is something to filter: prior_filter's "allocates as uniform" warning
    # (a batch of 64 prompts of 8) must not come
    assert not [w for w in caught if "prior_filter" in str(w.message)]
    (record,) = trainer.allocations
    assert len(record.counts) == 128 and sum(record.counts) == 512
    assert sorted(set(record.counts)) == [0, 8] and record.counts.count(8) == 64
    assert trainer.args.num_generations == 4
