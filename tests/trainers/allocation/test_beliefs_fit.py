"""How old evidence enters a fitted prior: discounted counts against age-weighted prompts."""

from __future__ import annotations

import json

import numpy as np
import pytest

from adaroll_env.priors import fit_beta_binomial
from trainers.allocation.beliefs import BeliefStore, _rounded


def _training_store(fit: str, seed: int = 0, steps: int = 100) -> BeliefStore:
    """A run's store: 40 new prompts a step from Beta(0.3, 0.8) ('common'), and one new prompt
    every third step from Beta(0.1, 2.5) ('rare': a group an allocator seldom samples), 8
    rollouts each; a stationary population, so the right fit is the Beta they came from."""
    rng = np.random.default_rng(seed)
    store = BeliefStore(base="fitted", decay=0.95, refit_every=1, fit=fit)  # type: ignore[arg-type]
    pid = 0
    for step in range(steps):
        ids = list(range(pid, pid + 40))
        pid += 40
        s = rng.binomial(8, rng.beta(0.3, 0.8, 40))
        groups = ["common"] * 40
        if step % 3 == 0:
            ids.append(pid)
            pid += 1
            s = np.r_[s, rng.binomial(8, rng.beta(0.1, 2.5))]
            groups.append("rare")
        store.update(ids, s, 8 - s, step=step, groups=groups)
    store.prior([0], step=steps)  # refit at the next step
    return store


def test_weighted_fit_recovers_the_population_the_discounted_one_overstates_concentration():
    weighted = _training_store("weighted")
    a, b = weighted.base_prior("common")
    assert a == pytest.approx(0.3, rel=0.15) and b == pytest.approx(0.8, rel=0.15)
    da, db = _training_store("discounted").base_prior("common")
    # Discounted counts read as observations hide the spread: a Beta at least twice as
    # concentrated, with the same mean.
    assert da + db > 2.0 * (a + b)
    assert da / (da + db) == pytest.approx(a / (a + b), abs=0.03)


def test_a_seldom_sampled_group_runs_to_the_bound_only_when_counts_are_discounted():
    da, db = _training_store("discounted").base_prior("rare")
    assert da / (da + db) < 0.1
    assert db > 5000  # "every prompt of the group passes da/db of the time, certainly"
    wa, wb = _training_store("weighted").base_prior("rare")
    assert wa + wb < 100 and wa < 1.0  # U-shaped: most never pass, a few often do


def test_each_fit_is_the_marginal_likelihood_fit_of_its_evidence():
    store = BeliefStore(base="fitted", decay=0.9, refit_every=1)
    other = BeliefStore(base="fitted", decay=0.9, refit_every=1, fit="discounted")
    rng = np.random.default_rng(3)
    s_all, age = [], []
    for step in range(5):
        s = rng.binomial(8, rng.beta(0.5, 0.5, 30))
        ids = list(range(30 * step, 30 * step + 30))
        store.update(ids, s, 8 - s, step=step)
        other.update(ids, s, 8 - s, step=step)
        s_all.append(s)
        age.append(np.full(30, 5 - step))
    s, w = np.concatenate(s_all), 0.9 ** np.concatenate(age).astype(float)
    store.prior([0], step=5)
    other.prior([0], step=5)
    assert store.base_prior() == pytest.approx(
        _rounded(fit_beta_binomial(s, 8 - s, weights=w)), rel=0.03
    )
    assert store.fit == "weighted"  # the default
    assert other.base_prior() == pytest.approx(
        _rounded(fit_beta_binomial(s * w, (8 - s) * w)), rel=0.03
    )


def test_the_fit_rule_is_saved_and_old_stores_load_as_discounted():
    store = _training_store("weighted", steps=10)
    state = json.loads(json.dumps(store.state_dict()))
    assert state["fit"] == "weighted"
    back = BeliefStore()
    back.load_state_dict(state)
    assert back.fit == "weighted"
    del state["fit"]
    back.load_state_dict(state)
    assert back.fit == "discounted"


def test_a_bad_fit_rule_is_named():
    with pytest.raises(ValueError, match=r"fit must be 'discounted' or 'weighted'.*'counts'"):
        BeliefStore(fit="counts")  # type: ignore[arg-type]
