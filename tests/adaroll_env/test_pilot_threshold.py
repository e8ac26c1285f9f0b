"""The selective pilot (``AllocationParams.pilot_threshold``): which questions skip it, by the
definition; the first round after it hands out what was skipped, so the budget and the rounds
after it are unchanged; the envs and the rounds loop run it; bad thresholds are refused.
(The exact solver against a brute force with skipped pilots: tests/agents/bamdp/test_exact.py.)"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import adaroll_env  # noqa: F401  (registers the envs)
from adaroll_env.model import AllocationParams, pilot_counts, round_size_at
from agents.rounds import RoundLoop, plan_step


def _some_success(P: int, a: float, b: float) -> float:
    """1 − P(P failures) under Beta(a, b): 1 − B(a, b + P) / B(a, b), from lgamma."""
    log_beta = lambda x, y: math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y)  # noqa: E731
    return 1.0 - math.exp(log_beta(a, b + P) - log_beta(a, b))


@pytest.mark.parametrize("P", [1, 2, 4])
def test_a_question_skips_the_pilot_exactly_when_one_outcome_is_nearly_certain(P: int) -> None:
    alpha = (1.0, 1e-3, 9979.0, 0.23, 3.1, 0.05)
    beta = (1.0, 9979.0, 1e-3, 3.1, 0.23, 20.0)
    threshold = 0.05
    params = AllocationParams(num_questions=6, budget=64, prior_alpha=alpha, prior_beta=beta,
                              pilot=P, pilot_threshold=threshold)  # fmt: skip
    want = [
        P if min(_some_success(P, a, b), _some_success(P, b, a)) >= threshold else 0
        for a, b in zip(alpha, beta, strict=True)
    ]
    assert pilot_counts(params).tolist() == want
    assert want[:3] == [P, 0, 0] and params.pilot_rollouts == sum(want)
    # without a threshold every question gets it, whatever its prior
    assert pilot_counts(params.replace(pilot_threshold=0.0)).tolist() == [P] * 6
    assert not pilot_counts(params).flags.writeable


def test_the_first_round_after_a_skipped_pilot_takes_the_skipped_rollouts() -> None:
    params = AllocationParams(num_questions=4, budget=32, prior_alpha=(1.0, 1e-3, 1.0, 1.0),
                              prior_beta=(1.0, 9979.0, 1.0, 1.0), pilot=2, pilot_threshold=0.01,
                              mode="rounds", round_schedule=(12, 12))  # fmt: skip
    assert params.pilot_rollouts == 6  # one question skipped 2
    assert round_size_at(params, 6) == 14 and round_size_at(params, 20) == 12
    # only right after the pilot: the rule is not read before it, nor without a skip
    assert round_size_at(params, 0) == 12
    whole = params.replace(pilot_threshold=0.0)
    assert round_size_at(whole, 8) == 12 and round_size_at(whole, 0) == 12
    equal = params.replace(round_schedule=(), round_size=12)
    assert round_size_at(equal, 6) == 14 and round_size_at(equal, 20) == 12
    # sequential mode keeps one rollout a decision: the skipped ones are two more decisions
    seq = params.replace(mode="sequential", round_schedule=(), round_size=1)
    assert round_size_at(seq, 6) == 1
    # the cap counts the others' pilots whole, skipped or not: it does not move with the priors
    assert params.cap == 32 - 2 * 3
    assert "pilot_threshold" in params.to_dict()
    assert "pilot_threshold" not in params.replace(pilot_threshold=0.0).to_dict()


@pytest.mark.parametrize("bad", [-0.1, 1.0, 2, "0.1", True, math.nan])
def test_a_threshold_that_is_not_a_probability_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match=r"pilot_threshold must be a probability in \[0, 1\)"):
        AllocationParams(num_questions=2, pilot=1, pilot_threshold=bad)  # type: ignore[arg-type]


def test_the_rounds_env_runs_the_selective_pilot_and_passes_check_env() -> None:
    kw = dict(num_questions=8, budget=64, pilot=2, pilot_threshold=0.01, round_schedule="0.5,0.5",
              utility="snr(8)", prior_alpha=(1.0,) * 6 + (1e-3, 1e-3),
              prior_beta=(1.0,) * 6 + (9979.0, 9979.0))  # fmt: skip
    env = gym.make("AdaRoll/BetaBernoulliRounds-v0", **kw)
    obs, _ = env.reset(seed=3)
    assert obs["rollouts"].tolist() == [2] * 6 + [0, 0]
    assert int(obs["budget_left"][0]) == 64 - 12
    check_env(env.unwrapped, skip_render_check=True)
    seq = gym.make("AdaRoll/BetaBernoulli-v0",
                   **{k: v for k, v in kw.items() if k != "round_schedule"})  # fmt: skip
    obs, _ = seq.reset(seed=3)
    assert obs["rollouts"].tolist() == [2] * 6 + [0, 0]


def test_the_rounds_loop_spends_the_budget_in_the_planned_number_of_rounds() -> None:
    plan = plan_step(budget=64, batch=8, adaptive=True, pilot=2, pilot_threshold=0.01,
                     round_schedule="0.5,0.5")  # fmt: skip
    assert plan.round_size == 24  # two equal rounds, planned after the whole pilot of 16
    params = plan.params((1.0,) * 6 + (1e-3, 1e-3), (1.0,) * 6 + (9979.0, 9979.0))
    rng = np.random.default_rng(0)
    sizes: list[int] = []

    def generate(counts: np.ndarray) -> np.ndarray:
        sizes.append(int(counts.sum()))
        return rng.binomial(counts, 0.5)

    loop = RoundLoop(params, generate, allocator=None)
    loop.pilot()
    while not loop.done:
        n = loop.next_round_size
        loop.play(np.bincount(np.arange(n) % 6, minlength=8))
    assert sizes == [12, 28, 24] and loop.state.spent == 64
    assert loop.state.rollouts[6:].tolist() == [0, 0]
