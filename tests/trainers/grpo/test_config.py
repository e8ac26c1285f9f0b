"""trainers.grpo.config: ``GRPOConfig``'s checks and derived values, allocator keyword arguments,
the automatic thread count."""

from __future__ import annotations

import dataclasses
import functools
import json

import pytest

from trainers.grpo import GRPOConfig
from trainers.grpo.config import (
    AUTO_THREADS_MAX,
    RESUME_MAY_CHANGE,
    allocator_kwargs,
    check_config_int,
    field_help,
    resolve_threads,
)


def test_config_defaults_and_budget() -> None:
    cfg = GRPOConfig()
    assert cfg.rollout_budget == cfg.batch_size * cfg.group_size
    assert GRPOConfig(budget=100).rollout_budget == 100
    assert cfg.to_dict()["loss_type"] == "dapo"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"loss_type": "ppo"}, "loss_type must be one of"),
        ({"scale_rewards": "std"}, "scale_rewards must be one of"),
        ({"batch_size": 0}, "batch_size must be an integer >= 1"),
        ({"budget": 10, "pilot": 1, "batch_size": 16}, "budget \\(10\\) must exceed"),
        ({"max_group": 2, "batch_size": 4, "group_size": 8}, "exceeds B·max_group"),
        ({"belief_decay": 0.0}, "belief_decay must be in"),
        ({"lr": -1.0}, "lr must be a finite number > 0"),
        ({"temperature": float("nan")}, "temperature must be a finite number >= 0"),
    ],
)
def test_config_errors_say_what_and_how(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        GRPOConfig(**kwargs)


# --- added with the mirrored layout ----------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"engine": "sglang"}, "engine must be one of ['hf', 'vllm'], got 'sglang': pick one"),
        ({"batch_size": 2.0}, "batch_size must be an integer >= 1, got 2.0 (float)"),
        ({"pilot": -1}, "pilot must be an integer >= 0, got -1"),
        ({"pilot_threshold": 1.0}, "pilot_threshold must be a probability in [0, 1), got 1.0"),
        ({"keep_checkpoints": 0}, "keep_checkpoints must be an integer >= 1, got 0"),
        ({"save_minutes": 0}, "save_minutes must be a positive number of minutes or None, got 0"),
        ({"save_minutes": True}, "save_minutes must be a positive number of minutes or None"),
        ({"top_p": 1.5}, "top_p must be in (0, 1], got 1.5"),
        ({"epsilon_high": -0.1}, "epsilon_high must be >= 0 or None, got -0.1"),
        ({"max_minutes": 0.0}, "max_minutes must be > 0 or None, got 0.0"),
        ({"temperature": 0.0}, "temperature 0 (greedy sampling) gives every prompt identical"),
        ({"utility": "snr(auto)", "gradient_noise_every": 0}, "gradient_noise_every = 0 turns"),
        ({"rounds": 2, "round_size": 8}, "rounds (2) and round_size (8) both set: give one"),
        ({"batch_size": 2, "group_size": 2, "rounds": 5}, "rounds (5) exceeds the budget (4)"),
        ({"pool_size": 8, "batch_size": 16}, "pool_size (8) is smaller than batch_size (16)"),
        ({"belief_group": " "}, "belief_group is empty"),
        ({"belief_group": "level", "belief_prior": "fixed"}, "needs --belief-prior fitted"),
        ({"batch_size": 4, "group_size": 4, "pilot": 1, "pool_size": 16},
         "budget (16) must exceed pilot·pool_size (1·16)"),
        ({"round_schedule": "12,4", "rounds": 2},
         "round_schedule ('12,4') and rounds (2) are both set"),
        ({"batch_size": 4, "group_size": 4, "round_schedule": "10,10"},
         "round_schedule: round schedule '10,10' hands out 20 rollouts, but the rounds hand "
         "out 16"),
        ({"allocator": "unifrom"}, "unknown allocator 'unifrom'. Did you mean 'uniform'?"),
        ({"allocator": "thompson", "allocator_kwargs": '{"horizn": 2}'},
         "has no parameter 'horizn'. Did you mean 'max_horizon'?"),
    ],
)  # fmt: skip
def test_cross_field_errors_name_the_values_and_the_fix(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError) as exc:
        GRPOConfig(**kwargs)
    assert message in str(exc.value)


