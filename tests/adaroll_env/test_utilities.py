"""Tests of adaroll_env.utilities: the four utilities, custom ones, and expected_utility."""

from __future__ import annotations

import itertools
import math
import sys
import textwrap

import numpy as np
import pytest
from scipy.special import betaln

from adaroll_env import utilities
from adaroll_env.model import AllocationParams, make_state, utility_value
from adaroll_env.utilities import (
    dr_grpo_signal,
    expected_utility,
    get_utility,
    grpo_signal,
    hit,
    informative,
    list_utilities,
    register_utility,
)

NAMES = ("informative", "hit", "grpo_signal", "dr_grpo_signal")


# Independent scalar definitions (no library code), used by the brute force and Monte Carlo.
def _ref_u(name: str, s: int, f: int) -> float:
    n = s + f
    if n == 0:
        return 0.0
    if name == "informative":
        return 1.0 if (s > 0 and f > 0) else 0.0
    if name == "hit":
        return 1.0 if s > 0 else 0.0
    if name == "grpo_signal":
        return 2.0 * math.sqrt(s * f) / n
    if name == "dr_grpo_signal":
        return 2.0 * s * f / (n * n)
    raise AssertionError(name)


def _brute_force(name: str, a: float, b: float, s: int, f: int, m: int) -> float:
    """E[u] by enumerating all 2^m outcome sequences with sequential predictive probabilities."""
    total = 0.0
    for seq in itertools.product((0, 1), repeat=m):
        prob = 1.0
        ss, ff = s, f
        for x in seq:
            p_succ = (a + ss) / (a + b + ss + ff)
            if x:
                prob *= p_succ
                ss += 1
            else:
                prob *= 1.0 - p_succ
                ff += 1
        total += prob * _ref_u(name, ss, ff)
    return total


@pytest.fixture
def clean_registry():
    """Remove every utility a test registers, and forget cached resolutions."""
    before = dict(utilities._REGISTRY)
    yield
    utilities._REGISTRY.clear()
    utilities._REGISTRY.update(before)
    get_utility.cache_clear()


@pytest.fixture
def util_module(tmp_path, monkeypatch):
    """Write a module into tmp_path, put it on sys.path; unload it and clear caches after."""
    monkeypatch.syspath_prepend(str(tmp_path))
    names: list[str] = []

    def write(name: str, source: str) -> str:
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        names.append(name)
        return name

    yield write
    for name in names:
        sys.modules.pop(name, None)
    get_utility.cache_clear()


# --- the four built-in utilities -------------------------------------------------------------


def test_registry_lists_the_builtins():
    assert set(NAMES) <= set(list_utilities())
    for name in NAMES:
        assert get_utility(name) is getattr(utilities, name)


@pytest.mark.parametrize(
    ("s", "f", "want"),
    [(0, 0, 0.0), (3, 0, 0.0), (0, 3, 0.0), (1, 1, 1.0), (5, 2, 1.0), (1, 7, 1.0)],
)
def test_informative_values(s, f, want):
    assert float(informative(s, f)) == want


@pytest.mark.parametrize(
    ("s", "f", "want"), [(0, 0, 0.0), (0, 5, 0.0), (1, 0, 1.0), (2, 3, 1.0), (7, 0, 1.0)]
)
def test_hit_values(s, f, want):
    assert float(hit(s, f)) == want


@pytest.mark.parametrize(
    ("s", "f", "want"),
    [
        (0, 0, 0.0),
        (4, 0, 0.0),
        (0, 4, 0.0),
        (1, 1, 1.0),
        (2, 2, 1.0),
        (2, 1, 2.0 * math.sqrt(2.0) / 3.0),
        (1, 3, 2.0 * math.sqrt(3.0) / 4.0),
        (4, 1, 0.8),
    ],
)
def test_grpo_signal_values(s, f, want):
    assert float(grpo_signal(s, f)) == pytest.approx(want, abs=1e-15)


