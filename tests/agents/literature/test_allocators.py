import gymnasium as gym
import numpy as np
import pytest

import adaroll_env
import agents
from adaroll_env import model
from agents.literature.allocators import (
    GresoAllocator,
    KnapsackAllocator,
    PilotCommitAllocator,
    ReinforceAdaAllocator,
    VIPAllocator,
    knapsack_values,
)

IDS = list(adaroll_env.ENV_IDS)
NAMES = ["vip", "knapsack", "reinforce_ada", "pilot_commit", "greso"]


def _obs(params, successes, failures):
    return model.observe(params, model.make_state(params, successes, failures))


def _rounds(B, budget, R, **kw):
    return model.AllocationParams(num_questions=B, budget=budget, mode="rounds", round_size=R, **kw)


def _run(env, alloc, seed=0, options=None):
    obs, _ = env.reset(seed=seed, options=options)
    alloc.reset(env.unwrapped.params, seed=seed)
    done, trace = False, []
    while not done:
        counts = alloc.allocate(obs)
        trace.append(counts)
        obs, _, term, trunc, info = env.step(alloc.act(obs))
        done = term or trunc
    return trace, info


# ---------------------------------------------------------------- vip


def test_vip_allocate_follows_plan_by_deficit():
    params = _rounds(3, 15, 3)
    alloc = VIPAllocator()
    alloc.reset(params, seed=0)
    obs = _obs(params, [0, 0, 0], [0, 0, 0])
    b = alloc.beliefs(obs)
    plan = alloc.plan(b)
    assert plan.tolist() == [5, 5, 5]  # equal means: even
    assert alloc.allocate(obs).tolist() == [1, 1, 1]
    # means 0.5, 0.2, 0.8 (a = 0.25, 0.16, 0.16); base [4, 4, 4], 3 more by marginal decrease
    # a(f(t) − f(t+1)): q0 at 4 (0.0069), q0 at 5 (0.0053), q1 at 4 (0.0044, tie with q2).
    obs = _obs(params, [1, 0, 3], [1, 3, 0])
    assert alloc.plan(alloc.beliefs(obs)).tolist() == [6, 5, 4]
    # deficits [4, 2, 1] from counts [2, 3, 3]: 3 rollouts by largest remainder -> [2, 1, 0].
    assert alloc.allocate(obs).tolist() == [2, 1, 0]


# ---------------------------------------------------------------- knapsack


def test_knapsack_allocator_gives_hard_question_more():
    # Posterior means 0.5 and 1/32: a p = 0.5 group is non-degenerate almost surely by n = 8,
    # while the hard question keeps gaining — as the paper reports (big budgets on hard tasks).
    params = _rounds(2, 24, 4, prior_alpha=(1.0, 1.0), prior_beta=(1.0, 30.0))
    alloc = KnapsackAllocator()
    alloc.reset(params, seed=0)
    obs = _obs(params, [0, 0], [0, 0])
    p = alloc.beliefs(obs).mean
    split = max(range(25), key=lambda k: knapsack_values(p, np.array([k, 24 - k])).sum())
    assert alloc.plan(alloc.beliefs(obs)).tolist() == [split, 24 - split] == [8, 16]
    # first round: deficits [8, 16] -> 4 rollouts split [1, 3] (largest remainder: 1.33, 2.67).
    assert alloc.allocate(obs).tolist() == [1, 3]


# ---------------------------------------------------------------- reinforce_ada


def test_reinforce_ada_deactivates_question_with_both_outcomes():
    # k = 2; q0 at the end of a round with 1 success and 1 failure: done (balance).
    # q1 at a boundary with 2 successes only: still active. q2 fresh: active.
    # R = 3 by fewest rollouts, room to the round's end: q2 0->2 (2), then q1 (1): [0, 1, 2].
    params = _rounds(3, 12, 3)
    alloc = ReinforceAdaAllocator(round_k=2)
    alloc.reset(params, seed=0)
    obs = _obs(params, [1, 2, 0], [1, 0, 0])
    assert alloc.allocate(obs).tolist() == [0, 1, 2]
    # exit="pos": q1 (a success) is done too; q2 takes 2, the last rollout goes uniformly by
    # deficit toward [4, 4, 4]: deficits [2, 2, 2] -> the lowest index, q0.
    pos = ReinforceAdaAllocator(round_k=2, exit="pos")
    pos.reset(params, seed=0)
    assert pos.allocate(obs).tolist() == [1, 0, 2]


