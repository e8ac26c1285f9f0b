"""Tests of agents.benchmarks.statistics: the summary rows of hand-made episode records (paired
gains, CIs, mechanism columns, costs) and the certified bound of Beta Bayes settings."""

from __future__ import annotations

import math

import pytest

from adaroll_env.stats import mean_ci
from agents.bamdp.bound import certified_bound, upper_bound
from agents.benchmarks.config import BenchConfig, Setting, env_kwargs, make_env, settings
from agents.benchmarks.statistics import bayes_bound, summarise


def _cfg(tmp_path, **kw):
    base = dict(
        allocators="uniform,random",
        envs="rounds",
        difficulties="rlvr",
        utilities="hit",
        num_questions=2,
        group_sizes="4",
        episodes=3,
        workers=1,
        out=str(tmp_path),
        progress=False,
    )
    base.update(kw)
    return BenchConfig(**base)


def _record(episode, utility, *, grad=0.0, prompts=0.0, decisions=1, seconds=(0.001, 0.5)):
    return {
        "episode": episode,
        "utility": utility,
        "gradient_rollouts": grad,
        "informative_prompts": prompts,
        "informative_frac": prompts / 2,
        "decisions": decisions,
        "decision_seconds": seconds[0],
        "episode_seconds": seconds[1],
        "rollouts_by_mean": [4.0, 0.0, 4.0],
        "questions_by_mean": [1, 0, 1],
    }


def test_summary_rows_by_hand(tmp_path):
    cfg = _cfg(tmp_path)
    (setting,) = settings(cfg)
    results = {
        (setting, "uniform"): [
            _record(i, u, grad=8.0, prompts=2.0) for i, u in enumerate([1, 2, 3])
        ],
        # listed out of order: rows are paired by episode index, not by position
        (setting, "random"): [
            _record(2, 5.0, grad=4.0, prompts=1.0, decisions=3, seconds=(0.004, 1.0)),
            _record(0, 2.0, grad=0.0, prompts=0.0, decisions=2, seconds=(0.002, 1.0)),
            _record(1, 2.0, grad=8.0, prompts=2.0, decisions=1, seconds=(0.003, 2.0)),
        ],
    }
    rows = summarise(results, cfg, exact={(setting, "uniform"): 1.75})
    assert [r["allocator"] for r in rows] == ["uniform", "random"]
    uni, rnd = rows
    assert uni["mean_utility"] == 2.0 and uni["ci95"] == pytest.approx(mean_ci([1, 2, 3])[1])
    assert uni["gain"] == 0.0 and uni["exact_value"] == 1.75
    # random − uniform by episode: 2 − 1, 2 − 2, 5 − 3 = 1, 0, 2
    assert rnd["gain"] == pytest.approx(1.0)
    assert rnd["gain_ci95"] == pytest.approx(mean_ci([1.0, 0.0, 2.0])[1])
    assert rnd["gain_pct"] == pytest.approx(50.0)
    assert rnd["mean_utility"] == pytest.approx(3.0)
    assert rnd["gradient_rollouts"] == pytest.approx(4.0)
    assert rnd["gradient_rollouts_ci95"] == pytest.approx(mean_ci([0.0, 8.0, 4.0])[1])
    assert rnd["informative_prompts"] == pytest.approx(1.0)
    assert rnd["informative_frac"] == pytest.approx(0.5)
    assert rnd["decisions"] == pytest.approx(2.0)
    assert rnd["ms_per_batch"] == pytest.approx(3.0)
    assert rnd["episodes_per_s"] == pytest.approx(3 / 4.0)
    assert rnd["exact_value"] is None and rnd["bound"] is None
    assert math.isnan(rnd["gap_pct"]) and math.isnan(rnd["gap_ci_pct"])
    # rollouts per question in each mean bin: (3 · 4) / (3 · 1), none in an empty bin
    assert rnd["rollouts_by_mean"] == [4.0, 0.0, 4.0]
    assert (rnd["setting"], rnd["env"], rnd["difficulty"], rnd["utility_name"]) == (
        "rounds/rlvr/hit/G=4", "rounds", "rlvr", "hit",
    )  # fmt: skip
    assert rnd["group_size"] == 4 and rnd["rounds"] is None and rnd["episodes"] == 3
    assert rnd["round_size"] == 2  # R = B in the rounds env
    assert rnd["reference_only"] is False


def test_round_size_column_of_schedules_and_the_sequential_env(tmp_path):
    cfg = _cfg(tmp_path, allocators="uniform", rounds="2,6+2")
    results = {(s, "uniform"): [_record(0, 1.0), _record(1, 2.0)] for s in settings(cfg)}
    rows = summarise(results, cfg)
    assert [(r["rounds"], r["round_size"]) for r in rows] == [(2, 4), ("6+2", 6)]
    seq = _cfg(tmp_path, allocators="oracle", envs="sequential")
    (setting,) = settings(seq)
    results = {(setting, a): [_record(0, 1.0), _record(1, 3.0)] for a in ("uniform", "oracle")}
    rows = summarise(results, seq)
    assert [r["round_size"] for r in rows] == [1, 1]
    assert [r["reference_only"] for r in rows] == [False, True]


def test_bayes_bound_only_in_a_single_beta_matched_setting(tmp_path):
    cfg = _cfg(tmp_path, difficulties="beta(0.5,0.5)")
    setting = Setting("rounds", "beta(0.5,0.5)", "hit", 4)
    env = make_env("rounds", env_kwargs(cfg, setting))
    params = env.unwrapped.params
    want = certified_bound(params)  # rounds-aware in the rounds env: tighter than one price
    assert bayes_bound(cfg, setting) == pytest.approx(want, abs=1e-12)
    assert want < upper_bound(params) - 1e-3
    assert bayes_bound(cfg, Setting("rounds", "rlvr", "hit", 4)) is None  # a mixture
    other = _cfg(tmp_path, difficulties="beta(0.5,0.5)", belief="1,1")
    assert bayes_bound(other, setting) is None  # the belief is not the truth's prior


def test_gap_to_the_bound(tmp_path):
    cfg = _cfg(tmp_path, allocators="uniform", difficulties="beta(0.5,0.5)")
    (setting,) = settings(cfg)
    rows = summarise({(setting, "uniform"): [_record(0, 1.0), _record(1, 1.2)]}, cfg)
    bound = bayes_bound(cfg, setting)
    (row,) = rows
    assert row["bound"] == bound
    assert row["gap_pct"] == pytest.approx(100 * (bound - 1.1) / bound)
    assert row["gap_ci_pct"] == pytest.approx(100 * mean_ci([1.0, 1.2])[1] / bound)
