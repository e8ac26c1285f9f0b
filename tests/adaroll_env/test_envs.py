"""Tests of the simulated envs AdaRoll/BetaBernoulli-v0 and AdaRoll/BetaBernoulliRounds-v0.

One file of about 550 lines on purpose: both envs share the fixtures and the checker runs, and
each test is short; splitting by env would duplicate the shared parametrisations.
"""

from __future__ import annotations

import math
import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import adaroll_env
from adaroll_env import encode_counts, fit_beta
from adaroll_env.model import observe, utility_value
from adaroll_env.priors import apply_drift

SEQ = "AdaRoll/BetaBernoulli-v0"
ROUNDS = "AdaRoll/BetaBernoulliRounds-v0"
IDS = (SEQ, ROUNDS)

KWARGS = [
    {},
    {"num_questions": 5, "budget": 23, "pilot": 2, "max_group": 7},
    {"utility": "grpo_signal"},
    {"reveal_truth": True},
    {"reward_mode": "terminal"},
    {"render_mode": "ansi", "pilot": 1},
]


def _policy(env_id, rng, env):
    """A random feasible action for either env kind."""
    u = env.unwrapped
    if env_id == SEQ:
        return int(rng.choice(np.flatnonzero(u.action_masks())))
    return rng.uniform(-1, 1, u.params.num_questions).astype(np.float32)


def _run_episode(env, env_id, seed, action_seed=0):
    """Reset with ``seed`` and play to the end; return (rewards, last info, steps)."""
    rng = np.random.default_rng(action_seed)
    env.reset(seed=seed)
    rewards, steps, done = [], 0, False
    while not done:
        _, r, terminated, truncated, info = env.step(_policy(env_id, rng, env))
        rewards.append(r)
        steps += 1
        assert not truncated
        done = terminated
    return rewards, info, steps