def test_reinforce_ada_exit_only_at_round_boundaries():
    params = _rounds(2, 40, 4)
    alloc = ReinforceAdaAllocator(round_k=4)
    alloc.reset(params, seed=0)
    # q0 has both outcomes but is mid-round (2 of 4): it finishes the round; q1 likewise.
    obs = _obs(params, [1, 0], [1, 2])
    assert alloc.allocate(obs).tolist() == [2, 2]
    # at the boundary (4) q0 stops; q1 (no success yet) starts its next round.
    obs = _obs(params, [1, 0], [3, 4])
    assert alloc.allocate(obs).tolist() == [0, 4]


def test_reinforce_ada_max_rounds_and_fallback():
    # q0 unresolved after max_rounds = 2 rounds of 2: inactive. No active question: uniform
    # by deficit toward [10, 10]: deficits [6, 6] -> split 2 rollouts [1, 1].
    params = _rounds(2, 20, 2)
    alloc = ReinforceAdaAllocator(round_k=2, max_rounds=2)
    alloc.reset(params, seed=0)
    obs = _obs(params, [0, 2], [4, 2])
    assert alloc.allocate(obs).tolist() == [1, 1]


def test_reinforce_ada_sequential_round_robin():
    env = gym.make("AdaRoll/BetaBernoulli-v0", num_questions=3, budget=9)
    alloc = agents.make_allocator("reinforce_ada", env, round_k=3)
    trace, info = _run(env, alloc)
    # first round: one each, by fewest rollouts, ties to the lower index.
    assert [int(np.argmax(c)) for c in trace[:6]] == [0, 1, 2, 0, 1, 2]
    assert info["allocation"].tolist() == [3, 3, 3]


# ---------------------------------------------------------------- pilot_commit


def test_pilot_commit_commits_only_in_band():
    # pilot 4 done (env pilot): accuracies 0, 0.25, 0.5, 1 -> band [0.125, 0.75] = {q1, q2}.
    params = _rounds(4, 24, 4, pilot=4)
    alloc = PilotCommitAllocator()
    alloc.reset(params, seed=0)
    assert alloc._pilot == 5  # min(8, (24 − 1) // 4)
    alloc = PilotCommitAllocator(pilot=4)
    alloc.reset(params, seed=0)
    obs = _obs(params, [0, 1, 2, 4], [4, 3, 2, 0])
    assert alloc.allocate(obs).tolist() == [0, 2, 2, 0]
    # the next round: still evenly among the band.
    obs = _obs(params, [0, 2, 3, 4], [4, 4, 3, 0])
    assert alloc.allocate(obs).tolist() == [0, 2, 2, 0]


def test_pilot_commit_runs_its_own_pilot_first():
    params = _rounds(3, 30, 3)
    alloc = PilotCommitAllocator(pilot=2)
    alloc.reset(params, seed=0)
    assert alloc.allocate(_obs(params, [0, 0, 0], [0, 0, 0])).tolist() == [1, 1, 1]
    # the decision that completes the pilot (q2 needs 1) commits its remainder (2) using the
    # questions whose pilot was complete: q0 at 1/2 is in band, q1 at 0/2 is not.
    assert alloc.allocate(_obs(params, [1, 0, 0], [1, 2, 1])).tolist() == [2, 0, 1]


def test_pilot_commit_spreads_evenly_when_band_is_empty():
    params = _rounds(3, 30, 4, pilot=2)
    alloc = PilotCommitAllocator(pilot=2)
    alloc.reset(params, seed=0)
    # accuracies 0, 1, 1: nobody in the band -> fewest rollouts first over all.
    assert alloc.allocate(_obs(params, [0, 2, 2], [2, 0, 0])).tolist() == [2, 1, 1]


# ---------------------------------------------------------------- greso


