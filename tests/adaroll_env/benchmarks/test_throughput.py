"""Tests of adaroll_env.benchmarks.throughput (``scripts/bench_env.py``) on a fake clock: each
reading of the clock advances it one second, so the rates are exact numbers."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import adaroll_env
from adaroll_env.benchmarks import throughput
from adaroll_env.benchmarks.throughput import EnvBenchConfig


class FakeTime:
    """``time`` whose ``perf_counter`` reads 0, 1, 2, ... seconds."""

    def __init__(self) -> None:
        self.now = -1.0

    def perf_counter(self) -> float:
        self.now += 1.0
        return self.now


@pytest.fixture
def clock(monkeypatch):
    fake = FakeTime()
    monkeypatch.setattr(throughput, "time", fake)
    return fake


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"seconds": 0}, "seconds must be > 0, got 0"),
        ({"repeats": 0}, "repeats must be >= 1, got 0"),
        ({"num_envs": 0}, "num_envs must be >= 1, got 0"),
    ],
)
def test_config_refuses_bad_values(kw, message):
    with pytest.raises(ValueError, match=message):
        EnvBenchConfig(**kw)


def test_single_rate_counts_whole_batches_of_actions(clock):
    # Clock: start 0, deadline 2.5; checks at 1 and 2 pass (2 × 1024 steps), at 3 stop; the
    # rate is read at 4: 2048 steps / 4 s.
    rate = throughput.single_steps_per_second(
        "AdaRoll/BetaBernoulli-v0", {"num_questions": 2}, 2.5, seed=0
    )
    assert rate == 512.0


def test_vector_rate_counts_sub_env_steps(clock):
    # The same clock: two passes over 256 batch actions of 3 sub-envs in 4 s.
    rate = throughput.vector_steps_per_second(
        "AdaRoll/BetaBernoulliRounds-v0", {"num_questions": 2}, 3, "sync", 2.5, seed=0
    )
    assert rate == 2 * 256 * 3 / 4


def test_pre_drawn_actions_depend_on_the_seed_only():
    gym.register_envs(adaroll_env)
    space = gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=3).action_space
    a = throughput._actions(space, 5, seed=4)
    b = throughput._actions(space, 5, seed=4)
    c = throughput._actions(space, 5, seed=5)
    assert len(a) == 5
    np.testing.assert_array_equal(np.stack(a), np.stack(b))
    assert not np.array_equal(np.stack(a), np.stack(c))


def test_measure_rows_pair_each_env_with_cartpole(clock):
    # With the fake clock every slice runs two passes, so each rate is the same number of
    # steps over the same time: the env and CartPole tie and the ratio is exactly 1.
    cfg = EnvBenchConfig(seconds=5.0, sizes="3", num_envs=1, vector_modes="sync", repeats=2)
    rows = throughput.measure(cfg)
    keys = [(r["env"], r["B"], r["how"]) for r in rows]
    assert keys == [
        (env_id, B, how)
        for env_id in adaroll_env.ENV_IDS
        for B in (3,)
        for how in ("make", "make_vec(1, sync)")
    ]
    for r in rows:
        per_pass = 1024 if r["how"] == "make" else 256
        assert r["steps_per_s"] == r["cartpole_steps_per_s"] == 2 * per_pass / 4
        assert r["vs_cartpole"] == 1.0


def test_main_prints_the_table_it_returns(clock, capsys):
    cfg = EnvBenchConfig(seconds=5.0, sizes="2", num_envs=1, vector_modes="", repeats=1)
    rows = throughput.main(cfg)
    out = capsys.readouterr().out
    assert [r["how"] for r in rows] == ["make", "make"]
    assert "env steps per second (5 s per side and row, 1 alternating slices" in out
    assert out.count("1.00") == 2  # the vs CartPole column of both rows
    # one slice of 5 s: checks at 1..4 pass (4 × 1024 steps), the rate is read at 6 s
    # (the steps/s and CartPole steps/s columns of both rows)
    assert f"{4 * 1024 / 6:,.0f}" == "683" and out.count("683") == 4
