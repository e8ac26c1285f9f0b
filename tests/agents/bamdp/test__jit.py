"""Tests of agents.bamdp._jit: the kernel of the backward pass gives the numpy pass's table bit
for bit, run as plain Python (always) and compiled by numba (when installed)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from adaroll_env.model import posterior_mean
from agents.bamdp import _jit
from agents.bamdp.index import TableSpec, _levels, build_table, lambda_grid

UTILITIES = ["informative", "hit", "grpo_signal", "dr_grpo_signal"]


def _kernel_inputs(spec):
    """U, P, the price grid and ū as ``build_table`` hands them to the kernel."""
    fn, delta, u_bar = _levels(spec)
    H = spec.horizon
    U = np.zeros((H + 1, H + 1))
    P = np.zeros((H + 1, H + 1))
    for n in range(H + 1):
        s = np.arange(n + 1)
        U[n, : n + 1] = np.asarray(fn(s, n - s), dtype=np.float64)
        P[n, : n + 1] = posterior_mean(spec.alpha, spec.beta, s, n - s)
    return U, P, lambda_grid(delta, spec.grid_size), u_bar


def test_available_says_whether_numba_imports():
    numba_found = importlib.util.find_spec("numba") is not None
    assert _jit.AVAILABLE is numba_found
    assert (_jit.backward is None) == (not _jit.AVAILABLE)


@pytest.mark.parametrize("utility", UTILITIES)
@pytest.mark.parametrize(("cap", "max_horizon"), [(5, 256), (12, 6)])
def test_python_kernel_is_bit_identical_to_numpy(utility, cap, max_horizon):
    # The uncompiled kernel (plain Python loops) on a short grid: same arithmetic, same order.
    spec = TableSpec.make(0.4, 0.7, utility, cap, max_horizon=max_horizon, grid_size=96)
    U, P, lam, u_bar = _kernel_inputs(spec)
    index = _jit._backward(U, P, lam, spec.cap, spec.horizon, u_bar)
    assert np.array_equal(index, build_table(spec, jit=False).index, equal_nan=True)


@pytest.mark.parametrize("utility", UTILITIES)
@pytest.mark.parametrize(("cap", "max_horizon"), [(9, 256), (70, 40)])
def test_numba_tables_are_bit_identical(utility, cap, max_horizon):
    pytest.importorskip("numba")
    spec = TableSpec.make(0.4, 0.7, utility, cap, max_horizon=max_horizon)
    plain = build_table(spec, jit=False)
    fast = build_table(spec, jit=True)
    assert np.array_equal(plain.index, fast.index, equal_nan=True)