def test_greso_skip_frequency_matches_formula():
    # q0: easy prior, z = 2 -> skip prob 0.75; q1: easy, z = 1 -> 0.5; q2, q3 ordinary.
    params = _rounds(
        4, 32, 4, prior_alpha=(15.84, 7.92, 1.0, 1.0), prior_beta=(0.16, 0.08, 1.0, 1.0)
    )
    obs = _obs(params, [0] * 4, [0] * 4)
    alloc = GresoAllocator()
    hits = np.zeros(4)
    seeds = 1500
    for seed in range(seeds):
        alloc.reset(params, seed=seed)
        hits += alloc.skipped(alloc.beliefs(obs))
    freq = hits / seeds
    assert freq[0] == pytest.approx(0.75, abs=0.04)
    assert freq[1] == pytest.approx(0.5, abs=0.04)
    assert freq[2] == freq[3] == 0.0


def test_greso_consistent_within_an_episode():
    # q0..q2 strongly easy (skip prob 0.99), q3..q5 ordinary: every decision of the episode agrees
    # on the skipped set; skipped questions keep only the pilot; the kept share N evenly.
    strong, B = (99.0, 1.0), 6
    options = {
        "prior_alpha": [strong[0]] * 3 + [1.0] * 3,
        "prior_beta": [strong[1]] * 3 + [1.0] * 3,
    }
    for env_id in IDS:
        env = gym.make(env_id, num_questions=B, budget=48, pilot=1)
        alloc = agents.make_allocator("greso", env)
        for seed in range(4):
            trace, info = _run(env, alloc, seed=seed, options=options)
            total = np.sum(trace, axis=0)
            given = total > 0
            skipped = ~given
            assert not skipped[3:].any()
            assert skipped.sum() >= 1
            final = info["allocation"]
            assert np.all(final[skipped] == 1)
            kept = final[~skipped]
            assert kept.max() - kept.min() <= 1 and final.sum() == 48


def test_greso_all_skipped_means_none_skipped_and_seed_matters():
    params = _rounds(3, 12, 3, prior_alpha=99.0, prior_beta=1.0)
    sure = GresoAllocator(p_easy=0.0, min_explore=0.0)  # skip probability 1 for every question
    sure.reset(params, seed=0)
    obs = _obs(params, [0] * 3, [0] * 3)
    assert not sure.skipped(sure.beliefs(obs)).any()
    assert sure.allocate(obs).tolist() == [1, 1, 1]
    # half the questions skipped on average: different seeds give different sets.
    params = _rounds(8, 64, 8, prior_alpha=7.92, prior_beta=0.08)
    obs = _obs(params, [0] * 8, [0] * 8)
    alloc = GresoAllocator()
    sets = set()
    for seed in range(6):
        alloc.reset(params, seed=seed)
        sets.add(tuple(alloc.skipped(alloc.beliefs(obs))))
        alloc.reset(params, seed=seed)
        assert tuple(alloc.skipped(alloc.beliefs(obs))) in sets
    assert len(sets) > 1


# ---------------------------------------------------------------- protocol, both envs

CONFIGS = [
    {},
    {"pilot": 1, "max_group": 6, "num_questions": 5, "budget": 27},
    {
        "num_questions": 4,
        "budget": 20,
        "prior_alpha": (0.5, 30.0, 2.0, 0.2),
        "prior_beta": (0.5, 0.3, 2.0, 9.0),
        "utility": "hit",
    },
]


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("kwargs", CONFIGS, ids=["default", "pilot-cap", "priors-hit"])
def test_check_allocator_literature(env_id, name, kwargs):
    env = gym.make(env_id, **kwargs)
    agents.check_allocator(agents.make_allocator(name, env, seed=0), env)


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("name", NAMES)
def test_evaluate_policy_literature(env_id, name, evaluate_matches_replay):
    evaluate_matches_replay(
        lambda: gym.make(env_id, num_questions=6),
        lambda env: agents.make_allocator(name, env, seed=0),
        3,
    )


def test_registered_and_keyword_only():
    for name in NAMES:
        assert name in agents.list_allocators()
    env = gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=4)
    alloc = agents.make_allocator("vip", env, lower=3, upper=16)
    assert alloc.lower == 3 and alloc.upper == 16
    with pytest.raises(TypeError):
        VIPAllocator(4)  # type: ignore[misc]
    with pytest.raises(ValueError, match="exit"):
        ReinforceAdaAllocator(exit="both")  # type: ignore[arg-type]