def test_grpo_signal_is_not_monotone_in_n():
    assert float(grpo_signal(1, 1)) == 1.0
    assert float(grpo_signal(2, 1)) == pytest.approx(0.943, abs=5e-4)
    assert float(grpo_signal(2, 1)) < float(grpo_signal(1, 1))


@pytest.mark.parametrize(
    ("s", "f", "want"),
    [(0, 0, 0.0), (3, 0, 0.0), (0, 2, 0.0), (1, 1, 0.5), (2, 1, 4.0 / 9.0), (1, 3, 6.0 / 16.0)],
)
def test_dr_grpo_signal_values(s, f, want):
    assert float(dr_grpo_signal(s, f)) == pytest.approx(want, abs=1e-15)


@pytest.mark.parametrize("name", NAMES)
def test_utilities_vectorised_and_zero_at_n0(name):
    fn = get_utility(name)
    s = np.array([[0, 1, 2, 0], [3, 0, 5, 1]], dtype=np.int64)
    f = np.array([[0, 1, 1, 4], [0, 0, 2, 7]], dtype=np.int64)
    out = np.asarray(fn(s, f))
    assert out.shape == s.shape
    assert out.dtype == np.float64
    want = np.array(
        [
            [_ref_u(name, int(a), int(b)) for a, b in zip(r1, r2, strict=True)]
            for r1, r2 in zip(s, f, strict=True)
        ]
    )
    np.testing.assert_allclose(out, want, rtol=0, atol=1e-15)
    assert out[0, 0] == 0.0 and out[1, 1] == 0.0
    # broadcasting a scalar against an array
    assert np.asarray(fn(np.arange(4), 0)).shape == (4,)
    assert np.asarray(fn(0, np.arange(4))).shape == (4,)


# --- custom "module:function" utilities --------------------------------------------------------


def test_custom_utility_by_path(util_module):
    mod = util_module(
        "adaroll_custom_util_ok",
        """
        import numpy as np

        def u(s, f):
            s = np.asarray(s, dtype=float)
            f = np.asarray(f, dtype=float)
            return np.where(s + f > 0, s / np.maximum(s + f, 1), 0.0)
        """,
    )
    fn = get_utility(f"{mod}:u")
    np.testing.assert_allclose(fn(np.array([1, 0, 3]), np.array([1, 0, 1])), [0.5, 0.0, 0.75])
    params = AllocationParams(num_questions=2, budget=6, utility=f"{mod}:u")
    assert params.utility == f"{mod}:u"
    state = make_state(params, [1, 3], [1, 1])
    assert utility_value(params, state) == pytest.approx(0.5 + 0.75)
    # expected_utility accepts the path, too: E[s_final / n] after one rollout from Beta(1, 1)
    assert float(expected_utility(f"{mod}:u", 1.0, 1.0, 0, 0, 1)) == pytest.approx(0.5)


@pytest.mark.parametrize("path", ["adaroll_custom_util_ok2:", ":u", ":"])
def test_custom_utility_malformed_path(path, util_module):
    util_module("adaroll_custom_util_ok2", "def u(s, f):\n    return s * 0.0\n")
    with pytest.raises(ValueError, match=r"not of the form 'package\.module:name'") as exc:
        get_utility(path)
    assert repr(path) in str(exc.value)


def test_custom_utility_missing_module():
    with pytest.raises(ValueError, match="cannot import module 'adaroll_no_such_module_xyz'"):
        get_utility("adaroll_no_such_module_xyz:u")
    with pytest.raises(ValueError, match="cannot import module"):
        AllocationParams(num_questions=2, budget=4, utility="adaroll_no_such_module_xyz:u")


def test_custom_utility_missing_attribute(util_module):
    mod = util_module("adaroll_custom_util_noattr", "def u(s, f):\n    return s * 0.0\n")
    with pytest.raises(ValueError, match="has no attribute 'nope'"):
        get_utility(f"{mod}:nope")


def test_custom_utility_not_callable(util_module):
    mod = util_module("adaroll_custom_util_notcall", "u = 3\n")
    with pytest.raises(TypeError, match="not callable"):
        get_utility(f"{mod}:u")


