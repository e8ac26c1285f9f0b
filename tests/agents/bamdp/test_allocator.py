import math

import gymnasium as gym
import numpy as np
import pytest

import agents
from adaroll_env import AllocationParams
from agents.bamdp import cache as bamdp_cache
from agents.bamdp import upper_bound
from agents.policy_value import exact_value

UTILITIES = ["informative", "hit", "grpo_signal", "dr_grpo_signal"]


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ADAROLL_CACHE_DIR", str(tmp_path / "cache"))
    bamdp_cache.clear_memory()
    yield
    bamdp_cache.clear_memory()


@pytest.mark.parametrize("env_id", ["AdaRoll/BetaBernoulli-v0", "AdaRoll/BetaBernoulliRounds-v0"])
@pytest.mark.parametrize("kw", [{}, {"pilot": 1, "max_group": 6}, {"utility": "grpo_signal"}])
def test_check_allocator(env_id, kw):
    env = gym.make(env_id, num_questions=6, budget=30, **kw)
    agents.check_allocator(agents.make_allocator("bamdp", env, exact=False), env)


def test_evaluate_policy_runs(evaluate_matches_replay):
    evaluate_matches_replay(
        lambda: gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=8),
        lambda env: agents.make_allocator("bamdp", env),
        4,
    )


def test_sequential_fast_path_matches_full_recompute():
    env = gym.make(
        "AdaRoll/BetaBernoulli-v0", num_questions=12, budget=80, max_group=10, difficulty=(0.4, 0.6)
    )
    fast = agents.make_allocator("bamdp", env, exact=False)
    slow = agents.make_allocator("bamdp", env, exact=False)
    for seed in range(3):
        obs, _ = env.reset(seed=seed)
        done = False
        while not done:
            a = fast.act(obs)
            slow._seq = None  # forget the cache: decide from scratch
            assert a == slow.act(obs)
            obs, _, done, _, _ = env.step(a)


def test_round_rows_memo_matches_full_recompute():
    """The per-episode memo of expected-index rows never changes a round's decision, and the
    table bank kept across resets gives the same decisions as a fresh allocator."""
    rng = np.random.default_rng(3)
    env = gym.make(
        "AdaRoll/BetaBernoulliRounds-v0",
        num_questions=16,
        budget=128,
        round_size=16,
        utility="snr(8)",
    )
    fast = agents.make_allocator("bamdp", env, exact=False)
    for seed in range(2):
        # distinct per-question priors: the interpolation grid's path
        a = tuple(np.round(10.0 ** rng.uniform(-0.4, 0.1, 16), 4).tolist())
        b = tuple(np.round(10.0 ** rng.uniform(-0.4, 0.1, 16), 4).tolist())
        obs, _ = env.reset(seed=seed, options={"prior_alpha": a, "prior_beta": b})
        done = False
        while not done:
            action = fast.act(obs)
            slow = agents.make_allocator("bamdp", env, exact=False)  # no memo, no bank
            np.testing.assert_array_equal(fast.allocate(obs), slow.allocate(obs))
            obs, _, done, _, _ = env.step(action)


def test_a_round_equals_the_top_r_of_full_width_rows():
    """A large round that piles rollouts on a few questions (priors that make most hopeless or
    solved) grows rows only where needed; its decision is the R largest expected indices of
    rows computed at the full width for every question."""
    from agents.bamdp.allocator import _expected_rows

    rng = np.random.default_rng(5)
    pairs = np.array([(0.05, 3.0), (3.0, 0.05), (0.6, 0.5), (0.2, 0.2)])  # four tables
    for seed in range(3):
        pick = pairs[rng.choice(4, size=32, p=[0.45, 0.45, 0.05, 0.05])]  # few viable
        a, b = pick[:, 0], pick[:, 1]
        env = gym.make(
            "AdaRoll/BetaBernoulliRounds-v0",
            num_questions=32,
            budget=256,
            round_size=128,
            utility="snr(8)",
        )
        alloc = agents.make_allocator("bamdp", env, exact=False, round_policy="index")
        obs, _ = env.reset(seed=seed, options={"prior_alpha": tuple(a), "prior_beta": tuple(b)})
        counts = alloc.allocate(obs)
        beliefs = alloc.beliefs(obs)
        tables = alloc.tables_for_obs(beliefs)
        width = int(min(128, beliefs.capacity.max()))
        rows = np.arange(32)
        E = _expected_rows(beliefs, tables, width, rows)
        q = np.repeat(rows, width)
        order = np.lexsort((q, -E.ravel()))[:128]
        np.testing.assert_array_equal(counts, np.bincount(q[order], minlength=32))
        assert counts.max() >= 16  # a question took all 16 first slots: its row had to grow


def test_per_episode_priors_from_the_observation():
    env = gym.make(
        "AdaRoll/BetaBernoulli-v0", num_questions=2, budget=4, prior_alpha=1.0, prior_beta=1.0
    )
    alloc = agents.make_allocator("bamdp", env, exact=False)
    # Question 0 is believed nearly solved, question 1 uncertain: the uncertain one goes first.
    obs, _ = env.reset(seed=0, options={"prior_alpha": (50.0, 1.0), "prior_beta": (0.1, 1.0)})
    assert alloc.act(obs) == 1
    obs, _ = env.reset(seed=0, options={"prior_alpha": (1.0, 50.0), "prior_beta": (1.0, 0.1)})
    assert alloc.act(obs) == 0


