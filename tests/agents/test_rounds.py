"""The one round loop (agents.rounds): the plan of a step and RoundLoop, against hand-worked
cases and the rule the trainer used before it existed."""

from __future__ import annotations

import numpy as np
import pytest

import agents
from adaroll_env import model as am
from agents.rounds import RoundLoop, StepPlan, plan_step


class Script:
    """An allocator that plays a fixed list of decisions and records what it saw."""

    name = "script"
    adaptive = True

    def __init__(self, decisions):
        self.decisions = [np.asarray(d, dtype=np.int64) for d in decisions]
        self.seen: list[dict] = []
        self.resets: list[int | None] = []

    def reset(self, params, *, seed=None):
        self.resets.append(seed)
        self.k = 0

    def allocate(self, obs):
        self.seen.append({k: np.asarray(v).copy() for k, v in obs.items()})
        d = self.decisions[self.k]
        self.k += 1
        return d


def test_plan_step_round_rule_by_hand():
    # auto: two equal rounds of the budget after the pilot (512 - 1*64 = 448 -> rounds of 224)
    plan = plan_step(budget=512, batch=64, adaptive=True, pilot=1, round_schedule="auto")
    assert (plan.round_size, plan.round_schedule) == (224, ())  # equal rounds: no schedule
    # rounds given: ceil(N / rounds), no schedule; round_size given: itself
    assert plan_step(budget=512, batch=64, adaptive=True, rounds=3).round_size == 171
    assert plan_step(budget=512, batch=64, adaptive=True, round_size=100).round_size == 100
    # outcome-blind: the whole budget in one round, whatever the schedule asks
    blind = plan_step(budget=512, batch=64, adaptive=False, round_schedule="384,128")
    assert (blind.round_size, blind.round_schedule) == (512, ())
    # a learned sb3: allocator keeps rounds of B under auto
    sb3 = plan_step(budget=512, batch=64, adaptive=True, round_schedule="auto", allocator="sb3:x")
    assert (sb3.round_size, sb3.round_schedule) == (64, ())
    # a round never exceeds the budget
    assert plan_step(budget=32, batch=4, adaptive=True, round_size=100).round_size == 32


def test_plan_step_matches_the_model_rule_over_a_grid():
    """The plan is exactly ``resolve_schedule_spec`` + ``step_round_plan`` (what every caller
    computed by hand before)."""
    from adaroll_env.schedules import resolve_schedule_spec

    for adaptive in (True, False):
        for kw in ({}, {"rounds": 4}, {"round_size": 48}, {"round_schedule": "auto"},
                   {"round_schedule": "0.75,0.25"}, {"round_schedule": "96,32"}):  # fmt: skip
            for pilot in (0, 1):
                plan = plan_step(budget=128 + 16 * pilot, batch=16, adaptive=adaptive, pilot=pilot,
                                 **kw)  # fmt: skip
                spec = resolve_schedule_spec(
                    kw.get("round_schedule"), rounds=kw.get("rounds"),
                    round_size=kw.get("round_size"), budget=128,
                )  # fmt: skip
                R, sched = am.step_round_plan(
                    128 + 16 * pilot, 16, adaptive=adaptive, round_size=kw.get("round_size"),
                    rounds=kw.get("rounds"), round_schedule=spec, pilot_rollouts=16 * pilot,
                )  # fmt: skip
                assert (plan.round_size, plan.round_schedule) == (R, sched), (adaptive, kw, pilot)


def test_plan_share_and_world_check():
    plan = plan_step(budget=512, batch=64, adaptive=True, round_schedule="384,128", world=4)
    local = plan.share(4)
    assert (local.num_questions, local.budget, local.round_schedule) == (16, 128, (96, 32))
    assert plan.share(1) is plan
    with pytest.raises(ValueError, match="do not divide among 3 processes"):
        plan_step(budget=512, batch=64, adaptive=True, round_schedule="384,128", world=3)