def test_custom_utility_not_zero_at_n0(util_module):
    mod = util_module(
        "adaroll_custom_util_nonzero",
        """
        import numpy as np

        def u(s, f):
            return np.ones(np.broadcast(s, f).shape)

        def scalar(s, f):
            return 0.0
        """,
    )
    with pytest.raises(ValueError, match="0 at n = 0"):
        get_utility(f"{mod}:u")
    with pytest.raises(ValueError, match="vectorised"):
        get_utility(f"{mod}:scalar")
    with pytest.raises(ValueError, match="0 at n = 0"):
        AllocationParams(num_questions=2, budget=4, utility=f"{mod}:u")


def test_unknown_utility_suggests_closest():
    with pytest.raises(ValueError, match="'informative'") as exc:
        get_utility("informativ")
    assert "informativ" in str(exc.value)
    with pytest.raises(ValueError, match="Did you mean 'grpo_signal'"):
        get_utility("grpo_signl")
    with pytest.raises(ValueError, match="Did you mean 'informative'"):
        AllocationParams(utility="informativ")


def test_utility_name_must_be_string():
    with pytest.raises(TypeError):
        get_utility(3)  # type: ignore[arg-type]


# --- register_utility -------------------------------------------------------------------------


def _half_hit(s, f):
    return 0.5 * (np.asarray(s) > 0)


def test_register_utility(clean_registry):
    register_utility("half_hit_test", _half_hit)
    assert "half_hit_test" in list_utilities()
    assert get_utility("half_hit_test") is _half_hit
    params = AllocationParams(num_questions=3, budget=6, utility="half_hit_test")
    assert utility_value(params, make_state(params, [1, 0, 2], [0, 2, 1])) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="already registered"):
        register_utility("half_hit_test", _half_hit)
    with pytest.raises(ValueError, match="already registered"):
        register_utility("informative", _half_hit)
    register_utility("half_hit_test", hit, overwrite=True)
    assert get_utility("half_hit_test") is hit  # the resolution cache was cleared


def test_register_utility_rejects_bad_input(clean_registry):
    with pytest.raises(ValueError, match="':'"):
        register_utility("bad:name", _half_hit)
    with pytest.raises(TypeError, match="callable"):
        register_utility("not_callable_test", 5)  # type: ignore[arg-type]
    assert "not_callable_test" not in list_utilities()


# --- expected_utility -------------------------------------------------------------------------

PRIORS = [(1.0, 1.0), (0.5, 2.0), (3.0, 0.7), (0.05, 0.05)]
COUNTS = [(0, 0), (1, 0), (2, 3)]


@pytest.mark.parametrize("name", NAMES)
def test_expected_utility_matches_brute_force(name):
    for (a, b), (s, f) in itertools.product(PRIORS, COUNTS):
        for m in (0, 1, 2, 3, 5, 8):
            want = _brute_force(name, a, b, s, f, m)
            got = float(expected_utility(name, a, b, s, f, m))
            assert got == pytest.approx(want, abs=1e-10), (name, a, b, s, f, m)


def test_expected_utility_hand_worked():
    # Beta(1, 1) prior, two rollouts: S is uniform on {0, 1, 2}; informative iff S == 1.
    assert float(expected_utility("informative", 1, 1, 0, 0, 2)) == pytest.approx(1 / 3)
    # after (1, 0), one more rollout fails with predictive 1/3 -> informative
    assert float(expected_utility("informative", 1, 1, 1, 0, 1)) == pytest.approx(1 / 3)
    # hit from Beta(1, 1) with 3 rollouts: 1 - P(S = 0) = 1 - 1/4
    assert float(expected_utility("hit", 1, 1, 0, 0, 3)) == pytest.approx(0.75)


