"""The per-prompt Beta belief store: forgetting by hand, fitted base prior, state round trip."""

from __future__ import annotations

import numpy as np
import pytest

from trainers.allocation.beliefs import BeliefStore


def test_forgetting_by_hand() -> None:
    store = BeliefStore(1.0, 1.0, decay=0.5)
    store.update([3], successes=[4], failures=[2], step=0)
    a, b = store.prior([3], step=0)
    assert (a[0], b[0]) == (5.0, 3.0)
    a, b = store.prior([3], step=2)  # two steps later: evidence × 0.25
    assert (a[0], b[0]) == (2.0, 1.5)
    store.update([3], successes=[1], failures=[0], step=2)  # decayed evidence plus the new counts
    a, b = store.prior([3], step=2)
    assert (a[0], b[0]) == (3.0, 1.5)


def test_unseen_prompts_get_the_base_prior_and_empty_groups_add_nothing() -> None:
    store = BeliefStore(2.0, 3.0)
    store.update([1, 2], successes=[0, 1], failures=[0, 0], step=0)
    assert 1 not in store and 2 in store
    a, b = store.prior([1, 9], step=5)
    assert a.tolist() == [2.0, 2.0] and b.tolist() == [3.0, 3.0]


def test_fitted_base_prior_follows_the_population() -> None:
    store = BeliefStore(1.0, 1.0, base="fitted", min_fit=10)
    rng = np.random.default_rng(0)
    ids = list(range(50))
    p = rng.beta(1.0, 6.0, size=50)  # mostly hard prompts
    s = rng.binomial(16, p)
    store.update(ids, successes=s, failures=16 - s, step=0)
    a0, b0 = store.base_prior()
    assert a0 / (a0 + b0) < 0.3  # the fitted prior knows prompts are hard
    assert store.base == "fitted" and BeliefStore(base="fitted").base_prior() == (1.0, 1.0)


def test_state_dict_round_trip() -> None:
    store = BeliefStore(1.0, 2.0, decay=0.9)
    store.update([1, 2, 3], successes=[1, 2, 3], failures=[3, 2, 1], step=4)
    other = BeliefStore()
    other.load_state_dict(store.state_dict())
    for step in (4, 7):
        np.testing.assert_array_equal(
            other.prior([1, 2, 3, 4], step)[0], store.prior([1, 2, 3, 4], step)[0]
        )
        np.testing.assert_array_equal(
            other.prior([1, 2, 3, 4], step)[1], store.prior([1, 2, 3, 4], step)[1]
        )
    ids, rates = other.observed_rates()
    assert sorted(ids.tolist()) == [1, 2, 3]
    assert rates.tolist() == [0.25, 0.5, 0.75]


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="decay"):
        BeliefStore(decay=1.5)
    with pytest.raises(ValueError, match="one entry per prompt"):
        BeliefStore().update([1, 2], successes=[1], failures=[1], step=0)
