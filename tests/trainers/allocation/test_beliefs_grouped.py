"""Belief store v3: Beta-binomial fitted base priors, grouped empirical Bayes, calibration."""

from __future__ import annotations

import json

import numpy as np
import pytest

from adaroll_env.priors import fit_beta_binomial
from trainers.allocation.beliefs import BeliefStore


def _two_level_store(**kw):
    """Level 0 mostly solved, level 1 mostly failed; 8 rollouts per prompt."""
    rng = np.random.default_rng(0)
    store = BeliefStore(1.0, 1.0, base="fitted", min_fit=20, **kw)
    ids = list(range(400))
    levels = [0] * 200 + [1] * 200
    p = np.r_[rng.beta(4.0, 1.0, 200), rng.beta(0.3, 3.0, 200)]
    s = rng.binomial(8, p)
    store.update(ids, s, 8 - s, step=0, groups=levels)
    return store, ids, levels, s


def test_fitted_base_is_the_marginal_likelihood_fit_of_the_counts():
    store, _, _, s = _two_level_store()
    a, b = store.base_prior()
    fa, fb = fit_beta_binomial(s, 8 - s)
    assert a == pytest.approx(fa, rel=0.03) and b == pytest.approx(fb, rel=0.03)


def test_groups_get_their_own_prior_and_new_prompts_start_from_it():
    store, _, _, _ = _two_level_store()
    a0, b0 = store.base_prior(0)
    a1, b1 = store.base_prior(1)
    assert a0 / (a0 + b0) > 0.6 and a1 / (a1 + b1) < 0.2
    # A never-seen prompt of each level starts from its level's fit.
    alpha, beta = store.prior([1000, 1001], step=1, groups=[0, 1])
    assert (alpha[0], beta[0]) == pytest.approx((a0, b0))
    assert (alpha[1], beta[1]) == pytest.approx((a1, b1))
    # A group too small to fit gets the whole store's fit; an unknown key too.
    assert store.base_prior(7) == store.base_prior()
    assert set(store.group_priors()) == {"*", "0", "1"}


def test_own_history_goes_on_top_of_the_group_prior():
    store, _, _, s = _two_level_store(decay=1.0)
    a0, b0 = store.base_prior(0)
    alpha, beta = store.prior([0], step=1)  # its recorded group is level 0
    assert alpha[0] == pytest.approx(a0 + s[0]) and beta[0] == pytest.approx(b0 + 8 - s[0])


def test_grouped_priors_predict_better_than_fixed_and_ungrouped():
    store, *_ = _two_level_store()
    rng = np.random.default_rng(1)
    new = list(range(1000, 1200))
    lv = [0] * 100 + [1] * 100
    p = np.r_[rng.beta(4.0, 1.0, 100), rng.beta(0.3, 3.0, 100)]
    s = rng.binomial(8, p)
    store.update(new, s, 8 - s, step=1, groups=lv)
    cal = store.calibration()
    assert cal["store"]["rollouts"] == 8 * 600
    assert cal["store"]["log_loss"] < cal["fitted"]["log_loss"] < cal["fixed"]["log_loss"]
    assert cal["store"]["brier"] < cal["fixed"]["brier"]


def test_refits_are_rounded_and_scheduled():
    store, *_ = _two_level_store(refit_every=5)
    before = store.base_prior()
    # One more tiny observation does not move the rounded fit; no refit before 5 steps.
    store.update([5000], [1], [0], step=1)
    assert store.base_prior() == before
    store.update(list(range(600, 900)), np.zeros(300), np.full(300, 8.0), step=5)
    assert store.base_prior() != before  # refit at step 5 sees 300 failing prompts
    a, b = store.base_prior()
    assert a / (a + b) < before[0] / sum(before)


def test_state_dict_round_trip_with_groups_is_json_and_exact():
    store, _, _, _ = _two_level_store()
    state = json.loads(json.dumps(store.state_dict()))
    back = BeliefStore()
    back.load_state_dict(state)
    ids = [0, 250, 1000]
    for a, b in zip(store.prior(ids, 3), back.prior(ids, 3), strict=True):
        np.testing.assert_array_equal(a, b)
    assert back.calibration() == store.calibration()


def test_a_store_saved_before_groups_still_loads():
    old = {
        "prior_alpha": 1.0,
        "prior_beta": 1.0,
        "decay": 0.9,
        "base": "fixed",
        "min_fit": 20,
        "ids": [3],
        "a": [2.0],
        "b": [1.0],
        "seen": [0],
    }
    store = BeliefStore()
    store.load_state_dict(old)
    alpha, beta = store.prior([3], step=0)
    assert (alpha[0], beta[0]) == (3.0, 2.0)


def test_bad_input():
    with pytest.raises(ValueError, match="min_fit"):
        BeliefStore(min_fit=1)
    with pytest.raises(ValueError, match="refit_every"):
        BeliefStore(refit_every=0)
    with pytest.raises(ValueError, match="one per prompt"):
        BeliefStore().update([1, 2], [1, 1], [1, 1], step=0, groups=[0])
