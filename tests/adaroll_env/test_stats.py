"""Tests of adaroll_env.stats: the Student-t interval of a mean and the recorded versions."""

from __future__ import annotations

import importlib.metadata
import math
import platform

import numpy as np
import pytest

from adaroll_env.stats import BASE_PACKAGES, library_versions, mean_ci


def test_mean_ci_known_values():
    m, ci = mean_ci([1.0, 2.0, 3.0, 4.0])
    # t(0.975, 3) = 3.182446; sd = 1.290994; sem = 0.645497
    assert m == 2.5
    assert ci == pytest.approx(3.182446 * 0.645497, rel=1e-5)


def test_mean_ci_two_values_by_the_cauchy_quantile():
    # n = 2: one degree of freedom, Student t is Cauchy with quantile tan(π(q − 1/2)).
    # Values 0 and 2: mean 1, sd √2, sem 1, so the half-width is the quantile itself.
    m, ci = mean_ci([0.0, 2.0])
    assert m == 1.0
    assert ci == pytest.approx(math.tan(math.pi * 0.475), rel=1e-9)  # 12.7062...
    _, half = mean_ci([0.0, 2.0], level=0.5)
    assert half == pytest.approx(1.0, rel=1e-9)  # tan(π/4)


def test_mean_ci_is_nan_where_undefined():
    m, ci = mean_ci([3.5])
    assert m == 3.5 and math.isnan(ci)
    m, ci = mean_ci([])
    assert math.isnan(m) and math.isnan(ci)
    # equal values: a zero-width interval is defined (sd 0), not NaN
    assert mean_ci(np.array([2.0, 2.0, 2.0])) == (2.0, 0.0)


def test_library_versions_reads_the_installed_distributions():
    out = library_versions()
    assert out["python"] == platform.python_version()
    assert out["platform"] == platform.platform()
    assert out["numpy"] == importlib.metadata.version("numpy") == np.__version__
    for name in BASE_PACKAGES:
        try:
            assert out[name] == importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            assert name not in out


def test_library_versions_extra_packages_and_missing_ones():
    out = library_versions(["pytest", "adaroll-no-such-distribution"])
    assert out["pytest"] == pytest.__version__
    assert "adaroll-no-such-distribution" not in out