def test_ids_registered():
    assert set(IDS) <= set(gym.registry)
    assert adaroll_env.ENV_IDS == IDS


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("kwargs", KWARGS, ids=lambda kw: ",".join(kw) or "default")
def test_checkers(env_id, kwargs):
    env = gym.make(env_id, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any checker warning fails the test; none is filtered
        gym_check_env(env.unwrapped)
        sb3_check_env(env)
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_make_with_module_prefix(env_id):
    env = gym.make(f"adaroll_env:{env_id}", num_questions=3, budget=9)
    obs, _ = env.reset(seed=0)
    assert obs["alpha"].shape == (3,)
    assert env.unwrapped.params.num_questions == 3
    assert isinstance(env.unwrapped.params, adaroll_env.AllocationParams)


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_make_vec(env_id, mode):
    envs = gym.make_vec(
        env_id, num_envs=3, vectorization_mode=mode, num_questions=4, budget=16, pilot=1
    )
    try:
        envs.action_space.seed(0)
        obs, _ = envs.reset(seed=0)
        assert obs["alpha"].shape == (3, 4)
        np.testing.assert_array_equal(obs["budget_left"], [[12.0]] * 3)
        finished = 0
        for _ in range(300):
            obs, rew, term, trunc, _ = envs.step(envs.action_space.sample())
            assert obs["alpha"].shape == (3, 4) and rew.shape == (3,)
            assert np.all(np.isfinite(rew)) and not trunc.any()
            finished += int(term.sum())
            for i in range(3):
                assert envs.single_observation_space.contains({k: v[i] for k, v in obs.items()})
        # sequential: 12 steps per episode (+1 autoreset step); rounds: 3 (+1)
        assert finished >= 3 * (300 // (14 if env_id == SEQ else 5))
    finally:
        envs.close()


@pytest.mark.parametrize("env_id", IDS)
def test_pickle_mid_episode(env_id):
    env = gym.make(env_id, num_questions=4, budget=40, pilot=1, reveal_truth=True)
    rng = np.random.default_rng(1)
    env.reset(seed=11)
    for _ in range(3):
        env.step(_policy(env_id, rng, env))
    clone = pickle.loads(pickle.dumps(env))
    for _ in range(3):
        action = _policy(env_id, rng, env)
        o1, r1, t1, _, i1 = env.step(action)
        o2, r2, t2, _, i2 = clone.step(action)
        assert r1 == r2 and t1 == t2
        for key in o1:
            np.testing.assert_array_equal(o1[key], o2[key])
        np.testing.assert_array_equal(i1["allocation"], i2["allocation"])
        np.testing.assert_array_equal(i1["true_p"], i2["true_p"])
    # the unwrapped env pickles too, and keeps its params
    raw = pickle.loads(pickle.dumps(env.unwrapped))
    assert raw.params == env.unwrapped.params


@pytest.mark.parametrize("env_id", IDS)
def test_seeded_determinism(env_id):
    kwargs = {"num_questions": 5, "budget": 30, "pilot": 1, "reveal_truth": True}
    e1, e2 = gym.make(env_id, **kwargs), gym.make(env_id, **kwargs)
    o1, i1 = e1.reset(seed=123)
    o2, i2 = e2.reset(seed=123)
    rng = np.random.default_rng(0)
    done = False
    while True:
        for key in o1:
            np.testing.assert_array_equal(o1[key], o2[key])
        assert i1.keys() == i2.keys()
        for key in i1:
            np.testing.assert_array_equal(i1[key], i2[key])
        if done:
            break
        action = _policy(env_id, rng, e1)
        o1, r1, done, _, i1 = e1.step(action)
        o2, r2, _, _, i2 = e2.step(action)
        assert r1 == r2
    # a different seed gives a different episode
    o3, _ = e1.reset(seed=124)
    o4, _ = e2.reset(seed=123)
    assert not np.array_equal(o3["true_p"], o4["true_p"])


@pytest.mark.parametrize("env_id", IDS)
def test_reset_same_seed_twice(env_id):
    env = gym.make(env_id, num_questions=6, budget=30, pilot=2)
    o1, _ = env.reset(seed=42)
    env.step(env.action_space.sample())
    o2, _ = env.reset(seed=42)
    for key in o1:
        np.testing.assert_array_equal(o1[key], o2[key])


# --- pilot, rewards, episode length -----------------------------------------------------------


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("pilot", [0, 1, 3])
def test_pilot(env_id, pilot):
    env = gym.make(env_id, num_questions=4, budget=20, pilot=pilot)
    obs, info = env.reset(seed=3)
    np.testing.assert_array_equal(obs["budget_left"], [20 - pilot * 4])
    np.testing.assert_array_equal(obs["rollouts"], [pilot] * 4)
    np.testing.assert_array_equal(info["allocation"], [pilot] * 4)
    assert np.all(obs["successes"] <= pilot)
    u = env.unwrapped
    assert info["utility"] == utility_value(u.params, u.state)
    np.testing.assert_allclose(obs["alpha"] - obs["successes"], u.params.prior_alpha, rtol=1e-6)


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("reward_mode", ["dense", "terminal"])
@pytest.mark.parametrize("utility", ["informative", "grpo_signal", "hit"])
def test_return_equals_final_utility(env_id, reward_mode, utility):
    env = gym.make(
        env_id, num_questions=5, budget=27, pilot=2, reward_mode=reward_mode, utility=utility
    )
    for seed in range(4):
        rewards, info, steps = _run_episode(env, env_id, seed, action_seed=seed)
        u = env.unwrapped
        final = utility_value(u.params, u.state)
        assert info["utility"] == pytest.approx(final, abs=1e-12)
        assert sum(rewards) == pytest.approx(final, abs=1e-9)
        if reward_mode == "terminal":
            assert all(r == 0.0 for r in rewards[:-1])
        want_steps = 27 - 10 if env_id == SEQ else math.ceil((27 - 10) / 5)
        assert steps == want_steps
        assert int(np.sum(info["allocation"])) == 27


def test_dense_reward_is_utility_increase():
    env = gym.make(SEQ, num_questions=3, budget=12, pilot=1)
    _, info = env.reset(seed=0)
    prev = info["utility"]
    pilot_u = prev
    first = True
    rng = np.random.default_rng(0)
    done = False
    while not done:
        _, r, done, _, info = env.step(int(rng.integers(3)))
        want = info["utility"] - prev + (pilot_u if first else 0.0)
        assert r == pytest.approx(want, abs=1e-12)
        prev, first = info["utility"], False


def test_rounds_round_sizes():
    # B = 4, N = 18, pilot 1 -> 14 left; default R = B = 4: rounds of 4, 4, 4, 2
    env = gym.make(ROUNDS, num_questions=4, budget=18, pilot=1)
    _, info = env.reset(seed=0)
    assert env.unwrapped.params.round_size == 4
    sizes, prev, done = [], np.asarray(info["allocation"]).copy(), False
    while not done:
        _, _, done, _, info = env.step(np.zeros(4, dtype=np.float32))
        sizes.append(int(info["allocation"].sum() - prev.sum()))
        prev = np.asarray(info["allocation"]).copy()
    assert sizes == [4, 4, 4, 2]
    # explicit R = 5: 14 -> 5, 5, 4
    env = gym.make(ROUNDS, num_questions=4, budget=18, pilot=1, round_size=5)
    _, info = env.reset(seed=0)
    sizes, prev, done = [], np.asarray(info["allocation"]).copy(), False
    while not done:
        _, _, done, _, info = env.step(np.ones(4, dtype=np.float32))
        sizes.append(int(info["allocation"].sum() - prev.sum()))
        prev = np.asarray(info["allocation"]).copy()
    assert sizes == [5, 5, 4]


@pytest.mark.parametrize("env_id", IDS)
def test_step_after_end_and_before_reset(env_id):
    env = gym.make(env_id, num_questions=2, budget=4).unwrapped
    action = 0 if env_id == SEQ else np.zeros(2, dtype=np.float32)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(action)
    env.reset(seed=0)
    done = False
    while not done:
        _, _, done, _, _ = env.step(action)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(action)


def test_sequential_rejects_round_size():
    with pytest.raises(ValueError, match="round_size"):
        gym.make(SEQ, round_size=2)


# --- actions ----------------------------------------------------------------------------------


def test_action_masks_and_raise():
    env = gym.make(SEQ, num_questions=3, budget=6, max_group=2)
    env.reset(seed=0)
    u = env.unwrapped
    np.testing.assert_array_equal(u.action_masks(), [True, True, True])
    env.step(0)
    env.step(0)
    np.testing.assert_array_equal(u.action_masks(), [False, True, True])
    with pytest.raises(ValueError, match="max_group"):
        env.step(0)
    # the failed step changed nothing
    np.testing.assert_array_equal(u.state.rollouts, [2, 0, 0])


def test_redirect_to_highest_variance():
    env = gym.make(
        SEQ,
        num_questions=3,
        budget=6,
        max_group=2,
        prior_alpha=1.0,
        prior_beta=(1.0, 10.0, 1.0),  # q2 has a far wider posterior than q1
        invalid_action="redirect",
    )
    _, info = env.reset(seed=0)
    assert info["redirected"] == 0
    env.step(0)
    _, _, _, _, info = env.step(0)
    assert info["redirected"] == 0
    _, _, _, _, info = env.step(0)  # masked: redirected to q2 (highest variance)
    assert info["redirected"] == 1
    np.testing.assert_array_equal(info["allocation"], [2, 0, 1])
    _, _, _, _, info = env.step(0)
    assert info["redirected"] == 2
    assert info["allocation"][0] == 2 and info["allocation"].sum() == 4
    _, info = env.reset(seed=1)
    assert info["redirected"] == 0


def test_bad_invalid_action_option():
    with pytest.raises(ValueError, match="invalid_action"):
        gym.make(SEQ, invalid_action="ignore")


@pytest.mark.parametrize("action", [-1, 4, 1.5, "a", np.array([1, 2]), None, np.nan])
def test_sequential_out_of_space(action):
    env = gym.make(SEQ, num_questions=4, budget=12).unwrapped
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action") as exc:
        env.step(action)
    msg = str(exc.value)
    assert "Discrete(4)" in msg
    if isinstance(action, (int, float, str)):
        assert str(action) in msg
    assert env.state.spent == 0


@pytest.mark.parametrize("action", [np.int64(2), np.array(2), np.array([2]), 2.0, np.float32(2)])
def test_sequential_accepts_integer_like(action):
    env = gym.make(SEQ, num_questions=4, budget=12).unwrapped
    env.reset(seed=0)
    _, _, _, _, info = env.step(action)
    np.testing.assert_array_equal(info["allocation"], [0, 0, 1, 0])


@pytest.mark.parametrize(
    "action",
    [
        np.array([0.0, np.nan, 0.0, 0.0], dtype=np.float32),
        np.array([0.0, 1.5, 0.0, 0.0], dtype=np.float32),
        np.array([-1.01, 0.0, 0.0, 0.0]),
        np.zeros(3, dtype=np.float32),
        np.zeros((4, 1), dtype=np.float32),
    ],
)
def test_rounds_bad_actions(action):
    env = gym.make(ROUNDS, num_questions=4, budget=16).unwrapped
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        env.step(action)
    assert env.state.spent == 0


def test_rounds_encode_counts_through_step():
    env = gym.make(ROUNDS, num_questions=4, budget=26, pilot=1, max_group=9)
    _, info = env.reset(seed=5)
    prev = np.asarray(info["allocation"]).copy()
    for counts in ([4, 0, 0, 0], [0, 1, 2, 1], [3, 0, 0, 1], [0, 2, 2, 0], [0, 0, 0, 4]):
        _, _, _, _, info = env.step(encode_counts(counts))
        np.testing.assert_array_equal(info["allocation"] - prev, counts)
        prev = np.asarray(info["allocation"]).copy()
    # the last round is the 2 left; float64 actions are accepted
    _, _, done, _, info = env.step(encode_counts([0, 1, 1, 0]).astype(np.float64))
    np.testing.assert_array_equal(info["allocation"] - prev, [0, 1, 1, 0])
    assert done and info["allocation"].sum() == 26


def test_rounds_action_masks_and_cap():
    env = gym.make(ROUNDS, num_questions=3, budget=9, max_group=3, round_size=4)
    env.reset(seed=0)
    _, _, _, _, info = env.step(np.array([1.0, -1.0, -1.0], dtype=np.float32))
    # q0 can take only 3: the extra one goes to the next weight (ties: lower index)
    np.testing.assert_array_equal(info["allocation"], [3, 1, 0])
    np.testing.assert_array_equal(env.unwrapped.action_masks(), [False, True, True])


# --- reset options, beliefs -------------------------------------------------------------------


@pytest.mark.parametrize("env_id", IDS)
def test_reset_options_priors_for_one_episode(env_id):
    env = gym.make(env_id, num_questions=3, budget=9, prior_alpha=1.0, prior_beta=2.0)
    pa, pb = (0.5, 3.0, 7.0), (4.0, 1.0, 2.5)
    obs, _ = env.reset(seed=0, options={"prior_alpha": pa, "prior_beta": pb})
    np.testing.assert_allclose(obs["alpha"], pa)
    np.testing.assert_allclose(obs["beta"], pb)
    assert env.unwrapped.episode_params.prior_alpha == pa
    assert env.unwrapped.params.prior_alpha == 1.0  # the env's params are untouched
    obs, *_ = env.step(0 if env_id == SEQ else np.zeros(3, dtype=np.float32))
    np.testing.assert_allclose(obs["alpha"] - obs["successes"], pa, rtol=1e-6)
    obs, _ = env.reset(seed=1)
    np.testing.assert_array_equal(obs["alpha"], [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(obs["beta"], [2.0, 2.0, 2.0])
    # only one of the two
    obs, _ = env.reset(seed=2, options={"prior_beta": pb})
    np.testing.assert_array_equal(obs["alpha"], [1.0, 1.0, 1.0])
    np.testing.assert_allclose(obs["beta"], pb)


def test_reset_options_errors():
    env = gym.make(SEQ, num_questions=3, budget=9)
    with pytest.raises(ValueError, match="prior_alpha_typo"):
        env.reset(options={"prior_alpha_typo": 1.0})
    with pytest.raises(ValueError, match="prior_alpha"):
        env.reset(options={"prior_alpha": (1.0, 2.0)})  # wrong length
    with pytest.raises(ValueError, match="prior_beta"):
        env.reset(options={"prior_beta": -1.0})


def test_belief_matched_default():
    env = gym.make(SEQ, num_questions=3, budget=9)
    a, b = fit_beta("rlvr")
    assert env.unwrapped.params.prior_alpha == a
    assert env.unwrapped.params.prior_beta == b
    env = gym.make(ROUNDS, num_questions=3, budget=9, difficulty=(2.0, 5.0))
    assert env.unwrapped.params.prior_alpha == pytest.approx(2.0)
    assert env.unwrapped.params.prior_beta == pytest.approx(5.0)
    env = gym.make(SEQ, num_questions=3, budget=9, difficulty="hard", belief="matched")
    assert env.unwrapped.params.prior_alpha == fit_beta("hard")[0]


def test_belief_explicit_and_overrides():
    env = gym.make(SEQ, num_questions=3, budget=9, belief=(2.0, 3.0))
    assert (env.unwrapped.params.prior_alpha, env.unwrapped.params.prior_beta) == (2.0, 3.0)
    env = gym.make(SEQ, num_questions=3, budget=9, difficulty="easy", prior_alpha=0.7, prior_beta=4)
    assert (env.unwrapped.params.prior_alpha, env.unwrapped.params.prior_beta) == (0.7, 4.0)
    # one explicit prior overrides its half of the belief only
    env = gym.make(SEQ, num_questions=3, budget=9, belief=(2.0, 3.0), prior_alpha=(1.0, 2.0, 3.0))
    assert env.unwrapped.params.prior_alpha == (1.0, 2.0, 3.0)
    assert env.unwrapped.params.prior_beta == 3.0
    with pytest.raises(ValueError, match="belief"):
        gym.make(SEQ, belief="optimistic")
    with pytest.raises(ValueError, match="belief"):
        gym.make(SEQ, belief=(1.0,))


def test_env_argument_errors():
    with pytest.raises(ValueError, match="reward_mode"):
        gym.make(SEQ, reward_mode="sparse")
    with pytest.raises(ValueError, match="drift"):
        gym.make(SEQ, drift=float("nan"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gym.make's own warning about the unknown render mode
        with pytest.raises(ValueError, match="render_mode 'human'"):
            gym.make(SEQ, render_mode="human")
    with pytest.raises(ValueError, match="Did you mean 'rlvr'"):
        gym.make(SEQ, difficulty="rlv")
    with pytest.raises(ValueError, match="pilot·B"):
        gym.make(ROUNDS, num_questions=4, budget=8, pilot=2)


# --- reveal_truth, render, drift --------------------------------------------------------------


@pytest.mark.parametrize("env_id", IDS)
def test_reveal_truth(env_id):
    env = gym.make(env_id, num_questions=4, budget=12, reveal_truth=True)
    obs, info = env.reset(seed=0)
    assert "true_p" in obs and "true_p" in info
    np.testing.assert_allclose(obs["true_p"], env.unwrapped.true_p, rtol=1e-6)
    np.testing.assert_array_equal(info["true_p"], env.unwrapped.true_p)
    assert env.observation_space.contains(obs)
    obs, _, _, _, info = env.step(env.action_space.sample())
    assert "true_p" in obs and "true_p" in info
    env = gym.make(env_id, num_questions=4, budget=12)
    obs, info = env.reset(seed=0)
    assert "true_p" not in obs and "true_p" not in info
    assert "true_p" not in env.observation_space.spaces
    obs, _, _, _, info = env.step(env.action_space.sample())
    assert "true_p" not in obs and "true_p" not in info


@pytest.mark.parametrize("env_id", IDS)
def test_render_ansi(env_id):
    env = gym.make(env_id, num_questions=3, budget=9, render_mode="ansi", reveal_truth=True)
    env.reset(seed=0)
    env.step(env.action_space.sample())
    text = env.render()
    assert isinstance(text, str)
    lines = text.splitlines()
    header = lines[0]
    for col in ("q", "alpha", "beta", "mean", "std", "true p"):
        assert col in header
    rows = [ln for ln in lines if ln.split() and ln.split()[0].isdigit()]
    assert [int(r.split()[0]) for r in rows] == [0, 1, 2]
    assert "budget left" in text
    u = env.unwrapped
    left = u.params.total_budget - u.state.spent
    assert f"budget left {left}/9" in text


def test_render_without_mode_returns_none():
    env = gym.make(SEQ, num_questions=2, budget=4).unwrapped
    env.reset(seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert env.render() is None


def test_drift_raises_mean_pass_rate():
    env = gym.make(
        SEQ, num_questions=16, budget=32, difficulty="uniform", drift=0.1, reveal_truth=True
    )
    means = []
    _, info = env.reset(seed=0)
    means.append(info["true_p"].mean())
    for _ in range(59):
        _, info = env.reset()
        means.append(info["true_p"].mean())
    early, late = np.mean(means[:20]), np.mean(means[-20:])
    assert late > early + 0.2
    # the explicit episode option sets the drift's episode index
    _, info = env.reset(seed=3, options={"episode": 0})
    p0 = info["true_p"]
    _, info = env.reset(seed=3, options={"episode": 10})
    np.testing.assert_allclose(info["true_p"], apply_drift(p0, 1.0))
    # without drift the same seeds give the same pass rates whatever the episode
    flat = gym.make(SEQ, num_questions=16, budget=32, difficulty="uniform", reveal_truth=True)
    _, i1 = flat.reset(seed=3, options={"episode": 0})
    _, i2 = flat.reset(seed=3, options={"episode": 10})
    np.testing.assert_array_equal(i1["true_p"], i2["true_p"])


def test_observation_is_model_observation_every_step():
    env = gym.make(ROUNDS, num_questions=3, budget=12, pilot=1, reveal_truth=True)
    obs, _ = env.reset(seed=9)
    done = False
    while not done:
        u = env.unwrapped
        want = observe(u.episode_params, u.state, u.true_p)
        for key in want:
            np.testing.assert_array_equal(obs[key], want[key])
        obs, _, done, _, _ = env.step(env.action_space.sample())


def test_encode_counts_off_the_round_is_refused_not_rescaled():
    env = gym.make(ROUNDS, num_questions=4, budget=16, max_group=5)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"encode_counts\(\[3, 1, 1, 0\]\) hands out 5 .* 4"):
        env.step(adaroll_env.encode_counts([3, 1, 1, 0]))
    _, _, _, _, info = env.step(adaroll_env.encode_counts([2, 1, 1, 0]))
    assert info["allocation"].tolist() == [2, 1, 1, 0]
    with pytest.raises(ValueError, match=r"breaks a cap \(room \[3, 4, 4, 5\]\)"):
        env.step(adaroll_env.encode_counts([4, 0, 0, 0]))
    # Plain weights are split, by design: the caller asked for a proportional split.
    _, _, _, _, info = env.step(np.asarray(adaroll_env.encode_counts([3, 1, 1, 0])))
    assert info["allocation"].sum() == 8


@pytest.mark.parametrize("env_id", [SEQ, ROUNDS])
def test_typo_in_env_arguments_suggests_the_closest(env_id):
    with pytest.raises(TypeError, match=r"'num_question'\. Did you mean 'num_questions'\?"):
        gym.make(env_id, num_question=3)
    with pytest.raises(TypeError, match=r"Its arguments: .*max_group"):
        gym.make(env_id, max_grup=3)


def test_reset_option_typo_suggests_the_closest():
    env = gym.make(SEQ, num_questions=3, budget=9)
    with pytest.raises(ValueError, match=r"Did you mean 'prior_alpha'"):
        env.reset(options={"prior_alpa": 1.0})


@pytest.mark.parametrize("schedule", ["10,4", "10+4", (10, 4), "0.7142857,0.2857143"])
def test_rounds_env_takes_a_round_schedule(schedule):
    # B = 4, N = 18, pilot 1 -> 14 left: a round of 10, then 4
    env = gym.make(ROUNDS, num_questions=4, budget=18, pilot=1, round_schedule=schedule)
    _, info = env.reset(seed=0)
    assert env.unwrapped.params.round_schedule == (10, 4)
    sizes, prev, done = [], np.asarray(info["allocation"]).copy(), False
    while not done:
        _, _, done, _, info = env.step(np.zeros(4, dtype=np.float32))
        sizes.append(int(info["allocation"].sum() - prev.sum()))
        prev = np.asarray(info["allocation"]).copy()
    assert sizes == [10, 4]


def test_round_schedule_errors_in_the_envs():
    with pytest.raises(ValueError, match=r"hands out 13 rollouts.*14"):
        gym.make(ROUNDS, num_questions=4, budget=18, pilot=1, round_schedule="10,3")
    with pytest.raises(ValueError, match="mode is 'sequential'"):
        gym.make(SEQ, num_questions=4, budget=18, round_schedule=(10, 8))
    with pytest.raises(ValueError, match="both set"):
        gym.make(ROUNDS, num_questions=4, budget=18, round_size=4, round_schedule="10,8")


def test_checkers_with_a_round_schedule():
    env = gym.make(ROUNDS, num_questions=4, budget=18, round_schedule="12,6")
    gym_check_env(env.unwrapped, skip_render_check=True)
    sb3_check_env(env.unwrapped)
