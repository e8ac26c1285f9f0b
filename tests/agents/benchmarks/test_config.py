"""Tests of agents.benchmarks.config: ``BenchConfig``'s checks and lists, the grid of settings
and the env arguments of each."""

from __future__ import annotations

import dataclasses
import importlib.util

import pytest

import agents
from adaroll_env.arguments import parse_config
from agents.benchmarks.config import (
    ENV_KINDS,
    GRID_FIELDS,
    BenchConfig,
    Setting,
    _split,
    env_kwargs,
    make_env,
    settings,
)


def _cfg(tmp_path, **kw):
    base = dict(
        allocators="uniform,random",
        envs="sequential,rounds",
        num_questions=6,
        group_sizes="4",
        episodes=12,
        seed=7,
        workers=1,
        out=str(tmp_path),
        name="run",
        progress=False,
    )
    base.update(kw)
    return BenchConfig(**base)


def _grid_cfg(tmp_path, **kw):
    """The rounds-grid config: the rounds env only (the default), uniform and bamdp."""
    base = dict(
        allocators="uniform,bamdp",
        num_questions=6,
        group_sizes="4",
        episodes=8,
        seed=3,
        workers=1,
        out=str(tmp_path),
        name="run",
        progress=False,
    )
    base.update(kw)
    return BenchConfig(**base)


# --- checks of BenchConfig ------------------------------------------------------------------------


def test_uniform_is_always_the_baseline(tmp_path):
    cfg = _cfg(tmp_path, allocators="random", envs="rounds")
    assert cfg.allocator_list == ["uniform", "random"]


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"envs": "sequentail"}, "env kind"),
        ({"episodes": 1}, "episodes"),
        ({"group_sizes": "x"}, "integer"),
        ({"difficulties": "rlv"}, "rlvr"),
        ({"utilities": "informativ"}, "informative"),
        ({"belief": "1"}, "belief"),
    ],
)
def test_bad_config(tmp_path, kw, match):
    with pytest.raises(ValueError, match=match):
        _cfg(tmp_path, **kw)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('{"random": {"sed": 1}}', "has no parameter 'sed'"),
        ('{"randon": {}}', "Did you mean 'random'"),
        ('{"seed": 1}', "Its keys are allocator specs"),
        ("{", "not valid JSON"),
    ],
)
def test_bad_allocator_kwargs(tmp_path, text, match):
    with pytest.raises(ValueError, match=match):
        _cfg(tmp_path, allocator_kwargs=text)


def test_unclosed_parenthesis_in_a_list(tmp_path):
    with pytest.raises(ValueError, match=r"unbalanced parentheses"):
        _cfg(tmp_path, difficulties="rlvr,beta(0.5,2")
    assert _cfg(tmp_path, difficulties="rlvr,beta(0.5,2)").difficulty_list == [
        "rlvr",
        "beta(0.5,2)",
    ]


def test_unknown_env_kind_suggests_the_closest(tmp_path):
    with pytest.raises(ValueError, match=r"Did you mean 'sequential'"):
        _cfg(tmp_path, envs="sequentail")


def test_rounds_from_the_command_line(tmp_path):
    cfg = parse_config(BenchConfig, "", ["--rounds", "1,2,3,4,8", "--out", str(tmp_path)])
    assert cfg.rounds_list == [1, 2, 3, 4, 8]


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"rounds": "1,2", "round_size": 4}, "both set"),
        ({"rounds": "2", "envs": "sequential,rounds"}, "rounds env only"),
        ({"rounds": "0"}, ">= 1"),
        ({"rounds": "two"}, "not an integer"),
        ({"rounds": "25"}, "exceeds the smallest budget"),
    ],
)
def test_bad_rounds(tmp_path, kw, match):
    with pytest.raises(ValueError, match=match):
        _grid_cfg(tmp_path, **kw)