def test_the_pilot_must_leave_rollouts_to_allocate() -> None:
    with pytest.raises(ValueError) as exc:
        GRPOConfig(batch_size=4, group_size=2, pilot=2)
    assert str(exc.value) == (
        "budget (8) must exceed the pilot's pilot·B (2·4 = 8) so that the allocator has "
        "rollouts to place: lower pilot or raise budget"
    )
    assert GRPOConfig(batch_size=4, group_size=2, pilot=1).rollout_budget == 8


def test_derived_values() -> None:
    # the round schedule: 'auto' is two equal rounds unless rounds/round_size is given
    assert GRPOConfig().schedule_spec == "0.5,0.5"
    assert GRPOConfig(rounds=2).schedule_spec is None
    assert GRPOConfig(round_size=64).schedule_spec is None
    assert GRPOConfig(allocator="sb3:pretrained").schedule_spec is None
    assert GRPOConfig(round_schedule=None).schedule_spec is None
    assert GRPOConfig(batch_size=4, group_size=4, round_schedule="12,4").schedule_spec == "12,4"
    # fewer than 4 rollouts left after the pilot: no schedule (5 - 1·2 = 3)
    assert GRPOConfig(batch_size=2, group_size=2, budget=5, pilot=1).schedule_spec is None
    # the belief-group column
    assert GRPOConfig().group_column == "level"  # 'auto' under the default fitted prior
    assert GRPOConfig(belief_prior="fixed").group_column == "none"
    assert GRPOConfig(belief_group="subject").group_column == "subject"
    assert GRPOConfig(threads=3).torch_threads() == 3


def test_to_dict_is_the_whole_config_and_round_trips() -> None:
    cfg = GRPOConfig(batch_size=4, group_size=2, allocator="thompson",
                     allocator_kwargs='{"max_horizon": 3}')  # fmt: skip
    d = cfg.to_dict()
    assert d == {**dataclasses.asdict(cfg), "pilot": 0}  # the pilot as it runs (thompson's: 0)
    assert set(d) == {f.name for f in dataclasses.fields(GRPOConfig)}
    again = GRPOConfig(**json.loads(json.dumps(d)))
    assert again.to_dict() == d and again == dataclasses.replace(cfg, pilot=0)
    assert cfg.allocator_options() == {"max_horizon": 3}
    assert GRPOConfig().allocator_options() == {}


def test_every_field_has_help_and_resume_may_change_only_real_fields() -> None:
    names = {f.name for f in dataclasses.fields(GRPOConfig)}
    for f in dataclasses.fields(GRPOConfig):
        assert f.metadata["help"].strip(), f.name
    assert field_help("x") == {"help": "x"}
    assert names >= RESUME_MAY_CHANGE
    # the run length and logging, never a setting that changes a step's numbers
    assert {"steps", "out", "resume", "threads"} <= RESUME_MAY_CHANGE
    assert not {"lr", "seed", "allocator", "batch_size", "model", "task"} & RESUME_MAY_CHANGE


def test_allocator_kwargs_parsing() -> None:
    assert allocator_kwargs("bamdp", None) == {}
    assert allocator_kwargs("bamdp", "{}") == {}
    given = {"max_horizon": 2}
    parsed = allocator_kwargs("thompson", given)
    assert parsed == given and parsed is not given  # a copy
    assert allocator_kwargs("thompson", '{"max_horizon": 8}') == {"max_horizon": 8}
    # a learned sb3 allocator's keywords are not checked here
    assert allocator_kwargs("sb3:pretrained", '{"anything": 1}') == {"anything": 1}
    with pytest.raises(ValueError) as exc:
        allocator_kwargs("thompson", "{max_horizon: 8}")
    assert str(exc.value).startswith("allocator_kwargs '{max_horizon: 8}' is not valid JSON (")
    assert "give an object such as '{\"horizon\": 4}'" in str(exc.value)
    with pytest.raises(
        ValueError, match=r"must be a JSON object of keyword arguments, got '\[8\]'"
    ):
        allocator_kwargs("thompson", "[8]")


