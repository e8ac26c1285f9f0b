import gymnasium as gym
import numpy as np
import pytest

import adaroll_env
import agents

IDS = list(adaroll_env.ENV_IDS)


def _run(env, allocator, seed=0):
    obs, _ = env.reset(seed=seed)
    allocator.reset(env.unwrapped.params, seed=seed)
    actions, done = [], False
    while not done:
        a = allocator.act(obs)
        actions.append(a)
        obs, _, term, trunc, info = env.step(a)
        done = term or trunc
    return actions, info


def test_uniform_sequential_hand_worked():
    # B=3, N=7: target [3, 2, 2]; largest deficit first, ties to the lower index.
    env = gym.make("AdaRoll/BetaBernoulli-v0", num_questions=3, budget=7)
    actions, info = _run(env, agents.make_allocator("uniform", env))
    assert actions == [0, 0, 1, 2, 0, 1, 2]
    assert info["allocation"].tolist() == [3, 2, 2]


def test_uniform_rounds_hand_worked():
    # R=3, N=7: rounds [1,1,1], [1,1,1], then the last rollout to question 0.
    env = gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=3, budget=7, round_size=3)
    alloc = agents.make_allocator("uniform", env)
    obs, _ = env.reset(seed=0)
    rounds = []
    done = False
    while not done:
        counts = alloc.allocate(obs)
        rounds.append(counts.tolist())
        obs, _, done, _, info = env.step(alloc.act(obs))
    assert rounds == [[1, 1, 1], [1, 1, 1], [1, 0, 0]]
    assert info["allocation"].tolist() == [3, 2, 2]


def test_uniform_after_pilot_and_cap():
    env = gym.make(
        "AdaRoll/BetaBernoulliRounds-v0", num_questions=4, budget=20, pilot=2, max_group=5
    )
    _, info = _run(env, agents.make_allocator("uniform", env))
    assert info["allocation"].tolist() == [5, 5, 5, 5]


def test_uniform_equals_grpo_groups():
    env = gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=16, budget=128)
    _, info = _run(env, agents.make_allocator("uniform", env))
    assert info["allocation"].tolist() == [8] * 16


def test_random_respects_caps_and_is_spread():
    env = gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=4, budget=40, max_group=12)
    alloc = agents.make_allocator("random", env, seed=3)
    totals = np.zeros(4)
    for seed in range(30):
        _, info = _run(env, alloc, seed=seed)
        assert info["allocation"].max() <= 12
        assert info["allocation"].sum() == 40
        totals += info["allocation"]
    # Symmetric in the questions: each gets about a quarter of the rollouts.
    assert np.all(np.abs(totals / totals.sum() - 0.25) < 0.03)


def test_random_sequential_picks_only_feasible():
    env = gym.make("AdaRoll/BetaBernoulli-v0", num_questions=3, budget=9, max_group=3)
    _, info = _run(env, agents.make_allocator("random", env, seed=1))
    assert info["allocation"].tolist() == [3, 3, 3]


def test_random_depends_on_seed_only():
    env = gym.make("AdaRoll/BetaBernoulli-v0", num_questions=8)
    a1, _ = _run(env, agents.make_allocator("random", env), seed=5)
    a2, _ = _run(env, agents.make_allocator("random", env), seed=5)
    a3, _ = _run(env, agents.make_allocator("random", env), seed=6)
    assert a1 == a2
    assert a1 != a3


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("name", ["uniform", "random"])
@pytest.mark.parametrize(
    "kwargs", [{}, {"pilot": 1, "max_group": 6, "num_questions": 5, "budget": 27}]
)
def test_check_allocator_builtins(env_id, name, kwargs):
    env = gym.make(env_id, **kwargs)
    agents.check_allocator(agents.make_allocator(name, env, seed=0), env)


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("name", ["uniform", "random"])
def test_evaluate_policy(env_id, name, evaluate_matches_replay):
    returns = evaluate_matches_replay(
        lambda: gym.make(env_id, num_questions=6, budget=48),
        lambda env: agents.make_allocator(name, env, seed=0),
        5,
    )
    if name == "uniform":  # every question ends with 48 / 6 = 8 rollouts: checked by hand
        env = gym.make(env_id, num_questions=6, budget=48)
        alloc = agents.make_allocator(name, env, seed=0)
        obs, _ = env.reset(seed=1)
        done = False
        while not done:
            obs, _, done, _, info = env.step(alloc.act(obs))
        assert np.asarray(info["allocation"]).tolist() == [8] * 6
    assert len(returns) == 5