def test_schedules_from_the_command_line_and_help(tmp_path):
    cfg = parse_config(BenchConfig, "", ["--rounds", "1,2,384+128,448+64", "--out", str(tmp_path)])
    assert cfg.rounds_list == [1, 2, "384+128", "448+64"]
    from agents.benchmarks.config import BenchConfig as C

    (rounds,) = [f for f in C.__dataclass_fields__.values() if f.name == "rounds"]
    assert "384+128" in rounds.metadata["help"]


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"rounds": "18+5"}, "hands out 23 rollouts"),
        ({"rounds": "18+x"}, "joined by '\\+'"),
        ({"rounds": "24+0"}, "joined by '\\+'"),
        ({"rounds": "18+6", "group_sizes": "4,8"}, "does not fit G = 8"),
    ],
)
def test_bad_schedules_in_the_grid(tmp_path, kw, match):
    with pytest.raises(ValueError, match=match):
        _grid_cfg(tmp_path, **kw)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"num_questions": 0}, "num_questions must be >= 1, got 0"),
        ({"workers": -1}, "workers must be >= 0 (0: one per core), got -1"),
        ({"group_sizes": ""}, "group_sizes is empty: give at least one G, e.g. '8'"),
        ({"episodes": 1}, "episodes must be >= 2 for a confidence interval, got 1"),
        ({"belief": "1,2,3"}, "belief '1,2,3' must be 'matched' or 'a,b' (e.g. '0.5,0.5')"),
        (
            {"live_steps": 5},
            "live_steps (5) applies to --from-run only: give the run directories with "
            "--from-run DIR, or drop --live-steps",
        ),
    ],
)
def test_config_error_messages(tmp_path, kw, message):
    with pytest.raises(ValueError) as info:
        _cfg(tmp_path, **kw)
    assert str(info.value) == message


def test_from_run_leaves_the_grid_options_alone(tmp_path):
    cfg = BenchConfig(from_run=str(tmp_path), out=str(tmp_path))  # one directory from Python
    assert cfg.from_run == [str(tmp_path)]
    with pytest.raises(ValueError) as info:
        BenchConfig(from_run=[str(tmp_path)], num_questions=8, max_group=4)
    msg = str(info.value)
    assert "so --num-questions, --max-group would be ignored: drop them" in msg
    with pytest.raises(ValueError, match=r"live_steps must be >= 0 .*got -1"):
        BenchConfig(from_run=[str(tmp_path)], live_steps=-1)
    assert set(GRID_FIELDS) <= {f.name for f in dataclasses.fields(BenchConfig)}


# --- the lists ------------------------------------------------------------------------------------


def test_split_keeps_commas_inside_parentheses():
    assert _split("rlvr, beta(1,2) ,hard") == ["rlvr", "beta(1,2)", "hard"]
    assert _split(" ") == []
    assert _split("a,,b") == ["a", "b"]
    with pytest.raises(ValueError, match="unbalanced parentheses"):
        _split("rlvr)")
    # nested parentheses: a spec whose argument itself holds a call
    assert _split("mymod:Alloc(u=snr(8), k=2),bamdp") == ["mymod:Alloc(u=snr(8), k=2)", "bamdp"]
    with pytest.raises(ValueError, match="unbalanced parentheses"):
        _split("a(b(c)")


@pytest.mark.parametrize("allocators", ["", " , ,"])
def test_no_allocators_is_refused_not_run_as_uniform(tmp_path, allocators):
    with pytest.raises(ValueError, match="allocators is empty: give specs like"):
        _cfg(tmp_path, allocators=allocators)


def test_lists_of_the_config(tmp_path):
    cfg = _cfg(tmp_path, group_sizes="4, 8", utilities="hit,snr(8)", belief="0.5, 2")
    assert cfg.group_size_list == [4, 8]
    assert cfg.utility_list == ["hit", "snr(8)"]
    assert cfg.env_kinds == ["sequential", "rounds"]
    assert cfg.belief_value() == (0.5, 2.0)
    assert _cfg(tmp_path).belief_value() == "matched"
    assert _grid_cfg(tmp_path, rounds="2, 18+6").rounds_list == [2, "18+6"]
    assert _grid_cfg(tmp_path).rounds_list == []