def test_plan_params_carries_priors_and_setting():
    plan = StepPlan(num_questions=3, budget=12, pilot=1, max_group=6, utility="snr(8)",
                    round_size=9)  # fmt: skip
    p = plan.params((0.5, 1.0, 2.0), 1.0)
    assert p.prior_alpha == (0.5, 1.0, 2.0) and p.prior_beta == 1.0
    assert (p.mode, p.round_size, p.pilot, p.max_group, p.utility) == ("rounds", 9, 1, 6, "snr(8)")


def test_round_loop_runs_pilot_then_rounds_by_hand():
    """B = 2, N = 8, pilot 1, rounds of 3: pilot (1, 1), then two decisions of 3."""
    params = StepPlan(num_questions=2, budget=8, pilot=1, max_group=None, utility="informative",
                      round_size=3).params()  # fmt: skip
    calls: list[list[int]] = []

    def generate(counts):
        calls.append(counts.tolist())
        return counts  # every rollout succeeds on question 0's... and everywhere

    script = Script([[2, 1], [0, 3]])
    loop = RoundLoop(params, generate, allocator=script, seed=7)
    state = loop.run()
    assert calls == [[1, 1], [2, 1], [0, 3]]
    assert state.rollouts.tolist() == [3, 5] and state.successes.tolist() == [3, 5]
    assert (loop.decisions, loop.rounds, loop.done, script.resets) == (2, 3, True, [7])
    # the allocator saw the pilot's outcome, then the first round's
    assert script.seen[0]["rollouts"].tolist() == [1, 1]
    assert script.seen[1]["rollouts"].tolist() == [3, 2]


def test_round_loop_enforces_the_contract_naming_the_allocator():
    params = StepPlan(num_questions=2, budget=8, pilot=0, max_group=5, utility="informative",
                      round_size=4).params()  # fmt: skip
    loop = RoundLoop(params, lambda c: np.zeros_like(c), allocator=Script([[3, 0]]))
    with pytest.raises(
        agents.AllocationError, match=r"'script' \(Script\) broke .* must hand out .* 4"
    ):
        loop.decide()
    loop = RoundLoop(params, lambda c: np.zeros_like(c))
    with pytest.raises(agents.AllocationError, match="beyond its cap of 5"):
        loop.play([0, 4]), loop.play([0, 4])
    with pytest.raises(RuntimeError, match="no allocator"):
        RoundLoop(params, lambda c: c).decide()


def test_round_loop_with_a_registered_allocator_equals_the_env_episode():
    """Driving bamdp through RoundLoop with the env's binomial draws gives the env's episode."""
    import gymnasium as gym

    import adaroll_env  # noqa: F401

    env = gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=6, budget=36, round_size=12)
    params = env.unwrapped.params
    obs, _ = env.reset(seed=3)
    truth = env.unwrapped._true_p.copy()
    rng = env.unwrapped.np_random
    alloc = agents.make_allocator("bamdp", params)
    # the env's own episode, stepping with counts
    a = agents.make_allocator("bamdp", params)
    a.reset(params, seed=0)
    done = False
    while not done:
        obs, _, done, _, info = env.step(a.act(obs))
    env_counts = np.asarray(info["allocation"])
    env_succ = np.asarray(obs["successes"], dtype=np.int64)
    # the same draws through RoundLoop
    env.reset(seed=3)
    rng = env.unwrapped.np_random
    loop = RoundLoop(params, lambda c: rng.binomial(c, truth), allocator=alloc, seed=0)
    state = loop.run()
    assert state.rollouts.tolist() == env_counts.tolist()
    assert state.successes.tolist() == env_succ.tolist()


def _hand_episode(env, spec, seed, alloc_seed):
    """The env's own episode: act → step until done; (rollouts, successes, reward, decisions)."""
    a = agents.make_allocator(spec, env)
    obs, _ = env.reset(seed=seed)
    a.reset(env.unwrapped.params, seed=alloc_seed)
    total, done, decisions = 0.0, False, 0
    while not done:
        obs, reward, done, _, info = env.step(a.act(obs))
        total += float(reward)
        decisions += 1
    return info["allocation"].tolist(), obs["successes"].astype(int).tolist(), total, decisions


