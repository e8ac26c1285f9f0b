"""Tests of agents.bamdp.index: the index tables λ*(s, f) of one question's stopping problem,
against an independent memoised recursion, and the pieces they are built from."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from adaroll_env.utilities import get_utility
from agents.bamdp import _jit
from agents.bamdp import index as index_mod
from agents.bamdp.index import (
    GRID_SIZE,
    IndexTable,
    TableSpec,
    build_table,
    lambda_grid,
    start_values,
    utility_range,
)

UTILITIES = ["informative", "hit", "grpo_signal", "dr_grpo_signal"]


def _stopping_gap(a, b, utility, cap, s, f, lam):
    """Independent brute force: C(s, f; λ) − u(s, f) of the single-question stopping problem."""
    u = get_utility(utility)

    def uu(s, f):
        return float(u(np.array([s]), np.array([f]))[0])

    @functools.cache
    def V(s, f):
        if s + f >= cap:
            return uu(s, f)
        p = (a + s) / (a + b + s + f)
        return max(uu(s, f), -lam + p * V(s + 1, f) + (1 - p) * V(s, f + 1))

    p = (a + s) / (a + b + s + f)
    return -lam + p * V(s + 1, f) + (1 - p) * V(s, f + 1) - uu(s, f)


def _brute_index(a, b, utility, cap, s, f):
    lo, hi = -2.0, 2.0
    for _ in range(50):
        mid = (lo + hi) / 2
        if _stopping_gap(a, b, utility, cap, s, f, mid) >= 0:
            lo = mid
        else:
            hi = mid
    return lo


def test_index_hand_worked():
    # Beta(1, 1), cap 4, informative. At (0, 3) one more rollout (the last) makes the group
    # informative with probability 1/5: index 0.2. At (0, 2): worth 1/4 for λ ≥ 0.2 (then stop
    # at (0, 3)), so the index is 0.25. At (1, 1) nothing can improve: index 0. At the cap: −inf.
    t = build_table(TableSpec.make(1.0, 1.0, "informative", 4))
    assert t.index[0, 3] == pytest.approx(0.2, abs=1e-6)
    assert t.index[0, 2] == pytest.approx(0.25, abs=1e-6)
    assert t.index[1, 1] == pytest.approx(0.0, abs=1e-6)
    assert t.index[0, 4] == -np.inf and t.index[2, 2] == -np.inf


@pytest.mark.parametrize("utility", UTILITIES)
@pytest.mark.parametrize(("a", "b"), [(1.0, 1.0), (0.3, 0.3), (2.0, 5.0)])
def test_index_against_brute_force(utility, a, b):
    cap = 7
    t = build_table(TableSpec.make(a, b, utility, cap))
    for s in range(cap):
        for f in range(cap - s):
            assert t.index[s, f] == pytest.approx(_brute_index(a, b, utility, cap, s, f), abs=2e-4)


def test_index_threshold_meaning():
    # Just below the index continuing beats stopping, just above it does not.
    t = build_table(TableSpec.make(0.5, 0.8, "grpo_signal", 9))
    for s, f in [(0, 0), (1, 0), (2, 3), (0, 5)]:
        lam = t.index[s, f]
        assert _stopping_gap(0.5, 0.8, "grpo_signal", 9, s, f, lam - 1e-3) > 0
        assert _stopping_gap(0.5, 0.8, "grpo_signal", 9, s, f, lam + 1e-3) < 0


def test_horizon_truncation_is_optimistic():
    full = build_table(TableSpec.make(0.5, 0.5, "informative", 40))
    cut = build_table(TableSpec.make(0.5, 0.5, "informative", 40, max_horizon=12))
    assert cut.spec.horizon == 12
    a, b = cut.index[:12, :12], full.index[:12, :12]
    both = np.isfinite(a) & np.isfinite(b)
    assert both.sum() > 50
    assert np.all(a[both] >= b[both] - 1e-6)


def test_custom_utility_code_is_part_of_the_key(tmp_path, monkeypatch):
    mod = tmp_path / "adaroll_bamdp_u.py"
    mod.write_text(
        "import numpy as np\ndef u(s, f):\n    return np.minimum(np.asarray(s), 1) * 1.0\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    d1 = TableSpec.make(1.0, 1.0, "adaroll_bamdp_u:u", 5).digest()
    d2 = TableSpec.make(1.0, 1.0, "hit", 5).digest()
    assert d1 != d2


# --- TableSpec ------------------------------------------------------------------------------------


def test_table_spec_make_sets_the_horizon_and_types():
    spec = TableSpec.make(1, 2, "hit", 300)
    assert spec == TableSpec(1.0, 2.0, "hit", 300, 256, GRID_SIZE)
    assert type(spec.alpha) is float and type(spec.cap) is int
    assert TableSpec.make(0.5, 0.5, "hit", 9, max_horizon=40, grid_size=64).horizon == 9
    assert TableSpec.make(0.5, 0.5, "hit", 90, max_horizon=40).horizon == 40


@pytest.mark.parametrize(
    ("a", "b", "cap", "message"),
    [
        (0.0, 1.0, 4, "prior (0.0, 1.0) must be finite and > 0"),
        (1.0, -2.0, 4, "prior (1.0, -2.0) must be finite and > 0"),
        (math.inf, 1.0, 4, "prior (inf, 1.0) must be finite and > 0"),
        (1.0, 1.0, 0, "cap must be >= 1, got 0"),
    ],
)
def test_table_spec_make_refuses_bad_input(a, b, cap, message):
    with pytest.raises(ValueError) as info:
        TableSpec.make(a, b, "hit", cap)
    assert str(info.value) == message


def test_digest_is_stable_and_covers_every_field():
    spec = TableSpec.make(0.7, 1.3, "hit", 20)
    d = spec.digest()
    assert d == TableSpec.make(0.7, 1.3, "hit", 20).digest()
    assert len(d) == 24 and int(d, 16) >= 0  # a hex prefix of a sha256
    others = [
        TableSpec.make(0.7, 1.4, "hit", 20),
        TableSpec.make(0.7, 1.3, "informative", 20),
        TableSpec.make(0.7, 1.3, "hit", 21),
        TableSpec.make(0.7, 1.3, "hit", 20, max_horizon=10),
        TableSpec.make(0.7, 1.3, "hit", 20, grid_size=512),
    ]
    assert len({d, *(o.digest() for o in others)}) == 6


# --- utility_range and lambda_grid ----------------------------------------------------------------


def test_utility_range_over_the_triangle():
    # u = s − 2f over s + f <= 3: smallest at (0, 3) = −6, largest at (3, 0) = 3
    assert utility_range(lambda s, f: np.asarray(s - 2 * f, dtype=float), 3) == (-6.0, 3.0)
    assert utility_range(get_utility("informative"), 1) == (0.0, 0.0)  # n <= 1 is never mixed
    assert utility_range(get_utility("informative"), 2) == (0.0, 1.0)


def test_lambda_grid_is_symmetric_dense_near_zero_and_covers_the_range():
    g = lambda_grid(2.0, 64)
    assert g.shape == (64,) and g.dtype == np.float64
    assert g[0] == pytest.approx(-2.02) and g[-1] == pytest.approx(2.02)
    np.testing.assert_allclose(g, -g[::-1], rtol=1e-14, atol=0)
    steps = np.diff(g)
    assert np.all(steps > 0)
    # sinh spacing: the steps shrink towards the middle of the grid
    assert np.all(np.diff(steps[:32]) < 0) and np.all(np.diff(steps[32:]) > 0)
    # a zero range still gives a grid of distinct prices (of scale 1e-12)
    assert lambda_grid(0.0, 8)[-1] == pytest.approx(1.01e-12)


# --- start_values ---------------------------------------------------------------------------------


def _value(a, b, utility, cap, lam):
    """V(s, f; λ) of the single-question stopping problem, by plain memoised recursion."""
    u = get_utility(utility)

    @functools.cache
    def V(s, f):
        stop = float(u(np.array([s]), np.array([f]))[0])
        if s + f >= cap:
            return stop
        p = (a + s) / (a + b + s + f)
        return max(stop, -lam + p * V(s + 1, f) + (1 - p) * V(s, f + 1))

    return V


@pytest.mark.parametrize("utility", UTILITIES)
@pytest.mark.parametrize(("lam", "level"), [(0.0, 0), (0.05, 2), (-0.1, 1), (0.3, 3)])
def test_start_values_equal_the_recursion(utility, lam, level):
    specs = [TableSpec.make(0.5, 1.5, utility, 7), TableSpec.make(2.0, 1.0, utility, 5)]
    got = start_values(specs, lam, level)
    assert len(got) == 2
    for spec, v in zip(specs, got, strict=True):
        V = _value(spec.alpha, spec.beta, utility, spec.cap, lam)
        assert v.shape == (level + 1,)
        np.testing.assert_allclose(v, [V(s, level - s) for s in range(level + 1)], atol=1e-12)


def test_start_values_past_the_horizon_are_optimistic():
    # cap 30, horizon 4: at n = 4 the continue value is ū − λ = 1 − λ (informative's best), so
    # at λ = 0.2 every state at n = 4 is worth max(u, 0.8)
    spec = TableSpec.make(1.0, 1.0, "informative", 30, max_horizon=4)
    (v,) = start_values([spec], 0.2, 4)
    np.testing.assert_allclose(v, [0.8, 1.0, 1.0, 1.0, 0.8])


def test_start_values_kernel_equals_its_python_loop_and_arrays_are_cached():
    # the compiled kernel (where numba is installed) and the plain loop give the same numbers,
    # bit for bit, and the bound's price search reads one cached, read-only pair of arrays
    spec = TableSpec.make(0.3, 2.5, "snr(8)", 40, max_horizon=24)
    U, P = index_mod.level_arrays(spec.alpha, spec.beta, spec.utility, spec.horizon)
    assert index_mod.level_arrays(spec.alpha, spec.beta, spec.utility, spec.horizon)[0] is U
    assert not U.flags.writeable and not P.flags.writeable
    u_bar = index_mod._levels(spec)[2]
    for lam in (-0.2, 0.0, 0.013, 0.4):
        (got,) = start_values([spec], lam, 3)
        want = index_mod._start_py(U, P, spec.cap, spec.horizon, 3, lam, u_bar)
        np.testing.assert_array_equal(got, want)


# --- build_table ----------------------------------------------------------------------------------


def test_table_layout_nan_outside_the_triangle():
    t = build_table(TableSpec.make(1.0, 1.0, "hit", 4), jit=False)
    assert isinstance(t, IndexTable) and t.index.shape == (5, 5)
    s, f = np.meshgrid(np.arange(5), np.arange(5), indexing="ij")
    assert np.all(np.isnan(t.index[s + f > 4]))
    assert np.all(t.index[s + f == 4] == -np.inf)
    assert np.all(np.isfinite(t.index[s + f < 4]))
    # hit: after a success nothing more can be gained, so the index is 0 there (to the grid)
    np.testing.assert_allclose(t.index[1:4, 0], 0.0, atol=1e-6)


def test_jit_needs_numba(monkeypatch):
    monkeypatch.setattr(_jit, "AVAILABLE", False)
    with pytest.raises(ImportError) as info:
        build_table(TableSpec.make(1.0, 1.0, "hit", 4), jit=True)
    assert str(info.value) == 'build_table(jit=True) needs numba: pip install -e ".[jit]"'


def test_jit_default_follows_numba_and_adaroll_no_jit(monkeypatch):
    calls = []

    def fake_backward(U, P, lam, cap, H, u_bar):
        calls.append((cap, H))
        return np.zeros((H + 1, H + 1))

    monkeypatch.setattr(_jit, "AVAILABLE", True)
    monkeypatch.setattr(_jit, "backward", fake_backward)
    spec = TableSpec.make(1.0, 1.0, "hit", 4)
    monkeypatch.setenv("ADAROLL_NO_JIT", "1")
    plain = build_table(spec)
    assert calls == [] and np.isnan(plain.index[4, 4])
    monkeypatch.delenv("ADAROLL_NO_JIT")
    assert np.all(build_table(spec).index == 0.0) and calls == [(4, 4)]