@pytest.mark.parametrize(
    ("name", "a", "b", "s", "f", "m"),
    [
        ("informative", 1.0, 1.0, 0, 0, 8),
        ("grpo_signal", 0.5, 2.0, 1, 2, 12),
        ("dr_grpo_signal", 3.0, 0.7, 0, 1, 20),
        ("hit", 0.3, 5.0, 0, 4, 16),
    ],
)
def test_expected_utility_matches_monte_carlo(name, a, b, s, f, m):
    rng = np.random.default_rng(12345)
    draws = 200_000
    p = rng.beta(a + s, b + f, size=draws)
    k = rng.binomial(m, p)
    ss, ff = s + k, f + (m - k)
    n = ss + ff
    ref = {
        "informative": ((ss > 0) & (ff > 0)).astype(float),
        "hit": (ss > 0).astype(float),
        "grpo_signal": 2.0 * np.sqrt(ss * ff) / n,
        "dr_grpo_signal": 2.0 * ss * ff / n**2,
    }[name]
    mc, se = ref.mean(), ref.std(ddof=1) / math.sqrt(draws)
    got = float(expected_utility(name, a, b, s, f, m))
    assert se > 0
    assert abs(got - mc) < 4 * se, (got, mc, se)


def test_expected_utility_broadcasts():
    alpha = np.array([[0.5], [1.0], [4.0]])  # [3, 1]
    beta = np.array([2.0, 1.0, 0.3, 9.0])  # [4]
    s = np.array([0, 1, 2, 0])  # [4]
    f = 1
    for name in NAMES:
        out = expected_utility(name, alpha, beta, s, f, 5)
        assert out.shape == (3, 4)
        for i, j in itertools.product(range(3), range(4)):
            want = float(expected_utility(name, alpha[i, 0], beta[j], s[j], f, 5))
            assert out[i, j] == pytest.approx(want, abs=1e-14)
        # m = 0 broadcasts too
        assert expected_utility(name, alpha, beta, s, f, 0).shape == (3, 4)


def test_expected_utility_accepts_callable():
    got = expected_utility(informative, 1.0, 1.0, 0, 0, 2)
    assert float(got) == pytest.approx(1 / 3)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("a", [1e-3, 1.0, 1e4])
@pytest.mark.parametrize("b", [1e-3, 1.0, 1e4])
def test_expected_utility_stable_for_large_m(name, a, b):
    m = 1024
    got = float(expected_utility(name, a, b, 0, 0, m))
    vals = [_ref_u(name, k, m - k) for k in range(m + 1)]
    assert math.isfinite(got)
    assert min(vals) - 1e-12 <= got <= max(vals) + 1e-12
    if name == "informative":
        e_pm = math.exp(betaln(a + m, b) - betaln(a, b))
        e_qm = math.exp(betaln(a, b + m) - betaln(a, b))
        assert got == pytest.approx(1.0 - e_pm - e_qm, abs=1e-9)


@pytest.mark.parametrize("name", NAMES)
def test_expected_utility_m0_is_u(name):
    s = np.array([0, 1, 3, 0])
    f = np.array([0, 2, 0, 5])
    got = expected_utility(name, 2.0, 3.0, s, f, 0)
    np.testing.assert_array_equal(got, np.asarray(get_utility(name)(s, f)))


@pytest.mark.parametrize("m", [-1, -5, 1.5, True])
def test_expected_utility_rejects_bad_m(m):
    with pytest.raises(ValueError, match="non-negative integer"):
        expected_utility("informative", 1.0, 1.0, 0, 0, m)


def test_expected_utility_rejects_bad_prior_and_counts():
    with pytest.raises(ValueError, match="alpha and beta"):
        expected_utility("informative", 0.0, 1.0, 0, 0, 2)
    with pytest.raises(ValueError, match="alpha and beta"):
        expected_utility("informative", 1.0, np.nan, 0, 0, 2)
    with pytest.raises(ValueError, match="non-negative"):
        expected_utility("informative", 1.0, 1.0, -1, 0, 2)


def test_log_binomial_matches_exact_coefficients():
    from math import comb, log

    from adaroll_env.utilities import log_binomial

    for m in range(8):
        for k in range(m + 1):
            assert log_binomial(m, k) == pytest.approx(log(comb(m, k)), abs=1e-12)