def _rounds_obs(alpha, beta, budget):
    n = len(alpha)
    return {
        "alpha": np.asarray(alpha, dtype=np.float32),
        "beta": np.asarray(beta, dtype=np.float32),
        "successes": np.zeros(n, dtype=np.float32),
        "rollouts": np.zeros(n, dtype=np.float32),
        "budget_left": np.array([budget], dtype=np.float32),
    }


def test_degenerate_probabilities_match_the_beta_binomial():
    from agents.baselines import degenerate_probabilities

    # Beta(1, 1): every count of G = 3 is equally likely, 1/4 each
    wrong, right = degenerate_probabilities(np.array([1.0]), np.array([1.0]), 3)
    assert wrong[0] == pytest.approx(0.25) and right[0] == pytest.approx(0.25)
    # Beta(2, 1): P(all wrong of 2) = E[(1-p)^2] = 2 * B(2, 3) = 1/6
    wrong, right = degenerate_probabilities(np.array([2.0]), np.array([1.0]), 2)
    assert wrong[0] == pytest.approx(1 / 6) and right[0] == pytest.approx(1 / 2)


def test_prior_filter_gives_groups_to_kept_questions_only_in_a_seeded_order():
    # 6 questions, budget 3 groups of 4: question 1 is hopeless, 3 solved; the rest are kept
    alpha = [1.0, 0.02, 1.0, 50.0, 1.0, 1.0]
    beta = [1.0, 40.0, 1.0, 0.02, 1.0, 1.0]
    env = gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=6, budget=12, round_size=12)
    alloc = agents.make_allocator("prior_filter", env, group=4)
    picked = []
    for seed in range(40):
        alloc.reset(env.unwrapped.params, seed=seed)
        counts = alloc.allocate(_rounds_obs(alpha, beta, 12))
        assert sorted(counts.tolist()) == [0, 0, 0, 4, 4, 4]
        assert counts[1] == counts[3] == 0  # the filtered never get a group here
        picked.append(tuple(np.flatnonzero(counts)))
        alloc.reset(env.unwrapped.params, seed=seed)  # the same seed, the same choice
        assert tuple(np.flatnonzero(alloc.allocate(_rounds_obs(alpha, beta, 12)))) == picked[-1]
    assert len(set(picked)) == 4  # every 3 of the 4 kept questions, not always the first
    assert alloc.filtered(np.array(alpha), np.array(beta)).tolist() == [
        False,
        True,
        False,
        True,
        False,
        False,
    ]


def test_prior_filter_favours_no_position_of_the_pool():
    """A trainer's pool is sorted by prompt id: with nothing filtered, every position must be
    picked about as often, or a run trains on the low ids only (as before 2026-12-07)."""
    n, groups = 16, 8
    env = gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=n, budget=4 * groups,
                   round_size=4 * groups)  # fmt: skip
    alloc = agents.make_allocator("prior_filter", env, group=4)
    hits = np.zeros(n)
    for seed in range(400):
        alloc.reset(env.unwrapped.params, seed=seed)
        hits += alloc.allocate(_rounds_obs([1.0] * n, [1.0] * n, 4 * groups)) > 0
    share = hits / 400
    assert share[: n // 2].mean() == pytest.approx(0.5, abs=0.05)
    assert share[n // 2 :].mean() == pytest.approx(0.5, abs=0.05)


def test_prior_filter_spends_the_budget_when_too_few_are_kept():
    # only question 2 is kept: it gets its group, then the least degenerate filtered one
    alpha = [0.02, 0.5, 1.0]
    beta = [40.0, 30.0, 1.0]
    env = gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=3, budget=8, round_size=8)
    alloc = agents.make_allocator("prior_filter", env, group=4)
    alloc.reset(env.unwrapped.params, seed=0)
    counts = alloc.allocate(_rounds_obs(alpha, beta, 8))
    assert counts.tolist() == [0, 4, 4]
    assert int(counts.sum()) == 8


def test_prior_filter_warns_once_when_it_cannot_filter():
    """With as many groups as questions it is uniform: a user without a pool is told so, once;
    with a pool (more questions than budget/group) it is silent."""
    import warnings

    env = gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=4, budget=16, round_size=16)
    with pytest.warns(UserWarning, match="reaches all 4 questions.*pool_size 2·B"):
        alloc = agents.make_allocator("prior_filter", env, group=4)  # built from an env: reset
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        alloc.reset(env.unwrapped.params, seed=1)  # once per allocator
        pooled = gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=8, budget=16,
                          round_size=16)  # fmt: skip
        agents.make_allocator("prior_filter", pooled, group=4).reset(pooled.unwrapped.params)


def test_prior_filter_refuses_a_bad_threshold():
    with pytest.raises(ValueError, match="threshold must be in"):
        from agents.baselines import PriorFilterAllocator

        PriorFilterAllocator(threshold=0.0)
