"""Parametrised utility families: ``snr(κ)`` by name, registration, errors, use in the model."""

from __future__ import annotations

import numpy as np
import pytest

import adaroll_env
from adaroll_env.model import AllocationParams
from adaroll_env.utilities import (
    expected_utility,
    get_utility,
    informative,
    list_utility_families,
    register_utility_family,
)


def test_snr_by_hand():
    u = get_utility("snr(8)")
    s = np.array([0, 1, 1, 3, 8, 0])
    f = np.array([0, 1, 0, 5, 8, 4])
    # n=2 mixed: 1/(1+16); n=8 mixed: 49/(49+64); n=16: 225/(225+128); degenerate groups 0.
    want = np.array([0.0, 1 / 17, 0.0, 49 / 113, 225 / 353, 0.0])
    np.testing.assert_allclose(u(s, f), want, rtol=1e-12)


def test_snr_saturates_between_informative_and_gradient_mass():
    n = np.arange(2, 200)
    s, f = n // 2, n - n // 2
    small, large = get_utility("snr(0.001)")(s, f), get_utility("snr(1000)")(s, f)
    np.testing.assert_allclose(small, informative(s, f), atol=2e-3)  # κ → 0: informative
    assert np.all(np.diff(get_utility("snr(8)")(s, f)) > 0)  # grows with depth ...
    assert get_utility("snr(8)")(s, f)[-1] < 1.0  # ... and saturates below 1
    np.testing.assert_allclose(large[:20], (n[:20] - 1) ** 2 / (1000 * n[:20]), rtol=0.05)


def test_full_name_is_the_identity_and_model_accepts_it():
    assert get_utility("snr(8)") is get_utility("snr(8)")
    assert get_utility("snr(8)")(np.array([2]), np.array([2])) != get_utility("snr(2)")(
        np.array([2]), np.array([2])
    )
    p = AllocationParams(num_questions=4, budget=32, utility="snr(8)")
    assert p.utility == "snr(8)"
    # The exact expectation works with a family member like any registered utility.
    e = expected_utility("snr(8)", 0.5, 0.5, 0, 0, 8)
    assert 0.0 < float(e) < 1.0


@pytest.mark.parametrize(
    ("name", "match"),
    [
        ("snr(0)", "kappa must be a finite number > 0"),
        ("snr(-3)", "kappa must be a finite number > 0"),
        ("snr(x)", "argument 'x' is not a number"),
        ("snr()", "wrong number of arguments"),
        ("snr(1, 2)", "wrong number of arguments"),
        ("snrr(8)", "Did you mean 'snr'"),
    ],
)
def test_bad_family_names(name, match):
    with pytest.raises(ValueError, match=match):
        get_utility(name)


def test_unknown_plain_name_mentions_the_families():
    with pytest.raises(ValueError, match=r"snr\(\.\.\.\)"):
        get_utility("bogus")


def test_register_a_family():
    def depth(m: float):
        def u(s, f):
            n = np.asarray(s) + np.asarray(f)
            return np.minimum(n, m) * np.logical_and(s, f)

        return u

    register_utility_family("capped_depth", depth, overwrite=True)
    assert "capped_depth" in list_utility_families()
    assert "snr" in adaroll_env.list_utility_families()
    np.testing.assert_array_equal(
        get_utility("capped_depth(4)")(np.array([3, 0]), np.array([3, 2])), [4.0, 0.0]
    )
    with pytest.raises(ValueError, match="already registered"):
        register_utility_family("capped_depth", depth)
    with pytest.raises(ValueError, match="must be an identifier"):
        register_utility_family("no good", depth)


def test_bamdp_spends_the_budget_with_a_family_utility():
    import gymnasium as gym

    from agents import make_allocator

    env = gym.make(
        "AdaRoll/BetaBernoulliRounds-v0",
        num_questions=8,
        budget=64,
        utility="snr(8)",
        difficulty=(0.3, 0.3),
    )
    alloc = make_allocator("bamdp", env, seed=0)
    obs, info = env.reset(seed=0)
    done = False
    while not done:
        obs, _, term, trunc, info = env.step(alloc.act(obs))
        done = term or trunc
    assert int(np.sum(info["allocation"])) == 64
    env.close()