def test_rounds_spend_exactly_and_prefer_uncertain_questions():
    env = gym.make(
        "AdaRoll/BetaBernoulliRounds-v0",
        num_questions=3,
        budget=12,
        round_size=6,
        prior_alpha=(30.0, 1.0, 0.3),
        prior_beta=(0.3, 1.0, 30.0),
    )
    alloc = agents.make_allocator("bamdp", env, exact=False)
    obs, _ = env.reset(seed=0)
    counts = alloc.allocate(obs)
    assert counts.sum() == 6
    assert counts[1] == counts.max()  # the Beta(1, 1) question is where the signal is


def test_bamdp_beats_uniform_in_the_bayes_setting():
    from agents.benchmarks import mean_ci, run_episodes

    env = gym.make(
        "AdaRoll/BetaBernoulliRounds-v0", num_questions=16, budget=128, difficulty=(0.3, 0.3)
    )
    uni = [r["utility"] for r in run_episodes(env, "uniform", range(150), 0)]
    bam = [r["utility"] for r in run_episodes(env, "bamdp", range(150), 0)]
    gain, ci = mean_ci(np.subtract(bam, uni))
    assert gain - ci > 0
    assert np.mean(bam) <= upper_bound(env.unwrapped.params) + 3 * np.std(bam) / math.sqrt(150)


@pytest.mark.parametrize(
    ("mode", "R", "utility", "pilot", "cap"),
    [
        ("sequential", 1, "informative", 0, None),
        ("sequential", 1, "grpo_signal", 1, None),
        ("sequential", 1, "hit", 0, 4),
        ("rounds", 2, "informative", 1, None),
        ("rounds", 3, "dr_grpo_signal", 0, 5),
    ],
)
def test_policy_reaches_the_optimum_on_small_instances(mode, R, utility, pilot, cap):
    from agents.bamdp.exact import solve_exact

    p = AllocationParams(
        num_questions=3,
        budget=10,
        mode=mode,
        round_size=R,
        prior_alpha=0.5,
        prior_beta=0.7,
        utility=utility,
        pilot=pilot,
        max_group=cap,
    )
    alloc = agents.make_allocator("bamdp", p)
    assert alloc._use_exact
    assert exact_value(alloc, p, (0.5, 0.7)) == pytest.approx(solve_exact(p).value, abs=1e-9)


def test_exact_policy_with_per_episode_priors():
    from agents.bamdp.exact import solve_exact

    p = AllocationParams(num_questions=2, budget=6, prior_alpha=1.0, prior_beta=1.0)
    alloc = agents.make_allocator("bamdp", p)
    q = p.replace(prior_alpha=(0.5, 2.0), prior_beta=(0.5, 1.0))
    env = gym.make(
        "AdaRoll/BetaBernoulli-v0", num_questions=2, budget=6, prior_alpha=1.0, prior_beta=1.0
    )
    obs, _ = env.reset(seed=0, options={"prior_alpha": (0.5, 2.0), "prior_beta": (0.5, 1.0)})
    expected = solve_exact(q).action(np.zeros(2, int), np.zeros(2, int))
    assert np.array_equal(alloc.allocate(obs), expected)


def test_large_instances_use_the_index_policy():
    p = AllocationParams(num_questions=64, budget=512)
    assert not agents.make_allocator("bamdp", p)._use_exact


def test_round_value_curves_are_what_the_round_maximises():
    """``round_value_curves``: bamdp's relaxed round maximises the sum of the questions' curves
    at their counts (an exact split of the curves reaches the same value), −inf past what a
    question may take; None where rollouts go one at a time."""
    import adaroll_env
    from agents.bamdp.rounds import split_round_exact
    from agents.registry import make_allocator

    gym.register_envs(adaroll_env)
    env = gym.make("AdaRoll/BetaBernoulliRounds-v0", num_questions=8, budget=64,
                   difficulty="rlvr", utility="snr(8)")  # fmt: skip
    alloc = make_allocator("bamdp", env)
    decisions = 0
    for seed in range(3):
        obs, _ = env.reset(seed=seed)
        done = False
        while not done:
            curves = alloc.round_value_curves(obs)
            counts = alloc.allocate(obs)
            assert curves is not None and curves.shape[0] == 8
            best = split_round_exact(curves, int(counts.sum()))
            rows = np.arange(8)
            assert curves[rows, counts].sum() == pytest.approx(curves[rows, best].sum())
            assert np.all(np.isfinite(curves[rows, counts]))
            obs, _, done, _, _ = env.step(adaroll_env.encode_counts(counts))
            decisions += 1
    assert decisions == 3 * 8
    seq = gym.make("AdaRoll/BetaBernoulli-v0", num_questions=4, budget=16)
    one = make_allocator("bamdp", seq)
    obs, _ = seq.reset(seed=0)
    assert one.round_value_curves(obs) is None
