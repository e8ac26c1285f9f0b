"""Beta-binomial marginal-likelihood prior fit: recovery, a brute-force check, real counts."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import betaln

from adaroll_env.priors import fit_beta, fit_beta_binomial


def _loglik(a, b, s, f):
    return float(np.sum(betaln(a + s, b + f) - betaln(a, b)))


@pytest.mark.parametrize(("a", "b"), [(0.3, 0.5), (2.0, 5.0), (0.1, 0.12)])
def test_recovers_the_truth(a, b):
    rng = np.random.default_rng(1)
    p = rng.beta(a, b, size=20000)
    s = rng.binomial(8, p)
    fa, fb = fit_beta_binomial(s, 8 - s)
    assert fa == pytest.approx(a, rel=0.1)
    assert fb == pytest.approx(b, rel=0.1)


def test_is_the_maximum_of_the_likelihood_on_a_grid():
    rng = np.random.default_rng(2)
    n = rng.integers(1, 12, size=300)
    s = rng.binomial(n, rng.beta(0.4, 0.7, size=300))
    f = n - s
    a, b = fit_beta_binomial(s, f)
    best = _loglik(a, b, s, f)
    grid = np.exp(np.linspace(np.log(0.05), np.log(5), 80))
    brute = max(_loglik(x, y, s, f) for x in grid for y in grid)
    assert best >= brute - 1e-9


def test_u_shaped_store_gives_small_parameters_unlike_moments_of_shrunk_means():
    # 40 % of prompts 0/8, 30 % 8/8, the rest spread: the live store's shape.
    rng = np.random.default_rng(3)
    s = np.concatenate([np.zeros(400), np.full(300, 8), rng.integers(1, 8, size=300)])
    a, b = fit_beta_binomial(s, 8 - s)
    assert a < 0.4 and b < 0.4
    # The moments fit of posterior means under a Beta(1, 1) prior is pulled toward the middle.
    ma, mb = fit_beta(((s + 1) / 10).astype(float))
    assert ma > 2 * a and mb > 2 * b


def test_discounted_real_counts_and_weights():
    rng = np.random.default_rng(4)
    s = rng.binomial(8, rng.beta(0.5, 0.5, size=2000)).astype(float)
    f = 8 - s
    a1, b1 = fit_beta_binomial(s, f)
    # Duplicating every row is the same as weight 2; rows with no evidence change nothing.
    a2, b2 = fit_beta_binomial(np.r_[s, s, 0.0], np.r_[f, f, 0.0])
    a3, b3 = fit_beta_binomial(s, f, weights=np.full(s.size, 2.0))
    assert (a1, b1) == pytest.approx((a2, b2), rel=1e-5)
    assert (a1, b1) == pytest.approx((a3, b3), rel=1e-5)
    # Discounted evidence (real counts) fits too, with a similar shape.
    ad, bd = fit_beta_binomial(0.7 * s, 0.7 * f)
    assert ad == pytest.approx(a1, rel=0.5) and bd == pytest.approx(b1, rel=0.5)


def test_bad_input():
    with pytest.raises(ValueError, match="at least 2 prompts"):
        fit_beta_binomial([3], [5])
    with pytest.raises(ValueError, match="at least 2 prompts"):
        fit_beta_binomial([0, 0, 4], [0, 0, 4])
    with pytest.raises(ValueError, match="row 1"):
        fit_beta_binomial([1, -1], [1, 1])
    with pytest.raises(ValueError, match="one length each"):
        fit_beta_binomial([1, 2], [1])


def test_beats_a_general_optimiser_on_hard_counts_and_from_any_start():
    # Discounted (real) counts, few prompts, near-deterministic pass rates whose optimum lies
    # on a bound: the Newton fit's likelihood is never below L-BFGS-B's from the moments start,
    # and starting it at the previous fit (as a refit does) lands on the same optimum.
    from scipy.optimize import minimize

    rng = np.random.default_rng(4)
    lo, hi = np.log(1e-3), np.log(1e4)
    for _ in range(12):
        a0, b0 = np.exp(rng.uniform(-3, 3, size=2))
        n = int(rng.integers(5, 400))
        m = int(rng.integers(1, 16))
        s = rng.binomial(m, rng.beta(a0, b0, size=n)).astype(float)
        f = m - s
        w = 0.95 ** rng.integers(0, 60, size=n)
        s, f = s * w, f * w
        keep = s + f > 0
        if np.count_nonzero(keep) < 2:
            continue
        a, b = fit_beta_binomial(s, f)

        def neg(th, s=s[keep], f=f[keep]):
            return -_loglik(*np.exp(th), s, f)

        ref = minimize(neg, np.log([a0, b0]), method="L-BFGS-B", bounds=[(lo, hi)] * 2)
        assert _loglik(a, b, s[keep], f[keep]) >= -ref.fun - 1e-6
        again = fit_beta_binomial(s, f, start=(a * 3.0, b / 3.0))
        assert _loglik(*again, s[keep], f[keep]) == pytest.approx(_loglik(a, b, s[keep], f[keep]))
    with pytest.raises(ValueError, match="start must be two positive"):
        fit_beta_binomial([1, 2], [3, 1], start=(0.0, 1.0))