def test_all_allocators_are_every_registered_one(tmp_path):
    specs = _cfg(tmp_path, allocators="all").allocator_list
    registered = agents.list_allocators()
    extra = ["sb3:pretrained"] if importlib.util.find_spec("stable_baselines3") else []
    assert specs == ["uniform", *[s for s in registered + extra if s != "uniform"]]


def test_allocator_kwargs_of_is_a_copy(tmp_path):
    cfg = _cfg(
        tmp_path, allocators="pilot_commit", allocator_kwargs='{"pilot_commit": {"pilot": 1}}'
    )
    got = cfg.allocator_kwargs_of("pilot_commit")
    got["pilot"] = 99
    assert cfg.allocator_kwargs_of("pilot_commit") == {"pilot": 1}


# --- settings and env arguments -------------------------------------------------------------------


def test_settings_are_the_grid_in_a_stable_order(tmp_path):
    cfg = _cfg(tmp_path, envs="rounds,sequential", difficulties="rlvr,hard", group_sizes="4,8")
    got = [(s.env, s.difficulty, s.group_size) for s in settings(cfg)]
    assert got == [
        ("rounds", "rlvr", 4), ("rounds", "rlvr", 8), ("rounds", "hard", 4),
        ("rounds", "hard", 8), ("sequential", "rlvr", 4), ("sequential", "rlvr", 8),
        ("sequential", "hard", 4), ("sequential", "hard", 8),
    ]  # fmt: skip
    assert {s.rounds for s in settings(cfg)} == {None}
    rounds = [s.rounds for s in settings(_grid_cfg(tmp_path, rounds="1,18+6"))]
    assert rounds == [1, "18+6"]


def test_setting_key():
    assert Setting("rounds", "rlvr", "hit", 8).key == "rounds/rlvr/hit/G=8"
    assert Setting("rounds", "rlvr", "hit", 8, 3).key == "rounds/rlvr/hit/G=8/rounds=3"
    assert Setting("rounds", "rlvr", "hit", 8, "18+6").key == "rounds/rlvr/hit/G=8/rounds=18+6"


def test_env_kwargs_of_a_setting(tmp_path):
    cfg = _cfg(tmp_path, pilot=1, max_group=10, round_size=3, belief="0.5,0.5")
    seq = env_kwargs(cfg, Setting("sequential", "hard", "hit", 4))
    assert seq == {
        "num_questions": 6,
        "budget": 24,
        "pilot": 1,
        "max_group": 10,
        "utility": "hit",
        "difficulty": "hard",
        "belief": (0.5, 0.5),
    }
    assert env_kwargs(cfg, Setting("rounds", "hard", "hit", 4))["round_size"] == 3
    selective = _cfg(tmp_path, pilot=1, pilot_threshold=0.01)
    assert env_kwargs(selective, Setting("rounds", "hard", "hit", 4))["pilot_threshold"] == 0.01
    grid = _grid_cfg(tmp_path, rounds="5,18+6")
    # 5 equal rounds of N = 24: R = ceil(24 / 5) = 5
    assert env_kwargs(grid, Setting("rounds", "rlvr", "hit", 4, 5))["round_size"] == 5
    sched = env_kwargs(grid, Setting("rounds", "rlvr", "hit", 4, "18+6"))
    assert sched["round_schedule"] == "18+6" and "round_size" not in sched
    # the truth is revealed for the reference-only oracle, and only for it
    assert env_kwargs(cfg, Setting("rounds", "hard", "hit", 4), "oracle")["reveal_truth"] is True
    assert "reveal_truth" not in env_kwargs(cfg, Setting("rounds", "hard", "hit", 4), "bamdp")


def test_make_env_by_kind():
    for kind, env_id in ENV_KINDS.items():
        env = make_env(kind, {"num_questions": 3, "budget": 9})
        assert env.spec.id == env_id and env.unwrapped.params.num_questions == 3
        env.close()