@pytest.mark.parametrize(
    ("env_id", "kwargs", "spec"),
    [
        ("AdaRoll/BetaBernoulli-v0", {"num_questions": 5, "budget": 20, "pilot": 1}, "variance"),
        ("AdaRoll/BetaBernoulli-v0", {"num_questions": 4, "budget": 16, "max_group": 5}, "greedy"),
        (
            "AdaRoll/BetaBernoulliRounds-v0",
            {"num_questions": 6, "budget": 36, "round_size": 12},
            "bamdp",
        ),
        (
            "AdaRoll/BetaBernoulliRounds-v0",
            {"num_questions": 4, "budget": 24, "pilot": 2, "round_schedule": "0.5,0.5"},
            "thompson",
        ),
    ],
)
def test_env_round_loop_equals_the_envs_own_episode(env_id, kwargs, spec):
    """EnvRoundLoop (what `adaroll bench` runs) plays exactly the act → step episode: the same
    counts, successes, summed reward (pilot's utility included) and decisions."""
    import gymnasium as gym

    import adaroll_env  # noqa: F401
    from agents.rounds import EnvRoundLoop

    env = gym.make(env_id, **kwargs)
    rollouts, successes, total, decisions = _hand_episode(env, spec, seed=11, alloc_seed=5)
    env.reset(seed=11)
    loop = EnvRoundLoop(env, allocator=agents.make_allocator(spec, env), seed=5)
    state = loop.run()
    assert state.rollouts.tolist() == rollouts
    assert state.successes.tolist() == successes
    assert loop.total_reward == pytest.approx(total, abs=1e-12)
    assert loop.decisions == decisions
    # the loop's state is the env's, and the env's final utility is the summed reward
    assert state == env.unwrapped.state
    assert loop.total_reward == pytest.approx(loop.info["utility"], abs=1e-9)


def test_env_round_loop_refuses_a_broken_decision_before_the_env_sees_it():
    import gymnasium as gym

    import adaroll_env  # noqa: F401
    from agents.rounds import EnvRoundLoop

    env = gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=2, budget=8, round_size=4)
    env.reset(seed=0)
    loop = EnvRoundLoop(env, allocator=Script([[3, 0]]), seed=0)
    with pytest.raises(
        agents.AllocationError, match=r"'script' \(Script\) broke .* must hand out .* 4"
    ):
        loop.run()
    assert env.unwrapped.state.spent == 0 and loop.rounds == 0


def test_an_allocator_that_asks_for_one_round_gets_one_under_the_default_rounds() -> None:
    from agents.baselines import PriorFilterAllocator
    from agents.registry import is_one_round

    # prior_filter reads the priors (adaptive: it gets a pool) but never this step's outcomes
    assert is_one_round("prior_filter") and is_one_round(PriorFilterAllocator())
    assert not any(is_one_round(s) for s in ("bamdp", "uniform", "sb3:pretrained", None))
    assert not is_one_round("no_such_allocator")  # its own construction raises, not this
    auto = plan_step(budget=512, batch=64, questions=128, adaptive=True, round_schedule="auto",
                     allocator="prior_filter")  # fmt: skip
    assert (auto.round_size, auto.round_schedule) == (512, ())
    # what the user asks for is kept: the default only
    two = plan_step(budget=512, batch=64, questions=128, adaptive=True, round_schedule="0.5,0.5",
                    allocator="prior_filter")  # fmt: skip
    assert (two.round_size, two.round_schedule) == (256, ())  # equal rounds of 256
    bamdp = plan_step(budget=512, batch=64, adaptive=True, round_schedule="auto",
                      allocator="bamdp", pilot=2)  # fmt: skip
    assert bamdp.round_size == 192  # two equal rounds after the pilot of 2 x 64


def test_the_trainers_config_resolves_one_round_for_prior_filter() -> None:
    from trainers.grpo import GRPOConfig

    cfg = GRPOConfig(allocator="prior_filter", pool_size=128, gradient_noise_every=0)
    assert cfg.schedule_spec == "1.0"
    assert GRPOConfig(allocator="bamdp", gradient_noise_every=0).schedule_spec == "0.5,0.5"
    two = GRPOConfig(allocator="prior_filter", rounds=2, gradient_noise_every=0)
    assert two.schedule_spec is None  # rounds given: they size the rounds
