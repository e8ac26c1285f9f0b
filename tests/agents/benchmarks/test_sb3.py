"""Tests of agents.benchmarks.sb3 (``scripts/bench_sb3.py``): the learned allocator's gain over
uniform as a share of bamdp's, with its paired bootstrap interval."""

from __future__ import annotations

import numpy as np
import pytest

from adaroll_env.stats import mean_ci
from agents.benchmarks.sb3 import gain_ratio


def test_sb3_report_gain_ratio_hand_worked():
    from agents.benchmarks.sb3 import gain_ratio

    u = {
        "uniform": np.array([1.0, 2.0, 3.0, 4.0]),
        "bamdp": np.array([2.0, 3.0, 4.0, 5.0]),  # +1 each
        "sb3:x": np.array([1.5, 2.5, 3.5, 4.5]),  # +0.5 each
    }
    r = gain_ratio(u, "sb3:x", np.random.default_rng(0), boot=200)
    assert r["gain"] == pytest.approx(0.5) and r["bamdp_gain"] == pytest.approx(1.0)
    assert r["ratio"] == pytest.approx(0.5)
    assert r["ratio_lo"] == pytest.approx(0.5) and r["ratio_hi"] == pytest.approx(0.5)


def test_gain_ratio_bootstrap_by_hand():
    u = {
        "uniform": np.array([1.0, 2.0, 3.0, 4.0, 5.0]),
        "bamdp": np.array([2.0, 2.5, 4.0, 5.5, 6.0]),  # gains 1, 0.5, 1, 1.5, 1
        "sb3:x": np.array([1.0, 3.0, 3.5, 4.0, 6.0]),  # gains 0, 1, 0.5, 0, 1
    }
    r = gain_ratio(u, "sb3:x", np.random.default_rng(3), boot=50)
    d_l, d_b = np.array([0, 1, 0.5, 0, 1]), np.array([1, 0.5, 1, 1.5, 1])
    idx = np.random.default_rng(3).integers(0, 5, size=(50, 5))
    lo, hi = np.percentile(d_l[idx].mean(axis=1) / d_b[idx].mean(axis=1), [2.5, 97.5])
    assert r["ratio"] == pytest.approx(0.5 / 1.0)
    assert r["ratio_lo"] == pytest.approx(lo) and r["ratio_hi"] == pytest.approx(hi)
    assert r["gain_ci"] == pytest.approx(mean_ci(d_l)[1])
    assert r["bamdp_gain_ci"] == pytest.approx(mean_ci(d_b)[1])
    assert (r["uniform"], r["bamdp"], r["learned"]) == (3.0, 4.0, 3.5)
    assert r["allocator"] == "sb3:x" and r["episodes"] == 5