def test_check_config_int_turns_type_errors_into_value_errors() -> None:
    check_config_int("steps", 3, 1)
    with pytest.raises(ValueError, match=r"steps must be an integer >= 1, got True \(bool\)"):
        check_config_int("steps", True, 1)
    with pytest.raises(ValueError, match=r"steps must be an integer >= 1, got 0$"):
        check_config_int("steps", 0, 1)


def test_resolve_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_threads(0) == 0 and resolve_threads(7) == 7  # as given
    assert AUTO_THREADS_MAX == 4
    cases = [(16, 0.2, 4), (16, 13.6, 2), (2, 0.0, 2), (8, 30.0, 1), (3, 1.4, 2)]
    for cores, load, want in cases:  # min(cores, 4, cores - round(load)), at least 1
        monkeypatch.setattr("os.cpu_count", lambda c=cores: c)
        monkeypatch.setattr("os.getloadavg", lambda x=load: (x, 0.0, 0.0))
        assert resolve_threads(None) == want, (cores, load)

    def no_load() -> tuple[float, float, float]:
        raise OSError("no load average here")

    monkeypatch.setattr("os.cpu_count", lambda: 3)
    monkeypatch.setattr("os.getloadavg", no_load)
    assert resolve_threads(None) == 3
    monkeypatch.setattr("os.cpu_count", lambda: None)
    assert resolve_threads(None) == 1


def test_an_unset_pilot_is_the_allocators_own_lowered_to_fit() -> None:
    # bamdp asks for 2 rollouts a prompt before its first decision; the others for none
    bamdp = functools.partial(GRPOConfig, allocator="bamdp")
    assert bamdp().pilot is None and bamdp().pilot_rollouts == 2
    assert GRPOConfig().pilot_rollouts == 0  # uniform, the trainer's default allocator
    assert GRPOConfig(allocator="knowledge_gradient").pilot_rollouts == 0
    assert bamdp(pilot=0).pilot_rollouts == 0 and GRPOConfig(pilot=3).pilot_rollouts == 3
    # at most a quarter of the budget: 1 at G = 4, none at G = 2 or 1
    assert bamdp(group_size=4).pilot_rollouts == 1
    assert bamdp(batch_size=4, group_size=2).pilot_rollouts == 0
    assert bamdp(budget=64).pilot_rollouts == 0
    # a pool: the pilot runs on every candidate, so its quarter counts them all
    assert bamdp(batch_size=4, group_size=8, pool_size=8).pilot_rollouts == 1
    # given rounds describe the whole step: an unset pilot is 0 there
    assert bamdp(round_schedule="384,128").pilot_rollouts == 0
    assert bamdp(rounds=4).pilot_rollouts == bamdp(round_size=64).pilot_rollouts == 0
    assert bamdp(round_schedule="0.75,0.25", pilot=1).pilot_rollouts == 1
    # the schedule splits what the pilot leaves: 512 - 2·64 = 384 in two rounds of 192
    from agents.rounds import plan_step

    c = bamdp()
    plan = plan_step(budget=c.rollout_budget, batch=c.batch_size, adaptive=True,
                     pilot=c.pilot_rollouts, round_schedule=c.schedule_spec)  # fmt: skip
    assert (plan.pilot, plan.round_size, plan.round_schedule) == (2, 192, ())  # equal rounds
    # the run directory records the pilot that runs
    assert bamdp().to_dict()["pilot"] == 2
    assert GRPOConfig().to_dict()["pilot"] == 0
